//! ConfigCrusher with a numeric option: `level` (1, 3 or 5) sets a loop's trip count and,
//! with `fast`, whether extra work runs; `check` is independent. The regions' local models
//! use value indicators (`level=3`, `level=5`), and the compressed configurations cover
//! {fast, level} in 6 of the 12 configurations. The program's work is counted on the region
//! timers' test clock (`common::test_clock_settings`), not slept, so the model is exact
//! whatever the machine is doing; how well the timers do on real hardware is the benchmark
//! runner's (`cargo run --release -p bench`, ConfigCrusher's Table 7).

mod common;

use measure::SystemSpec;

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>

int level = 1, fast, check;

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--level=", 8)) level = atoi(argv[i] + 8);
        if (!strcmp(argv[i], "--fast")) fast = 1;
        if (!strcmp(argv[i], "--check")) check = 1;
    }
    WORK_MS(3);
    for (int i = 0; i < level; i++)
        WORK_MS(2);
    if (fast && level > 2)
        WORK_MS(10);
    if (check)
        WORK_MS(4);
    return 0;
}
"#;

const SPEC: &str = r#"
name = "numeric"
[build]
sources = ["prog.c"]
[run]
program = "./prog"
args = ["{options}"]
[measure]
repetitions = 3
[[workload]]
name = "none"

[[option]]
name = "level"
values = [1, 3, 5]
arg = ["--level={value}"]
source = { global = "level" }

[[option]]
name = "fast"
on = ["--fast"]
source = { global = "fast" }

[[option]]
name = "check"
on = ["--check"]
source = { global = "check" }
"#;

#[test]
fn a_numeric_option_gets_value_indicator_terms() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prog.c"),
        format!("{}{PROGRAM}", common::TEST_CLOCK_WORK),
    )
    .unwrap();
    let path = dir.path().join("knobs.toml");
    std::fs::write(&path, SPEC).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
    let settings = common::test_clock_settings(dir.path().join("work"));
    let analysed =
        configcrusher::analyse(&spec, &settings, &configcrusher::Options::default()).unwrap();
    let mut interactions = analysed.interactions(&spec);
    interactions.sort();
    assert_eq!(interactions, [vec!["check"], vec!["level", "fast"]]);
    assert_eq!(analysed.compression.lower_bound, 6);
    assert_eq!(analysed.compression.configurations.len(), 6, "of 12");

    let (_, model) = common::instrument_measure_model(dir.path(), &spec, &settings, &analysed);
    let text = model.terms.format(4);
    assert!(text.contains("level=5"), "value indicators in {text}");
    // The terms are the program's work (in seconds): 3 ms + 2 ms at level 1; 4 and 8 ms more
    // at levels 3 and 5; 10 ms when fast at either; 4 ms with check. Zero terms may be kept.
    let mut terms: Vec<(String, f64)> = model
        .terms
        .terms()
        .iter()
        .filter(|t| t.value.abs() > 1e-9)
        .map(|t| (t.label(), t.value))
        .collect();
    terms.sort_by(|a, b| a.0.cmp(&b.0));
    let want = [
        ("", 0.005),
        ("check", 0.004),
        ("fast·level=3", 0.010),
        ("fast·level=5", 0.010),
        ("level=3", 0.004),
        ("level=5", 0.008),
    ];
    assert_eq!(
        terms.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(),
        want.map(|(l, _)| l),
        "model {text}"
    );
    for ((label, value), (_, expected)) in terms.iter().zip(want) {
        assert!(
            (value - expected).abs() < 1e-9,
            "term `{label}`: {value}, expected {expected}; model {text}"
        );
    }
    let bound = model.bind(&spec.space.names()).unwrap();
    // The model predicts the program's work exactly: 3 ms, 2 ms per level, 10 ms when fast
    // at level 3 or 5, 4 ms with check. With the test clock the process's start and exit
    // take no time, and the probes' cost is taken out exactly.
    let expected_of = |level: f64, fast: f64, check: f64| {
        let extra = if fast == 1.0 && level > 2.0 {
            0.010
        } else {
            0.0
        };
        0.003 + 0.002 * level + extra + 0.004 * check
    };
    for level in [1.0, 3.0, 5.0] {
        for fast in [0.0, 1.0] {
            for check in [0.0, 1.0] {
                let expected = expected_of(level, fast, check);
                let predicted = bound.predict(&[level, fast, check]);
                assert!(
                    (predicted - expected).abs() < 1e-9,
                    "level {level}, fast {fast}, check {check}: predicted {predicted}, \
                     expected {expected}; model {text}"
                );
            }
        }
    }
}
