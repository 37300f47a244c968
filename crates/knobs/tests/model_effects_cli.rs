//! Effects mean what they say: on real learned models of a space with a numeric option and
//! an alternative, every effect `knobs model show` and `knobs report` print is at most the
//! model's own largest prediction difference over the valid configurations, which `knobs
//! predict --top` lists independently.

mod common;

use std::path::Path;

use common::{knobs_ok, ok, s, write_spec};

/// `sleep` summing a duration per option: a numeric option `level`, a binary `extreme` and
/// a mandatory alternative of three checks: 24 valid configurations.
const SPEC: &str = r#"
name = "sleeper"

[run]
program = "sleep"
args = ["0.005", "{options}"]
timeout = 10

[measure]
repetitions = 1
metric = "wall"

[[workload]]
name = "none"

[[option]]
name = "extreme"
on = ["0.01"]

[[option]]
name = "level"
values = [0, 3, 6, 9]
arg = ["0.00{value}"]

[[option]]
name = "check"
mandatory = true

[[option]]
name = "check_a"
parent = "check"
on = ["0.001"]

[[option]]
name = "check_b"
parent = "check"
on = ["0.002"]

[[option]]
name = "check_c"
parent = "check"
on = ["0.004"]

[[group]]
kind = "alternative"
parent = "check"
members = ["check_a", "check_b", "check_c"]
"#;

/// Seconds of a printed value (`12.34 ms`, `0.5 s`, `803 µs`), or the factor of `×1.85`.
fn value_of(text: &str) -> f64 {
    let text = text.trim();
    if let Some(ratio) = text.strip_prefix('×') {
        return ratio.trim().parse().unwrap();
    }
    let text = text.trim_start_matches(['+', '−']);
    let (number, unit) = text.split_once(' ').unwrap_or((text, "s"));
    let factor = match unit.trim() {
        "s" => 1.0,
        "ms" => 1e-3,
        "µs" => 1e-6,
        "ns" => 1e-9,
        other => panic!("unit `{other}` in `{text}`"),
    };
    let number = number.replace('−', "-");
    number.parse::<f64>().unwrap() * factor
}

/// The largest prediction difference over the valid configurations, as `knobs predict
/// --top` lists them (a ratio of predictions for a log model).
fn independent_spread(model: &Path, spec: &Path, log: bool) -> f64 {
    let top = ok(&["predict", s(model), "--spec", s(spec), "--top", "100"]).0;
    let predictions: Vec<f64> = top
        .lines()
        .map(|l| {
            let mut words = l.split_whitespace();
            value_of(&format!(
                "{} {}",
                words.next().unwrap(),
                words.next().unwrap()
            ))
        })
        .collect();
    assert_eq!(predictions.len(), 24, "{top}");
    let lo = predictions.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = predictions
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    if log { hi / lo } else { hi - lo }
}

/// The magnitude of an effect: |difference|, or for a ratio the larger of it and its inverse.
fn magnitude(effect: f64, log: bool) -> f64 {
    if log {
        effect.max(1.0 / effect)
    } else {
        effect.abs()
    }
}

#[test]
fn printed_effects_never_exceed_the_models_spread() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), SPEC);
    knobs_ok(&["measure", "--sample", "all", "--spec"], &spec);
    let store = dir.path().join("knobs.db");
    for learner in ["stepwise", "stepwise:log"] {
        let log = learner.ends_with("log");
        let model = dir.path().join(format!("{learner}.json"));
        ok(&["learn", s(&store), "--learner", learner, "-o", s(&model)]);
        let spread = independent_spread(&model, &spec, log);
        let shown = ok(&["model", "show", s(&model), "--spec", s(&spec)]).0;
        let (_, after) = shown
            .split_once("the predictions span ")
            .unwrap_or_else(|| panic!("{shown}"));
        let printed_spread = value_of(after.lines().next().unwrap().trim_end_matches(':'));
        let tolerance = 0.01 * (spread - if log { 1.0 } else { 0.0 }).abs() + 1e-5;
        assert!(
            (printed_spread - spread).abs() <= tolerance,
            "{learner}: printed {printed_spread}, predictions span {spread}\n{shown}"
        );
        let effects: Vec<f64> = shown
            .lines()
            .filter(|l| l.starts_with("  option ") || l.starts_with("  term "))
            .map(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                let value = if log {
                    words[2].to_string()
                } else {
                    format!("{} {}", words[2], words[3])
                };
                value_of(&value)
            })
            .collect();
        assert!(effects.len() >= 3, "{shown}");
        for e in &effects {
            assert!(
                magnitude(*e, log) <= spread + tolerance,
                "{learner}: effect {e} > spread {spread}\n{shown}"
            );
        }
        let page = dir.path().join("report.html");
        ok(&[
            "report",
            "--spec",
            s(&spec),
            "--model",
            s(&model),
            "-o",
            s(&page),
        ]);
        let html = std::fs::read_to_string(&page).unwrap();
        let top = html
            .split_once("Most influential option: <strong>")
            .unwrap_or_else(|| panic!("no headline"))
            .1;
        let (option, rest) = top.split_once("</strong> (").unwrap();
        let effect = value_of(rest.split_once(',').unwrap().0);
        assert!(
            magnitude(effect, log) <= spread + tolerance,
            "{learner}: report's {option} {effect} > spread {spread}"
        );
    }
}
