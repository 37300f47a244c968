//! ConfigCrusher with a numeric option: `level` (1, 3 or 5) sets a loop's trip count and,
//! with `fast`, whether extra work runs; `check` is independent. The regions' local models
//! use value indicators (`level=3`, `level=5`), and the compressed configurations cover
//! {fast, level} in 6 of the 12 configurations.

mod common;

use measure::SystemSpec;

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <time.h>

int level = 1, fast, check;

static void work(double ms) {
    struct timespec t = {0, (long)(ms * 1e6)};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--level=", 8)) level = atoi(argv[i] + 8);
        if (!strcmp(argv[i], "--fast")) fast = 1;
        if (!strcmp(argv[i], "--check")) check = 1;
    }
    work(3);
    for (int i = 0; i < level; i++)
        work(2);
    if (fast && level > 2)
        work(10);
    if (check)
        work(4);
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
    std::fs::write(dir.path().join("prog.c"), PROGRAM).unwrap();
    let path = dir.path().join("knobs.toml");
    std::fs::write(&path, SPEC).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
    let settings = instrumented::Settings::new(dir.path().join("work"));
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
    let bound = model.bind(&spec.space.names()).unwrap();
    // The model predicts the whole run, the process's start and exit included: the
    // configuration without options is the program's 5 ms and that; the options' effects are
    // the program's.
    let expected_of = |level: f64, fast: f64, check: f64| {
        let extra = if fast == 1.0 && level > 2.0 {
            0.010
        } else {
            0.0
        };
        0.003 + 0.002 * level + extra + 0.004 * check
    };
    let start_and_exit = bound.predict(&[1.0, 0.0, 0.0]) - expected_of(1.0, 0.0, 0.0);
    assert!(
        (-0.001..0.02).contains(&start_and_exit),
        "the base holds the process's start and exit: {start_and_exit} s; model {text}"
    );
    for level in [1.0, 3.0, 5.0] {
        for fast in [0.0, 1.0] {
            for check in [0.0, 1.0] {
                let expected = expected_of(level, fast, check) + start_and_exit;
                let predicted = bound.predict(&[level, fast, check]);
                assert!(
                    (predicted - expected).abs() < 0.15 * expected + 0.002,
                    "level {level}, fast {fast}, check {check}: predicted {predicted}, \
                     expected {expected}; model {text}"
                );
            }
        }
    }
}
