//! What the analyses assume about functions of the C library, which no analysis sees into.

/// External functions whose time does not depend on what they are given, for the programs
/// knobs models: printing a setting (`printf("level %d", level)`, usually under a verbosity
/// option) and freeing. A call of any other external function whose inputs carry an option
/// is a decision: the library decides from them how much work it does (`nanosleep`,
/// `memset`, `write`, a compression library's `level`).
const NEGLIGIBLE_WORK: &[&str] = &[
    "printf", "fprintf", "vprintf", "vfprintf", "puts", "fputs", "putc", "fputc", "putchar",
    "perror", "free",
];

/// Whether a call of the external function `name` takes as long whatever it is given
/// ([`NEGLIGIBLE_WORK`]; fortified names such as `__fprintf_chk` count as their base).
pub fn is_negligible_work(name: &str) -> bool {
    let base = name
        .strip_prefix("__")
        .and_then(|n| n.strip_suffix("_chk"))
        .unwrap_or(name);
    NEGLIGIBLE_WORK.contains(&base)
}
