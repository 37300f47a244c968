//! `knobs crush`: flags for [`configcrusher::run`] and the rendering of its report.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use configcrusher::{Options, Report, Stage};
use instrumented::Session;

use crate::Outcome;
use crate::progress::Progress;

#[derive(Args)]
#[command(
    after_help = "Example:\n  knobs crush --spec examples/running-example/knobs.toml\n  \
    knobs crush --spec knobs.toml --explain sha256,blocks   # why two options interact"
)]
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
    /// Print the report as JSON on stdout (progress stays on stderr).
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum StopAfter {
    Analyse,
    Instrument,
}

pub fn crush(args: CrushArgs) -> Result<Outcome> {
    let session = Session::open(
        &args.spec,
        args.workload.as_deref(),
        args.store,
        args.work_dir,
        "configcrusher",
    )?;
    let mut settings = session.settings.clone();
    settings.retry_failed = args.retry_failed;
    let session = Session {
        settings,
        ..session
    };
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
        ..Options::default()
    };
    let report = configcrusher::run(&session, &options, &mut Progress::new())?;
    if args.json {
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
    if let (Some(path), Some(store), Some(variant)) =
        (&report.model_path, &report.store, &report.variant)
    {
        if let Some(o) = &report.overhead {
            let mut line = format!(
                "region entries per run (RC): {:.0}",
                o.region_entries_per_run
            );
            match o.instrumented_over_plain {
                Some(ratio) => line.push_str(&format!(
                    "; instrumented / plain {}: {ratio:.3} (geometric mean over {} configurations)",
                    o.metric, o.configurations_compared
                )),
                None => line.push_str(
                    "; overhead unknown (measure the plain program with `knobs measure` too)",
                ),
            }
            eprintln!("{line}");
        }
        crate::model_cmd::print_model(&model::ModelFile::load(path)?, 10);
        eprintln!(
            "model written to {} (measurements in {}, variant {variant})",
            path.display(),
            store.display()
        );
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}
