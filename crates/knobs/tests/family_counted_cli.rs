//! `knobs family` in counted instructions (`metric = "instructions"`): the variant simulator
//! counts its own IR instructions per calling context, and its model is compared with the
//! counted brute force — every configuration run in the counting build with no probe
//! (`instrumented::counting::plain_counting_build`), the same unit. Counts do not depend on
//! the machine, so the bounds are tight.

mod common;

use std::path::Path;

use common::{knobs, succeeds};
use space::{Configuration, ValidConfigurations};

/// A bundled example copied to a temporary directory.
fn example(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    common::copy_example(name, &["main.c", "knobs.toml"], dir.path());
    let spec = dir.path().join("knobs.toml");
    (dir, spec)
}

/// Every valid configuration's count of the whole program, by the counting build with no
/// probe (the ground truth in the model's unit).
fn counted_truth(spec_path: &Path, work: &Path) -> Vec<(Configuration, f64)> {
    let spec = measure::SystemSpec::load(spec_path).unwrap();
    let settings = instrumented::Settings::new(work.to_path_buf());
    let (binary, _) = instrumented::counting::plain_counting_build(&spec, &settings).unwrap();
    let workload = spec.workload(None).unwrap();
    let valid = ValidConfigurations::new(&spec.space).unwrap();
    valid
        .iter()
        .map(|c| {
            let file = work.join("truth.tsv");
            let mut invocation = spec.invocation_of(binary.clone(), &c, workload).unwrap();
            invocation
                .env
                .push(("KNOBS_REGION_TIMES".into(), file.display().to_string()));
            let result = measure::runner::run(&invocation);
            assert!(result.outcome.is_ok(), "{}", result.stderr_tail);
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(text.contains("\nunit\tinstructions\n"), "{text}");
            let total = text
                .lines()
                .find_map(|l| l.strip_prefix("total\t"))
                .unwrap()
                .parse()
                .unwrap();
            (c, total)
        })
        .collect()
}

/// The model's mean absolute percentage error over `truth`, and the worst configuration's.
fn errors(spec_path: &Path, model: &Path, truth: &[(Configuration, f64)]) -> (f64, f64) {
    let spec = measure::SystemSpec::load(spec_path).unwrap();
    let names: Vec<String> = spec
        .space
        .ids()
        .map(|o| spec.space.option(o).name.clone())
        .collect();
    let bound = model::ModelFile::load(model).unwrap().bind(&names).unwrap();
    let percent: Vec<f64> = truth
        .iter()
        .map(|(c, t)| {
            let row: Vec<f64> = c.0.iter().map(|v| f64::from(*v)).collect();
            100.0 * (bound.predict(&row) - t).abs() / t
        })
        .collect();
    let worst = percent.iter().copied().fold(0.0, f64::max);
    (percent.iter().sum::<f64>() / percent.len() as f64, worst)
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
    let report = family(&spec, &["--constant-cost", "-o", paper.to_str().unwrap()]);
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

    let truth = counted_truth(&spec, &dir.path().join("truth"));
    assert_eq!(truth.len(), 8);
    let (mape, worst) = errors(&spec, &paper, &truth);
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
    let (mape, worst) = errors(&spec, &model, &truth);
    eprintln!("counted printer driver, checked: MAPE {mape:.7} %, worst {worst:.7} %");
    assert!(worst < 1e-9, "MAPE {mape} %, worst {worst} %");
}

/// Fast sets the match finder's depth before it runs: the paper's one-run model charges
/// every configuration Fast's shallow search (far off where Fast is deselected); the check
/// finds the context, names `find_matches` and Fast, and its model is exact.
#[test]
fn a_cost_an_option_sets_before_the_function_runs_is_found_and_modelled() {
    let (dir, spec) = example("family-level");
    let truth = counted_truth(&spec, &dir.path().join("truth"));
    assert_eq!(truth.len(), 8);

    let paper = dir.path().join("paper.json");
    family(&spec, &["--constant-cost", "-o", paper.to_str().unwrap()]);
    let (paper_mape, _) = errors(&spec, &paper, &truth);
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
    let (mape, worst) = errors(&spec, &model, &truth);
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
