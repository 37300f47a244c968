//! SPLat and SPLat-delayed through the command line, as a user runs them, on ConfigCrusher's
//! running example (`examples/splat`: Fig. 2, lines 1-21, and a fourth option nothing uses),
//! built two ways: reading each option where it decides on it, SPLat explores the paper's
//! 6 configurations (Table 2); reading every option at start-up, SPLat explores all 16
//! (brute force) and SPLat-delayed still 6. Each model must predict brute force
//! (`knobs measure --sample all`) within 15 % MAPE, and `knobs evaluate` must read it.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn knobs() -> Command {
    Command::cargo_bin("knobs").unwrap()
}

/// examples/splat in a temporary directory, with both native builds.
fn example() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/splat");
    for f in ["main.c", "knobs.toml", "eager.toml"] {
        std::fs::copy(example.join(f), dir.path().join(f)).unwrap();
    }
    for (out, define) in [("fig2", None), ("fig2-eager", Some("-DREAD_AT_START"))] {
        let status = std::process::Command::new("clang-19")
            .args(["-O2", "-o", out, "main.c"])
            .args(define)
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
    dir
}

/// Each spec's measurements go to a store of their own (`NAME.db`).
fn store_of(spec: &Path) -> PathBuf {
    spec.with_extension("db")
}

fn splat(spec: &Path, delayed: bool) -> serde_json::Value {
    let mut cmd = knobs();
    cmd.args(["splat", "--json", "--spec"])
        .arg(spec)
        .arg("--store")
        .arg(store_of(spec));
    if delayed {
        cmd.arg("--delayed");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The MAPE (%) `knobs evaluate` gives a model on every measured configuration.
fn mape_all(model: &Path, store: &Path) -> f64 {
    let out = knobs()
        .args(["evaluate", "--json", "--all"])
        .arg(model)
        .arg(store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["mape_all_percent"].as_f64().unwrap()
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn splat_explores_distinct_paths_and_delayed_reads_see_through_start_up_copies() {
    let dir = example();
    // (spec, delayed, explored configurations, options never reached)
    let cases: [(&str, bool, usize, &[&str]); 4] = [
        ("knobs.toml", false, 6, &["D"]),
        ("knobs.toml", true, 6, &["D"]),
        ("eager.toml", false, 16, &[]),
        ("eager.toml", true, 6, &["D"]),
    ];
    let mut models: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (spec, delayed, explored, unreached) in cases {
        let spec = dir.path().join(spec);
        let report = splat(&spec, delayed);
        let context = format!("{} delayed={delayed}: {report}", spec.display());
        assert_eq!(
            report["paths"].as_array().unwrap().len(),
            explored,
            "{context}"
        );
        assert_eq!(report["total_configurations"], 16, "{context}");
        assert_eq!(report["complete"], true, "{context}");
        assert_eq!(strings(&report["unreached"]), unreached, "{context}");
        if explored == 6 {
            // The paper's order: A, then C only under A, then B.
            let mut orders: Vec<String> = report["paths"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    strings(&p["reached"])
                        .iter()
                        .map(|l| l.split('=').next().unwrap().to_string())
                        .collect::<Vec<_>>()
                        .join("")
                })
                .collect();
            orders.sort();
            orders.dedup();
            assert_eq!(orders, ["AB", "ACB"], "{context}");
        }
        let model = PathBuf::from(report["model_path"].as_str().unwrap());
        let file: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&model).unwrap()).unwrap();
        assert_eq!(
            file["provenance"]["approach"],
            if delayed { "splat-delayed" } else { "splat" }
        );
        models.push((spec, model));
    }
    for spec in ["knobs.toml", "eager.toml"] {
        knobs()
            .args(["measure", "--sample", "all", "--spec"])
            .arg(dir.path().join(spec))
            .arg("--store")
            .arg(store_of(&dir.path().join(spec)))
            .assert()
            .success();
    }
    for (spec, model) in &models {
        let mape = mape_all(model, &store_of(spec));
        assert!(mape < 15.0, "{}: MAPE {mape:.1} %", model.display());
    }
}
