//! The profiler's clock under `auto` (`comprex::pipeline::choose_profile_clock`): the paper's
//! running example (`examples/comprex-example`, whose work is nanosleep) is read by the wall
//! clock, and the same program with every nanosleep a busy loop on the thread's CPU clock by
//! the CPU clock — decided from a first round of real native runs when the store has none of
//! the program, else from the stored ones. Nothing here depends on how fast the machine is:
//! a sleeping program uses almost no CPU, and a busy one is on a CPU or waiting for one
//! (which `auto` counts as busy) all its wall time.

use std::path::{Path, PathBuf};
use std::process::Command;

use comprex::pipeline::{ProfileClock, choose_profile_clock};
use instrumented::RegionClock;
use measure::{Store, SystemSpec};
use space::Configuration;

/// The example's nanosleep as a busy loop until the thread's CPU clock has advanced as long
/// (as bench/region-clock/compare.sh --spin does).
const SPIN: &str = "#define nanosleep(ts, rem) ({ struct timespec s0_, s1_; double w_ = \
    (double)(ts)->tv_sec * 1e9 + (double)(ts)->tv_nsec; clock_gettime(CLOCK_THREAD_CPUTIME_ID, \
    &s0_); do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &s1_); while ((double)(s1_.tv_sec - \
    s0_.tv_sec) * 1e9 + (double)(s1_.tv_nsec - s0_.tv_nsec) < w_); 0; })";

/// The example's spec in `dir`, its native program (`./fig2`) built from main.c, with every
/// nanosleep a busy loop when `spin`.
fn example(dir: &Path, spin: bool) -> SystemSpec {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/comprex-example");
    let mut main = std::fs::read_to_string(example.join("main.c")).unwrap();
    if spin {
        main = main.replacen(
            "#include <time.h>\n",
            &format!("#include <time.h>\n{SPIN}\n"),
            1,
        );
        assert!(main.contains("define nanosleep"));
    }
    std::fs::write(dir.join("main.c"), main).unwrap();
    let out = Command::new("clang-19")
        .args(["-O2", "-o"])
        .arg(dir.join("fig2"))
        .arg(dir.join("main.c"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::copy(example.join("knobs.toml"), dir.join("knobs.toml")).unwrap();
    SystemSpec::load(&dir.join("knobs.toml")).unwrap()
}

/// A (on) and C (on) in every combination: the example's longest runs (bar's 5 + 15A + 10C +
/// 30AC units of 2 ms).
fn configurations() -> Vec<Configuration> {
    [
        [0, 0, 0, 0],
        [1, 0, 0, 0],
        [0, 0, 1, 0],
        [1, 0, 1, 0],
        [1, 1, 1, 1],
    ]
    .into_iter()
    .map(|c| Configuration(c.to_vec()))
    .collect()
}

fn choose(spec: &SystemSpec, store: &Store, forced: Option<RegionClock>) -> ProfileClock {
    let workload = spec.workload(None).unwrap();
    choose_profile_clock(store, spec, workload, &configurations(), 1, forced).unwrap()
}

#[test]
fn auto_samples_the_wall_clock_for_a_sleeping_program_from_a_first_round() {
    let dir = tempfile::tempdir().unwrap();
    let spec = example(dir.path(), false);
    let store = Store::open(&dir.path().join("knobs.db")).unwrap();
    let clock = choose(&spec, &store, None);
    assert_eq!(clock.clock, RegionClock::Wall, "{clock}");
    assert!(clock.why.contains("first round"), "{clock}");
    assert!(clock.why.contains("0 of 5"), "{clock}");
    // Asked for, without a run.
    let asked = choose(&spec, &store, Some(RegionClock::Cpu));
    assert_eq!(
        (asked.clock, asked.why.as_str()),
        (RegionClock::Cpu, "cpu (as asked)")
    );
}

#[test]
fn auto_samples_the_cpu_clock_for_a_busy_program_and_reads_stored_runs_first() {
    let dir = tempfile::tempdir().unwrap();
    let spec = example(dir.path(), true);
    let store = Store::open(&dir.path().join("knobs.db")).unwrap();
    let clock = choose(&spec, &store, None);
    assert_eq!(clock.clock, RegionClock::Cpu, "{clock}");
    assert!(clock.why.contains("first round"), "{clock}");

    // Once the program as the spec runs it is in the store, its runs decide (the same rule).
    let workload = spec.workload(None).unwrap();
    let campaign = measure::campaign::Campaign::new(&spec, workload);
    let report = campaign
        .run(&store, &configurations()[..3], &mut |_| {})
        .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let clock = choose(&spec, &store, None);
    assert_eq!(clock.clock, RegionClock::Cpu, "{clock}");
    assert!(clock.why.contains("of 3 configurations"), "{clock}");
    assert!(clock.why.contains("stored runs"), "{clock}");
}

#[test]
fn the_spec_says_which_clock_without_auto() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = example(dir.path(), false);
    let store = Store::open(&dir.path().join("knobs.db")).unwrap();
    spec.measure.metric = measure::Metric::Cpu;
    assert_eq!(choose(&spec, &store, None).clock, RegionClock::Cpu);
    spec.measure.metric = measure::Metric::Wall;
    assert_eq!(choose(&spec, &store, None).clock, RegionClock::Wall);
    // The spec's environment names the clock: that one.
    spec.workloads[0]
        .env
        .insert(runtime::profiler::CLOCK_VAR.into(), "cpu".into());
    let clock = choose(&spec, &store, None);
    assert_eq!(clock.clock, RegionClock::Cpu, "{clock}");
    assert!(clock.why.contains("environment"), "{clock}");
}
