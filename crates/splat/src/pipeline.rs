//! SPLat on a C program, one function per stage:
//!
//! 1. [`explore`]: build the taint-instrumented program (`instrumented::taint_build`) and
//!    run the search ([`crate::explore`]) with it on the analysis workload, each run's path
//!    read from its taint record;
//! 2. [`reached`]: the paths as a table ([`PathTable`]), the options some path reached and
//!    those none did;
//! 3. [`measure_paths`]: every explored configuration measured end to end through the
//!    results store (the runs `knobs measure` would make); failed configurations are an error
//!    unless `instrumented::Settings::allow_failed`;
//! 4. [`path_times`]: each path's measured time from the store (`None` when its runs failed);
//!    in counts, [`measure_off_path`]: options set on paths that do not reach them
//!    ([`crate::off_path`]), and what that changed;
//! 5. [`build_model`]: the table as a model file, those changes added where a path does not
//!    reach the option, the options it is blind to in its provenance.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use instrumented::Reporter;
use measure::campaign::CampaignReport;
use measure::store::Store;
use measure::{SystemSpec, Workload};
use model::ModelFile;
use serde::Deserialize;
use space::{Configuration, OptionId, ValidConfigurations};

use crate::off_path;
use crate::table::PathTable;
use crate::{Error, Exploration, Reach};

/// The part of a taint-run record SPLat reads (`docs/comprex-records.md`).
#[derive(Deserialize)]
struct Orders {
    #[serde(default)]
    reads: Option<Vec<String>>,
    #[serde(default)]
    decided: Option<Vec<String>>,
}

/// The search's result, and how long its taint runs took.
pub struct Explored {
    pub exploration: Exploration,
    pub seconds: f64,
}

/// Stage 1: the taint-instrumented program, run configuration by configuration on
/// `analysis` until every combination of reached options has run (at most `max_runs`).
pub fn explore(
    spec: &SystemSpec,
    settings: &instrumented::Settings,
    analysis: &Workload,
    reach: Reach,
    max_runs: usize,
    reporter: &mut dyn Reporter,
) -> Result<Explored, Error> {
    let valid = ValidConfigurations::new(&spec.space)?;
    reporter.note("building the taint-instrumented program");
    let taint = instrumented::taint_build(spec, settings, "SPLat")?;
    spec.prepare_workload(analysis)?;
    let out = settings.work_dir.join("taint-run.json");
    let started = Instant::now();
    let exploration = crate::explore(&valid, max_runs, |config| {
        let json = instrumented::taint_run(spec, &taint.binary, config, analysis, &out, None)?;
        let names = reached_options(&json, reach, &out)?;
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
    Ok(Explored {
        exploration,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The options a taint record (written to `out`) says the run reached, in order.
fn reached_options(json: &str, reach: Reach, out: &Path) -> Result<Vec<String>, String> {
    let orders: Orders = serde_json::from_str(json)
        .map_err(|e| format!("{}: malformed taint record: {e}", out.display()))?;
    match reach {
        Reach::Read => orders.reads,
        Reach::Decision => orders.decided,
    }
    .ok_or_else(|| {
        format!(
            "{}: the taint record has no reading orders (a runtime older than this knobs?)",
            out.display()
        )
    })
}

/// The explored paths as a table, with the options some path reached and those none did
/// (by name).
pub struct Reached {
    pub table: PathTable,
    pub reached: Vec<String>,
    /// Options that can take more than one value but no path reached.
    pub unreached: Vec<String>,
}

/// Stage 2: the table of the explored paths, and which options it sees.
pub fn reached(valid: &ValidConfigurations, exploration: &Exploration) -> Result<Reached, Error> {
    let space = valid.space();
    let table = PathTable::new(valid, &exploration.paths)?;
    let reached = table.options();
    // An option the constraints fix (a mandatory group's parent) has nothing to reach.
    let varies = |o: OptionId| {
        (0..space.option(o).arity() as u32)
            .filter(|v| valid.allows(&[(o, *v)]))
            .take(2)
            .count()
            > 1
    };
    let unreached = space
        .ids()
        .filter(|o| !reached.contains(o) && varies(*o))
        .map(|o| space.option(o).name.clone())
        .collect();
    Ok(Reached {
        reached: reached
            .iter()
            .map(|o| space.option(*o).name.clone())
            .collect(),
        unreached,
        table,
    })
}

/// What stage 3 measured: the campaign's report, the store variant its runs are under, and
/// a note naming failed configurations (when allowed).
pub struct Measured {
    pub report: CampaignReport,
    /// `""` for the program as the spec runs it; the counting build's under
    /// `metric = "instructions"`.
    pub variant: String,
    pub failed: Option<String>,
}

/// Stage 3: the explored configurations measured end to end: the program as the spec runs
/// it, or, when the spec counts instructions, the plain counting build
/// (`instrumented::counting::measure_plain_counted`), so that the model is in the unit of
/// the counted white-box models and their ground truth. Failed configurations are an error
/// naming them, unless `settings.allow_failed`; then [`Measured::failed`] names them.
pub fn measure_paths(
    store: &Store,
    settings: &instrumented::Settings,
    spec: &SystemSpec,
    workload: &Workload,
    configurations: &[Configuration],
    reporter: &mut dyn Reporter,
) -> Result<Measured, Error> {
    spec.prepare_workload(workload)?;
    let (report, variant) = if instrumented::counting::counts_instructions(spec) {
        reporter
            .note("building the counting build of the plain program (metric = \"instructions\")");
        instrumented::counting::measure_plain_counted(
            store,
            settings,
            spec,
            workload,
            configurations,
            &mut |e| reporter.measurement(e),
        )?
    } else {
        let report = settings
            .campaign(spec, workload)
            .run(store, configurations, &mut |e| reporter.measurement(e))?;
        (report, String::new())
    };
    let failed = instrumented::failed::check(&report, settings.allow_failed)?;
    Ok(Measured {
        report,
        variant,
        failed,
    })
}

/// Stage 4: each configuration's measured time (`None`: no successful run) in the runs of
/// `variant`, and the metric it is by.
pub fn path_times(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
    configurations: &[String],
) -> Result<(Vec<Option<f64>>, measure::Metric), Error> {
    let selection = instrumented::selection(spec, workload, variant);
    let (metric, _) = store.resolve_metric(&selection, spec.measure.metric)?;
    let measured: BTreeMap<String, f64> = store
        .summaries(&selection, metric)?
        .into_iter()
        .filter_map(|s| Some((s.configuration, s.summary?.value)))
        .collect();
    let times = configurations
        .iter()
        .map(|c| measured.get(c).copied())
        .collect();
    Ok((times, metric))
}

/// Stage 4 (counts): every option some path does not reach set on such paths, in two rounds
/// ([`crate::off_path`]), measured as stage 3 measures; the probes, what each changed, and
/// notes (values no valid configuration takes there, options with more paths than probed).
#[allow(clippy::too_many_arguments)]
pub fn measure_off_path(
    store: &Store,
    settings: &instrumented::Settings,
    spec: &SystemSpec,
    workload: &Workload,
    valid: &ValidConfigurations,
    exploration: &Exploration,
    measured_paths: &[Option<f64>],
    reporter: &mut dyn Reporter,
) -> Result<OffPathMeasured, Error> {
    let off = off_path::off_paths(valid, exploration);
    let mut probes = Vec::new();
    let mut effects = Vec::new();
    let mut notes = Vec::new();
    let mut round = off_path::first_round(&off);
    let mut invalid = Vec::new();
    for second in [false, true] {
        if round.is_empty() {
            break;
        }
        let (new, refused) = off_path::probes(valid, exploration, &round);
        invalid.extend(refused);
        let configurations: Vec<Configuration> =
            new.iter().map(|p| p.configuration.clone()).collect();
        let measured = measure_paths(store, settings, spec, workload, &configurations, reporter)?;
        notes.extend(measured.failed);
        let texts: Vec<String> = configurations
            .iter()
            .map(|c| spec.space.format_configuration(c))
            .collect();
        let (times, _) = path_times(store, spec, workload, &measured.variant, &texts)?;
        effects.extend(off_path::effects(
            valid,
            exploration,
            &new,
            &times,
            measured_paths,
        ));
        probes.extend(new);
        if second {
            break;
        }
        let (next, capped) = off_path::second_round(valid, &off, &probes, &effects);
        if !capped.is_empty() {
            notes.push(format!(
                "{} changed the count differently on the paths that do not reach them and are set on {} of those paths each: the others take the first path's change",
                capped.join(", "),
                off_path::MOST_PROBES_PER_OPTION
            ));
        }
        round = next;
    }
    invalid.sort();
    invalid.dedup();
    if !invalid.is_empty() {
        notes.push(format!(
            "{} not measured off the paths: no valid configuration takes it with that path's other values, so the model predicts no change for it there",
            invalid.join(", ")
        ));
    }
    Ok(OffPathMeasured {
        probes,
        effects,
        notes,
    })
}

/// What [`measure_off_path`] measured.
pub struct OffPathMeasured {
    pub probes: Vec<off_path::Probe>,
    /// What each probe changed, in the probes' order.
    pub effects: Vec<off_path::Effect>,
    pub notes: Vec<String>,
}

/// Stage 5: the table as a model file of `metric`, with what options changed on paths that do
/// not reach them (`changes`, in counts) added wherever a configuration's path does not reach
/// them; the options no path reached in its provenance (a reader of the model alone must see
/// which options it is blind to). `variant` is stage 3's: a counting build's says what its
/// instructions are.
pub fn build_model(
    reached: &Reached,
    valid: &ValidConfigurations,
    exploration: &Exploration,
    times: &[Option<f64>],
    changes: &off_path::Changes,
    metric: measure::Metric,
    variant: &str,
) -> Result<ModelFile, Error> {
    let mut file = reached
        .table
        .model(valid, times, &exploration.paths, changes)?;
    file.metric = Some(if variant.is_empty() {
        format!("{}, end to end", metric.name())
    } else {
        "instructions (the program's own LLVM IR instructions, counted by its counting \
         build), end to end"
            .into()
    });
    file.provenance
        .insert("unreached".into(), reached.unreached.clone().into());
    Ok(file)
}
