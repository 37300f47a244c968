//! Instruments one C file for dynamic taint, runs it, and prints its decision records sorted,
//! one per line (for comparing the records of two builds of the instrumenter).
//!
//! `cargo run --release -p frontend --example taint_records -- FILE.c A,B,C [ARGS...]`
//!
//! The options are the file's `knobs:option=NAME` annotated globals, named in the second
//! argument; the remaining arguments are passed to the program. With `KNOBS_TAINT_TIME=1`, also
//! prints the wall time of the native and the instrumented run (stderr); with
//! `KNOBS_TAINT_KEEP=1`, keeps the temporary directory (bitcode, binaries).

use std::path::PathBuf;
use std::time::Instant;

use analysis::ResolvedSources;
use frontend::{CompileOptions, compile_c, instrument_taint, link_instrumented, translate_bitcode};
use space::ConfigSpace;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, options, run_args @ ..] = args.as_slice() else {
        return Err("usage: taint_records FILE.c A,B,C [ARGS...]".into());
    };
    let dir = tempfile::tempdir()?;
    if std::env::var_os("KNOBS_TAINT_KEEP").is_some() {
        eprintln!("keeping {}", dir.path().display());
    }
    let clang = PathBuf::from("clang-19");
    let linked = compile_c(
        &[PathBuf::from(file)],
        &CompileOptions::default(),
        &dir.path().join("bc"),
    )?;
    let ssa = dir.path().join("prog.ssa.bc");
    let t = translate_bitcode(&linked, Some(&ssa))?;
    let mut space = ConfigSpace::new("records");
    for o in options.split(',').filter(|o| !o.is_empty()) {
        space.add_binary(o, None, false)?;
    }
    let sources = ResolvedSources::from_annotations(&t.program, &space)?;
    let names: Vec<String> = space.options().iter().map(|o| o.name.clone()).collect();
    let inst = dir.path().join("prog.taint.bc");
    instrument_taint(&ssa, &t.program, &t.positions, &sources, &names, &inst)?;
    let lib = runtime::taint::build(&clang, dir.path())?;
    let tainted = dir.path().join("prog.taint");
    if let Err(e) = link_instrumented(&clang, &inst, &[lib], &[], &tainted) {
        if std::env::var_os("KNOBS_TAINT_KEEP").is_some() {
            let _ = dir.keep();
        }
        return Err(e.into());
    }
    let out = dir.path().join("run.json");
    let start = Instant::now();
    std::process::Command::new(&tainted)
        .args(run_args)
        .env(runtime::taint::ENV_VAR, &out)
        .status()?;
    let tainted_s = start.elapsed().as_secs_f64();
    if std::env::var_os("KNOBS_TAINT_TIME").is_some() {
        let native = dir.path().join("prog.native");
        link_instrumented(&clang, &ssa, &[], &[], &native)?;
        let start = Instant::now();
        std::process::Command::new(&native)
            .args(run_args)
            .status()?;
        let native_s = start.elapsed().as_secs_f64();
        eprintln!(
            "native {native_s:.3} s, tainted {tainted_s:.3} s, slowdown {:.1}x",
            tainted_s / native_s
        );
    }
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out)?)?;
    let mut lines: Vec<String> = run["decisions"]
        .as_array()
        .ok_or("no decisions array")?
        .iter()
        .map(|d| {
            let s = &d["decision"];
            format!(
                "{} {}:{} {} data={} ctrl={}",
                s["id"], s["line"], s["column"], s["method"], d["data_flow"], d["control_flow"]
            )
        })
        .collect();
    lines.sort();
    for l in lines {
        println!("{l}");
    }
    if std::env::var_os("KNOBS_TAINT_KEEP").is_some() {
        let _ = dir.keep();
    }
    Ok(())
}
