//! Learners on the measured configuration spaces in `../shared/datasets` (beside the
//! repository; CI provides it). Missing data is a failure, not a skip. Thresholds are the
//! errors measured with these learners (README, "Black-box learners") plus a margin for the
//! few repetitions a debug-mode test can afford.

use std::path::PathBuf;

use learn::experiment::{compare, deepperf, sample_rows};
use learn::{Learner, Table, learn, train, training_rows};
use model::ModelFile;
use space::formats::load_dataset;
use space::{Dataset, Strategy, load_space};

fn shared(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/datasets")
        .join(rel);
    assert!(
        p.exists(),
        "{} is missing: clone the repository next to `shared/`",
        p.display()
    );
    p
}

fn deepperf_csv(system: &str) -> Dataset {
    load_dataset(&shared(&format!("deepperf/{system}.csv")), None).expect("dataset loads")
}

fn splconqueror(system: &str) -> Dataset {
    let space = load_space(&shared(&format!("splconqueror/{system}/FeatureModel.xml"))).unwrap();
    load_dataset(
        &shared(&format!("splconqueror/{system}/measurements.xml")),
        Some(&space),
    )
    .unwrap()
}

#[test]
fn auto_on_x264_at_5n_is_accurate() {
    // DeepPerf's protocol at 5n = 80 configurations of 1,152: published MRE 2.94 % (DECART)
    // and 0.87 % (DeepPerf); auto measured 0.9–1.0 % over 30 repetitions.
    let table = Table::new(&deepperf_csv("x264"));
    let auto: Learner = "auto".parse().unwrap();
    let result = &deepperf(&table, &[80], &auto, 3, 1).unwrap()[0];
    assert!(result.mean_mre < 1.6, "auto on x264 at 80: {result:?}");
    assert!(result.errors.iter().all(|e| *e < 2.5), "{result:?}");
}

#[test]
fn learners_beat_decart_on_llvm_and_bdbj() {
    // Published DECART at 5n: LLVM 2.84 %, BDBJ 1.67 %.
    let llvm = Table::new(&deepperf_csv("LLVM"));
    let stepwise: Learner = "stepwise:log".parse().unwrap();
    let r = &deepperf(&llvm, &[55], &stepwise, 5, 1).unwrap()[0];
    assert!(r.mean_mre < 2.84, "stepwise on LLVM at 55: {r:?}");
    let bdbj = Table::new(&deepperf_csv("BDBJ"));
    let cart: Learner = "cart:log".parse().unwrap();
    let r = &deepperf(&bdbj, &[130], &cart, 5, 1).unwrap()[0];
    assert!(r.mean_mre < 1.67 + 0.3, "cart on BDBJ at 130: {r:?}");
}

#[test]
fn forest_on_dune_round_trips_through_json() {
    // Dune mixes binary and numeric options; trees split on the numbers.
    let data = deepperf_csv("Dune");
    let table = Table::new(&data);
    let rows = sample_rows(&data, &Strategy::Random(120), 5).unwrap();
    let rf: Learner = "rf:trees=40".parse().unwrap();
    let file = learn(&data, &rows, &rf, 5).unwrap();
    assert!(
        file.trees.iter().any(|t| t.options().any(|o| o == "cells")),
        "some split uses the numeric option `cells`"
    );
    let path = std::env::temp_dir().join(format!("knobs-learn-dune-{}.json", std::process::id()));
    file.save(&path).unwrap();
    let back = ModelFile::load(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(back, file);
    let all: Vec<usize> = (0..table.rows.len()).collect();
    let expected = train(&table, &rows, &rf, 5).unwrap().predict(&table, &all);
    let bound = back.bind(&table.names).unwrap();
    for (r, e) in all.iter().zip(&expected) {
        assert!((bound.predict(&table.rows[*r]) - e).abs() <= 1e-9 * e.abs());
    }
    let mut sorted = rows.clone();
    sorted.sort_unstable();
    assert_eq!(training_rows(&back, &table).unwrap(), sorted);
    let error = learn::evaluate(&back, &table, &all).unwrap();
    assert!(error < 20.0, "forest on Dune: MAPE {error}");
}

#[test]
fn linear_models_use_numeric_options_as_values_and_indicators() {
    let data = deepperf_csv("Dune");
    let rows = sample_rows(&data, &Strategy::Random(200), 2).unwrap();
    let file = learn(&data, &rows, &"lasso:degree=1".parse().unwrap(), 2).unwrap();
    let factors: Vec<String> = file
        .terms
        .terms()
        .iter()
        .flat_map(|t| t.options.iter().map(|f| f.to_string()))
        .collect();
    assert!(
        factors
            .iter()
            .any(|f| f.starts_with("cells") || f.starts_with("pre") || f.starts_with("post")),
        "{}",
        file.terms
    );
}

#[test]
fn strategies_on_splconqueror_x264() {
    // Every valid configuration of x264's feature model is measured, so samplers work.
    let data = splconqueror("x264");
    let strategies: Vec<Strategy> = ["featurewise", "pairwise", "random:50"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let learners = Learner::parse_list("stepwise,rf").unwrap();
    let rows = compare(&data, &strategies, &learners, 1, 1).unwrap();
    assert_eq!(rows.len(), 6);
    for r in &rows {
        let (mape, _) = r.mape.expect("configurations remain to test on");
        assert!(mape < 40.0, "{r:?}");
        assert!(r.measurement > 0.0);
    }
    // With 50 random configurations, both learners model x264 within 10 %.
    assert!(
        rows[4].mape.unwrap().0 < 10.0 && rows[5].mape.unwrap().0 < 10.0,
        "{rows:?}"
    );
    assert_eq!(rows[4].configurations, 50.0);
    // Measurement cost is the summed performance of the sample.
    let sample = sample_rows(&data, &Strategy::Random(50), 1).unwrap();
    let sum: f64 = sample.iter().map(|&r| data.performance[r]).sum();
    assert!((rows[4].measurement - sum).abs() < 1e-6 * sum);
    // Repetitions draw other samples: the margin is positive and the first repetition is
    // the single run above.
    let repeated = compare(&data, &strategies[2..], &learners[..1], 1, 5).unwrap();
    let (mean, margin) = repeated[0].mape.unwrap();
    assert_eq!(repeated[0].repetitions, 5);
    assert!(margin > 0.0 && mean < 10.0, "{repeated:?}");
}

#[test]
fn pairwise_on_an_unconstrained_csv_space_names_the_missing_configuration() {
    let data = deepperf_csv("x264");
    let e = sample_rows(&data, &Strategy::TWise(2), 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("which the dataset has not measured"), "{e}");
    let e = sample_rows(&data, &Strategy::Random(2000), 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only 1152"), "{e}");
}
