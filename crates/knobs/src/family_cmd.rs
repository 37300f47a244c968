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
    /// Put enter/exit calls on every function, even hot tiny ones (default: functions entered
    /// at least --probe-min-entries times in a calibration run on the analysis workload, at
    /// less than --probe-min-ns of self time per call, and mapped to no feature, get none;
    /// their time goes to their callers).
    #[arg(long)]
    all_probes: bool,
    /// Self time per call (ns) below which a hot function gets no enter/exit calls.
    #[arg(long, default_value_t = 100.0)]
    probe_min_ns: f64,
    /// Entries in the calibration run from which a function counts as hot.
    #[arg(long, default_value_t = 1000)]
    probe_min_entries: u64,
    /// The clock the call trees are read by: `auto` (default) as the spec's metric resolves
    /// (the CPU clock when most configurations keep one CPU busy under `auto`), or `wall` or
    /// `cpu`. The runtime records both in every run, so a rerun with another clock reuses the
    /// measurements.
    #[arg(long, value_enum, default_value = "auto")]
    region_clock: crate::crush_cmd::RegionClockArg,
    /// Build the model although some runs of the variant simulator failed (crashed, timed
    /// out): the terms of the values only they select are left out, and named in the output
    /// and the model. Default: failed runs are an error naming them.
    #[arg(long)]
    allow_failed: bool,
    /// The paper's model only: assume a function costs the same whatever options ran before
    /// (its §5.2), with no further runs. Default: a run with the fewest features checks it,
    /// and where a calling context's cost differs, one run per option with only it
    /// deselected models that context per option (listed as `depends on`).
    #[arg(long)]
    constant_cost: bool,
}

pub fn family(args: FamilyArgs) -> Result<Outcome> {
    let mut session = args.session.open("family")?;
    session.settings.allow_failed = args.allow_failed;
    let options = Options {
        derive: !args.no_derive,
        model_path: args.out,
        all_probes: args.all_probes,
        probe_min_entries: args.probe_min_entries,
        probe_min_ns: args.probe_min_ns,
        region_clock: args.region_clock.forced(),
        constant_cost: args.constant_cost,
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
    print_analysis(report);
    if !report.unprobed.is_empty() {
        eprintln!(
            "hot tiny functions left untimed (their time is their callers'): {}",
            report.unprobed.join(", ")
        );
    }
    eprintln!(
        "variant simulator: {} run configuration(s) of {} ({}), {} functions instrumented",
        report.configurations.len(),
        report.total_configurations,
        report
            .configurations
            .iter()
            .map(|c| space::shown_configuration(c))
            .collect::<Vec<_>>()
            .join("; "),
        report.instrumented_functions
    );
    if let Some(m) = &report.measurement {
        eprintln!("{}", m.summary(0.05));
    }
    for f in &report.overhead_correction {
        eprintln!(
            "overhead correction (§5.1): `{}` runs natively in {:.4} s; {:.4} s of instrumentation cost taken out beyond the runtime's calibration",
            f.configuration, f.native, f.removed
        );
    }
    if let Some(clock) = &report.call_tree_clock {
        eprintln!("{clock}");
    }
    print_cost_dependence(report);
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

/// On stderr: the feature map, the fixed settings assumed, and what the model cannot see.
fn print_analysis(report: &Report) {
    for f in &report.features {
        eprintln!(
            "  {} → {}, by {}: {}",
            f.function, f.feature, f.source, f.why
        );
    }
    if !report.fixed_settings.is_empty() {
        eprintln!(
            "the analysis assumed {} fixed settings of the workload (observed in a few configurations, not checked in the runs): {}",
            report.fixed_settings.len(),
            report.fixed_settings.join(", ")
        );
    }
    if !report.unmapped_options.is_empty() {
        eprintln!(
            "options without a function: {} (no term of their own)",
            report.unmapped_options.join(", ")
        );
    }
    const SHOWN: usize = 10;
    for u in report.unseen.iter().take(SHOWN) {
        eprintln!(
            "  unseen: {}:{} in {} on {}: {}",
            u.file,
            u.line,
            u.function,
            u.options.join(", "),
            u.why
        );
    }
    if report.unseen.len() > SHOWN {
        eprintln!(
            "  … and {} more decisions it cannot see (--json lists them all)",
            report.unseen.len() - SHOWN
        );
    }
}

/// On stderr: the calling contexts whose cost depends on options (beyond §5.2), largest
/// change first.
fn print_cost_dependence(report: &Report) {
    let Some(d) = &report.cost_dependence else {
        return;
    };
    eprintln!(
        "constant cost (§5.2) checked by {} further run(s): {} calling contexts cost differently with options deselected",
        d.configurations.len(),
        d.contexts.len()
    );
    let counted = report
        .call_tree_clock
        .as_ref()
        .is_some_and(|c| c.clock == "instructions");
    let amount = |v: f64, sign: bool| match (counted, sign) {
        (true, true) => format!("{v:+.0}"),
        (true, false) => format!("{v:.0}"),
        (false, true) => format!("{v:+.6} s"),
        (false, false) => format!("{v:.6} s"),
    };
    const SHOWN: usize = 10;
    for c in d.contexts.iter().take(SHOWN) {
        let changes: Vec<String> = c
            .changes
            .iter()
            .map(|o| format!("{} without {}", amount(o.change, true), o.option))
            .collect();
        eprintln!(
            "  depends on options: {} ({}): {} with every feature, {}",
            c.context,
            c.function,
            amount(c.first, false),
            changes.join(", ")
        );
    }
    if d.contexts.len() > SHOWN {
        eprintln!(
            "  … and {} more (--json lists them all)",
            d.contexts.len() - SHOWN
        );
    }
}
