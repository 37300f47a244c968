//! Fixed settings found by themselves (`knobs crush` without a hand-written `[build.fixed]`):
//! a global the workload never changes is inferred from the program's own runs and lets the
//! analysis drop code no run reaches (fewer configurations); one that the real workload
//! contradicts is dropped and the analysis redone, with a note naming it; the spec's own
//! `[build.fixed]` and `infer_fixed = false` override the inference. Real clang-19, real runs.

mod common;

use std::path::{Path, PathBuf};

/// `decompress` is never set by the workload (no `-d`); under it A and B interact. The real
/// workload sets BIG, which the analysis workload does not: `big_input` looks fixed in the
/// observation runs but is not.
const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static int name

OPTION(A);
OPTION(B);

int decompress;
int big_input;

static void work(int ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-A")) A = 1;
        if (!strcmp(argv[i], "-B")) B = 1;
        if (!strcmp(argv[i], "-d")) decompress = 1;
    }
    if (getenv("BIG"))
        big_input = 1;
    if (decompress) {
        if (A && B) work(5);
        return 0;
    }
    if (A) work(2);
    if (B) work(3);
    if (BIG_CHECK && big_input && A && B) work(4);
    return 0;
}
"#;

fn spec(build_extra: &str) -> String {
    format!(
        r#"
name = "inferred"
[build]
sources = ["main.c"]
{build_extra}
[run]
program = "./inferred"
args = ["{{options}}"]
[measure]
repetitions = 2
[[workload]]
name = "real"
env = {{ BIG = "1" }}
[[workload]]
name = "quick"
purpose = "analysis"
[[option]]
name = "A"
on = ["-A"]
[[option]]
name = "B"
on = ["-B"]
"#
    )
}

/// The program (with `BIG_CHECK` 0 or 1) and a spec in a temporary directory.
fn subject(big_check: bool, build_extra: &str) -> (tempfile::TempDir, PathBuf) {
    let program = PROGRAM.replace("BIG_CHECK", if big_check { "1" } else { "0" });
    common::c_subject(&program, &spec(build_extra))
}

fn crush(spec: &Path, extra: &[&str]) -> serde_json::Value {
    crush_with_stderr(spec, extra).0
}

/// The report, and what `knobs crush` wrote on stderr.
fn crush_with_stderr(spec: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let ran = common::knobs_ok(&[&["crush", "--json"], extra, &["--spec"]].concat(), spec);
    (ran.json(), ran.stderr)
}

fn inferred(report: &serde_json::Value) -> Vec<(String, i64)> {
    report["fixed"]["inferred"]["fixed"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s["global"].as_str().unwrap().to_string(),
                        s["value"].as_i64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_setting_no_run_changes_is_inferred_and_compresses() {
    let (_dir, spec) = subject(false, "");
    let report = crush(&spec, &["--stop-after", "analyse"]);
    assert!(
        inferred(&report).contains(&("decompress".to_string(), 0)),
        "{report}"
    );
    assert_eq!(
        report["analysis"]["interactions"],
        serde_json::json!([["A"], ["B"]]),
        "the decompressor's A·B is dead code: {report}"
    );
    assert_eq!(report["configurations"]["measured"], 2);
    let runs = report["fixed"]["inferred"]["configurations"]
        .as_array()
        .unwrap()
        .len();
    assert!(runs >= 2, "observed in {runs} configurations");

    // Without inference the decompressor is live and A, B interact.
    let (_dir, spec) = subject(false, "infer_fixed = false");
    let report = crush(&spec, &["--stop-after", "analyse"]);
    assert!(inferred(&report).is_empty());
    assert_eq!(
        report["analysis"]["interactions"],
        serde_json::json!([["A", "B"]])
    );
    assert_eq!(report["configurations"]["measured"], 4);

    // The spec's own value wins: with `-d` always given, only the decompressor runs.
    let (_dir, spec) = subject(false, "[build.fixed]\ndecompress = 1");
    let report = crush(&spec, &["--stop-after", "analyse"]);
    assert!(
        !inferred(&report).iter().any(|(g, _)| g == "decompress"),
        "{report}"
    );
    assert_eq!(
        report["analysis"]["interactions"],
        serde_json::json!([["A", "B"]])
    );

    // `not_fixed` keeps a global out of the inference.
    let (_dir, spec) = subject(false, "not_fixed = [\"decompress\"]");
    let report = crush(&spec, &["--stop-after", "analyse"]);
    assert!(!inferred(&report).iter().any(|(g, _)| g == "decompress"));
}

#[test]
fn an_inference_a_run_contradicts_is_dropped_and_the_analysis_redone() {
    let (dir, spec) = subject(true, "");
    let (report, stderr) = crush_with_stderr(&spec, &[]);
    // One line for the setting, not one per configuration that contradicted it.
    assert_eq!(
        stderr
            .matches("the inferred fixed setting `big_input`")
            .count(),
        1,
        "{stderr}"
    );
    let notes: Vec<String> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let note = notes
        .iter()
        .find(|n| n.contains("`big_input`"))
        .unwrap_or_else(|| panic!("no note on big_input: {notes:?}"));
    assert!(note.contains("is no longer taken as fixed"), "{note}");
    assert!(note.contains("configuration `"), "{note}");
    // Redone without it: big_input's A·B is live again, decompress is still fixed.
    assert!(!inferred(&report).iter().any(|(g, _)| g == "big_input"));
    assert!(inferred(&report).contains(&("decompress".to_string(), 0)));
    assert_eq!(
        report["analysis"]["interactions"],
        serde_json::json!([["A", "B"]])
    );
    assert_eq!(report["measurement"]["failed"], serde_json::json!([]));
    assert!(dir.path().join("inferred.configcrusher.json").exists());
}
