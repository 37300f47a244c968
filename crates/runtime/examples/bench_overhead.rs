//! The runtime's cost per region enter/exit pair.
//!
//! `cargo run --release -p runtime --example bench_overhead [PAIRS]`
//!
//! A C loop calls `__knobs_region_enter(i % 8)` / `__knobs_region_exit(i % 8)` PAIRS times
//! (default 20 million), inside an outer open region; compiled with `clang-19 -O2` and linked
//! (1) with the runtime, with `KNOBS_REGION_TIMES` set, (2) with the runtime, the variable
//! unset (disabled), (3) with empty stub functions in another file (the bare call cost), and
//! (4) as the same loop without calls. Each binary times its loop itself (CLOCK_MONOTONIC);
//! the best of five runs is reported as nanoseconds per pair, with the runtime's cost over
//! the loop without calls and over the bare calls.

use std::path::Path;
use std::process::Command;

const LOOP: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef NO_CALLS
#define ENTER(id) __asm__ volatile("" ::"r"(id) : "memory")
#define EXIT(id) __asm__ volatile("" ::"r"(id) : "memory")
#else
void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);
#define ENTER __knobs_region_enter
#define EXIT __knobs_region_exit
#endif
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    ENTER(100);
    double t0 = now();
    for (long i = 0; i < n; i++) {
        ENTER((uint32_t)(i & 7));
        EXIT((uint32_t)(i & 7));
    }
    double t1 = now();
    EXIT(100);
    printf("%.4f\n", (t1 - t0) / (double)n * 1e9);
    return 0;
}
"#;

const STUB: &str = r#"
#include <stdint.h>
void __knobs_region_enter(uint32_t id) { (void)id; }
void __knobs_region_exit(uint32_t id) { (void)id; }
"#;

fn clang(args: &[&dyn AsRef<std::ffi::OsStr>]) {
    let mut cmd = Command::new("clang-19");
    cmd.arg("-O2");
    for a in args {
        cmd.arg(a);
    }
    let out = cmd.output().expect("clang-19 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Best of five runs, in ns per pair.
fn best(exe: &Path, pairs: u64, times: Option<&Path>) -> f64 {
    (0..5)
        .map(|_| {
            let mut cmd = Command::new(exe);
            cmd.arg(pairs.to_string()).env_remove(runtime::ENV_VAR);
            if let Some(t) = times {
                cmd.env(runtime::ENV_VAR, t);
            }
            let out = cmd.output().expect("the loop runs");
            assert!(out.status.success());
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<f64>()
                .unwrap()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let pairs: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("PAIRS is a number"))
        .unwrap_or(20_000_000);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = runtime::build(Path::new("clang-19"), d).unwrap();
    let src = d.join("loop.c");
    let stub = d.join("stub.c");
    std::fs::write(&src, LOOP).unwrap();
    std::fs::write(&stub, STUB).unwrap();
    let (with, stubbed, bare) = (d.join("with"), d.join("stub"), d.join("bare"));
    clang(&[&src, &lib, &"-o", &with]);
    clang(&[&src, &stub, &"-o", &stubbed]);
    clang(&[&"-DNO_CALLS", &src, &"-o", &bare]);

    let times = d.join("times.tsv");
    let enabled = best(&with, pairs, Some(&times));
    let disabled = best(&with, pairs, None);
    let calls = best(&stubbed, pairs, None);
    let none = best(&bare, pairs, None);
    let t = runtime::RegionTimes::read(&times).unwrap();
    assert_eq!(t.entries(), pairs + 1);

    println!("{pairs} enter/exit pairs inside an open region, best of 5 runs (ns per pair):");
    println!("  runtime, KNOBS_REGION_TIMES set   {enabled:8.2}");
    println!("  runtime, KNOBS_REGION_TIMES unset {disabled:8.2}");
    println!("  empty stub functions (bare calls) {calls:8.2}");
    println!("  the loop without calls            {none:8.2}");
    println!(
        "overhead per pair: {:.2} ns over the loop without calls, {:.2} ns over bare calls",
        enabled - none,
        enabled - calls
    );
}
