//! What the counted-instruction CLI tests share: a C program with real computation
//! (ConfigCrusher's running example with loops for its sleeps), its spec counting
//! instructions, its counted brute force (every configuration run in the counting build
//! with no region, the unit every counted model is in) and a model's error against it.
#![allow(dead_code)] // each test uses its own part

use std::path::Path;
use std::process::Command;

use crate::common::{self, knobs};

/// The running example's structure (Fig. 2), six options, with `WORK(n)` a loop of `n`
/// iterations of arithmetic instead of a sleep.
pub const MAIN_C: &str = r#"#include <stdbool.h>
#include <string.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static bool name
OPTION(A);
OPTION(B);
OPTION(C);
OPTION(D);
OPTION(E);
OPTION(F);

static volatile unsigned long sink;

#define WORK(n)                                            \
    do {                                                   \
        unsigned long acc_ = sink;                         \
        for (int i_ = 0; i_ < (n); i_++)                   \
            acc_ = acc_ * 2654435761u + (unsigned long)i_; \
        sink = acc_;                                       \
    } while (0)

static void foo(bool x) {
    if (x) WORK(4000);
    else WORK(1000);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-A")) A = true;
        if (!strcmp(argv[i], "-B")) B = true;
        if (!strcmp(argv[i], "-C")) C = true;
        if (!strcmp(argv[i], "-D")) D = true;
        if (!strcmp(argv[i], "-E")) E = true;
        if (!strcmp(argv[i], "-F")) F = true;
    }
    WORK(1000);
    bool x = false;
    if (A) {
        WORK(2000);
        foo(C);
        x = true;
    }
    if (B && x) WORK(3000);
    if (D && E && F) WORK(5000);
    if (B) WORK(200);
    if (D) WORK(400);
    return 0;
}
"#;

pub const OPTIONS: [&str; 6] = ["A", "B", "C", "D", "E", "F"];

pub fn spec() -> String {
    let mut spec = String::from(
        "name = \"loops\"\n\n[build]\nsources = [\"main.c\"]\n\n[run]\nprogram = \"./loops\"\n\
         args = [\"{options}\"]\ntimeout = 30\n\n[measure]\nrepetitions = 1\n\
         metric = \"instructions\"\n\n[[workload]]\nname = \"default\"\n",
    );
    for o in OPTIONS {
        spec.push_str(&format!("\n[[option]]\nname = \"{o}\"\non = [\"-{o}\"]\n"));
    }
    spec
}

/// Every configuration's count by the counting build with no region (the ground truth),
/// with each configuration's options as 0/1 in `OPTIONS` order.
pub fn brute_force(spec_path: &Path, work: &Path) -> Vec<(Vec<u8>, f64)> {
    brute_force_of(spec_path, work, &OPTIONS)
}

/// The same for a program whose binary options are `options`, each given as `-OPTION`.
pub fn brute_force_of(spec_path: &Path, work: &Path, options: &[&str]) -> Vec<(Vec<u8>, f64)> {
    let spec = measure::SystemSpec::load(spec_path).unwrap();
    let settings = instrumented::Settings::new(work.to_path_buf());
    let (binary, _) = instrumented::counting::plain_counting_build(&spec, &settings).unwrap();
    (0..1u32 << options.len())
        .map(|bits| {
            let on: Vec<u8> = (0..options.len()).map(|k| (bits >> k & 1) as u8).collect();
            let args: Vec<String> = options
                .iter()
                .zip(&on)
                .filter(|(_, b)| **b == 1)
                .map(|(o, _)| format!("-{o}"))
                .collect();
            let file = work.join("truth.tsv");
            let status = Command::new(&binary)
                .args(&args)
                .env("KNOBS_REGION_TIMES", &file)
                .status()
                .unwrap();
            assert!(status.success());
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(text.contains("\nunit\tinstructions\n"), "{text}");
            let total = text
                .lines()
                .find_map(|l| l.strip_prefix("total\t"))
                .unwrap()
                .parse()
                .unwrap();
            (on, total)
        })
        .collect()
}

/// The model's predictions of `configurations` (`knobs predict`).
pub fn predict(model: &Path, configurations: &[(Vec<u8>, f64)], dir: &Path) -> Vec<f64> {
    predict_of(model, &OPTIONS, configurations, dir)
}

/// The same for a program whose binary options are `options`.
pub fn predict_of(
    model: &Path,
    options: &[&str],
    configurations: &[(Vec<u8>, f64)],
    dir: &Path,
) -> Vec<f64> {
    let csv = dir.join("all.csv");
    let mut text = options.join(",") + "\n";
    for (on, _) in configurations {
        let row: Vec<String> = on.iter().map(u8::to_string).collect();
        text.push_str(&(row.join(",") + "\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let out = knobs()
        .arg("predict")
        .arg(model)
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect()
}

/// Mean absolute percentage error of `predicted` against the truth.
pub fn mape(predicted: &[f64], truth: &[(Vec<u8>, f64)]) -> f64 {
    let sum: f64 = predicted
        .iter()
        .zip(truth)
        .map(|(p, (_, t))| (p - t).abs() / t)
        .sum();
    100.0 * sum / truth.len() as f64
}

/// The model file with the term `label` (e.g. `D·E·F`) taken out of every region.
pub fn without_term(model: &Path, label: &str, out: &Path) {
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model).unwrap()).unwrap();
    let mut removed = 0;
    let mut strip = |terms: &mut serde_json::Value| {
        if let Some(list) = terms.as_array_mut() {
            let before = list.len();
            list.retain(|t| common::term_labels(&serde_json::json!({ "terms": [t] })) != [label]);
            removed += before - list.len();
        }
    };
    strip(&mut file["terms"]);
    if let Some(regions) = file["regions"].as_array_mut() {
        for r in regions {
            strip(&mut r["terms"]);
        }
    }
    assert!(removed > 0, "no term {label} in {file}");
    std::fs::write(out, serde_json::to_vec(&file).unwrap()).unwrap();
}
