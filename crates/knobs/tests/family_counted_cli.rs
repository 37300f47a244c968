//! `knobs family` in counted instructions (`metric = "instructions"`): the variant simulator
//! counts its own IR instructions per calling context, and its model is compared with the
//! counted brute force — every configuration run in the counting build with no probe
//! (`instrumented::counting::plain_counting_build`), the same unit. Counts do not depend on
//! the machine, so the bounds are tight.

mod common;

use std::path::Path;

use common::{knobs, succeeds};

/// A bundled example copied to a temporary directory.
fn example(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    common::copy_example(name, &["main.c", "knobs.toml"], dir.path());
    let spec = dir.path().join("knobs.toml");
    (dir, spec)
}

fn family(spec: &Path, extra: &[&str]) -> serde_json::Value {
    succeeds(
        knobs()
            .args(["family", "--json", "--spec"])
            .arg(spec)
            .args(extra),
    )
    .json()
}

/// Where the paper's assumption holds (every function's count is the same whatever ran
/// before), one run with every feature gives the counted model of all 8 configurations,
/// exact but for the few instructions of the calls of the features' functions (in their
/// callers' own counts); the check of the assumption finds those and makes it exact.
#[test]
fn the_printer_drivers_counted_model_matches_the_counted_brute_force() {
    let (dir, spec) = example("family-printer");
    let paper = dir.path().join("paper.json");
    let report = family(
        &spec,
        &["--constant-cost", "assume", "-o", paper.to_str().unwrap()],
    );
    assert_eq!(report["configurations"].as_array().unwrap().len(), 1);
    assert_eq!(
        report["call_tree_clock"]["clock"], "instructions",
        "{report}"
    );
    assert!(report["native_measurement"].is_null(), "{report}");
    assert!(report["cost_dependence"].is_null(), "{report}");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("no native time to correct them by"),
        "{notes}"
    );
    let text = std::fs::read_to_string(&paper).unwrap();
    assert!(text.contains("LLVM IR instructions, counted"), "{text}");

    let truth = common::counted_truth(&spec, &dir.path().join("truth"));
    assert_eq!(truth.len(), 8);
    let (mape, worst) = common::model_errors(&spec, &paper, &truth);
    eprintln!("counted printer driver, the paper's model: MAPE {mape:.5} %, worst {worst:.5} %");
    assert!(worst < 0.1, "MAPE {mape:.5} %, worst {worst:.5} %");

    // Checked: only the callers' few instructions per call change, nothing worth naming.
    let report = family(&spec, &[]);
    let dependence = &report["cost_dependence"];
    assert_eq!(
        dependence["functions"],
        serde_json::json!([]),
        "{dependence}"
    );
    let model = dir.path().join("family-printer.family.json");
    let (mape, worst) = common::model_errors(&spec, &model, &truth);
    eprintln!("counted printer driver, checked: MAPE {mape:.7} %, worst {worst:.7} %");
    assert!(worst < 1e-9, "MAPE {mape} %, worst {worst} %");
}

/// Fast sets the match finder's depth before it runs: the paper's one-run model charges
/// every configuration Fast's shallow search (far off where Fast is deselected); the check
/// finds the context, names `find_matches` and Fast, and its model is exact.
#[test]
fn a_cost_an_option_sets_before_the_function_runs_is_found_and_modelled() {
    let (dir, spec) = example("family-level");
    let truth = common::counted_truth(&spec, &dir.path().join("truth"));
    assert_eq!(truth.len(), 8);

    let paper = dir.path().join("paper.json");
    family(
        &spec,
        &["--constant-cost", "assume", "-o", paper.to_str().unwrap()],
    );
    let (paper_mape, _) = common::model_errors(&spec, &paper, &truth);
    eprintln!("the paper's model: MAPE {paper_mape:.3} %");
    assert!(paper_mape > 20.0, "MAPE {paper_mape:.3} %");

    let ran = succeeds(knobs().args(["family", "--spec"]).arg(&spec));
    assert!(
        ran.stderr.contains(
            "depends on options: main>compress_block>find_matches>work (work): 44848 with every feature, +313600 without Fast"
        ),
        "{}",
        ran.stderr
    );
    let model = dir.path().join("family-level.family.json");
    let (mape, worst) = common::model_errors(&spec, &model, &truth);
    eprintln!("checked: MAPE {mape:.7} %, worst {worst:.7} %");
    assert!(worst < 1e-9, "MAPE {mape} %, worst {worst} %");

    let report = family(&spec, &[]);
    let dependence = &report["cost_dependence"];
    assert_eq!(
        dependence["options"],
        serde_json::json!(["Fast"]),
        "{dependence}"
    );
    assert_eq!(
        dependence["functions"],
        serde_json::json!(["work"]),
        "{dependence}"
    );
    assert!(
        dependence["contexts"][0]["context"]
            .as_str()
            .unwrap()
            .contains(">find_matches>"),
        "{dependence}"
    );
    // The fewest features, then one run per option deselected.
    assert_eq!(
        dependence["configurations"].as_array().unwrap().len(),
        4,
        "{dependence}"
    );
}
