//! Dynamic taint (Comprex): C programs compiled with the real clang 19, instrumented by
//! `llvm::instrument_taint`, linked with `runtime::taint_library`, run, and their `TaintRun`
//! records checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use analysis::{OptionSource, ResolvedSources, SourceKind};
use comprex::{DecisionRecord, TaintRun};
use space::ConfigSpace;

fn clang() -> PathBuf {
    PathBuf::from("clang-19")
}

/// A compiled, instrumented program.
struct Instrumented {
    _compiled: Option<llvm::fixture::Compiled>,
    binary: PathBuf,
    decisions: usize,
}

fn space_of(names: &[&str]) -> ConfigSpace {
    let mut s = ConfigSpace::new("test");
    for n in names {
        s.add_binary(n, None, false).unwrap();
    }
    s
}

/// Compiles `source`, resolves annotated globals plus `extra` sources, instruments and links.
fn build(source: &str, space: &ConfigSpace, extra: Vec<OptionSource>) -> Instrumented {
    let compiled = llvm::fixture::compile("prog.c", source);
    let program = &compiled.translation.program;
    let mut sources = ResolvedSources::from_annotations(program, space).unwrap();
    sources.extend(ResolvedSources::resolve(program, &extra).unwrap());
    let names: Vec<String> = space.options().iter().map(|o| o.name.clone()).collect();
    let dir = compiled.dir.path().to_path_buf();
    let out = dir.join("prog.taint.bc");
    let stats = llvm::instrument_taint(
        &compiled.ssa,
        program,
        &compiled.translation.positions,
        &sources.by_index(),
        &names,
        &out,
    )
    .unwrap();
    let lib = runtime::taint_library::build(&clang(), &std::env::temp_dir().join("knobs-test-rt"))
        .unwrap();
    let binary = dir.join("prog.taint");
    llvm::link_instrumented(&clang(), &out, &[lib], &[], &binary, false).unwrap();
    if std::env::var_os("KNOBS_TEST_KEEP").is_some() {
        let _ = compiled.dir.path().to_path_buf();
        std::mem::forget(compiled);
        return Instrumented {
            binary,
            decisions: stats.decisions,
            _compiled: None,
        };
    }
    Instrumented {
        _compiled: Some(compiled),
        binary,
        decisions: stats.decisions,
    }
}

/// Runs the program with `args`, returns its decisions.
fn run(p: &Instrumented, args: &[&str]) -> Vec<DecisionRecord> {
    run_at(&p.binary, args).decisions
}

fn run_at(binary: &Path, args: &[&str]) -> TaintRun {
    let out = binary.with_extension(format!("{}.json", args.join("_")));
    let status = std::process::Command::new(binary)
        .args(args)
        .env(runtime::taint_library::ENV_VAR, &out)
        .status()
        .unwrap();
    assert!(status.code().is_some(), "{status}: {}", binary.display());
    let text = std::fs::read_to_string(&out).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The records at `line` (any column), as (data, control) sets of option names.
fn at_line(records: &[DecisionRecord], line: u32) -> BTreeSet<(Vec<String>, Vec<String>)> {
    records
        .iter()
        .filter(|r| r.decision.line == line)
        .map(|r| {
            (
                r.data_flow.iter().cloned().collect(),
                r.control_flow.iter().cloned().collect(),
            )
        })
        .collect()
}

fn set(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn one(data: &[&str], control: &[&str]) -> BTreeSet<(Vec<String>, Vec<String>)> {
    [(set(data), set(control))].into()
}

const FLAG: &str = r#"
#include <stdlib.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
int flag;
int main(int argc, char **argv) {
  A = atoi(argv[1]);
  B = atoi(argv[2]);
  int x = 0;
  if (A) /* first */
    flag = 1;
  if (flag) /* second */
    x++;
  if (argc > 5) /* untainted */
    x--;
  return x > 100;
}
"#;

#[test]
fn the_flag_example_carries_an_implicit_flow() {
    let space = space_of(&["A", "B"]);
    let p = build(FLAG, &space, vec![]);
    let first = llvm::fixture::line_of(FLAG, "/* first */");
    let second = llvm::fixture::line_of(FLAG, "/* second */");
    let untainted = llvm::fixture::line_of(FLAG, "/* untainted */");
    for args in [["1", "0"], ["0", "1"]] {
        let r = run(&p, &args);
        assert_eq!(at_line(&r, first), one(&["A"], &[]), "{args:?}");
        // A dynamic analysis sees the implicit flow only when the assignment runs (as in
        // Phosphor and the paper): with A off, `flag` is never written under `if (A)`.
        let expected = if args[0] == "1" {
            one(&["A"], &[])
        } else {
            one(&[], &[])
        };
        assert_eq!(at_line(&r, second), expected, "{args:?}");
        // Untainted decisions are reported with empty taints.
        assert_eq!(at_line(&r, untainted), one(&[], &[]), "{args:?}");
        let d = &r
            .iter()
            .find(|d| d.decision.line == first)
            .unwrap()
            .decision;
        assert_eq!(d.method, "main");
        assert!(d.file.ends_with("prog.c"), "{}", d.file);
        assert!(d.column > 0);
    }
    assert!(p.decisions >= 3);
}

const LOOP: &str = r#"
#include <stdlib.h>
__attribute__((annotate("knobs:option=N"))) int N;
__attribute__((annotate("knobs:option=M"))) int M;
int work(int k) {
  int s = 0;
  if (M) /* inner */
    s += k;
  return s;
}
int main(int argc, char **argv) {
  N = atoi(argv[1]);
  M = atoi(argv[2]);
  int n = N ? 10 : 3;
  int total = 0;
  for (int i = 0; i < n; i++) /* loop */
    total += work(i);
  if (total > 3) /* after */
    return 1;
  return 0;
}
"#;

#[test]
fn a_loop_whose_trip_count_depends_on_an_option() {
    let space = space_of(&["N", "M"]);
    let p = build(LOOP, &space, vec![]);
    let r = run(&p, &["1", "1"]);
    assert_eq!(
        at_line(&r, llvm::fixture::line_of(LOOP, "/* loop */")),
        one(&["N"], &[])
    );
    // Inside the loop (in a callee): control taint from the loop condition.
    assert_eq!(
        at_line(&r, llvm::fixture::line_of(LOOP, "/* inner */")),
        one(&["M"], &["N"])
    );
    // `total` is computed under the loop (N) from work's results (M, via the return under M).
    assert_eq!(
        at_line(&r, llvm::fixture::line_of(LOOP, "/* after */")),
        one(&["M", "N"], &[])
    );
}

const STRUCTS: &str = r#"
#include <stdlib.h>
#include <string.h>
struct cfg { int level; int fast; };
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
struct opts { int verbose; int mode; };
struct opts global_opts;
static int twice(int v) { return v * 2; }
static int pick(struct cfg *c) { return c->fast; }
int main(int argc, char **argv) {
  A = atoi(argv[1]);
  B = atoi(argv[2]);
  global_opts.mode = atoi(argv[3]);
  struct cfg *c = malloc(sizeof *c);
  c->level = twice(A);
  c->fast = B;
  struct cfg copy;
  memcpy(&copy, c, sizeof copy);
  int r = 0;
  if (c->level > 1) /* heap */
    r++;
  if (pick(c)) /* call */
    r++;
  if (copy.fast) /* copy */
    r++;
  if (global_opts.mode) /* field */
    r++;
  if (getenv("KNOBS_TEST_ENV") != 0) /* env */
    r++;
  free(c);
  return r > 10;
}
"#;

#[test]
fn options_flow_through_heap_struct_fields_calls_and_returns() {
    let space = space_of(&["A", "B", "MODE", "ENV"]);
    let extra = vec![
        OptionSource {
            option: space.find("MODE").unwrap(),
            kind: SourceKind::StructField {
                structure: "opts".into(),
                field: analysis::FieldRef::Name("mode".into()),
            },
        },
        OptionSource {
            option: space.find("ENV").unwrap(),
            kind: SourceKind::FunctionReturn {
                function: "getenv".into(),
                selector: Some(ir::ArgSelector {
                    index: 0,
                    value: "KNOBS_TEST_ENV".into(),
                }),
            },
        },
    ];
    let p = build(STRUCTS, &space, extra);
    let r = run(&p, &["1", "0", "1"]);
    let line = |m: &str| llvm::fixture::line_of(STRUCTS, m);
    assert_eq!(at_line(&r, line("/* heap */")), one(&["A"], &[]));
    assert_eq!(at_line(&r, line("/* call */")), one(&["B"], &[]));
    assert_eq!(at_line(&r, line("/* copy */")), one(&["B"], &[]));
    assert_eq!(at_line(&r, line("/* field */")), one(&["MODE"], &[]));
    assert_eq!(at_line(&r, line("/* env */")), one(&["ENV"], &[]));
}

const NESTED: &str = r#"
#include <stdlib.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
int main(int argc, char **argv) {
  A = atoi(argv[1]);
  B = atoi(argv[2]);
  C = atoi(argv[3]);
  int x = 0;
  if (A) { /* outer */
    if (B) /* inner */
      x = 1;
    if (C) /* third */
      x += 2;
  }
  if (x) /* after */
    return 1;
  return 0;
}
"#;

#[test]
fn nested_decisions_get_the_outer_condition_as_control_taint() {
    let space = space_of(&["A", "B", "C"]);
    let p = build(NESTED, &space, vec![]);
    let r = run(&p, &["1", "1", "0"]);
    let line = |m: &str| llvm::fixture::line_of(NESTED, m);
    assert_eq!(at_line(&r, line("/* outer */")), one(&["A"], &[]));
    assert_eq!(at_line(&r, line("/* inner */")), one(&["B"], &["A"]));
    assert_eq!(at_line(&r, line("/* third */")), one(&["C"], &["A"]));
    assert_eq!(at_line(&r, line("/* after */")), one(&["A", "B", "C"], &[]));
    // Not reached when A is off.
    let r = run(&p, &["0", "1", "1"]);
    assert!(at_line(&r, line("/* inner */")).is_empty());
    assert_eq!(at_line(&r, line("/* after */")), one(&["A"], &[]));
}

#[test]
fn seventy_options_in_one_program() {
    let mut source = String::from("#include <stdlib.h>\n");
    let names: Vec<String> = (0..70).map(|k| format!("O{k}")).collect();
    for n in &names {
        source.push_str(&format!(
            "__attribute__((annotate(\"knobs:option={n}\"))) int {n};\n"
        ));
    }
    source.push_str("int main(int argc, char **argv) {\n  int s = 0;\n");
    for n in &names {
        source.push_str(&format!("  {n} = argc > 1;\n"));
    }
    source.push_str("  if (O0 + O69) /* both */\n    s++;\n");
    source.push_str("  if (O64) /* one */\n    s++;\n  return s > 5;\n}\n");
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let space = space_of(&refs);
    let p = build(&source, &space, vec![]);
    let r = run(&p, &["x"]);
    assert_eq!(
        at_line(&r, llvm::fixture::line_of(&source, "/* both */")),
        one(&["O0", "O69"], &[])
    );
    assert_eq!(
        at_line(&r, llvm::fixture::line_of(&source, "/* one */")),
        one(&["O64"], &[])
    );
}

const NO_SOURCE: &str = r#"
#include <stdlib.h>
__attribute__((annotate("knobs:option=A"))) int A;
int main(int argc, char **argv) {
  int s = 0;
  for (int i = 0; i < argc; i++)
    if (argv[i][0] == '-')
      s++;
  if (argc > 3 && A) /* late */
    s++;
  return s > 100;
}
"#;

#[test]
fn a_run_that_never_reads_an_option_has_no_tainted_decisions() {
    let space = space_of(&["A"]);
    let p = build(NO_SOURCE, &space, vec![]);
    let r = run(&p, &["x"]);
    assert!(!r.is_empty());
    assert!(
        r.iter()
            .all(|d| d.data_flow.is_empty() && d.control_flow.is_empty()),
        "{r:?}"
    );
}

/// The Comprex paper's running example (Fig. 2) in C.
const FIG2: &str = r#"
#include <stdlib.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
__attribute__((annotate("knobs:option=C"))) int C;
__attribute__((annotate("knobs:option=D"))) int D;
volatile int sink;
void foo(int b) {
  int x = 0;
  if (b) /* foo */
    x = 3;
  sink += x;
}
void bar(int c) {
  int y = 1;
  if (c) /* bar */
    y = 10;
  sink += y;
}
int main(int argc, char **argv) {
  A = atoi(argv[1]);
  B = atoi(argv[2]);
  C = atoi(argv[3]);
  D = atoi(argv[4]);
  int a = A, b = B, c = C, d = D;
  int i;
  if (a) { /* main-if */
    foo(b);
    i = 20;
  } else {
    i = 5;
  }
  while (i > 0) { /* main-while */
    bar(c);
    i--;
  }
  sink += d;
  return 0;
}
"#;

#[test]
fn the_papers_running_example_records_its_taints() {
    let space = space_of(&["A", "B", "C", "D"]);
    let p = build(FIG2, &space, vec![]);
    let line = |m: &str| llvm::fixture::line_of(FIG2, m);
    for a in ["0", "1"] {
        let r = run(&p, &[a, "1", "1", "1"]);
        assert_eq!(
            at_line(&r, line("/* main-if */")),
            one(&["A"], &[]),
            "A={a}"
        );
        assert_eq!(
            at_line(&r, line("/* main-while */")),
            one(&["A"], &[]),
            "A={a}"
        );
        assert_eq!(at_line(&r, line("/* bar */")), one(&["C"], &["A"]), "A={a}");
        let foo = if a == "1" {
            one(&["B"], &["A"])
        } else {
            BTreeSet::new()
        };
        assert_eq!(at_line(&r, line("/* foo */")), foo, "A={a}");
        let methods: BTreeSet<&str> = r.iter().map(|d| d.decision.method.as_str()).collect();
        assert!(
            methods.is_subset(&["main", "foo", "bar"].into()),
            "{methods:?}"
        );
    }
}

#[test]
fn comprex_over_real_runs_of_the_running_example_finds_the_papers_partitions() {
    use comprex::{ExploreSettings, Granularity, explore};
    let space = space_of(&["A", "B", "C", "D"]);
    let valid = space::ValidConfigurations::new(&space).unwrap();
    let p = build(FIG2, &space, vec![]);
    let ex = explore(&valid, ExploreSettings::default(), |config| {
        let args: Vec<String> = config.0.iter().map(|v| v.to_string()).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut run = run_at(&p.binary, &args);
        // The runtime leaves the configuration to the caller.
        run.configuration = comprex::TaintRun::new(&space, config, vec![]).configuration;
        assert_eq!(run.configuration(&space).unwrap(), *config);
        Ok::<_, std::convert::Infallible>(run.decisions)
    })
    .unwrap();
    let main = ex.region(Granularity::Method, "main").unwrap();
    assert_eq!(main.texts(), ["A", "¬A"]);
    let foo = ex.region(Granularity::Method, "foo").unwrap();
    assert_eq!(foo.texts(), ["A ∧ B", "A ∧ ¬B", "¬A"]);
    let bar = ex.region(Granularity::Method, "bar").unwrap();
    assert_eq!(bar.texts(), ["A ∧ C", "A ∧ ¬C", "¬A ∧ C", "¬A ∧ ¬C"]);
    assert_eq!(ex.configurations.len(), 4);
}

/// A loop of early exits: every `goto out` decision stays open until `out` (its immediate
/// post-dominator), so later decisions, and the same decisions in the next iteration, run
/// under the earlier ones' control taint. `fillers` untainted exits in between: with many,
/// the instrumenter keeps the function's open entries in memory (more than 1024 slot reads to
/// recompute their union), with few in SSA values; the records must be the same.
fn early_exits(fillers: usize) -> String {
    let mut s = String::from(
        r#"#include <stdlib.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
int main(int argc, char **argv) {
  A = atoi(argv[1]);
  B = atoi(argv[2]);
  int x = argc + 1000, s = 0;
  for (int i = 0; i < 3; i++) { /* header */
    if (A > 5) /* a */
      goto out;
    if (B > 5) /* b */
      goto out;
"#,
    );
    for k in 0..fillers {
        s.push_str(&format!("    if (x == {k})\n      goto out;\n"));
    }
    s.push_str(
        r#"    if (x == -1) /* last */
      goto out;
    s++;
  }
out:
  if (s > 2) /* after */
    return 1;
  return 0;
}
"#,
    );
    s
}

#[test]
fn early_exits_in_a_loop_keep_their_control_taint_open() {
    let space = space_of(&["A", "B"]);
    for fillers in [2, 40] {
        let source = early_exits(fillers);
        let p = build(&source, &space, vec![]);
        let r = run(&p, &["1", "1"]);
        let line = |m: &str| llvm::fixture::line_of(&source, m);
        let pair = |d: &[&str], c: &[&str]| (set(d), set(c));
        let ab = ["A", "B"];
        // From the second iteration on, every exit of the previous one is open, and `i` was
        // assigned under them.
        assert_eq!(
            at_line(&r, line("/* header */")),
            [pair(&[], &[]), pair(&ab, &ab)].into(),
            "{fillers} fillers"
        );
        // A decision executing again replaces its own entry: `a` is not under itself in the
        // first iteration; later it is under the header's and b's entries (which hold A).
        assert_eq!(
            at_line(&r, line("/* a */")),
            [pair(&["A"], &[]), pair(&["A"], &ab)].into(),
            "{fillers} fillers"
        );
        assert_eq!(
            at_line(&r, line("/* b */")),
            [pair(&["B"], &["A"]), pair(&["B"], &ab)].into(),
            "{fillers} fillers"
        );
        assert_eq!(
            at_line(&r, line("/* last */")),
            [pair(&[], &ab)].into(),
            "{fillers} fillers"
        );
        // `s` is assigned under the open exits.
        let after = at_line(&r, line("/* after */"));
        assert!(
            !after.is_empty() && after.iter().all(|(d, _)| *d == set(&ab)),
            "{fillers} fillers: {after:?}"
        );
    }
}

const COPIES: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=A"))) int A;
__attribute__((annotate("knobs:option=B"))) int B;
int main(int argc, char **argv) {
  A = atoi(argv[1]);
  B = atoi(argv[2]);
  char *buf = malloc(3 << 20);
  /* 8 bytes before a 1 MiB boundary of the address space (one shadow page ends there). */
  char *p = (char *)((((uintptr_t)buf + (1 << 20)) & ~(uintptr_t)((1 << 20) - 1)) - 8);
  char src[16] = {0};
  src[4] = (char)A;
  src[12] = (char)B;
  memcpy(p, src, 16);
  int r = 0;
  if (p[4]) /* four */
    r++;
  if (p[12]) /* twelve */
    r++;
  memmove(p + 1, p, 15);
  if (p[5]) /* five */
    r++;
  if (p[13]) /* thirteen */
    r++;
  if (p[4] == 7) /* moved */
    r++;
  char zeros[8] = {0}, q[8] = {0};
  if (A) /* guard */
    memcpy(q, zeros, sizeof q);
  if (q[0]) /* copied */
    r++;
  free(buf);
  return r > 100;
}
"#;

#[test]
fn copies_move_byte_labels_across_shadow_pages_and_carry_control_taint() {
    let space = space_of(&["A", "B"]);
    let p = build(COPIES, &space, vec![]);
    let r = run(&p, &["1", "1"]);
    let line = |m: &str| llvm::fixture::line_of(COPIES, m);
    assert_eq!(at_line(&r, line("/* four */")), one(&["A"], &[]));
    assert_eq!(at_line(&r, line("/* twelve */")), one(&["B"], &[]));
    assert_eq!(at_line(&r, line("/* five */")), one(&["A"], &[]));
    assert_eq!(at_line(&r, line("/* thirteen */")), one(&["B"], &[]));
    assert_eq!(at_line(&r, line("/* moved */")), one(&[], &[]));
    assert_eq!(at_line(&r, line("/* copied */")), one(&["A"], &[]));
}
