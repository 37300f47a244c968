//! The clock the sampling profiler samples (`KNOBS_PROFILE_CLOCK`): wall or the threads' CPU
//! clocks, one for every configuration, chosen as ConfigCrusher reads its region times
//! (`instrumented::auto_clock`). The profiler records one clock per run, so the choice is
//! made before the profiled runs, from the program's own runs.

use crate::Error;
use instrumented::RegionClock;
use instrumented::native::choose;
use measure::runner;
use measure::store::Store;
use measure::{Metric, SystemSpec, Workload};
use serde::Serialize;
use space::Configuration;

/// Configurations run once natively to decide `auto` when the store has no run of the
/// program as the spec runs it.
pub const DECIDING_RUNS: usize = 5;

/// The profiler's clock for a Comprex run, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileClock {
    pub clock: RegionClock,
    /// Why, in a sentence (what `auto` saw, and where).
    pub why: String,
}

impl std::fmt::Display for ProfileClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "profile sampled by the {} clock: {}",
            self.clock.name(),
            self.why
        )
    }
}

impl ProfileClock {
    /// The model's metric text.
    pub fn metric_text(clock: RegionClock) -> &'static str {
        match clock {
            RegionClock::Wall => "wall time (s), from the sampling profiler",
            RegionClock::Cpu => "CPU time (s, user + system), from the sampling profiler",
        }
    }
}

/// The profiler's clock: `forced` if given; else the clock the spec's environment sets
/// (`KNOBS_PROFILE_CLOCK`); else as the spec's metric says — `cpu` the CPU clock, `auto`
/// by `instrumented::auto_clock` over the deciding runs (`measure::Store::deciding_runs`)
/// of the program as the spec runs it (`knobs measure`'s runs in `store`), or when there
/// are none, over a first round: the native program run once in each of
/// [`DECIDING_RUNS`] of `configurations` (chosen with `seed`, not stored) — and any
/// other metric the wall clock.
#[allow(clippy::too_many_arguments)]
pub fn choose_profile_clock(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    configurations: &[Configuration],
    seed: u64,
    forced: Option<RegionClock>,
) -> Result<ProfileClock, Error> {
    let chosen = |clock: RegionClock, why: String| Ok(ProfileClock { clock, why });
    if let Some(clock) = forced {
        return chosen(clock, format!("{} (as asked)", clock.name()));
    }
    if let Some(config) = configurations.first() {
        let env = spec.invocation_of(spec.dir.clone(), config, workload)?.env;
        if let Some(clock) = clock_in(&env) {
            return chosen(
                clock,
                format!(
                    "{} (the spec's environment sets {})",
                    clock.name(),
                    runtime::profiler::CLOCK_VAR
                ),
            );
        }
    }
    match spec.measure.metric {
        Metric::Auto => {}
        Metric::Cpu => return chosen(RegionClock::Cpu, "cpu (as the spec's metric says)".into()),
        m => {
            return chosen(
                RegionClock::Wall,
                format!("wall (the spec's metric is {})", m.name()),
            );
        }
    }
    let deciding = store.deciding_runs(&instrumented::selection(spec, workload, ""))?;
    if !deciding.is_empty() {
        let busy = deciding
            .values()
            .filter(|run| run.auto_metric() == Metric::Cpu)
            .count();
        let clock = instrumented::auto_clock(busy, deciding.len());
        return chosen(
            clock,
            format!(
                "{} (auto: {busy} of {} configurations kept one CPU busy in the stored runs of \
                 the program as the spec runs it)",
                clock.name(),
                deciding.len()
            ),
        );
    }
    let native = match spec.program() {
        Ok(p) => std::path::absolute(&p).unwrap_or(p),
        Err(why) => {
            return chosen(
                RegionClock::Wall,
                format!(
                    "wall (auto: nothing to decide by: no stored run and no native program: \
                     {why})"
                ),
            );
        }
    };
    spec.prepare_workload(workload)?;
    let mut busy = 0;
    let picked = choose(configurations, DECIDING_RUNS, seed);
    for config in &picked {
        let result = runner::run(&spec.invocation_of(native.clone(), config, workload)?);
        if !result.outcome.is_ok() {
            return chosen(
                RegionClock::Wall,
                format!(
                    "wall (auto: the first round's native run of `{}` {})",
                    spec.space.format_configuration(config),
                    result.outcome.describe()
                ),
            );
        }
        if measure::store::auto_metric(
            result.user + result.system_cpu_s,
            result.cpu_wait,
            result.wall,
        ) == Metric::Cpu
        {
            busy += 1;
        }
    }
    let clock = instrumented::auto_clock(busy, picked.len());
    chosen(
        clock,
        format!(
            "{} (auto, decided by a first round before profiling: {busy} of {} configurations \
             run once natively kept one CPU busy)",
            clock.name(),
            picked.len()
        ),
    )
}

/// The clock `KNOBS_PROFILE_CLOCK` sets in an invocation's environment (the profiler's
/// default, wall, when it sets none or another value).
pub(crate) fn clock_in(env: &[(String, String)]) -> Option<RegionClock> {
    env.iter()
        .rev()
        .find(|(k, _)| k == runtime::profiler::CLOCK_VAR)
        .map(|(_, v)| match v.as_str() {
            "cpu" => RegionClock::Cpu,
            _ => RegionClock::Wall,
        })
}

/// The clock the profiled runs of `workload` sample, as their environment says.
pub(crate) fn sampled_clock(
    spec: &SystemSpec,
    workload: &Workload,
    config: &Configuration,
) -> Result<RegionClock, Error> {
    let env = spec.invocation_of(spec.dir.clone(), config, workload)?.env;
    Ok(clock_in(&env).unwrap_or(RegionClock::Wall))
}

/// The runner's metric that reads what the profiler's `clock` samples, for the whole-run
/// times set beside the profiles (the overhead correction, the time outside the profile):
/// the spec's metric, `auto` resolved to the clock.
pub(crate) fn whole_run_metric(spec: &SystemSpec, clock: RegionClock) -> Metric {
    match (spec.measure.metric, clock) {
        (Metric::Auto, RegionClock::Wall) => Metric::Wall,
        (Metric::Auto, RegionClock::Cpu) => Metric::Cpu,
        (m, _) => m,
    }
}

/// The sampling period of Comprex's profiled runs where the workload sets none, in µs: a
/// method's time is its samples × the period, so a run of 30 ms sampled every 1 ms (the
/// profiler's default) gives its few hundred methods 30 samples to share, and the model learns
/// the sampling's noise. At 100 µs the samples cost about 2 % (a signal or a wake-up each),
/// which the native correction takes out with the probes' own cost.
pub const PROFILE_PERIOD_US: u64 = 100;

/// `workload` with the profiler's clock set in its environment (which the spec's and the
/// options' environments give way to), so every profiled run samples `clock`, every
/// [`PROFILE_PERIOD_US`] unless the workload sets its own period.
pub fn sampled_by(workload: &Workload, clock: RegionClock) -> Workload {
    let mut w = workload.clone();
    w.env
        .insert(runtime::profiler::CLOCK_VAR.into(), clock.name().into());
    w.env
        .entry(runtime::profiler::PERIOD_VAR.into())
        .or_insert_with(|| PROFILE_PERIOD_US.to_string());
    w
}

/// The profiler's sampling period on `workload`, in seconds: the resolution of every region
/// time it measures (its environment's `KNOBS_PROFILE_PERIOD_US` where the runtime accepts
/// it, else the runtime's default).
pub fn sampling_period(workload: &Workload) -> f64 {
    let us = workload
        .env
        .get(runtime::profiler::PERIOD_VAR)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|us| (10..=1_000_000).contains(us))
        .unwrap_or(runtime::profiler::DEFAULT_PERIOD_US);
    us as f64 / 1e6
}
