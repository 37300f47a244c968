//! Options that choose code without a branch on them (`examples/dispatch`: a table of
//! handlers indexed by an option, a struct of function pointers chosen through a `select`, a
//! sleep length chosen through a `select` and handed to the C library): `knobs crush` and
//! `knobs comprex` find every option that changes the time, all through the command line as
//! a user runs them.
//!
//! The runs sleep for real, so what is checked here is what the analyses report (the
//! interactions, regions and partitions they find, the terms their models have), never how
//! close the models' values come to the real times: those depend on the machine's load. The
//! models' values are checked exactly with the test clock in
//! `crates/comprex/tests/dispatch_example.rs`, and their accuracy with real sleeps on real
//! hardware is the benchmark runner's (`cargo run --release -p bench`).

mod common;

use std::path::{Path, PathBuf};

/// A copy of examples/dispatch in a temporary directory, with its native build (Comprex's
/// overhead correction runs it).
fn example() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    common::copy_example("dispatch", &["main.c", "knobs.toml"], dir.path());
    common::native_build(dir.path(), "dispatch", &[]);
    let spec = dir.path().join("knobs.toml");
    (dir, spec)
}

/// Runs `knobs ARGS --json --spec SPEC` and returns its report.
fn report(args: &[&str], spec: &Path) -> serde_json::Value {
    common::knobs_ok(&[args, &["--json", "--spec"]].concat(), spec).json()
}

fn model_file(model: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(model).unwrap()).unwrap()
}

/// The options in a model's terms.
fn options_in(file: &serde_json::Value) -> Vec<String> {
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
    let (dir, spec) = example();

    // ConfigCrusher: the analysis sees MODE (an index into the handler table) meet PACKED
    // (the select choosing the codec's pointer) through the codec's argument, and LONG (the
    // select choosing the sleep's length) alone; UNUSED is irrelevant.
    let crush = report(&["crush"], &spec);
    let analysis = &crush["analysis"];
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
    // 3 × 2 configurations of {MODE, PACKED}, LONG varied alongside.
    assert_eq!(crush["configurations"]["measured"], 6, "{crush}");
    assert_eq!(crush["configurations"]["total"], 24, "{crush}");
    assert_eq!(crush["measurement"]["configurations"], 6, "{crush}");
    let crushed = dir.path().join("dispatch.configcrusher.json");
    assert!(
        crush["model_path"]
            .as_str()
            .unwrap()
            .ends_with("dispatch.configcrusher.json"),
        "{crush}"
    );
    let file = model_file(&crushed);
    // A region per interaction (and the base); a local model fits its region's measured
    // configurations exactly, so it has a term for each of them whatever the timings.
    let mut regions: Vec<Vec<String>> = file["regions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"] != "base")
        .map(|r| {
            r["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    regions.sort();
    assert_eq!(regions, [vec!["LONG"], vec!["MODE", "PACKED"]], "{file}");
    let terms = common::term_labels(&file);
    for t in ["MODE=1", "MODE=2", "PACKED·MODE=2", "LONG"] {
        assert!(terms.iter().any(|l| l == t), "{t} missing from {terms:?}");
    }
    assert_eq!(options_in(&file), ["LONG", "MODE", "PACKED"]);

    // Comprex: the taint runs partition the codec's encoder (reached only through the pointer
    // PACKED selects) by PACKED and MODE (its block count), and the sleep (whose length LONG
    // selects) by all three; UNUSED splits nothing.
    let comprex = report(&["comprex"], &spec);
    assert_eq!(comprex["total_configurations"], 24, "{comprex}");
    assert_eq!(comprex["exploration"]["configurations"], 12, "{comprex}");
    assert_eq!(comprex["measurement"]["configurations"], 12, "{comprex}");
    let regions = comprex["exploration"]["regions"].as_array().unwrap();
    let subspaces = |id: &str| -> Vec<String> {
        let region = regions
            .iter()
            .find(|r| r["region"] == id)
            .unwrap_or_else(|| panic!("no region {id}: {regions:?}"));
        region["subspaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        subspaces("packed_encode"),
        [
            "MODE=0 ∧ PACKED",
            "MODE=1 ∧ PACKED",
            "MODE=2 ∧ PACKED",
            "¬PACKED"
        ]
    );
    let sleep = subspaces("sleep_units");
    assert_eq!(sleep.len(), 12, "3 × 2 × 2: {sleep:?}");
    assert!(
        sleep
            .iter()
            .all(|s| s.contains("MODE=") && s.contains("PACKED") && s.contains("LONG")),
        "{sleep:?}"
    );
    assert!(
        !regions.iter().any(|r| r.to_string().contains("UNUSED")),
        "{regions:?}"
    );
    // Terms well above Comprex's 1 ms pruning (MODE = 2 adds 11 units of 4 ms, LONG 5), which
    // no delay of a busy machine brings near it; the smaller ones are left to the test clock.
    let comprexed = dir.path().join("dispatch.comprex.json");
    let file = model_file(&comprexed);
    let terms = common::term_labels(&file);
    for t in ["MODE=2", "LONG"] {
        assert!(terms.iter().any(|l| l == t), "{t} missing from {terms:?}");
    }
    assert!(
        !options_in(&file).iter().any(|o| o == "UNUSED"),
        "{terms:?}"
    );
}
