//! The region timers take their probes' own cost out of every interval (calibrated at start
//! per kind of interval), checked exactly with the test clock: time passes only through the
//! program's `__knobs_test_work` and the probes' fixed costs (enter 3 + 5 ns, exit 7 + 11 ns
//! around the clock read), so the result does not depend on the machine's speed or load. How
//! well compensation does on real hardware is ConfigCrusher's Table 7 in the benchmark runner.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use runtime::RegionTimes;

mod common;

const PROGRAM: &str = r#"
#include <stdint.h>

void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);
void __knobs_test_work(uint64_t ns);
#define ENTER __knobs_region_enter
#define EXIT __knobs_region_exit

int main(void) {
    __knobs_test_work(1000);            /* base */
    ENTER(1);
    __knobs_test_work(20000);           /* 1 */
    for (int k = 0; k < 1000; k++) {    /* empty activations: only the probes' time */
        ENTER(0);
        EXIT(0);
    }
    for (int k = 0; k < 1000; k++) {    /* 100 ns of work each */
        ENTER(2);
        __knobs_test_work(100);
        EXIT(2);
    }
    ENTER(3);                           /* nested: enter->enter and exit->exit in 3 */
    ENTER(4);
    __knobs_test_work(50);              /* 4 */
    EXIT(4);
    EXIT(3);
    ENTER(5);                           /* crossed: an exit beneath the innermost region */
    ENTER(6);
    EXIT(5);                            /* closes 5; 6 stays open */
    __knobs_test_work(700);             /* 6 */
    EXIT(6);
    EXIT(1);
    __knobs_test_work(2000);            /* base */
    return 0;
}
"#;

/// Enter->exit, exit->enter, enter->enter and exit->exit: the probes' cost in each interval.
const ENTER_EXIT: f64 = 5.0 + 7.0;
const EXIT_ENTER: f64 = 11.0 + 3.0;
const LARGEST: f64 = 11.0 + 7.0;

fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| common::test_clock_program("runtime-probe-cost", PROGRAM))
}

/// A run's region times (with `KNOBS_REGION_COMPENSATE=0` when `compensate` is false).
fn run(compensate: bool) -> RegionTimes {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("times.tsv");
    let mut cmd = Command::new(program());
    cmd.env(runtime::ENV_VAR, &path)
        .env_remove("KNOBS_REGION_COMPENSATE");
    if !compensate {
        cmd.env("KNOBS_REGION_COMPENSATE", "0");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
    RegionTimes::read(&path).unwrap()
}

fn ns(seconds: f64) -> f64 {
    (seconds * 1e9 * 1e3).round() / 1e3
}

#[test]
fn every_region_is_charged_its_own_work_and_none_of_the_probes() {
    let t = run(true);
    let self_ns = |id| ns(t.region(id).self_seconds);
    assert_eq!(self_ns(0), 0.0, "empty activations: {t:?}");
    assert_eq!(self_ns(1), 20_000.0, "{t:?}");
    assert_eq!(self_ns(2), 100_000.0, "{t:?}");
    assert_eq!((self_ns(3), self_ns(4)), (0.0, 50.0), "{t:?}");
    assert_eq!((self_ns(5), self_ns(6)), (0.0, 700.0), "{t:?}");
    assert_eq!(t.unmatched_exits, 0);
    assert_eq!((t.region(0).entries, t.region(2).entries), (1000, 1000));
    assert_eq!(t.event_cost_ns, (ENTER_EXIT + EXIT_ENTER) / 2.0, "{t:?}");
    // The thread's first and last intervals hold only half a probe each (no probe before the
    // first, none after the last) but are compensated as whole ones: the base loses at most
    // one interval's cost at each end.
    let base = ns(t.base);
    assert!(
        (3000.0 - 2.0 * LARGEST..=3000.0).contains(&base),
        "base {base} ns: {t:?}"
    );
}

#[test]
fn without_compensation_the_regions_carry_the_probes_and_nothing_is_lost() {
    let raw = run(false);
    assert_eq!((raw.probes, raw.event_cost_ns), (0.0, 0.0), "{raw:?}");
    assert_eq!(
        ns(raw.region(0).self_seconds),
        1000.0 * ENTER_EXIT,
        "{raw:?}"
    );
    assert_eq!(
        ns(raw.region(2).self_seconds),
        1000.0 * (100.0 + ENTER_EXIT),
        "{raw:?}"
    );
    // Compensation moves the probes' time out of the regions, exactly, losing none of it.
    let t = run(true);
    assert!(t.probes > 0.0, "{t:?}");
    assert_eq!(
        ns(t.total + t.probes),
        ns(raw.total),
        "{t:?} against {raw:?}"
    );
}
