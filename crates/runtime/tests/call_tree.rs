//! The call-tree runtime linked into a C program that calls the API directly, with
//! `nanosleep`s of known length: one node per calling context, self times with callees'
//! time subtracted (Equation 2), recursion folded into one node, the visit overhead
//! calibrated and subtracted — real clang 19, real runs.

use std::path::Path;
use std::process::Command;

use runtime::call_tree::{CallTree, ENV_VAR};

const PROGRAM: &str = r#"
#include <stdint.h>
#include <time.h>

void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {}
}

/* function ids: 0 main, 1 leaf, 2 rec, 3 mid */
static void leaf(void) { __knobs_region_enter(1); sleep_ms(4); __knobs_region_exit(1); }

static void rec(int n) {
    __knobs_region_enter(2);
    sleep_ms(3);
    if (n > 1) rec(n - 1); else leaf();
    __knobs_region_exit(2);
}

static void mid(void) { __knobs_region_enter(3); sleep_ms(2); leaf(); leaf(); __knobs_region_exit(3); }

int main(void) {
    __knobs_region_enter(0);
    sleep_ms(1);
    leaf();
    mid();
    rec(3);
    for (int i = 0; i < 100000; i++) { __knobs_region_enter(3); __knobs_region_exit(3); }
    __knobs_region_exit(0);
    return 0;
}
"#;

fn run(dir: &Path) -> CallTree {
    let lib = runtime::call_tree::build(Path::new("clang-19"), &dir.join("rt")).unwrap();
    std::fs::write(dir.join("prog.c"), PROGRAM).unwrap();
    let status = Command::new("clang-19")
        .args(["-O1", "-o"])
        .arg(dir.join("prog"))
        .arg(dir.join("prog.c"))
        .arg(&lib)
        .status()
        .unwrap();
    assert!(status.success());
    let out = dir.join("tree.txt");
    let status = Command::new(dir.join("prog"))
        .env(ENV_VAR, &out)
        .status()
        .unwrap();
    assert!(status.success());
    CallTree::read(&out).unwrap()
}

/// The checks on one run; `Err` says which failed.
fn check(tree: &CallTree) -> Result<(), String> {
    let by_path = |path: &[u32]| {
        let k = (0..tree.nodes.len())
            .find(|k| tree.path(*k) == path)
            .ok_or_else(|| format!("no node {path:?} in {tree:?}"))?;
        Ok::<_, String>((k, tree.nodes[k].entries, tree.nodes[k].self_seconds))
    };
    // Contexts: main, main>leaf, main>mid, main>mid>leaf, main>rec (recursion folded),
    // main>rec>leaf; main>mid's 100,000 empty visits are the same node.
    if tree.nodes.len() != 7 {
        return Err(format!("{} nodes: {tree:?}", tree.nodes.len()));
    }
    // A sleep lasts at least its length; a busy machine may add up to 3 ms to a node. Self
    // times are compared after the correction (main pays half of mid's empty visits).
    let within = |got: f64, ms: f64| got >= ms * 1e-3 && got < ms * 1e-3 + 0.003;
    let corrected = tree.corrected_self_seconds();
    for (path, entries, ms) in [
        (&[0][..], 1, 1.0),
        (&[0, 1], 1, 4.0),
        (&[0, 3, 1], 2, 8.0),
        (&[0, 2], 3, 9.0),
        (&[0, 2, 1], 1, 4.0),
    ] {
        let (k, e, _) = by_path(path)?;
        let s = corrected[k];
        if e != entries || !within(s, ms) {
            return Err(format!(
                "{path:?}: {e} entries, {s} s (expected {entries}, {ms} ms)"
            ));
        }
    }
    // The 100,000 empty visits of mid cost something; the correction takes it out of mid
    // (its own half) and main (the caller's half), leaving mid with its 2 ms.
    let (mid, e, raw) = by_path(&[0, 3])?;
    if e != 100_001 {
        return Err(format!("mid entered {e} times"));
    }
    if !(tree.visit_overhead > 0.0 && tree.visit_overhead < 1e-5) {
        return Err(format!("visit overhead {}", tree.visit_overhead));
    }
    let corrected = corrected[mid];
    if !(corrected < raw && within(corrected, 2.0)) {
        return Err(format!(
            "mid: {raw} s corrected to {corrected} s, expected 2 ms"
        ));
    }
    if tree.total < 0.028 {
        return Err(format!("total {} s, less than the 28 ms slept", tree.total));
    }
    Ok(())
}

#[test]
fn one_node_per_calling_context_with_self_times_and_folded_recursion() {
    let dir = tempfile::tempdir().unwrap();
    // Timing on a shared machine: three tries, each checked in full.
    let mut failures = Vec::new();
    for _ in 0..3 {
        match check(&run(dir.path())) {
            Ok(()) => return,
            Err(why) => failures.push(why),
        }
    }
    panic!("three runs failed: {failures:#?}");
}
