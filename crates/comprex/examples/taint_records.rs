//! Instruments one program for dynamic taint, runs it, and prints its decision records sorted,
//! one per line (for comparing the records of two builds of the instrumenter), and with
//! `KNOBS_TAINT_TIME=1` the wall times of the instrumented and the native build, and of
//! instrumenting and linking (stderr).
//!
//! `cargo run --release -p comprex --example taint_records -- PROGRAM OPTIONS [ARGS...]`
//!
//! - `PROGRAM`: a C file, or LLVM bitcode (`.bc`: one linked module, as a spec's `bitcode`).
//! - `OPTIONS`: comma-separated; `NAME` is a global annotated `knobs:option=NAME`, and
//!   `NAME=SOURCE+SOURCE…` lists its sources, each `global:VAR` or `field:STRUCT.FIELD`.
//! - `ARGS`: the program's arguments (its standard output is discarded).
//!
//! With `KNOBS_TAINT_KEEP=1`, keeps the temporary directory (bitcode, binaries, records); with
//! `KNOBS_TAINT_LINK="-lm …"`, passes extra flags to the link. The native build is the same
//! SSA bitcode linked with `-O2` (as `knobs` builds it), timed as the median of 3 runs like
//! the instrumented one.

use std::path::{Path, PathBuf};
use std::time::Instant;

use analysis::{FieldRef, OptionSource, ResolvedSources, SourceKind};
use llvm::{CompileOptions, compile_c, instrument_taint, link_instrumented, translate_bitcode};
use space::ConfigSpace;

/// Median wall time of 3 runs of `binary` with `args`, its records written to `out` if given.
fn median_run(binary: &Path, args: &[String], out: Option<&Path>) -> Result<f64, std::io::Error> {
    let mut times = Vec::new();
    for _ in 0..3 {
        let mut cmd = std::process::Command::new(binary);
        cmd.args(args).stdout(std::process::Stdio::null());
        if let Some(out) = out {
            cmd.env(runtime::taint_library::ENV_VAR, out);
        }
        let start = Instant::now();
        cmd.status()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[1])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, options, run_args @ ..] = args.as_slice() else {
        return Err("usage: taint_records PROGRAM OPTIONS [ARGS...]".into());
    };
    let keep = std::env::var_os("KNOBS_TAINT_KEEP").is_some();
    let dir = tempfile::tempdir()?;
    if keep {
        eprintln!("keeping {}", dir.path().display());
    }
    let clang = PathBuf::from("clang-19");
    let linked = if file.ends_with(".bc") {
        PathBuf::from(file)
    } else {
        compile_c(
            &[PathBuf::from(file)],
            &CompileOptions::default(),
            &dir.path().join("bc"),
        )?
    };
    let ssa = dir.path().join("prog.ssa.bc");
    let t = translate_bitcode(&linked, Some(&ssa))?;
    let mut space = ConfigSpace::new("records");
    let mut listed = Vec::new();
    for o in options.split(',').filter(|o| !o.is_empty()) {
        let (name, sources) = o.split_once('=').unwrap_or((o, ""));
        let id = space.add_binary(name, None, false)?;
        for s in sources.split('+').filter(|s| !s.is_empty()) {
            let kind = if let Some(var) = s.strip_prefix("global:") {
                SourceKind::Global { name: var.into() }
            } else if let Some((st, f)) = s.strip_prefix("field:").and_then(|f| f.split_once('.')) {
                SourceKind::StructField {
                    structure: st.into(),
                    field: FieldRef::Name(f.into()),
                }
            } else {
                return Err(format!("bad source `{s}`: global:VAR or field:STRUCT.FIELD").into());
            };
            listed.push(OptionSource { option: id, kind });
        }
    }
    let mut sources = ResolvedSources::from_annotations(&t.program, &space)?;
    sources.extend(ResolvedSources::resolve(&t.program, &listed)?);
    let names: Vec<String> = space.options().iter().map(|o| o.name.clone()).collect();
    let inst = dir.path().join("prog.taint.bc");
    let start = Instant::now();
    instrument_taint(
        &ssa,
        &t.program,
        &t.positions,
        &sources.by_index(),
        &names,
        &inst,
    )?;
    let instrument_s = start.elapsed().as_secs_f64();
    let lib = runtime::taint_library::build(&clang, dir.path())?;
    let flags: Vec<String> = std::env::var("KNOBS_TAINT_LINK")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    let tainted = dir.path().join("prog.taint");
    let start = Instant::now();
    let linked = link_instrumented(&clang, &inst, &[lib], &flags, &tainted, false);
    let link_s = start.elapsed().as_secs_f64();
    if let Err(e) = linked {
        if keep {
            let _ = dir.keep();
        }
        return Err(e.into());
    }
    let out = dir.path().join("run.json");
    if std::env::var_os("KNOBS_TAINT_TIME").is_some() {
        let native = dir.path().join("prog.native");
        link_instrumented(&clang, &ssa, &[], &flags, &native, true)?;
        let native_s = median_run(&native, run_args, None)?;
        let tainted_s = median_run(&tainted, run_args, Some(&out))?;
        eprintln!("instrumenting {instrument_s:.1} s, compiling and linking {link_s:.1} s");
        eprintln!(
            "native {native_s:.3} s, with dynamic taint {tainted_s:.3} s, slowdown {:.1}x",
            tainted_s / native_s
        );
    } else {
        std::process::Command::new(&tainted)
            .args(run_args)
            .stdout(std::process::Stdio::null())
            .env(runtime::taint_library::ENV_VAR, &out)
            .status()?;
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
    if keep {
        let _ = dir.keep();
    }
    Ok(())
}
