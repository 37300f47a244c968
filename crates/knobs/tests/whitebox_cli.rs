//! The white-box approaches on a small program of one's own, as a new user meets them.
//!
//! Where some configurations crash and one hangs, no model is built from the cells those
//! leave unmeasured without saying so: by default each approach fails with one line naming
//! the failed configurations; with `--allow-failed` it writes a model without the terms that
//! rest on them, and names those terms in its output and in the model. And `knobs comprex`
//! says which workload it taints with, names its run limit by its flag, and prints short
//! partitions.
//!
//! Nothing here depends on the machine's speed: the failures are a segfault and a hang (the
//! spec's 1 s timeout ends it), whatever the load; the rest is wording and structure.

mod common;

use std::path::Path;

use common::{c_subject, knobs, succeeds};

/// HEAVY and ITER meet in the loop and in the failures: with `FAIL` set, HEAVY with ITER=8
/// segfaults and HEAVY with ITER=4 hangs; without it every configuration runs to its end.
const MAIN: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((annotate("knobs:option=HEAVY"))) int HEAVY;
__attribute__((annotate("knobs:option=ITER"))) int ITER = 1;
volatile long sink;
static void work(long n) {
    for (long i = 0; i < n; i++) sink += i;
}
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--heavy")) HEAVY = 1;
        if (!strncmp(argv[k], "--iter=", 7)) ITER = atoi(argv[k] + 7);
    }
    if (getenv("FAIL")) {
        if (HEAVY && ITER == 8) { volatile int *p = 0; *p = 1; }
        if (HEAVY && ITER == 4) for (;;) pause();
    }
    for (int i = 0; i < ITER; i++) work(HEAVY ? 20000 : 10000);
    return 0;
}
"#;

/// The measured workload sets `FAIL`, the analysis workload does not.
const SPEC: &str = r#"
name = "failing"
[build]
sources = ["main.c"]
[run]
program = "./failing"
args = ["{options}"]
timeout = 1
[measure]
repetitions = 1
[[workload]]
name = "real"
env = { FAIL = "1" }
[[workload]]
name = "quick"
purpose = "analysis"
[[option]]
name = "HEAVY"
on = ["--heavy"]
[[option]]
name = "ITER"
values = [1, 2, 4, 8]
arg = ["--iter={value}"]
"#;

/// `knobs ARGS --spec SPEC --store STORE`, expected to fail: its stderr.
fn fails(args: &[&str], spec: &Path, store: &Path) -> String {
    let out = knobs()
        .args(args)
        .arg("--spec")
        .arg(spec)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

/// The error names both failed configurations, why they failed, and the flag, in one line.
fn assert_names_the_failures(stderr: &str) {
    let error = stderr
        .lines()
        .find(|l| l.starts_with("knobs: error: "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    for part in [
        "configurations failed",
        "`HEAVY,ITER=8` (",
        "SIGSEGV",
        "`HEAVY,ITER=4` (",
        "timed out",
        "--allow-failed",
    ] {
        assert!(error.contains(part), "`{part}` missing from {error}");
    }
}

/// `knobs ARGS --allow-failed --json`, which must succeed: its report.
fn allowed(args: &[&str], spec: &Path, store: &Path) -> serde_json::Value {
    succeeds(
        knobs()
            .args(args)
            .args(["--allow-failed", "--json", "--spec"])
            .arg(spec)
            .arg("--store")
            .arg(store),
    )
    .json()
}

/// What the model records as left out, and its terms' labels (all regions').
fn model_record(report: &serde_json::Value) -> (Vec<serde_json::Value>, Vec<String>) {
    let path = report["model_path"].as_str().unwrap();
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let unmeasured = file["provenance"]["unmeasured"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut labels = common::term_labels(&file);
    for region in file["regions"].as_array().into_iter().flatten() {
        labels.extend(common::term_labels(region));
    }
    (unmeasured, labels)
}

/// The terms a model's record of unmeasured cells leaves out, checking that the report
/// lists the same record.
fn left_out_terms(report: &serde_json::Value, unmeasured: &[serde_json::Value]) -> Vec<String> {
    assert!(!unmeasured.is_empty(), "{report}");
    assert_eq!(report["unmeasured"].as_array().unwrap(), unmeasured);
    unmeasured
        .iter()
        .flat_map(|u| u["terms_left_out"].as_array().unwrap())
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

/// Every term the model leaves out names HEAVY with a failed ITER value, none of them is in
/// the model, and the report lists the same as the model.
fn assert_left_out(report: &serde_json::Value) {
    let (unmeasured, labels) = model_record(report);
    let left_out = left_out_terms(report, &unmeasured);
    for term in ["HEAVY·ITER=4", "HEAVY·ITER=8"] {
        assert!(
            left_out.iter().any(|t| t == term),
            "{term} not in {left_out:?}"
        );
    }
    for term in &left_out {
        assert!(!labels.iter().any(|l| l == term), "{term} in {labels:?}");
    }
}

#[test]
fn configcrusher_refuses_a_model_from_failed_configurations_unless_allowed() {
    let (dir, spec) = c_subject(MAIN, SPEC);
    let store = dir.path().join("knobs.db");
    let model = dir.path().join("failing.configcrusher.json");
    assert_names_the_failures(&fails(&["crush"], &spec, &store));
    assert!(!model.exists());

    // The native program, for the correction: compared where the instrumented build ran.
    common::native_build(dir.path(), "failing", &[]);
    let report = allowed(&["crush"], &spec, &store);
    assert_left_out(&report);
    let pairs = report["native_correction"]["pairs"].as_array();
    assert_eq!(pairs.map(Vec::len), Some(6), "{report}");
    // As text: each region with unmeasured cells is a warning naming its terms.
    let text = succeeds(
        knobs()
            .args(["crush", "--allow-failed", "--spec"])
            .arg(&spec)
            .arg("--store")
            .arg(&store),
    );
    assert!(
        text.stderr
            .lines()
            .any(|l| l.starts_with("WARNING: region") && l.contains("HEAVY·ITER=8")),
        "{}",
        text.stderr
    );
    // Whoever reads the model later is told too: `model show` and `predict` warn of the
    // configurations no run measured and the terms left out for them.
    let model_path = report["model_path"].as_str().unwrap();
    let shown = succeeds(knobs().args(["model", "show", model_path])).text();
    assert!(
        shown.lines().any(
            |l| l.starts_with("warning: built with failed configurations")
                && l.contains("HEAVY·ITER=8")
        ),
        "{shown}"
    );
    let predicted = succeeds(knobs().args(["predict", model_path, "HEAVY,ITER=8"]));
    assert!(
        predicted
            .stderr
            .contains("predictions for those configurations are not measured"),
        "{}",
        predicted.stderr
    );
}

#[test]
fn dynamic_confirmation_refuses_failed_observations_unless_allowed() {
    let (dir, spec) = c_subject(MAIN, SPEC);
    let store = dir.path().join("knobs.db");
    let stderr = fails(&["crush", "--dynamic-confirmation"], &spec, &store);
    assert_names_the_failures(&stderr);
    assert!(stderr.contains("dynamic confirmation"), "{stderr}");

    let report = allowed(&["crush", "--dynamic-confirmation"], &spec, &store);
    let confirmation = &report["analysis"]["confirmation"];
    assert_eq!(confirmation["failed"].as_array().unwrap().len(), 2);
    assert_eq!(confirmation["dropped"].as_array().unwrap().len(), 0);
    assert_left_out(&report);
}

#[test]
fn splat_refuses_a_model_from_failed_configurations_unless_allowed() {
    let (dir, spec) = c_subject(MAIN, SPEC);
    // SPLat measures the program as the spec runs it.
    common::native_build(dir.path(), "failing", &[]);
    let store = dir.path().join("knobs.db");
    assert_names_the_failures(&fails(&["splat"], &spec, &store));
    assert!(!dir.path().join("failing.splat.json").exists());
    let report = allowed(&["splat"], &spec, &store);
    assert_left_out(&report);
}

#[test]
fn family_refuses_a_model_from_failed_configurations_unless_allowed() {
    let (dir, spec) = c_subject(MAIN, SPEC);
    let store = dir.path().join("knobs.db");
    assert_names_the_failures(&fails(&["family"], &spec, &store));
    assert!(!dir.path().join("failing.family.json").exists());
    let report = allowed(&["family"], &spec, &store);
    // The native program is not built: no overhead correction, and a note says how to get
    // one.
    assert!(
        report["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("no native program to correct by")
            && n.as_str().unwrap().contains("build it")),
        "{report}"
    );
    let (unmeasured, _) = model_record(&report);
    let left_out = left_out_terms(&report, &unmeasured);
    // The variant simulator's runs with ITER=4 and ITER=8 failed: no term of either value
    // is measured.
    assert!(
        left_out.iter().any(|t| t.contains("ITER=4")),
        "{left_out:?}"
    );
    assert!(
        left_out.iter().any(|t| t.contains("ITER=8")),
        "{left_out:?}"
    );
}

#[test]
fn comprex_refuses_a_model_from_failed_configurations() {
    let (dir, spec) = c_subject(MAIN, SPEC);
    let store = dir.path().join("knobs.db");
    let stderr = fails(&["comprex", "--overhead-correction", "0"], &spec, &store);
    assert_names_the_failures(&stderr);
    assert!(!dir.path().join("failing.comprex.json").exists());
}

/// [`SPEC`] with one workload, of no purpose, without `FAIL`: the taint runs use it.
fn one_workload() -> String {
    let workloads = "[[workload]]\nname = \"real\"\nenv = { FAIL = \"1\" }\n[[workload]]\nname = \"quick\"\npurpose = \"analysis\"\n";
    assert!(SPEC.contains(workloads));
    SPEC.replace(workloads, "[[workload]]\nname = \"real\"\n")
}

#[test]
fn comprex_says_what_it_taints_with_names_its_limit_and_prints_short_partitions() {
    let (dir, spec) = c_subject(MAIN, &one_workload());
    // Too few runs: the error names the flag and its value, in one line.
    let out = knobs()
        .args([
            "comprex",
            "--overhead-correction",
            "0",
            "--max-runs",
            "2",
            "--spec",
        ])
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("knobs: error: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(error.contains("gave up after 2 taint runs"), "{error}");
    assert!(error.contains("--max-runs 2"), "{error}");

    let ran = succeeds(
        knobs()
            .args(["comprex", "--overhead-correction", "0", "--spec"])
            .arg(&spec),
    );
    let stderr = ran.stderr;
    // Which workload the taint runs use, and how to give a smaller one.
    assert!(
        stderr.contains("the taint runs use the measured workload `real`"),
        "{stderr}"
    );
    assert!(stderr.contains("purpose = \"analysis\""), "{stderr}");
    assert!(stderr.contains("--analysis-workload"), "{stderr}");
    // Progress is a start line and a summary, not a line per taint run.
    assert!(
        !stderr.lines().any(|l| l.starts_with("taint run")),
        "{stderr}"
    );
    assert!(stderr.contains("(at most 256, --max-runs)"), "{stderr}");
    // The model records what one profiler sample is worth (100 µs by default).
    let model: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("failing.comprex.json")).unwrap())
            .unwrap();
    assert_eq!(model["provenance"]["profile_period_seconds"], 0.0001);
    // A value indicator is not followed by the values it excludes.
    let partitions: Vec<&str> = stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("region "))
        .collect();
    assert!(
        partitions.iter().any(|l| l.contains("HEAVY ∧ ITER=4")),
        "{partitions:?}"
    );
    for line in &partitions {
        for cube in line.split(['|', '∨']) {
            let valued = cube.contains("ITER=");
            assert!(!(valued && cube.contains("ITER≠")), "{line}");
        }
    }
}
