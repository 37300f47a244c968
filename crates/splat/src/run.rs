//! SPLat as one call: [`run`] sequences the stages of [`crate::pipeline`] over a
//! [`Session`] and returns a serialisable [`Report`]; progress goes to a [`Reporter`].

use std::path::PathBuf;

use instrumented::{ModelOutput, Reporter, Session};
use measure::campaign::CampaignReport;
use serde::Serialize;
use space::{OptionId, ValidConfigurations};

use crate::{Error, Reach};
use crate::{off_path, pipeline};

/// What `run` does beyond the session's defaults.
#[derive(Clone, Debug)]
pub struct Options {
    pub reach: Reach,
    /// The workload of the taint runs that find the paths (default: the spec's first with
    /// purpose "analysis", else the measured one).
    pub analysis_workload: Option<String>,
    /// Stop exploring after this many configurations.
    pub max_runs: usize,
    /// Where the model JSON goes (default: `NAME.splat.json` or `NAME.splat-delayed.json`
    /// beside the spec).
    pub model_path: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            reach: Reach::Read,
            analysis_workload: None,
            max_runs: 4096,
            model_path: None,
        }
    }
}

/// What a SPLat run explored, measured and modelled.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub system: String,
    /// `splat` or `splat-delayed`.
    pub approach: String,
    pub reach: Reach,
    pub workload: String,
    pub analysis_workload: String,
    /// Valid configurations of the space (saturated at `u128::MAX`).
    pub total_configurations: u128,
    /// Every explored configuration with the options its path reached, in order.
    pub paths: Vec<PathReport>,
    /// False when the exploration stopped at `max_runs` with combinations unexplored.
    pub complete: bool,
    /// Options some path reached, and those none did (SPLat calls them irrelevant; the model
    /// predicts the same for each of their values, and says so in its provenance).
    pub reached: Vec<String>,
    pub unreached: Vec<String>,
    /// In counts, what each option's other values changed on paths that do not reach it
    /// ([`crate::off_path`]); the model adds a change wherever a configuration's path does
    /// not reach the option.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub off_path_effects: Vec<off_path::Effect>,
    /// Paths that ran the taint-instrumented program (the others needed no run: no option
    /// left off their path could take another value).
    pub taint_runs: usize,
    /// Seconds of the taint runs.
    pub exploration_seconds: f64,
    pub measurement: Option<CampaignReport>,
    /// The cells of the table no successful run measured (`--allow-failed`), and the terms
    /// the model leaves out for them.
    pub unmeasured: Vec<instrumented::failed::Unmeasured>,
    #[serde(flatten)]
    pub output: Option<ModelOutput>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PathReport {
    pub configuration: String,
    /// `name=value` in the order the path reached them.
    pub reached: Vec<String>,
    /// The measured time, the fastest-half mean of its runs (absent until measured, when
    /// its runs failed, and when the spec counts instructions).
    pub seconds: Option<f64>,
    /// The counted instructions of the plain counting build (`metric = "instructions"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<f64>,
}

/// Runs SPLat (or SPLat-delayed, as `options.reach` says): the stages of
/// [`crate::pipeline`] in order.
pub fn run(
    session: &Session,
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<Report, Error> {
    let spec = &session.spec;
    let settings = &session.settings;
    let workload = session.workload();
    let analysis = match &options.analysis_workload {
        Some(name) => spec.workload(Some(name))?,
        None => spec.analysis_workload()?,
    };
    let valid = ValidConfigurations::new(&spec.space)?;
    let counted = instrumented::counting::counts_instructions(spec);
    let approach = match options.reach {
        Reach::Read => "splat",
        Reach::Decision => "splat-delayed",
    };
    let explored = pipeline::explore(
        spec,
        settings,
        analysis,
        options.reach,
        options.max_runs,
        reporter,
    )?;
    let reached = pipeline::reached(&valid, &explored.exploration)?;
    let mut report = Report::explored(spec, approach, options, &explored, &reached, &valid);
    report.workload = workload.name.clone();
    report.analysis_workload = analysis.name.clone();
    reporter.note(&format!(
        "explored {} configurations ({} taint runs) in {:.1} s; measuring them end to end",
        report.paths.len(),
        report.taint_runs,
        report.exploration_seconds
    ));

    let store = session.store()?;
    let mut configurations: Vec<_> = explored
        .exploration
        .paths
        .iter()
        .map(|p| p.configuration.clone())
        .collect();
    let measured =
        pipeline::measure_paths(&store, settings, spec, workload, &configurations, reporter)?;
    report.measurement = Some(measured.report);
    report.notes.extend(measured.failed);
    let (times, metric) = pipeline::path_times(
        &store,
        spec,
        workload,
        &measured.variant,
        &report
            .paths
            .iter()
            .map(|p| p.configuration.clone())
            .collect::<Vec<_>>(),
    )?;
    report.record_measures(&times, counted);
    let mut changes = off_path::Changes::default();
    if counted {
        let off = pipeline::measure_off_path(
            &store,
            settings,
            spec,
            workload,
            &valid,
            &explored.exploration,
            &times,
            reporter,
        )?;
        changes = off_path::Changes::new(&valid, &off.probes, &off.effects);
        report.notes.extend(off.notes);
        report.notes.extend(off_path_note(&off.effects));
        configurations.extend(off.probes.into_iter().map(|p| p.configuration));
        report.off_path_effects = off.effects;
    }
    let mut file = pipeline::build_model(
        &reached,
        &valid,
        &explored.exploration,
        &times,
        &changes,
        metric,
        &measured.variant,
    )?;
    report.unmeasured = instrumented::failed::recorded(&file);
    report.output = Some(instrumented::save_model(
        &mut file,
        session,
        approach,
        &measured.variant,
        &configurations,
        options.model_path.clone(),
    )?);
    Ok(report)
}

impl Report {
    /// The report of an exploration, before anything is measured (its workloads empty).
    fn explored(
        spec: &measure::SystemSpec,
        approach: &str,
        options: &Options,
        explored: &pipeline::Explored,
        reached: &pipeline::Reached,
        valid: &ValidConfigurations,
    ) -> Report {
        let counted = instrumented::counting::counts_instructions(spec);
        Report {
            system: spec.name.clone(),
            approach: approach.into(),
            reach: options.reach,
            workload: String::new(),
            analysis_workload: String::new(),
            total_configurations: u128::try_from(&valid.count()).unwrap_or(u128::MAX),
            paths: path_reports(spec, &explored.exploration),
            complete: explored.exploration.complete,
            reached: reached.reached.clone(),
            unreached: reached.unreached.clone(),
            off_path_effects: Vec::new(),
            taint_runs: explored.exploration.runs,
            exploration_seconds: explored.seconds,
            measurement: None,
            unmeasured: Vec::new(),
            output: None,
            notes: exploration_notes(explored, reached, options.max_runs, counted),
        }
    }

    /// Each path's measure, as instructions when `counted`, else seconds.
    fn record_measures(&mut self, times: &[Option<f64>], counted: bool) {
        for (path, value) in self.paths.iter_mut().zip(times) {
            if counted {
                path.instructions = *value;
            } else {
                path.seconds = *value;
            }
        }
    }
}

/// Every explored configuration with the options its path reached (not yet measured).
fn path_reports(spec: &measure::SystemSpec, exploration: &crate::Exploration) -> Vec<PathReport> {
    let literal = |(o, v): (OptionId, u32)| {
        let option = spec.space.option(o);
        format!("{}={}", option.name, option.format_value(v))
    };
    exploration
        .paths
        .iter()
        .map(|p| PathReport {
            configuration: spec.space.format_configuration(&p.configuration),
            reached: p.reached.iter().copied().map(literal).collect(),
            seconds: None,
            instructions: None,
        })
        .collect()
}

/// What the exploration leaves the model blind to: combinations it stopped before, options
/// no path reached (in counts, measured once each: `unreached_probes`).
fn exploration_notes(
    explored: &pipeline::Explored,
    reached: &pipeline::Reached,
    max_runs: usize,
    counted: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if !explored.exploration.complete {
        notes.push(format!(
            "the exploration stopped at {max_runs} configurations (--max-runs) with combinations of reached options unexplored: the model predicts those from the paths it has"
        ));
    }
    if !reached.unreached.is_empty() && counted {
        notes.push(format!(
            "no path reached {}: the model predicts the same for each of their values but what passing them changes (measured once each, `off_path_effects`)",
            reached.unreached.join(", ")
        ));
    } else if !reached.unreached.is_empty() {
        notes.push(format!(
            "no path reached {}: the model predicts the same time whatever their values (check their sources if they matter)",
            reached.unreached.join(", ")
        ));
    }
    notes
}

/// The options whose value changed the count on a path that does not reach them: SPLat's
/// assumption that an option a path does not read changes nothing there does not hold.
fn off_path_note(effects: &[off_path::Effect]) -> Option<String> {
    // Per option and value, the smallest and largest change over the paths it was set on.
    let mut ranges: Vec<(String, f64, f64)> = Vec::new();
    for e in effects {
        let Some(d) = e.effect else { continue };
        let name = format!("{}={}", e.option, e.value);
        match ranges.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, low, high)) => (*low, *high) = (low.min(d), high.max(d)),
            None => ranges.push((name, d, d)),
        }
    }
    let changed: Vec<String> = ranges
        .into_iter()
        .filter(|(_, low, high)| *low != 0.0 || *high != 0.0)
        .map(|(name, low, high)| {
            if low == high {
                format!("{name} {low:+}")
            } else {
                format!("{name} {low:+} to {high:+} by path")
            }
        })
        .collect();
    (!changed.is_empty()).then(|| {
        format!(
            "on a path that does not read them, {} still changed the count (how an option is passed, e.g. its flag parsed among the arguments): the model adds each change wherever a path does not reach the option",
            changed.join(", ")
        )
    })
}
