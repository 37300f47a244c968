//! ConfigCrusher with options kept the three ways real programs keep them, each named by a
//! `source` in the spec: struct fields set by argv parsing, and `getenv("TURBO")`. A real C
//! program is compiled, analysed, instrumented and run; the model must be
//! `5 + 10·fast + 5·level + 20·level·turbo` ms exactly, with `quiet` irrelevant. The
//! program's work is counted on the region timers' test clock (`common::test_clock_settings`),
//! not slept, so the model does not depend on the machine's speed or load; how well the
//! timers do on real hardware is the benchmark runner's (`cargo run --release -p bench`,
//! ConfigCrusher's Table 7).

mod common;

use measure::SystemSpec;

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>

/* The first field is not an option: the analysis treats field 0 as the whole object (its
   address is the struct's), so an option there would mix with the others. */
struct options { const char *program; int fast; int level; int quiet; };
static struct options opts;

int main(int argc, char **argv) {
    opts.program = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fast")) opts.fast = 1;
        if (!strcmp(argv[i], "--level")) opts.level = 1;
        if (!strcmp(argv[i], "--quiet")) opts.quiet = 1;
    }
    const char *mode = getenv("TURBO");
    int turbo = mode && mode[0] == '1';
    WORK_MS(5);
    if (opts.fast) WORK_MS(10);
    if (opts.level) {
        WORK_MS(5);
        if (turbo) WORK_MS(20);
    }
    return 0;
}
"#;

const SPEC: &str = r#"
name = "sources"
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
name = "fast"
on = ["--fast"]
source = { struct = "options", field = "fast" }

[[option]]
name = "level"
on = ["--level"]
source = { struct = "options", field = 2 }

[[option]]
name = "turbo"
env = { TURBO = "{value}" }
source = { function = "getenv", arg = "TURBO" }

[[option]]
name = "quiet"
on = ["--quiet"]
source = { struct = "options", field = "quiet" }
"#;

#[test]
fn struct_fields_and_getenv_as_option_sources() {
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
    assert_eq!(analysed.irrelevant, ["quiet"]);
    let mut interactions = analysed.interactions(&spec);
    interactions.sort();
    assert_eq!(interactions, [vec!["fast"], vec!["level", "turbo"]]);
    assert_eq!(analysed.compression.configurations.len(), 4, "of 16");

    let (_, model) = common::instrument_measure_model(dir.path(), &spec, &settings, &analysed);
    let bound = model.bind(&spec.space.names()).unwrap();
    let text = model.terms.format(4);
    // The model predicts the program's work exactly: with the test clock the process's start
    // and exit take no time, and the probes' cost is taken out exactly.
    let expected_of =
        |on: &dyn Fn(usize) -> f64| 0.005 + 0.010 * on(0) + 0.005 * on(1) + 0.020 * on(1) * on(2);
    for bits in 0..16u32 {
        let on = |k: usize| f64::from(bits >> k & 1);
        let expected = expected_of(&on);
        let predicted = bound.predict(&(0..4).map(on).collect::<Vec<_>>());
        assert!(
            (predicted - expected).abs() < 1e-9,
            "configuration {bits:04b}: predicted {predicted}, expected {expected}; model {text}"
        );
    }
    assert!(!text.contains("quiet"), "quiet is irrelevant: {text}");
}
