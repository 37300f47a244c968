//! README.md's "A five-minute tour" and its continuation, docs/guide/tour.md, run: every
//! command they show runs (the debug build of knobs, in a temporary copy of the example
//! directories it names, so the repository's stores are not written) and must succeed, and
//! the output shown under it must be the shape of what it prints, so the tour cannot drift
//! from the program.
//!
//! How the tour's code blocks are read:
//!
//! - a line whose first word is in [`PROGRAMS`] is a command; the lines after it, up to the
//!   next command or the end of its block, are its output as shown (stdout and stderr
//!   together, as a terminal shows them). A command shown without output only has to succeed.
//! - a line `…` means lines left out; without one, shown lines must be adjacent in the
//!   output, the first shown line must be the first printed and the last the last.
//! - `…` inside a line matches any text (paths of the user's checkout, hashes).
//! - whitespace runs count as one space.
//! - numbers: a decimal (with a `.`) matches any decimal, as the tour's decimals are times,
//!   errors and coefficients of real runs; an integer must be equal (counts of
//!   configurations, runs, regions, partitions, tainted decisions are deterministic), except
//!   the measured ones [`MEASURED_INTEGERS`] lists.
//! - a model line (`[label: ]c0 + c1·A + c2·A·B …`, possibly ending in `+ …` for terms left
//!   out) must be a model line in the output with the same label, printing every term shown,
//!   in any order. Not the other way round: the models are of real runs, whose noise swaps
//!   terms of similar influence and now and then adds a small one (a ConfigCrusher region
//!   [A, C] gets a `0.0023·C` on a loaded machine), so a test demanding exactly the shown
//!   terms would depend on the machine's load.
//! - the output of [`SHAPE_ONLY`] commands is compared without any numbers, and their
//!   model lines by shape only: which terms a black-box model of real runs keeps moves with
//!   the machine's noise (the README says so where it shows them).
//!
//! Commands in [`NOT_RUN`] are not run (the test prints them); every other command in the
//! tour is. Nothing here depends on the machine's speed: only the shape of the output and
//! the deterministic counts are compared. The whole tour takes a few minutes, most of it
//! measuring the 48 configurations of Debian's xz (3 rounds).

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The tour's commands this test does not run, and why. Each must be in the tour, shown
/// without output.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "cargo build --release -p knobs",
        "the test runs the debug build cargo made for it",
    ),
    (
        "export PATH=$PWD/target/release:$PATH",
        "the test runs the debug build cargo made for it",
    ),
    (
        "sh examples/xz-history/fetch.sh",
        "clones XZ Utils' history from a bundle beside the repository (../shared)",
    ),
    (
        "knobs changepoints detect --spec examples/xz-history/presets-2010.toml",
        "builds and measures commits of XZ Utils' real history: about an hour",
    ),
];

/// The programs whose lines in the tour's code blocks are commands; every other line of a
/// block is output.
const PROGRAMS: &[&str] = &["knobs", "clang-19", "cargo", "export", "sh"];

/// Commands (prefixes) whose output is compared without numbers, model lines by shape.
const SHAPE_ONLY: &[&str] = &["knobs learn ", "knobs model show "];

/// Integers that are measured, not counted: an integer followed by one of these matches any
/// integer (peak memory; how many configurations' runs varied more than the spec allows).
const MEASURED_INTEGERS: &[&str] = &[" MiB", " noisy"];

/// The tour's documents, in the order it runs them: a file and the section of it that is
/// the tour (`None`: the whole file).
const TOUR: &[(&str, Option<&str>)] = &[
    ("README.md", Some("A five-minute tour")),
    ("docs/guide/tour.md", None),
];

/// A command shown in the tour and the output shown under it.
struct Step {
    /// Where it is shown, `file:line` (1-based), for messages.
    line: String,
    /// The command, its trailing `# comment` removed.
    command: String,
    /// The output lines as shown, `…` included.
    shown: Vec<String>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commands and shown outputs of `file`'s tour section (or the whole file), in order.
fn tour_steps(file: &str, text: &str, section: Option<&str>) -> Vec<Step> {
    let (first_line, section) = match section {
        Some(title) => {
            let start = text
                .find(&format!("\n## {title}"))
                .unwrap_or_else(|| panic!("{file} has a section \"{title}\""));
            let section = &text[start + 1..];
            (
                text[..start].lines().count() + 1,
                &section[..section.find("\n## ").unwrap_or(section.len())],
            )
        }
        None => (1, text),
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut in_block = false;
    for (i, line) in section.lines().enumerate() {
        let Some(code) = line.strip_prefix("    ") else {
            in_block = false;
            continue;
        };
        let first_word = code.split_whitespace().next().unwrap_or("");
        if PROGRAMS.contains(&first_word) {
            let command = match code.find(" #") {
                Some(at) => &code[..at],
                None => code,
            };
            steps.push(Step {
                line: format!("{file}:{}", first_line + i),
                command: command.split_whitespace().collect::<Vec<_>>().join(" "),
                shown: Vec::new(),
            });
            in_block = true;
        } else {
            assert!(
                in_block,
                "{file}:{}: output shown under no command: {code:?}",
                first_line + i
            );
            steps.last_mut().unwrap().shown.push(code.to_string());
        }
    }
    steps
}

/// Copies an example directory as a fresh checkout has it: without the stores, builds and
/// generated inputs earlier runs left there (what .gitignore lists).
fn copy_example(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let meta = entry.metadata().unwrap();
        let generated = name.starts_with('.')
            || [
                ".db",
                ".db-wal",
                ".db-shm",
                ".txt",
                ".configcrusher.json",
                ".comprex.json",
                ".splat.json",
                ".family.json",
            ]
            .iter()
            .any(|suffix| name.ends_with(suffix))
            || (is_executable(&meta) && !name.ends_with(".sh"));
        if generated {
            continue;
        }
        if meta.is_dir() {
            copy_example(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// Runs a command of the tour in `work` (where `examples/…` are copies and `/tmp/…` is
/// `work/tmp/…`); returns whether it succeeded and its stdout and stderr interleaved as
/// written, as a terminal would show them.
fn run(work: &Path, index: usize, command: &str) -> (bool, String) {
    assert!(
        !command.contains(['\'', '"', '$', '|', ';', '&', '<', '>', '*', '`']),
        "{command}: the test splits commands at spaces, so a command it runs uses no shell syntax"
    );
    let mut words = command.split_whitespace();
    let program = match words.next().unwrap() {
        "knobs" => env!("CARGO_BIN_EXE_knobs").to_string(),
        other => other.to_string(),
    };
    let args: Vec<PathBuf> = words
        .map(|arg| match arg.strip_prefix("/tmp/") {
            Some(rest) => work.join("tmp").join(rest),
            None => PathBuf::from(arg),
        })
        .collect();
    let log_path = work.join(format!("step-{index}.log"));
    let log = File::create(&log_path).unwrap();
    let status = Command::new(&program)
        .args(&args)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .unwrap_or_else(|e| panic!("{command}: cannot start {program}: {e}"));
    // Paths under the stand-in for /tmp read as the README shows them.
    let output = std::fs::read_to_string(&log_path)
        .unwrap()
        .replace(&format!("{}/", work.join("tmp").display()), "/tmp/");
    (status.success(), output)
}

/// Whitespace runs as one space, no leading or trailing space.
fn squeeze(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `line` with every decimal replaced by `#`, and every integer too when `all_numbers`, or
/// when a [`MEASURED_INTEGERS`] suffix follows it.
fn mask_numbers(line: &str, all_numbers: bool) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        let mut decimal = false;
        if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
            decimal = true;
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
        let rest: String = chars[i..].iter().collect();
        let measured = MEASURED_INTEGERS.iter().any(|s| rest.starts_with(s));
        if decimal || all_numbers || measured {
            out.push('#');
        } else {
            out.extend(&chars[start..i]);
        }
    }
    out
}

/// Whether `text` matches `pattern`, where `…` in the pattern matches any text.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// A decimal: digits, a `.`, digits.
fn is_decimal(s: &str) -> bool {
    match s.split_once('.') {
        Some((a, b)) => {
            !a.is_empty()
                && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

/// A model's terms (`1` for the constant), if `expr` is a model: `[-]c [± c·A[·B…]]…` with
/// decimal coefficients, possibly ending in `+ …`.
fn parse_model(expr: &str) -> Option<BTreeSet<String>> {
    let words: Vec<&str> = expr.split(' ').collect();
    let mut terms = BTreeSet::new();
    for (i, word) in words.iter().enumerate() {
        if i % 2 == 1 {
            if *word != "+" && *word != "-" {
                return None;
            }
            continue;
        }
        if *word == "…" && i > 0 && i == words.len() - 1 {
            continue;
        }
        let word = if i == 0 {
            word.strip_prefix('-').unwrap_or(word)
        } else {
            word
        };
        let (coefficient, term) = match word.split_once('·') {
            Some((c, t)) if !t.is_empty() && !t.contains("··") => (c, t),
            Some(_) => return None,
            None => (word, "1"),
        };
        if !is_decimal(coefficient) {
            return None;
        }
        terms.insert(term.to_string());
    }
    (words.len() % 2 == 1).then_some(terms)
}

/// A (squeezed) line as a label (up to and with a `:`, or empty) and a model, if it is one.
fn model_line(line: &str) -> Option<(&str, BTreeSet<String>)> {
    if let Some(terms) = parse_model(line) {
        return Some(("", terms));
    }
    line.match_indices(": ")
        .find_map(|(at, _)| parse_model(&line[at + 2..]).map(|terms| (&line[..at + 1], terms)))
}

/// Whether an output line matches a shown one.
fn line_matches(shown: &str, actual: &str, shape_only: bool) -> bool {
    let (shown, actual) = (squeeze(shown), squeeze(actual));
    let Some((shown_label, shown_terms)) = model_line(&shown) else {
        return glob(
            &mask_numbers(&shown, shape_only),
            &mask_numbers(&actual, shape_only),
        );
    };
    let Some((label, terms)) = model_line(&actual) else {
        return false;
    };
    glob(
        &mask_numbers(shown_label, shape_only),
        &mask_numbers(label, shape_only),
    ) && (shape_only || shown_terms.is_subset(&terms))
}

/// Checks the output of a command against the lines shown under it; the error says which
/// shown line has no match.
fn check_output(shown: &[String], output: &str, shape_only: bool) -> Result<(), String> {
    let actual: Vec<&str> = output.lines().collect();
    let open_start = shown.first().is_some_and(|l| l.trim() == "…");
    let open_end = shown.last().is_some_and(|l| l.trim() == "…");
    let segments: Vec<&[String]> = shown
        .split(|l| l.trim() == "…")
        .filter(|s| !s.is_empty())
        .collect();
    let matches_at = |segment: &[String], at: usize| {
        at + segment.len() <= actual.len()
            && segment
                .iter()
                .zip(&actual[at..])
                .all(|(s, a)| line_matches(s, a, shape_only))
    };
    let mut position = 0;
    for (k, segment) in segments.iter().enumerate() {
        let last = k + 1 == segments.len();
        let candidates: Vec<usize> = if k == 0 && !open_start {
            vec![0]
        } else if last && !open_end {
            actual
                .len()
                .checked_sub(segment.len())
                .filter(|&at| at >= position)
                .into_iter()
                .collect()
        } else {
            (position..=actual.len().saturating_sub(segment.len())).collect()
        };
        let Some(at) = candidates.into_iter().find(|&at| matches_at(segment, at)) else {
            let anchor = match (k == 0 && !open_start, last && !open_end) {
                (true, _) => " as the first lines printed",
                (_, true) => " as the last lines printed",
                _ => "",
            };
            return Err(format!(
                "these shown lines{anchor} (after output line {position}):\n    {}",
                segment.join("\n    ")
            ));
        };
        if last && !open_end && at + segment.len() != actual.len() {
            return Err(format!(
                "more output after the last shown line: {:?}",
                &actual[at + segment.len()..]
            ));
        }
        position = at + segment.len();
    }
    Ok(())
}

#[test]
fn the_readme_tour_prints_what_it_shows() {
    let root = repo_root();
    let steps: Vec<Step> = TOUR
        .iter()
        .flat_map(|(file, section)| {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            tour_steps(file, &text, *section)
        })
        .collect();
    let commands: Vec<&str> = steps.iter().map(|s| s.command.as_str()).collect();
    for (command, why) in NOT_RUN {
        assert!(
            commands.contains(command),
            "NOT_RUN lists `{command}` ({why}), which the tour no longer shows"
        );
    }

    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("tmp")).unwrap();
    let mut copied = BTreeSet::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (index, step) in steps.iter().enumerate() {
        if let Some((_, why)) = NOT_RUN.iter().find(|(c, _)| *c == step.command) {
            assert!(
                step.shown.is_empty(),
                "{}: `{}` is not run by this test ({why}), so it shows no output",
                step.line,
                step.command
            );
            eprintln!("not run: `{}` ({why})", step.command);
            continue;
        }
        assert!(
            ["knobs", "clang-19"].contains(&step.command.split(' ').next().unwrap()),
            "{}: `{}` is neither run nor listed in NOT_RUN",
            step.line,
            step.command
        );
        for arg in step.command.split(' ') {
            let parts: Vec<&str> = arg.splitn(3, '/').collect();
            if parts.len() == 3 && parts[0] == "examples" && copied.insert(parts[1].to_string()) {
                copy_example(
                    &root.join("examples").join(parts[1]),
                    &work.path().join("examples").join(parts[1]),
                );
            }
        }
        eprintln!("running: `{}`", step.command);
        let (ok, output) = run(work.path(), index, &step.command);
        ran += 1;
        let shape_only = SHAPE_ONLY.iter().any(|p| step.command.starts_with(p));
        let problem = if !ok {
            Some("it failed".to_string())
        } else {
            check_output(&step.shown, &output, shape_only)
                .err()
                .map(|e| format!("its output does not show {e}"))
        };
        if let Some(problem) = problem {
            failures.push(format!(
                "{}: `{}`: {problem}\n--- what it printed:\n{output}---",
                step.line, step.command
            ));
        }
    }
    assert!(
        ran >= 10,
        "only {ran} commands of the tour ran: is it parsed right?"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_matching_rules() {
    // Decimals match any decimal, integers must be equal, except measured ones.
    assert!(line_matches(
        "analysed in 0.00 s (peak memory 57 MiB): 40 tainted decisions",
        "analysed in  1.21 s (peak memory 61 MiB): 40 tainted decisions",
        false
    ));
    assert!(!line_matches(
        "analysed in 0.00 s (peak memory 57 MiB): 40 tainted decisions",
        "analysed in 0.00 s (peak memory 57 MiB): 16 tainted decisions",
        false
    ));
    assert!(line_matches(
        "144 new runs in 130.1 s; 0 failed, 30 noisy (cv > 10 %)",
        "144 new runs in 98.7 s; 0 failed, 2 noisy (cv > 10 %)",
        false
    ));
    // `…` in a line matches anything.
    assert!(line_matches(
        "model written to …/examples/x.json (variant …)",
        "model written to /home/u/knobs/examples/x.json (variant configcrusher:7214)",
        false
    ));
    // Model lines: the shown terms, in any order, and maybe more.
    assert!(line_matches(
        "  region r0 main.c:71-79 [A, C]: 0.0051 + 0.0152·A + 0.0150·A·C",
        "  region r0 main.c:71-79 [A, C]: 0.0049 + 0.0151·A·C + 0.0153·A + 0.0023·C",
        false
    ));
    assert!(!line_matches(
        "  region r0 main.c:71-79 [A, C]: 0.0051 + 0.0152·A + 0.0150·A·C",
        "  region r0 main.c:71-79 [A, C]: 0.0051 + 0.0152·A + 0.0023·C",
        false
    ));
    assert!(!line_matches(
        "  region r0 main.c:71-79 [A, C]: 0.0051 + 0.0152·A",
        "  region r1 main.c:79-80 [A, B]: 0.0051 + 0.0152·A",
        false
    ));
    assert!(line_matches(
        "0.0051 + 0.0251·D·E·F + 0.0157·A + …",
        "0.0099 + 0.0251·D·E·F + 0.0011·B + 0.0158·A",
        false
    ));
    assert!(!line_matches(
        "0.0051 + 0.0157·A + …",
        "0.0099 + 0.0251·B",
        false
    ));
    // Shape only: any terms, no numbers.
    assert!(line_matches(
        "-2.73 + 2.33·extreme + 0.29·level - 0.26·extreme·level",
        "-2.62 + 1.99·extreme + 0.50·extreme·level=3 + 0.27·level",
        true
    ));
    assert!(line_matches(
        "4 terms (of ln(x))",
        "7 terms (of ln(x))",
        true
    ));
    assert!(!line_matches(
        "4 terms (of ln(x))",
        "7 terms (of ln(x))",
        false
    ));
    // Not models: counts, partitions.
    assert!(model_line("valid configurations: 48").is_none());
    assert!(model_line("region bar: A ∧ C | ¬A").is_none());

    // Lines in order, adjacent unless `…` separates them; anchored at both ends otherwise.
    let output = "a\nb 1.5\nc\nd\n";
    let shown = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(check_output(&shown(&["a", "b 2.0", "…"]), output, false).is_ok());
    assert!(check_output(&shown(&["…", "c", "d"]), output, false).is_ok());
    assert!(check_output(&shown(&["a", "…", "d"]), output, false).is_ok());
    assert!(check_output(&shown(&["a", "c", "…"]), output, false).is_err());
    assert!(check_output(&shown(&["b 1.5", "…"]), output, false).is_err());
    assert!(check_output(&shown(&["…", "c"]), output, false).is_err());
    assert!(check_output(&shown(&["…", "d", "c", "…"]), output, false).is_err());
}
