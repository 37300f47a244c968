//! Comprex end to end on `examples/dispatch`, whose options choose code without a branch on
//! them: a table of handlers indexed by MODE, a codec (a struct of function pointers) chosen
//! by PACKED through a `select`, a sleep length chosen by LONG through another `select`. Real
//! dynamic taint runs explore the space, the profiled build is measured, and the model must
//! be the example's, exactly, in every one of the 24 configurations:
//!     2 + (1 | 3 | 8 for MODE 0 | 1 | 2) + codec + (6 if LONG else 1) units,
//! the codec taking `blocks` units plain and `2 + blocks / 2` packed, `blocks` 8 under
//! MODE = 2 and 4 otherwise (UNUSED changes nothing).
//!
//! As in `pipeline_example.rs`, the profiled build links the profiler's test clock and the
//! example's sleeps are linked with a `nanosleep` that takes one sample per millisecond
//! (`test_clock::SLEEP_ON_THE_TEST_CLOCK`; main.c itself is the example's), so the model does
//! not depend on the machine's speed or load. `crates/knobs/tests/dispatch_cli.rs` runs the
//! same example through the command line with real sleeps and checks what the analysis
//! reports; how well the real clocks do is the benchmark runner's (`cargo run --release -p
//! bench`).

mod test_clock;

use std::path::PathBuf;

use comprex::Granularity;
use measure::SystemSpec;

/// The example's time in units for MODE `mode` and PACKED, LONG (0 or 1).
fn units(mode: u32, packed: u32, long: u32) -> f64 {
    let handler = [1.0, 3.0, 8.0][mode as usize];
    let blocks = if mode == 2 { 8.0 } else { 4.0 };
    let codec = if packed == 1 {
        2.0 + blocks / 2.0
    } else {
        blocks
    };
    2.0 + handler + codec + if long == 1 { 6.0 } else { 1.0 }
}

#[test]
fn comprex_models_options_that_choose_code_through_pointers_and_selects_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/dispatch");
    std::fs::copy(example.join("main.c"), dir.path().join("main.c")).unwrap();
    let sleep = test_clock::object(dir.path(), "sleep", test_clock::SLEEP_ON_THE_TEST_CLOCK);
    let text = std::fs::read_to_string(example.join("knobs.toml")).unwrap();
    let path = dir.path().join("knobs.toml");
    std::fs::write(&path, test_clock::link_into(&text, &sleep)).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
    assert_eq!(spec.space.names(), ["MODE", "PACKED", "LONG", "UNUSED"]);
    let settings = test_clock::test_clock_settings(dir.path().join("work"));
    let analysis = spec.analysis_workload().unwrap();
    assert_eq!(analysis.name, "quick");
    let explored = comprex::pipeline::explore(
        &spec,
        &settings,
        analysis,
        Granularity::Method,
        64,
        &mut |_, _| {},
    )
    .unwrap();
    // The codec's encoder is reached only through the pointer PACKED selects, with the block
    // count MODE chooses.
    let regions = explored.exploration.regions(Granularity::Method);
    let packed = regions
        .iter()
        .find(|r| r.id == "packed_encode")
        .unwrap_or_else(|| panic!("no packed_encode region: {regions:?}"));
    assert_eq!(
        packed.texts(),
        [
            "MODE=0 ∧ PACKED",
            "MODE=1 ∧ PACKED",
            "MODE=2 ∧ PACKED",
            "¬PACKED"
        ]
    );

    let model = test_clock::profile_and_model(dir.path(), &spec, &settings, &explored);
    assert!(model.suspects.is_empty(), "{:?}", model.suspects);

    // Every configuration, in units of the real workload's 4 ms (one sample per ms slept).
    let unit = 0.004;
    let bound = model.file.bind(&spec.space.names()).unwrap();
    for mode in 0..3 {
        for bits in 0..8u32 {
            let (packed, long, unused) = (bits & 1, bits >> 1 & 1, bits >> 2 & 1);
            let row = [mode, packed, long, unused].map(f64::from);
            let expected = units(mode, packed, long) * unit;
            let predicted = bound.predict(&row);
            assert!(
                (predicted - expected).abs() < 1e-9,
                "MODE={mode} PACKED={packed} LONG={long} UNUSED={unused}: predicted \
                 {predicted} s, expected {expected} s; model {}",
                model.file.terms.format(4)
            );
        }
    }
    let labels: Vec<String> = model.file.terms.terms().iter().map(|t| t.label()).collect();
    for option in ["MODE", "PACKED", "LONG"] {
        assert!(
            labels.iter().any(|l| l.contains(option)),
            "{option}: {labels:?}"
        );
    }
    assert!(!labels.iter().any(|l| l.contains("UNUSED")), "{labels:?}");
}
