//! Under `metric = "auto"` the region timers' times are read by the clock the black-box runs
//! would be read by: a program that keeps a CPU busy by the threads' CPU clocks, one that
//! sleeps by the wall clock. A real program calling the runtime, built
//! here, measured through the campaign into a real store; nothing asserts on speed.

use std::path::Path;
use std::process::Command;

use instrumented::{RegionClock, Settings};
use measure::campaign::RegionOutput;
use measure::store::Store;

const PROGRAM: &str = r#"
#include <stdint.h>
#include <string.h>
#include <time.h>

void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    int sleeps = argc > 1 && !strcmp(argv[1], "-s");
    __knobs_region_enter(0);
    if (sleeps) {
        struct timespec t = {0, 50 * 1000 * 1000};
        while (nanosleep(&t, &t) != 0) {}
    } else {
        double start = cpu_ms();
        while (cpu_ms() - start < 50) {}   /* 50 ms of CPU time, however long it takes */
    }
    __knobs_region_exit(0);
    return 0;
}
"#;

const SPEC: &str = r#"
name = "clock"
[run]
program = "./clock"
args = ["{options}"]
[measure]
repetitions = 2
[[workload]]
name = "w"
[[option]]
name = "sleep"
on = ["-s"]
"#;

#[test]
fn auto_reads_a_cpu_bound_configuration_by_cpu_time_and_a_sleeping_one_by_wall_time() {
    let dir = tempfile::tempdir().unwrap();
    let clang = Path::new("clang-19");
    let lib = runtime::build(clang, &dir.path().join("runtime")).unwrap();
    let src = dir.path().join("clock.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.path().join("clock");
    let out = Command::new(clang)
        .args(["-O2", "-Wall", "-Werror"])
        .arg(&src)
        .arg(&lib)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let spec_path = dir.path().join("knobs.toml");
    std::fs::write(&spec_path, SPEC).unwrap();
    let spec = measure::SystemSpec::load(&spec_path).unwrap();
    let workload = spec.workload(None).unwrap().clone();
    let store = Store::open(&dir.path().join("knobs.db")).unwrap();
    let settings = Settings::new(dir.path().join("work"));
    let (busy, sleeping) = (
        spec.space.parse_configuration("").unwrap(),
        spec.space.parse_configuration("sleep").unwrap(),
    );
    // Two builds' runs, as if of two programs: one that keeps a CPU busy, one that sleeps.
    for (variant, configuration) in [("test:busy", &busy), ("test:sleeps", &sleeping)] {
        let output = RegionOutput {
            env: runtime::ENV_VAR.into(),
            read: std::sync::Arc::new(|path: &Path| {
                let times = runtime::RegionTimes::read(path).map_err(|e| e.to_string())?;
                Ok(instrumented::region_measurements(&times))
            }),
        };
        let report = instrumented::measure_instrumented(
            &store,
            &settings,
            &spec,
            &workload,
            &exe,
            variant,
            output,
            std::slice::from_ref(configuration),
            &mut |_| {},
        )
        .unwrap();
        assert!(report.failed.is_empty(), "{report:?}");
    }
    let (busy, sleeping) = (
        spec.space.format_configuration(&busy),
        spec.space.format_configuration(&sleeping),
    );
    let clocks = |variant: &str, forced: Option<RegionClock>| {
        instrumented::region_clocks(&store, &spec, &workload, variant, forced).unwrap()
    };
    let medians = |variant: &str, clocks: &instrumented::RegionClocks| {
        instrumented::region_times_per_configuration_by(&store, &spec, &workload, variant, clocks)
            .unwrap()
    };

    let chosen = clocks("test:busy", None);
    assert_eq!(
        (chosen.clock.as_str(), chosen.of(&busy)),
        ("cpu", RegionClock::Cpu),
        "{chosen:?}"
    );
    assert!(chosen.to_string().contains("cpu clock"), "{chosen}");
    let by_cpu = medians("test:busy", &chosen);
    assert!(by_cpu[&busy]["r0"] >= 0.045, "{by_cpu:?}");

    let chosen = clocks("test:sleeps", None);
    assert_eq!(
        (chosen.clock.as_str(), chosen.of(&sleeping)),
        ("wall", RegionClock::Wall),
        "{chosen:?}"
    );
    let by_wall = medians("test:sleeps", &chosen);
    assert!(by_wall[&sleeping]["r0"] >= 0.05, "{by_wall:?}");
    // The sleep is (nearly) no CPU time: read by the CPU clock, it would be lost.
    let forced = clocks("test:sleeps", Some(RegionClock::Cpu));
    assert_eq!(forced.clock, "cpu", "{forced:?}");
    assert!(
        medians("test:sleeps", &forced)[&sleeping]["r0"] < 0.01,
        "{forced:?}"
    );
}
