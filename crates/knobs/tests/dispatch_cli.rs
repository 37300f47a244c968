//! Options that choose code without a branch on them (`examples/dispatch`: a table of
//! handlers indexed by an option, a struct of function pointers chosen through a `select`, a
//! sleep length chosen through a `select` and handed to the C library): `knobs crush` and
//! `knobs comprex` find every option that changes the time, and their models are within 5 %
//! MAPE of brute force (`knobs measure --sample all` of the native build), all through the
//! command line as a user runs them.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn knobs() -> Command {
    Command::cargo_bin("knobs").unwrap()
}

/// A copy of examples/dispatch in a temporary directory, with its native build and every
/// configuration measured.
fn measured_example() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/dispatch");
    for f in ["main.c", "knobs.toml"] {
        std::fs::copy(example.join(f), dir.path().join(f)).unwrap();
    }
    let status = std::process::Command::new("clang-19")
        .args(["-O2", "-o", "dispatch", "main.c"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let spec = dir.path().join("knobs.toml");
    knobs()
        .args(["measure", "--sample", "all", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    (dir, spec)
}

fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap()
}

/// MAPE (%) of a model on the measured configurations it did not measure itself, and on all
/// of them (`knobs evaluate` reports both).
fn mape_of(model: &Path, store: &Path) -> (f64, f64) {
    let out = knobs()
        .args(["evaluate", "--json"])
        .arg(model)
        .arg(store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out.stdout);
    assert_eq!(report["set"], "untrained", "{report}");
    assert_eq!(report["mape_percent"], report["mape_unmeasured_percent"]);
    (
        report["mape_unmeasured_percent"].as_f64().unwrap(),
        report["mape_all_percent"].as_f64().unwrap(),
    )
}

/// The options in a model's terms.
fn options_in(model: &Path) -> Vec<String> {
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(model).unwrap()).unwrap();
    let mut names: Vec<String> = file["terms"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["options"].as_array().unwrap().clone())
        .map(|o| {
            let o = o.as_str().unwrap();
            o.split('=').next().unwrap().to_string()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn crush_and_comprex_see_options_that_choose_code_through_pointers_and_selects() {
    let (dir, spec) = measured_example();
    let store = dir.path().join("knobs.db");

    let out = knobs()
        .args(["crush", "--json", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out.stdout);
    let analysis = &report["analysis"];
    assert_eq!(
        analysis["irrelevant"],
        serde_json::json!(["UNUSED"]),
        "{analysis}"
    );
    assert_eq!(
        analysis["interactions"],
        serde_json::json!([["MODE", "PACKED"], ["LONG"]]),
        "the handler table and the codec (MODE with PACKED through the codec's argument), \
         and the sleep length: {analysis}"
    );
    assert_eq!(report["configurations"]["measured"], 6, "{report}");
    let crushed = dir.path().join("dispatch.configcrusher.json");
    assert_eq!(options_in(&crushed), ["LONG", "MODE", "PACKED"]);
    let mape = mape_of(&crushed, &store);
    assert!(
        mape.0 < 5.0 && mape.1 < 5.0,
        "ConfigCrusher's MAPE against brute force (unmeasured, all): {mape:?} %"
    );

    knobs()
        .args(["comprex", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    let comprexed = dir.path().join("dispatch.comprex.json");
    assert_eq!(options_in(&comprexed), ["LONG", "MODE", "PACKED"]);
    let mape = mape_of(&comprexed, &store);
    assert!(
        mape.0 < 5.0 && mape.1 < 5.0,
        "Comprex's MAPE against brute force (unmeasured, all): {mape:?} %"
    );
}
