//! End-to-end tests of `knobs learn`, `knobs evaluate` and `knobs experiment`: learn →
//! predict → evaluate on the published datasets, tree models through `model show` and
//! `predict`, and bad input (exit status 2, one line on stderr).

mod common;

use std::fs;
use std::path::Path;

use common::{datasets, describe, error, ok, run_knobs, s};
use tempfile::TempDir;

fn shared(rel: &str) -> String {
    let p = datasets().join(rel);
    assert!(p.exists(), "{} missing", p.display());
    p.to_str().expect("UTF-8 path").to_string()
}

/// The number after `MAPE ` in `knobs evaluate` output.
fn mape_of(out: &str) -> f64 {
    out.trim()
        .strip_prefix("MAPE ")
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no MAPE in {out:?}"))
}

/// `knobs learn` of x264's dataset (a log-stepwise model of 80 random configurations) into
/// `model`, with `extra` flags; its stdout.
fn learn_x264(model: &Path, extra: &[&str]) -> String {
    let data = shared("deepperf/x264.csv");
    let args = [
        "learn",
        &data,
        "--learner",
        "stepwise:log",
        "--sample",
        "random:80",
        "--seed",
        "3",
        "--out",
        s(model),
    ];
    ok(&[&args[..], extra].concat()).0
}

#[test]
fn learn_predict_evaluate_on_a_dataset_csv() {
    let dir = TempDir::new().unwrap();
    let model = dir.path().join("x264.json");
    let data = shared("deepperf/x264.csv");
    let out = learn_x264(&model, &[]);
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
    let out = ok(&["evaluate", s(&model), &data]).0;
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
    let out = ok(&["predict", s(&model), s(&configs)]).0;
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
    let out = ok(&["evaluate", s(&model), &data, "--test", s(&configs)]).0;
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
    let shown = ok(&["model", "show", s(&model)]).0;
    assert!(shown.contains("forest: 30 trees"), "{shown}");
    assert!(shown.contains("option importance"), "{shown}");

    // Predict configurations sampled from the feature model.
    let configs = dir.path().join("sample.csv");
    let sample = ok(&[
        "space", "sample", &space, "--sample", "random:7", "--seed", "2",
    ])
    .0;
    fs::write(&configs, &sample).unwrap();
    let out = ok(&["predict", s(&model), s(&configs)]).0;
    assert_eq!(out.lines().count(), 8, "{out}");
    for line in out.lines().skip(1) {
        let p: f64 = line.rsplit(',').next().unwrap().parse().unwrap();
        assert!(p > 100.0 && p < 1500.0, "{line}");
    }
    let out = ok(&["evaluate", s(&model), &data, "--space", &space]).0;
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
    ])
    .0;
    assert!(out.contains("on the 7 configurations of"), "{out}");
}

/// The table rows of `knobs experiment deepperf`'s output (after its comments and header).
fn deepperf_rows(out: &str) -> Vec<Vec<&str>> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect()
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
        "--repetitions",
        "2",
    ])
    .0;
    let rows = deepperf_rows(&out);
    assert_eq!(rows.len(), 5, "{out}");
    for (row, size) in rows.iter().zip([9, 18, 27, 36, 45]) {
        assert_eq!(row[0], size.to_string(), "{out}");
        let mre: f64 = row[1].parse().unwrap();
        assert!(mre > 0.0 && mre < 60.0, "{out}");
        let median: f64 = row[3].parse().unwrap();
        assert!(median > 0.0 && median < 60.0, "{out}");
    }
    let out = ok(&[
        "experiment",
        "deepperf",
        &data,
        "--learner",
        "cart:depth=3,leaf=2",
        "--sizes",
        "20,40",
        "--repetitions",
        "3",
    ])
    .0;
    let rows = deepperf_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    // No published result at these sizes.
    assert_eq!(rows[0][6..], ["-", "-", "-"], "{out}");
}

#[test]
fn experiment_deepperf_shows_the_best_published_result_of_each_cell() {
    // x264.csv is one of the published systems: its sizes are the default, and each row
    // carries the best published mean, its holder and DeepPerf's own mean.
    let out = ok(&[
        "experiment",
        "deepperf",
        &shared("deepperf/x264.csv"),
        "--learner",
        "lasso",
        "--repetitions",
        "1",
    ])
    .0;
    let rows = deepperf_rows(&out);
    let cells: Vec<(&str, &str, &str, &str)> =
        rows.iter().map(|r| (r[0], r[6], r[7], r[8])).collect();
    assert_eq!(
        cells,
        [
            ("16", "8.37", "DaL", "10.43"),
            ("32", "3.00", "HINNPerf", "3.61"),
            ("48", "1.77", "DaL", "2.13"),
            ("64", "0.98", "HINNPerf", "1.49"),
            ("80", "0.87", "DeepPerf", "0.87"),
        ],
        "{out}"
    );
    // --system names the published system when the file name does not; JSON carries it too.
    let dir = TempDir::new().unwrap();
    let copy = dir.path().join("measurements.csv");
    fs::copy(shared("deepperf/LLVM.csv"), &copy).unwrap();
    let (out, _) = ok(&[
        "experiment",
        "deepperf",
        s(&copy),
        "--system",
        "llvm",
        "--learner",
        "lasso",
        "--sizes",
        "55",
        "--repetitions",
        "1",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["system"], "LLVM");
    let published = &json["rows"][0]["published"];
    assert_eq!(published["best_mean_mre_percent"], 1.65);
    assert_eq!(published["holder"], "Perf-AL");
    assert_eq!(published["deepperf_mean_mre_percent"], 1.99);
    assert!(json["rows"][0]["median_mre_percent"].as_f64().unwrap() > 0.0);
    // Without a published system, the sizes must be given; an unknown --system is named.
    let err = error(&["experiment", "deepperf", s(&copy), "--learner", "lasso"]);
    assert!(err.contains("give --sizes or --n"), "{err}");
    let err = error(&[
        "experiment",
        "deepperf",
        s(&copy),
        "--system",
        "nginx",
        "--learner",
        "lasso",
        "--n",
        "5",
    ]);
    assert!(
        err.contains("--system nginx: no published results"),
        "{err}"
    );
}

#[test]
fn experiment_compare_strategies_and_learners() {
    let out = ok(&[
        "experiment",
        "compare",
        &shared("splconqueror/LLVM/measurements.xml"),
        "--space",
        &shared("splconqueror/LLVM/FeatureModel.xml"),
        "--sample",
        "featurewise,random:30",
        "--learners",
        "stepwise,cart",
        "--repetitions",
        "3",
    ])
    .0;
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
        "--repetitions",
        "1",
    ]);
    assert!(e.contains("sample size 500"), "{e}");
}

/// Stdout of a `--json` run, parsed.
fn json_of(args: &[&str]) -> serde_json::Value {
    let out = ok(args).0;
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("knobs {}: {e}: {out}", args.join(" ")))
}

#[test]
fn learn_and_evaluate_print_json() {
    let dir = TempDir::new().unwrap();
    let model = dir.path().join("x264.json");
    let data = shared("deepperf/x264.csv");
    let learned: serde_json::Value =
        serde_json::from_str(&learn_x264(&model, &["--json"])).unwrap();
    assert_eq!(learned["training_configurations"], 80, "{learned}");
    assert_eq!(learned["configurations"], 1152, "{learned}");
    assert_eq!(learned["sample"], "random:80", "{learned}");
    assert_eq!(learned["seed"], 3, "{learned}");
    assert_eq!(learned["transform"], "log", "{learned}");
    assert_eq!(learned["trees"], 0, "{learned}");
    assert_eq!(learned["model"], s(&model), "{learned}");
    assert!(
        learned["learner"].as_str().unwrap().starts_with("stepwise"),
        "{learned}"
    );
    assert!(learned["seconds"].as_f64().unwrap() >= 0.0, "{learned}");
    // Only `auto` cross-validates.
    assert!(learned["cv_mre_percent"].is_null(), "{learned}");
    // What it reports is what it wrote.
    let file: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(
        learned["terms"].as_u64().unwrap() as usize,
        file["terms"].as_array().unwrap().len(),
        "{learned}"
    );
    assert_eq!(
        learned["learner"], file["provenance"]["resolved"],
        "{learned}"
    );

    // `auto`: the cross-validated error of its choice, in percent; trees counted.
    let auto = dir.path().join("auto.json");
    let chosen = json_of(&[
        "learn",
        &shared("deepperf/Apache.csv"),
        "--learner",
        "auto",
        "--sample",
        "random:40",
        "-o",
        s(&auto),
        "--json",
    ]);
    let file: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&auto).unwrap()).unwrap();
    let cv = chosen["cv_mre_percent"].as_f64().unwrap();
    assert!(cv > 0.0 && cv < 30.0, "{chosen}");
    assert!(
        (file["provenance"]["cv_mre"].as_f64().unwrap() * 100.0 - cv).abs() < 1e-9,
        "{chosen}"
    );
    assert_eq!(chosen["training_configurations"], 40, "{chosen}");
    assert_eq!(
        chosen["trees"].as_u64().unwrap() as usize,
        file["trees"].as_array().map_or(0, Vec::len),
        "{chosen}"
    );

    // Evaluate: by default on the configurations not trained on, the same MAPE as the text.
    let default = json_of(&["evaluate", s(&model), &data, "--json"]);
    assert_eq!(default["set"], "untrained", "{default}");
    assert_eq!(default["configurations"], 1072, "{default}");
    assert_eq!(default["of"], 1152, "{default}");
    assert_eq!(default["training_configurations"], 80, "{default}");
    let mape = default["mape_percent"].as_f64().unwrap();
    assert!(mape > 0.0 && mape < 10.0, "{default}");
    let text = ok(&["evaluate", s(&model), &data]).0;
    assert_eq!(
        format!("{:.2}", mape),
        format!("{:.2}", mape_of(&text)),
        "{text}"
    );

    // --all: every configuration, the training ones included.
    let all = json_of(&["evaluate", s(&model), &data, "--all", "--json"]);
    assert_eq!(all["set"], "all", "{all}");
    assert_eq!(all["configurations"], 1152, "{all}");
    assert_eq!(
        all["configurations"].as_u64().unwrap() - default["configurations"].as_u64().unwrap(),
        learned["training_configurations"].as_u64().unwrap(),
        "the counts differ by the training size"
    );
    assert_ne!(all["mape_percent"], default["mape_percent"], "{all}");
    let text = ok(&["evaluate", s(&model), &data, "--all"]).0;
    assert!(
        text.contains("on all 1152 configurations (80 of them used for training)"),
        "{text}"
    );
    // --test: those configurations.
    let configs = dir.path().join("configs.csv");
    let rows = fs::read_to_string(&data).unwrap();
    fs::write(
        &configs,
        rows.lines().take(6).collect::<Vec<_>>().join("\n") + "\n",
    )
    .unwrap();
    let test = json_of(&[
        "evaluate",
        s(&model),
        &data,
        "--test",
        s(&configs),
        "--json",
    ]);
    assert_eq!(test["set"], "test", "{test}");
    assert_eq!(test["configurations"], 5, "{test}");
    assert_eq!(test["test"], s(&configs), "{test}");
    // --all and --test contradict each other.
    let args = ["evaluate", s(&model), &data, "--all", "--test", s(&configs)];
    let out = run_knobs(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));

    // A model trained on every configuration: nothing left by default, all of them with --all.
    let full = dir.path().join("full.json");
    let apache = shared("deepperf/Apache.csv");
    ok(&["learn", &apache, "--learner", "lasso", "--out", s(&full)]);
    let e = error(&["evaluate", s(&full), &apache]);
    assert!(e.contains("give --test or --all"), "{e}");
    let all = json_of(&["evaluate", s(&full), &apache, "--all", "--json"]);
    assert_eq!(all["configurations"], 192, "{all}");
    assert_eq!(all["training_configurations"], 192, "{all}");
}

#[test]
fn experiments_print_json() {
    let data = shared("deepperf/Apache.csv");
    let args = [
        "experiment",
        "deepperf",
        &data,
        "--learner",
        "lasso",
        "--sizes",
        "9,18",
        "--repetitions",
        "3",
    ];
    let json = json_of(&[&args[..], &["--json"]].concat());
    assert_eq!(json["repetitions"], 3, "{json}");
    assert_eq!(json["configurations"], 192, "{json}");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{json}");
    // The same table as the text (same seed, same samples).
    let text = ok(&args).0;
    for (row, cells) in rows.iter().zip(deepperf_rows(&text)) {
        let line = cells.join(" ");
        assert_eq!(row["size"].to_string(), cells[0], "{line}");
        assert_eq!(
            format!("{:.2}", row["mean_mre_percent"].as_f64().unwrap()),
            cells[1],
            "{line}"
        );
        assert_eq!(row["mre_percent"].as_array().unwrap().len(), 3, "{json}");
    }

    let json = json_of(&[
        "experiment",
        "compare",
        &shared("splconqueror/LLVM/measurements.xml"),
        "--space",
        &shared("splconqueror/LLVM/FeatureModel.xml"),
        "--sample",
        "featurewise,random:30",
        "--learners",
        "stepwise,cart",
        "--repetitions",
        "2",
        "--json",
    ]);
    assert_eq!(json["configurations"], 1024, "{json}");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{json}");
    assert_eq!(rows[0]["sample"], "featurewise", "{json}");
    assert_eq!(rows[3]["sample"], "random:30", "{json}");
    assert_eq!(rows[3]["configurations"], 30.0, "{json}");
    for r in rows {
        assert_eq!(r["repetitions"], 2, "{json}");
        let mape = r["mape_percent"].as_f64().unwrap();
        assert!(mape > 0.0 && mape < 30.0, "{json}");
        assert!(r["margin_percent"].as_f64().unwrap() >= 0.0, "{json}");
    }
}

/// A mean of learners says so and shows each member's terms at full weight: the linear
/// member's line is the model that learner alone learns, not its halved coefficients.
#[test]
fn a_mean_of_learners_shows_each_member_at_full_weight() {
    let dir = TempDir::new().unwrap();
    let data = shared("deepperf/x264.csv");
    let learn = |learner: &str, out: &Path| {
        ok(&[
            "learn",
            &data,
            "--learner",
            learner,
            "--sample",
            "random:60",
            "--seed",
            "2",
            "--out",
            s(out),
        ])
    };
    let alone = dir.path().join("stepwise.json");
    let mean = dir.path().join("mean.json");
    learn("stepwise", &alone);
    learn("stepwise+cart", &mean);
    let alone_shown = ok(&["model", "show", s(&alone)]).0;
    let formula = alone_shown
        .lines()
        .find(|l| l.contains('·'))
        .unwrap_or_else(|| panic!("{alone_shown}"));
    let shown = ok(&["model", "show", s(&mean)]).0;
    assert!(
        shown.contains("mean of 2 models, each weighted 1/2"),
        "{shown}"
    );
    let member = shown
        .lines()
        .find(|l| l.trim_start().starts_with("stepwise"))
        .unwrap_or_else(|| panic!("{shown}"));
    let member_terms = member.split_once(": ").unwrap().1;
    assert_eq!(member_terms, formula, "{shown}");
    assert!(
        shown
            .lines()
            .any(|l| l.trim_start().starts_with("cart") && l.ends_with("a regression tree")),
        "{shown}"
    );
}

/// `learn` from a store says how many measured configurations it left out and why: here
/// `sleep` with a bad argument fails, and one too long times out.
#[test]
fn learn_says_which_configurations_it_left_out() {
    let dir = TempDir::new().unwrap();
    let spec = dir.path().join("knobs.toml");
    fs::write(
        &spec,
        r#"
name = "sleeper"
[run]
program = "sleep"
args = ["0.001", "{options}"]
timeout = 0.5
[measure]
repetitions = 1
[[workload]]
name = "none"
[[option]]
name = "a"
on = ["0.002"]
[[option]]
name = "bad"
on = ["not-a-number"]
[[option]]
name = "hang"
on = ["30"]
"#,
    )
    .unwrap();
    // Exit status aside (failures may be an error): the runs are in the store.
    run_knobs(&["measure", "--spec", s(&spec), "--sample", "all"], None);
    let store = dir.path().join("knobs.db");
    let model = dir.path().join("m.json");
    let out = ok(&["learn", s(&store), "--learner", "ols:a", "--out", s(&model)]).0;
    assert!(out.contains("from 2 of 2 configurations"), "{out}");
    assert!(
        out.contains(
            "6 measured configurations left out: no run succeeded (4 failed, 2 timed out;"
        ),
        "{out}"
    );
}
