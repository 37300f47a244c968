//! Comprex end to end on the paper's running example (`examples/comprex-example`): real
//! dynamic taint runs explore the space, the profiled build is measured, and the local models
//! must be the paper's: main = 3 − A, foo = A + 3AB, bar = 5 + 15A + 10C + 30AC units.
//!
//! The profiled build links the profiler's test clock, and the example's sleeps are linked
//! with a `nanosleep` that takes one sample per millisecond asked for instead of sleeping
//! (`test_clock::SLEEP_ON_THE_TEST_CLOCK`; main.c itself is the example's): the profiles are
//! the example's counted work, so the models are the paper's exactly, however fast or busy
//! the machine is. How well Comprex works with the real clocks on real hardware is the
//! benchmark runner's business (`cargo run --release -p bench`, its subjects with the
//! `comprex` approach).

mod test_clock;

use std::collections::BTreeMap;
use std::path::PathBuf;

use comprex::Granularity;
use measure::SystemSpec;

/// The paper's local models in units (the example's `UNIT_MS` for the real workload is 2).
fn paper_models() -> BTreeMap<&'static str, Vec<(&'static str, f64)>> {
    BTreeMap::from([
        ("main", vec![("", 3.0), ("A", -1.0)]),
        ("foo", vec![("A", 1.0), ("A·B", 3.0)]),
        (
            "bar",
            vec![("", 5.0), ("A", 15.0), ("C", 10.0), ("A·C", 30.0)],
        ),
    ])
}

fn sorted(mut terms: Vec<(String, f64)>) -> Vec<(String, f64)> {
    terms.sort_by(|a, b| a.0.cmp(&b.0));
    terms
}

#[test]
fn comprex_on_the_papers_running_example() {
    let dir = tempfile::tempdir().unwrap();
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/comprex-example");
    std::fs::copy(example.join("main.c"), dir.path().join("main.c")).unwrap();
    let sleep = test_clock::object(dir.path(), "sleep", test_clock::SLEEP_ON_THE_TEST_CLOCK);
    let text = std::fs::read_to_string(example.join("knobs.toml")).unwrap();
    let path = dir.path().join("knobs.toml");
    std::fs::write(&path, test_clock::link_into(&text, &sleep)).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
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

    let model = test_clock::profile_and_model(dir.path(), &spec, &settings, &explored);
    assert!(model.suspects.is_empty(), "{:?}", model.suspects);
    // The runner's real wall time is not the test clock's: nothing of it is in the base.
    assert!(
        !model
            .file
            .provenance
            .contains_key("base_includes_time_outside_the_profile"),
        "{:?}",
        model.file.provenance
    );

    // Every local model is the paper's, in units of 2 ms (one sample per ms of the
    // example's sleeps); the base took no sample.
    let unit = 0.002;
    let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
    let expected = paper_models();
    for region in &model.file.regions {
        let terms = sorted(
            region
                .terms
                .terms()
                .iter()
                .map(|t| (t.label(), t.value / unit))
                .collect(),
        );
        let want = match expected.get(region.id.as_str()) {
            Some(want) => want.clone(),
            None => {
                assert_eq!(
                    region.id,
                    instrumented::BASE,
                    "{}",
                    model.file.terms.format(4)
                );
                vec![]
            }
        };
        let want = sorted(want.iter().map(|(l, v)| (l.to_string(), *v)).collect());
        assert_eq!(
            terms.iter().map(|t| &t.0).collect::<Vec<_>>(),
            want.iter().map(|t| &t.0).collect::<Vec<_>>(),
            "region {}: {terms:?}",
            region.id
        );
        for ((label, got), (_, want)) in terms.iter().zip(&want) {
            assert!(
                close(*got, *want),
                "region {}, term {label:?}: {got} units, the paper's {want}",
                region.id
            );
        }
    }
    let ids: Vec<&str> = model.file.regions.iter().map(|r| r.id.as_str()).collect();
    for id in expected.keys() {
        assert!(ids.contains(id), "no local model of {id}: {ids:?}");
    }

    // The global model is their sum, in every configuration (D influences nothing).
    let bound = model.file.bind(&spec.space.names()).unwrap();
    for bits in 0..16u32 {
        let on = |k: usize| f64::from(bits >> k & 1);
        let (a, b, c) = (on(0), on(1), on(2));
        let units = (3.0 - a) + (a + 3.0 * a * b) + (5.0 + 15.0 * a + 10.0 * c + 30.0 * a * c);
        let predicted = bound.predict(&(0..4).map(on).collect::<Vec<_>>());
        assert!(
            close(predicted, units * unit),
            "configuration {bits:04b}: predicted {predicted}, expected {}; model {}",
            units * unit,
            model.file.terms.format(4)
        );
    }
    let labels: Vec<String> = model.file.terms.terms().iter().map(|t| t.label()).collect();
    assert!(labels.iter().any(|l| l == "A·C"), "{labels:?}");
    assert!(!labels.iter().any(|l| l.contains('D')), "{labels:?}");
}
