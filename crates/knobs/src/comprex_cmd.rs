//! `knobs comprex`: flags for [`comprex::run`] and the rendering of its report.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use comprex::pipeline::{OverheadFit, ProbeSettings};
use comprex::{ExplorationReport, Granularity, Options, Report};

use crate::Outcome;
use crate::progress::Progress;
use crate::session_args::SessionArgs;

#[derive(Args)]
#[command(
    after_help = "Example:\n  knobs comprex --spec examples/comprex-example/knobs.toml\n  \
    knobs comprex --spec knobs.toml --granularity-table   # the paper's Table IV"
)]
pub struct ComprexArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// The workload for the taint runs (default: the first with purpose "analysis").
    #[arg(long)]
    analysis_workload: Option<String>,
    /// Region granularity of the iterative analysis only (Table IV of the paper):
    /// measurement with the profiler and the models are per method whatever this says.
    #[arg(long, value_enum, default_value_t = GranularityArg::Method)]
    granularity: GranularityArg,
    /// Only run the iterative analysis, once, and print per granularity (program, method,
    /// statement) its regions and the configurations that cover them (the paper's Table
    /// IV); no measuring.
    #[arg(long)]
    granularity_table: bool,
    /// Stop the iterative analysis after this many taint runs.
    #[arg(long, default_value_t = 256)]
    max_runs: usize,
    /// Terms smaller than this many seconds are reported as trivial and left out.
    #[arg(long, default_value_t = 0.001)]
    trivial_below: f64,
    /// Where to write the model JSON (default: NAME.comprex.json beside the spec).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
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
    /// The overhead correction (§V.A): 0 turns it off; with `--overhead-fit ratio` or `line`,
    /// the paper's: measure this many of the explored configurations with and without the
    /// profiler (interleaved runs, not stored) and correct the model by the fitted line.
    #[arg(long, default_value_t = 5)]
    overhead_correction: usize,
    /// How the overhead correction is made: `native` (default; beyond the paper, as
    /// ConfigCrusher corrects: the native program measured and stored in every profiled
    /// configuration, each configuration's region times scaled to its native time;
    /// `--overhead-correction` is then only on or off), or the paper's line fitted to the
    /// interleaved pairs: `ratio` (profiled = a · native, a the median ratio: robust to a
    /// disturbed pair) or `line` (profiled = a · native + b, least squares).
    #[arg(long, value_enum, default_value_t = FitArg::Native)]
    overhead_fit: FitArg,
    /// Seed choosing the configurations of the overhead correction.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The clock the sampling profiler samples: `auto` (default) as the spec's metric
    /// resolves (under `auto`: the CPU clock when most configurations keep one CPU busy, by
    /// the stored runs of the program as the spec runs it, else by a first round of native
    /// runs before profiling), or `wall` or `cpu` (`KNOBS_PROFILE_CLOCK`). A profile holds
    /// one clock, so each clock's profiled runs are measured and stored apart.
    #[arg(long, value_enum, default_value = "auto")]
    profile_clock: crate::crush_cmd::RegionClockArg,
    /// Build the model although some configurations failed (crashed, timed out), when every
    /// subspace still has a configuration that ran (else the error names the region and the
    /// subspace). Default: failed configurations are an error naming them.
    #[arg(long)]
    allow_failed: bool,
    /// How a callee's cost is partitioned: `callers` (default) by its own decisions and those
    /// of its nearest callers that are regions (the branches, function-pointer choices and loops that decide
    /// whether, how often and with what it is called), or `own` by its own decisions only, as
    /// the paper does.
    #[arg(long, value_enum, default_value = "callers")]
    callee_partitions: CalleeArg,
    /// Which tainted branches put their options into the control taint of what follows them:
    /// `every-branch` (default; the paper's), or `two-way-branches`: a branch that went one
    /// way in every taint run (an error check on an option that never fails) opens none, found
    /// by repeating the exploration until that set is stable; the report lists them.
    #[arg(long, value_enum, default_value = "every-branch")]
    control_taint: ControlTaintArg,
    /// Measure a cover of the subspaces of the costly method regions only: a region whose self
    /// time is below PERCENT % of the calibration runs' is cheap, and a subspace of its
    /// that no measured configuration lies in takes the mean of its measured ones (listed in
    /// the report). Default: every explored configuration is measured (the paper's).
    #[arg(long, value_name = "PERCENT", value_parser = percent)]
    cheap_below: Option<f64>,
}

/// A share in percent, 0 to 100.
fn percent(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("`{text}` is not a percentage from 0 to 100")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ControlTaintArg {
    EveryBranch,
    TwoWayBranches,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CalleeArg {
    Callers,
    Own,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum GranularityArg {
    Method,
    Statement,
    Program,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FitArg {
    Ratio,
    Line,
    Native,
}

pub fn comprex(args: ComprexArgs) -> Result<Outcome> {
    let mut session = args.session.open("comprex")?;
    session.settings.allow_failed = args.allow_failed;
    let options = Options {
        analysis_workload: args.analysis_workload,
        granularity: match args.granularity {
            GranularityArg::Method => Granularity::Method,
            GranularityArg::Statement => Granularity::Statement,
            GranularityArg::Program => Granularity::Program,
        },
        granularity_table: args.granularity_table,
        max_runs: args.max_runs,
        trivial_below: args.trivial_below,
        all_probes: args.all_probes,
        probes: ProbeSettings {
            min_ns_per_entry: args.probe_min_ns,
            min_entries: args.probe_min_entries,
            ..ProbeSettings::default()
        },
        overhead_correction: args.overhead_correction,
        overhead_fit: match args.overhead_fit {
            FitArg::Ratio => OverheadFit::Ratio,
            FitArg::Line => OverheadFit::Line,
            FitArg::Native => OverheadFit::Native,
        },
        seed: args.seed,
        model_path: args.out,
        profile_clock: args.profile_clock.forced(),
        callee_partitions: match args.callee_partitions {
            CalleeArg::Callers => comprex::pipeline::CalleePartitions::Callers,
            CalleeArg::Own => comprex::pipeline::CalleePartitions::Own,
        },
        control_taint: match args.control_taint {
            ControlTaintArg::EveryBranch => comprex::pipeline::ControlTaint::EveryBranch,
            ControlTaintArg::TwoWayBranches => comprex::pipeline::ControlTaint::TwoWayBranches,
        },
        cheap_below: args.cheap_below.map(|p| p / 100.0),
    };
    let report = comprex::run(&session, &options, &mut Progress::new())?;
    if args.session.json {
        crate::print_json(&report)?;
    } else {
        render(&report, args.trivial_below)?;
    }
    Ok(Outcome::Done)
}

/// The report as text: Table IV or the model on stdout, the rest on stderr.
fn render(report: &Report, trivial_below: f64) -> Result<()> {
    if let Some(first) = report.granularity_table.first() {
        print_granularity_table(report, first);
        return Ok(());
    }
    // The profile's clock was said as it was chosen, before the profiled runs.
    print_partitions(report);
    if let Some(c) = report
        .overhead_correction
        .as_ref()
        .filter(|c| c.fit == OverheadFit::Native)
    {
        eprintln!(
            "overhead correction (native): each of the {} profiled configurations scaled to the native program's time in it (profiled / native: median {:.4})",
            c.pairs.len(),
            c.slope
        );
    } else if let Some(c) = &report.overhead_correction {
        eprintln!(
            "overhead correction (§V.A, {} configurations with and without the profiler, {} fit): profiled = {:.4} · native {} {:.4} s",
            c.pairs.len(),
            c.fit.name(),
            c.slope,
            if c.intercept < 0.0 { "−" } else { "+" },
            c.intercept.abs()
        );
    }
    if let Some(output) = &report.output {
        if report.trivial_terms > 0 {
            eprintln!(
                "{} trivial terms (below {trivial_below} s) left out",
                report.trivial_terms
            );
        }
        for s in &report.suspects {
            eprintln!(
                "suspect: region {} varies within subspace {} (cv {:.0} % over {} measurements): its partition may be incomplete",
                s.region,
                s.subspace,
                s.cv * 100.0,
                s.measurements
            );
        }
        crate::print_model_output(output)?;
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}

/// Table IV on stdout: per granularity its regions and the configurations that cover them,
/// all read from one exploration (its taint runs and decision sites are those of any row).
fn print_granularity_table(report: &Report, exploration: &ExplorationReport) {
    println!(
        "| granularity | regions | configurations (of {}) |",
        report.total_configurations
    );
    println!("|---|---|---|");
    for row in &report.granularity_table {
        println!(
            "| {} | {} | {}{} |",
            row.granularity,
            row.regions.len(),
            row.cover.unwrap_or(row.configurations),
            if row.cover_minimal == Some(false) {
                " (not proven the fewest)"
            } else {
                ""
            }
        );
    }
    println!(
        "\nFrom one exploration: {} taint runs in {:.1} s, {} decision sites; each row's \
         configurations are the fewest that reach every subspace of its regions.",
        exploration.configurations, exploration.seconds, exploration.decision_sites
    );
}

/// On stderr: each region's subspaces, and the methods left without a probe with the
/// callers their time goes to.
fn print_partitions(report: &Report) {
    if let Some(e) = &report.exploration {
        for region in &e.regions {
            eprintln!(
                "  region {}: {}",
                region.region,
                region.subspaces.join(" | ")
            );
        }
    }
    if let Some(p) = &report.probes {
        for d in &p.unprobed {
            eprintln!(
                "  unprobed {}: {} entries, {:.0} ns per call → {}",
                d.method,
                d.entries,
                d.ns_per_entry,
                d.into.join(", ")
            );
        }
        if !p.unprobed.is_empty() {
            eprintln!(
                "partitions with unprobed methods folded into their callers: {} configurations ({} more taint runs)",
                report.configurations.len(),
                p.extra_taint_runs
            );
        }
    }
}
