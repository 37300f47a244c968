//! Stage 1: the program instrumented for dynamic taint tracking, explored with the
//! analysis workload (Algorithm 1), and the decisions of unprobed methods folded into their
//! probed callers' partitions.

use crate::Error;
use crate::{Exploration, ExploreSettings, Granularity, Pick};
use instrumented::{Built, Settings};
use llvm::TaintStats;
use measure::{SystemSpec, Workload};
use space::{Configuration, ValidConfigurations};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The iterative analysis' result.
pub struct Explored {
    pub built: Built,
    pub stats: TaintStats,
    pub exploration: Exploration,
    pub granularity: Granularity,
    /// Seconds of the taint runs (the analysis' cost).
    pub seconds: f64,
    /// The taint-instrumented binary (kept for the runs [`fold`] may need).
    pub taint_binary: PathBuf,
    /// Method regions whose decisions were folded into other regions ([`fold`]).
    pub fold: BTreeMap<String, Vec<String>>,
}

/// Stage 1: taint-instrument the program and explore the configuration space with it.
/// `on_run` hears of each taint run (configuration, decisions reported).
pub fn explore(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    granularity: Granularity,
    max_runs: usize,
    on_run: &mut dyn FnMut(&str, usize),
) -> Result<Explored, Error> {
    explore_tracking(spec, settings, workload, &[granularity], max_runs, on_run)
}

/// [`explore`] until every subspace of the first granularity's regions is explored, with the
/// regions of the others recorded from the same runs too (Table IV).
pub fn explore_tracking(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    granularities: &[Granularity],
    max_runs: usize,
    on_run: &mut dyn FnMut(&str, usize),
) -> Result<Explored, Error> {
    let granularity = granularities[0];
    let instrumented::TaintBuild {
        built,
        stats,
        binary,
    } = instrumented::taint_build(spec, settings, "Comprex")?;
    spec.prepare_workload(workload)?;
    let valid = ValidConfigurations::new(&spec.space)?;
    let out = settings.work_dir.join("taint-run.json");
    let started = Instant::now();
    let mut tracked = explore_settings(granularity, max_runs);
    tracked.granularities = granularities.to_vec();
    let exploration = crate::explore(
        &valid,
        tracked,
        taint_runner(spec, &binary, workload, &out, on_run),
    )?;
    if exploration.regions(granularity).is_empty() {
        return Err(Error::Invalid(
            "the program never reached a decision influenced by an option: check the options' `source` entries".into(),
        ));
    }
    Ok(Explored {
        built,
        stats,
        exploration,
        granularity,
        seconds: started.elapsed().as_secs_f64(),
        taint_binary: binary,
        fold: BTreeMap::new(),
    })
}

pub(super) fn explore_settings(granularity: Granularity, max_runs: usize) -> ExploreSettings {
    ExploreSettings {
        granularities: vec![granularity],
        start: None,
        pick: Pick::Fewest,
        max_runs,
    }
}

/// One taint run of `binary` in a configuration on `workload`: its decision records.
pub(super) fn taint_runner<'a>(
    spec: &'a SystemSpec,
    binary: &'a Path,
    workload: &'a Workload,
    out: &'a Path,
    on_run: &'a mut dyn FnMut(&str, usize),
) -> impl FnMut(&Configuration) -> Result<Vec<crate::DecisionRecord>, String> + 'a {
    move |config: &Configuration| {
        let text = spec.space.format_configuration(config);
        let json = instrumented::taint_run(spec, binary, config, workload, out)?;
        let run: crate::TaintRun = serde_json::from_str(&json)
            .map_err(|e| format!("{}: malformed taint records: {e}", out.display()))?;
        run.check_format()
            .map_err(|e| format!("{}: {e}", out.display()))?;
        on_run(&text, run.decisions.len());
        Ok(run.decisions)
    }
}

/// Re-partitions after probe selection: the decisions of each unprobed method refine the
/// partitions of the methods its time goes to (`comprex::Explorer::fold_methods`), replaying
/// the earlier taint runs; if that leaves subspaces unexplored, more taint runs follow.
/// Returns the number of new runs.
pub fn fold(
    spec: &SystemSpec,
    workload: &Workload,
    explored: &mut Explored,
    fold: BTreeMap<String, Vec<String>>,
    max_runs: usize,
    on_run: &mut dyn FnMut(&str, usize),
) -> Result<usize, Error> {
    if fold.is_empty() {
        return Ok(0);
    }
    let runs = refold(spec, workload, explored, fold.clone(), max_runs, on_run)?;
    explored.fold = fold;
    Ok(runs)
}

/// The exploration replayed with `fold` (`comprex::Explorer::fold_methods`), and more taint
/// runs until every subspace is explored. Returns the number of new runs.
pub(super) fn refold(
    spec: &SystemSpec,
    workload: &Workload,
    explored: &mut Explored,
    fold: BTreeMap<String, Vec<String>>,
    max_runs: usize,
    on_run: &mut dyn FnMut(&str, usize),
) -> Result<usize, Error> {
    let valid = ValidConfigurations::new(&spec.space)?;
    let mut explorer =
        crate::Explorer::new(&valid, explore_settings(Granularity::Method, max_runs));
    explorer.fold_methods(fold);
    explorer.replay(&explored.exploration)?;
    let out = explored.built.ssa.with_file_name("taint-run.json");
    let started = Instant::now();
    let mut run = taint_runner(spec, &explored.taint_binary, workload, &out, on_run);
    let mut new = 0;
    while let Some(config) = explorer.next_configuration()? {
        let records = run(&config).map_err(|cause| crate::Error::Run {
            run: explored.exploration.configurations.len() + new + 1,
            configuration: spec.space.format_configuration(&config),
            cause,
        })?;
        explorer.record(config, records)?;
        new += 1;
    }
    explored.exploration = explorer.finish();
    explored.granularity = Granularity::Method;
    explored.seconds += started.elapsed().as_secs_f64();
    Ok(new)
}
