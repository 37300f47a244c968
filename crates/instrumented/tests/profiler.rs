//! The sampling profiler linked into real programs (clang 19, real runs): a C program calling
//! the API directly (`profiler_scenarios.c`: nested functions, recursion, threads, exits,
//! longjmp, fork) and the running example instrumented at method level through `llvm` (one
//! region per function).
//!
//! Attribution is checked exactly, against counted work: the programs are linked with the
//! profiler's test-clock build (`runtime::profiler::build_test_clock`), whose only clock is
//! the program's calls of `__knobs_test_sample` (one sampler wake-up each), so nothing here
//! depends on the machine's speed or load. The real clocks are run too, for what load cannot
//! break (a sleep is never interrupted; the books balance; CPU time charged is at most the CPU
//! time used). How precisely they attribute real time is a benchmark:
//! `examples/bench_wall_attribution.rs` (wall clock) and `examples/bench_cpu_attribution.rs`
//! (CPU clock).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use ir::InstKind;
use ir::ProgramPoint;
use llvm::{CompileOptions, RegionProbe, compile_c, instrument, link_instrumented};
use runtime::profiler::{self, Profile, ProfileClock, ProfileTimer};

/// The scenarios (`prog SCENARIO`).
const PROGRAM: &str = include_str!("profiler_scenarios.c");

fn clang() -> &'static Path {
    Path::new("clang-19")
}

fn tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-profiler")
}

/// Which profiler a program is linked with.
#[derive(Clone, Copy, PartialEq)]
enum Clock {
    /// The test clock: time passes only through `__knobs_test_sample`.
    Test,
    /// The machine's clocks.
    Real,
}

/// The profiler library for `clock` (cached by content hash).
fn library(clock: Clock) -> PathBuf {
    let dir = tmp();
    std::fs::create_dir_all(&dir).unwrap();
    match clock {
        Clock::Test => profiler::build_test_clock(clang(), &dir).unwrap(),
        Clock::Real => profiler::build(clang(), &dir).unwrap(),
    }
}

/// Compiles C source with clang and links it with `libs`.
fn compile(src: &Path, libs: &[PathBuf], flags: &[&str], exe: &Path) -> Output {
    Command::new(clang())
        .args(["-O2", "-Wall", "-Werror"])
        .args(flags)
        .arg(src)
        .args(libs)
        .arg("-o")
        .arg(exe)
        .output()
        .unwrap()
}

/// The scenario program, linked with the profiler for `clock`, once per test binary.
fn program(clock: Clock) -> &'static Path {
    static TEST: OnceLock<PathBuf> = OnceLock::new();
    static REAL: OnceLock<PathBuf> = OnceLock::new();
    let (cell, name, flags): (_, _, &[&str]) = match clock {
        Clock::Test => (&TEST, "test", &[runtime::TEST_CLOCK_FLAG]),
        Clock::Real => (&REAL, "real", &[]),
    };
    cell.get_or_init(|| {
        let lib = library(clock);
        let dir = tmp();
        let src = dir.join(format!("prog-{name}-{}.c", std::process::id()));
        std::fs::write(&src, PROGRAM).unwrap();
        let exe = dir.join(format!("prog-{name}-{}", std::process::id()));
        let out = compile(&src, &[lib], flags, &exe);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        exe
    })
}

/// Runs a scenario with the given profiler environment; the profile, if one was written.
fn run(clock: Clock, scenario: &str, env: &[(&str, &str)]) -> (Output, Option<Profile>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profile.tsv");
    let mut cmd = Command::new(program(clock));
    cmd.arg(scenario)
        .env_remove(profiler::ENV_VAR)
        .env_remove(profiler::PERIOD_VAR)
        .env_remove(profiler::CLOCK_VAR)
        .env_remove(profiler::TIMER_VAR);
    for (k, v) in env {
        cmd.env(k, v.replace("$FILE", file.to_str().unwrap()));
    }
    let out = cmd.output().unwrap();
    assert!(out.stderr.is_empty(), "{out:?}");
    let profile = file.exists().then(|| Profile::read(&file).unwrap());
    (out, profile)
}

/// A profiled run of a scenario (with `extra` environment) on the test clock.
fn profiled(scenario: &str, extra: &[(&str, &str)]) -> (Output, Profile) {
    profiled_on(Clock::Test, scenario, extra)
}

fn profiled_on(clock: Clock, scenario: &str, extra: &[(&str, &str)]) -> (Output, Profile) {
    let mut env = vec![(profiler::ENV_VAR, "$FILE")];
    env.extend_from_slice(extra);
    let (out, p) = run(clock, scenario, &env);
    (out, p.expect("a profile was written"))
}

/// Seconds as the file writes them (nine decimals) are `want` to within rounding.
fn secs(got: f64, want: f64, what: &str, p: &Profile) {
    assert!(
        (got - want).abs() < 2e-9,
        "{what}: {got} s, expected {want} s: {p:?}"
    );
}

/// A profile's per-region samples (ids 0 to 15, the sampled ones) and base samples.
fn samples(p: &Profile) -> (BTreeMap<u32, u64>, u64) {
    let regions = (0..16)
        .map(|id| (id, p.region_samples(id)))
        .filter(|&(_, n)| n > 0)
        .collect();
    (regions, p.base_samples)
}

/// The books of a profile: seconds are samples × weight, and the regions and the base add up
/// to the total.
fn balanced(p: &Profile) {
    let t = &p.times;
    let (regions, base) = samples(p);
    assert_eq!(p.samples, base + regions.values().sum::<u64>(), "{p:?}");
    secs(t.total, p.samples as f64 * p.weight, "total", p);
    secs(t.base, base as f64 * p.weight, "base", p);
    assert!(
        (t.base + t.regions_seconds() - t.total).abs() < 1e-6,
        "{p:?}"
    );
}

#[test]
fn self_time_per_region_and_base() {
    let (out, p) = profiled("nested", &[]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert_eq!(p.clock, ProfileClock::Wall);
    assert_eq!((p.period, p.weight, p.missed), (0.001, 0.001, 0));
    // Base 20 + 10, f 30 + 30 around g's 40: each sample to the innermost open region.
    assert_eq!(samples(&p), (BTreeMap::from([(0, 60), (1, 40)]), 30));
    let t = &p.times;
    secs(t.region(0).self_seconds, 0.060, "f's self time", &p);
    secs(t.region(1).self_seconds, 0.040, "g's self time", &p);
    secs(t.base, 0.030, "base", &p);
    assert_eq!((t.region(0).entries, t.region(1).entries), (1, 1));
    assert_eq!(
        (t.threads, t.unmatched_exits, t.open_at_exit, p.unwound),
        (1, 0, 0, 0)
    );
    assert_eq!(p.samples, 130);
    secs(t.total, 0.130, "total", &p);
    secs(t.wall, 0.130, "wall", &p);
    balanced(&p);
}

#[test]
fn the_period_is_honoured() {
    for (us, period) in [("5000", 0.005), ("200", 0.0002), ("0", 0.001), ("x", 0.001)] {
        let (out, p) = profiled("nested", &[(profiler::PERIOD_VAR, us)]);
        assert!(out.status.success(), "{us}: {out:?}");
        assert!(
            (p.period - period).abs() < 1e-12 && (p.weight - period).abs() < 1e-12,
            "{us}: {p:?}"
        );
        assert_eq!(
            (samples(&p), p.samples, p.missed),
            ((BTreeMap::from([(0, 60), (1, 40)]), 30), 130, 0),
            "{us}"
        );
        secs(p.times.region(0).self_seconds, 60.0 * period, us, &p);
        secs(p.times.region(1).self_seconds, 40.0 * period, us, &p);
        secs(p.times.wall, 130.0 * period, us, &p);
        balanced(&p);
    }
}

#[test]
fn a_late_wake_up_spreads_its_periods_over_the_samples() {
    // Wake-ups covering 1, 1, 1, 1 and 3 periods in region 0, then 3 periods in the base:
    // 10 periods, 6 samples, 4 missed; every sample weighs 10/6 of a period.
    let (out, p) = profiled("late", &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        (p.samples, p.missed, samples(&p)),
        (6, 4, (BTreeMap::from([(0, 5)]), 1))
    );
    let w = 0.001 * 10.0 / 6.0;
    assert!((p.weight - w).abs() < 1e-12, "{p:?}");
    secs(p.times.region(0).self_seconds, 5.0 * w, "region 0", &p);
    secs(p.times.base, w, "base", &p);
    // The total stays the wall time: a late sampler loses precision, not time.
    secs(p.times.total, 0.010, "total", &p);
    secs(p.times.wall, 0.010, "wall", &p);
    balanced(&p);
}

#[test]
fn nothing_is_written_without_the_variable() {
    for clock in [Clock::Test, Clock::Real] {
        let (out, p) = run(clock, "nested", &[]);
        assert!(out.status.success());
        assert!(p.is_none());
        let (out, p) = run(clock, "nested", &[(profiler::ENV_VAR, "")]);
        assert!(out.status.success() && p.is_none());
    }
}

#[test]
fn the_normal_build_has_no_test_clock() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("t.c");
    std::fs::write(
        &src,
        "#include <stdint.h>\nvoid __knobs_test_sample(uint32_t);\n\
         int main(void) { __knobs_test_sample(1); return 0; }\n",
    )
    .unwrap();
    let exe = dir.path().join("t");
    let flags = ["-Wl,-u,__knobs_method_enter"];
    let out = compile(&src, &[library(Clock::Real)], &flags, &exe);
    assert!(!out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(profiler::TEST_SAMPLE_FN));
    let out = compile(&src, &[library(Clock::Test)], &flags, &exe);
    assert!(out.status.success(), "{out:?}");
    assert_ne!(library(Clock::Real), library(Clock::Test));
}

#[test]
fn exit_from_deep_inside_still_writes() {
    let (out, p) = profiled("exit-deep", &[]);
    assert_eq!(out.status.code(), Some(3));
    let t = &p.times;
    assert_eq!(t.open_at_exit, 3);
    assert_eq!(
        samples(&p),
        (BTreeMap::from([(0, 20), (1, 20), (2, 20)]), 0)
    );
    for id in 0..3 {
        assert_eq!(t.region(id).entries, 1);
    }
    secs(t.wall, 0.060, "wall", &p);
    balanced(&p);
}

#[test]
fn recursion_charges_the_innermost_activation_and_counts_every_entry() {
    let (out, p) = profiled("recursion", &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(samples(&p), (BTreeMap::from([(5, 40)]), 5));
    assert_eq!(p.times.region(5).entries, 4);
    assert_eq!((p.times.open_at_exit, p.unwound), (0, 0));
    balanced(&p);
}

#[test]
fn wall_clock_counts_sleep_without_interrupting_it() {
    // The test clock: the 60 ms of work and the 60 ms of sleep both count.
    let (out, p) = profiled("cpu-vs-sleep", &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(samples(&p), (BTreeMap::from([(0, 60), (1, 60)]), 0));
    balanced(&p);

    // The real sampler thread: the program exits 7 if its single 60 ms nanosleep returned
    // early (a signal). What load cannot change: one sampled thread, so every wake-up is one
    // sample, and the wake-ups and the periods they missed are the whole periods of the wall
    // time; the total is those periods.
    for us in ["1000", "200"] {
        let (out, p) = profiled_on(Clock::Real, "cpu-vs-sleep", &[(profiler::PERIOD_VAR, us)]);
        assert!(out.status.success(), "{us}: {out:?}");
        let t = &p.times;
        assert_eq!(p.clock, ProfileClock::Wall);
        let period_ns: u64 = us.parse::<u64>().unwrap() * 1000;
        let wall_ns = (t.wall * 1e9).round() as u64;
        assert!(wall_ns >= 120_000_000, "{us}: {p:?}");
        let ticks = wall_ns / period_ns;
        assert_eq!(p.samples + p.missed, ticks, "{us}: {p:?}");
        secs(t.total, ticks as f64 * p.period, us, &p);
        assert_eq!((t.region(0).entries, t.region(1).entries), (1, 1));
        assert_eq!((t.threads, t.open_at_exit, p.unwound), (1, 0, 0));
        balanced(&p);
    }
}

#[test]
fn cpu_clock_counts_cpu_time() {
    // The test clock: the 60 ms busy loop counts, the sleep does not (it uses no CPU).
    let cpu = [(profiler::CLOCK_VAR, "cpu")];
    let (out, p) = profiled("cpu-vs-sleep", &cpu);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(p.clock, ProfileClock::Cpu);
    assert_eq!((p.weight, p.missed), (0.001, 0));
    assert_eq!(samples(&p), (BTreeMap::from([(0, 60)]), 0));
    assert_eq!(p.times.region(1).entries, 1);
    // The runtime's own test sleep: 60 periods passed in region 1, none charged to it.
    assert_eq!(p.times.region(1).self_seconds, 0.0, "{p:?}");
    secs(
        p.times.wall,
        0.120,
        "the test clock's time, the sleep included",
        &p,
    );
    balanced(&p);

    // The real per-thread CPU timer: the sleep is not interrupted (exit 7 otherwise) and no
    // more CPU time is charged than the 60 ms busy loop (and the little else) used; load
    // cannot make a thread use more CPU time for it. How close it gets: the benchmark.
    let (out, p) = profiled_on(Clock::Real, "cpu-vs-sleep", &cpu);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(p.clock, ProfileClock::Cpu);
    let t = &p.times;
    assert!(t.total <= 0.060 * 1.2 + 5.0 * p.period, "{p:?}");
    assert!(t.wall >= 0.120 && t.region(1).entries == 1, "{p:?}");
    balanced(&p);
}

#[test]
fn cpu_clock_counts_at_the_period_asked_for_where_perf_events_are_allowed() {
    // Each thread's task-clock perf event counts its CPU time to the nanosecond; the sampler
    // reads it every period and the exit reads it once more, so the whole run is charged to
    // the period (100 µs here): the 60 ms busy loop and the little else the program does. A
    // task-clock also counts a little of each context switch that the thread's CPU clock does
    // not, and under load the thread is switched out at every wake-up of the sampler and of
    // others: up to 6 % more was seen with two busy loops on two cores. POSIX CPU timers fire at the scheduler's tick (4 ms at HZ=250): at this period they
    // charge lumps and lose whole ticks. No signal reaches the program, so its one 60 ms
    // nanosleep is not cut short (exit 7 otherwise).
    let fine = [(profiler::CLOCK_VAR, "cpu"), (profiler::PERIOD_VAR, "100")];
    let (out, p) = profiled_on(Clock::Real, "cpu-vs-sleep", &fine);
    assert!(out.status.success(), "{out:?}");
    if !profiler::perf_task_clock_allowed() {
        assert_eq!(p.timer, Some(ProfileTimer::PosixCpuTimer), "{p:?}");
        return;
    }
    assert_eq!(p.timer, Some(ProfileTimer::PerfTaskClock), "{p:?}");
    assert_eq!((p.period, p.weight), (100e-6, 100e-6));
    assert!((0.0600..0.0675).contains(&p.times.total), "{p:?}");
    // The sampler's own CPU time, which the process's holds, is given apart.
    assert!(
        p.times.probes > 0.0 && p.times.probes < p.times.wall,
        "{p:?}"
    );
    // Where in the run: a starved sampler charges what a thread used since its last wake-up
    // to the region the thread is in when it wakes, so under load a little moves on.
    assert!(p.times.region(0).self_seconds >= 0.050, "{p:?}");
    balanced(&p);

    // Asked for POSIX timers, the profiler uses them and says so.
    let posix = [(profiler::CLOCK_VAR, "cpu"), (profiler::TIMER_VAR, "posix")];
    let (out, p) = profiled_on(Clock::Real, "cpu-vs-sleep", &posix);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(p.timer, Some(ProfileTimer::PosixCpuTimer), "{p:?}");
}

#[test]
fn the_sigprof_handler_is_installed_only_for_posix_cpu_timers() {
    // Perf counts send no signal: a program profiled through them keeps SIGPROF for itself.
    let cpu = [(profiler::CLOCK_VAR, "cpu")];
    let (out, p) = profiled_on(Clock::Real, "sigprof", &cpu);
    if p.timer == Some(ProfileTimer::PerfTaskClock) {
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    let posix = [(profiler::CLOCK_VAR, "cpu"), (profiler::TIMER_VAR, "posix")];
    let (out, p) = profiled_on(Clock::Real, "sigprof", &posix);
    assert_eq!(p.timer, Some(ProfileTimer::PosixCpuTimer), "{p:?}");
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    // The wall clock's sampler thread needs no signal either.
    let (out, _) = profiled_on(Clock::Real, "sigprof", &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn threads_are_sampled_each_while_alive() {
    // Wall: 40 periods pass while both workers are in region 3 and main waits in region 4
    // (one wake-up samples all three; the idle thread never entered a region and is not
    // sampled), then 20 in main's base after the workers ended.
    let (out, p) = profiled("threads", &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        samples(&p),
        (BTreeMap::from([(3, 80), (4, 40)]), 20),
        "{p:?}"
    );
    let t = &p.times;
    assert_eq!(
        (t.threads, t.region(3).entries, t.region(4).entries),
        (3, 2, 1)
    );
    secs(
        t.region(3).self_seconds,
        0.080,
        "two workers, thread-seconds",
        &p,
    );
    secs(t.wall, 0.060, "wall", &p);
    secs(t.total, 0.140, "total", &p);
    balanced(&p);

    // CPU: each worker's 40 periods of its own CPU time go to its own region 3; main,
    // blocked, uses none in region 4.
    let cpu = [(profiler::CLOCK_VAR, "cpu")];
    let (out, p) = profiled("threads", &cpu);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(samples(&p), (BTreeMap::from([(3, 80)]), 20), "{p:?}");
    assert_eq!((p.times.threads, p.times.region(4).entries), (3, 1));
    balanced(&p);

    // The real per-thread timers: three registered threads, and no more than the CPU time
    // used (two 40 ms busy workers, main blocked, a 20 ms busy base).
    let (out, p) = profiled_on(Clock::Real, "threads", &cpu);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(p.times.threads, 3);
    assert!(p.times.total <= 0.100 * 1.2 + 9.0 * p.period, "{p:?}");
    balanced(&p);
}

#[test]
fn an_exit_below_the_top_pops_what_longjmp_skipped() {
    let (out, p) = profiled("longjmp", &[]);
    assert!(out.status.success());
    // Until the exit of region 0, samples still go to the abandoned innermost activation
    // (2: 15 + 7); the exit pops 2 and 1 with 0; the exit of 1 after that is ignored.
    assert_eq!(
        samples(&p),
        (BTreeMap::from([(0, 5), (1, 10), (2, 22)]), 20)
    );
    assert_eq!((p.unwound, p.times.unmatched_exits), (2, 1));
    assert_eq!(p.times.open_at_exit, 0);
    balanced(&p);
}

#[test]
fn a_forked_child_does_not_write() {
    // The child enters region 9, works and calls exit() after the parent has written its
    // profile; its destructor must not overwrite it.
    for clock in [Clock::Test, Clock::Real] {
        let (out, p) = profiled_on(clock, "fork", &[]);
        assert!(out.status.success());
        assert_eq!(p.times.region(9), Default::default(), "{p:?}");
        assert_eq!(p.times.region(0).entries, 1);
        if clock == Clock::Test {
            assert_eq!(samples(&p), (BTreeMap::from([(0, 20)]), 0));
        }
    }
}

/// One region per defined function: starts before the entry block's first instruction, ends
/// before every return.
fn method_probes(p: &ir::Program) -> (Vec<RegionProbe>, BTreeMap<String, u32>) {
    let mut probes = Vec::new();
    let mut ids = BTreeMap::new();
    for f in &p.functions {
        let Some(entry) = f.entry() else { continue };
        let id = probes.len() as u32;
        let ends = f
            .blocks
            .iter()
            .flat_map(|&b| p.block(b).insts.iter().copied())
            .filter(|&i| matches!(p.inst(i).kind, InstKind::Return { .. }))
            .map(ProgramPoint::Before)
            .collect();
        probes.push(RegionProbe {
            id,
            start: vec![ProgramPoint::Before(p.block(entry).insts[0])],
            end: ends,
        });
        ids.insert(f.name.clone(), id);
    }
    (probes, ids)
}

/// The running example's sleeps on the test clock, linked in place of libc's `nanosleep`: a
/// sleep takes no time and is as many one-period sampler wake-ups as whole default periods
/// (1 ms) it asks for, rounded.
const SLEEP_ON_THE_TEST_CLOCK: &str = r#"
#include <stdint.h>
#include <time.h>
void __knobs_test_sample(uint32_t periods);
int nanosleep(const struct timespec *req, struct timespec *rem) {
    (void)rem;
    long long ns = (long long)req->tv_sec * 1000000000LL + req->tv_nsec;
    for (long long k = 0; k < (ns + 500000) / 1000000; k++)
        __knobs_test_sample(1);
    return 0;
}
"#;

#[test]
fn running_example_at_method_level() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/running-example/main.c")
        .canonicalize()
        .unwrap();
    let linked = compile_c(&[source], &CompileOptions::default(), &d.join("bc")).unwrap();
    let ssa = d.join("prog.ssa.bc");
    let translation = llvm::translate_bitcode(&linked, Some(&ssa)).unwrap();
    let (probes, ids) = method_probes(&translation.program);
    let bc = d.join("methods.bc");
    instrument(
        &ssa,
        &translation.program,
        &translation.positions,
        &probes,
        &bc,
    )
    .unwrap();
    let sleep_src = d.join("sleep.c");
    std::fs::write(&sleep_src, SLEEP_ON_THE_TEST_CLOCK).unwrap();
    let sleep = d.join("sleep.o");
    let out = Command::new(clang())
        .args(["-O2", "-Wall", "-Werror", "-c"])
        .arg(&sleep_src)
        .arg("-o")
        .arg(&sleep)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let exe = d.join("methods");
    let flags: Vec<String> = profiler::LINK_FLAGS.iter().map(|s| s.to_string()).collect();
    link_instrumented(
        clang(),
        &bc,
        &[library(Clock::Test), sleep],
        &flags,
        &exe,
        true,
    )
    .unwrap();

    let (foo_id, main_id, parse) = (ids["foo"], ids["main"], ids["parse_options"]);
    let file = d.join("profile.tsv");
    // A unit is 10 ms, 10 periods: foo sleeps 1 unit (4 with C) under A; main holds the rest.
    for (args, foo_periods, main_periods) in [
        (&[][..], 0, 10),
        (&["-B", "-C"][..], 0, 10 + 2 + 3),
        (&["-A"][..], 10, 10 + 20 + 1),
        (&["-A", "-C"][..], 40, 10 + 20 + 1 + 3),
    ] {
        let ctx = format!("{args:?}");
        let _ = std::fs::remove_file(&file);
        let out = Command::new(&exe)
            .args(args)
            .env("FIG2_UNIT_MS", "10")
            .env(profiler::ENV_VAR, &file)
            .env_remove(profiler::PERIOD_VAR)
            .env_remove(profiler::CLOCK_VAR)
            .output()
            .unwrap();
        assert!(out.status.success(), "{ctx}: {out:?}");
        let p = Profile::read(&file).unwrap();
        let t = &p.times;
        let mut want = BTreeMap::from([(main_id, main_periods)]);
        if foo_periods > 0 {
            want.insert(foo_id, foo_periods);
        }
        // Nothing passes before main: the base is empty.
        assert_eq!(samples(&p), (want, 0), "{ctx}: {p:?}");
        match foo_periods {
            0 => assert_eq!(t.region(foo_id), Default::default(), "{ctx}: {p:?}"),
            _ => assert_eq!(t.region(foo_id).entries, 1, "{ctx}"),
        }
        assert_eq!((t.region(main_id).entries, t.region(parse).entries), (1, 1));
        secs(
            t.wall,
            (main_periods + foo_periods) as f64 * 0.001,
            &ctx,
            &p,
        );
        assert_eq!((t.unmatched_exits, t.open_at_exit, p.unwound), (0, 0, 0));
        balanced(&p);
    }
}
