//! ConfigCrusher end to end on the paper's running example (`examples/running-example`):
//! compile main.c with clang-19, analyse, compress, instrument, measure the compressed
//! configurations (real runs), and check the model against the known one:
//! `1 + 3A + 3AB + 3AC + 5DEF + 0.1A + 0.2B + … + 0.9I` time units, exactly: the program's
//! unit of work is counted on the region timers' test clock
//! (`common::running_example_with_test_clock`) instead of slept, so the model does not
//! depend on the machine's speed or load. How well the timers do with real sleeps on real
//! hardware is the benchmark runner's (`cargo run --release -p bench`, ConfigCrusher's
//! Table 7).

mod common;

#[test]
fn the_running_example_yields_the_papers_model() {
    let unit_ms = 5.0;
    let dir = tempfile::tempdir().unwrap();
    let spec = common::running_example_spec(dir.path(), unit_ms);
    let settings = common::test_clock_settings(dir.path().join("work"));
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
    // With the test clock the process's start and exit take no time and the probes' cost is
    // taken out exactly: the model is the program's work, to the nanosecond.
    for bits in 0..1u32 << 10 {
        let on = |k: usize| f64::from(bits >> k & 1);
        let expected = expected_units(&on) * unit;
        let row: Vec<f64> = (0..10).map(on).collect();
        let predicted = bound.predict(&row);
        assert!(
            (predicted - expected).abs() < 1e-9,
            "configuration {bits:010b}: predicted {predicted} s, expected {expected} s; model {}",
            model.terms.format(4)
        );
    }
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
}

/// The native correction scales each measured configuration's region times, the base's
/// included, to the native program's time in it; on the test clock (a count of the program's
/// work) `run` makes no correction and says why.
#[test]
fn the_native_correction_scales_each_configuration_to_its_native_time() {
    let dir = tempfile::tempdir().unwrap();
    let spec = common::running_example_spec(dir.path(), 5.0);
    let settings = common::test_clock_settings(dir.path().join("work"));
    let analysed =
        configcrusher::analyse(&spec, &settings, &configcrusher::Options::default()).unwrap();
    let (instrumented, model) =
        common::instrument_measure_model(dir.path(), &spec, &settings, &analysed);
    let store = measure::Store::open(&dir.path().join("knobs.db")).unwrap();
    let workload = spec.workload(None).unwrap();
    let names = spec.space.names();
    let plain = model.bind(&names).unwrap();
    let row = |c: &space::Configuration| -> Vec<f64> {
        (0..names.len()).map(|k| c.0[k] as f64).collect()
    };
    // Every measured configuration 1.25× slower instrumented than native.
    let pairs = analysed
        .compression
        .configurations
        .iter()
        .map(|c| {
            let t = plain.predict(&row(c));
            instrumented::native::Pair {
                configuration: spec.space.format_configuration(c),
                instrumented: t,
                native: t / 1.25,
            }
        })
        .collect();
    let correction = configcrusher::NativeCorrection {
        pairs,
        ratio: 1.25,
        measurement: Default::default(),
    };
    let (corrected, _) = configcrusher::build_model_with_clocks(
        &store,
        &settings,
        &spec,
        workload,
        &analysed,
        &instrumented.variant,
        None,
        Some(&correction),
    )
    .unwrap();
    let corrected = corrected.bind(&names).unwrap();
    for bits in [0u32, 1, 0b111, 0b11_1111_1111, 0b10_1010_1010] {
        let row: Vec<f64> = (0..10).map(|k| f64::from(bits >> k & 1)).collect();
        let (p, c) = (plain.predict(&row), corrected.predict(&row));
        assert!(
            (c * 1.25 - p).abs() < 1e-9,
            "{bits:010b}: {p} s, corrected {c} s"
        );
    }

    let why = configcrusher::native_correction(
        &store,
        &settings,
        &spec,
        workload,
        &instrumented,
        &analysed.compression.configurations,
        None,
        &mut |_| panic!("no run on the test clock"),
    )
    .unwrap()
    .unwrap_err();
    assert!(why.contains("test clock"), "{why}");
}
