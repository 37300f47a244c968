//! A callee's time partitioned by what its callers decide, on `examples/comprex-callers`:
//! `helper` sleeps for the length it is given and decides nothing, and is called through a
//! function pointer M chooses (25 or 45 ms), under `if (S)` (10 ms), and W's 1 or 4 times with
//! a length H chooses (10 or 30 ms). The true model, in ms: 25 + 20M + 10S + (1 + 3W)(10 + 20H).
//!
//! The sleeps are linked with a `nanosleep` that takes one sample per millisecond on the
//! profiler's test clock (`test_clock::SLEEP_ON_THE_TEST_CLOCK`), so the profiles are exact
//! and do not depend on the machine. Partitioned by its callers' decisions too
//! (`pipeline::partition_by_callers`), the model is the true one in all 32 configurations;
//! by its own decisions only (the paper's), helper's partition holds H and W alone and M's
//! and S's time is lost.

mod test_clock;

use std::path::PathBuf;

use comprex::Granularity;
use measure::SystemSpec;

/// The true time in ms of configuration `[M, S, W, H, X]`.
fn true_ms(c: [f64; 5]) -> f64 {
    let [m, s, w, h, _] = c;
    25.0 + 20.0 * m + 10.0 * s + (1.0 + 3.0 * w) * (10.0 + 20.0 * h)
}

/// The example explored on its default workload in `dir`, with the test clock linked.
fn explored(
    dir: &std::path::Path,
) -> (
    SystemSpec,
    instrumented::Settings,
    comprex::pipeline::Explored,
) {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/comprex-callers");
    std::fs::copy(example.join("main.c"), dir.join("main.c")).unwrap();
    let sleep = test_clock::object(dir, "sleep", test_clock::SLEEP_ON_THE_TEST_CLOCK);
    let text = std::fs::read_to_string(example.join("knobs.toml")).unwrap();
    let path = dir.join("knobs.toml");
    std::fs::write(&path, test_clock::link_into(&text, &sleep)).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
    assert_eq!(spec.space.names(), ["M", "S", "W", "H", "X"]);
    let settings = test_clock::test_clock_settings(dir.join("work"));
    let workload = spec.analysis_workload().unwrap();
    let explored = comprex::pipeline::explore(
        &spec,
        &settings,
        workload,
        Granularity::Method,
        64,
        &mut |_, _| {},
    )
    .unwrap();
    (spec, settings, explored)
}

/// The model's MAPE over all 32 configurations, and its terms' labels.
fn mape_and_labels(spec: &SystemSpec, model: &comprex::ComprexModel) -> (f64, Vec<String>) {
    let bound = model.file.bind(&spec.space.names()).unwrap();
    let mut sum = 0.0;
    for bits in 0..32u32 {
        let c: [f64; 5] = std::array::from_fn(|k| f64::from(bits >> k & 1));
        let expected = true_ms(c) / 1000.0;
        sum += (bound.predict(&c) - expected).abs() / expected;
    }
    let labels = model.file.terms.terms().iter().map(|t| t.label()).collect();
    (100.0 * sum / 32.0, labels)
}

#[test]
fn a_callees_time_is_partitioned_by_the_decisions_of_its_callers() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, settings, mut explored) = explored(dir.path());
    let workload = spec.analysis_workload().unwrap().clone();
    let (_, inherited) = comprex::pipeline::partition_by_callers(
        &spec,
        &workload,
        &mut explored,
        64,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(
        inherited
            .get("helper")
            .is_some_and(|c| c.iter().any(|m| m == "main")),
        "{inherited:?}"
    );
    let model = test_clock::profile_and_model(dir.path(), &spec, &settings, &explored);
    let (error, labels) = mape_and_labels(&spec, &model);
    eprintln!("MAPE {error:.3} %: {labels:?}");
    assert!(
        error < 3.0,
        "MAPE {error:.3} %; model {}",
        model.file.terms.format(4)
    );
    for option in ["M", "S", "W", "H"] {
        assert!(
            labels.iter().any(|l| l.contains(option)),
            "{option}: {labels:?}"
        );
    }
}

#[test]
fn by_its_own_decisions_only_the_paper_loses_the_callers_options() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, settings, explored) = explored(dir.path());
    let helper = explored
        .exploration
        .region(Granularity::Method, "helper")
        .expect("helper is a region");
    assert_eq!(helper.texts(), ["W ∧ H", "W ∧ ¬H", "¬W ∧ H", "¬W ∧ ¬H"]);
    let model = test_clock::profile_and_model(dir.path(), &spec, &settings, &explored);
    let (error, labels) = mape_and_labels(&spec, &model);
    eprintln!("MAPE {error:.3} % (own decisions only): {labels:?}");
    assert!(error > 3.0, "MAPE {error:.3} %: {labels:?}");
}
