//! The ConfigCrusher stages after the analysis, as the tests run them: instrument, measure
//! the compressed configurations into a store in `dir`, and build the model; and the test
//! clock the tests measure with, so that no model depends on the machine's speed or load.
#![allow(dead_code)] // each test uses its own part

use std::path::{Path, PathBuf};

use measure::{Store, SystemSpec};
use model::ModelFile;

/// Settings that build in `work_dir` and link the region timers' test clock: a run's time is
/// the work its program counts with `__knobs_test_work(ns)` (plus the probes' fixed costs,
/// which the runtime takes out exactly), and the process's start and exit add nothing.
pub fn test_clock_settings(work_dir: PathBuf) -> instrumented::Settings {
    instrumented::Settings {
        test_clock: true,
        ..instrumented::Settings::new(work_dir)
    }
}

/// How much of its time the base may lose on the test clock, in seconds: the thread's first
/// and last intervals hold only half a probe each but are compensated as whole ones, at most
/// 7 + 11 ns each (`crates/runtime/tests/probe_cost.rs`). Regions lose nothing.
pub const BASE_ENDS: f64 = 2.0 * 18e-9;

/// What a test program includes to count `ms` milliseconds of work on the test clock
/// instead of sleeping: `WORK_MS(ms)`. A macro, not a function: a helper called from every
/// region would carry the union of their options in the context-insensitive analysis.
pub const TEST_CLOCK_WORK: &str = r#"
#include <stdint.h>
void __knobs_test_work(uint64_t ns);
#define WORK_MS(ms) __knobs_test_work((uint64_t)((ms) * 1e6 + 0.5))
"#;

/// The paper's running example (`examples/running-example/main.c`) with its unit of work
/// counted on the test clock instead of slept, written to `dir/main.c` (whose path it
/// returns): the same program, options and regions, `WORK(units)` becoming
/// `__knobs_test_work(units · FIG2_UNIT_MS ms)`.
pub fn running_example_with_test_clock(dir: &Path) -> PathBuf {
    let original =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/running-example/main.c");
    let text = std::fs::read_to_string(&original).unwrap();
    let start = text
        .find("#define WORK(units)")
        .expect("main.c defines WORK");
    let end = start
        + text[start..]
            .find("} while (0)\n")
            .expect("WORK ends with `} while (0)`")
        + "} while (0)\n".len();
    let work = "#include <stdint.h>\n\
                void __knobs_test_work(uint64_t ns);\n\
                #define WORK(units) __knobs_test_work((uint64_t)((units) * unit_ms * 1e6 + 0.5))\n";
    let text = format!("{}{work}{}", &text[..start], &text[end..]);
    assert!(!text.contains("nanosleep("), "main.c sleeps elsewhere too");
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("main.c");
    std::fs::write(&path, text).unwrap();
    path
}

/// The running example's spec (`examples/running-example/knobs.toml`) with `unit_ms` units,
/// in `dir` beside the test-clock main.c ([`running_example_with_test_clock`]).
pub fn running_example_spec(dir: &Path, unit_ms: f64) -> SystemSpec {
    let original =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/running-example/knobs.toml");
    let text = std::fs::read_to_string(&original).unwrap();
    let unit = "FIG2_UNIT_MS = \"5\"";
    assert!(text.contains(unit), "knobs.toml sets {unit}");
    let text = text.replace(unit, &format!("FIG2_UNIT_MS = \"{unit_ms}\""));
    running_example_with_test_clock(dir);
    let path = dir.join("knobs.toml");
    std::fs::write(&path, &text).unwrap();
    SystemSpec::parse(&text, &path).unwrap()
}

pub fn instrument_measure_model(
    dir: &std::path::Path,
    spec: &SystemSpec,
    settings: &instrumented::Settings,
    analysed: &configcrusher::Analysed,
) -> (configcrusher::Instrumented, ModelFile) {
    let instrumented = configcrusher::instrument(spec, analysed, settings).unwrap();
    let store = Store::open(&dir.join("knobs.db")).unwrap();
    let workload = spec.workload(None).unwrap();
    let report = configcrusher::measure_configurations(
        &store,
        settings,
        spec,
        workload,
        &instrumented,
        &analysed.compression.configurations,
        &mut |_| {},
    )
    .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let model = configcrusher::build_model(
        &store,
        settings,
        spec,
        workload,
        analysed,
        &instrumented.variant,
    )
    .unwrap();
    (instrumented, model)
}
