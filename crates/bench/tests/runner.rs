//! The runner end to end on the cheapest subjects, with the knobs binary of this cargo build,
//! rows written to a temporary directory (never docs/results): on ConfigCrusher's running
//! example brute force (on a random sample of 64 configurations, to stay cheap), `knobs
//! crush`, black-box baselines (one as large as ConfigCrusher's sample), Table 7 and the
//! ground truth measured again; on the dispatch example Comprex's Table IV.

use std::path::{Path, PathBuf};
use std::process::Command;

use bench::rows::{self, Row};

/// The target directory's profile directory this test runs from (target/debug for
/// `cargo test`): the test binary is PROFILE/deps/running_example-HASH.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .and_then(Path::parent)
        .expect("the test binary is in PROFILE/deps")
        .to_path_buf()
}

/// Builds knobs in the same profile and target directory as this test and returns its path.
fn knobs() -> PathBuf {
    let profile = profile_dir();
    let target = profile.parent().expect("a target directory");
    let release = profile.file_name().is_some_and(|n| n == "release");
    let mut cargo = Command::new(option_env!("CARGO").unwrap_or("cargo"));
    cargo
        .args(["build", "-q", "-p", "knobs", "--target-dir"])
        .arg(target)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if release {
        cargo.arg("--release");
    }
    let status = cargo.status().expect("cargo runs");
    assert!(status.success(), "cargo build -p knobs failed");
    let knobs = profile.join("knobs");
    assert!(knobs.is_file(), "no knobs binary at {}", knobs.display());
    knobs
}

/// Runs knobs-bench with `args` (and this build's knobs), returning its rows and results
/// directory.
fn bench(args: &[&str], tmp: &Path) -> (Vec<Row>, PathBuf) {
    let results = tmp.join("results");
    let work = tmp.join("work");
    let out = Command::new(env!("CARGO_BIN_EXE_knobs-bench"))
        .args(args)
        .arg("--knobs")
        .arg(knobs())
        .arg("--results-dir")
        .arg(&results)
        .arg("--work-dir")
        .arg(&work)
        .output()
        .expect("knobs-bench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "knobs-bench failed:\n{stderr}");
    (rows::read_all(&results).unwrap(), results)
}

/// The running example end to end: which rows the runner writes and with which fields, the
/// configurations each approach measured, and how the numbers relate to each other (a MAPE on
/// all configurations and on the unmeasured ones, the medians' noise, Table 7's ratios with
/// and without the probes' cost). The numbers themselves are timings of real sleeps, which a
/// busy machine stretches: they are benchmark results, measured on real hardware by the
/// runner (`cargo run --release -p bench`) into docs/results, not checked here.
#[test]
fn running_example_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let (rows, results) = bench(
        &[
            "running-example",
            "--approaches",
            "crush,featurewise/stepwise,random:50/lasso,random:as:crush/auto,overhead,repeat",
            "--ground-truth",
            "random:64",
        ],
        tmp.path(),
    );
    check_running_example(&rows, &results);
    // The spec's 3 repetitions as 3 rounds: the ground truth, ConfigCrusher and the
    // repetition each measured once per round, in turn (the black-box samples and Table 7
    // in sessions of their own), and each row reruns its rounds' commands first.
    for r in rows.iter().filter(|r| r.approach != rows::COMPARISON) {
        let rounds = r.details.get("interleaved_rounds").and_then(|v| v.as_u64());
        let measures = |n: u32| {
            r.commands
                .iter()
                .any(|c| c.contains(&format!("--repetitions {n}")))
        };
        if ["brute-force", "crush", "repeat"].contains(&r.approach.as_str()) {
            assert_eq!(rounds, Some(3), "{}", r.approach);
            assert!(
                measures(1) && measures(2) && !measures(3),
                "{:?}",
                r.commands
            );
        } else {
            assert_eq!(rounds, None, "{}", r.approach);
        }
    }
}

/// Asserts what every run must give, however fast or busy the machine.
fn check_running_example(rows: &[Row], results: &Path) {
    let files: Vec<_> = std::fs::read_dir(results)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        files.iter().any(|f| f == bench::summary::LATEST),
        "{files:?}"
    );
    assert!(
        files.iter().any(|f| f.ends_with("-running-example.jsonl")),
        "{files:?}"
    );
    let row = |approach: &str| {
        rows.iter()
            .find(|r| r.approach == approach)
            .unwrap_or_else(|| panic!("no {approach} row in {rows:?}"))
    };
    for r in rows.iter().filter(|r| r.approach != rows::COMPARISON) {
        assert_eq!(r.subject, "running-example");
        assert!(!r.info.commit.is_empty() && !r.info.machine.hostname.is_empty());
        assert!(r.info.machine.cores > 0);
        assert!(!r.commands.is_empty(), "{} recorded no command", r.approach);
        assert!(r.load_start[0].is_finite() && r.load_end[0].is_finite());
    }

    let truth = row("brute-force");
    // The sample, and the campaign's reference configuration (measured in every round, so
    // in the store), unless the sample drew it.
    let size = truth.configurations.unwrap();
    assert!(size == 64.0 || size == 65.0, "{size} configurations");
    assert_eq!(truth.ground_truth.as_deref(), Some("random:64"));
    assert!(truth.measurement_seconds.unwrap() > 0.0);
    // The noise: a CV per configuration, and the medians' spread (the slowest over the
    // fastest). Every configuration sleeps at least one time unit of 5 ms, and a sleep is
    // never measured shorter than asked for.
    let noise = |key: &str| truth.details["noise"][key].as_f64().unwrap();
    assert_eq!(noise("configurations"), size);
    assert!(noise("cv_max_percent") >= noise("cv_median_percent"));
    assert!(
        noise("fastest_seconds") >= 0.005,
        "{}",
        truth.details["noise"]
    );
    assert!(noise("slowest_seconds") > noise("fastest_seconds"));
    let spread = noise("slowest_seconds") / noise("fastest_seconds");
    assert!(
        (noise("spread") - spread).abs() <= 1e-9 * spread,
        "{}",
        truth.details["noise"]
    );

    // ConfigCrusher: the 8 configurations of the lower bound, of 1,024. Its model's values
    // are checked exactly on the test clock in crates/configcrusher/tests/running_example.rs;
    // its error with real sleeps is a benchmark result.
    let crush = row("crush");
    assert_eq!(crush.configurations, Some(8.0));
    assert_eq!(crush.total_configurations, Some(1024.0));
    assert_eq!(crush.lower_bound, Some(8.0));
    // Both errors: on the ground truth's configurations it did not measure, and on all.
    assert!(crush.mape_percent.is_some_and(f64::is_finite), "{crush:?}");
    assert!(
        crush.mape_all_percent.is_some_and(f64::is_finite),
        "{crush:?}"
    );
    let count = |key: &str| crush.details.get(key).and_then(|v| v.as_u64()).unwrap();
    // The ground truth is a sample: only some of the 8 measured configurations are in it.
    let (unmeasured, all) = (
        count("mape_configurations"),
        count("mape_all_configurations"),
    );
    assert!(
        all - 8 <= unmeasured && unmeasured < all,
        "{unmeasured} of {all}"
    );
    assert!(
        crush
            .commands
            .iter()
            .any(|c| c.contains(" crush ") && c.contains("--json"))
    );

    let fw = row("featurewise/stepwise");
    assert!(fw.mape_percent.is_some_and(f64::is_finite));
    assert!(fw.mape_all_percent.is_some_and(f64::is_finite));
    assert!(fw.configurations.unwrap() >= 10.0);
    assert!(fw.terms.is_some_and(|t| t >= 1.0), "{:?}", fw.terms);
    // The samples are measured into the black-box runs' own store, never the ground truth's.
    let lasso = row("random:50/lasso");
    assert_eq!(lasso.configurations, Some(50.0));
    assert!(lasso.analysis_seconds.is_some_and(|s| s > 0.0));
    assert!(lasso.mape_all_percent.is_some_and(f64::is_finite));
    for r in [fw, lasso] {
        let store = r.details["store"].as_str().unwrap();
        assert!(store.ends_with("blackbox.db"), "{store}");
        assert!(
            r.commands
                .iter()
                .any(|c| c.contains(" measure ") && c.contains("blackbox.db")),
            "{:?}",
            r.commands
        );
    }
    // At equal cost: a random sample as large as ConfigCrusher's.
    let equal = row("random:as:crush/auto");
    assert_eq!(equal.details["measured_sample"], "random:8");
    assert_eq!(equal.configurations, Some(8.0));
    assert!(equal.mape_percent.is_some_and(f64::is_finite));

    // The ground truth again: every configuration, and its disagreement with the first
    // session (a benchmark result: docs/results).
    let again = row("repeat");
    assert_eq!(again.configurations, Some(size));
    assert!(
        again.mape_all_percent.is_some_and(f64::is_finite),
        "a MAPE against the ground truth: {again:?}"
    );
    assert!(
        again
            .commands
            .iter()
            .any(|c| c.contains(" measure ") && c.contains("repeat.db"))
    );

    // Every model compared with the best on the ground truth's configurations.
    let comparison = row(rows::COMPARISON);
    let c: bench::compare::Comparison =
        serde_json::from_value(comparison.details["comparison"].clone()).unwrap();
    let mut compared: Vec<&str> = c.approaches.iter().map(|a| a.approach.as_str()).collect();
    compared.sort();
    // The repeated ground truth is no model: it is not compared.
    assert_eq!(
        compared,
        [
            "crush",
            "featurewise/stepwise",
            "random:50/lasso",
            "random:as:crush/auto"
        ]
    );
    assert!(compared.contains(&c.best.as_str()));
    for a in &c.approaches {
        assert_eq!(a.p.is_none(), a.approach == c.best, "{c:?}");
        assert!(a.mape_all_percent.is_finite());
    }

    // Table 7: propagation removes regions and region entries (counted, not timed).
    let t7 = row("overhead");
    assert_eq!(t7.configurations, Some(8.0));
    let d = |placement: &str, key: &str| {
        t7.details[placement][key]
            .as_f64()
            .unwrap_or_else(|| panic!("overhead {placement}.{key}: {:?}", t7.details))
    };
    assert!(d("after", "regions") < d("before", "regions"));
    assert!(d("after", "rc_mean") <= d("before", "rc_mean"));
    for p in ["before", "after"] {
        // Instrumented over native: how close to 1 is a benchmark result (docs/results).
        let ratio = d(p, "ratio_geometric_mean");
        assert!(ratio.is_finite() && ratio > 0.0, "{p}: {ratio}");
        // Every run less its probes' cost is no longer than the run, so neither are the
        // medians.
        let without = d(p, "without_probes_ratio_geometric_mean");
        assert!(
            without > 0.0 && without <= ratio + 1e-9,
            "{p}: {without} > {ratio}"
        );
    }

    let summary = std::fs::read_to_string(results.join(bench::summary::LATEST)).unwrap();
    assert!(summary.contains("## running-example"), "{summary}");
    assert!(
        summary.contains("| ConfigCrusher | 8 of 1024 (lower bound 8) |"),
        "{summary}"
    );
    assert!(summary.contains("| random 50 + lasso | 50 |"), "{summary}");
    assert!(
        summary.contains("| random, as many as ConfigCrusher + auto | 8 |"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("| brute force again | {size} of 1024 |")),
        "{summary}"
    );
    assert!(
        summary.contains("| without the probes' own cost |"),
        "{summary}"
    );
    assert!(
        summary.contains("\nNoise: the ground truth's ")
            && summary.contains("measured again in another session, the medians differ by"),
        "{summary}"
    );
}

/// Table IV on the dispatch example: one exploration, every granularity, and a cover no
/// larger than the exploration at each (24 configurations; its 4 options choose handlers
/// through tables and selects, so the partitions are not trivial).
#[test]
fn dispatch_table_iv() {
    let tmp = tempfile::tempdir().unwrap();
    let (rows, results) = bench(&["dispatch", "--approaches", "granularity"], tmp.path());
    let row = rows
        .iter()
        .find(|r| r.approach == "granularity")
        .unwrap_or_else(|| panic!("no granularity row in {rows:?}"));
    assert_eq!(row.status, rows::Status::Ok, "{:?}", row.reason);
    assert_eq!(row.total_configurations, Some(24.0));
    let runs = row.details["taint_runs"].as_u64().unwrap();
    assert!((1..=24).contains(&runs), "{runs} taint runs");
    let table = row.details["table"].as_array().unwrap();
    let at = |g: &str| {
        table
            .iter()
            .find(|t| t["granularity"] == g)
            .unwrap_or_else(|| panic!("no {g} in {table:?}"))
    };
    // One region for the whole program; more regions at finer granularities.
    assert_eq!(at("program")["regions"], 1);
    let methods = at("method")["regions"].as_u64().unwrap();
    let statements = at("statement")["regions"].as_u64().unwrap();
    assert!(methods > 1 && statements >= methods, "{table:?}");
    for t in table {
        let cover = t["configurations"].as_u64().unwrap();
        assert!(1 <= cover && cover <= runs, "{table:?}");
    }
    let summary = std::fs::read_to_string(results.join(bench::summary::LATEST)).unwrap();
    assert!(summary.contains("Comprex's Table IV"), "{summary}");
    assert!(summary.contains("| program | 1 |"), "{summary}");
}

/// `--metric instructions`: the ground truth and its repetition counted, not timed, so two
/// sessions agree exactly (the floor under the learners' error is then zero); a white-box
/// approach builds its counting variant and is compared with the counted ground truth of
/// the plain counting build; Table 7, which compares run times, does not apply.
#[test]
fn instructions_ground_truth_repeats_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let (rows, _) = bench(
        &[
            "running-example",
            "--approaches",
            "crush,overhead,repeat",
            "--ground-truth",
            "random:4",
            "--quick",
            "--metric",
            "instructions",
        ],
        tmp.path(),
    );
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.approach == name)
            .unwrap_or_else(|| panic!("no {name} row in {rows:?}"))
    };
    let truth = row("brute-force");
    assert_eq!(truth.status, rows::Status::Ok, "{:?}", truth.reason);
    assert_eq!(truth.details["metric"], "instructions");
    assert_eq!(truth.configurations, Some(4.0));
    assert_eq!(truth.measurement_seconds, None, "counts are not seconds");
    let again = row("repeat");
    assert_eq!(again.status, rows::Status::Ok, "{:?}", again.reason);
    assert_eq!(again.mape_all_percent, Some(0.0), "{again:?}");
    let crush = row("crush");
    assert_eq!(crush.status, rows::Status::Ok, "{:?}", crush.reason);
    let truth_build = crush.details["ground_truth_build"].as_str().unwrap_or("");
    assert!(truth_build.contains("plain counting build"), "{crush:?}");
    // The example's units run a counted work loop beside their sleeps, so a count is the
    // options' work; what the model leaves out is `main`'s argument loop, a few dozen
    // instructions per option given (docs/results/README.md).
    assert!(crush.mape_all_percent.is_some_and(|m| m < 0.5), "{crush:?}");
    let variant = crush.details["variant"].as_str().unwrap_or("");
    assert!(variant.starts_with("configcrusher-counted:"), "{crush:?}");
    let overhead = row("overhead");
    assert_eq!(overhead.status, rows::Status::NotApplicable);
    assert!(
        overhead
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("--metric")
    );
}
