//! SPLat as one call: [`run`] builds the taint-instrumented program, explores (taint runs on
//! the analysis workload), measures the explored configurations end to end through the
//! results store (the program as the spec runs it, the runs `knobs measure` would make), and
//! writes the table as a model file.

use std::path::PathBuf;
use std::time::Instant;

use instrumented::{ModelOutput, Reporter, Session};
use measure::campaign::{Campaign, CampaignReport};
use serde::{Deserialize, Serialize};
use space::{OptionId, ValidConfigurations};

use crate::table::PathTable;
use crate::{Error, Reach};

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
    /// Paths that ran the taint-instrumented program (the others needed no run: no option
    /// left off their path could take another value).
    pub taint_runs: usize,
    /// Seconds of the taint runs.
    pub exploration_seconds: f64,
    pub measurement: Option<CampaignReport>,
    #[serde(flatten)]
    pub output: Option<ModelOutput>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PathReport {
    pub configuration: String,
    /// `name=value` in the order the path reached them.
    pub reached: Vec<String>,
    /// The measured time, the fastest-half mean of its runs (absent until measured).
    pub seconds: Option<f64>,
}

/// The part of a taint-run record SPLat reads (`docs/comprex-records.md`).
#[derive(Deserialize)]
struct Orders {
    #[serde(default)]
    reads: Option<Vec<String>>,
    #[serde(default)]
    decided: Option<Vec<String>>,
}

/// Runs SPLat (or SPLat-delayed, as `options.reach` says).
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
    let approach = match options.reach {
        Reach::Read => "splat",
        Reach::Decision => "splat-delayed",
    };
    let mut report = Report {
        system: spec.name.clone(),
        approach: approach.into(),
        reach: options.reach,
        workload: workload.name.clone(),
        analysis_workload: analysis.name.clone(),
        total_configurations: u128::try_from(&valid.count()).unwrap_or(u128::MAX),
        paths: Vec::new(),
        complete: false,
        reached: Vec::new(),
        unreached: Vec::new(),
        taint_runs: 0,
        exploration_seconds: 0.0,
        measurement: None,
        output: None,
        notes: Vec::new(),
    };

    reporter.note("building the taint-instrumented program");
    let taint = instrumented::taint_build(spec, settings, "SPLat")?;
    spec.prepare_workload(analysis)?;
    let out = settings.work_dir.join("taint-run.json");
    let started = Instant::now();
    let exploration = crate::explore(&valid, options.max_runs, |config| {
        let json = instrumented::taint_run(spec, &taint.binary, config, analysis, &out)?;
        let orders: Orders = serde_json::from_str(&json)
            .map_err(|e| format!("{}: malformed taint record: {e}", out.display()))?;
        let names = match options.reach {
            Reach::Read => orders.reads,
            Reach::Decision => orders.decided,
        }
        .ok_or_else(|| {
            format!(
                "{}: the taint record has no reading orders (a runtime older than this knobs?)",
                out.display()
            )
        })?;
        let ids = names
            .iter()
            .map(|n| {
                spec.space
                    .find(n)
                    .ok_or_else(|| format!("the program reached unknown option `{n}`"))
            })
            .collect::<Result<Vec<OptionId>, String>>()?;
        reporter.note(&format!(
            "path of `{}`: {}",
            spec.space.format_configuration(config),
            if names.is_empty() {
                "no option".to_string()
            } else {
                names.join(", ")
            }
        ));
        Ok(ids)
    })?;
    report.exploration_seconds = started.elapsed().as_secs_f64();
    report.complete = exploration.complete;
    report.taint_runs = exploration.runs;
    if !exploration.complete {
        report.notes.push(format!(
            "the exploration stopped at {} configurations (--max-runs) with combinations of reached options unexplored: the model predicts those from the paths it has",
            options.max_runs
        ));
    }
    let table = PathTable::new(&valid, &exploration.paths)?;
    let reached = table.options();
    report.reached = reached
        .iter()
        .map(|o| spec.space.option(*o).name.clone())
        .collect();
    // An option the constraints fix (a mandatory group's parent) has nothing to reach.
    let varies = |o: OptionId| {
        (0..spec.space.option(o).arity() as u32)
            .filter(|v| valid.allows(&[(o, *v)]))
            .take(2)
            .count()
            > 1
    };
    report.unreached = spec
        .space
        .ids()
        .filter(|o| !reached.contains(o) && varies(*o))
        .map(|o| spec.space.option(o).name.clone())
        .collect();
    let literal = |(o, v): (OptionId, u32)| {
        let option = spec.space.option(o);
        format!("{}={}", option.name, option.format_value(v))
    };
    report.paths = exploration
        .paths
        .iter()
        .map(|p| PathReport {
            configuration: spec.space.format_configuration(&p.configuration),
            reached: p.reached.iter().copied().map(literal).collect(),
            seconds: None,
        })
        .collect();
    if !report.unreached.is_empty() {
        report.notes.push(format!(
            "no path reached {}: the model predicts the same time whatever their values (check their sources if they matter)",
            report.unreached.join(", ")
        ));
    }
    reporter.note(&format!(
        "explored {} configurations ({} taint runs) in {:.1} s; measuring them end to end",
        exploration.paths.len(),
        exploration.runs,
        report.exploration_seconds
    ));

    let store = session.store()?;
    spec.prepare_workload(workload)?;
    let configurations: Vec<_> = exploration
        .paths
        .iter()
        .map(|p| p.configuration.clone())
        .collect();
    let campaign = Campaign {
        retry_failed: settings.retry_failed,
        backend: settings.backend.clone(),
        ..Campaign::new(spec, workload)
    };
    let measured = campaign.run(&store, &configurations, &mut |e| reporter.measurement(e))?;
    if let Some((configuration, why)) = measured.failed.first() {
        return Err(Error::Invalid(format!(
            "configuration `{configuration}` failed to run: {why} (and {} more)",
            measured.failed.len() - 1
        )));
    }
    report.measurement = Some(measured);
    let selection = instrumented::selection(spec, workload, "");
    let (metric, _) = store.resolve_metric(&selection, spec.measure.metric)?;
    let measured_times: std::collections::BTreeMap<String, f64> = store
        .summaries(&selection, metric)?
        .into_iter()
        .filter_map(|s| Some((s.configuration, s.summary?.value)))
        .collect();
    let mut times = Vec::with_capacity(report.paths.len());
    for path in &mut report.paths {
        let seconds = *measured_times.get(&path.configuration).ok_or_else(|| {
            Error::Invalid(format!(
                "configuration `{}` has no successful run in the store",
                path.configuration
            ))
        })?;
        path.seconds = Some(seconds);
        times.push(seconds);
    }

    let mut file = table.model(&valid, &times)?;
    file.metric = Some(format!("{}, end to end", metric.name()));
    // A reader of the model alone must see which options it is blind to.
    file.provenance
        .insert("unreached".into(), report.unreached.clone().into());
    report.output = Some(instrumented::save_model(
        &mut file,
        session,
        approach,
        "",
        &configurations,
        options.model_path.clone(),
    )?);
    Ok(report)
}
