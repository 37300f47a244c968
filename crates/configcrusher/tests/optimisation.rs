//! Region optimisation (Algorithms 3 and 4) keeps the model: the paper's running example
//! (`examples/running-example`) instrumented with the regions of Algorithm 2 as they are and
//! with the propagated ones, measured in the same configurations, gives two models that
//! predict the same time for every configuration, with fewer region entries when optimised.
//! The program's unit of work is counted on the region timers' test clock
//! (`common::running_example_with_test_clock`), not slept, so the two models agree to the
//! nanosecond whatever the machine is doing; the optimisation's effect on real hardware
//! (overhead, region entries) is the benchmark runner's (`cargo run --release -p bench`,
//! ConfigCrusher's Table 7).

mod common;

#[test]
fn optimised_and_unoptimised_regions_give_the_same_model() {
    let program = tempfile::tempdir().unwrap();
    let spec = common::running_example_spec(program.path(), 5.0);
    let model_with = |optimise: bool| {
        let dir = tempfile::tempdir().unwrap();
        let settings = common::test_clock_settings(dir.path().join("work"));
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
    for bits in 0..1u32 << 10 {
        let row: Vec<f64> = (0..10).map(|k| f64::from(bits >> k & 1)).collect();
        let (x, y) = (a.predict(&row), b.predict(&row));
        // Only the base may differ, by what it loses at the thread's ends (the first and last
        // events are not the same probes in the two plans).
        assert!(
            (x - y).abs() < common::BASE_ENDS + 1e-9,
            "configuration {bits:010b}: {x} s unoptimised, {y} s optimised\n{}\n{}",
            plain_model.terms.format(4),
            optimised_model.terms.format(4)
        );
    }
}
