//! `knobs splat`: flags for [`splat::run`] and the rendering of its report.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use splat::{Options, Reach, Report};

use crate::Outcome;
use crate::progress::Progress;
use crate::session_args::SessionArgs;

#[derive(Args)]
#[command(
    after_help = "Example:\n  knobs splat --spec examples/running-example/knobs.toml\n  \
    knobs splat --spec examples/running-example/knobs.toml --delayed"
)]
pub struct SplatArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// SPLat-delayed: an option is reached when its value first reaches a decision, not when
    /// the program first reads it (fewer configurations for programs that read every option
    /// at start-up).
    #[arg(long)]
    delayed: bool,
    /// The workload of the taint runs that find the paths (default: the first with purpose
    /// "analysis", else the measured one).
    #[arg(long)]
    analysis_workload: Option<String>,
    /// Stop exploring after this many configurations.
    #[arg(long, default_value_t = 4096)]
    max_runs: usize,
    /// Where to write the model JSON (default: NAME.splat.json or NAME.splat-delayed.json
    /// beside the spec).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Build the model although some configurations failed (crashed, timed out): the terms
    /// that rest on their paths are left out, and named in the output and the model.
    /// Default: failed configurations are an error naming them.
    #[arg(long)]
    allow_failed: bool,
}

pub fn splat(args: SplatArgs) -> Result<Outcome> {
    let mut session = args.session.open("splat")?;
    session.settings.allow_failed = args.allow_failed;
    let options = Options {
        reach: if args.delayed {
            Reach::Decision
        } else {
            Reach::Read
        },
        analysis_workload: args.analysis_workload,
        max_runs: args.max_runs,
        model_path: args.out,
    };
    let report = splat::run(&session, &options, &mut Progress::new())?;
    if args.session.json {
        crate::print_json(&report)?;
    } else {
        render(&report)?;
    }
    Ok(Outcome::Done)
}

/// The report as text: the explored paths on stderr, the model on stdout.
fn render(report: &Report) -> Result<()> {
    for p in &report.paths {
        eprintln!(
            "  {}: {}{}",
            space::shown_configuration(&p.configuration),
            if p.reached.is_empty() {
                "reached no option".to_string()
            } else {
                p.reached.join(" → ")
            },
            match (p.seconds, p.instructions, &report.measurement) {
                (Some(s), _, _) => format!("  {s:.4} s"),
                (None, Some(n), _) => format!("  {n:.0} instructions"),
                (None, None, Some(_)) => "  no successful run".to_string(),
                (None, None, None) => String::new(),
            }
        );
    }
    eprintln!(
        "{}: {} configurations of {} explored ({} taint runs) in {:.1} s; reached: {}; never reached: {}",
        report.approach,
        report.paths.len(),
        report.total_configurations,
        report.taint_runs,
        report.exploration_seconds,
        list(&report.reached),
        list(&report.unreached),
    );
    if let Some(m) = &report.measurement {
        eprintln!("{}", m.summary(0.05));
    }
    if let Some(output) = &report.output {
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

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
