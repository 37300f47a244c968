//! C → LLVM → ir → static taint analysis, end to end: the kinds of option sources and flows
//! real programs have. `work(n)` is an external function whose calls are the probes.

use analysis::{
    FieldRef, OptionSet, OptionSource, ResolvedSources, SourceKind, StatementInfluence, analyse,
};
use ir::Program;
use ir::{ArgSelector, ProgramDominance};
use space::{ConfigSpace, OptionId};

fn set(ids: &[u32]) -> OptionSet {
    OptionSet::from_ids(ids.iter().map(|&k| OptionId(k)))
}

fn global(k: u32, name: &str) -> OptionSource {
    OptionSource {
        option: OptionId(k),
        kind: SourceKind::Global { name: name.into() },
    }
}

fn struct_field(k: u32, structure: &str, field: &str) -> OptionSource {
    OptionSource {
        option: OptionId(k),
        kind: SourceKind::StructField {
            structure: structure.into(),
            field: FieldRef::Name(field.into()),
        },
    }
}

fn run(source: &str, sources: &[OptionSource]) -> (Program, StatementInfluence) {
    let c = llvm::fixture::compile("prog.c", source);
    let p = c.translation.program;
    let resolved = ResolvedSources::resolve(&p, sources).unwrap();
    let si = analyse(&p, &ProgramDominance::new(&p), &resolved);
    (p, si)
}

/// The influence of the `work` call on the line marked `/* wN */`.
fn work_influence(p: &Program, si: &StatementInfluence, source: &str, marker: &str) -> OptionSet {
    let line = llvm::fixture::line_of(source, marker);
    let calls = llvm::fixture::calls_to(p, "work");
    let (_, call) = calls
        .iter()
        .find(|(l, _)| *l == line)
        .unwrap_or_else(|| panic!("no work() call on line {line}: {calls:?}"));
    si.of(*call).clone()
}

const FLOWS: &str = r#"
extern void work(int);
int level, verbose, unused_opt;
int main(void) {
    int l = level * 2;
    if (l > 3) work(1);   /* w1 */
    int v = 0;
    if (verbose) v = 1;
    if (v) work(2);       /* w2 */
    work(3);              /* w3 */
    return 0;
}
"#;

#[test]
fn direct_and_implicit_flows_and_irrelevant_options() {
    let sources = [
        global(0, "level"),
        global(1, "verbose"),
        global(2, "unused_opt"),
    ];
    let (p, si) = run(FLOWS, &sources);
    assert_eq!(work_influence(&p, &si, FLOWS, "w1"), set(&[0]), "direct");
    assert_eq!(work_influence(&p, &si, FLOWS, "w2"), set(&[1]), "implicit");
    assert_eq!(work_influence(&p, &si, FLOWS, "w3"), set(&[]));
    assert!(!si.relevant_options().contains(OptionId(2)));
    let line = llvm::fixture::line_of(FLOWS, "w1");
    assert!(si.decisions.iter().any(|d| d.loc.line == line));
}

const FIELDS: &str = r#"
#include <stdlib.h>
extern void work(int);
struct options { int threads; int level; };
static void parse(struct options *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == 'l')
            o->level = atoi(argv[i] + 1);
        else
            o->threads = atoi(argv[i]);
    }
}
static void compress_block(const struct options *o) {
    if (o->level > 5)
        work(1);          /* w1 */
    else
        work(2);          /* w2 */
}
int main(int argc, char **argv) {
    struct options o = {1, 3};
    parse(&o, argc, argv);
    compress_block(&o);
    if (o.threads > 1) work(3); /* w3 */
    work(4);              /* w4 */
    return 0;
}
"#;

#[test]
fn options_in_struct_fields_set_by_argv_parsing() {
    let field = |k: u32, name: &str| OptionSource {
        option: OptionId(k),
        kind: SourceKind::StructField {
            structure: "options".into(),
            field: FieldRef::Name(name.into()),
        },
    };
    let (p, si) = run(FIELDS, &[field(0, "level"), field(1, "threads")]);
    assert_eq!(work_influence(&p, &si, FIELDS, "w1"), set(&[0]));
    assert_eq!(work_influence(&p, &si, FIELDS, "w2"), set(&[0]));
    assert_eq!(work_influence(&p, &si, FIELDS, "w3"), set(&[1]));
    assert_eq!(work_influence(&p, &si, FIELDS, "w4"), set(&[]));
}

const ANNOTATED: &str = r#"
extern void work(int);
__attribute__((annotate("knobs:option=FAST"))) int fast;
int other;
int main(void) {
    if (fast) work(1);    /* w1 */
    if (other) work(2);   /* w2 */
    return 0;
}
"#;

#[test]
fn a_global_annotated_in_the_source_is_an_option() {
    let c = llvm::fixture::compile("prog.c", ANNOTATED);
    let p = c.translation.program;
    let fast = p.global_named("fast").unwrap();
    assert_eq!(p.globals[fast].annotations, ["knobs:option=FAST"]);
    let mut space = ConfigSpace::new("annotated");
    space.add_binary("SLOW", None, false).unwrap();
    space.add_binary("FAST", None, false).unwrap();
    let resolved = ResolvedSources::from_annotations(&p, &space).unwrap();
    let si = analyse(&p, &ProgramDominance::new(&p), &resolved);
    assert_eq!(work_influence(&p, &si, ANNOTATED, "w1"), set(&[1]));
    assert_eq!(work_influence(&p, &si, ANNOTATED, "w2"), set(&[]));
}

const GETENV: &str = r#"
#include <stdlib.h>
extern void work(int);
int main(void) {
    const char *mode = getenv("MODE");
    if (mode && mode[0] == 'x') work(1);  /* w1 */
    const char *other = getenv("OTHER");
    if (other) work(2);                   /* w2 */
    return 0;
}
"#;

#[test]
fn getenv_with_a_constant_name_is_a_source() {
    let sources = [OptionSource {
        option: OptionId(0),
        kind: SourceKind::FunctionReturn {
            function: "getenv".into(),
            selector: Some(ArgSelector {
                index: 0,
                value: "MODE".into(),
            }),
        },
    }];
    let (p, si) = run(GETENV, &sources);
    assert_eq!(work_influence(&p, &si, GETENV, "w1"), set(&[0]));
    assert_eq!(work_influence(&p, &si, GETENV, "w2"), set(&[]));
}

const HEAP: &str = r#"
#include <stdlib.h>
extern void work(int);
struct state { int level; int unrelated; };
int level_opt;
static struct state *make(void) {
    struct state *s = malloc(sizeof *s);
    s->level = level_opt;
    s->unrelated = 7;
    return s;
}
static int get(const struct state *s) { return s->level; }
int main(void) {
    struct state *s = make();
    int *buf = malloc(8 * sizeof(int));
    buf[1] = get(s);
    if (buf[1] > 2) work(1);        /* w1 */
    if (s->unrelated > 2) work(2);  /* w2 */
    return 0;
}
"#;

#[test]
fn options_through_heap_memory_calls_and_returns() {
    let (p, si) = run(HEAP, &[global(0, "level_opt")]);
    assert_eq!(work_influence(&p, &si, HEAP, "w1"), set(&[0]));
    assert_eq!(
        work_influence(&p, &si, HEAP, "w2"),
        set(&[]),
        "field sensitivity keeps the other field clean"
    );
}

/// Two kinds of state allocated through one allocation wrapper and released through one
/// deallocation wrapper, as real programs do (`xmalloc`, `lzma_alloc`, `lzma_free`): the
/// wrapper's call sites are separate objects, so an option stored in one does not reach
/// decisions on the other.
const WRAPPERS: &str = r#"
#include <stdlib.h>
#include <string.h>
extern void work(int);
int fast, check;
struct hook { void *(*alloc)(size_t); void (*release)(void *); };
struct hook *custom;
static void *xmalloc(size_t n) {
    void *p;
    if (custom && custom->alloc) p = custom->alloc(n); else p = malloc(n);
    if (!p) abort();
    return p;
}
static void xfree(void *p) {
    if (custom && custom->release) custom->release(p); else free(p);
}
struct state { int pad; int value; int other; };
int main(void) {
    struct state *e = xmalloc(sizeof *e);
    struct state *c = xmalloc(sizeof *c);
    int *scratch = xmalloc(16);
    e->value = fast;
    e->other = check;
    c->value = check;
    struct state copy;
    memcpy(&copy, e, sizeof copy);
    if (e->value) work(1);    /* w1 */
    if (c->value) work(2);    /* w2 */
    if (copy.value) work(3);  /* w3 */
    xfree(e);
    xfree(c);
    xfree(scratch);
    return 0;
}
"#;

#[test]
fn allocation_and_deallocation_wrappers_keep_objects_apart() {
    let sources = [global(0, "fast"), global(1, "check")];
    let (p, si) = run(WRAPPERS, &sources);
    let wrappers = analysis::wrappers::Wrappers::find(&p);
    let func =
        |name: &str| ir::FuncId::new(p.functions.iter().position(|f| f.name == name).unwrap());
    assert!(wrappers.allocates(func("xmalloc")));
    assert!(!wrappers.allocates(func("main")));
    assert!(wrappers.only_frees(func("xfree"), 0));
    assert_eq!(work_influence(&p, &si, WRAPPERS, "/* w1 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, WRAPPERS, "/* w2 */"), set(&[1]));
    // A copy carries what the source holds, field by field.
    assert_eq!(work_influence(&p, &si, WRAPPERS, "/* w3 */"), set(&[0]));
}

const VOID_POINTERS: &str = r#"
#include <stdlib.h>
#include <stdint.h>
extern void work(int);
int a_opt, b_opt;
struct box { int value; int spare; int extra; };
/* A helper taking any object as `void *`: unification would make every object passed to
   it one. */
static int present(void *p) { return p != 0; }
/* A resizing wrapper: each call site is an allocation site. */
static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n);
    if (!q) abort();
    return q;
}
int main(void) {
    struct box *a = malloc(sizeof *a);
    struct box *b = malloc(sizeof *b);
    struct box *c = xrealloc(NULL, sizeof *c);
    struct box *d = xrealloc(NULL, sizeof *d);
    a->value = a_opt;
    b->value = b_opt;
    c->spare = a_opt;
    d->spare = b_opt;
    /* Integer arithmetic on addresses carries no address. */
    uintptr_t distance = (uintptr_t)a - (uintptr_t)b;
    b->spare = (int)distance;
    a->extra = a_opt;
    if (present(a) && present(b) && present(c) && present(d)) work(0);
    if (a->value) work(1);   /* w1 */
    if (b->value) work(2);   /* w2 */
    if (c->spare) work(3);   /* w3 */
    if (d->spare) work(4);   /* w4 */
    if (b->extra) work(5);   /* w5 */
    return 0;
}
"#;

#[test]
fn objects_passed_through_void_pointers_stay_apart() {
    let sources = [global(0, "a_opt"), global(1, "b_opt")];
    let (p, si) = run(VOID_POINTERS, &sources);
    assert!(!si.facts.points_to.merged);
    let wrappers = analysis::wrappers::Wrappers::find(&p);
    let xrealloc = ir::FuncId::new(
        p.functions
            .iter()
            .position(|f| f.name == "xrealloc")
            .unwrap(),
    );
    assert!(wrappers.allocates(xrealloc));
    assert_eq!(wrappers.resizes(xrealloc), Some(0));
    assert_eq!(
        work_influence(&p, &si, VOID_POINTERS, "/* w1 */"),
        set(&[0])
    );
    assert_eq!(
        work_influence(&p, &si, VOID_POINTERS, "/* w2 */"),
        set(&[1])
    );
    assert_eq!(
        work_influence(&p, &si, VOID_POINTERS, "/* w3 */"),
        set(&[0])
    );
    assert_eq!(
        work_influence(&p, &si, VOID_POINTERS, "/* w4 */"),
        set(&[1])
    );
}

#[test]
fn beyond_the_points_to_budget_objects_merge_but_fields_stay_apart() {
    let sources = [global(0, "a_opt"), global(1, "b_opt")];
    let c = llvm::fixture::compile("prog.c", VOID_POINTERS);
    let p = c.translation.program;
    let resolved = ResolvedSources::resolve(&p, &sources).unwrap();
    let dominance = ProgramDominance::new(&p);
    let pts = analysis::pointsto::solve_within(&p, 0);
    assert!(pts.merged);
    let si = analysis::static_taint::analyse_with(&p, &dominance, &resolved, pts);
    // One object for all four boxes: their `value`s are one cell, their `spare`s another.
    assert_eq!(
        work_influence(&p, &si, VOID_POINTERS, "/* w1 */"),
        set(&[0, 1])
    );
    assert_eq!(
        work_influence(&p, &si, VOID_POINTERS, "/* w3 */"),
        set(&[0, 1])
    );
    let value_only = analysis::pointsto::solve_within(&p, usize::MAX);
    assert!(!value_only.merged);
}

const RETURNS: &str = r#"
extern void work(int);
int a_opt, b_opt, c_opt;
/* What a helper returns depends on the call site's arguments, not on every caller's. */
static int is_on(int v) { return v != 0; }
static int plus_c(int v) { return v + c_opt; }
int main(void) {
    int local = 5;
    if (is_on(a_opt)) work(1);    /* w1 */
    if (is_on(b_opt)) work(2);    /* w2 */
    if (is_on(local)) work(3);    /* w3 */
    if (plus_c(local)) work(4);   /* w4 */
    if (plus_c(a_opt)) work(5);   /* w5 */
    return 0;
}
"#;

#[test]
fn return_values_depend_on_their_call_sites_arguments() {
    let sources = [global(0, "a_opt"), global(1, "b_opt"), global(2, "c_opt")];
    let (p, si) = run(RETURNS, &sources);
    assert_eq!(work_influence(&p, &si, RETURNS, "/* w1 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, RETURNS, "/* w2 */"), set(&[1]));
    assert_eq!(work_influence(&p, &si, RETURNS, "/* w3 */"), set(&[]));
    assert_eq!(work_influence(&p, &si, RETURNS, "/* w4 */"), set(&[2]));
    assert_eq!(work_influence(&p, &si, RETURNS, "/* w5 */"), set(&[0, 2]));
    // The parameter itself carries every call site's argument.
    let is_on = p.functions.iter().find(|f| f.name == "is_on").unwrap();
    assert_eq!(si.sets.get(si.value_taint[is_on.params[0]]), &set(&[0, 1]));
}

/// The shapes liblzma's coders have: a table of functions read through a shorter generic
/// struct, coder objects passed around as `void *` beside the function that knows their type,
/// and a copy helper every coder calls.
const CODERS: &str = r#"
#include <stdlib.h>
#include <string.h>
extern void work(int);
int a_opt, b_opt;

typedef int (*init_fn)(void *);
typedef int (*usage_fn)(void *);
struct filter_encoder { long id; init_fn init; usage_fn memusage; int props; };
/* The generic view: the same fields up to `memusage`. */
struct filter_coder { long id; init_fn init; usage_fn memusage; };

struct next { void *coder; int (*code)(void *); };
struct lz { struct next next; long depth; int mode; };
struct blk { struct next next; int check; };

static int lz_code(void *p) { struct lz *c = p; if (c->mode) work(1); /* w1 */ return 0; }
static int blk_code(void *p) { struct blk *b = p; if (b->check) work(2); /* w2 */ return 0; }
static int lz_init(void *p) { return b_opt; }
static int lz_usage(void *p) { return a_opt; }
static int blk_init(void *p) { return b_opt; }
static int blk_usage(void *p) { return 1; }

static const struct filter_encoder encoders[] = {
    { 1, lz_init, lz_usage, 0 },
    { 2, blk_init, blk_usage, 0 },
};

static const struct filter_coder *find(long id) {
    for (int i = 0; i < 2; i++)
        if (encoders[i].id == id) return (const struct filter_coder *)&encoders[i];
    return 0;
}

static int run(struct next *n) { return n->code(n->coder); }

/* Like lzma_bufcpy. */
static size_t bufcpy(const unsigned char *in, size_t *in_pos, size_t in_size,
                     unsigned char *out, size_t *out_pos, size_t out_size) {
    size_t n = in_size - *in_pos;
    if (n > out_size - *out_pos) n = out_size - *out_pos;
    memcpy(out + *out_pos, in + *in_pos, n);
    *in_pos += n;
    *out_pos += n;
    return n;
}

int main(int argc, char **argv) {
    struct lz *l = malloc(sizeof *l);
    l->mode = a_opt;
    l->next.coder = l;
    l->next.code = lz_code;
    struct blk *b = malloc(sizeof *b);
    b->check = b_opt;
    b->next.coder = b;
    b->next.code = blk_code;
    run(&l->next);
    run(&b->next);

    if (find(argc)->memusage(0)) work(3);   /* w3 */

    unsigned char hdr_a[4] = { 0 }, hdr_b[4] = { 0 }, out_a[4], out_b[4];
    hdr_a[0] = (unsigned char)a_opt;
    hdr_b[0] = (unsigned char)b_opt;
    size_t i = 0, j = 0, o = 0, k = 0;
    bufcpy(hdr_a, &i, 4, out_a, &o, 4);
    bufcpy(hdr_b, &j, 4, out_b, &k, 4);
    if (out_a[0]) work(4);   /* w4 */
    if (out_b[0]) work(5);   /* w5 */
    return 0;
}
"#;

#[test]
fn coder_tables_void_pointer_objects_and_copy_helpers_stay_apart() {
    let sources = [global(0, "a_opt"), global(1, "b_opt")];
    let (p, si) = run(CODERS, &sources);
    let pts = &si.facts.points_to;
    assert!(!pts.merged);
    // `c->mode` in lz_code: only the lz object, although `p` may point to both coders.
    let lz = p.struct_named("lz").expect("struct lz");
    let lz_code = p.functions.iter().find(|f| f.name == "lz_code").unwrap();
    let mode_addr = lz_code
        .blocks
        .iter()
        .flat_map(|&b| p.block(b).insts.iter())
        .find_map(|&i| match &p.inst(i).kind {
            ir::InstKind::FieldAddr { structure, .. } if *structure == lz => p.inst(i).result,
            _ => None,
        })
        .expect("c->mode");
    let roots: Vec<analysis::pointsto::Root> = pts
        .of(mode_addr)
        .iter()
        .map(|&c| pts.roots[pts.cell(c).root as usize])
        .collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    assert_eq!(work_influence(&p, &si, CODERS, "/* w1 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, CODERS, "/* w2 */"), set(&[1]));
    // Through the generic view's `memusage` column: the memusage functions, not the inits.
    assert_eq!(work_influence(&p, &si, CODERS, "/* w3 */"), set(&[0]));
    // Each copy copies its own source.
    let bufcpy = ir::FuncId::new(p.functions.iter().position(|f| f.name == "bufcpy").unwrap());
    assert_eq!(pts.wrappers.copies(bufcpy), Some((3, 0)));
    assert_eq!(work_influence(&p, &si, CODERS, "/* w4 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, CODERS, "/* w5 */"), set(&[1]));
}

const FATAL: &str = r#"
#include <stdlib.h>
extern void work(int);
extern void fatal(const char *) __attribute__((noreturn));
int level, verbose, dying, cleaned;
static void check(void) { if (level > 9) fatal("bad level"); }
/* Called only on the way out, like gzip's remove_output_file. */
static void cleanup(void) { cleaned = 1; }
/* Like gzip's do_exit: what it stores is read by nothing after it. */
static void die(void) __attribute__((noreturn));
static void die(void) { dying = 1; cleanup(); exit(1); }
static void finish(void) {
    if (verbose) work(4);
    work(5);                  /* w5 */
    exit(0);
}
int main(void) {
    if (level > 9) fatal("bad level");
    work(1);                  /* w1 */
    check();
    if (verbose) work(2);     /* w2 */
    if (level < 0) {
        work(3);              /* w3 */
        fatal("negative");
    }
    if (verbose > 1) finish();
    if (level > 100) die();
    if (dying) work(6);       /* w6 */
    if (cleaned) work(7);     /* w7 */
    return 0;
}
"#;

/// Paths that end the program (a `noreturn` error function, `exit`) are not exits: what
/// follows a validation that may call them is not under it. A function that never returns
/// keeps its ends as exits.
#[test]
fn paths_that_end_the_program_do_not_guard_what_follows() {
    let sources = [global(0, "level"), global(1, "verbose")];
    let (p, si) = run(FATAL, &sources);
    assert_eq!(work_influence(&p, &si, FATAL, "/* w1 */"), set(&[]));
    assert_eq!(work_influence(&p, &si, FATAL, "/* w2 */"), set(&[1]));
    // Cold: no path from it returns, one ends the program (`static_taint::cold`).
    assert_eq!(work_influence(&p, &si, FATAL, "/* w3 */"), set(&[]));
    assert_eq!(work_influence(&p, &si, FATAL, "/* w5 */"), set(&[]));
    // A function that never returns stores without its calling context.
    assert_eq!(work_influence(&p, &si, FATAL, "/* w6 */"), set(&[]));
    // ... and neither does one called only from such functions.
    assert_eq!(work_influence(&p, &si, FATAL, "/* w7 */"), set(&[]));
}

const PARSER: &str = r#"
#include <string.h>
extern void work(int);
int a_opt, b_opt;
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-a")) a_opt = 1;
        if (!strcmp(argv[i], "-b")) b_opt = 1;
    }
    /* Later the program writes into a string the parser read (gzip shortens file names);
       a flow-insensitive analysis sees the parser's decisions depend on it. */
    if (b_opt) argv[0][0] = 'B';
    if (a_opt) work(1);   /* w1 */
    if (b_opt) work(2);   /* w2 */
    return 0;
}
"#;

/// A global the spec names as an option's home holds that option: what argument parsing
/// stores there does not add the options that reach the parser.
#[test]
fn option_globals_hold_only_their_options() {
    let sources = [global(0, "a_opt"), global(1, "b_opt")];
    let (p, si) = run(PARSER, &sources);
    assert_eq!(work_influence(&p, &si, PARSER, "/* w1 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, PARSER, "/* w2 */"), set(&[1]));
}

/// gnulib's shapes: `xmalloc` returns `nonnull (malloc (n))`, `xstrdup` a copy into a fresh
/// object, and `base_name` a pointer into its argument.
const STRINGS: &str = r#"
#include <stdlib.h>
#include <string.h>
extern void work(int);
int a_opt, b_opt;
static void *nonnull(void *p) { if (!p) abort(); return p; }
static void *xmalloc(size_t n) { return nonnull(malloc(n)); }
static char *xstrdup(const char *s) { size_t n = strlen(s) + 1; return memcpy(xmalloc(n), s, n); }
static const char *base_name(const char *s) {
    const char *b = s;
    for (; *s; s++)
        if (*s == '/') b = s + 1;
    return b;
}
int main(void) {
    char a_buf[8] = { 0 }, b_buf[8] = { 0 };
    a_buf[0] = (char)a_opt;
    b_buf[0] = (char)b_opt;
    char *a = xstrdup(a_buf), *b = xstrdup(b_buf);
    if (a[0]) work(1);   /* w1 */
    if (b[0]) work(2);   /* w2 */
    const char *pa = base_name(a);
    const char *pb = base_name(b);
    return pa == pb;
}
"#;

#[test]
fn allocating_copying_and_pointer_returning_helpers_keep_objects_apart() {
    check_strings(STRINGS);
    // With glibc's checked variants (`__memcpy_chk` behind an inline `memcpy`), as Debian
    // builds packages.
    let fortified = format!("#define _FORTIFY_SOURCE 2\n{STRINGS}");
    let c = llvm::fixture::compile("prog.c", &fortified);
    assert!(
        c.translation
            .program
            .functions
            .iter()
            .any(|f| f.name == "__memcpy_chk"),
        "the fortified build calls __memcpy_chk"
    );
    check_strings(&fortified);
}

fn check_strings(source: &str) {
    let sources = [global(0, "a_opt"), global(1, "b_opt")];
    let (p, si) = run(source, &sources);
    let pts = &si.facts.points_to;
    let id = |name: &str| ir::FuncId::new(p.functions.iter().position(|f| f.name == name).unwrap());
    assert!(pts.wrappers.allocates(id("xmalloc")));
    assert!(pts.wrappers.allocates(id("xstrdup")));
    assert_eq!(pts.wrappers.duplicates(id("xstrdup")), Some(0));
    assert_eq!(pts.wrappers.returns_argument(id("base_name")), Some(0));
    // Each copy is an object of its own, holding what was copied into it.
    assert_eq!(work_influence(&p, &si, source, "/* w1 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, source, "/* w2 */"), set(&[1]));
    // `pa` points into `a`'s copy only.
    let main = &p.functions[id("main")];
    let base_name_results: Vec<ir::ValueId> = main
        .blocks
        .iter()
        .flat_map(|&b| p.block(b).insts.iter())
        .filter_map(|&i| match &p.inst(i).kind {
            ir::InstKind::Call {
                callee: ir::Callee::Direct(g),
                ..
            } if *g == id("base_name") => p.inst(i).result,
            _ => None,
        })
        .collect();
    assert_eq!(base_name_results.len(), 2);
    for r in base_name_results {
        assert_eq!(pts.of(r).len(), 1, "{:?}", pts.of(r));
    }
}

const HEADER_AND_DATA: &str = r#"
#include <stdlib.h>
extern void work(int);
int a_opt;
struct hdr { int len; char *name; };
struct tail { long size; int opt; };
/* The data after a header, viewed as another struct (SQLite does this). */
static struct tail *tail_of(struct hdr *h) { return (struct tail *)(h + 1); }
int main(void) {
    struct hdr *h = malloc(sizeof *h + sizeof(struct tail));
    h->len = 0;
    tail_of(h)->opt = a_opt;
    if (tail_of(h)->opt) work(1);   /* w1 */
    return 0;
}
"#;

/// Field accesses are filtered by the type an object is allocated as only when it is
/// allocated with exactly that type's size: a larger one may hold other types after it.
#[test]
fn data_after_a_header_is_not_filtered_by_the_header_type() {
    let sources = [global(0, "a_opt")];
    let (p, si) = run(HEADER_AND_DATA, &sources);
    assert_eq!(
        work_influence(&p, &si, HEADER_AND_DATA, "/* w1 */"),
        set(&[0])
    );
}

const SCANNERS: &str = r#"
#define _FORTIFY_SOURCE 2
#include <string.h>
extern void work(int);
int a_opt, b_opt;
/* Like gnulib's last_component: what it returns depends on the string it scans. */
static const char *last(const char *s) {
    const char *b = s;
    for (; *s; s++)
        if (*s == '/') b = s + 1;
    return b;
}
int main(void) {
    char a[8] = { 0 }, b[8] = { 0 };
    a[0] = (char)a_opt;
    b[0] = (char)b_opt;
    if (last(a) != a) work(1);   /* w1 */
    if (last(b) != b) work(2);   /* w2 */
    /* strcpy is an inline wrapper around __strcpy_chk here. */
    char x[8], y[8];
    strcpy(x, a);
    strcpy(y, b);
    if (x[0]) work(3);           /* w3 */
    if (y[0]) work(4);           /* w4 */
    return 0;
}
"#;

/// What a helper reads through a parameter is what its call site passes (context-sensitive
/// like the parameter's value), and `_FORTIFY_SOURCE`'s inline `strcpy` copies per call.
#[test]
fn helpers_read_what_their_call_site_passes() {
    let sources = [global(0, "a_opt"), global(1, "b_opt")];
    let (p, si) = run(SCANNERS, &sources);
    assert!(
        p.functions.iter().any(|f| f.name == "__strcpy_chk"),
        "the fortified build calls __strcpy_chk"
    );
    assert_eq!(work_influence(&p, &si, SCANNERS, "/* w1 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, SCANNERS, "/* w2 */"), set(&[1]));
    assert_eq!(work_influence(&p, &si, SCANNERS, "/* w3 */"), set(&[0]));
    assert_eq!(work_influence(&p, &si, SCANNERS, "/* w4 */"), set(&[1]));
}

const RESETS: &str = r#"
extern void work(int);
int a_opt, b_opt;
int cur;   /* reset at the start of each unit of work, like gzip's ifd */
static void touch(void) { if (a_opt) cur = 2; }
static void process(void) {
    cur = 0;
    if (cur) work(1);        /* w1 */
    touch();
    if (cur) work(3);        /* w3 */
    if (b_opt) cur = 1;
}
int main(void) {
    for (int i = 0; i < 2; i++) process();
    if (cur) work(2);        /* w2 */
    return 0;
}
"#;

/// A global reset by a function reads, until something else may write it, only what that
/// function stored: the previous unit of work's values do not reach its decisions.
#[test]
fn a_global_reset_before_it_is_read_holds_only_the_reset() {
    let sources = [global(0, "a_opt"), global(1, "b_opt")];
    let (p, si) = run(RESETS, &sources);
    assert_eq!(work_influence(&p, &si, RESETS, "/* w1 */"), set(&[]));
    // A call that may write it in between: what it may write, too.
    assert_eq!(work_influence(&p, &si, RESETS, "/* w3 */"), set(&[0, 1]));
    // Elsewhere, everything stored there.
    assert_eq!(work_influence(&p, &si, RESETS, "/* w2 */"), set(&[0, 1]));
}

const PARSED_THEN_READ: &str = r#"
#include <string.h>
extern void work(int);
int small, level;
int main(int argc, char **argv) {
    small = 0; level = 9;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s")) small = 1;
        if (!strcmp(argv[i], "-1")) level = 1;
    }
    if (small && level > 2) level = 2;   /* capped */
    work(level);                         /* w1 */
    return 0;
}
"#;

/// An option's global read in the function that parsed it holds the option: the stores of
/// the parsing loop are how it arrives (bzip2's `-s` caps the block size right after it),
/// and what `-s` then stores there is followed.
#[test]
fn an_option_read_where_it_was_parsed_keeps_its_option() {
    let sources = [global(0, "small"), global(1, "level")];
    let (p, si) = run(PARSED_THEN_READ, &sources);
    let line = llvm::fixture::line_of(PARSED_THEN_READ, "/* capped */");
    let mut capped = OptionSet::new();
    for d in si.decisions.iter().filter(|d| d.loc.line == line) {
        capped = capped.union(si.of(d.inst));
    }
    assert_eq!(capped, set(&[0, 1]), "the decisions that cap the level");
    // The parsing loop's stores add nothing (it decides on argv alone); the cap adds -s.
    assert_eq!(
        work_influence(&p, &si, PARSED_THEN_READ, "/* w1 */"),
        set(&[0, 1])
    );
    assert_eq!(si.load_time.constant, vec![OptionId(0), OptionId(1)]);
    assert!(si.relevant_options().contains(OptionId(0)));
    assert!(si.relevant_options().contains(OptionId(1)));
}

const GETOPT: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern void work(int);
int a_opt, b_opt, level = 1;
long window;        /* computed from the level while parsing */
static void compress(char *name) {
    /* -b rewrites the name in place: argv's strings, which the parser read */
    if (b_opt) name[0] = 'x';
    for (long i = 0; i < window; i += 1000) work(1);   /* w1 */
}
int main(int argc, char **argv) {
    int c;
    while ((c = getopt(argc, argv, "abl:")) != -1) {
        switch (c) {
        case 'a': a_opt = 1; break;
        case 'b': b_opt = 1; break;
        case 'l': level = atoi(optarg); window = level * 1000L; break;
        }
    }
    if (a_opt) work(2);   /* w2 */
    if (optind == argc) compress(argv[0]);
    for (int k = optind; k < argc; k++) compress(argv[k]);
    return 0;
}
"#;

/// getopt parsing into globals: the parser reads argv before anything writes it, so its
/// stores carry no option of the code that later writes argv's strings, and what it
/// computes from an option (`window`) holds that option alone.
#[test]
fn state_set_while_parsing_is_a_load_time_constant() {
    let sources = [global(0, "a_opt"), global(1, "b_opt"), global(2, "level")];
    let (p, si) = run(GETOPT, &sources);
    assert_eq!(work_influence(&p, &si, GETOPT, "/* w1 */"), set(&[2]));
    assert_eq!(work_influence(&p, &si, GETOPT, "/* w2 */"), set(&[0]));
    let lt = &si.load_time;
    assert_eq!(lt.constant, vec![OptionId(0), OptionId(1), OptionId(2)]);
    assert!(lt.rewritten.is_empty());
    assert!(
        lt.main_blocks.0 > 0 && lt.main_blocks.0 < lt.main_blocks.1,
        "{lt:?}"
    );
    let end = lt.end.expect("the initialisation's last line").line;
    assert_eq!(end, llvm::fixture::line_of(GETOPT, "window = level"));
}

const REWRITTEN: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern void work(int);
int a_opt, b_opt, level = 3;
static void compress(const char *name) {
    if (b_opt) level = 1;    /* -b forces the fastest level for the rest of the run */
    for (int i = 0; i < level; i++) work(1);   /* w1 */
    (void)name;
}
int main(int argc, char **argv) {
    int c;
    while ((c = getopt(argc, argv, "abl:")) != -1) {
        switch (c) {
        case 'a': a_opt = 1; break;
        case 'b': b_opt = 1; break;
        case 'l': level = atoi(optarg); break;
        }
    }
    if (a_opt) work(2);   /* w2 */
    if (optind == argc) compress("-");
    for (int k = optind; k < argc; k++) compress(argv[k]);
    return 0;
}
"#;

/// An option's global written again after the initialisation, under another option, is not
/// a load-time constant: its readers see both options.
#[test]
fn an_option_written_after_parsing_keeps_what_is_written() {
    let sources = [global(0, "a_opt"), global(1, "b_opt"), global(2, "level")];
    let (p, si) = run(REWRITTEN, &sources);
    assert_eq!(work_influence(&p, &si, REWRITTEN, "/* w1 */"), set(&[1, 2]));
    assert_eq!(work_influence(&p, &si, REWRITTEN, "/* w2 */"), set(&[0]));
    let lt = &si.load_time;
    assert_eq!(lt.constant, vec![OptionId(0), OptionId(1)]);
    assert_eq!(lt.rewritten.len(), 1);
    let (o, i) = lt.rewritten[0];
    assert_eq!(o, OptionId(2));
    assert_eq!(
        p.inst(i).loc.line,
        llvm::fixture::line_of(REWRITTEN, "forces the fastest")
    );
}

#[test]
fn an_option_source_naming_a_global_the_program_lacks_is_named() {
    let c = llvm::fixture::compile("prog.c", "int level;\nint main(void) { return level; }\n");
    let sources = [analysis::OptionSource {
        option: space::OptionId(0),
        kind: analysis::SourceKind::Global {
            name: "levle".into(),
        },
    }];
    let err = analysis::ResolvedSources::resolve(&c.translation.program, &sources).unwrap_err();
    assert_eq!(
        err.to_string(),
        "option source names global `levle`, which the program does not define"
    );
}

const CHOSEN: &str = r#"
#include <unistd.h>
static int mode, packed, slow, verbose;
static void copy(void) {}
static void fast(void) {}
static void (*const handlers[2])(void) = {copy, fast};
struct codec { void (*encode)(int); };
static void plain_encode(int n) { usleep(n); }
static void packed_encode(int n) { usleep(2 * n); }
static const struct codec plain = {plain_encode}, tight = {packed_encode};
static void pause_for(int us) { usleep(us); }
int main(void) {
    handlers[mode]();                            /* at-table */
    const struct codec *c = packed ? &tight : &plain;
    c->encode(100);                              /* at-codec */
    pause_for(slow ? 600 : 100);                 /* at-helper */
    pause_for(100);                              /* at-constant */
    usleep(verbose ? 10 : 0);                    /* at-library */
    return 0;
}
"#;

/// The influence of the statement on the line marked `marker` that decides.
fn decision_on(p: &Program, si: &StatementInfluence, source: &str, marker: &str) -> OptionSet {
    let line = llvm::fixture::line_of(source, marker);
    let calls: Vec<ir::InstId> = p
        .insts
        .iter_enumerated()
        .filter(|(_, inst)| inst.loc.line == line && matches!(inst.kind, ir::InstKind::Call { .. }))
        .map(|(i, _)| i)
        .collect();
    assert!(!calls.is_empty(), "no call on line {line}");
    let mut out = OptionSet::new();
    for i in calls {
        out = out.union(si.of(i));
    }
    out
}

#[test]
fn options_that_choose_code_through_pointers_selects_and_the_library_are_decisions() {
    let sources = [
        global(0, "mode"),
        global(1, "packed"),
        global(2, "slow"),
        global(3, "verbose"),
    ];
    let (p, si) = run(CHOSEN, &sources);
    assert_eq!(
        decision_on(&p, &si, CHOSEN, "at-table"),
        set(&[0]),
        "handler table"
    );
    assert_eq!(
        decision_on(&p, &si, CHOSEN, "at-codec"),
        set(&[1]),
        "struct of pointers"
    );
    assert_eq!(
        decision_on(&p, &si, CHOSEN, "at-helper"),
        set(&[2]),
        "a helper passing its parameter to the library: the call site decides"
    );
    assert_eq!(decision_on(&p, &si, CHOSEN, "at-constant"), set(&[]));
    assert_eq!(
        decision_on(&p, &si, CHOSEN, "at-library"),
        set(&[3]),
        "select into libc"
    );
    // The helper itself does not collect its callers' options.
    let pause = p.function_named("pause_for").unwrap();
    let in_pause: Vec<&OptionSet> = p
        .insts
        .iter_enumerated()
        .filter(|(i, _)| p.func_of(*i) == pause)
        .map(|(i, _)| si.of(i))
        .collect();
    assert!(in_pause.iter().all(|s| s.is_empty()), "{in_pause:?}");
    use analysis::DecisionKind;
    let kinds: Vec<DecisionKind> = si.decisions.iter().map(|d| d.kind).collect();
    for k in [
        DecisionKind::IndirectCall,
        DecisionKind::Select,
        DecisionKind::LibraryCall,
    ] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
}

const LONGJMP: &str = r#"
#include <setjmp.h>
extern void work(int);
int level, quiet;
static jmp_buf retry;
int main(void) {
    if (setjmp(retry)) { work(3); return 1; }
    if (level > 3) longjmp(retry, 1);
    work(1);                                    /* w1 */
    if (quiet) work(2);                         /* w2 */
    return 0;
}
"#;

/// `longjmp` ends its block in `unreachable`, but the program goes on at the `setjmp`: the
/// path is not a program end, so what follows the decision still depends on it.
#[test]
fn a_longjmp_is_not_a_program_end() {
    let sources = [global(0, "level"), global(1, "quiet")];
    let (p, si) = run(LONGJMP, &sources);
    assert_eq!(work_influence(&p, &si, LONGJMP, "/* w1 */"), set(&[0]));
    assert!(si.set_aside.is_empty(), "{:?}", si.set_aside);
}

const ERROR_REPORTER: &str = r#"
#include <stdio.h>
#include <stdlib.h>
extern void work(int);
int level, quiet;
/* bzip2's shape: neither is declared `noreturn`, both end the program. */
static void clean_up_and_fail(int code) { exit(code); }
static void panic_(const char *m) {
    if (!quiet) fprintf(stderr, "%s\n", m);   /* p1 */
    clean_up_and_fail(3);
}
int main(void) {
    if (level > 3) {
        work(1);                                /* w1 */
        if (level > 9) panic_("too high");
    }
    if (quiet) work(2);                         /* w2 */
    return 0;
}
"#;

/// A function every path of which ends the program through calls, without `noreturn`, is
/// cold: its decisions are set aside, not an interaction of the options they read with those
/// of its callers.
#[test]
fn an_error_reporter_that_ends_the_program_is_set_aside() {
    let sources = [global(0, "level"), global(1, "quiet")];
    let (p, si) = run(ERROR_REPORTER, &sources);
    let panic = p.function_named("panic_").unwrap();
    assert!(p.ends_program()[panic]);
    assert_eq!(
        work_influence(&p, &si, ERROR_REPORTER, "/* w1 */"),
        set(&[0])
    );
    assert_eq!(
        work_influence(&p, &si, ERROR_REPORTER, "/* w2 */"),
        set(&[1])
    );
    assert!(
        si.interactions()
            .iter()
            .all(|s| si.sets.get(*s) != &set(&[0, 1])),
        "{:?}",
        si.interactions()
    );
    assert!(
        si.set_aside
            .iter()
            .any(|d| p.func_of(d.inst) == panic && si.sets.get(d.options).contains(OptionId(1))),
        "{:?}",
        si.set_aside
    );
}

const SMALL_HELPERS: &str = r#"
#include <string.h>
extern void work(int);
int A, B, C;
struct state { long seed; long total; };
/* Fills a local state and copies it out, as xxHash's `XXH32_reset` does. */
static void reset(struct state *s, long seed) {
    struct state tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.seed = seed;
    memcpy(s, &tmp, sizeof tmp);
}
static void put(long *dst, long v) { *dst = v; }
static struct state sa, sb;
static long na, nb;
int main(void) {
    if (A) reset(&sa, 1);
    if (B) reset(&sb, C ? 3 : 1);
    if (A) put(&na, 2);
    if (B) put(&nb, C);
    if (sa.seed) work(1);   /* w1 */
    if (sb.seed) work(2);   /* w2 */
    if (na) work(3);        /* w3 */
    if (nb) work(4);        /* w4 */
    return 0;
}
"#;

/// A small helper called under A on one object and under B on another writes each site's
/// object with that site's control and arguments (`static_taint::call_sites`), by a store
/// through its parameter or a copy of a local it filled: A and B do not meet.
#[test]
fn small_helpers_write_each_call_sites_object_with_that_sites_options() {
    let sources = [global(0, "A"), global(1, "B"), global(2, "C")];
    let (p, si) = run(SMALL_HELPERS, &sources);
    let w = |m: &str| work_influence(&p, &si, SMALL_HELPERS, m);
    assert_eq!(w("w1"), set(&[0]), "reset under A");
    assert_eq!(w("w2"), set(&[1, 2]), "reset under B with C's seed");
    assert_eq!(w("w3"), set(&[0]), "put under A");
    assert_eq!(w("w4"), set(&[1, 2]), "put under B of C");
    // The helpers' own statements still run under both sites' control.
    let reset = p.functions.iter().position(|f| f.name == "reset").unwrap();
    let context = si.sets.get(si.context[ir::FuncId::from_u32(reset as u32)]);
    assert!(context.contains(OptionId(0)) && context.contains(OptionId(1)));
    // What the solver keeps is concrete: no parameter label in any cell.
    for &m in &si.facts.memory {
        assert!(
            si.sets.get(m).iter().all(|o| o.0 < 3),
            "{:?}",
            si.sets.get(m)
        );
    }
    // `--explain` follows the copy to the call site that made it: B by that site's control,
    // C by the seed it passes.
    let dominance = ProgramDominance::new(&p);
    let explainer = analysis::explain::Explainer::new(&p, &dominance, &si);
    let line = llvm::fixture::line_of(SMALL_HELPERS, "w2");
    let calls = llvm::fixture::calls_to(&p, "work");
    let (_, w2) = calls.iter().find(|(l, _)| *l == line).unwrap();
    let fact = analysis::explain::Fact::Influence(*w2);
    for (option, how) in [
        (1, "stored at call site under"),
        (2, "argument at call site"),
    ] {
        let chain = explainer.explain(fact, OptionId(option)).expect("a chain");
        let hows: Vec<&str> = chain.iter().map(|l| l.how).collect();
        assert!(hows.contains(&how), "option {option}: {hows:?}");
    }
    assert!(explainer.explain(fact, OptionId(0)).is_none());
}

const TAKEN_HELPER: &str = r#"
extern void work(int);
int A, B;
static void put(long *dst, long v) { *dst = v; }
/* Its address is taken: something outside the program's calls may call it. */
void (*hook)(long *, long) = put;
static long na, nb;
int main(void) {
    if (A) put(&na, 2);
    if (B) put(&nb, 3);
    if (na) work(1);   /* w1 */
    return 0;
}
"#;

/// A helper whose address is taken keeps its stores in the helper (under every call site's
/// context, into every object any site passes): a caller the program does not show would
/// otherwise make none of them.
#[test]
fn a_helper_whose_address_is_taken_stores_under_every_call_sites_context() {
    let sources = [global(0, "A"), global(1, "B")];
    let (p, si) = run(TAKEN_HELPER, &sources);
    assert_eq!(work_influence(&p, &si, TAKEN_HELPER, "w1"), set(&[0, 1]));
}

const ARGV_AS_STRUCT: &str = r#"
#include <stdlib.h>
#include <string.h>
extern void work(int);
struct cfg { int level; int other; };
static struct cfg state;
int main(int argc, char **argv) {
    void *p = argc > 2 ? (void *)argv[1] : (void *)&state;
    struct cfg *c = p;
    if (c->level > 5) work(1);          /* w1 */
    if (strlen(argv[0]) > 3) work(2);   /* w2 */
    return 0;
}
"#;

/// What `main`'s parameters point to holds strings, never a struct: a pointer that may point
/// there or to a struct (points-to merges them through a `void *`) does not make the
/// struct's option field part of argv, so a library call reading argv (`strlen`) does not
/// read the option.
#[test]
fn main_arguments_hold_no_struct_fields() {
    let field = struct_field(0, "cfg", "level");
    let (p, si) = run(ARGV_AS_STRUCT, &[field]);
    assert_eq!(work_influence(&p, &si, ARGV_AS_STRUCT, "w1"), set(&[0]));
    assert_eq!(work_influence(&p, &si, ARGV_AS_STRUCT, "w2"), set(&[]));
}

const UNPLACED: &str = r#"
extern void work(int);
struct cfg { int level; int other; };
/* Set by code the analysis does not see (a library's callback, a plugin): points-to finds
   no object for it. */
struct cfg *current;
int main(void) {
    if (current->level > 5) work(1);    /* w1 */
    if (current->other > 5) work(2);    /* w2 */
    return 0;
}
"#;

/// An option's struct field reached through a pointer that points-to finds no object for is
/// still read where it is loaded: the spec says the option lives there, and dropping it would
/// report the option irrelevant without saying why.
#[test]
fn an_option_field_points_to_cannot_place_is_still_read() {
    let field = struct_field(0, "cfg", "level");
    let (p, si) = run(UNPLACED, &[field]);
    assert_eq!(work_influence(&p, &si, UNPLACED, "w1"), set(&[0]));
    assert_eq!(work_influence(&p, &si, UNPLACED, "w2"), set(&[]));
}

const VIEWS: &str = r#"
#include <stdlib.h>
extern void work(int);
int a_opt, b_opt, c_opt;
/* Two struct types that merely start alike, both in one object (LZ4's frame context holds
   its frame description and a checksum state, each starting with unsigned fields). */
struct info { unsigned size; unsigned mode; unsigned sum; };
struct state { unsigned total; unsigned large; unsigned v1; };
struct ctx { struct info info; long pad; struct state st; };
static void update(struct state *s, unsigned n) { s->total += n; s->large = n > 100; }
/* A generic view of objects that start with the same fields (liblzma's filter coders). */
struct base { int kind; int level; };
struct derived { int kind; int level; int extra; };
static void set_level(void *p) { struct base *b = p; b->level = c_opt; }
int main(int argc, char **argv) {
    struct ctx *c = malloc(sizeof *c);
    c->info.mode = a_opt;
    if (b_opt) update(&c->st, argc);
    if (c->info.mode) work(1);   /* w1 */
    if (c->st.large) work(2);    /* w2 */
    struct derived *d = malloc(sizeof *d);
    d->extra = argc;
    set_level(d);
    if (d->level) work(3);       /* w3 */
    return 0;
}
"#;

/// Struct types that share an initial sequence are one memory only where the program views
/// one object as both: a checksum state beside a frame description in one object keeps its
/// fields apart from the description's, and a generic view of an object still reads what
/// was written through it.
#[test]
fn struct_types_that_start_alike_share_fields_only_where_one_object_is_viewed_as_both() {
    let sources = [global(0, "a_opt"), global(1, "b_opt"), global(2, "c_opt")];
    let (p, si) = run(VIEWS, &sources);
    assert!(!si.facts.points_to.merged);
    assert_eq!(work_influence(&p, &si, VIEWS, "w1"), set(&[0]));
    assert_eq!(work_influence(&p, &si, VIEWS, "w2"), set(&[1]));
    assert_eq!(work_influence(&p, &si, VIEWS, "w3"), set(&[2]));
}

const WRITTEN_OUT: &str = r#"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
extern void work(int);
int fill, count;
int main(void) {
    char buf[64];
    memset(buf, 0, sizeof buf);
    if (fill) buf[3] = 'x';
    size_t n = count ? 32 : 16;
    fwrite(buf, 1, n, stdout);                   /* at-fwrite */
    if (write(1, buf, 8) != 8) work(1);          /* at-write */
    if (strlen(buf) > 2) work(2);                /* at-strlen */
    return 0;
}
"#;

/// Writing out a buffer takes as long as its length, whatever its bytes: the bytes' options
/// are no decision of `fwrite` or `write`, while `strlen`'s work follows the bytes.
#[test]
fn a_written_out_buffer_decides_by_its_length_not_its_bytes() {
    let sources = [global(0, "fill"), global(1, "count")];
    let (p, si) = run(WRITTEN_OUT, &sources);
    assert_eq!(decision_on(&p, &si, WRITTEN_OUT, "at-fwrite"), set(&[1]));
    assert_eq!(decision_on(&p, &si, WRITTEN_OUT, "at-write"), set(&[]));
    assert_eq!(work_influence(&p, &si, WRITTEN_OUT, "at-write"), set(&[]));
    assert_eq!(decision_on(&p, &si, WRITTEN_OUT, "at-strlen"), set(&[0]));
}
