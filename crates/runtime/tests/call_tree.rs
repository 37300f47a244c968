//! The call-tree runtime linked into a C program that calls the API directly: one node per
//! calling context, self times with callees' time subtracted (Equation 2), recursion folded
//! into one node, the visit overhead calibrated and subtracted — real clang 19, real runs,
//! checked exactly with the test clock: time passes only through the program's
//! `__knobs_test_work` and the visits' fixed costs (enter 3 + 5 ns, exit 7 + 9 ns around the
//! clock read: 12 ns of each pair in the caller, 12 in the callee), so the result does not
//! depend on the machine's speed or load. How precise the tree is on real hardware is the
//! `bench_call_tree` example.

use std::path::{Path, PathBuf};
use std::process::Command;

use runtime::call_tree::{CallTree, ENV_VAR};

const PROGRAM: &str = r#"
#include <stdint.h>

void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);
void __knobs_test_work(uint64_t ns);
#define W __knobs_test_work

/* function ids: 0 main, 1 leaf, 2 rec, 3 mid */
static void leaf(void) { __knobs_region_enter(1); W(4000); __knobs_region_exit(1); }

static void rec(int n) {
    __knobs_region_enter(2);
    W(3000);
    if (n > 1) rec(n - 1); else leaf();
    __knobs_region_exit(2);
}

static void mid(void) { __knobs_region_enter(3); W(2000); leaf(); leaf(); __knobs_region_exit(3); }

int main(void) {
    W(500);                                 /* the root, before main */
    __knobs_region_enter(0);
    W(1000);
    leaf();
    mid();
    rec(3);
    for (int i = 0; i < 100000; i++) { __knobs_region_enter(3); __knobs_region_exit(3); }
    __knobs_region_exit(0);
    W(700);                                 /* the root, after main */
    return 0;
}
"#;

/// One enter/exit pair's fixed costs, and the caller's and the callee's share of them.
const PAIR: f64 = 3.0 + 5.0 + 7.0 + 9.0;
const CALLER: f64 = 3.0 + 9.0;
const CALLEE: f64 = 5.0 + 7.0;
/// Visits in the whole run: main, leaf, mid, mid's two leafs, rec thrice, rec's leaf and
/// the 100,000 empty visits of mid.
const VISITS: f64 = 100_009.0;
/// The program's own work: 29.2 µs.
const WORK: f64 = 500.0 + 1000.0 + 4000.0 + 2000.0 + 8000.0 + 9000.0 + 4000.0 + 700.0;

fn run() -> CallTree {
    let clang = Path::new("clang-19");
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-call-tree");
    let lib = runtime::call_tree::build_test_clock(clang, &cache).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("prog.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = dir.path().join("prog");
    let out = Command::new(clang)
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(&lib)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let path = dir.path().join("tree.txt");
    let out = Command::new(&exe).env(ENV_VAR, &path).output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
    CallTree::read(&path).unwrap()
}

/// Seconds as nanoseconds, rounded to a thousandth (the file holds whole nanoseconds).
fn ns(seconds: f64) -> f64 {
    (seconds * 1e9 * 1e3).round() / 1e3
}

#[test]
fn one_node_per_calling_context_with_self_times_and_folded_recursion() {
    let tree = run();
    let by_path = |path: &[u32]| {
        (0..tree.nodes.len())
            .find(|k| tree.path(*k) == path)
            .unwrap_or_else(|| panic!("no node {path:?} in {tree:?}"))
    };
    // Contexts: the root, main, main>leaf, main>mid, main>mid>leaf, main>rec (recursion
    // folded), main>rec>leaf; main's 100,000 empty visits of mid are main>mid.
    assert_eq!(tree.nodes.len(), 7, "{tree:?}");
    assert_eq!(tree.other_threads, 0, "{tree:?}");
    assert_eq!((tree.nodes[0].parent, tree.nodes[0].function), (None, None));

    // The calibration times 5 batches of 2,000 pairs at exit, after `total`.
    assert_eq!(ns(tree.visit_overhead), PAIR, "{tree:?}");
    assert_eq!(ns(tree.calibration), 5.0 * 2000.0 * PAIR, "{tree:?}");
    // Every instant is charged to one node: the work and every visit's pair.
    assert_eq!(ns(tree.total), WORK + VISITS * PAIR, "{tree:?}");
    let raw_sum: f64 = tree.nodes.iter().map(|n| ns(n.self_seconds)).sum();
    assert_eq!(raw_sum, ns(tree.total), "{tree:?}");

    // Per context: entries, the raw self time (work, the callee's share of its own visits,
    // the caller's share of its children's) and the corrected one (the work alone).
    // Folded recursion: rec's two recursive visits are paid whole inside rec, but the
    // correction takes the caller's half of all three of rec's entries out of main (the
    // file does not say which entries were recursive), so 2 × 12 ns move from main to rec.
    let corrected = tree.corrected_self_seconds();
    let fold = 2.0 * CALLER;
    for (path, entries, raw, work) in [
        (&[][..], 1, 1200.0 + CALLER, 1200.0),
        (
            &[0],
            1,
            1000.0 + CALLEE + (1.0 + 100_001.0 + 1.0) * CALLER,
            1000.0 - fold,
        ),
        (&[0, 1], 1, 4000.0 + CALLEE, 4000.0),
        (
            &[0, 3],
            100_001,
            2000.0 + 100_001.0 * CALLEE + 2.0 * CALLER,
            2000.0,
        ),
        (&[0, 3, 1], 2, 8000.0 + 2.0 * CALLEE, 8000.0),
        (
            &[0, 2],
            3,
            9000.0 + CALLEE + 2.0 * PAIR + CALLER,
            9000.0 + fold,
        ),
        (&[0, 2, 1], 1, 4000.0 + CALLEE, 4000.0),
    ] {
        let k = by_path(path);
        let n = &tree.nodes[k];
        assert_eq!(n.entries, entries, "{path:?}: {tree:?}");
        assert_eq!(ns(n.self_seconds), raw, "{path:?} raw: {tree:?}");
        assert_eq!(ns(corrected[k]), work, "{path:?} corrected: {tree:?}");
    }
    // The correction takes out exactly the visits' cost, leaving the program's work.
    let corrected_sum: f64 = corrected.iter().map(|s| ns(*s)).sum();
    assert_eq!(corrected_sum, WORK, "{corrected:?}");
}

/// Busy work and sleeps on the test clock: ids 0 main, 1 busy, 2 sleeper.
const SLEEPING_PROGRAM: &str = r#"
#include <stdint.h>

void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);
void __knobs_test_work(uint64_t ns);
void __knobs_test_sleep(uint64_t ns);

static void busy(void) { __knobs_region_enter(1); __knobs_test_work(200000); __knobs_region_exit(1); }

static void sleeper(void) {
    __knobs_region_enter(2);
    __knobs_test_work(1000);
    __knobs_test_sleep(500000);
    __knobs_test_work(50000);
    __knobs_region_exit(2);
}

int main(void) {
    __knobs_region_enter(0);
    __knobs_test_work(3000);
    busy();
    sleeper();
    sleeper();
    __knobs_region_exit(0);
    return 0;
}
"#;

fn run_sleeping(env: &[(&str, &str)]) -> CallTree {
    let clang = Path::new("clang-19");
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-call-tree");
    let lib = runtime::call_tree::build_test_clock(clang, &cache).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("prog.c");
    std::fs::write(&src, SLEEPING_PROGRAM).unwrap();
    let exe = dir.path().join("prog");
    let out = Command::new(clang)
        .args(["-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(&lib)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let path = dir.path().join("tree.txt");
    let out = Command::new(&exe)
        .env(ENV_VAR, &path)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    CallTree::read(&path).unwrap()
}

#[test]
fn the_cpu_clock_charges_what_the_thread_ran_and_not_its_sleeps() {
    let tree = run_sleeping(&[]);
    let sleeper = (0..tree.nodes.len())
        .find(|k| tree.path(*k) == [0, 2])
        .expect("main>sleeper");
    // Every node's CPU self time is its wall self time less the sleeps in it (the sleeper's
    // intervals are long, so they read the CPU clock; the others are all on a CPU).
    for (k, n) in tree.nodes.iter().enumerate() {
        let slept = if k == sleeper { 1_000_000.0 } else { 0.0 };
        assert_eq!(
            ns(n.cpu_seconds.expect("CPU times")),
            ns(n.self_seconds) - slept,
            "node {k}: {tree:?}"
        );
    }
    assert_eq!(
        ns(tree.cpu_total.unwrap()),
        ns(tree.total) - 1_000_000.0,
        "{tree:?}"
    );
    // Read for the long intervals only: busy's, and the two sleepers'.
    assert_eq!(tree.cpu_reads, 3, "{tree:?}");
    // The visits' correction is the same by either clock.
    let wall = tree.corrected_self_seconds();
    let cpu = tree.corrected_cpu_seconds().unwrap();
    assert_eq!(ns(wall[sleeper]) - ns(cpu[sleeper]), 1_000_000.0);

    // Intervals up to 10 ms are taken as on a CPU (the read's cost is what the threshold
    // saves): the 0.5 ms sleeps then count.
    let tree = run_sleeping(&[("KNOBS_REGION_CPU_US", "10000")]);
    assert_eq!(tree.cpu_reads, 0, "{tree:?}");
    for n in &tree.nodes {
        assert_eq!(ns(n.cpu_seconds.unwrap()), ns(n.self_seconds), "{tree:?}");
    }
    // Off: no CPU times at all.
    let tree = run_sleeping(&[("KNOBS_REGION_CPU_US", "off")]);
    assert!(tree.cpu_total.is_none() && tree.corrected_cpu_seconds().is_none());
    assert!(
        tree.nodes.iter().all(|n| n.cpu_seconds.is_none()),
        "{tree:?}"
    );
}
