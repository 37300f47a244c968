//! The questions users ask of a model, through the binary: `model show` ranked by effect
//! over the options' ranges with a unit and warnings, and `predict` with a configuration,
//! standard input, values outside the space, and the fastest valid configurations.

use std::path::Path;

use assert_cmd::Command;

fn knobs(dir: &Path, args: &[&str], stdin: &str) -> (String, String, Option<i32>) {
    let out = Command::cargo_bin("knobs")
        .unwrap()
        .args(args)
        .current_dir(dir)
        .write_stdin(stdin)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code(),
    )
}

/// A learned model of a sort-like program: a per-byte `buffer` term that is tiny per unit
/// but the largest over its range (1 B … 256 MiB), 3 terms from 4 configurations.
const MODEL: &str = r#"{
  "format": "knobs-model", "version": 1, "system": "sort", "metric": "wall time (s)",
  "terms": [
    { "options": [], "value": 0.05 },
    { "options": ["parallel"], "value": -0.002 },
    { "options": ["stable"], "value": 0.02 },
    { "options": ["buffer"], "value": -1.5e-10 }
  ],
  "provenance": { "approach": "black-box", "learner": "stepwise",
    "training": { "columns": ["buffer", "parallel", "stable"],
      "rows": [[1, 1, 0], [268435456, 2, 1], [1, 2, 0], [268435456, 1, 1]] } }
}"#;

const SPACE: &str = r#"
constraints = ["stable => parallel=1"]

[[option]]
name = "buffer"
values = [1, 268435456]

[[option]]
name = "parallel"
values = [1, 2]

[[option]]
name = "stable"
"#;

#[test]
fn model_show_ranks_by_effect_over_the_range_in_a_fitting_unit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.json"), MODEL).unwrap();
    let (out, _, code) = knobs(dir.path(), &["model", "show", "m.json"], "");
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "metric: wall time (s); terms in ms", "{out}");
    assert!(
        lines[2].starts_with("warning: 4 terms from 4 configurations"),
        "{out}"
    );
    // buffer: -1.5e-10 s per byte × 268435455 bytes = -40.3 ms, above stable's 20 ms and
    // parallel's 2 ms; its coefficient printed, not rounded to zero.
    assert_eq!(
        lines[3], "50.00 - 0.00000015·buffer + 20.00·stable - 2.00·parallel",
        "{out}"
    );
    let (out, _, _) = knobs(
        dir.path(),
        &["model", "show", "m.json", "--precision", "1"],
        "",
    );
    assert!(
        out.contains("50.0 - 0.00000015·buffer + 20.0·stable - 2.0·parallel"),
        "{out}"
    );
}

#[test]
fn predict_answers_a_configuration_stdin_and_the_fastest() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.json"), MODEL).unwrap();
    std::fs::write(dir.path().join("space.toml"), SPACE).unwrap();
    let (out, err, code) = knobs(
        dir.path(),
        &["predict", "m.json", "buffer=1,parallel=2,stable"],
        "",
    );
    assert_eq!(code, Some(0), "{err}");
    // In the unit --top prints in: 0.05 - 0.004 + 0.02 s.
    assert!(out.starts_with("66.000 ms  "), "{out}");
    assert!(
        out.trim_end().ends_with("buffer=1,parallel=2,stable"),
        "{out}"
    );
    assert!(err.is_empty(), "{err}");

    // Outside the values the model was built from: predicted, with a warning.
    let (out, err, code) = knobs(
        dir.path(),
        &["predict", "m.json", "buffer=1,parallel=3"],
        "",
    );
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), 1);
    assert!(
        err.contains("`parallel=3` is outside the values the model knows (1, 2)"),
        "{err}"
    );
    // A numeric option left out is an error, in one line.
    let (_, err, code) = knobs(dir.path(), &["predict", "m.json", "stable"], "");
    assert_eq!(code, Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("numeric option `buffer` needs a value"),
        "{err}"
    );

    // Standard input: one configuration a line, or CSV.
    let (out, _, code) = knobs(
        dir.path(),
        &["predict", "m.json"],
        "buffer=1,parallel=1\nbuffer=268435456,parallel=2,stable\n",
    );
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), 2, "{out}");
    let (out, _, code) = knobs(
        dir.path(),
        &["predict", "m.json"],
        "buffer,parallel,stable\n1,1,0\n",
    );
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("buffer,parallel,stable,prediction\n1,1,0,"),
        "{out}"
    );

    // The fastest valid configurations: large buffer, two threads, not stable.
    let (out, err, code) = knobs(
        dir.path(),
        &["predict", "m.json", "--spec", "space.toml", "--top", "2"],
        "",
    );
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].ends_with("  buffer=268435456,parallel=2"), "{out}");
    assert!(
        lines[0].trim_start().starts_with("5.735") && lines[0].contains(" ms "),
        "{out}"
    );
    assert!(lines[1].ends_with("  buffer=268435456,parallel=1"), "{out}");
    let (best, _, _) = knobs(
        dir.path(),
        &["predict", "m.json", "--spec", "space.toml", "--best"],
        "",
    );
    assert_eq!(best, format!("{}\n", lines[0]));
    // With the space: a configuration that breaks one of its rules is predicted, with a
    // warning saying which.
    let (out, err, code) = knobs(
        dir.path(),
        &[
            "predict",
            "m.json",
            "--spec",
            "space.toml",
            "buffer=1,parallel=2,stable",
        ],
        "",
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1);
    assert!(
        err.starts_with(
            "warning: `buffer=1,parallel=2,stable`: not a valid configuration of the space: "
        ),
        "{err}"
    );
    // --top without a space to search is a usage error.
    let (_, _, code) = knobs(dir.path(), &["predict", "m.json", "--top", "2"], "");
    assert_eq!(code, Some(2));
}

/// A system spec of xz's shape: a numeric level and a mandatory alternative of checks.
const XZ_SPEC: &str = r#"
name = "xz"
[run]
program = "xz"
args = ["{options}"]
[[workload]]
name = "w"
[[option]]
name = "level"
values = [0, 6]
arg = ["-{value}"]
[[option]]
name = "check"
mandatory = true
[[option]]
name = "crc32"
parent = "check"
on = ["--check=crc32"]
[[option]]
name = "crc64"
parent = "check"
on = ["--check=crc64"]
[[group]]
kind = "alternative"
parent = "check"
members = ["crc32", "crc64"]
"#;

const XZ_MODEL: &str = r#"{
  "format": "knobs-model", "version": 1, "system": "xz", "metric": "time_s",
  "terms": [
    { "options": [], "value": 0.1 },
    { "options": ["level=6"], "value": 0.2 },
    { "options": ["crc64"], "value": 0.01 }
  ]
}"#;

/// The warnings of a run, each without what names the input (`CONFIG`: or `FILE:LINE:`).
fn warnings(err: &str) -> Vec<String> {
    err.lines()
        .map(|l| {
            let l = l.strip_prefix("warning: ").unwrap_or(l);
            let at = l.find(": ").map_or(0, |i| i + 2);
            l[at..].to_string()
        })
        .collect()
}

#[test]
fn every_input_path_is_checked_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.json"), XZ_MODEL).unwrap();
    std::fs::write(dir.path().join("knobs.toml"), XZ_SPEC).unwrap();
    let with_spec = |input: &str, stdin: &str| {
        let mut args = vec!["predict", "m.json", "--spec", "knobs.toml"];
        if !input.is_empty() {
            args.push(input);
        }
        knobs(dir.path(), &args, stdin)
    };
    // A value outside the space, two members of the alternative, the mandatory check left
    // out: typed, in a CSV file and on standard input, the same warnings.
    for (typed, row) in [
        ("level=7,check,crc32", "7,1,1,0"),
        ("level=6,check,crc32,crc64", "6,1,1,1"),
        ("level=6", "6,0,0,0"),
    ] {
        let (_, typed_err, code) = with_spec(typed, "");
        assert_eq!(code, Some(0), "{typed_err}");
        assert!(!typed_err.is_empty(), "{typed}: no warning");
        let csv = format!("level,check,crc32,crc64\n{row}\n");
        std::fs::write(dir.path().join("c.csv"), &csv).unwrap();
        let (out, csv_err, code) = with_spec("c.csv", "");
        assert_eq!(code, Some(0), "{csv_err}");
        assert_eq!(out.lines().count(), 2, "{out}");
        assert_eq!(warnings(&csv_err), warnings(&typed_err), "{typed} vs {row}");
        let (_, stdin_err, _) = with_spec("", &csv);
        assert_eq!(warnings(&stdin_err), warnings(&typed_err));
    }
    let (_, err, code) = with_spec("level=6,check,crc32", "");
    assert_eq!((err.as_str(), code), ("", Some(0)));
    // An option given twice is an error, as in `space check`.
    let (_, err, code) = with_spec("level=6,level=0,check,crc32", "");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("option `level` appears more than once"),
        "{err}"
    );
    // An empty CSV names the file and what is missing.
    std::fs::write(dir.path().join("empty.csv"), "").unwrap();
    let (_, err, code) = knobs(dir.path(), &["predict", "m.json", "empty.csv"], "");
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim(),
        "knobs: error: empty.csv: the CSV is empty: it needs a header of option names and a row per configuration"
    );
}

#[test]
fn a_model_of_another_system_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.json"), XZ_MODEL).unwrap();
    let toy = XZ_SPEC.replace("name = \"xz\"", "name = \"toy\"");
    std::fs::write(dir.path().join("knobs.toml"), toy).unwrap();
    let expected = "knobs: error: m.json: a model of `xz`, not of `toy`";
    let (_, err, code) = knobs(
        dir.path(),
        &[
            "predict",
            "m.json",
            "--spec",
            "knobs.toml",
            "level=6,check,crc32",
        ],
        "",
    );
    assert_eq!((err.trim(), code), (expected, Some(2)));
    let (_, err, code) = knobs(
        dir.path(),
        &["report", "--spec", "knobs.toml", "--model", "m.json"],
        "",
    );
    assert_eq!((err.trim(), code), (expected, Some(2)));
}
