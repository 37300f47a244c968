//! The call-tree runtime's precision on real hardware (its exact accounting is tested with
//! the test clock in `tests/call_tree.rs`).
//!
//! `cargo run --release -p runtime --example bench_call_tree [RUNS] [EMPTY]`
//!
//! A C program whose functions sleep known lengths (`nanosleep`, CLOCK_MONOTONIC) in five
//! calling contexts, recursion included, and make EMPTY (default 100,000) empty visits of
//! one function, linked with the real runtime (`clang-19 -O1`) and run RUNS times (default
//! 5). Per context: the slept length and how far the corrected self time lies beyond it
//! (µs: min, median, max over the runs); then the calibrated cost of one enter/exit pair and
//! what the empty visits' context keeps of them after the correction.

use std::path::Path;
use std::process::Command;

use runtime::call_tree::{CallTree, ENV_VAR};

const PROGRAM: &str = r#"
#include <stdint.h>
#include <stdlib.h>
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

int main(int argc, char **argv) {
    long empty = atol(argv[1]);
    (void)argc;
    __knobs_region_enter(0);
    sleep_ms(1);
    leaf();
    mid();
    rec(3);
    for (long i = 0; i < empty; i++) { __knobs_region_enter(3); __knobs_region_exit(3); }
    __knobs_region_exit(0);
    return 0;
}
"#;

/// Contexts (function ids from main down) and the milliseconds they sleep themselves.
const CONTEXTS: &[(&[u32], f64)] = &[
    (&[0], 1.0),
    (&[0, 1], 4.0),
    (&[0, 3], 2.0),
    (&[0, 3, 1], 8.0),
    (&[0, 2], 9.0),
    (&[0, 2, 1], 4.0),
];

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args
        .next()
        .map(|a| a.parse().expect("RUNS is a number"))
        .unwrap_or(5);
    let empty: u64 = args
        .next()
        .map(|a| a.parse().expect("EMPTY is a number"))
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = runtime::call_tree::build(Path::new("clang-19"), d).unwrap();
    let (src, exe, out) = (d.join("prog.c"), d.join("prog"), d.join("tree.txt"));
    std::fs::write(&src, PROGRAM).unwrap();
    let status = Command::new("clang-19")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(&lib)
        .status()
        .unwrap();
    assert!(status.success());

    let trees: Vec<CallTree> = (0..runs.max(1))
        .map(|_| {
            let status = Command::new(&exe)
                .arg(empty.to_string())
                .env(ENV_VAR, &out)
                .status()
                .unwrap();
            assert!(status.success());
            CallTree::read(&out).unwrap()
        })
        .collect();
    let stats = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    println!(
        "{} runs, {empty} empty visits; corrected self time beyond the slept length (µs):",
        trees.len()
    );
    println!("  context        slept ms      min   median      max");
    for (path, ms) in CONTEXTS {
        let beyond = trees
            .iter()
            .map(|t| {
                let k = (0..t.nodes.len())
                    .find(|k| t.path(*k) == *path)
                    .expect("every context has a node");
                (t.corrected_self_seconds()[k] - ms * 1e-3) * 1e6
            })
            .collect();
        let (lo, med, hi) = stats(beyond);
        println!(
            "  {:<14} {ms:8.0} {lo:8.1} {med:8.1} {hi:8.1}",
            format!("{path:?}")
        );
    }
    let (lo, med, hi) = stats(trees.iter().map(|t| t.visit_overhead * 1e9).collect());
    println!("visit overhead (ns per enter/exit pair): min {lo:.1}, median {med:.1}, max {hi:.1}");
    let (lo, med, hi) = stats(
        trees
            .iter()
            .map(|t| (t.total - 0.028) * 1e3)
            .collect::<Vec<_>>(),
    );
    println!("total beyond the 28 ms slept (ms): min {lo:.3}, median {med:.3}, max {hi:.3}");
}
