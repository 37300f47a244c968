//! The profiler's test clock for Comprex's end-to-end tests: settings that link it
//! (`instrumented::Settings::profiler_runtime`) and native objects, linked through a spec's
//! `[build] link`, that take the program's samples, so that no model depends on the
//! machine's speed or load.
//!
//! The objects are compiled natively and linked, not compiled into the program's bitcode: no
//! taint run records their decisions (a loop in a helper called from every region would
//! carry the control-flow taints of them all and become a region of its own) and no probe
//! enters them. They reach `__knobs_test_sample` through a weak reference: the taint build
//! links no profiler, and there the samples are skipped.
#![allow(dead_code)] // each test uses its own part

use std::path::{Path, PathBuf};
use std::process::Command;

/// The explored configurations profiled on the test clock (into `dir/knobs.db`) and
/// Comprex's model of them; every run must succeed.
pub fn profile_and_model(
    dir: &Path,
    spec: &measure::SystemSpec,
    settings: &instrumented::Settings,
    explored: &comprex::pipeline::Explored,
) -> comprex::ComprexModel {
    let profiled = comprex::pipeline::instrument_methods(spec, settings, explored).unwrap();
    assert!(profiled.test_clock);
    let store = measure::Store::open(&dir.join("knobs.db")).unwrap();
    let real = spec.workload(None).unwrap();
    let report = comprex::pipeline::measure_configurations(
        &store,
        settings,
        spec,
        real,
        &profiled,
        &explored.exploration.configurations,
        &mut |_| {},
    )
    .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    comprex::pipeline::build_model(
        &store,
        spec,
        real,
        explored,
        &profiled,
        &comprex::ModelSettings::default(),
    )
    .unwrap()
}

/// Settings that build in `work_dir` and link the profiler's test clock.
pub fn test_clock_settings(work_dir: PathBuf) -> instrumented::Settings {
    instrumented::Settings {
        test_clock: true,
        ..instrumented::Settings::new(work_dir)
    }
}

/// The declaration every object below starts with.
const WEAK_SAMPLE: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
extern void __knobs_test_sample(uint32_t periods) __attribute__((weak));
"#;

/// libc's `nanosleep` replaced: a sleep takes no time and is as many one-period sampler
/// wake-ups as whole milliseconds (the default period) it asks for, rounded; so the wall
/// clock's samples are exactly the milliseconds slept, each of weight 1 ms.
pub const SLEEP_ON_THE_TEST_CLOCK: &str = r#"
int nanosleep(const struct timespec *req, struct timespec *rem) {
    (void)rem;
    long long ns = (long long)req->tv_sec * 1000000000LL + req->tv_nsec;
    if (__knobs_test_sample)
        for (long long k = 0; k < (ns + 500000) / 1000000; k++)
            __knobs_test_sample(1);
    return 0;
}
"#;

/// `void knobs_spend(uint64_t ns)`: `ns` nanoseconds of work on the test clock. The work is
/// summed; whenever the sum reaches the sampling period (`KNOBS_PROFILE_PERIOD_US`, 10 to
/// 1 000 000 µs, else 1 ms, as the profiler reads it), one period passes and the clock
/// (wall or cpu) samples the calling thread's innermost open region. So every spent period is
/// one sample, charged to the region open when it completes.
pub const SPEND_ON_THE_TEST_CLOCK: &str = r#"
void knobs_spend(uint64_t ns) {
    static uint64_t period_ns, spent;
    if (!__knobs_test_sample)
        return;
    if (!period_ns) {
        const char *us = getenv("KNOBS_PROFILE_PERIOD_US");
        long long p = us && *us ? atoll(us) : 0;
        period_ns = (p >= 10 && p <= 1000000 ? (uint64_t)p : 1000) * 1000;
    }
    for (spent += ns; spent >= period_ns; spent -= period_ns)
        __knobs_test_sample(1);
}
"#;

/// Compiles one of the sources above into `dir/NAME.o` (clang-19, -O2) and returns its
/// absolute path.
pub fn object(dir: &Path, name: &str, source: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, format!("{WEAK_SAMPLE}{source}")).unwrap();
    let o = std::path::absolute(dir.join(format!("{name}.o"))).unwrap();
    let out = Command::new("clang-19")
        .args(["-O2", "-fPIE", "-c", "-o"])
        .arg(&o)
        .arg(&c)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    o
}

/// A spec's text with `object` added to its `[build]` section's link flags (it has none).
pub fn link_into(spec: &str, object: &Path) -> String {
    assert!(
        !spec.contains("\nlink ="),
        "the spec links something already"
    );
    let build = "[build]\n";
    assert!(spec.contains(build), "the spec has a [build] section");
    let path = object.to_str().unwrap();
    assert!(!path.contains('\''), "{path}");
    spec.replacen(build, &format!("{build}link = ['{path}']\n"), 1)
}
