//! SPLat and SPLat-delayed through the command line, as a user runs them, on ConfigCrusher's
//! running example (`examples/splat`: Fig. 2, lines 1-21, and a fourth option nothing uses),
//! built two ways: reading each option where it decides on it, SPLat explores the paper's
//! 6 configurations (Table 2); reading every option at start-up, SPLat explores all 16
//! (brute force) and SPLat-delayed still 6. Each model must be the table of its paths (every
//! configuration predicted as the store's median for the path it follows), and `knobs
//! evaluate` must read it.
//!
//! The runs sleep for real, so nothing here compares a time with a threshold: how close the
//! medians come to the slept units depends on the machine's load, and is the benchmark
//! runner's (`cargo run --release -p bench`).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{knobs, succeeds};

/// examples/splat in a temporary directory, with both native builds.
fn example() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_example("splat", &["main.c", "knobs.toml", "eager.toml"], dir.path());
    common::native_build(dir.path(), "fig2", &[]);
    common::native_build(dir.path(), "fig2-eager", &["-DREAD_AT_START"]);
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
    succeeds(&mut cmd).json()
}

/// The medians in `store`, by configuration (one 0/1 per option, in the spec's order), as
/// `knobs results export` gives them.
fn medians(spec: &Path) -> BTreeMap<Vec<u8>, f64> {
    let text = succeeds(
        knobs()
            .args(["results", "export", "--spec"])
            .arg(spec)
            .arg("--store")
            .arg(store_of(spec)),
    )
    .text();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("A,B,C,D,wall_s"), "{text}");
    lines.map(|l| row_of(l, &text)).collect()
}

/// A CSV row `a,b,c,d,value` as the configuration's bits and the value.
fn row_of(line: &str, text: &str) -> (Vec<u8>, f64) {
    let fields: Vec<&str> = line.split(',').collect();
    assert_eq!(fields.len(), 5, "{text}");
    let bits = fields[..4].iter().map(|f| f.parse().unwrap()).collect();
    (bits, fields[4].parse().unwrap())
}

/// Every configuration of A-D (bit k of `n` is option k), as 0/1 per option.
fn all_configurations() -> Vec<Vec<u8>> {
    (0..16u8)
        .map(|n| (0..4).map(|k| n >> k & 1).collect())
        .collect()
}

/// A configuration's name in the report (`A,C`; `` for none).
fn name_of(bits: &[u8]) -> String {
    ["A", "B", "C", "D"]
        .iter()
        .zip(bits)
        .filter(|(_, b)| **b == 1)
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(",")
}

/// `knobs predict`'s predictions of every configuration of A-D with `model`.
fn predictions(model: &Path, dir: &Path) -> BTreeMap<Vec<u8>, f64> {
    let configs = dir.join("all.csv");
    let mut csv = String::from("A,B,C,D\n");
    for bits in all_configurations() {
        let row: Vec<String> = bits.iter().map(u8::to_string).collect();
        csv += &format!("{}\n", row.join(","));
    }
    std::fs::write(&configs, csv).unwrap();
    let text = succeeds(knobs().arg("predict").arg(model).arg(&configs)).text();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("A,B,C,D,prediction"), "{text}");
    let predicted: BTreeMap<_, _> = lines.map(|l| row_of(l, &text)).collect();
    assert_eq!(predicted.len(), 16, "{text}");
    predicted
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
    // The paper's 6: A, then C only under A, then B.
    let six = ["", "A", "A,B", "A,B,C", "A,C", "B"];
    let sixteen: Vec<String> = all_configurations().iter().map(|b| name_of(b)).collect();
    // (spec, delayed, explored configurations, options never reached)
    let cases: [(&str, bool, Vec<&str>, &[&str]); 4] = [
        ("knobs.toml", false, six.to_vec(), &["D"]),
        ("knobs.toml", true, six.to_vec(), &["D"]),
        (
            "eager.toml",
            false,
            sixteen.iter().map(String::as_str).collect(),
            &[],
        ),
        ("eager.toml", true, six.to_vec(), &["D"]),
    ];
    for (spec, delayed, explored, unreached) in cases {
        let spec = dir.path().join(spec);
        let report = splat(&spec, delayed);
        let context = format!("{} delayed={delayed}: {report}", spec.display());
        let paths = report["paths"].as_array().unwrap();
        let mut configurations: Vec<&str> = paths
            .iter()
            .map(|p| p["configuration"].as_str().unwrap())
            .collect();
        configurations.sort();
        let mut expected = explored.clone();
        expected.sort();
        assert_eq!(configurations, expected, "{context}");
        assert_eq!(report["total_configurations"], 16, "{context}");
        assert_eq!(report["complete"], true, "{context}");
        assert_eq!(strings(&report["unreached"]), unreached, "{context}");
        assert_eq!(
            report["measurement"]["configurations"],
            explored.len(),
            "{context}"
        );
        if explored.len() == 6 {
            // The paper's order: A, then C only under A, then B.
            let mut orders: Vec<String> = paths
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

        // The model is the table of the paths: every configuration is predicted as the
        // median measured for the one path it follows (the options that path reached, set as
        // in the configuration), and that is the store's median for the path's
        // configuration. Sums of the same floats, whatever the machine's speed or load.
        let stored = medians(&spec);
        let predicted = predictions(&model, dir.path());
        for (bits, prediction) in &predicted {
            let follows = |p: &&serde_json::Value| {
                strings(&p["reached"]).iter().all(|r| {
                    let (option, value) = r.split_once('=').unwrap();
                    let k = ["A", "B", "C", "D"]
                        .iter()
                        .position(|n| *n == option)
                        .unwrap();
                    value == bits[k].to_string()
                })
            };
            let path: Vec<&serde_json::Value> = paths.iter().filter(follows).collect();
            assert_eq!(path.len(), 1, "{bits:?} follows one path: {context}");
            let measured = path[0]["configuration"].as_str().unwrap();
            let key: Vec<u8> = ["A", "B", "C", "D"]
                .iter()
                .map(|n| u8::from(measured.split(',').any(|m| m == *n)))
                .collect();
            let median = stored
                .get(&key)
                .unwrap_or_else(|| panic!("{measured} is not in the store: {stored:?}"));
            assert_eq!(path[0]["seconds"].as_f64().unwrap(), *median, "{context}");
            assert!(
                (prediction - median).abs() <= 1e-12,
                "{bits:?}: predicted {prediction}, the median of {measured:?} is {median}: \
                 {context}"
            );
        }

        // `knobs evaluate` reads the model, and knows which configurations it was built from.
        let evaluated = succeeds(
            knobs()
                .args(["evaluate", "--json", "--all"])
                .arg(&model)
                .arg(store_of(&spec)),
        )
        .json();
        assert_eq!(
            evaluated["training_configurations"],
            explored.len(),
            "{evaluated}"
        );
        assert_eq!(evaluated["configurations"], stored.len(), "{evaluated}");
        assert!(
            evaluated["mape_all_percent"]
                .as_f64()
                .is_some_and(f64::is_finite),
            "{evaluated}"
        );
    }
}
