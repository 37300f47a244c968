//! The most ordinary C, which a context-insensitive analysis turns into one interaction of
//! every option: a helper `burn (n)` bounded by its argument and called under each option, a
//! parameter setter `set_param (p, KEY, v)` storing every option into one object, and an
//! error printer that reads `-q` and is reached under every option's decisions. Each program
//! is compiled, analysed, instrumented and run on the region timers' test clock
//! (`common::test_clock_settings`): ConfigCrusher must compress to the optimal cover (the
//! lower bound) and its model must predict every configuration's work exactly.

mod common;

use measure::SystemSpec;

/// Analyses `program` under `spec`, checks the interactions and that the configurations to
/// measure are the lower bound, then measures them and checks the model against `expected`
/// (seconds of work) in every configuration of `configurations` (values in the spec's option
/// order).
fn compresses_and_models(
    program: &str,
    spec: &str,
    interactions: &[&[&str]],
    measured: usize,
    configurations: &[Vec<f64>],
    expected: impl Fn(&[f64]) -> f64,
) -> configcrusher::Analysed {
    compresses_and_models_with(
        &configcrusher::Options::default(),
        program,
        spec,
        interactions,
        measured,
        configurations,
        expected,
    )
}

/// [`compresses_and_models`] with these options.
fn compresses_and_models_with(
    options: &configcrusher::Options,
    program: &str,
    spec: &str,
    interactions: &[&[&str]],
    measured: usize,
    configurations: &[Vec<f64>],
    expected: impl Fn(&[f64]) -> f64,
) -> configcrusher::Analysed {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prog.c"),
        format!("{}{program}", common::TEST_CLOCK_WORK),
    )
    .unwrap();
    let path = dir.path().join("knobs.toml");
    std::fs::write(&path, spec).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
    let settings = common::test_clock_settings(dir.path().join("work"));
    let analysed = configcrusher::analyse(&spec, &settings, options).unwrap();
    let mut found = analysed.interactions(&spec);
    found.sort();
    let mut want: Vec<Vec<String>> = interactions
        .iter()
        .map(|i| i.iter().map(|s| s.to_string()).collect())
        .collect();
    want.sort();
    assert_eq!(found, want);
    assert_eq!(analysed.compression.configurations.len(), measured);
    assert_eq!(analysed.compression.lower_bound, measured as u128);

    let (_, model) = common::instrument_measure_model(dir.path(), &spec, &settings, &analysed);
    let bound = model.bind(&spec.space.names()).unwrap();
    let text = model.terms.format(4);
    for c in configurations {
        let predicted = bound.predict(c);
        let want = expected(c);
        assert!(
            (predicted - want).abs() < 1e-9,
            "configuration {c:?}: predicted {predicted}, expected {want}; model {text}"
        );
    }
    analysed
}

/// Every combination of binary options `n`, each with `extra` (a numeric option's values)
/// appended when given.
fn binary_configurations(n: usize, extra: &[f64]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for bits in 0..1u32 << n {
        let base: Vec<f64> = (0..n).map(|k| f64::from(bits >> k & 1)).collect();
        if extra.is_empty() {
            out.push(base);
        } else {
            for &v in extra {
                let mut c = base.clone();
                c.push(v);
                out.push(c);
            }
        }
    }
    out
}

const PARSE: &str = r#"
static void parse(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "-a")) A = 1;
        if (!strcmp(argv[k], "-b")) B = 1;
        if (!strcmp(argv[k], "-c")) C = 1;
        if (!strncmp(argv[k], "--level=", 8)) level = atoi(argv[k] + 8);
    }
}
"#;

fn spec(name: &str, third: &str, level: bool) -> String {
    let mut s = format!(
        r#"
name = "{name}"
[build]
sources = ["prog.c"]
[run]
program = "./prog"
args = ["{{options}}"]
[measure]
repetitions = 1
[[workload]]
name = "none"
[[option]]
name = "A"
on = ["-a"]
[[option]]
name = "B"
on = ["-b"]
[[option]]
name = "{third}"
on = ["-c"]
"#
    );
    if level {
        s.push_str(
            "[[option]]\nname = \"level\"\nvalues = [1, 2, 3]\narg = [\"--level={value}\"]\n",
        );
    }
    s
}

const BURN: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
__attribute__((annotate("knobs:option=level"))) int level = 1;
/* One microsecond of work per step: the helper's loop is bounded by its argument. */
static void burn(long n) { for (long i = 0; i < n; i++) __knobs_test_work(1000); }
PARSE
int main(int argc, char **argv) {
    parse(argc, argv);
    burn(1000);
    burn(level * 2000);
    if (A) burn(3000);
    burn(B ? 4000 : 1000);
    if (C) burn(5000);
    return 0;
}
"#;

/// `burn (n)` called under four options: each call site decides, on what it passes, so the
/// options stay apart and three configurations (the level's values) cover them.
#[test]
fn a_helper_bounded_by_its_argument_keeps_its_callers_options_apart() {
    compresses_and_models(
        &BURN.replace("PARSE", PARSE),
        &spec("burn", "C", true),
        &[&["A"], &["B"], &["C"], &["level"]],
        3,
        &binary_configurations(3, &[1.0, 2.0, 3.0]),
        |c| {
            let b = if c[1] == 1.0 { 0.004 } else { 0.001 };
            0.001 + 0.002 * c[3] + 0.003 * c[0] + b + 0.005 * c[2]
        },
    );
}

const SETTER: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
int level;
enum { P_A, P_B, P_C };
/* The first field is not a parameter: field 0 stands for the whole object. */
struct params { const char *name; long a; long b; long c; };
static void set_param(struct params *p, int key, long v) {
    switch (key) {
    case P_A: p->a = v; break;
    case P_B: p->b = v; break;
    case P_C: p->c = v; break;
    }
}
static void run(const struct params *p) {
    WORK_MS(1);
    if (p->a) WORK_MS(3);
    if (p->b) WORK_MS(2);
    if (p->c) WORK_MS(5);
}
PARSE
int main(int argc, char **argv) {
    parse(argc, argv);
    struct params p = { argv[0], 0, 0, 0 };
    set_param(&p, P_A, A);
    set_param(&p, P_B, B);
    set_param(&p, P_C, C);
    run(&p);
    return 0;
}
"#;

/// One setter stores every option into one object, each under a constant selector: its
/// stores are made per call site, so each field holds its own option.
#[test]
fn a_setter_with_a_constant_selector_keeps_the_fields_apart() {
    compresses_and_models(
        &SETTER.replace("PARSE", PARSE),
        &spec("setter", "C", false),
        &[&["A"], &["B"], &["C"]],
        2,
        &binary_configurations(3, &[]),
        |c| 0.001 + 0.003 * c[0] + 0.002 * c[1] + 0.005 * c[2],
    );
}

const ERRORS: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=quiet"))) int C;
int level;
static void fail(const char *what) {
    if (!C)
        fprintf(stderr, "error: %s\n", what);
    exit(1);
}
static long step(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) {
        __knobs_test_work(1000);
        s += i;
    }
    if (s < 0) fail("overflow");
    return s;
}
PARSE
int main(int argc, char **argv) {
    parse(argc, argv);
    step(1000);
    if (A && step(3000) < 0) fail("A");
    if (B) {
        if (step(2000) < 0) {
            if (!C) fprintf(stderr, "B failed\n");
            exit(2);
        }
    }
    return 0;
}
"#;

/// An error printer that reads `-q`, reached under every option's decisions, and an error
/// path in `main`: cold code, set aside (and reported), so `-q` interacts with nothing.
#[test]
fn error_paths_are_set_aside() {
    let analysed = compresses_and_models(
        &ERRORS.replace("PARSE", PARSE),
        &spec("errors", "quiet", false),
        &[&["A"], &["B"]],
        2,
        &binary_configurations(3, &[]),
        |c| 0.001 + 0.003 * c[0] + 0.002 * c[1],
    );
    // `if (!quiet)` in `fail` and in `main`'s error path: set aside, not lost.
    let quiet = space::OptionId(2);
    let set_aside: Vec<_> = analysed
        .influence
        .set_aside
        .iter()
        .filter(|d| analysed.influence.sets.get(d.options).contains(quiet))
        .collect();
    assert!(set_aside.len() >= 2, "{:?}", analysed.influence.set_aside);
}

const CONFIRMED: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
int level;
/* A status every option's check derives, as a compressor's set-up returns one: never an
   error on this workload, but the coding runs under it. */
static int check(void) {
    if (A < 0 || B < 0 || C < 0)
        return -1;
    return 0;
}
static void code(void) {
    if (A) WORK_MS(3);
    if (B) WORK_MS(2);
    if (C) WORK_MS(5);
}
/* Only a command line of more than 64 words reaches it: the workload never does. */
static void batch(void) {
    if (A) {
        if (B) WORK_MS(7);
    }
}
PARSE
int main(int argc, char **argv) {
    parse(argc, argv);
    WORK_MS(1);
    if (check() == 0)
        code();
    if (argc > 64)
        batch();
    return 0;
}
"#;

fn confirming() -> configcrusher::Options {
    configcrusher::Options {
        confirm: true,
        ..configcrusher::Options::default()
    }
}

/// The options meet statically in a status check that never fails on the workload (all of
/// them, 8 configurations) and in code it never runs: dynamic confirmation drops both, says
/// so, and measures 2; without it the static interaction stays. Both models are exact.
#[test]
fn dynamic_confirmation_drops_interactions_of_branches_that_decide_nothing() {
    let program = CONFIRMED.replace("PARSE", PARSE);
    let model = |c: &[f64]| 0.001 + 0.003 * c[0] + 0.002 * c[1] + 0.005 * c[2];
    let all = binary_configurations(3, &[]);
    let without = compresses_and_models(
        &program,
        &spec("confirmed", "C", false),
        &[&["A", "B", "C"]],
        8,
        &all,
        model,
    );
    assert!(without.confirmation.is_none());
    let with = compresses_and_models_with(
        &confirming(),
        &program,
        &spec("confirmed", "C", false),
        &[&["A"], &["B"], &["C"]],
        2,
        &all,
        model,
    );
    let c = with.confirmation.expect("a confirmation report");
    let abc: Vec<String> = ["A", "B", "C"].iter().map(|s| s.to_string()).collect();
    assert_eq!(c.static_interactions, vec![abc.clone()]);
    assert_eq!(c.dropped, vec![abc]);
    assert_eq!((c.static_configurations, c.runs), (8, 8));
    assert_eq!(c.workload, "none");
    // `A < 0`, `B < 0`, `C < 0` and `check () == 0` went one way; batch's two never ran;
    // code's three went both ways.
    assert_eq!(c.branches_never_run, 2, "{c:?}");
    assert!(c.branches_decided >= 2, "{c:?}");
}

/// Confirmation keeps what decides: every branch on an option goes both ways in the static
/// cover, so nothing is dropped from the bounded helper's program.
#[test]
fn dynamic_confirmation_keeps_branches_that_go_both_ways() {
    let analysed = compresses_and_models_with(
        &confirming(),
        &BURN.replace("PARSE", PARSE),
        &spec("burn", "C", true),
        &[&["A"], &["B"], &["C"], &["level"]],
        3,
        &binary_configurations(3, &[1.0, 2.0, 3.0]),
        |c| {
            let b = if c[1] == 1.0 { 0.004 } else { 0.001 };
            0.001 + 0.002 * c[3] + 0.003 * c[0] + b + 0.005 * c[2]
        },
    );
    let c = analysed.confirmation.expect("a confirmation report");
    assert!(c.dropped.is_empty(), "{:?}", c.dropped);
    assert_eq!(c.branches_decided + c.branches_never_run, 0, "{c:?}");
}

const NEVER_CALLED: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
int level;
int size;
/* The other mode of the program (a decompressor's): it adds B into the size A chose, but
   only a command line of more than 64 words calls it, and no branch on an option leads
   there, so no observed branch rules it out. */
static void other_mode(void) {
    size = size + B;
}
PARSE
int main(int argc, char **argv) {
    parse(argc, argv);
    WORK_MS(1);
    size = A ? 2 : 1;
    if (argc > 64)
        other_mode();
    for (int k = 0; k < size; k++)
        WORK_MS(3);
    if (B) WORK_MS(2);
    if (C) WORK_MS(5);
    return 0;
}
"#;

/// A and B meet statically only through what a function writes that no run enters (the
/// loop on `size`, which goes both ways): dynamic confirmation sees that no run entered it,
/// drops {A, B} and measures 2 configurations; without it, 4. Both models are exact.
#[test]
fn dynamic_confirmation_drops_what_a_function_no_run_enters_writes() {
    let program = NEVER_CALLED.replace("PARSE", PARSE);
    let model = |c: &[f64]| 0.004 + 0.003 * c[0] + 0.002 * c[1] + 0.005 * c[2];
    let all = binary_configurations(3, &[]);
    let without = compresses_and_models(
        &program,
        &spec("never_called", "C", false),
        &[&["A", "B"], &["C"]],
        4,
        &all,
        model,
    );
    assert!(without.confirmation.is_none());
    let with = compresses_and_models_with(
        &confirming(),
        &program,
        &spec("never_called", "C", false),
        &[&["A"], &["B"], &["C"]],
        2,
        &all,
        model,
    );
    let c = with.confirmation.expect("a confirmation report");
    assert_eq!(c.dropped, vec![vec!["A".to_string(), "B".to_string()]]);
    assert!(
        c.functions_never_entered
            .contains(&"other_mode".to_string()),
        "{c:?}"
    );
    assert!(!c.functions_never_entered.contains(&"main".to_string()));
}

const RESET: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
int level;
struct state { long seed; long total; long pad[4]; };
/* Fills a local state and copies it out, as xxHash's `XXH32_reset` does. */
static void reset(struct state *s, long seed) {
    struct state tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.seed = seed;
    memcpy(s, &tmp, sizeof tmp);
}
static struct state sa, sb;
PARSE
int main(int argc, char **argv) {
    parse(argc, argv);
    WORK_MS(1);
    if (A) reset(&sa, 1);
    if (B) reset(&SECOND, C ? 3 : 1);
    for (long i = 0; i < sa.seed; i++) WORK_MS(3);
    for (long i = 0; i < sb.seed; i++) WORK_MS(2);
    return 0;
}
"#;

/// `reset (state, seed)` called under A on one object and under B (with a seed C chooses)
/// on another: its copy into `*state` is made at each call site, into that site's object,
/// with that site's options, so A stays apart from B and C.
#[test]
fn a_small_helper_writes_each_call_sites_object_with_that_sites_options() {
    compresses_and_models(
        &RESET.replace("PARSE", PARSE).replace("SECOND", "sb"),
        &spec("reset", "C", false),
        &[&["A"], &["B", "C"]],
        4,
        &binary_configurations(3, &[]),
        |c| 0.001 + 0.003 * c[0] + 0.002 * c[1] * (1.0 + 2.0 * c[2]),
    );
}

/// The same helper called under A and under B on the same object: the loop that object
/// bounds still depends on both (and on C through B's seed).
#[test]
fn a_small_helper_called_on_one_object_under_two_options_still_joins_them() {
    compresses_and_models(
        &RESET.replace("PARSE", PARSE).replace("SECOND", "sa"),
        &spec("reset-one", "C", false),
        &[&["A", "B", "C"]],
        8,
        &binary_configurations(3, &[]),
        |c| {
            let seed = if c[1] == 1.0 {
                if c[2] == 1.0 { 3.0 } else { 1.0 }
            } else if c[0] == 1.0 {
                1.0
            } else {
                0.0
            };
            0.001 + 0.003 * seed
        },
    );
}

/// getopt parsing into globals, as C programs parse their switches: the parsing loop decides
/// on argv's strings, which the work later rewrites under B (`compress` marks the name it
/// was given, as gzip edits file names in place).
const GETOPT: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
__attribute__((annotate("knobs:option=level"))) int level = 1;
static long window;   /* computed from the level while parsing */
static void compress(char *name) {
    REWRITE
    WORK_MS(1);
    for (long i = 0; i < window; i += 1000) WORK_MS(2);
    if (A) WORK_MS(3);
    if (B) WORK_MS(4);
    if (C) WORK_MS(5);
    if (B) name[0] = 'x';
}
int main(int argc, char **argv) {
    int c;
    while ((c = getopt(argc, argv, "abcl:")) != -1) {
        switch (c) {
        case 'a': A = 1; break;
        case 'b': B = 1; break;
        case 'c': C = 1; break;
        case 'l': level = atoi(optarg); window = level * 1000L; break;
        }
    }
    if (optind == argc) compress(argv[0]);
    for (int k = optind; k < argc; k++) compress(argv[k]);
    return 0;
}
"#;

/// `spec` with the level given as getopt's `-lN`.
fn getopt_spec(name: &str) -> String {
    spec(name, "C", true).replace("--level={value}", "-l{value}")
}

/// What the parser stores (the options, and the window it computes from the level) is a
/// load-time constant: the parsing loop's decisions on argv do not carry B, whose code
/// writes argv's strings later, into every option. Three configurations cover them.
#[test]
fn state_set_while_parsing_options_holds_only_its_options() {
    let analysed = compresses_and_models(
        &GETOPT.replace("REWRITE", ""),
        &getopt_spec("getopt"),
        &[&["A"], &["B"], &["C"], &["level"]],
        3,
        &binary_configurations(3, &[1.0, 2.0, 3.0]),
        |c| 0.001 + 0.002 * c[3] + 0.003 * c[0] + 0.004 * c[1] + 0.005 * c[2],
    );
    let lt = &analysed.influence.load_time;
    assert_eq!(lt.constant.len(), 4, "{lt:?}");
    assert!(lt.rewritten.is_empty(), "{lt:?}");
}

/// The level written again in the work under B is not a load-time constant: the loop it
/// bounds depends on B too, and the cover measures every level with and without B.
#[test]
fn an_option_written_again_after_parsing_stays_joined() {
    let analysed = compresses_and_models(
        &GETOPT
            .replace("REWRITE", "if (B) level = 1;")
            .replace("i < window; i += 1000", "i < level; i++"),
        &getopt_spec("getopt-rewritten"),
        &[&["A"], &["B", "level"], &["C"]],
        6,
        &binary_configurations(3, &[1.0, 2.0, 3.0]),
        |c| {
            let level = if c[1] == 1.0 { 1.0 } else { c[3] };
            0.001 + 0.002 * level + 0.003 * c[0] + 0.004 * c[1] + 0.005 * c[2]
        },
    );
    let lt = &analysed.influence.load_time;
    assert_eq!(lt.rewritten.len(), 1, "{lt:?}");
    assert_eq!(lt.constant.len(), 3, "{lt:?}");
}
