//! `knobs crush`: ConfigCrusher end to end — analyse the program's sources, compress the
//! configurations, instrument regions, measure, and write the global and per-region models.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ir::{FuncId, InstId};
use measure::{Store, SystemSpec};
use space::ValidConfigurations;

use crate::Outcome;
use crate::measure_cmd::{beside, print_report, with_progress};

#[derive(Args)]
pub struct CrushArgs {
    /// The system spec; it needs a [build] section (C sources or bitcode).
    #[arg(long, default_value = "knobs.toml")]
    spec: PathBuf,
    /// The workload to run (default: the spec's first workload for measurement).
    #[arg(long)]
    workload: Option<String>,
    /// The results store (default: knobs.db beside the spec).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Where to write the model JSON (default: NAME.configcrusher.json beside the spec).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Where bitcode and the instrumented program go (default: .knobs/configcrusher beside
    /// the spec).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Place regions without the propagation optimisations (Algorithms 3 and 4).
    #[arg(long)]
    no_optimise: bool,
    /// Run configurations whose earlier runs failed again.
    #[arg(long)]
    retry_failed: bool,
    /// Only analyse, then explain why these options (comma-separated, e.g. `sha256,blocks`)
    /// influence the same decisions: the call sites where they enter functions' calling
    /// contexts together (every decision under such a call carries them all), and for a few
    /// decisions they all reach, the chain of facts (loads, stores, memory cells, call sites)
    /// that brings each option there.
    #[arg(long, value_name = "OPTIONS")]
    explain: Option<String>,
}

pub fn crush(args: CrushArgs) -> Result<Outcome> {
    let spec = SystemSpec::load(&args.spec)?;
    spec.check_cwd()?;
    let workload = spec.workload(args.workload.as_deref())?;
    spec.prepare_workload(workload)?;
    let mut settings = instrumented::Settings::new(
        args.work_dir
            .clone()
            .unwrap_or_else(|| beside(&args.spec, ".knobs/configcrusher")),
    );
    settings.optimise = !args.no_optimise;
    settings.retry_failed = args.retry_failed;

    let analysed = configcrusher::analyse(&spec, &settings)?;
    let program = &analysed.translation.program;
    eprintln!(
        "built {}: {} functions, {} instructions in {:.1} s",
        spec.name,
        program.functions.len(),
        program.insts.len(),
        analysed.build_seconds
    );
    if let Some(s) = &analysed.specialised {
        eprintln!(
            "fixed settings: {} reads folded, {} branches decided; unreachable in every run: \
             {} functions and {} blocks of the others",
            s.folded_loads.len(),
            s.decided,
            s.dead_functions,
            s.dead_blocks
        );
        // A setting no read was folded for changes nothing: say so rather than stay silent.
        let unread: Vec<&str> = spec
            .build
            .iter()
            .flat_map(|b| b.fixed.keys())
            .filter(|name| {
                !s.folded_loads
                    .iter()
                    .any(|f| program.globals[f.global.index()].name == **name)
            })
            .map(String::as_str)
            .collect();
        if !unread.is_empty() {
            eprintln!(
                "note: [build.fixed]: no read of {} was folded (read through pointers, or not \
                 an integer), so they change nothing",
                unread.join(", ")
            );
        }
    }
    let interactions = analysed.interactions(&spec);
    // Peak memory is the process's high-water mark so far: loading and translating the
    // bitcode as well as the analysis (the paper reports the analysis' cost as one figure).
    eprintln!(
        "analysed in {:.2} s{}: {} tainted decisions; irrelevant options: {}; interactions: {}",
        analysed.analysis_seconds,
        peak_memory_mib().map_or(String::new(), |m| format!(" (peak memory {m:.0} MiB)")),
        analysed.influence.decisions.len(),
        if analysed.irrelevant.is_empty() {
            "none".to_string()
        } else {
            analysed.irrelevant.join(", ")
        },
        if interactions.is_empty() {
            "none".to_string()
        } else {
            interactions
                .iter()
                .map(|i| format!("{{{}}}", i.join(",")))
                .collect::<Vec<_>>()
                .join(" ")
        }
    );
    let pts = &analysed.influence.facts.points_to;
    if pts.merged {
        // Say so: the analysis is much coarser then.
        eprintln!(
            "points-to: {} memory cells; the program exceeded the per-object budget, so its \
             stack and heap objects were analysed as one (fields still per struct type)",
            pts.cells.len()
        );
    }
    let total = ValidConfigurations::new(&spec.space)?.count();
    eprintln!(
        "regions: {} ({} before propagation); configurations to measure: {} of {} (lower bound {})",
        analysed.plan.regions.len(),
        analysed.regions_unoptimised,
        analysed.compression.configurations.len(),
        total,
        analysed.compression.lower_bound
    );
    // No compression: say why it happens and where to look.
    if u64::try_from(&total).is_ok_and(|t| analysed.compression.configurations.len() as u64 >= t)
        && args.explain.is_none()
        && let Some(widest) = interactions.iter().max_by_key(|i| i.len())
        && widest.len() >= 2
    {
        eprintln!(
            "note: the analysis found {} options in one interaction, so ConfigCrusher measures \
             every configuration, like brute force; `--explain {},{}` shows where two of them meet",
            widest.len(),
            widest[0],
            widest[widest.len() - 1]
        );
    }

    if let Some(names) = &args.explain {
        explain(&spec, &analysed, names)?;
        return Ok(Outcome::Done);
    }

    let instrumented = configcrusher::instrument(&spec, &analysed, &settings)?;
    eprintln!(
        "instrumented: {} region entry and {} exit calls ({} split edges){} → {}",
        instrumented.stats.enter_calls,
        instrumented.stats.exit_calls,
        instrumented.stats.split_edges,
        match instrumented.stats.value_checks {
            0 => String::new(),
            n => format!(", {n} checks of fixed settings"),
        },
        instrumented.binary.display()
    );

    let store_path = args
        .store
        .clone()
        .unwrap_or_else(|| beside(&args.spec, "knobs.db"));
    let store = Store::open(&store_path)?;
    measure::runner::kill_runs_on_interrupt();
    let report = with_progress(|on_event| {
        Ok(configcrusher::measure_configurations(
            &store,
            &settings,
            &spec,
            workload,
            &instrumented,
            &analysed.compression.configurations,
            on_event,
        )?)
    })?;
    print_report(&report, spec.measure.max_cv);

    let model =
        configcrusher::build_model(&store, &spec, workload, &analysed, &instrumented.variant)?;
    report_overhead(&store, &spec, workload, &instrumented.variant)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| beside(&args.spec, &format!("{}.configcrusher.json", spec.name)));
    model.save(&out)?;
    crate::model_cmd::print_model(&model, 10);
    eprintln!(
        "model written to {} (measurements in {}, variant {})",
        out.display(),
        store_path.display(),
        instrumented.variant
    );
    Ok(Outcome::Done)
}

/// This process's peak resident memory so far, in MiB (`getrusage`; Linux reports KiB).
fn peak_memory_mib() -> Option<f64> {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0;
    (ok && usage.ru_maxrss > 0).then(|| usage.ru_maxrss as f64 / 1024.0)
}

/// How many decisions `--explain` shows chains for.
const EXPLAINED_DECISIONS: usize = 3;

/// Prints why the named options reach the same tainted decisions (`--explain`).
fn explain(spec: &SystemSpec, analysed: &configcrusher::Analysed, names: &str) -> Result<()> {
    use analysis::explain::{Explainer, Fact};
    let mut options = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(o) = spec
            .space
            .ids()
            .find(|&o| spec.space.option(o).name == name)
        else {
            anyhow::bail!("--explain: the space has no option `{name}`");
        };
        options.push(o);
    }
    if options.is_empty() {
        anyhow::bail!("--explain needs option names, e.g. --explain sha256,blocks");
    }
    let program = analysed.program();
    let si = &analysed.influence;
    let shared: Vec<&analysis::TaintedDecision> = si
        .decisions
        .iter()
        .filter(|d| {
            let set = si.of(d.inst);
            options.iter().all(|o| set.contains(*o))
        })
        .collect();
    println!(
        "{} of {} tainted decisions are influenced by all of {{{names}}}",
        shared.len(),
        si.decisions.len()
    );
    let dominance = analysis::ProgramDominance::new(program);
    let explainer = Explainer::new(program, &dominance, si);
    let print_chain = |fact: Fact, o: space::OptionId| {
        println!("  why {}:", spec.space.option(o).name);
        match explainer.explain(fact, o) {
            Some(chain) => {
                // A link says how its fact got the option from the next one, and through
                // which instruction.
                for pair in chain.windows(2) {
                    let via = pair[0].via.map_or(String::new(), |i| {
                        format!(" at {}", program.describe_loc(program.inst(i).loc))
                    });
                    println!(
                        "    <- {}{via}: {}",
                        pair[0].how,
                        explainer.describe(pair[1].fact)
                    );
                }
            }
            // The decision's own block is not where the option arrives: its context is.
            None => println!("    (through the function's context: its callers' decisions)"),
        }
    };
    // A decision's influence includes its function's calling context, so options that meet
    // in the context of a function that calls much of the program meet in all of its
    // decisions. Show where they enter contexts together.
    let holds_all = |s: analysis::SetId| {
        let set = si.sets.get(s);
        options.iter().all(|o| set.contains(*o))
    };
    let mut entries: Vec<(usize, InstId, FuncId)> = Vec::new();
    let shared_in: Vec<usize> = {
        let mut count = vec![0; program.functions.len()];
        for d in &shared {
            count[program.func_of(d.inst).index()] += 1;
        }
        count
    };
    for (k, f) in program.functions.iter().enumerate() {
        if f.is_declaration || !holds_all(si.context[k]) {
            continue;
        }
        // A call whose own site brings them all: its block's control holds them, or it
        // holds those its caller's context lacks (through recursion the caller's context may
        // hold them too, from this very site).
        let Some(&call) = si.call_graph.callers[k].iter().find(|&&c| {
            let caller = si.sets.get(si.context[program.func_of(c).index()]);
            let control = si
                .sets
                .get(si.facts.block_taint[program.inst(c).block.index()]);
            holds_all(si.facts.block_taint[program.inst(c).block.index()])
                || (!holds_all(si.context[program.func_of(c).index()])
                    && options
                        .iter()
                        .all(|o| caller.contains(*o) || control.contains(*o)))
        }) else {
            continue;
        };
        // The shared decisions in the functions this one reaches through calls.
        let mut seen = vec![false; program.functions.len()];
        let mut stack = vec![FuncId(k as u32)];
        let mut reached = 0;
        while let Some(g) = stack.pop() {
            if std::mem::replace(&mut seen[g.index()], true) {
                continue;
            }
            reached += shared_in[g.index()];
            for &b in &program.func(g).blocks {
                for &i in &program.block(b).insts {
                    stack.extend(si.call_graph.targets_of(i).iter().copied());
                }
            }
        }
        entries.push((reached, call, FuncId(k as u32)));
    }
    entries.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
    if let Some(&(reached, call, f)) = entries.first() {
        println!(
            "\nall of {{{names}}} are in the calling context of {} functions; they enter it \
             together at call sites like these (the callee, and the shared decisions it reaches):",
            program
                .functions
                .iter()
                .enumerate()
                .filter(|(k, g)| !g.is_declaration && holds_all(si.context[*k]))
                .count()
        );
        for &(reached, call, f) in entries.iter().take(EXPLAINED_DECISIONS) {
            println!(
                "  {} called at {} in {}: {reached} of the {} decisions",
                program.func(f).name,
                program.describe_loc(program.inst(call).loc),
                program.func(program.func_of(call)).name,
                shared.len()
            );
        }
        println!(
            "\n{} (call to {}, reaching {reached} of the {} decisions)",
            explainer.describe(Fact::Control(program.inst(call).block)),
            program.func(f).name,
            shared.len()
        );
        for &o in &options {
            print_chain(Fact::Control(program.inst(call).block), o);
        }
    }
    // Spread over the program rather than the first few (often all in argument parsing).
    let step = shared.len().div_ceil(EXPLAINED_DECISIONS).max(1);
    for d in shared.iter().step_by(step) {
        let fact = Fact::Decision(program.inst(d.inst).block);
        println!("\n{}", explainer.describe(fact));
        for &o in &options {
            print_chain(fact, o);
        }
    }
    Ok(())
}

/// Table 7 of the paper: region entries per run (RC) and the instrumented program's time
/// against the plain program's, on the configurations both measured.
fn report_overhead(
    store: &Store,
    spec: &SystemSpec,
    workload: &measure::Workload,
    variant: &str,
) -> Result<()> {
    let selection = |variant: &str| measure::Selection {
        system: Some(spec.name.clone()),
        spec_hash: Some(spec.hash.clone()),
        workload: Some(workload.name.clone()),
        variant: variant.to_string(),
    };
    let times = store.region_times(&selection(variant))?;
    let runs: std::collections::BTreeSet<i64> = times.iter().map(|(_, run, _)| *run).collect();
    let entries: u64 = times
        .iter()
        .filter(|(_, _, r)| r.region != instrumented::BASE)
        .map(|(_, _, r)| r.entries)
        .sum();
    let mut line = format!(
        "region entries per run (RC): {:.0}",
        entries as f64 / runs.len().max(1) as f64
    );
    let metric = spec.measure.metric;
    let plain: std::collections::HashMap<String, f64> = store
        .summaries(&selection(""), metric)?
        .into_iter()
        .filter_map(|s| Some((s.configuration, s.summary?.median)))
        .collect();
    let pairs: Vec<(f64, f64)> = store
        .summaries(&selection(variant), metric)?
        .iter()
        .filter_map(|s| Some((s.summary.as_ref()?.median, *plain.get(&s.configuration)?)))
        .collect();
    if pairs.is_empty() {
        line.push_str("; overhead unknown (measure the plain program with `knobs measure` too)");
    } else {
        // The geometric mean, as the benchmark scripts report ratios (a 2× and a 0.5× run
        // average to 1×, not 1.25×).
        let ratio =
            (pairs.iter().map(|(i, p)| (i / p).ln()).sum::<f64>() / pairs.len() as f64).exp();
        line.push_str(&format!(
            "; instrumented / plain {}: {ratio:.3} (geometric mean over {} configurations)",
            metric.name(),
            pairs.len()
        ));
    }
    eprintln!("{line}");
    Ok(())
}
