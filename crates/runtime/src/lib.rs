//! `runtime`: the region-timing library linked into instrumented programs, and the reader of
//! what it writes.
//!
//! `llvm::instrument` inserts `__knobs_region_enter(u32)` / `__knobs_region_exit(u32)`
//! calls at region starts and ends (ConfigCrusher §3.3); this crate provides those two
//! functions as a small C static library ([`build`] compiles `c/knobs_runtime.c` with clang 19
//! into `libknobs_runtime.a`, cached by content hash) and reads the file the instrumented
//! program writes at exit ([`RegionTimes::read`]): per region its self time and entry count,
//! the base (time outside every region) and the total, as documented in
//! `docs/region-times.md`. It also provides `__knobs_fixed_check(u32, i64, i64)`, which the
//! instrumenter calls after loads the analysis folded to a fixed setting's value: a loaded
//! value that is not the assumed one is recorded per check id and reported in the same file
//! ([`RegionTimes::fixed_violations`]).
//!
//! Semantics, in short (the C file's header comment is the full statement): each thread keeps
//! a stack of open activations; the time between two events goes to the innermost one (its
//! *self* time) or to the base, so nested time is subtracted from the enclosing region and
//! `base + Σ self = total` exactly. Recursion pushes another activation (time still counted
//! once); an exit closes the innermost open activation of its id and is ignored when none is
//! open; `exit()` and return from `main` write the file named by `KNOBS_REGION_TIMES`;
//! `_exit`, fatal signals and `exec` lose the data; per-thread stacks are summed when written.
//!
//! Architecture invariant: the runtime has no dependencies beyond libc (no pthread, no C++,
//! no Rust std); the hot path neither allocates nor locks nor makes system calls, except for
//! amortised growth of a thread's stack or region table and the read of the thread's CPU
//! clock (`CLOCK_THREAD_CPUTIME_ID`) after an interval of at least [`CPU_ENV_VAR`]'s
//! (100 µs by default), so at most one per that much of a thread's time.
//!
//! Architecture invariant: the runtime never prints; its only output is the file named by
//! `KNOBS_REGION_TIMES`, and nothing is written when that variable is unset or empty.
//!
//! Architecture invariant: knows nothing of regions' meaning, options or LLVM; ids are dense
//! `u32`s chosen by the instrumenter.

pub mod call_tree;
pub mod profiler;
pub mod taint_library;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The runtime's C source, compiled by [`build`].
pub const SOURCE: &str = include_str!("../c/knobs_runtime.c");

/// The environment variable naming the output file.
pub const ENV_VAR: &str = "KNOBS_REGION_TIMES";

/// The first line of the output file.
pub const HEADER: &str = "knobs-region-times 2";

/// The first line of files written before the runtime read the thread's CPU clock (read as
/// files without CPU times).
pub const HEADER_V1: &str = "knobs-region-times 1";

/// The environment variable setting the CPU clock: `off`, or the shortest interval between
/// two of a thread's events (µs, default 100) for which the runtime reads the thread's CPU
/// clock; shorter ones are taken as spent on a CPU (docs/region-times.md).
pub const CPU_ENV_VAR: &str = "KNOBS_REGION_CPU_US";

/// Linker flags for the instrumented program (e.g. `llvm::link_instrumented`'s
/// `extra_flags`): they pull the runtime out of its archive even when the program calls
/// neither function (no region instrumented), so the file with `base` and `total` is still
/// written.
pub const LINK_FLAGS: &[&str] = &["-Wl,-u,__knobs_region_enter"];

/// Flags the runtime is compiled with: position-independent so it links into PIE executables
/// and shared objects alike.
const CFLAGS: &[&str] = &[
    "-O2", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-Werror", "-g0",
];

/// What can go wrong building the runtime or reading its output; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{tool}` could not be run: {message}")]
    ToolMissing { tool: String, message: String },
    #[error("compiling the knobs runtime with `{tool}` failed: {message}")]
    Compile { tool: String, message: String },
    #[error("archiving the knobs runtime with `{tool}` failed: {message}")]
    Archive { tool: String, message: String },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}:{line}: not a knobs region-times file: {message}")]
    Format {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn first_line(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .map(str::trim)
        .find(|l| l.contains("error"))
        .or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("(no message)")
        .to_string()
}

/// FNV-1a, 64 bits: a stable content hash for the cache (no dependency for it).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The archivers to try for a given clang: `llvm-ar-N` beside `clang-N`, then `ar`.
fn archivers(clang: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(name) = clang.file_name().and_then(|n| n.to_str())
        && let Some(suffix) = name.strip_prefix("clang")
    {
        out.push(clang.with_file_name(format!("llvm-ar{suffix}")));
    }
    out.push(PathBuf::from("ar"));
    out
}

/// Compiles the runtime with `clang` into `out_dir/knobs-runtime-<hash>/libknobs_runtime.a`
/// and returns that path. The hash covers the source, the flags and the clang path, so a
/// built library is reused as is; concurrent builds are safe (temporary names, then rename).
pub fn build(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    build_library(clang, out_dir, "runtime", SOURCE, CFLAGS)
}

/// [`build`]'s library with the test clock (`-DKNOBS_TEST_CLOCK`): time passes only through
/// the program's `__knobs_test_work(ns)` and the probes' fixed costs (the C file's header),
/// so tests of the timers' accounting do not depend on the machine's speed or load.
pub fn build_test_clock(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    build_test_clock_library(clang, out_dir, "runtime", SOURCE, CFLAGS)
}

/// [`build`]'s library with the count clock ([`COUNT_CLOCK_FLAG`]): intervals are measured
/// by the thread's count of the program's own IR instructions (`__knobs_instructions`, which
/// `llvm::add_instruction_counters` makes the program keep), not by a clock; the file says
/// `unit instructions` and its amounts are whole counts (docs/region-times.md, "Counting").
pub fn build_counting(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    let mut flags = CFLAGS.to_vec();
    flags.push(COUNT_CLOCK_FLAG);
    build_library(clang, out_dir, "runtime-counting", SOURCE, &flags)
}

/// The flag that compiles the region timers with the count clock.
pub const COUNT_CLOCK_FLAG: &str = "-DKNOBS_COUNT_CLOCK";

/// The thread-local counter (`uint64_t`, initial-exec TLS) the counting build defines and
/// the instrumented program adds its instructions to.
pub const INSTRUCTION_COUNTER: &str = "__knobs_instructions";

/// The flag that compiles a runtime with its test clock.
pub const TEST_CLOCK_FLAG: &str = "-DKNOBS_TEST_CLOCK";

/// [`build_library`] of a runtime's test-clock build ([`TEST_CLOCK_FLAG`]), named
/// `NAME-test-clock`.
pub(crate) fn build_test_clock_library(
    clang: &Path,
    out_dir: &Path,
    name: &str,
    source: &str,
    cflags: &[&str],
) -> Result<PathBuf, Error> {
    let mut flags = cflags.to_vec();
    flags.push(TEST_CLOCK_FLAG);
    build_library(
        clang,
        out_dir,
        &format!("{name}-test-clock"),
        source,
        &flags,
    )
}

/// Compiles one C source into `out_dir/knobs-NAME-<hash>/libknobs_NAME.a` (the region timers,
/// the profiler, the taint runtime), cached by the hash of source, flags and clang.
pub(crate) fn build_library(
    clang: &Path,
    out_dir: &Path,
    name: &str,
    source: &str,
    cflags: &[&str],
) -> Result<PathBuf, Error> {
    let hash = fnv1a(&[
        source.as_bytes(),
        cflags.join(" ").as_bytes(),
        clang.as_os_str().as_encoded_bytes(),
    ]);
    let dir = out_dir.join(format!("knobs-{name}-{hash:016x}"));
    let lib = dir.join(format!("libknobs_{name}.a"));
    if lib.is_file() {
        return Ok(lib);
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let unique = format!(
        "{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let object = dir.join(format!("knobs_{name}.{unique}.o"));
    let tool = clang.display().to_string();
    let mut child = Command::new(clang)
        .args(cflags)
        .args(["-x", "c", "-c", "-", "-o"])
        .arg(&object)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::ToolMissing {
            tool: tool.clone(),
            message: e.to_string(),
        })?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin
            .write_all(source.as_bytes())
            .map_err(|e| Error::Compile {
                tool: tool.clone(),
                message: e.to_string(),
            })?;
    }
    let out = child.wait_with_output().map_err(|e| Error::Compile {
        tool: tool.clone(),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&object);
        return Err(Error::Compile {
            tool,
            message: first_line(&out.stderr),
        });
    }

    let staged = dir.join(format!("libknobs_{name}.{unique}.a"));
    let mut last_missing = None;
    let mut archived = false;
    for ar in archivers(clang) {
        match Command::new(&ar)
            .arg("rcs")
            .arg(&staged)
            .arg(&object)
            .output()
        {
            Ok(o) if o.status.success() => {
                archived = true;
                break;
            }
            Ok(o) => {
                let _ = std::fs::remove_file(&object);
                return Err(Error::Archive {
                    tool: ar.display().to_string(),
                    message: first_line(&o.stderr),
                });
            }
            Err(e) => last_missing = Some((ar, e)),
        }
    }
    let _ = std::fs::remove_file(&object);
    if !archived {
        let (ar, e) = last_missing.expect("at least one archiver was tried");
        return Err(Error::ToolMissing {
            tool: ar.display().to_string(),
            message: e.to_string(),
        });
    }
    std::fs::rename(&staged, &lib).map_err(io(&lib))?;
    Ok(lib)
}

/// One region's totals over the run (all threads).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RegionTime {
    /// Time with this region the innermost open one, in seconds.
    pub self_seconds: f64,
    /// How many times the region was entered (every `__knobs_region_enter`, re-entries too).
    pub entries: u64,
    /// Its self time by the threads' CPU clocks (user + system), in seconds; `None` when the
    /// runtime did not read them (`KNOBS_REGION_CPU_US=off`, or a version-1 file).
    pub cpu_seconds: Option<f64>,
}

/// What the runtime read by the threads' CPU clocks (`CLOCK_THREAD_CPUTIME_ID`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    /// `base` plus every region's CPU self time, in seconds (summed over threads).
    pub total: f64,
    /// CPU time outside every region, in seconds.
    pub base: f64,
    /// The CPU time of the runtime's own start (`startup`), in seconds.
    pub startup: f64,
    /// How many times a thread's CPU clock was read (a system call each).
    pub reads: u64,
    /// What one read cost, ns (taken out of the interval after it).
    pub read_ns: f64,
    /// The shortest interval read by the clock, µs; shorter ones count as on a CPU.
    pub interval_us: f64,
}

/// A value check (`__knobs_fixed_check`) that failed during the run: the loaded value was
/// not the one the analysis assumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedViolation {
    /// The value the first violation loaded (sign-extended to 64 bits).
    pub value: i64,
    /// How many times the check failed (all threads).
    pub count: u64,
}

/// What a value check saw in a run with `KNOBS_FIXED_OBSERVE` set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObservedValue {
    /// The first value it loaded (sign-extended to 64 bits).
    pub first: i64,
    /// How many times it ran (all threads).
    pub count: u64,
    /// Whether it loaded another value too.
    pub varied: bool,
}

/// The environment variable that makes value checks observe instead of check.
pub const OBSERVE_ENV: &str = "KNOBS_FIXED_OBSERVE";

/// The contents of a region-times file (`docs/region-times.md`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionTimes {
    /// `base` plus every region's self time, in seconds: the process's time from the
    /// runtime's start to exit for a single-threaded program; summed over threads otherwise.
    pub total: f64,
    /// Time outside every region, in seconds (summed over threads).
    pub base: f64,
    /// Wall-clock seconds from the runtime's start to the write.
    pub wall: f64,
    /// Threads that recorded events (the main thread included).
    pub threads: u64,
    /// Exits for regions that were not open (ignored).
    pub unmatched_exits: u64,
    /// Regions the exiting thread still had open at exit (closed then).
    pub open_at_exit: u64,
    /// Seconds of the probes' own cost taken out of the intervals (not in `total`).
    pub probes: f64,
    /// The cost of one probe (ns) the runtime measured at start and took out of every
    /// interval; 0 when compensation was off (or an older runtime wrote the file).
    pub event_cost_ns: f64,
    /// Wall seconds the runtime's own start took (calibrating the probes' and the CPU
    /// clock's cost), before the main thread's time counts: not the program's time, not in
    /// `total` (0 in files of older runtimes).
    pub startup: f64,
    /// The CPU clock's totals; `None` when it was not read (every region's `cpu_seconds`
    /// is then `None` too).
    pub cpu: Option<CpuTimes>,
    /// Regions entered at least once (or charged any time), by id.
    pub regions: BTreeMap<u32, RegionTime>,
    /// Value checks that failed at least once, by check id (empty: every check held).
    pub fixed_violations: BTreeMap<u32, FixedViolation>,
    /// With [`OBSERVE_ENV`] set: what each check that ran saw, by check id.
    pub observed: BTreeMap<u32, ObservedValue>,
    /// The file's `unit` is `instructions` (the counting build, [`build_counting`]): every
    /// "seconds" field above (`total`, `base`, `probes`, a region's self time) is a count of
    /// the program's IR instructions, `probes` and `startup` are 0 and there are no CPU times.
    pub counted: bool,
}

impl RegionTimes {
    /// Reads the file an instrumented program wrote.
    pub fn read(path: &Path) -> Result<RegionTimes, Error> {
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        RegionTimes::parse(&text, path)
    }

    /// Parses a file's text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<RegionTimes, Error> {
        let err = |line: usize, message: String| Error::Format {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut lines = text.lines().enumerate().map(|(k, l)| (k + 1, l));
        let version = match lines.next() {
            Some((_, h)) if h.trim_end() == HEADER => 2,
            Some((_, h)) if h.trim_end() == HEADER_V1 => 1,
            Some((_, h)) => {
                return Err(err(
                    1,
                    format!("expected `{HEADER}` (or version 1), found `{h}`"),
                ));
            }
            None => return Err(err(1, "the file is empty".into())),
        };
        let mut times = RegionTimes::default();
        let mut cpu = CpuTimes::default();
        let mut seen_cpu = false;
        let (mut seen_total, mut seen_base) = (false, false);
        for (n, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let seconds = |s: &str| -> Result<f64, Error> {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| err(n, format!("`{s}` is not a number of seconds")))
            };
            let count = |s: &str| -> Result<u64, Error> {
                s.trim()
                    .parse::<u64>()
                    .map_err(|_| err(n, format!("`{s}` is not a count")))
            };
            if fields[0].starts_with(|c: char| c.is_ascii_digit()) {
                if fields.len() != 3 && (version == 1 || fields.len() != 4) {
                    return Err(err(
                        n,
                        if version == 1 {
                            format!("expected `id<TAB>seconds<TAB>entries`: `{line}`")
                        } else {
                            format!(
                                "expected `id<TAB>seconds<TAB>entries[<TAB>cpu_seconds]`: `{line}`"
                            )
                        },
                    ));
                }
                let id: u32 = fields[0]
                    .parse()
                    .map_err(|_| err(n, format!("`{}` is not a region id", fields[0])))?;
                let region = RegionTime {
                    self_seconds: seconds(fields[1])?,
                    entries: count(fields[2])?,
                    cpu_seconds: fields.get(3).map(|s| seconds(s)).transpose()?,
                };
                if times.regions.insert(id, region).is_some() {
                    return Err(err(n, format!("region {id} appears twice")));
                }
                continue;
            }
            if fields[0] == "observed" {
                if fields.len() != 5 {
                    return Err(err(
                        n,
                        format!(
                            "expected `observed<TAB>id<TAB>first<TAB>count<TAB>varied`: `{line}`"
                        ),
                    ));
                }
                let id: u32 = fields[1]
                    .trim()
                    .parse()
                    .map_err(|_| err(n, format!("`{}` is not a check id", fields[1])))?;
                let first: i64 = fields[2]
                    .trim()
                    .parse()
                    .map_err(|_| err(n, format!("`{}` is not a 64-bit integer", fields[2])))?;
                let count = count(fields[3])?;
                let varied = match fields[4].trim() {
                    "0" => false,
                    "1" => true,
                    other => return Err(err(n, format!("`{other}` is not 0 or 1"))),
                };
                let seen = ObservedValue {
                    first,
                    count,
                    varied,
                };
                if times.observed.insert(id, seen).is_some() {
                    return Err(err(n, format!("check {id} appears twice")));
                }
                continue;
            }
            if fields[0] == "fixed" {
                if fields.len() != 4 {
                    return Err(err(
                        n,
                        format!("expected `fixed<TAB>id<TAB>value<TAB>count`: `{line}`"),
                    ));
                }
                let id: u32 = fields[1]
                    .trim()
                    .parse()
                    .map_err(|_| err(n, format!("`{}` is not a check id", fields[1])))?;
                let value: i64 = fields[2]
                    .trim()
                    .parse()
                    .map_err(|_| err(n, format!("`{}` is not a 64-bit integer", fields[2])))?;
                let count = count(fields[3])?;
                if count == 0 {
                    return Err(err(n, format!("check {id} has a violation count of 0")));
                }
                let violation = FixedViolation { value, count };
                if times.fixed_violations.insert(id, violation).is_some() {
                    return Err(err(n, format!("check {id} appears twice")));
                }
                continue;
            }
            if fields.len() != 2 {
                return Err(err(n, format!("expected `key<TAB>value`: `{line}`")));
            }
            match fields[0] {
                "total" => {
                    times.total = seconds(fields[1])?;
                    seen_total = true;
                }
                "base" => {
                    times.base = seconds(fields[1])?;
                    seen_base = true;
                }
                "wall" => times.wall = seconds(fields[1])?,
                "threads" => times.threads = count(fields[1])?,
                "unmatched_exits" => times.unmatched_exits = count(fields[1])?,
                "open_at_exit" => times.open_at_exit = count(fields[1])?,
                "probes" => times.probes = seconds(fields[1])?,
                "event_cost_ns" => times.event_cost_ns = seconds(fields[1])?,
                "cpu_total" => {
                    cpu.total = seconds(fields[1])?;
                    seen_cpu = true;
                }
                "cpu_base" => cpu.base = seconds(fields[1])?,
                "cpu_startup" => cpu.startup = seconds(fields[1])?,
                "startup" => times.startup = seconds(fields[1])?,
                "unit" => match fields[1].trim() {
                    "instructions" => times.counted = true,
                    "seconds" => times.counted = false,
                    u => return Err(err(n, format!("unknown unit `{u}`"))),
                },
                "cpu_reads" => cpu.reads = count(fields[1])?,
                "cpu_read_ns" => cpu.read_ns = seconds(fields[1])?,
                "cpu_interval_us" => cpu.interval_us = seconds(fields[1])?,
                _ => {} // keys added later are skipped
            }
        }
        let with_cpu = times.regions.values().filter(|r| r.cpu_seconds.is_some());
        if with_cpu.count() != if seen_cpu { times.regions.len() } else { 0 } {
            return Err(err(
                text.lines().count(),
                "CPU times for some regions only: a `cpu_total` line and a fourth field on \
                 every region line, or neither"
                    .into(),
            ));
        }
        times.cpu = seen_cpu.then_some(cpu);
        if !seen_total || !seen_base {
            return Err(err(
                text.lines().count(),
                "missing the `total` or `base` line (was the file cut short?)".into(),
            ));
        }
        Ok(times)
    }

    /// A region's totals; zero for a region never entered.
    pub fn region(&self, id: u32) -> RegionTime {
        self.regions.get(&id).copied().unwrap_or_default()
    }

    /// The sum of all regions' self times, in seconds.
    pub fn regions_seconds(&self) -> f64 {
        self.regions.values().map(|r| r.self_seconds).sum()
    }

    /// The sum of all regions' CPU self times, in seconds; `None` without CPU times.
    pub fn regions_cpu_seconds(&self) -> Option<f64> {
        self.cpu?;
        Some(self.regions.values().filter_map(|r| r.cpu_seconds).sum())
    }

    /// The sum of all regions' entries (ConfigCrusher's RC, Table 7).
    pub fn entries(&self) -> u64 {
        self.regions.values().map(|r| r.entries).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "knobs-region-times 1\ntotal\t1.500000000\nbase\t0.250000000\n\
        wall\t1.500000100\nthreads\t1\nunmatched_exits\t2\nopen_at_exit\t0\n\
        0\t1.000000000\t3\n7\t0.250000000\t1\n";

    #[test]
    fn parses_the_documented_format() {
        let t = RegionTimes::parse(SAMPLE, Path::new("x")).unwrap();
        assert_eq!(t.total, 1.5);
        assert_eq!(t.base, 0.25);
        assert_eq!(t.threads, 1);
        assert_eq!(t.unmatched_exits, 2);
        assert_eq!(
            t.region(0),
            RegionTime {
                self_seconds: 1.0,
                entries: 3,
                cpu_seconds: None,
            }
        );
        assert_eq!(t.cpu, None);
        assert_eq!(t.regions_cpu_seconds(), None);
        assert_eq!(t.region(7).entries, 1);
        assert_eq!(t.region(3), RegionTime::default());
        assert_eq!(t.regions_seconds(), 1.25);
        assert_eq!(t.entries(), 4);
    }

    #[test]
    fn rejects_malformed_files_with_a_line() {
        let bad = |text: &str| RegionTimes::parse(text, Path::new("f.txt")).unwrap_err();
        let e = bad("").to_string();
        assert!(e.contains("f.txt:1") && e.contains("empty"), "{e}");
        let e = bad("hello\n").to_string();
        assert!(e.contains("expected `knobs-region-times 2`"), "{e}");
        let e = bad("knobs-region-times 3\ntotal\t1\nbase\t0\n").to_string();
        assert!(e.contains("f.txt:1:") && e.contains("version 1"), "{e}");
        // A version-1 file has no CPU field; a version-2 one has it on every region or none.
        let e = bad("knobs-region-times 1\ntotal\t1\nbase\t0\n0\t1\t1\t1\n").to_string();
        assert!(
            e.contains(":4:") && e.contains("id<TAB>seconds<TAB>entries`"),
            "{e}"
        );
        let e = bad("knobs-region-times 2\ntotal\t1\nbase\t0\n0\t1\t1\t1\n").to_string();
        assert!(e.contains("some regions only"), "{e}");
        let e = bad("knobs-region-times 2\ntotal\t1\nbase\t0\ncpu_total\t1\n0\t1\t1\n").to_string();
        assert!(e.contains("some regions only"), "{e}");
        let e = bad("knobs-region-times 1\ntotal\t1\nbase\tx\n").to_string();
        assert!(e.contains(":3:") && e.contains("`x`"), "{e}");
        let e = bad("knobs-region-times 1\ntotal\t1\nbase\t0\n0\t1\n").to_string();
        assert!(e.contains(":4:"), "{e}");
        let e = bad("knobs-region-times 1\ntotal\t1\n").to_string();
        assert!(e.contains("missing"), "{e}");
        let e = bad("knobs-region-times 1\ntotal\t1\nbase\t0\n1\t1\t1\n1\t1\t1\n").to_string();
        assert!(e.contains("twice"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn reads_the_unit_of_a_counted_file() {
        let text = "knobs-region-times 2\nunit\tinstructions\ntotal\t1500\nbase\t250\n0\t1250\t3\n";
        let t = RegionTimes::parse(text, Path::new("x")).unwrap();
        assert!(t.counted);
        assert_eq!(
            (t.total, t.base, t.regions[&0].self_seconds),
            (1500.0, 250.0, 1250.0)
        );
        let timed = RegionTimes::parse("knobs-region-times 2\ntotal\t1\nbase\t0\n", Path::new("x"));
        assert!(!timed.unwrap().counted);
        let e = RegionTimes::parse(
            "knobs-region-times 2\nunit\tcycles\ntotal\t1\nbase\t0\n",
            Path::new("f"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("f:2:") && e.contains("unknown unit `cycles`"),
            "{e}"
        );
    }

    #[test]
    fn parses_the_cpu_clock_of_version_2() {
        let text = "knobs-region-times 2\ntotal\t1.5\nbase\t0.25\nwall\t1.5\n\
            startup\t0.002\ncpu_total\t0.75\ncpu_base\t0.25\ncpu_startup\t0.001\ncpu_reads\t4\ncpu_read_ns\t600\n\
            cpu_interval_us\t100\n0\t1.000000000\t3\t0.5\n7\t0.25\t1\t0\n";
        let t = RegionTimes::parse(text, Path::new("x")).unwrap();
        assert_eq!(
            t.cpu,
            Some(CpuTimes {
                total: 0.75,
                base: 0.25,
                startup: 0.001,
                reads: 4,
                read_ns: 600.0,
                interval_us: 100.0,
            })
        );
        assert_eq!(t.startup, 0.002);
        assert_eq!(t.region(0).cpu_seconds, Some(0.5));
        assert_eq!(t.region(7).cpu_seconds, Some(0.0));
        assert_eq!(t.region(3).cpu_seconds, None);
        assert_eq!(t.regions_cpu_seconds(), Some(0.5));
        assert_eq!(t.regions_seconds(), 1.25);
        // Version 2 without the CPU clock (`KNOBS_REGION_CPU_US=off`): wall times only.
        let off = "knobs-region-times 2\ntotal\t1\nbase\t0\n0\t1\t1\n";
        let t = RegionTimes::parse(off, Path::new("x")).unwrap();
        assert_eq!((t.cpu, t.region(0).cpu_seconds), (None, None));
    }

    #[test]
    fn parses_fixed_setting_violations() {
        let text = "knobs-region-times 1\ntotal\t1\nbase\t1\nwall\t1\nthreads\t1\n\
            unmatched_exits\t0\nopen_at_exit\t0\nfixed\t0\t3\t12\n\
            fixed\t7\t-9223372036854775808\t1\n0\t0.5\t2\n";
        let t = RegionTimes::parse(text, Path::new("x")).unwrap();
        assert_eq!(
            t.fixed_violations
                .iter()
                .map(|(k, v)| (*k, *v))
                .collect::<Vec<_>>(),
            vec![
                (
                    0,
                    FixedViolation {
                        value: 3,
                        count: 12
                    }
                ),
                (
                    7,
                    FixedViolation {
                        value: i64::MIN,
                        count: 1
                    }
                ),
            ]
        );
        assert_eq!(t.region(0).entries, 2);
        // Without `fixed` lines (every check held, or an older file): none.
        let t = RegionTimes::parse(SAMPLE, Path::new("x")).unwrap();
        assert!(t.fixed_violations.is_empty());
    }

    #[test]
    fn rejects_malformed_fixed_lines_with_a_line() {
        let bad = |fixed: &str| {
            let text = format!("knobs-region-times 1\ntotal\t1\nbase\t1\n{fixed}\n");
            RegionTimes::parse(&text, Path::new("f.txt"))
                .unwrap_err()
                .to_string()
        };
        for (line, want) in [
            ("fixed\t0\t3", "expected `fixed<TAB>id<TAB>value<TAB>count`"),
            (
                "fixed\t0\t3\t1\t1",
                "expected `fixed<TAB>id<TAB>value<TAB>count`",
            ),
            ("fixed\t-1\t3\t1", "`-1` is not a check id"),
            ("fixed\t0\t0x3\t1", "`0x3` is not a 64-bit integer"),
            (
                "fixed\t0\t9223372036854775808\t1",
                "`9223372036854775808` is not a 64-bit integer",
            ),
            ("fixed\t0\t3\t-2", "`-2` is not a count"),
            ("fixed\t0\t3\t0", "count of 0"),
        ] {
            let e = bad(line);
            assert!(e.contains("f.txt:4:") && e.contains(want), "{line:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        // A duplicate is reported on its second line.
        let e = bad("fixed\t1\t3\t1\nfixed\t1\t4\t1");
        assert!(
            e.contains("f.txt:5:") && e.contains("check 1 appears twice"),
            "{e}"
        );
    }

    #[test]
    fn archiver_follows_clangs_version() {
        assert_eq!(
            archivers(Path::new("/usr/bin/clang-19"))[0],
            PathBuf::from("/usr/bin/llvm-ar-19")
        );
        assert_eq!(
            archivers(Path::new("clang-19"))[0],
            PathBuf::from("llvm-ar-19")
        );
        assert_eq!(archivers(Path::new("cc")), vec![PathBuf::from("ar")]);
    }
}
