//! End-to-end tests of `knobs learn`, `knobs evaluate` and `knobs experiment`: learn →
//! predict → evaluate on the published datasets, tree models through `model show` and
//! `predict`, and bad input (exit status 2, one line on stderr).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use tempfile::TempDir;

fn datasets() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets");
    assert!(
        dir.exists(),
        "shared datasets not found at {}",
        dir.display()
    );
    dir
}

fn shared(rel: &str) -> String {
    let p = datasets().join(rel);
    assert!(p.exists(), "{} missing", p.display());
    p.to_str().expect("UTF-8 path").to_string()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn run(args: &[&str]) -> Output {
    Command::cargo_bin("knobs")
        .expect("the knobs binary is built")
        .args(args)
        .output()
        .expect("knobs runs")
}

fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "knobs {}\nstatus: {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs knobs expecting success; returns stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{}", describe(args, &out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        describe(args, &out)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Runs knobs expecting a bad-input error: exit status 2 and one line on stderr.
fn error(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{}", describe(args, &out));
    assert!(!stderr.contains("panicked"), "{}", describe(args, &out));
    assert_eq!(stderr.lines().count(), 1, "{}", describe(args, &out));
    assert!(
        stderr.starts_with("knobs: error: "),
        "{}",
        describe(args, &out)
    );
    stderr.trim_end().to_string()
}

/// The number after `MAPE ` in `knobs evaluate` output.
fn mape_of(out: &str) -> f64 {
    out.trim()
        .strip_prefix("MAPE ")
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no MAPE in {out:?}"))
}

#[test]
fn learn_predict_evaluate_on_a_dataset_csv() {
    let dir = TempDir::new().unwrap();
    let model = dir.path().join("x264.json");
    let data = shared("deepperf/x264.csv");
    let out = ok(&[
        "learn",
        &data,
        "--learner",
        "stepwise:log",
        "--sample",
        "random:80",
        "--seed",
        "3",
        "--out",
        s(&model),
    ]);
    assert!(out.contains("from 80 of 1152 configurations"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&model).unwrap()).expect("the model file is JSON");
    assert_eq!(json["format"], "knobs-model");
    assert_eq!(json["transform"], "log");
    assert_eq!(json["provenance"]["sample"], "random:80");
    assert_eq!(json["provenance"]["seed"], 3);
    assert_eq!(
        json["provenance"]["training"]["rows"]
            .as_array()
            .unwrap()
            .len(),
        80
    );

    // Evaluate leaves the 80 training configurations out.
    let out = ok(&["evaluate", s(&model), &data]);
    assert!(
        out.contains("on 1072 configurations not used for training (of 1152)"),
        "{out}"
    );
    assert!(mape_of(&out) < 10.0, "{out}");

    // Predict: the dataset's rows, with a prediction column that matches the performance.
    let text = fs::read_to_string(&data).unwrap();
    let configs = dir.path().join("configs.csv");
    fs::write(
        &configs,
        text.lines().take(6).collect::<Vec<_>>().join("\n") + "\n",
    )
    .unwrap();
    let out = ok(&["predict", s(&model), s(&configs)]);
    let mut lines = out.lines();
    assert!(lines.next().unwrap().ends_with(",PERF,prediction"));
    for line in lines {
        let cells: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
        let (perf, predicted) = (cells[cells.len() - 2], cells[cells.len() - 1]);
        assert!(
            ((predicted - perf) / perf).abs() < 0.2,
            "{line}: prediction far off"
        );
    }

    // --test: these five configurations, looked up in the dataset.
    let out = ok(&["evaluate", s(&model), &data, "--test", s(&configs)]);
    assert!(out.contains("on the 5 configurations of"), "{out}");
}

#[test]
fn tree_models_from_splconqueror_measurements() {
    let dir = TempDir::new().unwrap();
    let model = dir.path().join("rf.json");
    let space = shared("splconqueror/x264/FeatureModel.xml");
    let data = shared("splconqueror/x264/measurements.xml");
    ok(&[
        "learn",
        &data,
        "--space",
        &space,
        "--learner",
        "rf:trees=30",
        "--sample",
        "pairwise",
        "--out",
        s(&model),
    ]);
    let shown = ok(&["model", "show", s(&model)]);
    assert!(shown.contains("forest: 30 trees"), "{shown}");
    assert!(shown.contains("option importance"), "{shown}");

    // Predict configurations sampled from the feature model.
    let configs = dir.path().join("sample.csv");
    let sample = ok(&[
        "space", "sample", &space, "--sample", "random:7", "--seed", "2",
    ]);
    fs::write(&configs, &sample).unwrap();
    let out = ok(&["predict", s(&model), s(&configs)]);
    assert_eq!(out.lines().count(), 8, "{out}");
    for line in out.lines().skip(1) {
        let p: f64 = line.rsplit(',').next().unwrap().parse().unwrap();
        assert!(p > 100.0 && p < 1500.0, "{line}");
    }
    let out = ok(&["evaluate", s(&model), &data, "--space", &space]);
    assert!(
        out.contains("configurations not used for training"),
        "{out}"
    );
    assert!(mape_of(&out) < 40.0, "{out}");
    let out = ok(&[
        "evaluate",
        s(&model),
        &data,
        "--space",
        &space,
        "--test",
        s(&configs),
    ]);
    assert!(out.contains("on the 7 configurations of"), "{out}");
}

#[test]
fn experiment_deepperf_prints_one_row_per_size() {
    let data = shared("deepperf/Apache.csv");
    let out = ok(&[
        "experiment",
        "deepperf",
        &data,
        "--learner",
        "lasso",
        "--n",
        "9",
        "--reps",
        "2",
    ]);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 5, "{out}");
    for (row, size) in rows.iter().zip([9, 18, 27, 36, 45]) {
        assert_eq!(row[0], size.to_string(), "{out}");
        let mre: f64 = row[1].parse().unwrap();
        assert!(mre > 0.0 && mre < 60.0, "{out}");
    }
    let out = ok(&[
        "experiment",
        "deepperf",
        &data,
        "--learner",
        "cart:depth=3,leaf=2",
        "--sizes",
        "20,40",
        "--reps",
        "3",
    ]);
    assert_eq!(out.lines().count(), 4, "{out}");
}

#[test]
fn experiment_compare_strategies_and_learners() {
    let out = ok(&[
        "experiment",
        "compare",
        &shared("splconqueror/LLVM/measurements.xml"),
        "--space",
        &shared("splconqueror/LLVM/FeatureModel.xml"),
        "--strategies",
        "featurewise,random:30",
        "--learners",
        "stepwise,cart",
        "--reps",
        "3",
    ]);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    assert_eq!(rows[0][0], "featurewise");
    assert_eq!(rows[3][0], "random:30");
    assert_eq!(rows[3][2], "30.0", "{out}");
    for r in &rows {
        // MAPE and its margin over the three repetitions: `9.50 ± 0.00`.
        let mape: f64 = r[5].parse().unwrap();
        assert_eq!(r[6], "±", "{out}");
        let margin: f64 = r[7].parse().unwrap();
        assert!(mape < 30.0 && margin >= 0.0, "{out}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = TempDir::new().unwrap();
    let model = dir.path().join("m.json");
    let data = shared("deepperf/Apache.csv");
    let args = |learner: &str, sample: &str| {
        vec![
            "learn".to_string(),
            data.clone(),
            "--learner".into(),
            learner.into(),
            "--sample".into(),
            sample.into(),
            "--out".into(),
            s(&model).into(),
        ]
    };
    let call = |a: Vec<String>| error(&a.iter().map(String::as_str).collect::<Vec<_>>());

    let e = call(args("svm", "all"));
    assert!(
        e.contains("unknown learner `svm`; expected stepwise"),
        "{e}"
    );
    let e = call(args("lasso:alpha=2", "all"));
    assert!(e.contains("unknown setting `alpha=2`"), "{e}");
    let e = call(args("stepwise", "random:500"));
    assert!(
        e.contains("asks for 500 configurations, but the dataset has only 192"),
        "{e}"
    );
    let e = call(args("ols:Nope", "random:20"));
    assert!(e.contains("no option `Nope`"), "{e}");
    assert!(!model.exists(), "no model written on errors");

    // Malformed data: a cell that is not a number, named by line.
    let bad = dir.path().join("bad.csv");
    fs::write(&bad, "A,B,PERF\n0,1,3\n1,x,4\n").unwrap();
    let e = error(&["learn", s(&bad), "--learner", "rf", "--out", s(&model)]);
    assert!(e.contains("bad.csv:3: `x` is not a number"), "{e}");
    // SPL Conqueror measurements without their feature model.
    let e = error(&[
        "learn",
        &shared("splconqueror/x264/measurements.xml"),
        "--learner",
        "rf",
        "--out",
        s(&model),
    ]);
    assert!(
        e.contains("need their variability model; give it with --space"),
        "{e}"
    );
    // Unmeasured configurations asked for by a sampler on an unconstrained CSV space.
    let e = call(args("stepwise", "pairwise"));
    assert!(e.contains("which the dataset has not measured"), "{e}");
    // Evaluate: a model that is not a model file; a test configuration not in the data.
    fs::write(&model, "{}").unwrap();
    let e = error(&["evaluate", s(&model), &data]);
    assert!(e.contains("missing field"), "{e}");
    let e = error(&[
        "experiment",
        "deepperf",
        &data,
        "--learner",
        "lasso",
        "--sizes",
        "500",
        "--reps",
        "1",
    ]);
    assert!(e.contains("sample size 500"), "{e}");
}
