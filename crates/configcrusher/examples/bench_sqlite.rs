//! Benchmark: the LLVM translation and the static taint analysis on SQLite's amalgamation
//! (~250 KLOC of C, the copy bundled in the libsqlite3-sys crate, or a path given as the
//! first argument).
//!
//! `cargo run --release -p configcrusher --example bench_sqlite [path/to/sqlite3.c] [--explain N]`
//!
//! With `--explain N`, also prints for N sampled influenced instructions why each option
//! reaches them (a shortest chain of taint facts back to the option's source, see
//! `analysis::explain`) and which memory cells, call sites and functions occur most on
//! those chains: where the analysis loses precision.
//!
//! Prints compile (clang + mem2reg is in translation), translation, IR size, dominance,
//! analysis, region and instrumentation times, and the peak resident memory of this process (clang runs as a
//! child and is not counted).

use std::path::{Path, PathBuf};
use std::time::Instant;

use analysis::{FieldRef, OptionSource, ResolvedSources, SourceKind, analyse};
use configcrusher::identify_regions;
use ir::ProgramDominance;
use llvm::{CompileOptions, RegionProbe, compile_c, instrument, translate_bitcode};
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
    measure::runner::peak_memory_mib().unwrap_or(0.0)
}

/// Why options reach a sample of influenced instructions, and the facts most chains pass.
fn explain(
    p: &ir::Program,
    dominance: &ProgramDominance,
    si: &analysis::StatementInfluence,
    samples: usize,
) {
    use analysis::explain::{Explainer, Fact};
    use std::collections::HashMap;
    let explainer = Explainer::new(p, dominance, si);
    let tainted: Vec<usize> = (0..p.insts.len())
        .filter(|&i| si.influence.as_slice()[i].0 != 0)
        .collect();
    let step = (tainted.len() / samples.max(1)).max(1);
    let mut hops: HashMap<(&'static str, Fact), usize> = HashMap::new();
    let mut first_hops: HashMap<&'static str, usize> = HashMap::new();
    let mut chains = 0;
    for &i in tainted.iter().step_by(step).take(samples) {
        let i = ir::InstId::new(i);
        // Why the instruction has local influence at all (its context only counts then).
        let block = p.inst(i).block;
        let local = if p.inst(i).kind.decision().is_some() {
            Fact::Decision(block)
        } else {
            Fact::Control(block)
        };
        for o in si.of(i).iter() {
            let Some(chain) = explainer.explain(local, o) else {
                continue;
            };
            chains += 1;
            *first_hops.entry(chain[0].how).or_default() += 1;
            let verbose = chains <= 12;
            if verbose {
                println!(
                    "why option {} influences {}:",
                    o.0,
                    explainer.describe(chain[0].fact)
                );
            }
            for link in &chain[1..] {
                if verbose {
                    println!("    <- {:<24} {}", link.how, explainer.describe(link.fact));
                }
                if matches!(
                    link.fact,
                    Fact::Context(_) | Fact::Memory(_) | Fact::Return(_)
                ) || matches!(link.fact, Fact::Value(v) if matches!(p.value(v), ir::ValueDef::Param { .. }))
                {
                    *hops.entry((link.how, link.fact)).or_default() += 1;
                }
            }
        }
    }
    println!("{chains} chains; first link: {first_hops:?}");
    let mut top: Vec<_> = hops.into_iter().collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    println!("facts on most chains:");
    for ((how, fact), n) in top.into_iter().take(25) {
        println!("  {n:>5}  {how:<24} {}", explainer.describe(fact));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut path = None;
    let mut explain_samples = 0usize;
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        if a == "--explain" {
            explain_samples = args
                .next()
                .and_then(|n| n.to_str()?.parse().ok())
                .ok_or("--explain takes a number of instructions")?;
        } else {
            path = Some(PathBuf::from(a));
        }
    }
    let source = match path {
        Some(p) => p,
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
        "compile (clang-19 -O2 -disable-llvm-passes -g -emit-llvm): {:.2} s",
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
        "taint analysis: {:.2} s ({} memory cells, {} function visits, {} tainted decisions, {} interactions, relevant options {:?})",
        t.elapsed().as_secs_f64(),
        si.cells,
        si.function_visits,
        si.decisions.len(),
        si.interactions().len(),
        si.relevant_options()
            .iter()
            .map(|o| o.0)
            .collect::<Vec<_>>()
    );
    let tainted = si.influence.iter().filter(|s| s.0 != 0).count();
    println!(
        "instructions with non-empty influence: {tainted} of {} ({:.1} %)",
        p.insts.len(),
        100.0 * tainted as f64 / p.insts.len() as f64
    );
    if explain_samples > 0 {
        explain(p, &dominance, &si, explain_samples);
    }
    let t = Instant::now();
    let plan = identify_regions(p, &dominance, si.influence.as_slice(), &[]);
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
