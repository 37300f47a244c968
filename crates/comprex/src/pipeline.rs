//! Comprex end to end (Velez et al., Comprex, §III–§V), from a system spec to a model with a
//! local model per method.
//!
//! 1. [`explore`]: build the program ([`instrumented::build`]), instrument it for dynamic taint
//!    tracking with data-flow and control-flow taints (`llvm::instrument_taint`, the
//!    `runtime::taint_library` library), and run the iterative analysis (`comprex::explore`,
//!    Algorithm 1) with the spec's *analysis* workload: each run reports its decisions' taints,
//!    which refine the partition of the configuration space per region, until every subspace
//!    of every region has been explored;
//! 2. [`select_probes`] and [`fold`] (optional): methods that are hot and tiny in calibration
//!    runs get no profiler probe, and their decisions refine the partitions of the probed
//!    methods their time goes to (`docs/profiler.md`, "Which methods get a probe");
//! 3. [`instrument_methods`]: the regions' methods get enter/exit calls, linked with the
//!    sampling profiler (`runtime::profiler`): self time is charged to the innermost open
//!    region, everything else to the base;
//! 4. [`measure_configurations`]: the explored configurations are measured with the real
//!    workload through the results store (repetitions, timeouts, resumable);
//! 5. [`overhead_correction`] (optional, §V.A): k of them also natively, and a line from
//!    profiled to native time;
//! 6. [`build_model`] / [`build_model_corrected`]: per region, the measured times grouped by
//!    subspace and averaged become local models (`comprex::build_model`), composed into the
//!    global model; trivial terms and regions whose partition may be incomplete (§V.D) are
//!    reported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::{ComprexModel, Exploration, ExploreSettings, Granularity, ModelSettings, Pick};
use ir::InstKind;
use llvm::{RegionProbe, TaintStats};
use measure::campaign::{CampaignReport, Event, RegionOutput};
use measure::runner;
use measure::store::{RegionMeasurement, Store};
use measure::{SystemSpec, Workload};
use space::{Configuration, ValidConfigurations};

use instrumented::{BASE, Built, Settings};

use crate::Error;

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
    let built = instrumented::build(spec, settings, "Comprex")?;
    let program = &built.translation.program;
    let names: Vec<String> = spec.space.names().iter().map(|n| n.to_string()).collect();
    let bitcode = settings.work_dir.join("program.taint.bc");
    let stats = llvm::instrument_taint(
        &built.ssa,
        program,
        &built.translation.positions,
        &built.sources.by_index(),
        &names,
        &bitcode,
    )?;
    let library =
        runtime::taint_library::build(&settings.clang, &settings.work_dir.join("runtime"))?;
    let (binary, _) = instrumented::link(spec, settings, &bitcode, library, &[], "comprex-taint")?;
    spec.prepare_workload(workload)?;
    let valid = ValidConfigurations::new(&spec.space)?;
    let out = settings.work_dir.join("taint-run.json");
    let started = Instant::now();
    let exploration = crate::explore(
        &valid,
        explore_settings(granularity, max_runs),
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

fn explore_settings(granularity: Granularity, max_runs: usize) -> ExploreSettings {
    ExploreSettings {
        granularities: vec![granularity],
        start: None,
        pick: Pick::Fewest,
        max_runs,
    }
}

/// One taint run of `binary` in a configuration on `workload`: its decision records.
fn taint_runner<'a>(
    spec: &'a SystemSpec,
    binary: &'a Path,
    workload: &'a Workload,
    out: &'a Path,
    on_run: &'a mut dyn FnMut(&str, usize),
) -> impl FnMut(&Configuration) -> Result<Vec<crate::DecisionRecord>, String> + 'a {
    move |config: &Configuration| {
        let text = spec.space.format_configuration(config);
        let mut invocation = spec
            .invocation_of(binary.to_path_buf(), config, workload)
            .map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(out);
        invocation.env.push((
            runtime::taint_library::ENV_VAR.into(),
            out.display().to_string(),
        ));
        let result = runner::run(&invocation);
        if !result.outcome.is_ok() {
            let last = result.stderr_tail.lines().last().unwrap_or("");
            return Err(format!(
                "the taint-instrumented program {}{}",
                result.outcome.describe(),
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            ));
        }
        let json = std::fs::read_to_string(out)
            .map_err(|e| format!("no taint records ({}: {e})", out.display()))?;
        let run: crate::TaintRun = serde_json::from_str(&json)
            .map_err(|e| format!("{}: malformed taint records: {e}", out.display()))?;
        on_run(&text, run.decisions.len());
        Ok(run.decisions)
    }
}

/// A build with method-level regions linked to the sampling profiler.
pub struct Profiled {
    pub binary: PathBuf,
    pub variant: String,
    /// Region id → method name.
    pub methods: BTreeMap<u32, String>,
}

/// Stage 2: enter/exit calls around the methods of the explored regions, linked with the
/// sampling profiler. Time in methods without a probe is charged to the innermost probed
/// method on the call stack, or to the base. After [`fold`], the methods left unprobed by
/// [`select_probes`] are no longer regions, so they get no probe.
pub fn instrument_methods(
    spec: &SystemSpec,
    settings: &Settings,
    explored: &Explored,
) -> Result<Profiled, Error> {
    instrument_named(spec, settings, explored, "comprex")
}

fn instrument_named(
    spec: &SystemSpec,
    settings: &Settings,
    explored: &Explored,
    approach: &str,
) -> Result<Profiled, Error> {
    let program = &explored.built.translation.program;
    let mut probes = Vec::new();
    let mut ids = BTreeMap::new();
    for region in explored.exploration.regions(Granularity::Method) {
        let Some(f) = program.function_named(&region.id) else {
            continue;
        };
        let func = program.func(f);
        let Some(entry) = func.entry() else { continue };
        let id = probes.len() as u32;
        let ends = func
            .blocks
            .iter()
            .flat_map(|&b| program.block(b).insts.iter().copied())
            .filter(|&i| matches!(program.inst(i).kind, InstKind::Return { .. }))
            .map(ir::ProgramPoint::Before)
            .collect();
        probes.push(RegionProbe {
            id,
            start: vec![ir::ProgramPoint::Before(program.block(entry).insts[0])],
            end: ends,
        });
        ids.insert(id, func.name.clone());
    }
    let bitcode = settings.work_dir.join(format!("program.{approach}.bc"));
    llvm::instrument(
        &explored.built.ssa,
        program,
        &explored.built.translation.positions,
        &probes,
        &bitcode,
    )?;
    let library = runtime::profiler::build(&settings.clang, &settings.work_dir.join("runtime"))?;
    let (binary, variant) = instrumented::link(
        spec,
        settings,
        &bitcode,
        library,
        runtime::profiler::LINK_FLAGS,
        approach,
    )?;
    Ok(Profiled {
        binary,
        variant,
        methods: ids,
    })
}

/// Which method regions get a probe ([`select_probes`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeSettings {
    /// A method whose self time per call is below this many nanoseconds in the calibration
    /// runs is *hot and tiny*: a probe (a call on entry and on every return, ~5 ns, and the
    /// inlining it prevents) would inflate and distort its time, so it gets none.
    pub min_ns_per_entry: f64,
    /// …if it was entered at least this many times in one calibration run (rarely called
    /// methods keep their probe: it costs nothing).
    pub min_entries: u64,
    /// Sampling period of the calibration runs (short runs on the analysis workload), µs.
    pub period_us: u64,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        ProbeSettings {
            min_ns_per_entry: 100.0,
            min_entries: 1000,
            period_us: 20,
        }
    }
}

/// A method region left without a probe.
#[derive(Clone, Debug, PartialEq)]
pub struct DroppedProbe {
    pub method: String,
    /// Most entries in one calibration run.
    pub entries: u64,
    /// Self time per entry over all calibration runs (ns).
    pub ns_per_entry: f64,
    /// The probed methods its time (and its decisions) go to: the innermost probed
    /// callers in the call graph.
    pub into: Vec<String>,
}

/// The result of [`select_probes`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeSelection {
    /// Methods that get enter/exit probes.
    pub probed: Vec<String>,
    pub dropped: Vec<DroppedProbe>,
    /// Hot tiny methods that keep their probe because some call path reaches an entry point
    /// without passing a probed method (their time would go to the base).
    pub kept: Vec<String>,
    /// Calibration runs made (0: the cached calibration of the same build was reused).
    pub calibration_runs: usize,
}

impl ProbeSelection {
    /// Every method region probed (no selection).
    pub fn all(explored: &Explored) -> ProbeSelection {
        ProbeSelection {
            probed: explored
                .exploration
                .regions(Granularity::Method)
                .iter()
                .map(|r| r.id.clone())
                .collect(),
            ..ProbeSelection::default()
        }
    }

    /// The mapping for [`fold`]: each dropped method → the probed methods it is folded into.
    pub fn fold(&self) -> BTreeMap<String, Vec<String>> {
        self.dropped
            .iter()
            .map(|d| (d.method.clone(), d.into.clone()))
            .collect()
    }
}

/// Chooses which method regions to time (Comprex §IV: methods as regions, measured by a
/// sampling profiler that maps the time of every method to the closest region on the call
/// stack). A profiler that samples call stacks costs nothing per call; knobs' profiler
/// needs an enter/exit probe per timed method, and on a method called millions of times
/// for a few nanoseconds each (xz's `lzma_memcmplen`, the price helpers) the probe costs
/// as much as the method and the model learns the probes. So:
///
/// 1. calibration: every method region gets a probe, and the build runs on the analysis
///    workload in every explored configuration with a short sampling period; per method,
///    its entries and its self time per entry;
/// 2. a method entered at least `min_entries` times in a run whose self time per entry is
///    below `min_ns_per_entry` gets no probe;
/// 3. its time then goes to the innermost probed method on the stack, so its decisions
///    must refine the partitions of those methods: the innermost probed callers in the
///    call graph (`analysis::analyse`'s, with indirect calls resolved by points-to) are
///    recorded in [`DroppedProbe::into`] for [`fold`]. A method with a call path from an
///    entry point that passes no probed method keeps its probe (its time would otherwise
///    go to the base, which has no partition).
pub fn select_probes(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    explored: &Explored,
    probe: &ProbeSettings,
) -> Result<ProbeSelection, Error> {
    let calibration = instrument_named(spec, settings, explored, "comprex-calibrate")?;
    let configurations = &explored.exploration.configurations;
    // The calibration is cached beside the builds, keyed by the calibration binary, the
    // workload, the period and the configurations: a rerun then chooses the same probes
    // (sampling noise could otherwise flip a method near the threshold, which would make a
    // new build and a new store variant to measure from scratch).
    let cache = settings.work_dir.join("probe-calibration.tsv");
    let key = format!(
        "{} {} {}us {}",
        calibration.variant,
        workload.name,
        probe.period_us,
        configurations
            .iter()
            .map(|c| format!("[{}]", spec.space.format_configuration(c)))
            .collect::<String>()
    );
    let (seen, calibration_runs) = match read_calibration(&cache, &key) {
        Some(seen) => (seen, 0),
        None => {
            let seen = calibrate(
                spec,
                settings,
                workload,
                &calibration,
                configurations,
                probe,
            )?;
            write_calibration(&cache, &key, &seen);
            (seen, configurations.len())
        }
    };
    let mut candidates: BTreeMap<String, (u64, f64)> = seen
        .iter()
        .filter(|(_, (max, total, seconds))| {
            *max >= probe.min_entries && seconds * 1e9 / (*total as f64) < probe.min_ns_per_entry
        })
        .map(|(m, (max, total, seconds))| (m.clone(), (*max, seconds * 1e9 / *total as f64)))
        .collect();
    let regions: Vec<String> = ProbeSelection::all(explored).probed;

    // Callers in the call graph (direct, and indirect through points-to).
    let program = &explored.built.translation.program;
    let dominance = analysis::ProgramDominance::new(program);
    let influence = analysis::analyse(program, &dominance, &explored.built.sources);
    let callers = |f: ir::FuncId| -> Vec<ir::FuncId> {
        let mut out: Vec<ir::FuncId> = influence.call_graph.callers[f]
            .iter()
            .map(|&i| program.block(program.inst(i).block).func)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    let mut kept = Vec::new();
    loop {
        let probed: BTreeSet<&str> = regions
            .iter()
            .map(String::as_str)
            .filter(|m| !candidates.contains_key(*m))
            .collect();
        // Innermost probed callers of `m`; None if a path reaches an entry point unprobed.
        let absorbers = |m: &str| -> Option<BTreeSet<String>> {
            let f = program.function_named(m)?;
            let mut into = BTreeSet::new();
            let mut visited = BTreeSet::from([f]);
            let mut stack = vec![f];
            while let Some(g) = stack.pop() {
                let up = callers(g);
                if up.is_empty() {
                    return None;
                }
                for c in up {
                    let name = program.func(c).name.as_str();
                    if probed.contains(name) {
                        into.insert(name.to_string());
                    } else if visited.insert(c) {
                        stack.push(c);
                    }
                }
            }
            Some(into)
        };
        let unabsorbed: Vec<String> = candidates
            .keys()
            .filter(|m| absorbers(m).is_none())
            .cloned()
            .collect();
        if unabsorbed.is_empty() {
            let dropped = candidates
                .iter()
                .map(|(m, &(entries, ns))| DroppedProbe {
                    method: m.clone(),
                    entries,
                    ns_per_entry: ns,
                    into: absorbers(m).unwrap_or_default().into_iter().collect(),
                })
                .collect();
            kept.sort();
            return Ok(ProbeSelection {
                probed: probed.into_iter().map(str::to_string).collect(),
                dropped,
                kept,
                calibration_runs,
            });
        }
        for m in unabsorbed {
            candidates.remove(&m);
            kept.push(m);
        }
    }
}

/// Per method of a calibration build: most entries in one run, total entries, total self
/// seconds, over runs in `configurations` on `workload` with a short sampling period.
fn calibrate(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    calibration: &Profiled,
    configurations: &[Configuration],
    probe: &ProbeSettings,
) -> Result<BTreeMap<String, (u64, u64, f64)>, Error> {
    spec.prepare_workload(workload)?;
    let out = settings.work_dir.join("calibration-run.tsv");
    let mut seen: BTreeMap<String, (u64, u64, f64)> = BTreeMap::new();
    for config in configurations {
        let mut invocation = spec.invocation_of(calibration.binary.clone(), config, workload)?;
        let _ = std::fs::remove_file(&out);
        invocation
            .env
            .push((runtime::profiler::ENV_VAR.into(), out.display().to_string()));
        invocation.env.push((
            runtime::profiler::PERIOD_VAR.into(),
            probe.period_us.to_string(),
        ));
        let result = runner::run(&invocation);
        if !result.outcome.is_ok() {
            return Err(Error::Invalid(format!(
                "calibration run of `{}` (probes on every method): the program {}",
                spec.space.format_configuration(config),
                result.outcome.describe()
            )));
        }
        let profile = runtime::profiler::Profile::read(&out)?;
        for (id, t) in &profile.times.regions {
            let Some(name) = calibration.methods.get(id) else {
                continue;
            };
            let e = seen.entry(name.clone()).or_default();
            e.0 = e.0.max(t.entries);
            e.1 += t.entries;
            e.2 += t.self_seconds;
        }
    }
    Ok(seen)
}

fn read_calibration(path: &Path, key: &str) -> Option<BTreeMap<String, (u64, u64, f64)>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != format!("key\t{key}") {
        return None;
    }
    lines
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            match f[..] {
                [m, max, total, seconds] => Some((
                    m.to_string(),
                    (
                        max.parse().ok()?,
                        total.parse().ok()?,
                        seconds.parse().ok()?,
                    ),
                )),
                _ => None,
            }
        })
        .collect()
}

fn write_calibration(path: &Path, key: &str, seen: &BTreeMap<String, (u64, u64, f64)>) {
    let mut text = format!("key\t{key}\n");
    for (m, (max, total, seconds)) in seen {
        text.push_str(&format!("{m}\t{max}\t{total}\t{seconds:e}\n"));
    }
    // A cache: failing to write it only costs a recalibration next time.
    let _ = std::fs::write(path, text);
}

/// Re-partitions after [`select_probes`]: the decisions of each unprobed method refine the
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
    let valid = ValidConfigurations::new(&spec.space)?;
    let mut explorer =
        crate::Explorer::new(&valid, explore_settings(Granularity::Method, max_runs));
    explorer.fold_methods(fold.clone());
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
    explored.fold = fold;
    Ok(new)
}

fn read_profile(path: &Path) -> Result<Vec<RegionMeasurement>, String> {
    let profile = runtime::profiler::Profile::read(path).map_err(|e| e.to_string())?;
    Ok(instrumented::region_measurements(&profile.times))
}

/// Stage 3: measure configurations with the profiled build and the real workload.
pub fn measure_configurations(
    store: &Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    profiled: &Profiled,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(Event),
) -> Result<CampaignReport, Error> {
    Ok(instrumented::measure_instrumented(
        store,
        settings,
        spec,
        workload,
        &profiled.binary,
        &profiled.variant,
        RegionOutput {
            env: runtime::profiler::ENV_VAR.into(),
            read: std::sync::Arc::new(read_profile),
        },
        configurations,
        on_event,
    )?)
}

/// §V.A's optional correction for the profiler's overhead: a line `profiled = a · native + b`
/// fitted to k configurations measured with and without profiling.
#[derive(Clone, Debug, PartialEq)]
pub struct OverheadCorrection {
    pub fit: OverheadFit,
    pub line: runtime::profiler::Linear,
    /// Per configuration used: its text, the profiled build's median and the native
    /// program's median (the spec's metric, seconds).
    pub pairs: Vec<(String, f64, f64)>,
}

impl OverheadCorrection {
    /// As recorded in a model's provenance.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "fit": self.fit.name(),
            "slope": self.line.slope,
            "intercept": self.line.intercept,
            "configurations": self.pairs.iter().map(|(c, p, n)| serde_json::json!({
                "configuration": c, "profiled": p, "native": n,
            })).collect::<Vec<_>>(),
        })
    }
}

/// How the overhead correction's line is fitted to the k pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OverheadFit {
    /// `profiled = a · native`, `a` the median ratio (`runtime::profiler::overhead_ratio`):
    /// robust to a pair disturbed by a busy machine.
    #[default]
    Ratio,
    /// `profiled = a · native + b` by least squares (`runtime::profiler::overhead_correction`).
    Line,
}

impl OverheadFit {
    pub fn name(self) -> &'static str {
        match self {
            OverheadFit::Ratio => "ratio",
            OverheadFit::Line => "line",
        }
    }
}

/// `k` of `configurations`, chosen uniformly at random for a `seed` (ChaCha8; all of them
/// when there are no more than `k`), in their original order.
pub fn choose(configurations: &[Configuration], k: usize, seed: u64) -> Vec<Configuration> {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut picked =
        rand::seq::index::sample(&mut rng, configurations.len(), k.min(configurations.len()))
            .into_vec();
    picked.sort_unstable();
    picked
        .into_iter()
        .map(|i| configurations[i].clone())
        .collect()
}

/// Measures `k` of the profiled configurations (chosen by [`choose`] with `seed`) with and
/// without the profiler and fits the correction (§V.A; the paper uses k = 5 random
/// configurations and a "linear correction"; knobs' default fit is the median ratio,
/// [`OverheadFit`]). Per configuration, one warm-up each, then `repetitions` (the spec's, at
/// least 3) rounds alternating the native program as the spec runs it and the profiled build,
/// profiling on: the two medians of a pair are taken under the same conditions, so the drift
/// of a shared machine between a brute-force campaign and the profiled one does not become
/// the "overhead". These runs are not stored. `on_pair` hears of each pair (configuration,
/// profiled, native). The inner error says why there is no correction (e.g. the spec's
/// program does not exist, or it failed).
#[allow(clippy::too_many_arguments)]
pub fn overhead_correction(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    profiled: &Profiled,
    configurations: &[Configuration],
    k: usize,
    seed: u64,
    fit: OverheadFit,
    on_pair: &mut dyn FnMut(&str, f64, f64),
) -> Result<Result<OverheadCorrection, String>, Error> {
    let native = match spec.program() {
        Ok(p) => std::path::absolute(&p).unwrap_or(p),
        // E.g. the spec's program is built separately and was not: nothing to compare with.
        Err(why) => return Ok(Err(format!("the program as the spec runs it: {why}"))),
    };
    spec.prepare_workload(workload)?;
    let out = settings.work_dir.join("overhead-run.tsv");
    let rounds = (spec.measure.repetitions as usize).max(3);
    let metric = spec.measure.metric;
    let mut pairs = Vec::new();
    for config in choose(configurations, k, seed) {
        let text = spec.space.format_configuration(&config);
        let plain = spec.invocation_of(native.clone(), &config, workload)?;
        let mut with = spec.invocation_of(profiled.binary.clone(), &config, workload)?;
        with.env
            .push((runtime::profiler::ENV_VAR.into(), out.display().to_string()));
        let (mut p, mut n) = (Vec::new(), Vec::new());
        for round in 0..=rounds {
            for (invocation, into) in [(&plain, &mut n), (&with, &mut p)] {
                let result = runner::run(invocation);
                if !result.outcome.is_ok() {
                    return Ok(Err(format!(
                        "`{text}`: {} {}",
                        invocation.program.display(),
                        result.outcome.describe()
                    )));
                }
                if round > 0 {
                    into.push(result.metric(metric));
                }
            }
        }
        let median = |v: &[f64]| stats::median(v).unwrap_or(f64::NAN);
        let (p, n) = (median(&p), median(&n));
        on_pair(&text, p, n);
        pairs.push((text, p, n));
    }
    let points: Vec<(f64, f64)> = pairs.iter().map(|(_, p, n)| (*p, *n)).collect();
    let line = match fit {
        OverheadFit::Ratio => runtime::profiler::overhead_ratio(&points),
        OverheadFit::Line => runtime::profiler::overhead_correction(&points),
    };
    Ok(match line {
        Some(line) => Ok(OverheadCorrection { fit, line, pairs }),
        None if pairs.is_empty() => Err("no configuration to measure".into()),
        None => Err(format!(
            "no positive {} fit to {} pairs",
            fit.name(),
            pairs.len()
        )),
    })
}

/// Per configuration, the median over its profiled runs of the measured time (the spec's
/// metric) minus the profile's total: what the profiler cannot see — the process starting
/// before the profiler's constructor and ending after its destructor (xz: 6–10 ms per run, a
/// quarter of a 30 ms run). It is time outside every region, so it belongs to the base: then
/// the model predicts what is measured. `None` when the metric is not the profiler's clock
/// (wall time and the default wall clock, or cpu and `KNOBS_PROFILE_CLOCK=cpu`).
fn outside_the_profile(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    profiled: &Profiled,
    some: Option<&Configuration>,
) -> Result<Option<BTreeMap<String, f64>>, Error> {
    let Some(config) = some else {
        return Ok(None);
    };
    let env = spec
        .invocation_of(profiled.binary.clone(), config, workload)?
        .env;
    let cpu_clock = env
        .iter()
        .rev()
        .find(|(k, _)| k == runtime::profiler::CLOCK_VAR)
        .is_some_and(|(_, v)| v == "cpu");
    let metric = spec.measure.metric;
    let matches = match metric {
        measure::Metric::Wall => !cpu_clock,
        measure::Metric::Cpu => cpu_clock,
        _ => false,
    };
    if !matches {
        return Ok(None);
    }
    let selection = measure::Selection {
        system: Some(spec.name.clone()),
        spec_hash: Some(spec.hash.clone()),
        workload: Some(workload.name.clone()),
        variant: profiled.variant.clone(),
    };
    let mut profiled_total: BTreeMap<i64, f64> = BTreeMap::new();
    for (_, run, r) in store.region_times(&selection)? {
        *profiled_total.entry(run).or_default() += r.seconds;
    }
    let mut per_config: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in store.runs(&selection)? {
        if let (true, Some(total)) = (run.is_ok(), profiled_total.get(&run.id)) {
            let measured = match metric {
                measure::Metric::Cpu => run.user + run.system_time,
                _ => run.wall,
            };
            per_config
                .entry(run.configuration.clone())
                .or_default()
                .push((measured - total).max(0.0));
        }
    }
    Ok(Some(
        per_config
            .into_iter()
            .filter_map(|(c, v)| Some((c, stats::median(&v)?)))
            .collect(),
    ))
}

/// Stage 4: local models per region from the stored profiles, and the global model.
pub fn build_model(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    explored: &Explored,
    profiled: &Profiled,
    settings: &ModelSettings,
) -> Result<ComprexModel, Error> {
    build_model_corrected(store, spec, workload, explored, profiled, settings, None)
}

/// [`build_model`] with §V.A's overhead correction applied to the region times: each
/// region's time over the slope, the intercept over the slope taken off the base, so the
/// global model predicts `(profiled − b) / a`. The correction is recorded in the model's
/// provenance (`overhead_correction`).
pub fn build_model_corrected(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    explored: &Explored,
    profiled: &Profiled,
    settings: &ModelSettings,
    correction: Option<&OverheadCorrection>,
) -> Result<ComprexModel, Error> {
    let medians = instrumented::median_region_times(store, spec, workload, &profiled.variant)?;
    let outside = outside_the_profile(
        store,
        spec,
        workload,
        profiled,
        explored.exploration.configurations.first(),
    )?;
    let mut region_times = Vec::new();
    for (config, mut regions) in medians {
        let configuration = spec.space.parse_configuration(&config)?;
        if let Some(extra) = outside.as_ref().and_then(|o| o.get(&config)) {
            *regions.entry(BASE.to_string()).or_default() += extra;
        }
        let seconds = regions
            .into_iter()
            .map(|(region, s)| {
                let name = region
                    .strip_prefix('r')
                    .and_then(|id| id.parse::<u32>().ok())
                    .and_then(|id| profiled.methods.get(&id).cloned())
                    .unwrap_or(if region == BASE {
                        BASE.to_string()
                    } else {
                        region
                    });
                (name, s)
            })
            .map(|(name, s)| match correction {
                // (t − b) / a, summed over regions: every region's time over a, and −b/a
                // once, with the base.
                Some(c) if name == BASE => (name, (s - c.line.intercept) / c.line.slope),
                Some(c) => (name, s / c.line.slope),
                None => (name, s),
            })
            .collect();
        region_times.push(crate::RegionTimes {
            configuration,
            seconds,
        });
    }
    let valid = ValidConfigurations::new(&spec.space)?;
    let regions = explored.exploration.regions(explored.granularity);
    let mut model = crate::build_model(&valid, regions, &region_times, settings)?;
    model.file.system = Some(spec.name.clone());
    model.file.metric = Some("wall time (s), from the sampling profiler".into());
    let provenance = &mut model.file.provenance;
    provenance.insert("approach".into(), "comprex".into());
    provenance.insert("variant".into(), profiled.variant.clone().into());
    provenance.insert("workload".into(), workload.name.clone().into());
    provenance.insert(
        "configurations".into(),
        explored.exploration.configurations.len().into(),
    );
    if outside.is_some() {
        provenance.insert("base_includes_time_outside_the_profile".into(), true.into());
    }
    if let Some(c) = correction {
        provenance.insert("overhead_correction".into(), c.to_json());
        model.file.metric = Some(
            "wall time (s), from the sampling profiler, corrected for its overhead (§V.A)".into(),
        );
    }
    if !explored.fold.is_empty() {
        provenance.insert(
            "unprobed_methods".into(),
            serde_json::to_value(&explored.fold).expect("a map of strings serialises"),
        );
    }
    model.file.record_training(
        &spec
            .space
            .options()
            .iter()
            .map(|o| o.name.clone())
            .collect::<Vec<_>>(),
        explored
            .exploration
            .configurations
            .iter()
            .map(|c| spec.space.values(c))
            .collect(),
    );
    Ok(model)
}
