//! Under `metric = "auto"` the region timers' times are read by the clock the black-box runs
//! would be read by, per configuration: a configuration that keeps a CPU busy by the threads'
//! CPU clocks, one that sleeps by the wall clock. A real program calling the runtime, built
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
    let configurations = [
        spec.space.parse_configuration("").unwrap(),
        spec.space.parse_configuration("sleep").unwrap(),
    ];
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
        "test:clock",
        output,
        &configurations,
        &mut |_| {},
    )
    .unwrap();
    assert!(report.failed.is_empty(), "{report:?}");

    let clocks = instrumented::region_clocks(&store, &spec, &workload, "test:clock", None).unwrap();
    let (busy, sleeping) = (
        spec.space.format_configuration(&configurations[0]),
        spec.space.format_configuration(&configurations[1]),
    );
    assert_eq!(clocks.of(&busy), RegionClock::Cpu, "{clocks:?}");
    assert_eq!(clocks.of(&sleeping), RegionClock::Wall, "{clocks:?}");
    assert_eq!(clocks.clock, "mixed", "{clocks:?}");
    assert!(clocks.to_string().contains("mixed clock"), "{clocks}");

    // What each clock read of region 0: the sleep is wall time and (nearly) no CPU time, so
    // reading it by the CPU clock would lose it; the busy loop is 50 ms of CPU time.
    let both = |clocks: &instrumented::RegionClocks| {
        instrumented::median_region_times_by(&store, &spec, &workload, "test:clock", clocks)
            .unwrap()
    };
    let all_cpu = instrumented::region_clocks(
        &store,
        &spec,
        &workload,
        "test:clock",
        Some(RegionClock::Cpu),
    )
    .unwrap();
    assert_eq!(all_cpu.clock, "cpu", "{all_cpu:?}");
    let by_cpu = both(&all_cpu);
    let by_wall = both(&instrumented::RegionClocks::wall(""));
    assert!(by_wall[&sleeping]["r0"] >= 0.05, "{by_wall:?}");
    assert!(by_cpu[&sleeping]["r0"] < 0.01, "{by_cpu:?}");
    assert!(by_cpu[&busy]["r0"] >= 0.045, "{by_cpu:?}");
    // The chooser's medians: each configuration by its own clock.
    let chosen = both(&clocks);
    assert_eq!(chosen[&busy]["r0"], by_cpu[&busy]["r0"]);
    assert_eq!(chosen[&sleeping]["r0"], by_wall[&sleeping]["r0"]);
}
