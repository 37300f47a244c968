//! ConfigCrusher end to end on the paper's running example (`examples/running-example`):
//! compile main.c with clang-19, analyse, compress, instrument, measure the compressed
//! configurations (real runs with nanosleep), and check the model against the known one:
//! `1 + 3A + 3AB + 3AC + 5DEF + 0.1A + 0.2B + … + 0.9I` time units.

use std::path::{Path, PathBuf};

mod common;

use measure::SystemSpec;

fn spec(unit_ms: f64) -> SystemSpec {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/running-example/knobs.toml")
        .canonicalize()
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "FIG2_UNIT_MS = \"5\"",
        &format!("FIG2_UNIT_MS = \"{unit_ms}\""),
    );
    SystemSpec::parse(&text, &path).unwrap()
}

#[test]
fn the_running_example_yields_the_papers_model() {
    // Units of 10 ms keep scheduler wake-up delays on a busy machine small beside them.
    let unit_ms = 10.0;
    let spec = spec(unit_ms);
    let dir = tempfile::tempdir().unwrap();
    let settings = instrumented::Settings::new(dir.path().join("work"));
    let analysed =
        configcrusher::analyse(&spec, &settings, &configcrusher::Options::default()).unwrap();
    assert_eq!(analysed.irrelevant, ["J"]);
    let measured = analysed.compression.configurations.len();
    assert!(measured <= 8, "{measured} configurations");
    assert_eq!(analysed.compression.lower_bound, 8);
    assert!(analysed.plan.regions.len() < analysed.regions_unoptimised);

    let (instrumented, model) =
        common::instrument_measure_model(dir.path(), &spec, &settings, &analysed);
    assert!(instrumented.stats.enter_calls > 0);

    // Predict every one of the 1,024 configurations and compare with the known model.
    let names = spec.space.names();
    let bound = model.bind(&names).unwrap();
    let unit = unit_ms / 1000.0;
    let expected_units = |on: &dyn Fn(usize) -> f64| {
        let (a, b, c, d, e, f) = (on(0), on(1), on(2), on(3), on(4), on(5));
        1.0 + 3.0 * a
            + 3.0 * a * b
            + 3.0 * a * c
            + 5.0 * d * e * f
            + (0..9).map(|k| 0.1 * (k + 1) as f64 * on(k)).sum::<f64>()
    };
    // The model predicts the whole run, the process's start and exit included: the
    // configuration without options is one unit and that.
    let start_and_exit = bound.predict(&[0.0; 10]) - expected_units(&|_| 0.0) * unit;
    assert!(
        (-0.001..0.02).contains(&start_and_exit),
        "the base holds the process's start and exit: {start_and_exit} s; model {}",
        model.terms.format(4)
    );
    let mut worst: f64 = 0.0;
    for bits in 0..1u32 << 10 {
        let on = |k: usize| f64::from(bits >> k & 1);
        let expected = expected_units(&on) * unit + start_and_exit;
        let row: Vec<f64> = (0..10).map(on).collect();
        let predicted = bound.predict(&row);
        // nanosleep overshoots each of up to 14 sleeps and a busy machine delays wake-ups:
        // allow 2 ms besides the relative error.
        let error = ((predicted - expected).abs() - 0.002).max(0.0) / expected;
        worst = worst.max(error);
    }
    // 15 % is far below the error of a wrong model: a missing option term is 0.1–0.9 units
    // (1–9 ms), a missing interaction 3–5 units.
    assert!(
        worst < 0.15,
        "worst relative error {worst:.3}; model {}",
        model.terms.format(4)
    );
    let terms: Vec<String> = model.terms.terms().iter().map(|t| t.label()).collect();
    for t in ["A·B", "A·C", "D·E·F"] {
        assert!(terms.iter().any(|l| l == t), "{t} missing from {terms:?}");
    }
    assert!(!terms.iter().any(|l| l.contains('J')), "{terms:?}");
    // Regions carry their source lines and options.
    assert!(model.regions.iter().any(|r| {
        r.options == ["A", "B"]
            && r.location
                .as_ref()
                .is_some_and(|l| l.file.ends_with("main.c"))
    }));
    let _ = Path::new("");
}
