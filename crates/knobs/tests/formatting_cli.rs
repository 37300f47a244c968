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

/// A model from a sampling profiler is shown to the resolution its samples have: its values
/// are means of 1 ms samples, so in ms with one decimal; the same model without a sampling
/// period with two.
#[test]
fn a_sampled_model_is_shown_to_its_sampling_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let model = |period: Option<f64>| {
        let mut provenance = serde_json::json!({});
        if let Some(p) = period {
            provenance["profile_period_seconds"] = p.into();
        }
        serde_json::json!({
            "format": "knobs-model",
            "version": 1,
            "metric": "wall time (s)",
            "terms": [
                { "options": [], "value": 0.020 },
                { "options": ["A"], "value": 0.031 },
            ],
            "provenance": provenance,
        })
    };
    let shown = |name: &str, period: Option<f64>| {
        let path = dir.path().join(name);
        std::fs::write(&path, model(period).to_string()).unwrap();
        let out = knobs_ok(&["model", "show"], &path).text();
        out.lines()
            .find(|l| l.contains("·A"))
            .unwrap_or_else(|| panic!("no model line in {out}"))
            .to_string()
    };
    assert_eq!(shown("sampled.json", Some(0.001)), "20.0 + 31.0·A");
    assert_eq!(shown("timed.json", None), "20.00 + 31.00·A");
}
