//! The region timers' CPU clock (`CLOCK_THREAD_CPUTIME_ID`, read only for intervals of at
//! least `KNOBS_REGION_CPU_US`), checked exactly with the test clock: the program's
//! `__knobs_test_work(ns)` passes on the CPU, `__knobs_test_sleep(ns)` passes off it, so the
//! result does not depend on the machine's speed or load.

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
void __knobs_test_sleep(uint64_t ns);
#define ENTER __knobs_region_enter
#define EXIT __knobs_region_exit

int main(void) {
    __knobs_test_work(1000);            /* base */
    ENTER(0);
    __knobs_test_work(300000);          /* 0: long, on a CPU */
    EXIT(0);
    ENTER(1);
    __knobs_test_sleep(200000);         /* 1: long, asleep */
    EXIT(1);
    for (int k = 0; k < 1000; k++) {    /* 2: short intervals, on a CPU */
        ENTER(2);
        __knobs_test_work(100);
        EXIT(2);
    }
    ENTER(3);                           /* 3: short (60 us), a third of it asleep */
    __knobs_test_work(40000);
    __knobs_test_sleep(20000);
    EXIT(3);
    ENTER(4);
    __knobs_test_work(500000);          /* 4: long, on a CPU */
    EXIT(4);
    __knobs_test_work(2000);            /* base */
    return 0;
}
"#;

fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| common::test_clock_program("runtime-cpu-clock", PROGRAM))
}

/// A run's region times with `KNOBS_REGION_CPU_US` set to `cpu_us` (unset: `None`).
fn run(cpu_us: Option<&str>) -> RegionTimes {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("times.tsv");
    let mut cmd = Command::new(program());
    cmd.env(runtime::ENV_VAR, &path)
        .env_remove(runtime::CPU_ENV_VAR)
        .env_remove("KNOBS_REGION_COMPENSATE");
    if let Some(us) = cpu_us {
        cmd.env(runtime::CPU_ENV_VAR, us);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
    RegionTimes::read(&path).unwrap()
}

fn ns(seconds: f64) -> f64 {
    (seconds * 1e9 * 1e3).round() / 1e3
}

fn cpu_ns(t: &RegionTimes, id: u32) -> f64 {
    ns(t.region(id).cpu_seconds.expect("a CPU time"))
}

#[test]
fn long_intervals_read_the_cpu_clock_and_short_ones_count_as_on_a_cpu() {
    let t = run(None);
    let cpu = t.cpu.expect("the CPU clock is on by default");
    assert_eq!(cpu.interval_us, 100.0, "{t:?}");
    // Wall time as before: each region its work and its sleeps.
    let wall = |id| ns(t.region(id).self_seconds);
    assert_eq!(
        [wall(0), wall(1), wall(2), wall(3), wall(4)],
        [300_000.0, 200_000.0, 100_000.0, 60_000.0, 500_000.0],
        "{t:?}"
    );
    // CPU time: the sleep of region 1 (a long interval) is seen; region 3's is in an
    // interval too short to read the clock for, so it counts as CPU time there and is taken
    // back from the next interval that reads it (region 4): the total stays right.
    assert_eq!(
        [
            cpu_ns(&t, 0),
            cpu_ns(&t, 1),
            cpu_ns(&t, 2),
            cpu_ns(&t, 3),
            cpu_ns(&t, 4)
        ],
        [300_000.0, 0.0, 100_000.0, 60_000.0, 480_000.0],
        "{t:?}"
    );
    assert_eq!(ns(cpu.total), ns(t.total) - 220_000.0, "{t:?}");
    assert_eq!(ns(cpu.base), ns(t.base), "{t:?}");
    // Read for regions 0, 1 and 4, and at exit: never for the 2001 short intervals.
    assert_eq!(cpu.reads, 4, "{t:?}");
}

#[test]
fn an_interval_of_zero_reads_the_clock_at_every_event() {
    let t = run(Some("0"));
    assert_eq!(
        [
            cpu_ns(&t, 0),
            cpu_ns(&t, 1),
            cpu_ns(&t, 2),
            cpu_ns(&t, 3),
            cpu_ns(&t, 4)
        ],
        [300_000.0, 0.0, 100_000.0, 40_000.0, 500_000.0],
        "{t:?}"
    );
    let cpu = t.cpu.unwrap();
    assert_eq!(cpu.reads, 2 * 1004 + 1, "{t:?}");
    assert_eq!(ns(cpu.total), ns(t.total) - 220_000.0, "{t:?}");
}

#[test]
fn off_writes_wall_times_only() {
    let t = run(Some("off"));
    assert_eq!(t.cpu, None, "{t:?}");
    assert!(t.regions.values().all(|r| r.cpu_seconds.is_none()), "{t:?}");
    assert_eq!(ns(t.region(1).self_seconds), 200_000.0, "{t:?}");
}
