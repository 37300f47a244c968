//! Slowdown of dynamic taint: a small compute-bound C program (option-dependent loops, array
//! work, calls, a heap buffer) built natively and with `llvm::instrument_taint`, both with
//! `clang-19 -O2` from the same SSA bitcode, each run 5 times (median wall time).
//!
//! `cargo run --release -p comprex --example bench_dynamic_taint`

use std::path::PathBuf;
use std::time::Instant;

use analysis::ResolvedSources;
use llvm::{CompileOptions, compile_c, instrument_taint, link_instrumented, translate_bitcode};
use space::ConfigSpace;

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=LEVEL"))) int LEVEL;
__attribute__((annotate("knobs:option=FAST"))) int FAST;
__attribute__((annotate("knobs:option=CHECK"))) int CHECK;
static unsigned mix(unsigned h, unsigned v) { return (h ^ v) * 16777619u; }
static unsigned pass(unsigned *buf, int n, int level) {
  unsigned h = 2166136261u;
  for (int i = 0; i < n; i++) {
    unsigned v = buf[i];
    if (level > 2 && (v & 1))
      v = v * 3 + 1;
    else
      v = v >> 1;
    buf[i] = v;
    h = mix(h, v);
  }
  return h;
}
int main(int argc, char **argv) {
  LEVEL = argc > 1 ? atoi(argv[1]) : 3;
  FAST = argc > 2 ? atoi(argv[2]) : 0;
  CHECK = argc > 3 ? atoi(argv[3]) : 1;
  int n = 1 << 16;
  unsigned *buf = malloc(n * sizeof *buf);
  for (int i = 0; i < n; i++)
    buf[i] = (unsigned)i * 2654435761u;
  unsigned h = 0;
  int rounds = FAST ? 100 : 300;
  for (int r = 0; r < rounds; r++) {
    h ^= pass(buf, n, LEVEL);
    if (CHECK && (h & 0xff) == 0)
      memset(buf, 0, 16);
  }
  free(buf);
  return (int)(h & 1);
}
"#;

fn median_run(binary: &PathBuf, env: Option<(&str, PathBuf)>) -> f64 {
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let mut cmd = std::process::Command::new(binary);
            cmd.args(["3", "0", "1"]);
            if let Some((k, v)) = &env {
                cmd.env(k, v);
            }
            let t = Instant::now();
            cmd.status().expect("runs");
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("bench.c");
    std::fs::write(&src, PROGRAM)?;
    let clang = PathBuf::from("clang-19");
    let linked = compile_c(&[src], &CompileOptions::default(), &dir.path().join("bc"))?;
    let ssa = dir.path().join("bench.ssa.bc");
    let t = translate_bitcode(&linked, Some(&ssa))?;
    let mut space = ConfigSpace::new("bench");
    for o in ["LEVEL", "FAST", "CHECK"] {
        space.add_binary(o, None, false)?;
    }
    let sources = ResolvedSources::from_annotations(&t.program, &space)?;
    let names: Vec<String> = space.options().iter().map(|o| o.name.clone()).collect();
    let inst = dir.path().join("bench.taint.bc");
    let start = Instant::now();
    let stats = instrument_taint(
        &ssa,
        &t.program,
        &t.positions,
        &sources.by_index(),
        &names,
        &inst,
    )?;
    let instrument_s = start.elapsed().as_secs_f64();
    let lib = runtime::taint_library::build(&clang, dir.path())?;
    let native = dir.path().join("bench.native");
    let tainted = dir.path().join("bench.taint");
    link_instrumented(&clang, &ssa, &[], &[], &native, true)?;
    link_instrumented(&clang, &inst, &[lib], &[], &tainted, false)?;
    let native_s = median_run(&native, None);
    let out = dir.path().join("run.json");
    let tainted_s = median_run(
        &tainted,
        Some((runtime::taint_library::ENV_VAR, out.clone())),
    );
    let records = std::fs::read_to_string(&out)?;
    if let Some(keep) = std::env::var_os("KNOBS_BENCH_KEEP") {
        // A directory: the binaries and the bitcode, for perf and llvm-dis.
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep)?;
        for f in [&native, &tainted, &ssa, &inst, &out] {
            std::fs::copy(f, keep.join(f.file_name().expect("a file")))?;
        }
    }
    println!(
        "instrumented {} functions, {} decisions, {} source sites in {:.3} s",
        stats.functions, stats.decisions, stats.source_sites, instrument_s
    );
    println!(
        "native: {native_s:.3} s; with dynamic taint: {tainted_s:.3} s; slowdown {:.1}x",
        tainted_s / native_s
    );
    println!(
        "records: {} decisions",
        records.matches("\"decision\"").count()
    );
    Ok(())
}
