//! Which method regions get a profiler probe: calibration runs with every probe on the
//! analysis workload; hot tiny methods get none (`docs/profiler.md`).

use super::profile::{Profiled, instrument_named};
use super::taint::Explored;
use crate::Error;
use crate::Granularity;
use instrumented::Settings;
use measure::runner;
use measure::{SystemSpec, Workload};
use space::Configuration;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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
    /// Per method: its share of the calibration runs' time (its self seconds in all of them
    /// over every method's), what `run::Options::cheap_below` compares.
    pub shares: BTreeMap<String, f64>,
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

    /// The mapping for [`super::taint::fold`]: each dropped method → the probed methods it is folded into.
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
///    recorded in [`DroppedProbe::into`] for [`super::taint::fold`]. A method with a call path from an
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
        .filter(|(_, c)| {
            c.max_entries >= probe.min_entries
                && c.seconds * 1e9 / (c.entries as f64) < probe.min_ns_per_entry
        })
        .map(|(m, c)| {
            (
                m.clone(),
                (c.max_entries, c.seconds * 1e9 / c.entries as f64),
            )
        })
        .collect();
    let all: f64 = seen.values().map(|c| c.seconds).sum();
    let shares = seen
        .iter()
        .map(|(m, c)| (m.clone(), if all > 0.0 { c.seconds / all } else { 0.0 }))
        .collect();
    let regions: Vec<String> = ProbeSelection::all(explored).probed;

    let program = &explored.built.translation.program;
    let calling = call_graph_callers(explored);
    let callers = |f: ir::FuncId| -> Vec<ir::FuncId> { calling[f].clone() };
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
                shares,
            });
        }
        for m in unabsorbed {
            candidates.remove(&m);
            kept.push(m);
        }
    }
}

/// Per function, the functions that call it in the call graph (`analysis::analyse`'s: direct
/// calls, and indirect calls resolved by points-to), sorted.
pub(super) fn call_graph_callers(explored: &Explored) -> ir::IdVec<ir::FuncId, Vec<ir::FuncId>> {
    let program = &explored.built.translation.program;
    let dominance = analysis::ProgramDominance::new(program);
    let influence = analysis::analyse(program, &dominance, &explored.built.sources);
    let mut callers = ir::IdVec::with_default(program.functions.len());
    for (f, calls) in influence.call_graph.callers.iter_enumerated() {
        let mut out: Vec<ir::FuncId> = calls
            .iter()
            .map(|&i| program.block(program.inst(i).block).func)
            .collect();
        out.sort_unstable();
        out.dedup();
        callers[f] = out;
    }
    callers
}

/// One method in the calibration runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Calibrated {
    /// Most entries in one run, and in all.
    max_entries: u64,
    entries: u64,
    /// Self seconds in all runs.
    seconds: f64,
}

/// Per method of a calibration build, over runs in `configurations` on `workload` with a
/// short sampling period.
pub(super) fn calibrate(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    calibration: &Profiled,
    configurations: &[Configuration],
    probe: &ProbeSettings,
) -> Result<BTreeMap<String, Calibrated>, Error> {
    spec.prepare_workload(workload)?;
    let out = settings.work_dir.join("calibration-run.tsv");
    let mut seen: BTreeMap<String, Calibrated> = BTreeMap::new();
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
            e.max_entries = e.max_entries.max(t.entries);
            e.entries += t.entries;
            e.seconds += t.self_seconds;
        }
    }
    Ok(seen)
}

pub(super) fn read_calibration(path: &Path, key: &str) -> Option<BTreeMap<String, Calibrated>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != format!("key\t{key}") {
        return None;
    }
    lines
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            match f[..] {
                [m, max, entries, seconds] => Some((
                    m.to_string(),
                    Calibrated {
                        max_entries: max.parse().ok()?,
                        entries: entries.parse().ok()?,
                        seconds: seconds.parse().ok()?,
                    },
                )),
                _ => None,
            }
        })
        .collect()
}

pub(super) fn write_calibration(path: &Path, key: &str, seen: &BTreeMap<String, Calibrated>) {
    let mut text = format!("key\t{key}\n");
    for (m, c) in seen {
        let (max, entries, seconds) = (c.max_entries, c.entries, c.seconds);
        text.push_str(&format!("{m}\t{max}\t{entries}\t{seconds:e}\n"));
    }
    // A cache: failing to write it only costs a recalibration next time.
    let _ = std::fs::write(path, text);
}
