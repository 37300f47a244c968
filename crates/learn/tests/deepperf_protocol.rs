//! DeepPerf's protocol on a dataset whose exact model is known: the split never puts a test
//! configuration in the training sample, the runner's errors are those of that split, and
//! `auto` recovers a sparse influence model with interactions to almost no error.

use std::collections::HashSet;
use std::fs;

use learn::experiment::{deepperf, deepperf_split, repetition_seed};
use learn::{Learner, Table, train};
use space::formats::load_dataset;

/// The known model over eight binary options A–H (H has no influence): an intercept, five
/// main effects, three pairwise and one three-way interaction, each interaction's options
/// also influential alone or in a smaller interaction (as stepwise selection assumes).
fn truth(o: &[f64]) -> f64 {
    let [a, b, c, d, e, f, g, _h] = o.try_into().unwrap();
    50.0 + 10.0 * a + 4.0 * b - 3.0 * c
        + 2.0 * e
        + 1.0 * f
        + 6.0 * a * b
        + 2.5 * c * d
        + 2.0 * e * f
        + 1.5 * e * f * g
}

/// Every configuration of the eight options with its exact performance, as a DeepPerf CSV
/// written to a file and loaded like the published datasets; `name` keeps the files of
/// tests running at once apart.
fn known_table(name: &str) -> Table {
    let mut text = String::from("A,B,C,D,E,F,G,H,PERF\n");
    for bits in 0..256u32 {
        let o: Vec<f64> = (0..8).map(|j| ((bits >> j) & 1) as f64).collect();
        let row: Vec<String> = o.iter().map(|v| format!("{v}")).collect();
        text.push_str(&format!("{},{}\n", row.join(","), truth(&o)));
    }
    let path = std::env::temp_dir().join(format!("knobs-{name}-{}.csv", std::process::id()));
    fs::write(&path, text).unwrap();
    let data = load_dataset(&path, None).expect("the synthetic dataset loads");
    fs::remove_file(&path).unwrap();
    Table::new(&data)
}

#[test]
fn the_split_keeps_every_test_configuration_out_of_the_sample() {
    for (total, size) in [(256, 1), (256, 40), (192, 9), (1152, 80), (10, 9)] {
        for r in 0..20 {
            let seed = repetition_seed(1, size, r);
            let (sample, rest) = deepperf_split(total, size, seed);
            assert_eq!(sample.len(), size);
            assert_eq!(rest.len(), total - size);
            let in_sample: HashSet<usize> = sample.iter().copied().collect();
            assert_eq!(in_sample.len(), size, "a row drawn twice");
            assert!(
                rest.iter().all(|r| !in_sample.contains(r)),
                "test row in the sample"
            );
            let mut all: Vec<usize> = sample.iter().chain(&rest).copied().collect();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..total).collect::<Vec<_>>(),
                "a row left out of both"
            );
            assert_eq!(
                (sample.clone(), rest.clone()),
                deepperf_split(total, size, seed)
            );
        }
    }
    // Repetitions draw different samples.
    let first = deepperf_split(256, 40, repetition_seed(1, 40, 0)).0;
    let second = deepperf_split(256, 40, repetition_seed(1, 40, 1)).0;
    assert_ne!(first, second);
}

#[test]
fn the_runner_scores_each_repetition_on_its_split() {
    // The runner's error of repetition r is the error on the configurations outside that
    // repetition's sample, computed here independently.
    let table = known_table("runner");
    let learner: Learner = "ols:A,B".parse().unwrap();
    let (size, seed) = (30, 7);
    let result = &deepperf(&table, &[size], &learner, 4, seed).unwrap()[0];
    for r in 0..4 {
        let rep_seed = repetition_seed(seed, size, r);
        let (sample, rest) = deepperf_split(table.rows.len(), size, rep_seed);
        let model = train(&table, &sample, &learner, rep_seed).unwrap();
        let predicted = model.predict(&table, &rest);
        let mre = rest
            .iter()
            .zip(&predicted)
            .map(|(&row, p)| ((p - table.performance[row]) / table.performance[row]).abs())
            .sum::<f64>()
            / rest.len() as f64
            * 100.0;
        assert!(
            (result.errors[r] - mre).abs() < 1e-9,
            "{r}: {result:?} vs {mre}"
        );
        // A model that misses C, D and the interactions is visibly wrong on the rest.
        assert!(mre > 1.0, "{mre}");
    }
}

#[test]
fn auto_recovers_a_known_model_to_almost_no_error() {
    let table = known_table("auto");
    let auto: Learner = "auto".parse().unwrap();
    let result = &deepperf(&table, &[64], &auto, 3, 1).unwrap()[0];
    assert!(
        result.errors.iter().all(|e| *e < 0.01),
        "auto on a known model from 64 of 256 configurations: {result:?}"
    );
}
