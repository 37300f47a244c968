//! End-to-end tests of the `knobs` binary: counts on real feature models, sampling
//! strategies, `space check`, error reporting (exit status 2, one line on stderr), and the
//! model commands (`from-subspaces`, `show`, `predict`, `subspaces`).

mod common;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{datasets, describe, error, error_in, ok, run_knobs, s};
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn x264() -> PathBuf {
    let p = datasets().join("splconqueror/x264/FeatureModel.xml");
    assert!(p.exists(), "{} missing", p.display());
    p
}

fn llvm() -> PathBuf {
    let p = datasets().join("splconqueror/LLVM/FeatureModel.xml");
    assert!(p.exists(), "{} missing", p.display());
    p
}

fn xz() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/xz/space.toml");
    assert!(p.exists(), "{} missing", p.display());
    p
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

/// Writes the file `name` into a fresh temporary directory and runs knobs there expecting a
/// bad-input error, as [`error_in`] does; the error line.
fn error_on_file(name: &str, text: &str, args: &[&str]) -> String {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join(name), text).unwrap();
    error_in(args, Some(dir.path()))
}

/// A configuration CSV: header and rows, asserting that every row has the header's width.
fn parse_csv(csv: &str) -> (Vec<String>, Vec<Vec<String>>) {
    assert!(
        csv.ends_with('\n'),
        "CSV should end with a newline: {csv:?}"
    );
    let mut lines = csv.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header line")
        .split(',')
        .map(str::to_string)
        .collect();
    assert!(
        !header.is_empty() && header.iter().all(|h| !h.is_empty()),
        "bad header: {header:?}"
    );
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            r.len(),
            header.len(),
            "row {} has {} fields, header {}: {r:?}",
            i + 1,
            r.len(),
            header.len()
        );
    }
    (header, rows)
}

fn assert_distinct(rows: &[Vec<String>], what: &str) {
    let set: HashSet<&Vec<String>> = rows.iter().collect();
    assert_eq!(set.len(), rows.len(), "{what}: duplicate rows");
}

/// The option names a space declares, in order, from `knobs space show --json`.
fn option_names(space: &Path) -> Vec<String> {
    let (out, _) = ok(&["space", "show", s(space), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("show --json prints JSON");
    v["options"]
        .as_array()
        .expect("options array")
        .iter()
        .map(|o| o["name"].as_str().expect("name").to_string())
        .collect()
}

/// Writes `csv` to a file and checks every row with `knobs space check --csv`: exit 0 and
/// one `FILE:LINE: valid` per row.
fn assert_all_valid(space: &Path, csv: &str, rows: usize) {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("sample.csv");
    fs::write(&file, csv).unwrap();
    let (out, _) = ok(&["space", "check", s(space), "--csv", s(&file)]);
    let expected: Vec<String> = (0..rows)
        .map(|i| format!("{}:{}: valid", file.display(), i + 2))
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
}

// ---------------------------------------------------------------------------------------
// 1. space count
// ---------------------------------------------------------------------------------------

#[test]
fn count_x264_feature_model() {
    let (out, _) = ok(&["space", "count", s(&x264())]);
    assert_eq!(out, "1152\n");
}

#[test]
fn count_llvm_feature_model() {
    let (out, _) = ok(&["space", "count", s(&llvm())]);
    assert_eq!(out, "1024\n");
}

#[test]
fn count_xz_example() {
    let (out, _) = ok(&["space", "count", s(&xz())]);
    assert_eq!(out, "1560\n");
    // `space show --json` agrees (as a string).
    let (json, _) = ok(&["space", "show", s(&xz()), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["valid_configurations"], "1560");
    assert_eq!(v["name"], "xz");
}

// ---------------------------------------------------------------------------------------
// 2. pairwise sampling on x264
// ---------------------------------------------------------------------------------------

/// The `<name>`s of the binary options in an SPL Conqueror model, in file order (x264 has
/// neither `root` nor numeric options).
fn xml_option_names(path: &Path) -> Vec<String> {
    let xml = fs::read_to_string(path).unwrap();
    xml.split("<name>")
        .skip(1)
        .map(|rest| rest.split("</name>").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn pairwise_sample_of_x264_is_valid_deterministic_and_covering() {
    let model = x264();
    let args = [
        "space",
        "sample",
        s(&model),
        "-s",
        "pairwise",
        "--seed",
        "3",
    ];
    let (out, err) = ok(&args);
    let (header, rows) = parse_csv(&out);
    assert_eq!(header, xml_option_names(&model));
    assert_eq!(header, option_names(&model));
    assert!(!rows.is_empty());
    assert_distinct(&rows, "pairwise");
    for r in &rows {
        assert!(
            r.iter().all(|v| v == "0" || v == "1"),
            "x264 options are binary: {r:?}"
        );
    }
    assert_all_valid(&model, &out, rows.len());

    // Same seed, same sample (and same summary apart from the timing).
    let (again, err_again) = ok(&args);
    assert_eq!(again, out);
    assert!(err.contains("100.0%"), "{err}");
    assert!(err_again.contains("100.0%"), "{err_again}");
    assert!(
        err.starts_with(&format!(
            "twise:2: {} configurations of 1152 valid",
            rows.len()
        )),
        "{err}"
    );

    // Independently: every pair of option values occurring in some valid configuration
    // occurs in the sample.
    let (all, _) = ok(&["space", "sample", s(&model), "-s", "all"]);
    let (all_header, all_rows) = parse_csv(&all);
    assert_eq!(all_header, header);
    assert_eq!(all_rows.len(), 1152);
    let pairs = |rows: &[Vec<String>]| -> HashSet<(usize, String, usize, String)> {
        let mut set = HashSet::new();
        for r in rows {
            for i in 0..r.len() {
                for j in i + 1..r.len() {
                    set.insert((i, r[i].clone(), j, r[j].clone()));
                }
            }
        }
        set
    };
    let valid_pairs = pairs(&all_rows);
    let covered = pairs(&rows);
    let missing: Vec<_> = valid_pairs.difference(&covered).collect();
    assert!(missing.is_empty(), "pairs not covered: {missing:?}");
    let n = header.len();
    let total = 4 * n * (n - 1) / 2;
    let v = valid_pairs.len();
    assert!(
        err.contains(&format!(
            "covers {v}/{v} valid 2-wise combinations (100.0%), {} impossible ones excluded",
            total - v
        )),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// 3. every strategy on the xz example
// ---------------------------------------------------------------------------------------

#[test]
fn every_strategy_works_on_xz() {
    let space = xz();
    let names = option_names(&space);
    assert_eq!(names.len(), 16);
    let (all, _) = ok(&["space", "sample", s(&space), "-s", "all"]);
    let (_, all_rows) = parse_csv(&all);
    for strategy in [
        "all",
        "featurewise",
        "negfeaturewise",
        "twise:1",
        "twise:3",
        "random:20",
        "distance:20",
    ] {
        let (out, err) = ok(&["space", "sample", s(&space), "-s", strategy, "--seed", "7"]);
        let (header, rows) = parse_csv(&out);
        assert_eq!(header, names, "{strategy}");
        assert!(!rows.is_empty(), "{strategy}: empty sample");
        assert_distinct(&rows, strategy);
        assert_all_valid(&space, &out, rows.len());
        assert!(
            err.starts_with(&format!(
                "{strategy}: {} configurations of 1560 valid",
                rows.len()
            )),
            "{strategy}: {err}"
        );
        match strategy {
            "all" => assert_eq!(rows.len(), 1560),
            "random:20" | "distance:20" => assert_eq!(rows.len(), 20, "{strategy}"),
            "twise:1" | "twise:3" => {
                assert!(err.contains("(100.0%)"), "{strategy}: {err}");
                // Every value each option takes in some valid configuration is in the sample.
                for i in 0..names.len() {
                    let wanted: HashSet<&String> = all_rows.iter().map(|r| &r[i]).collect();
                    let got: HashSet<&String> = rows.iter().map(|r| &r[i]).collect();
                    assert_eq!(got, wanted, "{strategy}: values of `{}`", names[i]);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn random_sample_has_exactly_the_requested_size() {
    let (out, _) = ok(&[
        "space",
        "sample",
        s(&xz()),
        "-s",
        "random:20",
        "--seed",
        "11",
    ]);
    let (_, rows) = parse_csv(&out);
    assert_eq!(rows.len(), 20);
    assert_eq!(out.lines().count(), 21);
}

// ---------------------------------------------------------------------------------------
// 4. file:PATH round trip
// ---------------------------------------------------------------------------------------

#[test]
fn file_strategy_round_trips_a_written_sample() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("picked.csv");
    let (out, err) = ok(&[
        "space",
        "sample",
        s(&xz()),
        "-s",
        "random:20",
        "--seed",
        "5",
        "-o",
        s(&file),
    ]);
    assert_eq!(out, "", "with -o, stdout stays empty");
    assert!(err.contains("20 configurations"), "{err}");
    let written = fs::read_to_string(&file).unwrap();
    let (_, rows) = parse_csv(&written);
    assert_eq!(rows.len(), 20);

    let strategy = format!("file:{}", file.display());
    let (back, err) = ok(&["space", "sample", s(&xz()), "-s", &strategy]);
    assert_eq!(back, written);
    assert!(
        err.starts_with(&format!("{strategy}: 20 configurations of 1560 valid")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// 5. space check
// ---------------------------------------------------------------------------------------

#[test]
fn check_names_the_broken_rules_of_an_invalid_configuration() {
    let space = xz();
    let args = [
        "space",
        "check",
        s(&space),
        "format,format_lzma,check_crc64,level=6,threads=2",
    ];
    let out = run_knobs(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("configuration: invalid: "), "{stdout}");
    assert!(
        stdout.contains("`check_crc64` requires its parent `format_xz`"),
        "{stdout}"
    );
    assert!(stdout.contains("format_lzma => threads=1"), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn check_accepts_a_valid_configuration() {
    let (out, err) = ok(&[
        "space",
        "check",
        s(&xz()),
        "format,format_xz,check_crc64,level=6,threads=2",
    ]);
    assert_eq!(out, "configuration: valid\n");
    assert_eq!(err, "");
    let (out, _) = ok(&[
        "space",
        "check",
        s(&xz()),
        "extreme,format,format_lzma,level=9,threads=1,custom_mf,mf_bt4",
    ]);
    assert_eq!(out, "configuration: valid\n");
}

#[test]
fn check_csv_gives_every_row_a_verdict() {
    let dir = TempDir::new().unwrap();
    let names = option_names(&xz()).join(",");
    // Row 2 valid; row 3 selects both formats and uses 4 threads with lzma.
    let csv =
        format!("{names}\n1,2,4,1,1,0,0,1,0,0,1,0,1,0,0,0\n1,2,4,1,1,1,0,1,0,0,1,0,1,0,0,0\n");
    fs::write(dir.path().join("mixed.csv"), csv).unwrap();
    let space = xz();
    let args = ["space", "check", s(&space), "--csv", "mixed.csv"];
    let out = run_knobs(&args, Some(dir.path()));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0], "mixed.csv:2: valid");
    assert!(lines[1].starts_with("mixed.csv:3: invalid: "), "{stdout}");
    assert!(lines[1].contains("format_xz, format_lzma"), "{stdout}");
    assert!(lines[1].contains("format_lzma => threads=1"), "{stdout}");
}

#[test]
fn check_and_count_print_json() {
    // An invalid configuration: exit status 1 still, and the rules it breaks, as the text.
    let space = xz();
    let config = "format,format_lzma,check_crc64,level=6,threads=2";
    let args = ["space", "check", s(&space), config, "--json"];
    let out = run_knobs(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &out)));
    assert_eq!(json["all_valid"], false, "{json}");
    let rows = json["configurations"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{json}");
    assert_eq!(rows[0]["valid"], false, "{json}");
    let broken: Vec<&str> = rows[0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        broken
            .iter()
            .any(|r| r.contains("`check_crc64` requires its parent `format_xz`")),
        "{json}"
    );
    assert!(
        broken
            .iter()
            .any(|r| r.contains("format_lzma => threads=1")),
        "{json}"
    );
    // The same rules as the text output names.
    let text_out = text(&run_knobs(&args[..4], None).stdout);
    assert_eq!(
        text_out.trim_end(),
        format!("configuration: invalid: {}", broken.join("; "))
    );
    assert_eq!(text(&out.stderr), "");

    // A CSV: one entry per row, labelled by line, with the configuration it reads.
    let dir = TempDir::new().unwrap();
    let names = option_names(&xz()).join(",");
    let csv =
        format!("{names}\n1,2,4,1,1,0,0,1,0,0,1,0,1,0,0,0\n1,2,4,1,1,1,0,1,0,0,1,0,1,0,0,0\n");
    fs::write(dir.path().join("mixed.csv"), csv).unwrap();
    let args = ["space", "check", s(&space), "--csv", "mixed.csv", "--json"];
    let out = run_knobs(&args, Some(dir.path()));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["configurations"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{json}");
    assert_eq!(rows[0]["label"], "mixed.csv:2", "{json}");
    assert_eq!(rows[0]["valid"], true, "{json}");
    assert_eq!(rows[0]["violations"].as_array().unwrap().len(), 0, "{json}");
    assert_eq!(rows[1]["label"], "mixed.csv:3", "{json}");
    assert_eq!(rows[1]["valid"], false, "{json}");
    // The configuration read back through `space check` is the row it came from.
    let row2 = rows[0]["configuration"].as_str().unwrap();
    let (out, _) = ok(&["space", "check", s(&space), row2]);
    assert_eq!(out, "configuration: valid\n");

    // Count: the number as a string (counts outgrow JSON numbers), equal to the text.
    let (out, _) = ok(&["space", "count", s(&x264()), "--json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["valid_configurations"], "1152", "{out}");
    let (out, _) = ok(&["space", "count", s(&xz()), "--json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (plain, _) = ok(&["space", "count", s(&xz())]);
    assert_eq!(json["valid_configurations"], plain.trim(), "{out}");
}

// ---------------------------------------------------------------------------------------
// 6. bad input: exit status 2, one line on stderr
// ---------------------------------------------------------------------------------------

#[test]
fn truncated_xml_names_file_and_line() {
    // The file breaks off on line 4, inside the root element opened on line 2.
    let xml =
        "<?xml version=\"1.0\"?>\n<vm name=\"x\">\n  <binaryOptions>\n    <configurationOption>";
    let e = error_on_file("trunc.xml", xml, &["space", "count", "trunc.xml"]);
    assert!(e.starts_with("knobs: error: trunc.xml:"), "{e}");
    assert!(
        e.starts_with("knobs: error: trunc.xml:4: "),
        "the error should name line 4, where the file ends: {e}"
    );
}

#[test]
fn truncated_real_feature_model_is_an_error() {
    let full = fs::read_to_string(x264()).unwrap();
    let cut: String = full.lines().take(10).collect::<Vec<_>>().join("\n");
    let e = error_on_file(
        "FeatureModel.xml",
        &cut,
        &["space", "sample", "FeatureModel.xml", "-s", "pairwise"],
    );
    assert!(e.starts_with("knobs: error: FeatureModel.xml:"), "{e}");
}

#[test]
fn mismatched_xml_tag_names_the_line() {
    let e = error_on_file(
        "mis.xml",
        "<?xml version=\"1.0\"?>\n<vm name=\"x\">\n<binaryOptions>\n</vm>\n",
        &["space", "count", "mis.xml"],
    );
    assert!(e.starts_with("knobs: error: mis.xml:4: "), "{e}");
}

#[test]
fn malformed_dimacs_names_the_line() {
    let e = error_on_file(
        "bad.dimacs",
        "c 1 a\nc 2 b\np cnf 2 2\n1 0\n-1 zz 0\n",
        &["space", "count", "bad.dimacs"],
    );
    assert_eq!(e, "knobs: error: bad.dimacs:5: `zz` is not a literal");

    let e = error_on_file(
        "big.cnf",
        "p cnf 2 1\n\n1 3 0\n",
        &["space", "show", "big.cnf"],
    );
    assert!(
        e.starts_with("knobs: error: big.cnf:3: literal 3 exceeds"),
        "{e}"
    );
}

#[test]
fn malformed_check_csv_names_the_line() {
    let names = option_names(&xz()).join(",");
    let good = "1,2,4,1,1,0,0,1,0,0,1,0,1,0,0,0";
    let e = error_on_file(
        "short.csv",
        &format!("{names}\n{good}\n{good}\n1,2,4\n"),
        &["space", "check", s(&xz()), "--csv", "short.csv"],
    );
    assert_eq!(
        e,
        "knobs: error: short.csv:4: row has 3 fields but the header has 16"
    );

    let e = error_on_file(
        "nan.csv",
        &format!("{names}\n{good}\n1,2,4,1,1,0,0,1,0,0,1,0,1,0,0,x\n"),
        &["space", "check", s(&xz()), "--csv", "nan.csv"],
    );
    assert_eq!(
        e,
        "knobs: error: nan.csv:3: `x` is not a number (column `mf_bt4`)"
    );

    let e = error_on_file(
        "cols.csv",
        "extreme,level\n1,2\n",
        &["space", "check", s(&xz()), "--csv", "cols.csv"],
    );
    assert!(
        e.starts_with("knobs: error: cols.csv:1: no column for option"),
        "{e}"
    );
}

#[test]
fn spec_constraint_with_unknown_option() {
    let e = error_on_file(
        "unk.toml",
        "name = \"u\"\nconstraints = [\"a | q\"]\n[[option]]\nname = \"a\"\n",
        &["space", "count", "unk.toml"],
    );
    assert!(e.contains("unk.toml"), "{e}");
    assert!(e.contains("unknown option `q`"), "{e}");
    assert!(e.contains("constraints[1]"), "{e}");
}

#[test]
fn spec_syntax_error_names_the_line() {
    let e = error_on_file(
        "s.toml",
        "[[option]]\nname = \"a\"\nvalues = \"x\"\n",
        &["space", "count", "s.toml"],
    );
    assert!(e.starts_with("knobs: error: s.toml:3: "), "{e}");
}

#[test]
fn unsatisfiable_spec() {
    let dir = TempDir::new().unwrap();
    fs::write(
        dir.path().join("unsat.toml"),
        "name = \"u\"\nconstraints = [\"a\", \"!a\"]\n[[option]]\nname = \"a\"\n",
    )
    .unwrap();
    for args in [
        &["space", "count", "unsat.toml"][..],
        &["space", "sample", "unsat.toml", "-s", "all"][..],
        &["space", "check", "unsat.toml", "a"][..],
    ] {
        let e = error_in(args, Some(dir.path()));
        assert!(e.starts_with("knobs: error: unsatisfiable"), "{e}");
        assert!(e.contains("unsat.toml"), "{e}");
    }
}

#[test]
fn predict_csv_of_the_wrong_width_names_the_line() {
    let dir = TempDir::new().unwrap();
    let (model, _) = ok(&[
        "model",
        "from-subspaces",
        "--options",
        "A,C",
        "0",
        "3",
        "0",
        "6",
    ]);
    fs::write(dir.path().join("m.json"), model).unwrap();
    fs::write(dir.path().join("short.csv"), "A,B,C\n0,0,0\n1,1,1\n1,0\n").unwrap();
    let e = error_in(&["predict", "m.json", "short.csv"], Some(dir.path()));
    assert_eq!(
        e,
        "knobs: error: short.csv:4: row has 2 fields but the header has 3"
    );
    fs::write(dir.path().join("long.csv"), "A,B,C\n0,0,0,1\n").unwrap();
    let e = error_in(&["predict", "m.json", "long.csv"], Some(dir.path()));
    assert_eq!(
        e,
        "knobs: error: long.csv:2: row has 4 fields but the header has 3"
    );
    fs::write(dir.path().join("lacks.csv"), "A,B\n0,0\n").unwrap();
    let e = error_in(&["predict", "m.json", "lacks.csv"], Some(dir.path()));
    assert!(e.starts_with("knobs: error: lacks.csv:1: "), "{e}");
    assert!(e.contains("`C`"), "{e}");
}

#[test]
fn unknown_or_malformed_strategy() {
    let e = error(&["space", "sample", s(&xz()), "-s", "bogus"]);
    assert!(e.contains("unknown sampling strategy `bogus`"), "{e}");
    let e = error(&["space", "sample", s(&xz()), "-s", "twise:4"]);
    assert!(e.contains("4"), "{e}");
    let e = error(&["space", "sample", s(&xz()), "-s", "random:0"]);
    assert!(e.contains("`0` is not a positive"), "{e}");
    let e = error(&["space", "sample", s(&xz()), "-s", "random"]);
    assert!(e.contains("random"), "{e}");
    let e = error(&["space", "sample", s(&xz()), "-s", "all:3"]);
    assert!(e.contains("unknown sampling strategy"), "{e}");
}

#[test]
fn missing_files() {
    let dir = TempDir::new().unwrap();
    let (model, _) = ok(&["model", "from-subspaces", "--options", "A", "1", "2"]);
    fs::write(dir.path().join("m.json"), model).unwrap();
    fs::write(dir.path().join("c.csv"), "A\n1\n").unwrap();
    let space = xz();
    let cases: [(&[&str], &str); 6] = [
        (&["space", "count", "nope.toml"], "nope.toml"),
        (&["space", "show", "nope.xml"], "nope.xml"),
        (
            &["space", "check", s(&space), "--csv", "nope.csv"],
            "nope.csv",
        ),
        (
            &["space", "sample", s(&space), "-s", "file:nope.csv"],
            "nope.csv",
        ),
        (&["predict", "nope.json", "c.csv"], "nope.json"),
        (&["predict", "m.json", "nope.csv"], "nope.csv"),
    ];
    let mut repeated = Vec::new();
    for (args, name) in cases {
        let e = error_in(args, Some(dir.path()));
        assert!(e.contains(name), "{e}");
        assert!(e.contains("No such file or directory"), "{e}");
        // The OS message is said once, not repeated by the cause chain.
        if e.matches("No such file or directory").count() != 1 {
            repeated.push(format!("knobs {}\n    {e}", args.join(" ")));
        }
    }
    assert!(
        repeated.is_empty(),
        "the OS message is repeated:\n{}",
        repeated.join("\n")
    );
}

#[test]
fn check_of_a_configuration_naming_an_unknown_option() {
    let e = error(&[
        "space",
        "check",
        s(&xz()),
        "format,format_xz,check_crc64,level=6,threads=1,turbo",
    ]);
    assert!(e.contains("unknown option `turbo`"), "{e}");
    let e = error(&[
        "space",
        "check",
        s(&xz()),
        "format,format_xz,check_crc64,level=7.5,threads=1",
    ]);
    assert!(e.contains("`7.5` is not a value of option `level`"), "{e}");
    let e = error(&[
        "space",
        "check",
        s(&xz()),
        "format,format_xz,check_crc64,threads=1",
    ]);
    assert!(e.contains("`level`"), "{e}");
    let e = error(&["space", "check", s(&xz())]);
    assert!(e.contains("--csv"), "{e}");
}

#[test]
fn unknown_space_format() {
    let e = error_on_file("space.yaml", "a: 1\n", &["space", "count", "space.yaml"]);
    assert!(
        e.contains("space.yaml") && e.contains("unknown space format"),
        "{e}"
    );
}

/// Writing to a closed pipe (`knobs … | head -1`) must not panic.
#[test]
fn closed_stdout_does_not_panic() {
    for args in [
        vec!["space", "count", s(&x264())],
        vec!["space", "show", s(&x264())],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_knobs"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before knobs gets to write.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "knobs {}: {stderr}",
            args.join(" ")
        );
    }
}

// ---------------------------------------------------------------------------------------
// 7. models: from-subspaces, show, predict, subspaces
// ---------------------------------------------------------------------------------------

#[test]
fn model_round_trip_through_subspaces_show_and_predict() {
    let dir = TempDir::new().unwrap();
    let (json, _) = ok(&[
        "model",
        "from-subspaces",
        "--options",
        "A,C",
        "0",
        "3",
        "0",
        "6",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("model JSON");
    assert_eq!(v["format"], "knobs-model");
    assert_eq!(v["version"], 1);
    let terms = v["terms"].as_array().unwrap();
    assert_eq!(terms.len(), 2, "{json}");
    let model = dir.path().join("m.json");
    fs::write(&model, &json).unwrap();

    let (shown, _) = ok(&["model", "show", s(&model)]);
    assert!(
        shown.starts_with(
            "3.00·A + 3.00·A·C\neffects over the 4 combinations of the options' values \
             (constraints unknown); the predictions span 6.00:\n  option A "
        ),
        "{shown}"
    );

    let configs = [
        [0, 0, 0],
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 1, 0],
        [1, 0, 1],
        [0, 1, 1],
        [1, 1, 1],
    ];
    let mut csv = String::from("A,B,C\n");
    let mut expected = String::from("A,B,C,prediction\n");
    for [a, b, c] in configs {
        csv += &format!("{a},{b},{c}\n");
        let prediction = 3.0 * a as f64 + 3.0 * (a * c) as f64;
        expected += &format!("{a},{b},{c},{prediction}\n");
    }
    let configs_file = dir.path().join("configs.csv");
    fs::write(&configs_file, csv).unwrap();
    let (predicted, _) = ok(&["predict", s(&model), s(&configs_file)]);
    assert_eq!(predicted, expected);
    let (_, rows) = parse_csv(&predicted);
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[7].last().unwrap(), "6");

    let (cells, _) = ok(&["model", "subspaces", s(&model), "--options", "A,C"]);
    assert_eq!(cells, "A,C,value\n0,0,0\n1,0,3\n0,1,0\n1,1,6\n");
}

#[test]
fn subspaces_round_trip_with_three_options_and_negative_cells() {
    let dir = TempDir::new().unwrap();
    let cells = ["-1.5", "2", "0.25", "7", "-3", "0", "4.5", "10"];
    let mut args = vec!["model", "from-subspaces", "--options", "X,Y,Z"];
    args.extend(cells);
    let (json, _) = ok(&args);
    let model = dir.path().join("m.json");
    fs::write(&model, json).unwrap();
    let (out, _) = ok(&["model", "subspaces", s(&model), "--options", "X,Y,Z"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "X,Y,Z,value");
    assert_eq!(lines.len(), 9);
    for (m, line) in lines[1..].iter().enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        let bits: Vec<String> = (0..3).map(|j| ((m >> j) & 1).to_string()).collect();
        assert_eq!(
            &fields[..3],
            &bits.iter().map(String::as_str).collect::<Vec<_>>()[..],
            "cell {m}"
        );
        let got: f64 = fields[3].parse().unwrap();
        let want: f64 = cells[m].parse().unwrap();
        assert_eq!(got, want, "cell {m}");
    }
    // Predicting the 8 configurations gives the cells back too.
    let mut csv = String::from("X,Y,Z\n");
    for m in 0..8 {
        csv += &format!("{},{},{}\n", m & 1, (m >> 1) & 1, (m >> 2) & 1);
    }
    let configs = dir.path().join("c.csv");
    fs::write(&configs, csv).unwrap();
    let (predicted, _) = ok(&["predict", s(&model), s(&configs)]);
    let (header, rows) = parse_csv(&predicted);
    assert_eq!(header, ["X", "Y", "Z", "prediction"]);
    for (m, r) in rows.iter().enumerate() {
        assert_eq!(
            r[3].parse::<f64>().unwrap(),
            cells[m].parse::<f64>().unwrap(),
            "configuration {m}"
        );
    }
}

#[test]
fn from_subspaces_rejects_bad_cells() {
    let e = error(&["model", "from-subspaces", "--options", "A,C", "0", "3", "0"]);
    assert!(e.contains("4 cells"), "{e}");
    let e = error(&[
        "model",
        "from-subspaces",
        "--options",
        "A,A",
        "0",
        "3",
        "0",
        "1",
    ]);
    assert!(e.contains("twice"), "{e}");
}

/// A cell that is not a finite number must not produce a model file that knobs itself
/// cannot read back: either reject it (exit 2) or write something loadable.
#[test]
fn from_subspaces_never_writes_an_unreadable_model() {
    let dir = TempDir::new().unwrap();
    for bad in ["nan", "inf"] {
        let args = ["model", "from-subspaces", "--options", "A", "0", bad];
        let out = run_knobs(&args, None);
        assert!(
            !text(&out.stderr).contains("panicked"),
            "{}",
            describe(&args, &out)
        );
        if out.status.code() == Some(2) {
            continue;
        }
        assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
        let model = dir.path().join(format!("{bad}.json"));
        fs::write(&model, &out.stdout).unwrap();
        let shown = run_knobs(&["model", "show", s(&model)], None);
        assert_eq!(
            shown.status.code(),
            Some(0),
            "`knobs model from-subspaces --options A 0 {bad}` exited 0 but wrote a model `knobs model show` rejects:\n{}\n{}",
            text(&out.stdout),
            text(&shown.stderr)
        );
    }
}

// ---------------------------------------------------------------------------------------
// 8. help
// ---------------------------------------------------------------------------------------

#[test]
fn help_pages() {
    for args in [
        &["--help"][..],
        &["space", "--help"][..],
        &["space", "sample", "--help"][..],
        &["space", "check", "--help"][..],
        &["predict", "--help"][..],
        &["model", "--help"][..],
        &["model", "from-subspaces", "--help"][..],
    ] {
        let (out, _) = ok(args);
        assert!(out.contains("Usage:"), "knobs {}: {out}", args.join(" "));
    }
    let (out, _) = ok(&["space", "sample", "--help"]);
    for strategy in ["pairwise", "twise:T", "random:N", "distance:N", "file:PATH"] {
        assert!(
            out.contains(strategy),
            "sample --help lacks `{strategy}`: {out}"
        );
    }
    let (out, _) = ok(&["--help"]);
    for command in ["space", "predict", "model"] {
        assert!(out.contains(command), "{out}");
    }
}

/// Every command's `--help` ends with an example that runs the bundled examples.
#[test]
fn every_command_has_an_example() {
    let commands: &[&[&str]] = &[
        &["space", "show"],
        &["space", "count"],
        &["space", "check"],
        &["space", "sample"],
        &["predict"],
        &["model", "show"],
        &["model", "from-subspaces"],
        &["model", "subspaces"],
        &["init"],
        &["measure"],
        &["results", "show"],
        &["results", "export"],
        &["learn"],
        &["evaluate"],
        &["experiment", "deepperf"],
        &["experiment", "compare"],
        &["crush"],
        &["comprex"],
        &["report"],
        &["trace"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let (out, _) = ok(&args);
        let example = out
            .split_once("\nExample:\n  knobs ")
            .map(|(_, e)| e)
            .unwrap_or_else(|| panic!("knobs {} --help has no example: {out}", command.join(" ")));
        let call = format!("knobs {} ", command.join(" "));
        assert!(
            format!("knobs {example}").contains(&call),
            "knobs {} --help: the example does not call `{call}`: {out}",
            command.join(" ")
        );
    }
    // One spelling per concept: the old flags are gone, the new ones documented.
    let (out, _) = ok(&["experiment", "compare", "--help"]);
    assert!(out.contains("--sample <SAMPLE>"), "{out}");
    assert!(out.contains("--repetitions <REPETITIONS>"), "{out}");
    assert!(
        !out.contains("--strategies") && !out.contains("--reps "),
        "{out}"
    );
    let (out, _) = ok(&["experiment", "deepperf", "--help"]);
    assert!(out.contains("--repetitions <REPETITIONS>"), "{out}");
    assert!(out.contains("each with its own seed"), "{out}");
    // Every `--space` option says what it is.
    for command in [
        &["learn"][..],
        &["evaluate"],
        &["experiment", "deepperf"],
        &["experiment", "compare"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let (out, _) = ok(&args);
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("--space <SPACE>"))
            .unwrap_or_else(|| panic!("no --space in {out}"));
        assert!(line.contains("Variability model"), "{line}");
    }
}

#[test]
fn usage_errors_exit_2() {
    // clap's own errors also use exit status 2 and do not panic.
    let out = run_knobs(&["space", "sample", s(&xz())], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(!text(&out.stderr).contains("panicked"));
    let out = run_knobs(&["frobnicate"], None);
    assert_eq!(out.status.code(), Some(2));
}
