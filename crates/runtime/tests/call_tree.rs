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
