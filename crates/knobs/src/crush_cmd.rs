//! `knobs crush`: flags for [`configcrusher::run`] and the rendering of its report.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use configcrusher::{Options, Report, Stage};

use crate::Outcome;
use crate::progress::Progress;
use crate::session_args::SessionArgs;

#[derive(Args)]
#[command(
    after_help = "Example:\n  knobs crush --spec examples/running-example/knobs.toml\n  \
    knobs crush --spec knobs.toml --explain sha256,blocks   # why two options interact"
)]
pub struct CrushArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Where to write the model JSON (default: NAME.configcrusher.json beside the spec).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Place regions without the propagation optimisations (Algorithms 3 and 4).
    #[arg(long)]
    no_optimise: bool,
    /// Stop after this stage: `analyse` (regions and compression, nothing built), or
    /// `instrument` (the instrumented program built, nothing measured).
    #[arg(long, value_enum)]
    stop_after: Option<StopAfter>,
    /// Only analyse, then explain why these options (comma-separated, e.g. `sha256,blocks`)
    /// influence the same decisions: the call sites where they enter functions' calling
    /// contexts together (every decision under such a call carries them all), and for a few
    /// decisions they all reach, the chain of facts (loads, stores, memory cells, call sites)
    /// that brings each option there.
    #[arg(long, value_name = "OPTIONS", value_delimiter = ',')]
    explain: Vec<String>,
    /// Options with neither a `source` nor a knobs:option= annotation are a loud warning
    /// instead of an error: the analysis cannot see them, and the model leaves them out.
    #[arg(long)]
    allow_unsourced: bool,
    /// The clock the region times are read by: `auto` (default) as the spec's metric
    /// resolves (CPU time for configurations that keep a CPU busy under `auto`), or `wall`
    /// or `cpu` in every configuration. The runtime records both in every run, so a rerun
    /// with another clock reuses the measurements.
    #[arg(long, value_enum, default_value = "auto")]
    region_clock: RegionClockArg,
    /// Keep an interaction only where its options meet in a branch that went both ways, in
    /// functions that ran, on the measured workload (branches and function entries observed
    /// in runs of the static cover's configurations): fewer configurations, on an assumption
    /// the report states with what it dropped.
    #[arg(long)]
    dynamic_confirmation: bool,
    /// Do not measure the native program in the measured configurations: the model is then
    /// the instrumented build's (by default each configuration's region times are scaled to
    /// the native program's time in it, which the runs of `knobs measure` store).
    #[arg(long)]
    no_native_correction: bool,
    /// Build the model although some configurations failed (crashed, timed out): the terms
    /// that rest on cells only they measure are left out, and named in the output and the
    /// model. Default: failed configurations are an error naming them.
    #[arg(long)]
    allow_failed: bool,
}

/// A clock flag's values (`--region-clock`, `knobs comprex --profile-clock`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum RegionClockArg {
    Auto,
    Wall,
    Cpu,
}

impl RegionClockArg {
    /// The clock asked for; `None` for `auto` (the approach chooses).
    pub(crate) fn forced(self) -> Option<instrumented::RegionClock> {
        match self {
            RegionClockArg::Auto => None,
            RegionClockArg::Wall => Some(instrumented::RegionClock::Wall),
            RegionClockArg::Cpu => Some(instrumented::RegionClock::Cpu),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum StopAfter {
    Analyse,
    Instrument,
}

pub fn crush(args: CrushArgs) -> Result<Outcome> {
    let mut session = args.session.open("configcrusher")?;
    session.settings.allow_failed = args.allow_failed;
    let explain: Vec<String> = args
        .explain
        .iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    let options = Options {
        optimise: !args.no_optimise,
        stop_after: match args.stop_after {
            Some(StopAfter::Analyse) => Stage::Analyse,
            Some(StopAfter::Instrument) => Stage::Instrument,
            None => Stage::Model,
        },
        explain,
        model_path: args.out,
        allow_unsourced: args.allow_unsourced,
        region_clock: args.region_clock.forced(),
        confirm: args.dynamic_confirmation,
        native_correction: !args.no_native_correction,
        ..Options::default()
    };
    let report = configcrusher::run(&session, &options, &mut Progress::new())?;
    if args.session.json {
        crate::print_json(&report)?;
    } else {
        render(&report)?;
    }
    Ok(Outcome::Done)
}

/// The report as text: the explanation or the model on stdout, the rest on stderr.
fn render(report: &Report) -> Result<()> {
    if let Some(explanation) = &report.explanation {
        print!("{explanation}");
    }
    if let Some(output) = &report.output {
        if let Some(o) = &report.overhead {
            eprintln!("{o}");
        }
        if let Some(clocks) = &report.region_clock {
            eprintln!("{clocks}");
        }
        crate::print_model_output(output)?;
    }
    for unmeasured in &report.unmeasured {
        eprintln!("WARNING: {unmeasured}");
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}
