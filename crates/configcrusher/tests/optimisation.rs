//! Region optimisation (Algorithms 3 and 4) keeps the model: the paper's running example
//! (`examples/running-example`) instrumented with the regions of Algorithm 2 as they are and
//! with the propagated ones, measured in the same configurations, gives two models that
//! predict the same time for every configuration (within the runs' noise), with fewer region
//! entries when optimised.

use std::path::PathBuf;

mod common;

use measure::SystemSpec;

#[test]
fn optimised_and_unoptimised_regions_give_the_same_model() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/running-example/knobs.toml")
        .canonicalize()
        .unwrap();
    // 8 ms units: the scheduler's wake-up delays stay small beside them on a busy machine.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("FIG2_UNIT_MS = \"5\"", "FIG2_UNIT_MS = \"8\"");
    let spec = SystemSpec::parse(&text, &path).unwrap();
    let model_with = |optimise: bool| {
        let dir = tempfile::tempdir().unwrap();
        let settings = instrumented::Settings::new(dir.path().join("work"));
        let options = configcrusher::Options {
            optimise,
            ..configcrusher::Options::default()
        };
        let analysed = configcrusher::analyse(&spec, &settings, &options).unwrap();
        let (instrumented, model) =
            common::instrument_measure_model(dir.path(), &spec, &settings, &analysed);
        (analysed, instrumented, model)
    };
    let (plain, plain_build, plain_model) = model_with(false);
    let (optimised, optimised_build, optimised_model) = model_with(true);
    assert_eq!(
        plain.compression.configurations, optimised.compression.configurations,
        "propagation changes no interaction, so the same configurations are measured"
    );
    assert!(
        optimised.plan.regions.len() < plain.plan.regions.len(),
        "{} regions optimised, {} not",
        optimised.plan.regions.len(),
        plain.plan.regions.len()
    );
    assert!(optimised_build.stats.enter_calls < plain_build.stats.enter_calls);

    let names = spec.space.names();
    let (a, b) = (
        plain_model.bind(&names).unwrap(),
        optimised_model.bind(&names).unwrap(),
    );
    let mut worst: f64 = 0.0;
    for bits in 0..1u32 << 10 {
        let row: Vec<f64> = (0..10).map(|k| f64::from(bits >> k & 1)).collect();
        let (x, y) = (a.predict(&row), b.predict(&row));
        // Each model averages three runs per configuration; sleeps overshoot by a fraction
        // of a millisecond each, more under load.
        let gap = ((x - y).abs() - 0.004).max(0.0) / x.max(y);
        worst = worst.max(gap);
        assert!(
            gap < 0.08,
            "configuration {bits:010b}: {x} s unoptimised, {y} s optimised\n{}\n{}",
            plain_model.terms.format(4),
            optimised_model.terms.format(4)
        );
    }
    eprintln!("largest relative difference beyond 4 ms: {worst:.4}");
}
