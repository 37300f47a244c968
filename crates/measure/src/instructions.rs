//! Counting the instructions a run executes (`metric = "instructions"`): hardware counters
//! through `perf stat` where the machine has a PMU, else valgrind's cachegrind, which
//! simulates the program (5–100× slower) and counts exactly. Either wraps the run's command
//! line and writes its count to a file the campaign reads after the run. Instructions are
//! repeatable where time is not (the same binary, input and environment give the same
//! count, whatever else the machine does), but they are not time: a yardstick for telling
//! model error from measurement noise, not the default.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::Error;
use crate::runner::{self, Outcome, RunResult};
use crate::spec::Invocation;
use std::path::PathBuf;

/// How a run's instructions are counted on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Counter {
    /// `perf stat -e instructions:u`: the hardware's count, at almost no cost.
    Perf,
    /// `valgrind --tool=cachegrind --cache-sim=no`: the simulated count, children included.
    Cachegrind,
}

/// How much longer a run under cachegrind may take than the spec's timeout allows.
const CACHEGRIND_SLOWDOWN: u32 = 100;

impl Counter {
    /// The counter this machine offers: `perf` when `perf stat` counts instructions, else
    /// valgrind; an error when neither is installed.
    pub fn detect() -> Result<Counter, Error> {
        static FOUND: OnceLock<Result<Counter, String>> = OnceLock::new();
        FOUND
            .get_or_init(|| {
                if perf_counts() {
                    return Ok(Counter::Perf);
                }
                match Command::new("valgrind")
                    .arg("--version")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                {
                    Ok(s) if s.success() => Ok(Counter::Cachegrind),
                    _ => Err(
                        "metric `instructions` needs hardware counters (`perf stat -e \
                              instructions:u` works) or valgrind; this machine has neither \
                              (Debian: apt-get install valgrind)"
                            .to_string(),
                    ),
                }
            })
            .clone()
            .map_err(Error::Invalid)
    }

    /// What the count costs, for the output.
    pub fn describe(self) -> &'static str {
        match self {
            Counter::Perf => "instructions from hardware counters (perf stat)",
            Counter::Cachegrind => {
                "instructions from valgrind's cachegrind (no hardware counters here; runs are \
                 5–100× slower)"
            }
        }
    }

    /// The invocation run under the counter, which writes its count into the empty
    /// directory `out`.
    pub fn wrap(self, inv: &Invocation, out: &Path) -> Invocation {
        let mut args: Vec<String> = match self {
            Counter::Perf => vec![
                "stat".into(),
                "-x".into(),
                ",".into(),
                "-e".into(),
                "instructions:u".into(),
                "-o".into(),
                out.join("perf.csv").display().to_string(),
                "--".into(),
            ],
            Counter::Cachegrind => vec![
                "--tool=cachegrind".into(),
                "--cache-sim=no".into(),
                "--trace-children=yes".into(),
                format!("--cachegrind-out-file={}/cg.%p", out.display()),
                format!("--log-file={}/valgrind.%p.log", out.display()),
                "--".into(),
            ],
        };
        args.push(inv.program.display().to_string());
        args.extend(inv.args.iter().cloned());
        let timeout = match self {
            Counter::Perf => inv.timeout,
            Counter::Cachegrind => inv.timeout.saturating_mul(CACHEGRIND_SLOWDOWN),
        };
        Invocation {
            program: match self {
                Counter::Perf => "perf".into(),
                Counter::Cachegrind => "valgrind".into(),
            },
            // The counter's own: the program it runs gets its path (perf and valgrind set no
            // other `argv[0]`).
            arg0: None,
            args,
            timeout,
            ..inv.clone()
        }
    }

    /// The count a wrapped run wrote into `out` (every process of the run, summed).
    pub fn read(self, out: &Path) -> Result<u64, String> {
        let entries = std::fs::read_dir(out).map_err(|e| format!("{}: {e}", out.display()))?;
        let mut total = None;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let wanted = match self {
                Counter::Perf => name == "perf.csv",
                Counter::Cachegrind => name.starts_with("cg."),
            };
            if !wanted {
                continue;
            }
            let text = std::fs::read_to_string(entry.path()).map_err(|e| e.to_string())?;
            let count = match self {
                Counter::Perf => perf_count(&text),
                Counter::Cachegrind => cachegrind_count(&text),
            }
            .ok_or_else(|| format!("no instruction count in {name}"))?;
            *total.get_or_insert(0) += count;
        }
        total.ok_or_else(|| "the counter wrote no count".to_string())
    }
}

/// What valgrind itself said went wrong in a run under the counter (its `Valgrind:` lines),
/// for the run's failure detail; `None` when it reported nothing of its own.
pub fn counter_complaint(out: &Path) -> Option<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(out).ok()?.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("valgrind.") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        lines.extend(
            text.lines()
                .filter_map(|l| l.split_once("Valgrind:").map(|(_, rest)| rest.trim()))
                .filter(|l| !l.is_empty())
                .map(str::to_string),
        );
    }
    (!lines.is_empty()).then(|| format!("valgrind: {}", lines.join(" ")))
}

/// Whether valgrind gave up on the program's debug information (valgrind 3.19, Debian 12's,
/// cannot read all of the DWARF 5 that clang 19 writes).
pub fn debuginfo_unreadable(complaint: &str) -> bool {
    complaint.contains("debuginfo reader")
}

/// Where [`stripped_copy`] puts the copy of `program` in `dir`: named by its whole path, as
/// programs of one name (the builds of several commits) are measured side by side.
pub fn stripped_path(program: &Path, dir: &Path) -> std::path::PathBuf {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    program.hash(&mut hasher);
    dir.join("stripped")
        .join(format!("{:016x}", hasher.finish()))
        .join(program.file_name().unwrap_or_default())
}

/// A copy of `program` without debug information, in `dir` (made once): the same code, so the
/// same instructions, for a counter that cannot read the debug information.
pub fn stripped_copy(program: &Path, dir: &Path) -> Result<std::path::PathBuf, String> {
    let copy = stripped_path(program, dir);
    if program.file_name().is_none() {
        return Err("the program has no file name".into());
    }
    if copy.is_file() {
        return Ok(copy);
    }
    std::fs::create_dir_all(copy.parent().expect("a parent")).map_err(|e| e.to_string())?;
    let mut last = String::from("neither objcopy nor llvm-objcopy-19 is installed");
    for tool in ["objcopy", "llvm-objcopy-19", "llvm-objcopy"] {
        match Command::new(tool)
            .arg("--strip-debug")
            .arg(program)
            .arg(&copy)
            .stdout(Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => return Ok(copy),
            Ok(out) => last = String::from_utf8_lossy(&out.stderr).trim().to_string(),
            Err(_) => continue,
        }
    }
    Err(format!("cannot strip {}: {last}", program.display()))
}

/// Whether `perf stat` counts user-mode instructions here (a VM without a PMU says `<not
/// supported>`).
fn perf_counts() -> bool {
    let Ok(out) = Command::new("perf")
        .args(["stat", "-x", ",", "-e", "instructions:u", "--", "true"])
        .stdout(Stdio::null())
        .output()
    else {
        return false;
    };
    out.status.success() && perf_count(&String::from_utf8_lossy(&out.stderr)).is_some()
}

/// The count in `perf stat -x ,` output: the first field of the `instructions` line.
fn perf_count(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.contains("instructions"))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.trim().parse().ok())
}

/// The count in a cachegrind output file: its `summary:` line (`Ir` is the only event
/// without cache simulation).
fn cachegrind_count(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// One run under the instruction counter, its count read into the result (a count that
/// cannot be read fails the run).
/// When valgrind cannot read the program's debug information, the run is counted again on a
/// copy without it (made once per campaign, in `scratch`).
pub(crate) fn counted(invocation: &Invocation, scratch: &Path, counter: Counter) -> RunResult {
    let program = invocation.cwd.join(&invocation.program);
    let stripped = stripped_path(&program, scratch);
    let result = if stripped.is_file() {
        counted_once(&with_program(invocation, stripped), scratch, counter)
    } else {
        counted_once(invocation, scratch, counter)
    };
    let done =
        result.outcome.is_ok() || !debuginfo_unreadable(&result.stderr_tail) || !program.is_file();
    if done {
        return result;
    }
    match stripped_copy(&program, scratch) {
        Ok(copy) => counted_once(&with_program(invocation, copy), scratch, counter),
        Err(why) => RunResult {
            stderr_tail: format!("{}\n{why}", result.stderr_tail),
            ..result
        },
    }
}

fn with_program(invocation: &Invocation, program: PathBuf) -> Invocation {
    Invocation {
        program,
        ..invocation.clone()
    }
}

fn counted_once(invocation: &Invocation, scratch: &Path, counter: Counter) -> RunResult {
    let out = scratch.join("instructions");
    let _ = std::fs::remove_dir_all(&out);
    if let Err(e) = std::fs::create_dir_all(&out) {
        return RunResult::failed_to_start(format!("{}: {e}", out.display()));
    }
    let mut result = runner::run(&counter.wrap(invocation, &out));
    if result.outcome.is_ok() {
        match counter.read(&out) {
            Ok(n) => result.instructions = Some(n),
            Err(why) => {
                result.outcome = Outcome::SpawnFailed(format!("no instruction count: {why}"))
            }
        }
    }
    if !result.outcome.is_ok()
        && let Some(complaint) = counter_complaint(&out)
    {
        result.stderr_tail = format!("{}{complaint}", result.stderr_tail);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_from_both_counters_outputs() {
        assert_eq!(
            perf_count("\n1234567,,instructions:u,1000,100.00,,\n"),
            Some(1_234_567)
        );
        assert_eq!(
            perf_count("<not supported>,,instructions:u,0,100.00,,"),
            None
        );
        assert_eq!(
            cachegrind_count("desc: I1 cache\ncmd: true\nevents: Ir\nsummary: 98765\n"),
            Some(98_765)
        );
    }
}
