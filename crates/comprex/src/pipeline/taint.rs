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

/// Which conditional branches open control taint during the exploration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControlTaint {
    /// Every tainted branch, as the paper's taint tracking does: an error check on an option
    /// (`if (!supported(check)) return ERROR;`) puts that option into the control taint of
    /// everything after it, and through the values assigned there (implicit flows) into
    /// every later decision that reads them.
    #[default]
    EveryBranch,
    /// A tainted conditional branch that went one way in every taint run of the exploration
    /// decides nothing on the analysis workload: the exploration is repeated with such
    /// branches opening no control entry (`docs/comprex-records.md`, `branch_ways`), until
    /// the set is stable. Beyond the paper; the branches are reported.
    TwoWayBranches,
}

/// A tainted conditional branch that went one way in every taint run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OneWayBranch {
    #[serde(flatten)]
    pub site: crate::Decision,
    /// The edge of the IR branch every run took (1: false, 2: true; the compiler chooses
    /// which way a source condition is tested, so only a later run taking the other
    /// edge is meaningful).
    #[serde(skip)]
    pub way: u8,
}

/// What the taint runs saw of the conditional branches: per site the ways it went, and the
/// sites whose condition carried an option (with where they are).
#[derive(Default)]
pub(super) struct BranchWays {
    ways: BTreeMap<u32, u8>,
    tainted: BTreeMap<u32, crate::Decision>,
}

impl BranchWays {
    fn note(&mut self, run: &crate::TaintRun) {
        for (id, w) in &run.branch_ways {
            *self.ways.entry(*id).or_default() |= w;
        }
        for r in &run.decisions {
            if !r.data_flow.is_empty() {
                self.tainted
                    .entry(r.decision.id)
                    .or_insert_with(|| r.decision.clone());
            }
        }
    }

    /// The tainted branches that went one way in every run so far.
    fn one_way(&self) -> Vec<OneWayBranch> {
        self.tainted
            .iter()
            .filter_map(|(id, site)| match self.ways.get(id) {
                Some(&way @ (1 | 2)) => Some(OneWayBranch {
                    site: site.clone(),
                    way,
                }),
                _ => None,
            })
            .collect()
    }
}

/// Most explorations [`ControlTaint::TwoWayBranches`] makes before it gives up on a stable set
/// of one-way branches and explores as the paper does.
const MAX_EXPLORATIONS: usize = 4;

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
    pub control: ControlTaint,
    /// The branches that opened no control entry ([`ControlTaint::TwoWayBranches`]) and the
    /// file listing them for the taint runtime.
    pub one_way: Vec<OneWayBranch>,
    one_way_file: Option<PathBuf>,
    /// Explorations made (more than one: the one-way branches were looked for).
    pub explorations: usize,
    /// One-way branches a later taint run ([`fold`], callee partitions) saw take the other
    /// way: the assumption broke there.
    pub broken: Vec<OneWayBranch>,
    /// The configurations to measure when not every explored one: a cover of the subspaces of
    /// the regions that are not cheap (`run::Options::cheap_below`).
    pub cover: Option<Vec<Configuration>>,
}

impl Explored {
    /// The configurations the profiled build is measured in: [`Explored::cover`], or every
    /// explored one.
    pub fn measured(&self) -> &[Configuration] {
        self.cover
            .as_deref()
            .unwrap_or(&self.exploration.configurations)
    }
}

/// Stage 1: taint-instrument the program and explore the configuration space with it.
/// `on_run` hears of each taint run (configuration, decisions reported).
/// Every tainted branch opens control taint (the paper's).
pub fn explore(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    granularity: Granularity,
    max_runs: usize,
    on_run: &mut dyn FnMut(&str, usize),
) -> Result<Explored, Error> {
    let control = ControlTaint::EveryBranch;
    explore_tracking(
        spec,
        settings,
        workload,
        &[granularity],
        control,
        max_runs,
        on_run,
    )
}

/// [`explore`] until every subspace of the first granularity's regions is explored, with the
/// regions of the others recorded from the same runs too (Table IV).
pub fn explore_tracking(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    granularities: &[Granularity],
    control: ControlTaint,
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
    let list = settings.work_dir.join("one-way-branches.txt");
    let started = Instant::now();
    let mut tracked = explore_settings(granularity, max_runs);
    tracked.granularities = granularities.to_vec();
    // Ways accumulate over every exploration: a branch is one-way only if no run of any
    // exploration took its other edge.
    let mut seen = BranchWays::default();
    let mut one_way: Vec<OneWayBranch> = Vec::new();
    let mut explorations = 0;
    let exploration = loop {
        explorations += 1;
        let file = write_one_way(&list, &one_way)?;
        let exploration = crate::explore(
            &valid,
            tracked.clone(),
            taint_runner(
                spec,
                &binary,
                workload,
                &out,
                file.as_deref(),
                &mut seen,
                on_run,
            ),
        )?;
        // The paper's, asked for or fallen back to after MAX_EXPLORATIONS.
        if control == ControlTaint::EveryBranch || explorations > MAX_EXPLORATIONS {
            break exploration;
        }
        let found = seen.one_way();
        if found == one_way {
            break exploration;
        }
        one_way = if explorations < MAX_EXPLORATIONS {
            found
        } else {
            Vec::new()
        };
    };
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
        control,
        one_way_file: (!one_way.is_empty()).then_some(list),
        one_way,
        explorations,
        broken: Vec::new(),
        cover: None,
    })
}

/// Writes the ids of `one_way` to `path` for the taint runtime; `None` when there are none.
fn write_one_way(path: &Path, one_way: &[OneWayBranch]) -> Result<Option<PathBuf>, Error> {
    if one_way.is_empty() {
        return Ok(None);
    }
    let text: String = one_way.iter().map(|b| format!("{}\n", b.site.id)).collect();
    std::fs::write(path, text).map_err(instrumented::io(path))?;
    Ok(Some(path.to_path_buf()))
}

pub(super) fn explore_settings(granularity: Granularity, max_runs: usize) -> ExploreSettings {
    ExploreSettings {
        granularities: vec![granularity],
        start: None,
        pick: Pick::Fewest,
        max_runs,
    }
}

/// One taint run of `binary` in a configuration on `workload`, the branches `one_way` lists
/// opening no control entry: its decision records; the ways its branches went go to `seen`.
pub(super) fn taint_runner<'a>(
    spec: &'a SystemSpec,
    binary: &'a Path,
    workload: &'a Workload,
    out: &'a Path,
    one_way: Option<&'a Path>,
    seen: &'a mut BranchWays,
    on_run: &'a mut dyn FnMut(&str, usize),
) -> impl FnMut(&Configuration) -> Result<Vec<crate::DecisionRecord>, String> + 'a {
    move |config: &Configuration| {
        let text = spec.space.format_configuration(config);
        let json = instrumented::taint_run(spec, binary, config, workload, out, one_way)?;
        let run: crate::TaintRun = serde_json::from_str(&json)
            .map_err(|e| format!("{}: malformed taint records: {e}", out.display()))?;
        run.check_format()
            .map_err(|e| format!("{}: {e}", out.display()))?;
        seen.note(&run);
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
    let mut seen = BranchWays::default();
    let one_way = explored.one_way_file.as_deref();
    let binary = &explored.taint_binary;
    let mut run = taint_runner(spec, binary, workload, &out, one_way, &mut seen, on_run);
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
    drop(run);
    let broken = explored
        .one_way
        .iter()
        .filter(|b| seen.ways.get(&b.site.id).is_some_and(|&w| w != b.way))
        .cloned();
    explored.broken.extend(broken);
    explored.exploration = explorer.finish();
    explored.cover = None;
    explored.granularity = Granularity::Method;
    explored.seconds += started.elapsed().as_secs_f64();
    Ok(new)
}
