//! Each learner against a hand computation or a known model: OLS on a tiny system, LASSO
//! equal to OLS when λ is tiny and recovering a sparse model on uncentred 0/1 data, stepwise
//! recovering interactions from brute-force data, CART and forests fitting a step function,
//! determinism for a seed, and model files that predict exactly what the learner predicted.

use learn::{Learner, Table, learn, train};
use model::ModelFile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use space::Dataset;
use space::formats::dataset::parse_dataset_csv;

fn dataset(header: &str, rows: &[Vec<f64>]) -> Dataset {
    let mut text = format!("{header}\n");
    for r in rows {
        let cells: Vec<String> = r.iter().map(|v| v.to_string()).collect();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    parse_dataset_csv(&text, "test.csv").expect("test dataset parses")
}

/// Every configuration of `n` binary options named A, B, C, … with `f` as performance.
fn brute_force(n: usize, f: impl Fn(&[f64]) -> f64) -> Dataset {
    let names: Vec<String> = (0..n)
        .map(|i| ((b'A' + i as u8) as char).to_string())
        .collect();
    let rows: Vec<Vec<f64>> = (0..1u32 << n)
        .map(|m| {
            let mut r: Vec<f64> = (0..n).map(|j| ((m >> j) & 1) as f64).collect();
            let y = f(&r);
            r.push(y);
            r
        })
        .collect();
    dataset(&format!("{},PERF", names.join(",")), &rows)
}

fn all_rows(d: &Dataset) -> Vec<usize> {
    (0..d.configurations.len()).collect()
}

fn learner(text: &str) -> Learner {
    text.parse().expect("learner parses")
}

/// The terms of a linear model file as (label, value), sorted by label.
fn terms(file: &ModelFile) -> Vec<(String, f64)> {
    let mut t: Vec<(String, f64)> = file
        .terms
        .terms()
        .iter()
        .map(|t| (t.label(), t.value))
        .collect();
    t.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

fn coefficient(file: &ModelFile, label: &str) -> f64 {
    terms(file)
        .into_iter()
        .find(|(l, _)| l == label)
        .map_or(0.0, |(_, v)| v)
}

/// Predictions of a model file on the dataset's rows, through the public model API.
fn file_predictions(file: &ModelFile, d: &Dataset) -> Vec<f64> {
    let names = d.space.names();
    let bound = file
        .bind(&names)
        .expect("model binds to the dataset's options");
    d.configurations
        .iter()
        .map(|c| {
            let row: Vec<f64> = d
                .space
                .options()
                .iter()
                .zip(&c.0)
                .map(|(o, v)| o.numeric_value(*v))
                .collect();
            bound.predict(&row)
        })
        .collect()
}

#[test]
fn ols_matches_the_hand_computation() {
    // A 2×2 factorial: y = 1, 4, 2, 8 for (A,B) = 00, 10, 01, 11.
    let d = dataset(
        "A,B,PERF",
        &[
            vec![0.0, 0.0, 1.0],
            vec![1.0, 0.0, 4.0],
            vec![0.0, 1.0, 2.0],
            vec![1.0, 1.0, 8.0],
        ],
    );
    // Main effects only: βA = mean(y|A=1) − mean(y|A=0) = 6 − 1.5 = 4.5,
    // βB = 5 − 2.5 = 2.5, β0 = ȳ − βA/2 − βB/2 = 3.75 − 2.25 − 1.25 = 0.25.
    let file = learn(&d, &all_rows(&d), &learner("ols:A,B"), 1).unwrap();
    let expected = [("", 0.25), ("A", 4.5), ("B", 2.5)];
    for ((label, value), (l, v)) in terms(&file).iter().zip(expected) {
        assert_eq!(label, l);
        assert!((value - v).abs() < 1e-9, "{label}: {value} vs {v}");
    }
    // With the interaction the fit is exact: 1 + 3A + 1B + 3AB.
    let file = learn(&d, &all_rows(&d), &learner("ols:A,B,A*B"), 1).unwrap();
    for (label, v) in [("", 1.0), ("A", 3.0), ("B", 1.0), ("A·B", 3.0)] {
        assert!((coefficient(&file, label) - v).abs() < 1e-9, "{label}");
    }
    let e = learn(&d, &all_rows(&d), &learner("ols:A,Z"), 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "learner `ols`: the dataset has no option `Z`"
    );
}

#[test]
fn lasso_with_tiny_lambda_equals_ols_on_noise_free_data() {
    // Uncentred 0/1 columns, a non-orthogonal design (20 of 64 configurations), exact linear
    // performance: LASSO with λ → 0 must give the least-squares coefficients.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let truth = [7.0, -2.0, 0.5, 3.0, 0.0, 1.5];
    let rows: Vec<Vec<f64>> = (0..20)
        .map(|_| {
            let mut r: Vec<f64> = (0..6).map(|_| rng.gen_range(0..2) as f64).collect();
            let y = 10.0 + r.iter().zip(truth).map(|(x, b)| x * b).sum::<f64>();
            r.push(y);
            r
        })
        .collect();
    let d = dataset("A,B,C,D,E,F,PERF", &rows);
    let rows = all_rows(&d);
    let ols = learn(&d, &rows, &learner("ols:A,B,C,D,E,F"), 1).unwrap();
    let lasso = learn(&d, &rows, &learner("lasso:degree=1,lambda=1e-9"), 1).unwrap();
    for label in ["", "A", "B", "C", "D", "E", "F"] {
        let (a, b) = (coefficient(&ols, label), coefficient(&lasso, label));
        assert!((a - b).abs() < 1e-4, "{label}: ols {a}, lasso {b}");
    }
    assert!((coefficient(&ols, "A") - 7.0).abs() < 1e-9);
    assert!((coefficient(&ols, "") - 10.0).abs() < 1e-9);
}

#[test]
fn lasso_recovers_a_sparse_model_on_uncentred_binary_data() {
    // 10 options, 60 random configurations, y = 20 + 5A − 3C + 2F + small noise. The
    // cross-validated λ must keep exactly A, C, F and estimate them closely (an intercept
    // that fought uncentred columns would bias every coefficient).
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let rows: Vec<Vec<f64>> = (0..60)
        .map(|_| {
            let mut r: Vec<f64> = (0..10).map(|_| rng.gen_range(0..2) as f64).collect();
            let noise = rng.gen_range(-0.05..0.05);
            let y = 20.0 + 5.0 * r[0] - 3.0 * r[2] + 2.0 * r[5] + noise;
            r.push(y);
            r
        })
        .collect();
    let d = dataset("A,B,C,D,E,F,G,H,I,J,PERF", &rows);
    let file = learn(&d, &all_rows(&d), &learner("lasso:degree=1"), 1).unwrap();
    let big: Vec<String> = terms(&file)
        .into_iter()
        .filter(|(l, v)| !l.is_empty() && v.abs() > 0.1)
        .map(|(l, _)| l)
        .collect();
    assert_eq!(big, vec!["A", "C", "F"], "{}", file.terms);
    for (label, v) in [("", 20.0), ("A", 5.0), ("C", -3.0), ("F", 2.0)] {
        let c = coefficient(&file, label);
        assert!((c - v).abs() < 0.1, "{label}: {c} vs {v} in {}", file.terms);
    }
    // Its provenance names the λ it chose, which refits the same model.
    let resolved = file.provenance["resolved"].as_str().unwrap();
    assert!(resolved.starts_with("lasso:degree=1,lambda="), "{resolved}");
    let again = learn(&d, &all_rows(&d), &learner(resolved), 1).unwrap();
    assert_eq!(again.terms, file.terms);
}

#[test]
fn stepwise_recovers_interactions_from_brute_force_data() {
    // The running example of the performance-influence literature: 1 + 3A + 3AB + 3AC,
    // measured on every configuration of four options (D has no influence).
    let d = brute_force(4, |x| {
        1.0 + 3.0 * x[0] + 3.0 * x[0] * x[1] + 3.0 * x[0] * x[2]
    });
    let file = learn(&d, &all_rows(&d), &learner("stepwise"), 1).unwrap();
    let got: Vec<(String, f64)> = terms(&file)
        .into_iter()
        .map(|(l, v)| (l, (v * 1e6).round() / 1e6))
        .collect();
    assert_eq!(
        got,
        vec![
            ("".to_string(), 1.0),
            ("A".to_string(), 3.0),
            ("A·B".to_string(), 3.0),
            ("A·C".to_string(), 3.0)
        ],
        "{}",
        file.terms
    );
    // A three-way interaction needs degree 3, and is found with it.
    let d = brute_force(5, |x| 2.0 + x[1] + 4.0 * x[0] * x[2] * x[4]);
    let file = learn(&d, &all_rows(&d), &learner("stepwise"), 1).unwrap();
    assert!(
        (coefficient(&file, "A·C·E") - 4.0).abs() < 1e-9,
        "{}",
        file.terms
    );
    assert!(
        (coefficient(&file, "B") - 1.0).abs() < 1e-9,
        "{}",
        file.terms
    );
    assert_eq!(file.terms.terms().len(), 3, "{}", file.terms);
}

#[test]
fn stepwise_works_on_the_log_scale() {
    // Multiplicative effects are additive in ln: 100 · 2^A · 3^(B·C).
    let d = brute_force(4, |x| 100.0 * 2f64.powf(x[0]) * 3f64.powf(x[1] * x[2]));
    let file = learn(&d, &all_rows(&d), &learner("stepwise:log"), 1).unwrap();
    assert_eq!(file.transform, model::Transform::Log);
    assert!(
        (coefficient(&file, "A") - 2f64.ln()).abs() < 1e-9,
        "{}",
        file.terms
    );
    assert!(
        (coefficient(&file, "B·C") - 3f64.ln()).abs() < 1e-9,
        "{}",
        file.terms
    );
    for (p, a) in file_predictions(&file, &d).iter().zip(&d.performance) {
        assert!((p - a).abs() < 1e-6 * a, "{p} vs {a}");
    }
}

#[test]
fn relative_stepwise_is_least_squares_weighted_for_relative_error() {
    // Multiplicative effects, fitted additively (degree 1): the plain fit spreads its error
    // evenly in absolute terms, so it errs most, relatively, on the fastest configurations.
    let d = brute_force(4, |x| {
        100.0 * 3f64.powf(x[0]) * 2f64.powf(x[1]) * 1.5f64.powf(x[2]) * 1.25f64.powf(x[3])
    });
    let table = Table::new(&d);
    let rows = all_rows(&d);
    let training_mre = |text: &str| {
        let trained = train(&table, &rows, &learner(text), 1).unwrap();
        let predicted = trained.predict(&table, &rows);
        let mre = predicted
            .iter()
            .zip(&d.performance)
            .map(|(p, a)| ((p - a) / a).abs())
            .sum::<f64>()
            / rows.len() as f64;
        (trained, predicted, mre)
    };
    let (_, _, plain) = training_mre("stepwise:degree=1,improvement=0");
    let (trained, predicted, relative) = training_mre("stepwise:degree=1,improvement=0,relative");
    assert!(relative < plain, "relative {relative} vs plain {plain}");
    // The same fit by hand on the options it selected: every row and its target divided by
    // the performance.
    let file = trained.to_model_file(&table);
    let selected: Vec<usize> = terms(&file)
        .iter()
        .filter(|(label, _)| !label.is_empty())
        .map(|(label, _)| table.option_index(label).expect("a main effect"))
        .collect();
    assert!(selected.len() >= 3, "{}", file.terms);
    let weight: Vec<f64> = d.performance.iter().map(|y| 1.0 / y).collect();
    let value = |r: usize, j: usize| {
        if j == 0 {
            1.0
        } else {
            table.rows[r][selected[j - 1]]
        }
    };
    let columns: Vec<Vec<f64>> = (0..=selected.len())
        .map(|j| rows.iter().map(|&r| weight[r] * value(r, j)).collect())
        .collect();
    let beta = learn::least_squares(&columns, &vec![1.0; rows.len()]);
    for &r in &rows {
        let by_hand: f64 = (0..=selected.len()).map(|j| beta[j] * value(r, j)).sum();
        assert!((predicted[r] - by_hand).abs() < 1e-9 * by_hand, "{r}");
    }
}

/// A numeric option `level` (0..=9) and a binary one: y = 1 below level 5, 6 from there,
/// plus 2 when A is selected.
fn step_data() -> Dataset {
    let rows: Vec<Vec<f64>> = (0..10)
        .flat_map(|level| {
            (0..2).map(move |a| {
                let y = if level < 5 { 1.0 } else { 6.0 } + 2.0 * a as f64;
                vec![level as f64, a as f64, y]
            })
        })
        .collect();
    dataset("level,A,PERF", &rows)
}

#[test]
fn cart_fits_a_step_function() {
    let d = step_data();
    let file = learn(&d, &all_rows(&d), &learner("cart:depth=none,leaf=1"), 1).unwrap();
    assert_eq!(file.trees.len(), 1);
    assert!(file.terms.terms().is_empty());
    let tree = &file.trees[0];
    assert_eq!((tree.depth(), tree.leaves()), (2, 4));
    // The root splits where the step is, halfway between 4 and 5.
    match &tree.nodes[0] {
        model::Node::Split {
            option, threshold, ..
        } => {
            assert_eq!((option.as_str(), *threshold), ("level", 4.5));
        }
        other => panic!("root is not a split: {other:?}"),
    }
    assert_eq!(file_predictions(&file, &d), d.performance);
    // Tuned: the grid search finds a tree that is exact too.
    let tuned = learn(&d, &all_rows(&d), &learner("cart"), 1).unwrap();
    assert_eq!(file_predictions(&tuned, &d), d.performance);
    let importances = model::importances(&file.trees);
    assert_eq!(importances[0].0, "level");
}

#[test]
fn forest_fits_a_step_function_and_is_deterministic() {
    let d = step_data();
    let rows = all_rows(&d);
    let rf = learner("rf:trees=50");
    let file = learn(&d, &rows, &rf, 7).unwrap();
    assert_eq!(file.trees.len(), 50);
    for (p, a) in file_predictions(&file, &d).iter().zip(&d.performance) {
        assert!((p - a).abs() < 0.15 * a, "{p} vs {a}");
    }
    let again = learn(&d, &rows, &rf, 7).unwrap();
    assert_eq!(again.to_json(), file.to_json(), "same seed, same forest");
    let other = learn(&d, &rows, &rf, 8).unwrap();
    assert_ne!(other.trees, file.trees, "another seed, another forest");
    // Random feature subsets (one option per split) are seeded too.
    let subsets = learner("rf:trees=20,mtry=1");
    assert_eq!(
        learn(&d, &rows, &subsets, 3).unwrap().to_json(),
        learn(&d, &rows, &subsets, 3).unwrap().to_json()
    );
}

#[test]
fn every_learner_writes_a_model_file_that_predicts_what_it_learned() {
    // Performance with a multiplicative part, so that log models and means are exercised.
    let d = brute_force(6, |x| {
        50.0 * (1.0 + x[0]) * (1.0 + 0.5 * x[1] * x[2]) + 10.0 * x[3] + 3.0 * x[4] * x[5]
    });
    let table = Table::new(&d);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut sample: Vec<usize> = (0..64).filter(|_| rng.gen_bool(0.5)).collect();
    sample.truncate(30);
    for text in [
        "stepwise",
        "stepwise:log,bags=5",
        "lasso",
        "lasso:log",
        "cart",
        "cart:depth=3,leaf=2,log",
        "rf:trees=20",
        "rf:trees=20,log",
        "boost",
        "boost:depth=2,rounds=30,log",
        "ridge",
        "ridge:relative",
        "ridge:log",
        "ridge:interacting=2,main=1,order=0.5",
        "ols:A,B*C,D",
        "stepwise:log+lasso:log+cart:log+rf:trees=10,log",
        "lasso+rf:trees=10",
        "stepwise:log+boost:depth=2,rounds=20,log+cart:log",
        "auto",
    ] {
        let l = learner(text);
        let trained = train(&table, &sample, &l, 2).unwrap();
        let file = learn(&d, &sample, &l, 2).unwrap();
        let back = ModelFile::from_json(&file.to_json(), "m.json").unwrap();
        assert_eq!(back, file, "{text}: JSON round trip");
        let all = all_rows(&d);
        let expected = trained.predict(&table, &all);
        for (p, e) in file_predictions(&back, &d).iter().zip(&expected) {
            assert!(
                (p - e).abs() <= 1e-9 * e.abs().max(1.0),
                "{text}: {p} vs {e}"
            );
        }
        // The resolved learner refits the same model.
        let resolved = learner(file.provenance["resolved"].as_str().unwrap());
        let refit = learn(&d, &sample, &resolved, 2).unwrap();
        assert_eq!(refit.terms, file.terms, "{text} → {resolved}");
        assert_eq!(refit.trees, file.trees, "{text} → {resolved}");
        // Training configurations are recorded and found again.
        let found = learn::training_rows(&file, &table).unwrap();
        let mut expected_rows = sample.clone();
        expected_rows.sort_unstable();
        assert_eq!(found, expected_rows, "{text}");
    }
}

#[test]
fn auto_is_deterministic_and_records_its_choice() {
    let d = brute_force(5, |x| 10.0 + 4.0 * x[0] + 2.0 * x[1] * x[3] + x[4]);
    let sample: Vec<usize> = (0..32).step_by(2).collect();
    let a = learn(&d, &sample, &learner("auto"), 4).unwrap();
    let b = learn(&d, &sample, &learner("auto"), 4).unwrap();
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.provenance["learner"], "auto");
    assert!(a.provenance["cv_mre"].as_f64().unwrap() >= 0.0);
    assert!(!a.provenance["candidates"].as_array().unwrap().is_empty());
    assert_eq!(
        a.provenance["training"]["rows"].as_array().unwrap().len(),
        16
    );
}

#[test]
fn bad_data_is_an_error() {
    let d = dataset("A,PERF", &[vec![0.0, 0.0], vec![1.0, 2.0], vec![0.0, 1.0]]);
    let e = learn(&d, &[0, 1, 2], &learner("stepwise"), 1).unwrap_err();
    assert!(e.to_string().contains("non-zero"), "{e}");
    let e = learn(&d, &[1, 2], &learner("rf:log"), 1).unwrap();
    assert_eq!(e.trees.len(), 100);
    let e = learn(&d, &[0, 1], &learner("rf:log"), 1).unwrap_err();
    assert!(e.to_string().contains("positive"), "{e}");
    let e = learn(&d, &[], &learner("ols:A"), 1).unwrap_err();
    assert_eq!(e.to_string(), "no training configurations");
    let e = learn(&d, &[7], &learner("ols:A"), 1).unwrap_err();
    assert!(e.to_string().contains("not in the dataset"), "{e}");
}

#[test]
fn mape_needs_non_zero_measurements() {
    // The error measure comes from the `stats` crate; its errors are data errors here.
    let d = dataset("A,PERF", &[vec![0.0, 1.0], vec![1.0, 0.0]]);
    let model = learn(&d, &[0], &learner("ols:A"), 1).unwrap();
    let table = Table::new(&d);
    assert_eq!(learn::evaluate(&model, &table, &[0]).unwrap(), 0.0);
    let e = learn::evaluate(&model, &table, &[1]).unwrap_err();
    assert!(matches!(e, learn::Error::Data(_)), "{e:?}");
    assert!(e.to_string().contains("is 0"), "{e}");
    let e = learn::evaluate(&model, &table, &[]).unwrap_err();
    assert!(matches!(e, learn::Error::Data(_)), "{e:?}");
}

#[test]
fn alternatives_are_expressed_against_a_reference_member() {
    // An alternative group {STORE, HUFF, LZ} and TRACE, costing more with LZ: a learner given
    // every member may fit a term per member beside the intercept; the model it writes names
    // only members a user can select instead of the reference one, never two together.
    let mut space = space::ConfigSpace::new("alternatives");
    let algs: Vec<_> = ["STORE", "HUFF", "LZ"]
        .iter()
        .map(|n| space.add_binary(n, None, false).unwrap())
        .collect();
    space
        .add_group(space::GroupKind::Alternative, None, algs)
        .unwrap();
    space.add_binary("TRACE", None, false).unwrap();
    let valid = space::ValidConfigurations::new(&space).unwrap();
    let configurations: Vec<space::Configuration> = valid.iter().collect();
    let cost = |c: &space::Configuration| {
        let on = |i: usize| c.0[i] == 1;
        let alg = if on(1) {
            3.0
        } else if on(2) {
            7.0
        } else {
            1.0
        };
        alg + if on(3) {
            if on(2) { 4.0 } else { 1.0 }
        } else {
            0.0
        }
    };
    let performance = configurations.iter().map(cost).collect();
    let d = Dataset {
        space: space.clone(),
        configurations,
        performance,
        metric: "time".into(),
    };
    for text in ["ols:STORE,HUFF,LZ,TRACE,LZ*TRACE", "stepwise"] {
        let file = learn(&d, &all_rows(&d), &learner(text), 1).unwrap();
        for (label, _) in terms(&file) {
            assert!(
                !label.contains("STORE"),
                "{text}: reference member in {label}"
            );
            let members = ["HUFF", "LZ"].iter().filter(|m| label.contains(*m)).count();
            assert!(members <= 1, "{text}: product of alternatives {label}");
        }
        if text == "stepwise" {
            continue; // its selection may stop short on six configurations
        }
        let predictions = file_predictions(&file, &d);
        for (p, y) in predictions.iter().zip(&d.performance) {
            assert!(
                (p - y).abs() < 1e-6,
                "{text}: predicted {p}, measured {y}: {:?}",
                terms(&file)
            );
        }
    }
}

/// What `knobs evaluate` evaluates on: the rows asked for, else those the model was not
/// built from, else (with `all`, or a model that does not record them) every row.
#[test]
fn evaluation_rows_leave_out_the_training_configurations() {
    let d = brute_force(3, |r| 1.0 + r[0]);
    let table = Table::new(&d);
    let file = learn(&d, &[0, 1, 2], &learner("ols:A"), 1).unwrap();
    let untrained = learn::EvaluationRows::choose(&file, &table, None, false);
    assert_eq!(
        (untrained.rows.as_slice(), untrained.set),
        (&[3, 4, 5, 6, 7][..], "untrained")
    );
    assert_eq!(untrained.trained_count(), Some(3));
    let all = learn::EvaluationRows::choose(&file, &table, None, true);
    assert_eq!((all.rows.len(), all.set), (8, "all"));
    assert_eq!(all.untrained().unwrap(), [3, 4, 5, 6, 7]);
    let test = learn::EvaluationRows::choose(&file, &table, Some(vec![1]), false);
    assert_eq!((test.rows.as_slice(), test.set), (&[1][..], "test"));
    let unrecorded = ModelFile::new(file.terms.clone());
    let all = learn::EvaluationRows::choose(&unrecorded, &table, None, false);
    assert_eq!((all.rows.len(), all.set, all.trained), (8, "all", None));
}

/// A mean of learners records each member as learned.
#[test]
fn a_mean_records_its_members() {
    let d = brute_force(3, |r| 1.0 + 2.0 * r[0]);
    let file = learn(&d, &all_rows(&d), &learner("ols:A+cart"), 1).unwrap();
    let members = file.provenance["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert!(members[0]["learner"].as_str().unwrap().starts_with("ols"));
    let terms: model::InfluenceModel = serde_json::from_value(members[0]["terms"].clone()).unwrap();
    let a = terms.terms().iter().find(|t| t.label() == "A").unwrap();
    // At full weight: the file's own terms hold half of it.
    assert!((a.value - 2.0).abs() < 1e-9, "{a:?}");
    assert_eq!(members[1]["trees"], 1);
}
