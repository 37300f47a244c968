//! The native correction of ConfigCrusher and of Comprex (`--overhead-fit native`) on a
//! program whose probes cost something: a function entered 20,000 times a run. Each measured
//! configuration's region times are scaled to the native program's time in it, so over the
//! configurations it measured (all of them here) the model predicts on average exactly what
//! the native program took: the scale compares the program's own time in the instrumented
//! build, not the probes' cost, which no model term carries.
//!
//! Nothing here depends on the machine's speed: whatever the runs took, the model and the
//! native times it was scaled to must agree, which is arithmetic on what the store holds.

mod common;

use common::{c_subject, knobs, succeeds};

const MAIN: &str = r#"
#include <string.h>
__attribute__((annotate("knobs:option=HEAVY"))) int HEAVY;
volatile long sink;
static void work(long n) {
    for (long i = 0; i < n; i++) sink += i;
}
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++)
        if (!strcmp(argv[k], "--heavy")) HEAVY = 1;
    for (int i = 0; i < 20000; i++) work(HEAVY ? 200 : 100);
    return 0;
}
"#;

const SPEC: &str = r#"
name = "timers"
[build]
sources = ["main.c"]
[run]
program = "./timers"
args = ["{options}"]
[measure]
repetitions = 2
metric = "cpu"
[[workload]]
name = "w"
[[option]]
name = "HEAVY"
on = ["--heavy"]
"#;

/// Runs `knobs ARGS --json` on the program with its native build beside it, and returns the
/// model's mean prediction over the configurations in the report's `pairs` and the mean of
/// their native times (`native(pair)`).
fn mean_prediction_and_native(
    args: &[&str],
    pairs: impl Fn(&serde_json::Value) -> Option<&Vec<serde_json::Value>>,
    configuration: impl Fn(&serde_json::Value) -> &str,
    native: impl Fn(&serde_json::Value) -> f64,
) -> (f64, f64) {
    let (dir, spec) = c_subject(MAIN, SPEC);
    common::native_build(dir.path(), "timers", &[]);
    let report = succeeds(
        knobs()
            .args(args)
            .args(["--json", "--spec"])
            .arg(&spec)
            .arg("--store")
            .arg(dir.path().join("knobs.db")),
    )
    .json();
    let pairs = pairs(&report).unwrap_or_else(|| panic!("no native correction: {report}"));
    assert_eq!(pairs.len(), 2, "{report}");
    let csv = dir.path().join("measured.csv");
    let mut text = String::from("HEAVY\n");
    let mut mean_native = 0.0;
    for p in pairs {
        text.push_str(if configuration(p) == "HEAVY" {
            "1\n"
        } else {
            "0\n"
        });
        mean_native += native(p) / pairs.len() as f64;
    }
    std::fs::write(&csv, text).unwrap();
    let model = report["model_path"].as_str().unwrap();
    let predicted = succeeds(knobs().args(["predict", model]).arg(&csv)).text();
    let predictions: Vec<f64> = predicted
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(predictions.len(), 2, "{predicted}");
    (predictions.iter().sum::<f64>() / 2.0, mean_native)
}

fn assert_same(model: f64, native: f64) {
    assert!(
        (model - native).abs() <= 1e-6 * native,
        "the model predicts {model} s on average, the native program took {native} s"
    );
}

#[test]
fn configcrusher_predicts_the_native_time_of_the_configurations_it_measured() {
    let (model, native) = mean_prediction_and_native(
        &["crush"],
        |r| r["native_correction"]["pairs"].as_array(),
        |p| p["configuration"].as_str().unwrap(),
        |p| p["native"].as_f64().unwrap(),
    );
    assert_same(model, native);
}

#[test]
fn comprex_corrected_by_native_runs_predicts_the_native_time_of_the_configurations_it_profiled() {
    let (model, native) = mean_prediction_and_native(
        &["comprex", "--overhead-fit", "native"],
        |r| r["overhead_correction"]["pairs"].as_array(),
        |p| p[0].as_str().unwrap(),
        |p| p[2].as_f64().unwrap(),
    );
    assert_same(model, native);
}
