//! One formatting of values and labels across commands: exports drop floating-point noise
//! (12 significant digits) as predictions do, `results show` names a `--metric` as given, and ratios to the
//! reference are labelled as ratios.

mod common;

use common::{knobs_ok, ok, s, write_spec};

const SPEC: &str = r#"
name = "sleeper"
[run]
program = "sleep"
args = ["0.003", "{options}"]
timeout = 10
[measure]
repetitions = 2
metric = "wall"
[[workload]]
name = "none"
[[option]]
name = "a"
on = ["0.004"]
[[option]]
name = "b"
on = ["0.002"]
"#;

/// Significant digits of a number as printed (`0.310332` → 6; `1.0588235294117647` → 17).
fn significant_digits(text: &str) -> usize {
    let mantissa = text.split(['e', 'E']).next().unwrap();
    mantissa
        .chars()
        .filter(|c| c.is_ascii_digit())
        .skip_while(|c| *c == '0')
        .count()
}

#[test]
fn exports_and_results_show_print_values_and_labels_one_way() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), SPEC);
    knobs_ok(&["measure", "--sample", "all", "--spec"], &spec);
    // Ratios to the reference: divisions, which print 17 digits unless rounded.
    let export = ok(&[
        "results",
        "export",
        "--spec",
        s(&spec),
        "--drift",
        "relative",
    ])
    .0;
    let rows: Vec<&str> = export.lines().skip(1).collect();
    assert_eq!(rows.len(), 4, "{export}");
    for row in rows {
        let value = row.rsplit(',').next().unwrap();
        assert!(significant_digits(value) <= 12, "{value} in {export}");
    }
    let (_, err) = ok(&["results", "show", "--spec", s(&spec), "--metric", "max_rss"]);
    assert!(err.contains("metric: max_rss (--metric)"), "{err}");
    let (out, _) = ok(&["results", "show", "--spec", s(&spec), "--drift", "relative"]);
    let heading = out.lines().next().unwrap();
    assert!(heading.contains("metric wall per reference"), "{heading}");
}
