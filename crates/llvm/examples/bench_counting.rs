//! What counting instructions costs against timing: the same program with the same regions,
//! built as the timed instrumented build (`llvm::instrument` + `runtime::build`) and as the
//! counting build (`llvm::instrument_counting` + `runtime::build_counting`), run side by side
//! in the same configurations, interleaved, best of `ROUNDS` runs each.
//!
//! `cargo run -p llvm --example bench_counting [ROUNDS]` (the programs are built with
//! `clang-19 -O2` whatever the Cargo profile)
//!
//! The program is compute-bound with tight loops of small blocks (the counting build's worst
//! case: one counter update per block) and a region on each of its functions, one of them
//! entered a million times a run (the timed build's worst case).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use ir::{InstKind, Program, ProgramPoint};
use llvm::RegionProbe;

const SOURCE: &str = r#"#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long mix(unsigned long h, int k) {
    return (h ^ (unsigned long)k) * 1099511628211ul;
}

__attribute__((noinline)) unsigned long hash(int n) {
    unsigned long h = 14695981039346656037ul;
    for (int k = 0; k < n; k++)
        h = mix(h, k);
    return h;
}

__attribute__((noinline)) void sort(int *a, int n) {
    for (int i = 1; i < n; i++) {
        int v = a[i], j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

__attribute__((noinline)) unsigned long sieve(int n) {
    char *composite = calloc(n + 1, 1);
    unsigned long count = 0;
    for (int i = 2; i <= n; i++) {
        if (composite[i]) continue;
        count++;
        for (long j = (long)i * i; j <= n; j += i) composite[j] = 1;
    }
    free(composite);
    return count;
}

int main(int argc, char **argv) {
    int big = argc > 1 && !strcmp(argv[1], "big");
    int sorted = argc > 2 && !strcmp(argv[2], "sort");
    sink = hash(big ? 2000000 : 1000000);
    sink = sieve(big ? 4000000 : 2000000);
    if (sorted) {
        int n = 6000;
        int *a = malloc(n * sizeof *a);
        for (int i = 0; i < n; i++) a[i] = (i * 7919) % n;
        sort(a, n);
        sink = a[n / 2];
        free(a);
    }
    return 0;
}
"#;

const CONFIGURATIONS: [&[&str]; 4] = [
    &["small", "-"],
    &["big", "-"],
    &["small", "sort"],
    &["big", "sort"],
];

/// A region over each of `names`, from its first instruction to its returns.
fn regions(p: &Program, names: &[&str]) -> Vec<RegionProbe> {
    names
        .iter()
        .enumerate()
        .map(|(id, name)| {
            let f = p.function_named(name).expect("the function");
            let blocks = &p.func(f).blocks;
            let end = blocks
                .iter()
                .flat_map(|&b| p.block(b).insts.iter().copied())
                .filter(|&i| matches!(p.inst(i).kind, InstKind::Return { .. }))
                .map(ProgramPoint::Before)
                .collect();
            RegionProbe {
                id: id as u32,
                start: vec![ProgramPoint::Before(p.block(blocks[0]).insts[0])],
                end,
            }
        })
        .collect()
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(5, |a| a.parse().expect("ROUNDS is a number"));
    let compiled = llvm::fixture::compile("bench.c", SOURCE);
    let dir = compiled.dir.path();
    let p = &compiled.translation.program;
    let probes = regions(p, &["mix", "hash", "sort", "sieve"]);
    let clang = PathBuf::from("clang-19");
    let flags: Vec<String> = runtime::LINK_FLAGS.iter().map(|f| f.to_string()).collect();
    let positions = &compiled.translation.positions;

    let timed_bc = dir.join("timed.bc");
    llvm::instrument(&compiled.ssa, p, positions, &probes, &timed_bc).expect("instrument");
    let timed = dir.join("timed");
    let timed_rt = runtime::build(&clang, dir).expect("runtime");
    llvm::link_instrumented(&clang, &timed_bc, &[timed_rt], &flags, &timed, true).expect("link");

    let counted_bc = dir.join("counted.bc");
    llvm::instrument_counting(&compiled.ssa, p, positions, &probes, &[], &counted_bc)
        .expect("instrument");
    let counted = dir.join("counted");
    let counted_rt = runtime::build_counting(&clang, dir).expect("runtime");
    llvm::link_instrumented(&clang, &counted_bc, &[counted_rt], &flags, &counted, true)
        .expect("link");

    // The program with no instrumentation, for scale.
    let native = dir.join("native");
    llvm::link_instrumented(&clang, &compiled.ssa, &[], &[], &native, true).expect("link");

    let out = dir.join("regions.tsv");
    let mut timed_total = 0.0;
    let mut counted_total = 0.0;
    let mut native_total = 0.0;
    println!("configuration\tnative s\ttimed s\tcounted s\tcounted / timed");
    for args in CONFIGURATIONS {
        let mut best = [f64::INFINITY; 3];
        for _ in 0..rounds {
            for (k, binary) in [&timed, &counted, &native].into_iter().enumerate() {
                let started = Instant::now();
                let status = Command::new(binary)
                    .args(args)
                    .env(runtime::ENV_VAR, &out)
                    .status()
                    .expect("the program runs");
                assert!(status.success());
                best[k] = best[k].min(started.elapsed().as_secs_f64());
            }
        }
        println!(
            "{}\t{:.4}\t{:.4}\t{:.4}\t{:.2}",
            args.join(" "),
            best[2],
            best[0],
            best[1],
            best[1] / best[0]
        );
        timed_total += best[0];
        counted_total += best[1];
        native_total += best[2];
    }
    println!(
        "all\t{native_total:.4}\t{timed_total:.4}\t{counted_total:.4}\t{:.2}",
        counted_total / timed_total
    );
}
