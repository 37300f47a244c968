//! `knobs crush` on the running example (real clang-19, real runs) and on bad input.

mod common;

use std::path::{Path, PathBuf};

use common::{c_subject, knobs, knobs_ok};
use predicates::prelude::*;
use predicates::str::contains;

/// A copy of examples/running-example in a temporary directory, with a 4 ms time unit.
fn running_example() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/running-example");
    std::fs::copy(example.join("main.c"), dir.path().join("main.c")).unwrap();
    let spec = std::fs::read_to_string(example.join("knobs.toml"))
        .unwrap()
        .replace("FIG2_UNIT_MS = \"5\"", "FIG2_UNIT_MS = \"4\"");
    let path = common::write_spec(dir.path(), &spec);
    (dir, path)
}

fn term_labels(model: &Path) -> Vec<String> {
    common::term_labels(&serde_json::from_slice(&std::fs::read(model).unwrap()).unwrap())
}

#[test]
fn crush_models_the_running_example_and_resumes() {
    let (dir, spec) = running_example();
    knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stderr(contains("irrelevant options: J"))
        .stderr(contains(
            "configurations to measure: 8 of 1024 (lower bound 8)",
        ))
        .stderr(contains("8 of 8 configurations measured"))
        .stderr(contains("region entries per run (RC): "))
        .stderr(contains(
            "region times read by the wall clock: wall (the spec's metric is wall)",
        ))
        .stdout(contains("region r"));
    // The interactions' terms: each local model fits its region's measured configurations
    // exactly (a term is left out only where it is exactly 0), and A·B and D·E·F each hold
    // a sleep of their own.
    let model = dir.path().join("fig2.configcrusher.json");
    let terms = term_labels(&model);
    for t in ["A·B", "A·C", "D·E·F"] {
        assert!(terms.iter().any(|l| l == t), "{t} missing from {terms:?}");
    }
    assert!(!terms.iter().any(|l| l.contains('J')), "{terms:?}");
    // The model predicts configurations like any other.
    let configs = dir.path().join("configs.csv");
    std::fs::write(
        &configs,
        "A,B,C,D,E,F,G,H,I,J\n0,0,0,0,0,0,0,0,0,0\n1,1,1,1,1,1,1,1,1,1\n",
    )
    .unwrap();
    let out = knobs()
        .arg("predict")
        .arg(&model)
        .arg(&configs)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let predictions: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    // 1 unit with nothing selected, 1 + 3·3 + 5 + 4.5 = 19.5 units with everything. The
    // model's values are checked exactly on the test clock in crates/configcrusher/tests
    // (running_example.rs); here the runs sleep for real, so only what load cannot break:
    // each configuration is predicted from its regions' times in the measured runs (every
    // local model fits its region's configurations), a sleep is never measured shorter than
    // asked for, so neither prediction is below its units (less 1 ms for the probes' costs
    // the timers take out). And both are in seconds, far below the spec's 30 s timeout, which
    // every measured run ended within; a model in milliseconds would be 1000 times larger.
    let unit = 0.004;
    assert_eq!(predictions.len(), 2, "{text}");
    for (p, units) in predictions.iter().zip([1.0, 19.5]) {
        assert!(
            *p >= units * unit - 0.001 && *p < 30.0,
            "{units} units of {unit} s: {predictions:?}"
        );
    }
    // A second run reuses every measurement.
    knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stderr(contains("(8 already in the store), 0 new runs"));
    // The runs hold both clocks: another clock rebuilds the model from the same runs.
    let out = knobs()
        .args(["crush", "--region-clock", "cpu", "--json", "-o"])
        .arg(dir.path().join("cpu.json"))
        .arg("--spec")
        .arg(&spec)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["region_clock"]["clock"], "cpu", "{report}");
    assert_eq!(report["measurement"]["runs"], 0, "{report}");
    let cpu_model: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("cpu.json")).unwrap()).unwrap();
    assert_eq!(cpu_model["provenance"]["region_clock"], "cpu");
    regions_are_shown_and_traced(&spec, &model);
    crush_reports_bad_input_in_one_line();
    failed_runs_are_kept_until_retried();
}

/// Runs that time out are stored as failures; a rerun keeps them, `--retry-failed` measures
/// them again (the timeout is not part of what a measurement means).
fn failed_runs_are_kept_until_retried() {
    let (_dir, spec) = running_example();
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text.replace("timeout = 30", "timeout = 0.001")).unwrap();
    let out = knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "no model without measurements");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("timed out"), "{stderr}");
    std::fs::write(&spec, &text).unwrap();
    knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .assert()
        .code(2)
        .stderr(contains(
            "0 of 8 configurations measured (8 already in the store)",
        ));
    knobs()
        .args(["crush", "--retry-failed", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stderr(contains("8 of 8 configurations measured"));
}

/// Run after the model test, not beside it: compiling C next to timed runs disturbs them.
/// `model show` names each region's function; `results show` of the program points at the
/// variant crush measured; `knobs trace` writes a measured configuration's region times.
fn regions_are_shown_and_traced(spec: &Path, model: &Path) {
    let out = knobs().args(["model", "show"]).arg(model).output().unwrap();
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains("region r0 main() main.c:"), "{shown}");
    assert!(shown.contains("; terms in ms"), "{shown}");
    let out = knobs()
        .args(["results", "show", "--spec"])
        .arg(spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let variant = stderr
        .lines()
        .filter(|l| l.starts_with("note: 8 configurations measured under variant "))
        .find_map(|l| l.split(": --variant ").nth(1))
        .unwrap_or_else(|| panic!("no note of the variant: {stderr}"))
        .to_string();
    let out = knobs()
        .args(["results", "show", "--json", "--variant", &variant, "--spec"])
        .arg(spec)
        .output()
        .unwrap();
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let configuration = results["configurations"][0]["configuration"]
        .as_str()
        .unwrap()
        .to_string();
    let trace = spec.with_file_name("trace.json");
    knobs()
        .args(["trace", "--variant", &variant, "--spec"])
        .arg(spec)
        .arg("--model")
        .arg(model)
        .args(["-o"])
        .arg(&trace)
        .arg(&configuration)
        .assert()
        .success()
        .stderr(contains("3 runs of"));
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let slices: Vec<&serde_json::Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert!(!slices.is_empty(), "{trace}");
    assert!(slices.iter().all(|e| e["dur"].as_f64().unwrap() >= 0.0));
    assert!(
        slices
            .iter()
            .any(|e| e["name"].as_str().unwrap().contains("main() main.c:")),
        "{trace}"
    );
    // The report reads crush's variant (the program itself has no runs) and its regions.
    let page = spec.with_file_name("report.html");
    knobs()
        .args(["report", "--spec"])
        .arg(spec)
        .arg("--model")
        .arg(model)
        .arg("-o")
        .arg(&page)
        .assert()
        .success()
        .stderr(contains("reporting variant configcrusher:"));
    let html = std::fs::read_to_string(&page).unwrap();
    for part in [
        "data-chart=\"regions\"",
        "data-chart=\"predicted-vs-measured\"",
        "8 measured configurations",
        "r0 · main() · ",
        "WORK(1);",
    ] {
        assert!(html.contains(part), "the report lacks `{part}`");
    }
    let tracks: std::collections::BTreeSet<u64> =
        slices.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    assert_eq!(tracks.len(), 3, "one track per run");
}

fn crush_reports_bad_input_in_one_line() {
    let (dir, spec) = running_example();
    let text = std::fs::read_to_string(&spec).unwrap();
    let cases = [
        (
            text.replace("[build]\nsources = [\"main.c\"]\n", ""),
            "no [build] section",
        ),
        (
            text.replace(
                "on = [\"-J\"]",
                "on = [\"-J\"]\nsource = { global = \"no_such_global\" }",
            ),
            "global `no_such_global`",
        ),
        (
            text.replace("main.c", "broken.c"),
            "broken.c: does not compile",
        ),
        (
            text.replace("sources = [\"main.c\"]", "bitcode = \"junk.bc\""),
            "junk.bc",
        ),
    ];
    std::fs::write(dir.path().join("junk.bc"), "not bitcode at all").unwrap();
    std::fs::write(
        dir.path().join("broken.c"),
        "int main(void) { return undefined_name; }\n",
    )
    .unwrap();
    for (text, message) in cases {
        std::fs::write(&spec, &text).unwrap();
        let out = knobs()
            .args(["crush", "--spec"])
            .arg(&spec)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(message), "expected `{message}` in {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

/// `knobs comprex` on the Comprex paper's running example: the taint runs find the paper's
/// partitions in 4 configurations and the model has its interactions.
#[test]
fn comprex_models_the_papers_running_example() {
    let dir = tempfile::tempdir().unwrap();
    // In a subdirectory, named relatively: the builds' paths must not depend on where
    // knobs was started (runs start in the spec's directory).
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    common::copy_example("comprex-example", &["main.c", "knobs.toml"], &sub);
    let spec = sub.join("knobs.toml");
    knobs()
        .current_dir(dir.path())
        .args(["comprex", "--spec", "sub/knobs.toml"])
        .assert()
        .success()
        .stderr(contains("4 configurations of 16"))
        .stderr(contains("region bar: A ∧ C | A ∧ ¬C | ¬A ∧ C | ¬A ∧ ¬C"))
        .stderr(contains("region foo: A ∧ B | A ∧ ¬B | ¬A"))
        .stderr(contains("region main: A | ¬A"))
        .stdout(contains("region bar"));
    // A·C: 30 units of 2 ms, far above Comprex's 1 ms pruning however late the sleeps wake.
    // A·B (3 units) is nearer it: the partition of foo above shows where A and B meet, and
    // crates/comprex/tests/pipeline_example.rs checks the terms' values exactly.
    let path = sub.join("comprex-fig2.comprex.json");
    let terms = term_labels(&path);
    assert!(terms.iter().any(|l| l == "A·C"), "{terms:?}");
    // A local model per method, whichever of their terms the pruning kept.
    let model: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let regions: Vec<&str> = model["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for id in ["bar", "foo", "main"] {
        assert!(regions.contains(&id), "no local model of {id}: {regions:?}");
    }
    // Table IV: coarser regions need more configurations (program: one region, the cross
    // product of all decisions), finer ones no fewer than the paper's per-method 4 — all
    // from one exploration, as the paper computes it.
    knobs()
        .current_dir(dir.path())
        .args(["comprex", "--granularity-table", "--spec", "sub/knobs.toml"])
        .assert()
        .success()
        .stdout(contains("| program | 1 | 6 |"))
        .stdout(contains("| method | 3 | 4 |"))
        .stdout(contains("| statement | 10 | 4 |"))
        .stdout(contains("From one exploration: 6 taint runs"));
    let out = knobs()
        .current_dir(dir.path())
        .args([
            "comprex",
            "--granularity-table",
            "--json",
            "--spec",
            "sub/knobs.toml",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let table: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = table["granularity_table"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(
            row["configurations"], 6,
            "one exploration's taint runs: {row}"
        );
    }
    knobs()
        .args(["comprex", "--granularity", "sideways", "--spec"])
        .arg(&spec)
        .assert()
        .code(2)
        .stderr(contains("invalid value 'sideways' for '--granularity"));
}

#[test]
fn crush_explains_why_options_interact_without_measuring() {
    let (dir, spec) = running_example();
    knobs()
        .args(["crush", "--explain", "A,B", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stdout(contains("tainted decisions are influenced by all of {A,B}"))
        .stdout(contains("why A:"))
        .stdout(contains("why B:"))
        // Each chain ends at the option's global.
        .stdout(contains("loads from").and(contains("memory @A")))
        .stdout(contains("memory @B"));
    // D and E meet only in decisions under D (lines 23-32), never with A.
    knobs()
        .args(["crush", "--explain", "A,D", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stdout(contains("0 of "));
    assert!(
        !dir.path().join("knobs.db").exists(),
        "--explain measures nothing"
    );
    knobs()
        .args(["crush", "--explain", "A,Z", "--spec"])
        .arg(&spec)
        .assert()
        .code(2)
        .stderr(contains("no option `Z`"));
}

/// Options that meet in a function's calling context meet in every decision under it; the
/// explanation says where they enter the context together.
#[test]
fn crush_explains_where_options_enter_a_calling_context_together() {
    let (_dir, spec) = c_subject(
        r#"
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
volatile int sink;
static void encode(void) {
    for (int i = 0; i < 100; i++)
        if (C) sink += i;
}
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "-A")) A = 1;
        if (!strcmp(argv[k], "-B")) B = 1;
        if (!strcmp(argv[k], "-C")) C = 1;
    }
    if (A)
        if (B)
            encode();
    return 0;
}
"#,
        r#"
name = "contexts"
[build]
sources = ["main.c"]
[run]
program = "./contexts"
args = ["{options}"]
[[workload]]
name = "default"
[[option]]
name = "A"
on = ["-A"]
[[option]]
name = "B"
on = ["-B"]
[[option]]
name = "C"
on = ["-C"]
"#,
    );
    knobs()
        .args(["crush", "--explain", "A,B", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        // `if (B)` under `if (A)`, and `if (C)` in encode.
        .stdout(contains(
            "2 of 3 tainted decisions are influenced by all of {A,B}",
        ))
        .stdout(contains(
            "all of {A,B} are in the calling context of 1 functions",
        ))
        .stdout(contains("main.c:19 in main: 1 of the 2 decisions"))
        .stdout(contains("memory @A").and(contains("memory @B")));
    // All three options meet under `encode`: nothing to compress, and crush says so.
    knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stderr(contains("configurations to measure: 8 of 8"))
        .stderr(contains(
            "note: the analysis found 3 options in one interaction, so ConfigCrusher measures \
             every configuration",
        ));
}

/// Members of an alternative group never hold together: the local models leave out the
/// products of two of them (which the constraints' empty cells would otherwise produce).
#[test]
fn crush_models_have_no_products_of_alternatives() {
    let (_dir, spec) = c_subject(
        r#"
#include <string.h>
__attribute__((annotate("knobs:option=X1"))) int X1;
__attribute__((annotate("knobs:option=X2"))) int X2;
__attribute__((annotate("knobs:option=D"))) int D;
volatile long sink;
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "-1")) X1 = 1;
        if (!strcmp(argv[k], "-2")) X2 = 1;
        if (!strcmp(argv[k], "-d")) D = 1;
    }
    long n = X1 ? 100000 : (X2 ? 200000 : 300000);
    if (D) n += 50000;
    for (long i = 0; i < n; i++) sink += i;
    return 0;
}
"#,
        r#"
name = "alternatives"
[build]
sources = ["main.c"]
[run]
program = "./alternatives"
args = ["{options}"]
[measure]
repetitions = 1
[[workload]]
name = "default"
[[option]]
name = "X"
mandatory = true
[[option]]
name = "X1"
parent = "X"
on = ["-1"]
[[option]]
name = "X2"
parent = "X"
on = ["-2"]
[[group]]
kind = "alternative"
parent = "X"
members = ["X1", "X2"]
[[option]]
name = "D"
on = ["-d"]
"#,
    );
    knobs_ok(&["crush", "--spec"], &spec);
    // From the model file: `knobs crush` prints only the regions above 1 % of the largest
    // term, and the process's start-up, in the intercept, grows on a busy machine.
    let path = spec.with_file_name("alternatives.configcrusher.json");
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    // The region where the alternatives meet D (X1 is the baseline of the group: the terms
    // name X2).
    let region = file["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["options"] == serde_json::json!(["X1", "X2", "D"]))
        .unwrap_or_else(|| panic!("no region of X1, X2 and D: {file}"));
    let terms = term_labels(&path);
    assert!(terms.iter().any(|l| l.contains("X2")), "{terms:?}");
    for t in region["terms"].as_array().unwrap() {
        let options = t["options"].as_array().unwrap();
        assert!(
            !(options.contains(&"X1".into()) && options.contains(&"X2".into())),
            "{region}"
        );
    }
    assert!(
        !terms.iter().any(|l| l.contains("X1") && l.contains("X2")),
        "{terms:?}"
    );
}

/// A compressor in miniature: `-d` would run a decompressor in which A and B meet; the
/// workload never passes it.
const FIXED_MAIN: &str = r#"
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
int decompress;
int state;
char *outname;
volatile long sink;
static void spin(long n) { for (long i = 0; i < n; i++) sink += i; }
static void unpack(void) { if (B) state = A; }
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "-a")) A = 1;
        if (!strcmp(argv[k], "-b")) B = 1;
        if (!strcmp(argv[k], "-d")) decompress = 1;
    }
    if (decompress) unpack();
    if (outname) spin(10);
    if (state) spin(1000);
    if (A) spin(200000);
    if (B) spin(100000);
    return 0;
}
"#;

fn fixed_spec(args: &str, fixed: &str) -> String {
    format!(
        r#"
name = "fixed"
[build]
sources = ["main.c"]
# Only the settings written here (tests/fixed_cli.rs covers inferred ones).
infer_fixed = false
[build.fixed]
{fixed}
[run]
program = "./fixed"
args = [{args}]
[measure]
repetitions = 1
[[workload]]
name = "default"
[[option]]
name = "A"
on = ["-a"]
[[option]]
name = "B"
on = ["-b"]
"#
    )
}

#[test]
fn fixed_settings_remove_interactions_of_code_that_never_runs_and_are_checked() {
    let crush = |spec: &Path| knobs_ok(&["crush", "--spec"], spec).stderr;
    // Without fixed settings, A and B meet in the decompressor's state: 4 of 4.
    let (_d0, spec) = c_subject(FIXED_MAIN, &fixed_spec("\"{options}\"", ""));
    let stderr = crush(&spec);
    assert!(
        stderr.contains("configurations to measure: 4 of 4"),
        "{stderr}"
    );

    // `decompress = 0`: the decompressor cannot run, A and B are independent: 2 of 4. A
    // pointer cannot be fixed: said, not ignored.
    let (_d1, spec) = c_subject(
        FIXED_MAIN,
        &fixed_spec("\"{options}\"", "decompress = 0\noutname = 0"),
    );
    let stderr = crush(&spec);
    assert!(
        stderr.contains("configurations to measure: 2 of 4"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fixed settings: 1 reads folded"),
        "{stderr}"
    );
    assert!(stderr.contains("1 checks of fixed settings"), "{stderr}");
    assert!(stderr.contains("no read of outname was folded"), "{stderr}");

    // A workload that does pass -d contradicts the setting: every run says so and crush
    // fails with one line naming the setting and the read.
    let (_d2, spec) = c_subject(
        FIXED_MAIN,
        &fixed_spec("\"-d\", \"{options}\"", "decompress = 0"),
    );
    knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .assert()
        .code(2)
        .stderr(contains(
            "[build.fixed] says `decompress` is 0 in every run, but the read at",
        ))
        .stderr(contains("main.c:17 saw 1 (1 of its reads)"));

    // A name the program does not define.
    let (_d3, spec) = c_subject(FIXED_MAIN, &fixed_spec("\"{options}\"", "nosuch = 1"));
    knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .assert()
        .code(2)
        .stderr(contains(
            "[build.fixed] names `nosuch`, which is not a global the program defines",
        ));
}

/// `--json` prints the report on stdout for programs (the benchmark runner) to read, and
/// `--stop-after` reaches the stages before measuring.
#[test]
fn crush_reports_json_and_stops_after_a_stage() {
    let (dir, spec) = running_example();
    let json = |args: &[&str]| -> serde_json::Value {
        knobs_ok(&[&["crush", "--json"], args, &["--spec"]].concat(), &spec).json()
    };
    let analysed = json(&["--stop-after", "analyse"]);
    assert_eq!(analysed["configurations"]["measured"], 8);
    assert_eq!(analysed["configurations"]["total"], 1024);
    assert_eq!(analysed["configurations"]["lower_bound"], 8);
    assert_eq!(analysed["analysis"]["irrelevant"], serde_json::json!(["J"]));
    assert_eq!(analysed["compressed"].as_array().unwrap().len(), 8);
    assert!(analysed["instrumentation"].is_null());
    assert!(!dir.path().join("knobs.db").exists(), "nothing measured");

    let instrumented = json(&["--stop-after", "instrument"]);
    let binary = instrumented["instrumentation"]["binary"].as_str().unwrap();
    assert!(Path::new(binary).exists(), "{binary}");
    assert!(instrumented["measurement"].is_null());

    let modelled = json(&[]);
    assert_eq!(modelled["measurement"]["configurations"], 8);
    let model = modelled["model_path"].as_str().unwrap();
    assert!(Path::new(model).exists());
    assert!(
        modelled["overhead"]["region_entries_per_run"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        modelled["variant"]
            .as_str()
            .unwrap()
            .starts_with("configcrusher:")
    );
}

/// An option the spec gives no `source` (and no annotation names) is one the analysis cannot
/// see: an error naming it, or with `--allow-unsourced` a warning — never "irrelevant".
#[test]
fn an_option_without_a_source_is_never_reported_irrelevant() {
    let (_dir, spec) = c_subject(
        r#"
#include <string.h>
__attribute__((annotate("knobs:option=fast"))) int fast;
int dedup;
volatile long sink;
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--fast")) fast = 1;
        if (!strcmp(argv[k], "--dedup")) dedup = 1;
    }
    long n = fast ? 1000 : 100000;
    if (dedup) n *= 2;
    for (long i = 0; i < n; i++) sink += i;
    return 0;
}
"#,
        r#"
name = "unsourced"
[build]
sources = ["main.c"]
infer_fixed = false
[run]
program = "./unsourced"
args = ["{options}"]
[[workload]]
name = "default"
[[option]]
name = "fast"
on = ["--fast"]
[[option]]
name = "dedup"
on = ["--dedup"]
"#,
    );
    let out = knobs()
        .args(["crush", "--stop-after", "analyse", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("cannot see option dedup"), "{stderr}");
    assert!(stderr.contains("--allow-unsourced"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");

    let stderr = knobs_ok(
        &[
            "crush",
            "--stop-after",
            "analyse",
            "--allow-unsourced",
            "--spec",
        ],
        &spec,
    )
    .stderr;
    assert!(
        stderr.contains("WARNING: options the analysis cannot see") && stderr.contains("dedup"),
        "{stderr}"
    );
    assert!(stderr.contains("irrelevant options: none"), "{stderr}");
}
