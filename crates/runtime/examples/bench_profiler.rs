//! The sampling profiler's cost.
//!
//! `cargo run --release -p runtime --example bench_profiler [PAIRS] [FIB]`
//!
//! (1) ns per method enter/exit pair: a C loop calls `__knobs_method_enter(i % 8)` /
//! `__knobs_method_exit(i % 8)` PAIRS times (default 20 million) inside an open region,
//! linked with the profiler (wall clock, 1 ms; CPU clock, 1 ms; disabled) and with empty stub
//! functions, and the loop without calls. (2) Slowdown of a call-heavy program: a recursive
//! Fibonacci (FIB, default 32: ~7 million calls) whose every call is a region, profiled at
//! 1 ms (wall and CPU) against the same program compiled without probes and with probes that
//! call empty stub functions (clang optimises the probe-free recursion much harder). Every binary times
//! its own work (CLOCK_MONOTONIC); best of five runs.

use std::path::Path;
use std::process::Command;

use runtime::profiler;

const LOOP: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef NO_CALLS
#define ENTER(id) __asm__ volatile("" ::"r"(id) : "memory")
#define EXIT(id) __asm__ volatile("" ::"r"(id) : "memory")
#else
void __knobs_method_enter(uint32_t id);
void __knobs_method_exit(uint32_t id);
#define ENTER __knobs_method_enter
#define EXIT __knobs_method_exit
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

const FIB: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef PROBES
void __knobs_method_enter(uint32_t id);
void __knobs_method_exit(uint32_t id);
#define ENTER __knobs_method_enter
#define EXIT __knobs_method_exit
#else
#define ENTER(id) (void)0
#define EXIT(id) (void)0
#endif
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
__attribute__((noinline)) static long fib(long n) {
    ENTER((uint32_t)(n & 3));
    long r = n < 2 ? n : fib(n - 1) + fib(n - 2);
    EXIT((uint32_t)(n & 3));
    return r;
}
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    double t0 = now();
    volatile long r = fib(n);
    (void)r;
    printf("%.6f\n", now() - t0);
    return 0;
}
"#;

const STUB: &str = r#"
#include <stdint.h>
void __knobs_method_enter(uint32_t id) { (void)id; }
void __knobs_method_exit(uint32_t id) { (void)id; }
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

/// Best of five runs of what the program prints; `clock`: profile with it into `file`.
fn best(exe: &Path, arg: u64, clock: Option<&str>, file: &Path) -> f64 {
    (0..5)
        .map(|_| {
            let mut cmd = Command::new(exe);
            cmd.arg(arg.to_string())
                .env_remove(profiler::ENV_VAR)
                .env_remove(profiler::PERIOD_VAR)
                .env_remove(profiler::CLOCK_VAR);
            if let Some(c) = clock {
                cmd.env(profiler::ENV_VAR, file).env(profiler::CLOCK_VAR, c);
            }
            let out = cmd.output().expect("the program runs");
            assert!(out.status.success());
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<f64>()
                .unwrap()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let pairs: u64 = args
        .next()
        .map(|a| a.parse().expect("PAIRS is a number"))
        .unwrap_or(20_000_000);
    let fib_n: u64 = args
        .next()
        .map(|a| a.parse().expect("FIB is a number"))
        .unwrap_or(32);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = profiler::build(Path::new("clang-19"), d).unwrap();
    let (src, fib, stub) = (d.join("loop.c"), d.join("fib.c"), d.join("stub.c"));
    std::fs::write(&src, LOOP).unwrap();
    std::fs::write(&fib, FIB).unwrap();
    std::fs::write(&stub, STUB).unwrap();
    let (with, stubbed, bare) = (d.join("with"), d.join("stub"), d.join("bare"));
    clang(&[&src, &lib, &"-o", &with]);
    clang(&[&src, &stub, &"-o", &stubbed]);
    clang(&[&"-DNO_CALLS", &src, &"-o", &bare]);
    let (fib_probed, fib_plain) = (d.join("fib-probed"), d.join("fib-plain"));
    let fib_stub = d.join("fib-stub");
    clang(&[&"-DPROBES", &fib, &lib, &"-o", &fib_probed]);
    clang(&[&"-DPROBES", &fib, &stub, &"-o", &fib_stub]);
    clang(&[&fib, &"-o", &fib_plain]);

    let file = d.join("profile.tsv");
    let wall = best(&with, pairs, Some("wall"), &file);
    let p = profiler::Profile::read(&file).unwrap();
    assert_eq!(p.times.entries(), pairs + 1);
    let cpu = best(&with, pairs, Some("cpu"), &file);
    let disabled = best(&with, pairs, None, &file);
    let calls = best(&stubbed, pairs, None, &file);
    let none = best(&bare, pairs, None, &file);
    println!("{pairs} method enter/exit pairs inside an open region, best of 5 (ns per pair):");
    println!("  profiler, wall clock 1 ms   {wall:8.2}");
    println!("  profiler, cpu clock 1 ms    {cpu:8.2}");
    println!("  profiler, disabled          {disabled:8.2}");
    println!("  empty stub functions        {calls:8.2}");
    println!("  the loop without calls      {none:8.2}");
    println!(
        "overhead per pair (wall): {:.2} ns over the loop without calls, {:.2} ns over bare calls",
        wall - none,
        wall - calls
    );

    let plain = best(&fib_plain, fib_n, None, &file);
    let stubbed = best(&fib_stub, fib_n, None, &file);
    let fw = best(&fib_probed, fib_n, Some("wall"), &file);
    let p = profiler::Profile::read(&file).unwrap();
    let fc = best(&fib_probed, fib_n, Some("cpu"), &file);
    let calls = p.times.entries();
    println!(
        "fib({fib_n}): {calls} calls, each a region; best of 5 (seconds, slowdown vs uninstrumented):"
    );
    println!("  uninstrumented              {plain:8.4}");
    println!(
        "  probes as empty stubs       {stubbed:8.4}  x{:.2}",
        stubbed / plain
    );
    println!("  profiled, wall clock 1 ms   {fw:8.4}  x{:.2}", fw / plain);
    println!("  profiled, cpu clock 1 ms    {fc:8.4}  x{:.2}", fc / plain);
    println!(
        "  ({:.2} ns per call over the uninstrumented call, {:.2} ns over stub probes; \
         x{:.2} over stub probes)",
        (fw - plain) / calls as f64 * 1e9,
        (fw - stubbed) / calls as f64 * 1e9,
        fw / stubbed
    );
}
