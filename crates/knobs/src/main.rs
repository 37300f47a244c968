//! `knobs`: which configuration options make a program slower or faster, by how much, and
//! where. This binary is flags plus glue over the library crates: `space` (configuration
//! spaces and sampling), `measure` (system specs, running configurations, the results
//! store), `model` (performance-influence models), `learn` (black-box learners and the
//! evaluation protocols), `report` (the HTML report), `configcrusher`, `comprex`, `splat` and `family` (the white-box approaches),
//! `changepoints` (performance changes across versions), `simulator` (compile-time features
//! as run-time ones), `instrumented` (building and
//! measuring an instrumented program, which they share), and `history` (a program's commits
//! and their builds).
//!
//! Every command that prints results has `--json` (one JSON document on stdout); results go
//! to stdout, progress and notes to stderr.
//!
//! Exit status: 0 on success, 1 when `space check` finds an invalid configuration, 2 on an
//! error (bad input), with a one-line message on stderr (usage errors are clap's).

mod backend_args;
mod changepoints_cmd;
mod comprex_cmd;
mod crush_cmd;
mod family_cmd;
mod history_cmd;
mod learn_cmd;
mod measure_cmd;
mod model_cmd;
mod progress;
mod report_cmd;
mod session_args;
mod simulator_cmd;
mod space_cmd;
mod splat_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "knobs",
    version,
    about = "Performance-influence models of configurable programs: which options (and combinations) make a program slower or faster, by how much, and where."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect a configuration space: show, count, check and sample configurations.
    #[command(subcommand)]
    Space(space_cmd::SpaceCommand),
    /// Predict the performance of configurations with a model: one written as text
    /// (`level=6,extreme`), a CSV (a final `prediction` column added) or standard input;
    /// --best/--top N: the fastest valid configurations by the model.
    Predict(model_cmd::PredictArgs),
    /// One self-contained HTML page of what matters: options ranked by effect, interactions,
    /// predicted against measured, regions with their code, noise, versions.
    Report(report_cmd::ReportArgs),
    /// A configuration's region times (from an instrumented variant) as a Chrome trace
    /// (JSON), one track per run: open it in Perfetto or chrome://tracing.
    Trace(report_cmd::TraceArgs),
    /// Inspect and convert performance-influence models.
    #[command(subcommand)]
    Model(model_cmd::ModelCommand),
    /// Write a starting system spec (knobs.toml) for a command: `knobs init -- xz -c in.txt`.
    Init(measure_cmd::InitArgs),
    /// Measure a sample of configurations into the results store; rerunning resumes and
    /// skips what is already measured.
    Measure(measure_cmd::MeasureArgs),
    /// A program's version history (the spec's [history]): list its commits, build them,
    /// prune the builds. `knobs measure --commit REV` measures at a commit.
    #[command(subcommand)]
    History(history_cmd::HistoryCommand),
    /// Read the results store: per-configuration statistics, export as dataset CSV or JSON.
    #[command(subcommand)]
    Results(measure_cmd::ResultsCommand),
    /// Learn a performance model from measured configurations (black-box): stepwise, LASSO,
    /// CART, random forest, boosted trees, least squares on given terms, or `auto`.
    Learn(learn_cmd::LearnArgs),
    /// Print a model's MAPE on measured configurations: by default those it was not built
    /// from (trained on, or measured by a white-box approach); --all for every one.
    Evaluate(learn_cmd::EvaluateArgs),
    /// Evaluation protocols of the literature: DeepPerf's sample sizes, Comprex's
    /// strategies × learners.
    #[command(subcommand)]
    Experiment(learn_cmd::ExperimentCommand),
    /// ConfigCrusher (white-box): analyse the program's C sources for where options matter,
    /// measure only the compressed configurations with region timers, and write the global
    /// model with a local model per code region.
    Crush(crush_cmd::CrushArgs),
    /// Comprex (white-box): iterative dynamic taint analysis partitions the configuration
    /// space per method; the explored configurations are measured with a sampling profiler;
    /// writes the global model with a local model per method.
    Comprex(comprex_cmd::ComprexArgs),
    /// SPLat (white-box): re-run the program depth-first over the options its path reaches
    /// until every combination of reached options has run; each is measured end to end and
    /// the model is their table. --delayed: reached when an option first decides something.
    Splat(splat_cmd::SplatArgs),
    /// Family-based measurement (white-box): map functions to features, run the program once
    /// with every feature (and once per alternative) with a call tree timed per calling
    /// context, and write the model of features and their interactions.
    Family(family_cmd::FamilyArgs),
    /// The variant simulator of a spec whose options set macros when the program is built:
    /// its `#ifdef` features encoded as run-time reads (refused annotations listed with their
    /// line), compiled, and a run-time spec for every approach written beside it.
    Simulator(simulator_cmd::SimulatorArgs),
    /// Change points across versions and configurations: which commits changed performance,
    /// for which options, measuring a small part of the commits × configurations grid.
    #[command(subcommand)]
    Changepoints(changepoints_cmd::ChangepointsCommand),
    /// One Slurm array task of a `--backend slurm` campaign (run by the job, not by you).
    #[command(hide = true)]
    SlurmWorker(backend_args::WorkerArgs),
}

/// Prints a report as pretty JSON on stdout (what `--json` gives every command).
pub fn print_json(report: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(report)?);
    Ok(())
}

/// A white-box approach's model (its largest terms and regions, on stdout) and where it and
/// its measurements are.
pub fn print_model_output(output: &instrumented::ModelOutput) -> anyhow::Result<()> {
    model_cmd::print_model(&model::ModelFile::load(&output.model_path)?, 10);
    eprintln!(
        "model written to {} (measurements in {}, {})",
        output.model_path.display(),
        output.store.display(),
        if output.variant.is_empty() {
            "of the program as the spec runs it".to_string()
        } else {
            format!("variant {}", output.variant)
        }
    );
    Ok(())
}

/// What a command reports back besides success: `Invalid` means "ran fine, but the input
/// configurations are not valid" (exit status 1); `SomeFailed` means "everything is stored,
/// but some configurations failed" (exit status 3).
pub enum Outcome {
    Done,
    Invalid,
    SomeFailed,
}

fn main() -> ExitCode {
    // Die quietly like other Unix tools when the reader of our output goes away
    // (`knobs space sample … | head`), instead of panicking on a failed print.
    // SAFETY: setting a signal disposition at startup, before any threads exist.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Space(cmd) => space_cmd::run(cmd),
        Command::Predict(args) => model_cmd::predict(args),
        Command::Model(cmd) => model_cmd::run(cmd),
        Command::Report(args) => report_cmd::report(args),
        Command::Trace(args) => report_cmd::trace(args),
        Command::Init(args) => measure_cmd::init(args),
        Command::Measure(args) => measure_cmd::measure(args),
        Command::Results(cmd) => measure_cmd::results(cmd),
        Command::History(cmd) => history_cmd::run(cmd),
        Command::Learn(args) => learn_cmd::learn_model(args),
        Command::Evaluate(args) => learn_cmd::evaluate_model(args),
        Command::Experiment(cmd) => learn_cmd::experiment(cmd),
        Command::Crush(args) => crush_cmd::crush(args),
        Command::Comprex(args) => comprex_cmd::comprex(args),
        Command::Splat(args) => splat_cmd::splat(args),
        Command::Family(args) => family_cmd::family(args),
        Command::Simulator(args) => simulator_cmd::simulator(args),
        Command::Changepoints(cmd) => changepoints_cmd::changepoints(cmd),
        Command::SlurmWorker(args) => backend_args::slurm_worker(args),
    };
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Invalid) => ExitCode::from(1),
        Ok(Outcome::SomeFailed) => ExitCode::from(3),
        Err(e) => {
            // One line: the chain of causes joined with ": ".
            eprintln!("knobs: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
