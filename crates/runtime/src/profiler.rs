//! The sampling profiler: Comprex's method-level region measurement (§IV "granularity of
//! regions", §V.A), as a second static library linked *instead of* the region timers.
//!
//! `c/knobs_profiler.c` defines `__knobs_method_enter/exit(u32)` and, as aliases, the
//! `__knobs_region_enter/exit(u32)` that `llvm::instrument` emits, so a program
//! instrumented with one probe per function (start before the entry block's first
//! instruction, an end before every `ret`) is profiled by linking [`build`]'s
//! `libknobs_profiler.a` in place of [`crate::build`]'s library (link one or the other, never
//! both). Enter/exit only push/pop a per-thread stack and publish its top; a sampler charges
//! every period (default 1 ms, `KNOBS_PROFILE_PERIOD_US`) to the innermost open region of
//! each sampled thread, or to the base. The clock is wall time by default (a sampler thread;
//! no signal disturbs the program), CPU time with `KNOBS_PROFILE_CLOCK=cpu` (the same
//! sampler reading each thread's `task-clock` perf event where perf events are allowed, else a
//! per-thread POSIX CPU-time timer delivering `SIGPROF`, checked at the scheduler's tick). At exit the file named by
//! `KNOBS_REGION_TIMES` gets a region-times file (`docs/region-times.md`) whose seconds are
//! samples × period, plus the period and sample counts (`docs/profiler.md`); both
//! [`crate::RegionTimes::read`] and [`Profile::read`] read it.
//!
//! [`build_test_clock`] compiles the same source with `-DKNOBS_TEST_CLOCK`: no sampler thread
//! and no CPU timer; time passes only when the program calls `__knobs_test_sample(periods)`
//! ([`TEST_SAMPLE_FN`]), which does exactly what one wake-up of the wall-clock sampler (or one
//! expiry of the calling thread's CPU timer) covering that many periods does — the same code.
//! Tests check attribution against such counted work, never against the machine's time.
//!
//! [`overhead_correction`] fits §V.A's optional linear correction from configurations
//! measured with and without the profiler.
//!
//! Architecture invariant: the profiler has no dependencies beyond libc (glibc ≥ 2.34, where
//! pthread and timer functions are part of libc) and never prints; enter/exit read no clock,
//! make no system call, take no lock and allocate only for amortised growth.
//!
//! Architecture invariant: the `SIGPROF` handler is async-signal-safe: it reads a
//! thread-local pointer, the published stack top and the timer's overrun, adds to a counter
//! only its own thread writes, and preserves `errno`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{CFLAGS, Error, RegionTime, RegionTimes, io};

/// The profiler's C source, compiled by [`build`].
pub const SOURCE: &str = include_str!("../c/knobs_profiler.c");

/// The environment variable naming the output file: the region timers' own
/// ([`crate::ENV_VAR`]), so measuring code need not know which library was linked.
pub const ENV_VAR: &str = crate::ENV_VAR;

/// The environment variable holding the sampling period in microseconds (10 to 1 000 000;
/// unset, empty or out of range: [`DEFAULT_PERIOD_US`]).
pub const PERIOD_VAR: &str = "KNOBS_PROFILE_PERIOD_US";

/// The environment variable choosing the clock: `wall` (default) or `cpu`.
pub const CLOCK_VAR: &str = "KNOBS_PROFILE_CLOCK";

/// The environment variable that, set to `posix`, makes the CPU clock use POSIX CPU timers
/// (checked at the scheduler's tick) even where `task-clock` perf events are allowed.
pub const TIMER_VAR: &str = "KNOBS_PROFILE_TIMER";

/// The default sampling period, in microseconds.
pub const DEFAULT_PERIOD_US: u64 = 1000;

/// Linker flags pulling the profiler out of its archive even when nothing calls it, so the
/// file with `base` and `total` is still written.
pub const LINK_FLAGS: &[&str] = &["-Wl,-u,__knobs_method_enter"];

/// Whether this process may open a `task-clock` perf event on its own thread, as the profiler
/// does for the CPU clock (`perf_event_paranoid` up to 2 allows it; containers may not): if
/// not, the CPU clock falls back to POSIX CPU timers, which the kernel checks only at its
/// scheduler tick, and methods shorter than a tick are seen only over many samples.
pub fn perf_task_clock_allowed() -> bool {
    // The first 64 bytes of `struct perf_event_attr` (PERF_ATTR_SIZE_VER0): type
    // PERF_TYPE_SOFTWARE and its size, config PERF_COUNT_SW_TASK_CLOCK, flags `disabled`.
    let mut attr = [0u64; 8];
    attr[0] = 1 | (64 << 32);
    attr[1] = 1;
    attr[2] = 100_000;
    attr[6] = 1;
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    // SAFETY: `attr` is a valid, fully initialised VER0 attribute that outlives the call;
    // the returned descriptor, if any, is closed at once.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return false;
    }
    // SAFETY: `fd` was just opened by this process and is not used again.
    unsafe { libc::close(fd as libc::c_int) };
    true
}

/// Compiles the profiler with `clang` into `out_dir/knobs-profiler-<hash>/libknobs_profiler.a`
/// and returns that path; cached by content hash like [`crate::build`], concurrent builds
/// safe (temporary names, then rename).
pub fn build(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    crate::build_library(clang, out_dir, "profiler", SOURCE, CFLAGS)
}

/// The function the test-clock build exports: `void __knobs_test_sample(uint32_t periods)`
/// lets `periods` sampling periods pass, then takes one wall-clock sample of every live
/// registered thread (a sampler wake-up covering `periods` periods: `weight` and `missed` as
/// the real sampler computes them) or, with `KNOBS_PROFILE_CLOCK=cpu`, charges `periods` to
/// the calling thread's innermost region (its CPU timer expiring with `periods − 1`
/// overruns). The file's `wall` is the time so passed (`docs/profiler.md`).
pub const TEST_SAMPLE_FN: &str = "__knobs_test_sample";

/// [`build`] with [`crate::TEST_CLOCK_FLAG`]: the profiler for deterministic tests, whose clock is
/// [`TEST_SAMPLE_FN`] (no sampler thread, no CPU timers; everything else is the same code).
/// Cached by content hash like [`build`], in its own directory (the flags are hashed too).
pub fn build_test_clock(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    crate::build_test_clock_library(clang, out_dir, "profiler", SOURCE, CFLAGS)
}

/// Which clock the profiler sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileClock {
    /// Wall time (a sampler thread; blocked and sleeping time counts).
    Wall,
    /// CPU time of each thread (its `task-clock` perf event, or a POSIX CPU-time timer).
    Cpu,
}

/// What took the samples (the file's `timer` line; files written before it had one say
/// nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileTimer {
    /// The wall clock's sampler thread.
    SamplerThread,
    /// Each thread's `task-clock` perf event: its CPU time at the period asked for.
    PerfTaskClock,
    /// Each thread's POSIX CPU timer, which the kernel checks only at its scheduler tick
    /// (perf events were not allowed): periods shorter than the tick are charged in lumps.
    PosixCpuTimer,
    /// The test clock (`__knobs_test_sample`).
    TestClock,
}

/// A profile file: the region times (seconds are samples × period) and the sampling
/// details (`docs/profiler.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The region-times view: what ConfigCrusher's and Comprex's models read.
    pub times: RegionTimes,
    pub clock: ProfileClock,
    /// What took the samples; `None` in files written before the profiler said.
    pub timer: Option<ProfileTimer>,
    /// The nominal sampling period, in seconds.
    pub period: f64,
    /// Seconds each sample stands for: the period (cpu), or the wall time covered over the
    /// sampler's wake-ups (wall; more than the period when the sampler woke late).
    pub weight: f64,
    /// Periods the wall-clock sampler slept through (woke late); 0 for the CPU clock.
    pub missed: u64,
    /// All samples (the regions' and the base's), over all threads.
    pub samples: u64,
    /// Samples with no region open.
    pub base_samples: u64,
    /// Activations popped by an exit of an enclosing region (skipped by longjmp or an
    /// exception).
    pub unwound: u64,
}

impl Profile {
    /// Reads the file a profiled program wrote.
    pub fn read(path: &Path) -> Result<Profile, Error> {
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        Profile::parse(&text, path)
    }

    /// Parses a file's text; `path` only names it in errors. A region-times file without the
    /// profiler's keys (the region timers wrote it) is an error naming the missing key.
    pub fn parse(text: &str, path: &Path) -> Result<Profile, Error> {
        let times = RegionTimes::parse(text, path)?;
        let mut keys: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        for (k, line) in text.lines().enumerate() {
            if let Some((key, value)) = line.split_once('\t')
                && !key.starts_with(|c: char| c.is_ascii_digit())
            {
                keys.insert(key, (k + 1, value.trim()));
            }
        }
        let err = |line: usize, message: String| Error::Format {
            path: path.to_path_buf(),
            line,
            message,
        };
        let get = |key: &str| {
            keys.get(key).copied().ok_or_else(|| {
                err(
                    text.lines().count(),
                    format!("no `{key}` line: written by the region timers, not the profiler?"),
                )
            })
        };
        let count = |key: &str| -> Result<u64, Error> {
            let (n, v) = get(key)?;
            v.parse()
                .map_err(|_| err(n, format!("`{v}` is not a count of {key}")))
        };
        let (n, clock) = get("profiler")?;
        let clock = match clock {
            "wall" => ProfileClock::Wall,
            "cpu" => ProfileClock::Cpu,
            other => return Err(err(n, format!("unknown profiler clock `{other}`"))),
        };
        let timer = match keys.get("timer") {
            None => None,
            Some(&(_, "sampler-thread")) => Some(ProfileTimer::SamplerThread),
            Some(&(_, "perf-task-clock")) => Some(ProfileTimer::PerfTaskClock),
            Some(&(_, "posix-cpu-timer")) => Some(ProfileTimer::PosixCpuTimer),
            Some(&(_, "test-clock")) => Some(ProfileTimer::TestClock),
            Some(&(n, other)) => return Err(err(n, format!("unknown profiler timer `{other}`"))),
        };
        let positive = |key: &str| -> Result<f64, Error> {
            let (n, v) = get(key)?;
            v.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| err(n, format!("`{v}` is not a {key} in seconds")))
        };
        Ok(Profile {
            clock,
            timer,
            period: positive("period")?,
            weight: positive("weight")?,
            missed: count("missed")?,
            samples: count("samples")?,
            base_samples: count("base_samples")?,
            unwound: count("unwound")?,
            times,
        })
    }

    /// A region's samples (its seconds over the weight, rounded); zero if never sampled.
    pub fn region_samples(&self, id: u32) -> u64 {
        (self.times.region(id).self_seconds / self.weight).round() as u64
    }

    /// A region's seconds and entries; zero for a region never entered.
    pub fn region(&self, id: u32) -> RegionTime {
        self.times.region(id)
    }
}

/// A fitted line `profiled = slope · native + intercept` (§V.A's overhead correction).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    pub slope: f64,
    pub intercept: f64,
}

impl Linear {
    /// The native time a profiled time corresponds to: `(t − intercept) / slope`.
    pub fn correct(&self, profiled: f64) -> f64 {
        (profiled - self.intercept) / self.slope
    }
}

/// Fits `profiled = a · native + b` by least squares to `(profiled, native)` pairs — the same
/// k configurations run with and without the profiler (Comprex used k = 5). With one pair, or
/// pairs whose native times are all equal, the fit is the ratio through the origin
/// (`b = 0`); `None` for no pairs, non-finite values, or a slope that is not positive.
pub fn overhead_correction(pairs: &[(f64, f64)]) -> Option<Linear> {
    if pairs.is_empty() || pairs.iter().any(|&(p, x)| !p.is_finite() || !x.is_finite()) {
        return None;
    }
    let n = pairs.len() as f64;
    let mean_x = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let mean_y = pairs.iter().map(|p| p.0).sum::<f64>() / n;
    let sxx: f64 = pairs.iter().map(|p| (p.1 - mean_x).powi(2)).sum();
    let sxy: f64 = pairs.iter().map(|p| (p.1 - mean_x) * (p.0 - mean_y)).sum();
    let fit = if sxx > 1e-12 * mean_x.abs().max(1e-300).powi(2) * n {
        let slope = sxy / sxx;
        Linear {
            slope,
            intercept: mean_y - slope * mean_x,
        }
    } else {
        Linear {
            slope: mean_y / mean_x,
            intercept: 0.0,
        }
    };
    (fit.slope.is_finite() && fit.slope > 0.0).then_some(fit)
}

/// The robust variant of [`overhead_correction`]: `profiled = a · native` with `a` the median
/// of the per-configuration ratios `profiled / native` (the mean of the two middle ones for
/// an even count). A line fitted to k = 5 noisy pairs can come out far from the truth (one
/// native run slowed down by a busy machine tilts both slope and intercept); the median
/// ratio ignores up to ⌊(k − 1)/2⌋ such outliers. `None` for no pairs or a pair that is
/// not positive and finite.
pub fn overhead_ratio(pairs: &[(f64, f64)]) -> Option<Linear> {
    if pairs.is_empty()
        || pairs
            .iter()
            .any(|&(p, x)| !(p.is_finite() && x.is_finite() && p > 0.0 && x > 0.0))
    {
        return None;
    }
    let mut ratios: Vec<f64> = pairs.iter().map(|&(p, x)| p / x).collect();
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let slope = if n % 2 == 1 {
        ratios[n / 2]
    } else {
        (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
    };
    Some(Linear {
        slope,
        intercept: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "knobs-region-times 1\ntotal\t0.120000000\nbase\t0.020000000\n\
        wall\t0.120400000\nthreads\t1\nunmatched_exits\t0\nopen_at_exit\t1\n\
        profiler\twall\ntimer\tsampler-thread\nperiod\t0.001000000\nweight\t0.001000000000\nmissed\t3\nsamples\t120\nbase_samples\t20\nunwound\t2\n\
        0\t0.070000000\t1\n3\t0.030000000\t1000\n";

    #[test]
    fn parses_a_profile_and_its_region_times_view() {
        let p = Profile::parse(SAMPLE, Path::new("p")).unwrap();
        assert_eq!(p.clock, ProfileClock::Wall);
        assert_eq!(p.timer, Some(ProfileTimer::SamplerThread));
        let older = Profile::parse(
            &SAMPLE.replace("timer\tsampler-thread\n", ""),
            Path::new("p"),
        );
        assert_eq!(older.unwrap().timer, None);
        assert_eq!(
            (
                p.period,
                p.weight,
                p.missed,
                p.samples,
                p.base_samples,
                p.unwound
            ),
            (0.001, 0.001, 3, 120, 20, 2)
        );
        assert_eq!(p.region_samples(0), 70);
        assert_eq!(p.region_samples(3), 30);
        assert_eq!(p.region_samples(9), 0);
        assert_eq!(p.region(3).entries, 1000);
        assert_eq!(p.times.open_at_exit, 1);
        // The region timers' reader takes it as is.
        let t = RegionTimes::parse(SAMPLE, Path::new("p")).unwrap();
        assert_eq!(t, p.times);
    }

    #[test]
    fn a_region_timer_file_is_not_a_profile() {
        let text = "knobs-region-times 1\ntotal\t1\nbase\t0\n";
        let e = Profile::parse(text, Path::new("t.tsv"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.tsv:3") && e.contains("`profiler`"), "{e}");
        let e = Profile::parse(&SAMPLE.replace("sampler-thread", "sundial"), Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t:9:") && e.contains("timer `sundial`"), "{e}");
        let e = Profile::parse(&SAMPLE.replace("\twall", "\tsundial"), Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t:8:") && e.contains("sundial"), "{e}");
        let e = Profile::parse(&SAMPLE.replace("\t0.001000000\n", "\t0\n"), Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t:10:"), "{e}");
    }

    #[test]
    fn overhead_correction_matches_hand_computation() {
        // native x = 1, 2, 3, 4; profiled y = 1.5, 2.5, 3.3, 4.5.
        // x̄ = 2.5, ȳ = 2.95; Sxx = 2.25+0.25+0.25+2.25 = 5;
        // Sxy = (-1.5)(-1.45) + (-0.5)(-0.45) + (0.5)(0.35) + (1.5)(1.55)
        //     = 2.175 + 0.225 + 0.175 + 2.325 = 4.9
        // a = 4.9 / 5 = 0.98; b = 2.95 − 0.98 · 2.5 = 0.5.
        let pairs = [(1.5, 1.0), (2.5, 2.0), (3.3, 3.0), (4.5, 4.0)];
        let fit = overhead_correction(&pairs).unwrap();
        assert!((fit.slope - 0.98).abs() < 1e-12, "{fit:?}");
        assert!((fit.intercept - 0.5).abs() < 1e-12, "{fit:?}");
        // correct() inverts: (3.44 − 0.5) / 0.98 = 3.
        assert!((fit.correct(3.44) - 3.0).abs() < 1e-12);
        // An exact 5 % overhead plus 10 ms start-up is recovered exactly.
        let exact: Vec<(f64, f64)> = [0.2, 0.5, 1.0, 3.0, 7.0]
            .iter()
            .map(|&x| (1.05 * x + 0.01, x))
            .collect();
        let fit = overhead_correction(&exact).unwrap();
        assert!((fit.slope - 1.05).abs() < 1e-12 && (fit.intercept - 0.01).abs() < 1e-12);
        for &(y, x) in &exact {
            assert!((fit.correct(y) - x).abs() < 1e-12);
        }
    }

    #[test]
    fn overhead_ratio_is_the_median_ratio() {
        // Ratios 1.10, 1.20, 3.00 (an outlier), 1.05, 1.15: median 1.15.
        let pairs = [(1.1, 1.0), (2.4, 2.0), (0.9, 0.3), (4.2, 4.0), (0.575, 0.5)];
        let fit = overhead_ratio(&pairs).unwrap();
        assert!(
            (fit.slope - 1.15).abs() < 1e-12 && fit.intercept == 0.0,
            "{fit:?}"
        );
        assert!((fit.correct(2.3) - 2.0).abs() < 1e-12);
        // Even count: the mean of the middle two (1.10 and 1.20).
        let fit = overhead_ratio(&pairs[..4]).unwrap();
        assert!((fit.slope - 1.15).abs() < 1e-12, "{fit:?}");
        assert_eq!(overhead_ratio(&[]), None);
        assert_eq!(overhead_ratio(&[(1.0, 0.0)]), None);
        assert_eq!(overhead_ratio(&[(f64::NAN, 1.0)]), None);
    }

    #[test]
    fn overhead_correction_degenerate_inputs() {
        assert_eq!(overhead_correction(&[]), None);
        let one = overhead_correction(&[(1.1, 1.0)]).unwrap();
        assert!((one.slope - 1.1).abs() < 1e-12 && one.intercept == 0.0);
        let same = overhead_correction(&[(2.0, 1.0), (2.4, 1.0)]).unwrap();
        assert!((same.slope - 2.2).abs() < 1e-12);
        assert_eq!(overhead_correction(&[(f64::NAN, 1.0)]), None);
        assert_eq!(overhead_correction(&[(2.0, 1.0), (1.0, 2.0)]), None);
    }
}
