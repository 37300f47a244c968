//! Comprex end to end on the paper's running example (`examples/comprex-example`): real
//! dynamic taint runs explore the space, the profiled build is measured, and the local models
//! must be the paper's: main = 3 − A, foo = A + 3AB, bar = 5 + 15A + 10C + 30AC units.

use std::path::PathBuf;

use comprex::Granularity;
use measure::{Store, SystemSpec};

/// The timings are sleeps under a 1 ms sampling profiler: on a machine busy with other work
/// a run can overshoot them all, so the pipeline is run afresh up to three times before the
/// model's error counts as a failure (the partitions and terms must hold every time).
#[test]
fn comprex_on_the_papers_running_example() {
    let mut last = String::new();
    for _ in 0..3 {
        match run_once() {
            Ok(()) => return,
            Err(e) => last = e,
        }
    }
    panic!("three attempts: {last}");
}

fn run_once() -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/comprex-example");
    std::fs::copy(example.join("main.c"), dir.path().join("main.c")).unwrap();
    let path = dir.path().join("knobs.toml");
    std::fs::copy(example.join("knobs.toml"), &path).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
    let settings = instrumented::Settings::new(dir.path().join("work"));
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
    assert_eq!(
        explored.exploration.configurations.len(),
        4,
        "the paper's 4 configurations"
    );
    let partitions: Vec<(String, usize)> = explored
        .exploration
        .regions(Granularity::Method)
        .iter()
        .map(|r| (r.id.clone(), r.subspaces.len()))
        .collect();
    assert_eq!(
        partitions,
        [
            ("bar".to_string(), 4),
            ("foo".to_string(), 3),
            ("main".to_string(), 2)
        ]
    );

    let profiled = comprex::pipeline::instrument_methods(&spec, &settings, &explored).unwrap();
    let store = Store::open(&dir.path().join("knobs.db")).unwrap();
    let real = spec.workload(None).unwrap();
    let report = comprex::pipeline::measure_configurations(
        &store,
        &settings,
        &spec,
        real,
        &profiled,
        &explored.exploration.configurations,
        &mut |_| {},
    )
    .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let model = comprex::pipeline::build_model(
        &store,
        &spec,
        real,
        &explored,
        &profiled,
        &comprex::ModelSettings::default(),
    )
    .unwrap();
    let bound = model.file.bind(&spec.space.names()).unwrap();
    let unit = 0.002;
    for bits in 0..16u32 {
        let on = |k: usize| f64::from(bits >> k & 1);
        let (a, b, c) = (on(0), on(1), on(2));
        let units = (3.0 - a) + (a + 3.0 * a * b) + (5.0 + 15.0 * a + 10.0 * c + 30.0 * a * c);
        let predicted = bound.predict(&(0..4).map(on).collect::<Vec<_>>());
        // A 1 ms sampling profiler on sleeps: allow 20 % and 4 ms.
        if (predicted - units * unit).abs() >= 0.2 * units * unit + 0.004 {
            return Err(format!(
                "configuration {bits:04b}: predicted {predicted}, expected {}; model {}",
                units * unit,
                model.file.terms.format(4)
            ));
        }
    }
    let labels: Vec<String> = model.file.terms.terms().iter().map(|t| t.label()).collect();
    assert!(labels.iter().any(|l| l == "A·C"), "{labels:?}");
    assert!(!labels.iter().any(|l| l.contains('D')), "{labels:?}");
    Ok(())
}
