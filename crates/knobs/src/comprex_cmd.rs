//! `knobs comprex`: Comprex end to end — iterative dynamic taint analysis on the analysis
//! workload, method-level profiling of the explored configurations on the real workload, and
//! the global and per-method models.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use comprex::{Granularity, ModelSettings};
use measure::{Store, SystemSpec};
use space::ValidConfigurations;

use crate::Outcome;
use crate::measure_cmd::{beside, print_report, with_progress};

#[derive(Args)]
pub struct ComprexArgs {
    /// The system spec; it needs a [build] section (C sources or bitcode).
    #[arg(long, default_value = "knobs.toml")]
    spec: PathBuf,
    /// The workload to measure with (default: the spec's first workload for measurement).
    #[arg(long)]
    workload: Option<String>,
    /// The workload for the taint runs (default: the first with purpose "analysis").
    #[arg(long)]
    analysis_workload: Option<String>,
    /// Region granularity of the iterative analysis: method, statement or program (Table IV
    /// of the paper). Measurement with the profiler is per method.
    #[arg(long, default_value = "method")]
    granularity: String,
    /// Only run the iterative analysis at each granularity (program, method, statement) and
    /// print the regions and configurations each needs (the paper's Table IV); no measuring.
    #[arg(long)]
    granularity_table: bool,
    /// Stop the iterative analysis after this many taint runs.
    #[arg(long, default_value_t = 256)]
    max_runs: usize,
    /// Terms smaller than this many seconds are reported as trivial and left out.
    #[arg(long, default_value_t = 0.001)]
    trivial_below: f64,
    /// The results store (default: knobs.db beside the spec).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Where to write the model JSON (default: NAME.comprex.json beside the spec).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Where builds go (default: .knobs/comprex beside the spec).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Run configurations whose earlier runs failed again.
    #[arg(long)]
    retry_failed: bool,
    /// Put a profiler probe on every method region, even hot tiny ones (default: methods
    /// entered at least --probe-min-entries times in a calibration run whose self time per
    /// call is below --probe-min-ns get no probe; their time and decisions go to their
    /// innermost probed callers).
    #[arg(long)]
    all_probes: bool,
    /// Self time per call (ns) below which a hot method gets no probe.
    #[arg(long, default_value_t = 100.0)]
    probe_min_ns: f64,
    /// Entries in one calibration run (analysis workload) from which a method counts as hot.
    #[arg(long, default_value_t = 1000)]
    probe_min_entries: u64,
    /// §V.A's overhead correction: measure this many of the explored configurations with and
    /// without the profiler (interleaved runs, not stored) and correct the model by the fitted
    /// line (0: no correction).
    #[arg(long, default_value_t = 5)]
    overhead_correction: usize,
    /// How the overhead correction is fitted: `ratio` (profiled = a · native, a the median
    /// ratio: robust to a disturbed pair) or `line` (profiled = a · native + b, least squares).
    #[arg(long, default_value = "ratio")]
    overhead_fit: String,
    /// Seed choosing the configurations of the overhead correction.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn comprex(args: ComprexArgs) -> Result<Outcome> {
    let granularity = match args.granularity.as_str() {
        "method" => Granularity::Method,
        "statement" => Granularity::Statement,
        "program" => Granularity::Program,
        g => bail!("unknown granularity `{g}`; expected method, statement or program"),
    };
    let Some(overhead_fit) = comprex::pipeline::OverheadFit::parse(&args.overhead_fit) else {
        bail!(
            "unknown overhead fit `{}`; expected ratio or line",
            args.overhead_fit
        );
    };
    let spec = SystemSpec::load(&args.spec)?;
    spec.check_cwd()?;
    let workload = spec.workload(args.workload.as_deref())?;
    let analysis = match &args.analysis_workload {
        Some(name) => spec.workload(Some(name))?,
        None => spec.analysis_workload()?,
    };
    spec.prepare_workload(workload)?;
    let mut settings = instrumented::Settings::new(
        args.work_dir
            .clone()
            .unwrap_or_else(|| beside(&args.spec, ".knobs/comprex")),
    );
    settings.retry_failed = args.retry_failed;
    if args.granularity_table {
        return granularity_table(&spec, &settings, analysis, args.max_runs);
    }

    let explored = comprex::pipeline::explore(
        &spec,
        &settings,
        analysis,
        granularity,
        args.max_runs,
        &mut |config, decisions| {
            eprintln!(
                "taint run: `{}`: {decisions} decision records",
                if config.is_empty() {
                    "(no option selected)"
                } else {
                    config
                }
            )
        },
    )?;
    let exploration = &explored.exploration;
    let total = ValidConfigurations::new(&spec.space)?.count();
    eprintln!(
        "dynamic taint analysis (workload `{}`): {} configurations of {total} in {:.1} s; {} decision sites instrumented",
        analysis.name,
        exploration.configurations.len(),
        explored.seconds,
        explored.stats.decisions
    );
    for region in exploration.regions(granularity) {
        let subspaces: Vec<&str> = region.subspaces.iter().map(|s| s.text.as_str()).collect();
        eprintln!("  region {}: {}", region.id, subspaces.join(" | "));
    }
    if granularity != Granularity::Method {
        eprintln!(
            "(regions at {} granularity; profiling and models are per method)",
            args.granularity
        );
    }

    let mut method_level = if granularity == Granularity::Method {
        explored
    } else {
        // Profiling and models need the method partitions: explore again at method
        // granularity (cheap next to measuring, and it reuses nothing it should not).
        comprex::pipeline::explore(
            &spec,
            &settings,
            analysis,
            Granularity::Method,
            args.max_runs,
            &mut |_, _| {},
        )?
    };
    if !args.all_probes {
        let selection = comprex::pipeline::select_probes(
            &spec,
            &settings,
            analysis,
            &method_level,
            &comprex::pipeline::ProbeSettings {
                min_ns_per_entry: args.probe_min_ns,
                min_entries: args.probe_min_entries,
                ..Default::default()
            },
        )?;
        eprintln!(
            "probes: {} of {} method regions (calibration on `{}`: {}); {} hot methods below {} ns per call left unprobed{}",
            selection.probed.len(),
            selection.probed.len() + selection.dropped.len(),
            analysis.name,
            match selection.calibration_runs {
                0 => "cached".to_string(),
                n => format!("{n} runs"),
            },
            selection.dropped.len(),
            args.probe_min_ns,
            if selection.kept.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} kept (reachable from an entry point without a probed caller): {}",
                    selection.kept.len(),
                    selection.kept.join(", ")
                )
            }
        );
        for d in &selection.dropped {
            eprintln!(
                "  unprobed {}: {} entries, {:.0} ns per call → {}",
                d.method,
                d.entries,
                d.ns_per_entry,
                d.into.join(", ")
            );
        }
        let new = comprex::pipeline::fold(
            &spec,
            analysis,
            &mut method_level,
            selection.fold(),
            args.max_runs,
            &mut |config, decisions| {
                eprintln!("taint run: `{config}`: {decisions} decision records")
            },
        )?;
        if !selection.dropped.is_empty() {
            eprintln!(
                "partitions with unprobed methods folded into their callers: {} configurations ({new} more taint runs)",
                method_level.exploration.configurations.len()
            );
        }
    }
    let exploration = &method_level.exploration;

    let profiled = comprex::pipeline::instrument_methods(&spec, &settings, &method_level)?;
    let store_path = args
        .store
        .clone()
        .unwrap_or_else(|| beside(&args.spec, "knobs.db"));
    let store = Store::open(&store_path)?;
    measure::runner::kill_runs_on_interrupt();
    let report = with_progress(|on_event| {
        Ok(comprex::pipeline::measure_configurations(
            &store,
            &settings,
            &spec,
            workload,
            &profiled,
            &exploration.configurations,
            on_event,
        )?)
    })?;
    print_report(&report, spec.measure.max_cv);

    let correction = if args.overhead_correction > 0 {
        let correction = comprex::pipeline::overhead_correction(
            &spec,
            &settings,
            workload,
            &profiled,
            &exploration.configurations,
            args.overhead_correction,
            args.seed,
            overhead_fit,
            &mut |config, p, n| {
                eprintln!(
                    "overhead: `{}`: {p:.4} s profiled, {n:.4} s native (medians, interleaved)",
                    if config.is_empty() {
                        "(no option selected)"
                    } else {
                        config
                    }
                )
            },
        )?;
        match &correction {
            Ok(c) => eprintln!(
                "overhead correction (§V.A, {} configurations with and without the profiler, {} fit): profiled = {:.4} · native {} {:.4} s",
                c.pairs.len(),
                c.fit.name(),
                c.line.slope,
                if c.line.intercept < 0.0 { "−" } else { "+" },
                c.line.intercept.abs()
            ),
            Err(why) => eprintln!("overhead correction: none ({why})"),
        }
        correction.ok()
    } else {
        None
    };

    let model = comprex::pipeline::build_model_corrected(
        &store,
        &spec,
        workload,
        &method_level,
        &profiled,
        &ModelSettings {
            trivial_below: args.trivial_below,
            ..ModelSettings::default()
        },
        correction.as_ref(),
    )?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| beside(&args.spec, &format!("{}.comprex.json", spec.name)));
    model.file.save(&out)?;
    crate::model_cmd::print_model(&model.file, 10);
    if !model.trivial.is_empty() {
        eprintln!(
            "{} trivial terms (below {} s) left out",
            model.trivial.len(),
            args.trivial_below
        );
    }
    for s in &model.suspects {
        eprintln!(
            "suspect: region {} varies within subspace {} (cv {:.0} % over {} measurements): its partition may be incomplete",
            s.region,
            s.subspace,
            s.cv * 100.0,
            s.measurements
        );
    }
    eprintln!(
        "model written to {} (measurements in {}, variant {})",
        out.display(),
        store_path.display(),
        profiled.variant
    );
    Ok(Outcome::Done)
}

/// `--granularity-table`: Table IV of the paper — regions and configurations of the
/// iterative analysis at each region granularity, from coarse to fine.
fn granularity_table(
    spec: &SystemSpec,
    settings: &instrumented::Settings,
    analysis: &measure::Workload,
    max_runs: usize,
) -> Result<Outcome> {
    let total = ValidConfigurations::new(&spec.space)?.count();
    println!("| granularity | regions | configurations (of {total}) | taint analysis (s) |");
    println!("|---|---|---|---|");
    for (name, granularity) in [
        ("program", Granularity::Program),
        ("method", Granularity::Method),
        ("statement", Granularity::Statement),
    ] {
        let explored = comprex::pipeline::explore(
            spec,
            settings,
            analysis,
            granularity,
            max_runs,
            &mut |_, _| {},
        )?;
        println!(
            "| {name} | {} | {} | {:.1} |",
            explored.exploration.regions(granularity).len(),
            explored.exploration.configurations.len(),
            explored.seconds
        );
    }
    Ok(Outcome::Done)
}
