//! `knobs family`: flags for [`family::run`] and the rendering of its report.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use family::{Options, Report};

use crate::Outcome;
use crate::progress::Progress;
use crate::session_args::SessionArgs;

#[derive(Args)]
#[command(after_help = "Example:\n  knobs family --spec examples/printer/knobs.toml")]
pub struct FamilyArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Map functions to features only from annotations (`knobs:feature=NAME`) and the spec's
    /// `functions` patterns, not from the static taint analysis.
    #[arg(long)]
    no_derive: bool,
    /// Where to write the model JSON (default: NAME.family.json beside the spec).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
}

pub fn family(args: FamilyArgs) -> Result<Outcome> {
    let session = args.session.open("family")?;
    let options = Options {
        derive: !args.no_derive,
        model_path: args.out,
    };
    let report = family::run(&session, &options, &mut Progress::new())?;
    if args.session.json {
        crate::print_json(&report)?;
    } else {
        render(&report)?;
    }
    Ok(Outcome::Done)
}

/// The report as text: the feature map and what the model cannot see on stderr, the model
/// on stdout.
fn render(report: &Report) -> Result<()> {
    for f in &report.features {
        eprintln!(
            "  {} → {} ({:?}: {})",
            f.function, f.feature, f.source, f.why
        );
    }
    if !report.unmapped_options.is_empty() {
        eprintln!(
            "options without a function: {} (no term of their own)",
            report.unmapped_options.join(", ")
        );
    }
    for u in &report.unseen {
        eprintln!(
            "  unseen: {}:{} in {} on {}: {}",
            u.file,
            u.line,
            u.function,
            u.options.join(", "),
            u.why
        );
    }
    eprintln!(
        "variant simulator: {} run configuration(s) of {} ({}), {} functions instrumented",
        report.configurations.len(),
        report.total_configurations,
        report
            .configurations
            .iter()
            .map(|c| if c.is_empty() {
                "(nothing selected)"
            } else {
                c
            })
            .collect::<Vec<_>>()
            .join("; "),
        report.instrumented_functions
    );
    if let Some(m) = &report.measurement {
        eprintln!("{}", m.summary(0.05));
    }
    if let Some(output) = &report.output {
        crate::print_model_output(output)?;
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}
