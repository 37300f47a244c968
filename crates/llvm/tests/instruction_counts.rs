//! Counted instructions inside instrumented builds (`llvm::instrument_counting` linked with
//! `runtime::build_counting`): real C compiled here, run, and its counts asserted exactly —
//! they are the program's own IR instructions, so they do not depend on the machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use ir::{InstKind, Program, ProgramPoint};
use llvm::{RegionProbe, instrument_counting, link_instrumented};
use runtime::RegionTimes;

const SOURCE: &str = r#"#include <stdlib.h>

__attribute__((noinline)) long work(long n) {
    long s = 0;
    for (long k = 0; k < n; k++)
        s += k * k % 7;
    return s;
}

__attribute__((noinline)) long other(long n) {
    return n * 3 + 1;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10;
    long r = work(n) + other(n);
    return r == -1;
}
"#;

fn clang() -> &'static Path {
    Path::new("clang-19")
}

/// The counting build of the program with `probes`, linked in `dir` as `name` with the
/// region timers' counting runtime.
fn build(compiled: &llvm::fixture::Compiled, probes: &[RegionProbe], name: &str) -> PathBuf {
    let runtime = runtime::build_counting(clang(), Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    build_with(compiled, probes, name, runtime)
}

/// [`build`] with another runtime library.
fn build_with(
    compiled: &llvm::fixture::Compiled,
    probes: &[RegionProbe],
    name: &str,
    runtime: PathBuf,
) -> PathBuf {
    let dir = compiled.dir.path();
    let bc = dir.join(format!("{name}.bc"));
    let (_, counters) = instrument_counting(
        &compiled.ssa,
        &compiled.translation.program,
        &compiled.translation.positions,
        probes,
        &[],
        &bc,
    )
    .unwrap();
    assert!(
        counters.segments > 0 && counters.instructions > 0,
        "{counters:?}"
    );
    let exe = dir.join(name);
    let flags: Vec<String> = runtime::LINK_FLAGS.iter().map(|f| f.to_string()).collect();
    link_instrumented(clang(), &bc, &[runtime], &flags, &exe, true).unwrap();
    exe
}

fn run(exe: &Path, n: u64) -> RegionTimes {
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times.tsv");
    let out = Command::new(exe)
        .arg(n.to_string())
        .env(runtime::ENV_VAR, &times)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let t = RegionTimes::read(&times).unwrap();
    assert!(t.counted, "the file says `unit instructions`");
    assert!(
        t.cpu.is_none() && t.probes == 0.0 && t.startup == 0.0,
        "{t:?}"
    );
    t
}

/// A region over the whole of function `name`: from its first instruction to its return.
fn function_region(p: &Program, name: &str, id: u32) -> RegionProbe {
    let f = p.function_named(name).unwrap();
    let blocks = &p.func(f).blocks;
    let first = p.block(blocks[0]).insts[0];
    let returns = blocks
        .iter()
        .flat_map(|&b| p.block(b).insts.iter().copied())
        .filter(|&i| matches!(p.inst(i).kind, InstKind::Return { .. }))
        .map(ProgramPoint::Before)
        .collect();
    RegionProbe {
        id,
        start: vec![ProgramPoint::Before(first)],
        end: returns,
    }
}

/// The instructions of each block of `name` that count (all but phis).
fn counted_per_block(p: &Program, name: &str) -> Vec<u64> {
    let f = p.function_named(name).unwrap();
    p.func(f)
        .blocks
        .iter()
        .map(|&b| {
            p.block(b)
                .insts
                .iter()
                .filter(|&&i| !matches!(p.inst(i).kind, InstKind::Phi { .. }))
                .count() as u64
        })
        .collect()
}

#[test]
fn regions_get_exactly_their_own_instructions_and_the_probes_none() {
    let compiled = llvm::fixture::compile("count.c", SOURCE);
    let p = &compiled.translation.program;
    let probes = [
        function_region(p, "work", 0),
        function_region(p, "other", 1),
    ];
    let with_regions = build(&compiled, &probes, "regions");
    let without = build(&compiled, &[], "plain");

    // `other` is straight-line code: each call counts its instructions once, but its `ret`,
    // which runs after the region's exit probe (placed before it), and so in the caller's.
    let other: u64 = counted_per_block(p, "other").iter().sum();
    let work = counted_per_block(p, "work");
    assert_eq!(
        other - 1,
        run(&with_regions, 3).regions[&1].self_seconds as u64
    );
    let at = |n: u64| run(&with_regions, n);
    let (t0, t1, t10, t100) = (at(0), at(1), at(10), at(100));
    for t in [&t0, &t1, &t10, &t100] {
        // Every instruction is charged once: to a region or to the base.
        let charged = t.base + t.regions.values().map(|r| r.self_seconds).sum::<f64>();
        assert_eq!(t.total, charged, "{t:?}");
        assert_eq!(t.regions[&0].entries, 1);
        assert_eq!(t.unmatched_exits, 0);
    }
    // The loop, as clang 19 emits it: [entry, header, cleanup, body, latch, exit]. Each
    // iteration runs the header, the body and the latch; with no iteration `work` runs the
    // entry, the header, the cleanup and the exit (but its `ret`).
    assert_eq!(work.len(), 6, "the loop's blocks: {work:?}");
    let per_iteration = work[1] + work[3] + work[4];
    let region = |t: &RegionTimes| t.regions[&0].self_seconds as u64;
    assert_eq!(region(&t1) - region(&t0), per_iteration);
    assert_eq!(region(&t100) - region(&t10), 90 * per_iteration);
    assert_eq!(region(&t0), work[0] + work[1] + work[2] + work[5] - 1);
    // The rest of the program (main) does not depend on the trip count.
    assert_eq!(t0.base, t100.base);

    // The ground truth, the same program counted with no region: the same totals exactly, so
    // the probes (and the counting itself) add nothing to any count.
    for n in [0, 1, 10, 100] {
        let truth = run(&without, n);
        assert!(truth.regions.is_empty());
        assert_eq!(truth.total, at(n).total, "n = {n}");
        assert_eq!(truth.base, truth.total);
    }
}

#[test]
fn the_call_tree_counts_what_the_region_timers_count() {
    let compiled = llvm::fixture::compile("count.c", SOURCE);
    let p = &compiled.translation.program;
    let probes = [
        function_region(p, "work", 0),
        function_region(p, "other", 1),
    ];
    let timers = build(&compiled, &probes, "regions");
    let library =
        runtime::call_tree::build_counting(clang(), Path::new(env!("CARGO_TARGET_TMPDIR")));
    let tree_exe = build_with(&compiled, &probes, "tree", library.unwrap());
    for n in [0, 7, 50] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree.txt");
        let out = Command::new(&tree_exe)
            .arg(n.to_string())
            .env(runtime::call_tree::ENV_VAR, &file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let tree = runtime::call_tree::CallTree::read(&file).unwrap();
        assert!(tree.counted && tree.visit_overhead == 0.0 && tree.cpu_total.is_none());
        let regions = run(&timers, n);
        // The same counter read by two runtimes: the same total, the same count per function,
        // and every instruction charged to exactly one node.
        assert_eq!(tree.total, regions.total, "n = {n}");
        let node = |f: u32| tree.nodes.iter().find(|x| x.function == Some(f)).unwrap();
        for f in [0, 1] {
            assert_eq!(
                node(f).self_seconds,
                regions.regions[&f].self_seconds,
                "n = {n}"
            );
            assert_eq!(node(f).entries, 1);
        }
        assert_eq!(tree.nodes[0].self_seconds, regions.base);
        assert_eq!(
            tree.nodes.iter().map(|x| x.self_seconds).sum::<f64>(),
            tree.total
        );
    }
}

/// A `pure` function (LLVM's `memory(read)`) with a region in it is no longer pure: `-O2`
/// must neither merge its two calls into one nor carry the counter's value across a call.
const PURE: &str = r#"
__attribute__((pure, noinline)) long weight(const char *s) {
    long n = 0;
    while (*s)
        n += *s++;
    return n;
}

int main(int argc, char **argv) {
    long a = weight(argv[0]);
    long b = argc > 1 ? weight(argv[0]) : 0;
    return (a + b) == 1;
}
"#;

#[test]
fn a_pure_function_with_a_region_keeps_its_calls_and_counts() {
    let compiled = llvm::fixture::compile("pure.c", PURE);
    let p = &compiled.translation.program;
    let probes = [function_region(p, "weight", 0)];
    let with_region = build(&compiled, &probes, "pure-regions");
    let library =
        runtime::call_tree::build_counting(clang(), Path::new(env!("CARGO_TARGET_TMPDIR")));
    let tree_exe = build_with(&compiled, &probes, "pure-tree", library.unwrap());
    let once = run(&with_region, 0);
    // `run` passes one argument, so main calls `weight` twice.
    assert_eq!(once.regions[&0].entries, 2, "{once:?}");
    let charged = once.base + once.regions.values().map(|r| r.self_seconds).sum::<f64>();
    assert_eq!(once.total, charged, "{once:?}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tree.txt");
    let out = Command::new(&tree_exe)
        .arg("0")
        .env(runtime::call_tree::ENV_VAR, &file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let tree = runtime::call_tree::CallTree::read(&file).unwrap();
    // No node's count went backwards (it would wrap to about 2^64).
    for n in &tree.nodes {
        assert!(n.self_seconds <= tree.total, "{tree:?}");
    }
    assert_eq!(
        tree.nodes.iter().map(|x| x.self_seconds).sum::<f64>(),
        tree.total
    );
}

/// A function declared `pure` (`memory(read)` in the IR, as xz's `lzma_crc32` is): the
/// counting build makes it write the counter, so the attribute must go, or the optimiser
/// keeps the caller's count in a register across the call and the callee's work is lost.
const PURE_CHECKSUM: &str = r#"#include <stdlib.h>

__attribute__((pure, noinline)) unsigned checksum(const unsigned char *b, long n) {
    unsigned c = 0;
    for (long i = 0; i < n; i++)
        c = c * 31 + b[i];
    return c;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10;
    unsigned char *b = calloc(n, 1);
    unsigned c = checksum(b, n);
    if (c == 12345)
        abort();
    free(b);
    return 0;
}
"#;

#[test]
fn a_pure_functions_work_is_counted() {
    let compiled = llvm::fixture::compile("checksum.c", PURE_CHECKSUM);
    let plain = build(&compiled, &[], "plain");
    let (short, long) = (run(&plain, 1000).total, run(&plain, 3000).total);
    // Each of the 2000 more iterations counts its loop body's instructions (5 or more).
    assert!(
        long - short >= 2000.0 * 5.0,
        "2000 more iterations of a pure function's loop counted {} instructions",
        long - short
    );
}

/// Markers (functions named with `llvm::MARKER_PREFIX`, which the variant simulator puts
/// around feature blocks for an instrumenter to find) count nothing: neither their calls nor
/// their bodies, so the program with them counts what it counts without them.
#[test]
fn markers_count_nothing() {
    let marked = SOURCE
        .replace(
            "int main(",
            &format!(
                "static inline void {}block(unsigned b, const char *o) {{ (void)b; (void)o; }}\n\nint main(",
                llvm::MARKER_PREFIX
            ),
        )
        .replace(
            "long r = work(n) + other(n);",
            &format!(
                "{0}block(1, \"x\"); long r = work(n) + other(n); {0}block(1, \"x\");",
                llvm::MARKER_PREFIX
            ),
        );
    assert_ne!(marked, SOURCE);
    let with = llvm::fixture::compile("marked.c", &marked);
    let marker = with
        .translation
        .program
        .function_named(&format!("{}block", llvm::MARKER_PREFIX));
    assert!(marker.is_some(), "the marker is in the program");
    let without = llvm::fixture::compile("count.c", SOURCE);
    let (with, without) = (build(&with, &[], "marked"), build(&without, &[], "plain"));
    for n in [0, 5] {
        assert_eq!(run(&with, n).total, run(&without, n).total, "n = {n}");
    }
}
