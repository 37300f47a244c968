//! Benchmark: the LLVM frontend and the static taint analysis on SQLite's amalgamation
//! (~250 KLOC of C, the copy bundled in the libsqlite3-sys crate, or a path given as the
//! first argument).
//!
//! `cargo run --release -p frontend --example bench_sqlite [path/to/sqlite3.c]`
//!
//! Prints compile (clang + mem2reg is in translation), translation, IR size, dominance,
//! analysis, region and instrumentation times, and the peak resident memory of this process (clang runs as a
//! child and is not counted).

use std::path::{Path, PathBuf};
use std::time::Instant;

use analysis::{
    FieldRef, OptionSource, ProgramDominance, ResolvedSources, SourceKind, analyse,
    identify_regions,
};
use frontend::{CompileOptions, RegionProbe, compile_c, instrument, translate_bitcode};
use space::OptionId;

fn find_amalgamation() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let registry = Path::new(&home).join(".cargo/registry/src");
    for index in std::fs::read_dir(registry).ok()?.flatten() {
        for krate in std::fs::read_dir(index.path()).ok()?.flatten() {
            let name = krate.file_name();
            if name.to_string_lossy().starts_with("libsqlite3-sys-") {
                let c = krate.path().join("sqlite3/sqlite3.c");
                if c.is_file() {
                    return Some(c);
                }
            }
        }
    }
    None
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let source = match std::env::args_os().nth(1) {
        Some(p) => PathBuf::from(p),
        None => find_amalgamation().ok_or("no sqlite3.c found; pass its path")?,
    };
    let lines = std::fs::read_to_string(&source)?.lines().count();
    println!("source: {} ({lines} lines)", source.display());
    let work = std::env::temp_dir().join(format!("knobs-bench-sqlite-{}", std::process::id()));

    let t = Instant::now();
    let options = CompileOptions {
        defines: vec![("SQLITE_THREADSAFE".into(), Some("1".into()))],
        ..CompileOptions::default()
    };
    let linked = compile_c(std::slice::from_ref(&source), &options, &work)?;
    println!(
        "compile (clang-19 -O0 -g -emit-llvm): {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let ssa = work.join("sqlite3.ssa.bc");
    let translation = translate_bitcode(&linked, Some(&ssa))?;
    let p = &translation.program;
    println!(
        "load + mem2reg + translate: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let defined = p.functions.iter().filter(|f| !f.is_declaration).count();
    println!(
        "ir: {} functions ({defined} defined), {} blocks, {} instructions, {} values, {} globals, {} structs, {} files",
        p.functions.len(),
        p.blocks.len(),
        p.insts.len(),
        p.values.len(),
        p.globals.len(),
        p.structs.len(),
        p.files.len()
    );
    println!("peak RSS after translation: {:.0} MiB", peak_rss_mib());

    // A few options as the system spec would name them: globals and struct fields.
    let field = |k: u32, field: &str| OptionSource {
        option: OptionId(k),
        kind: SourceKind::StructField {
            structure: "Sqlite3Config".into(),
            field: FieldRef::Name(field.into()),
        },
    };
    let sources = vec![
        OptionSource {
            option: OptionId(0),
            kind: SourceKind::Global {
                name: "sqlite3_temp_directory".into(),
            },
        },
        OptionSource {
            option: OptionId(1),
            kind: SourceKind::Global {
                name: "sqlite3PendingByte".into(),
            },
        },
        field(2, "bMemstat"),
        field(3, "bCoreMutex"),
        field(4, "szLookaside"),
        field(5, "mxStrlen"),
    ];
    let resolved = ResolvedSources::resolve(p, &sources)?;

    let t = Instant::now();
    let dominance = ProgramDominance::new(p);
    println!("dominance: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let si = analyse(p, &dominance, &resolved);
    println!(
        "taint analysis: {:.2} s ({} points-to classes, {} function visits, {} tainted decisions, {} interactions, relevant options {:?})",
        t.elapsed().as_secs_f64(),
        si.classes,
        si.function_visits,
        si.decisions.len(),
        si.interactions().len(),
        si.relevant_options()
            .iter()
            .map(|o| o.0)
            .collect::<Vec<_>>()
    );
    let tainted = si.influence.iter().filter(|s| s.0 != 0).count();
    println!("instructions with non-empty influence: {tainted}");
    let t = Instant::now();
    let plan = identify_regions(p, &dominance, &si.influence, &[]);
    println!(
        "regions: {} in {:.2} s",
        plan.regions.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let probes: Vec<RegionProbe> = plan
        .regions
        .iter()
        .enumerate()
        .map(|(k, r)| RegionProbe {
            id: k as u32,
            start: r.start.clone(),
            end: r.end.clone(),
        })
        .collect();
    let stats = instrument(
        &ssa,
        p,
        &translation.positions,
        &probes,
        &work.join("sqlite3.inst.bc"),
    )?;
    println!(
        "instrument (reload, insert, verify, write): {:.2} s ({} enter, {} exit calls, {} split edges)",
        t.elapsed().as_secs_f64(),
        stats.enter_calls,
        stats.exit_calls,
        stats.split_edges
    );
    println!("peak RSS: {:.0} MiB", peak_rss_mib());
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}
