//! `knobs splat` and `knobs splat --delayed` in counted instructions
//! (`metric = "instructions"`): the explored configurations are measured in the plain
//! counting build, the ground truth's unit, not the native program under a hardware or
//! valgrind counter (which counts machine instructions, libc and the loader included). So
//! every path's count is its configuration's counted brute force, exactly.

mod common;
mod counted;

use common::{knobs, succeeds};
use counted::{MAIN_C, OPTIONS, brute_force, spec};

/// A configuration's name in the report (`A,C`; `` for none) from its 0/1 per option.
fn name_of(on: &[u8]) -> String {
    OPTIONS
        .iter()
        .zip(on)
        .filter(|(_, b)| **b == 1)
        .map(|(o, _)| *o)
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn splat_measures_its_paths_in_the_counting_build() {
    let (dir, spec) = common::c_subject(MAIN_C, &spec());
    let truth = brute_force(&spec, &dir.path().join("truth"));
    for delayed in [false, true] {
        let mut cmd = knobs();
        cmd.args(["splat", "--json", "--spec"]).arg(&spec);
        if delayed {
            cmd.arg("--delayed");
        }
        let report = succeeds(&mut cmd).json();
        let variant = report["variant"].as_str().unwrap();
        assert!(variant.starts_with("counted:"), "{report}");
        let paths = report["paths"].as_array().unwrap();
        assert!(paths.len() > 1 && paths.len() < truth.len(), "{report}");
        for path in paths {
            let configuration = path["configuration"].as_str().unwrap();
            let (_, count) = truth
                .iter()
                .find(|(on, _)| name_of(on) == configuration)
                .unwrap();
            assert_eq!(path["instructions"].as_f64(), Some(*count), "{path}");
            assert!(path["seconds"].is_null(), "{path}");
        }
        let model_path = report["model_path"].as_str().unwrap();
        let model: serde_json::Value =
            serde_json::from_slice(&std::fs::read(model_path).unwrap()).unwrap();
        let metric = model["metric"].as_str().unwrap();
        assert!(metric.contains("LLVM IR instructions"), "{metric}");
        assert_eq!(model["provenance"]["variant"], variant, "{model}");
    }
}

#[test]
fn splat_prints_counts_not_seconds() {
    let (_dir, spec) = common::c_subject(MAIN_C, &spec());
    let ran = succeeds(knobs().args(["splat", "--spec"]).arg(&spec));
    let stderr = &ran.stderr;
    assert!(stderr.contains(" instructions\n"), "{stderr}");
    assert!(!stderr.contains(" s\n"), "{stderr}");
}

/// `--metric instructions` on a spec that times: the approach counts as if the spec said so.
#[test]
fn the_metric_flag_makes_an_approach_count() {
    let timed = spec().replace("metric = \"instructions\"\n", "");
    assert_ne!(timed, spec());
    let (_dir, spec) = common::c_subject(MAIN_C, &timed);
    let report = succeeds(
        knobs()
            .args(["splat", "--json", "--metric", "instructions", "--spec"])
            .arg(&spec),
    )
    .json();
    assert!(
        report["variant"].as_str().unwrap().starts_with("counted:"),
        "{report}"
    );
    assert!(
        report["paths"][0]["instructions"].as_f64().is_some(),
        "{report}"
    );
}

/// An option whose flag is parsed but never read (G), and options some paths do not read
/// (C when A is off): parsing their flags costs instructions there all the same. In counts
/// SPLat flips each once on a path that does not reach it, names what it changed, and its
/// model is exact on every configuration (without the flips it misses the parsing).
#[test]
fn an_option_no_path_reads_is_measured_once_and_the_model_stays_exact() {
    let main_c = MAIN_C
        .replace("OPTION(F);\n", "OPTION(F);\nOPTION(G);\n")
        .replace(
            "        if (!strcmp(argv[i], \"-F\")) F = true;\n",
            "        if (!strcmp(argv[i], \"-F\")) F = true;\n        if (!strcmp(argv[i], \"-G\")) G = true;\n",
        );
    assert_ne!(main_c, MAIN_C);
    let options = [OPTIONS.as_slice(), &["G"]].concat();
    let spec_text = spec() + "\n[[option]]\nname = \"G\"\non = [\"-G\"]\n";
    let (dir, spec) = common::c_subject(&main_c, &spec_text);
    let truth = counted::brute_force_of(&spec, &dir.path().join("truth"), &options);
    let report = succeeds(knobs().args(["splat", "--json", "--spec"]).arg(&spec)).json();
    assert_eq!(report["unreached"], serde_json::json!(["G"]), "{report}");
    let effects = report["off_path_effects"].as_array().unwrap();
    let g = effects.iter().find(|e| e["option"] == "G").unwrap();
    assert!(g["effect"].as_f64().unwrap() > 0.0, "{report}");
    let model = std::path::PathBuf::from(report["model_path"].as_str().unwrap());
    let predicted = counted::predict_of(&model, &options, &truth, dir.path());
    for ((on, count), p) in truth.iter().zip(&predicted) {
        assert!(
            (p - count).abs() < 0.5,
            "{on:?}: predicted {p}, counted {count}"
        );
    }
}
