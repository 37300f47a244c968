//! §V.A's correction for the profiler's overhead: k configurations with and without the
//! profiler, interleaved, and the line fitted from profiled to native time.

use std::collections::BTreeMap;

use super::profile::Profiled;
use crate::Error;
use instrumented::Settings;
use measure::{SystemSpec, Workload};
use space::Configuration;

/// §V.A's optional correction for the profiler's overhead: a line `profiled = a · native + b`
/// fitted to k configurations measured with and without profiling.
#[derive(Clone, Debug, PartialEq)]
pub struct OverheadCorrection {
    pub fit: OverheadFit,
    pub line: runtime::profiler::Linear,
    /// Per configuration used: its text, the profiled build's median and the native
    /// program's median (the spec's metric, seconds; `auto` as the profiler's clock).
    pub pairs: Vec<(String, f64, f64)>,
    /// [`OverheadFit::Native`]: per profiled configuration, native over profiled time, by
    /// which each of its region times is scaled; empty for the fitted lines.
    pub per_configuration: std::collections::BTreeMap<String, f64>,
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
    Ratio,
    /// `profiled = a · native + b` by least squares (`runtime::profiler::overhead_correction`).
    Line,
    /// Beyond the paper, as ConfigCrusher corrects: the native program measured in every
    /// profiled configuration (stored like `knobs measure`'s runs), and each configuration's
    /// region times scaled to its native time, so a profiled build that is slower in some
    /// configurations than in others, or profiled runs taken while the machine was busier,
    /// leave no trace in the model. The line reported is the median ratio.
    #[default]
    Native,
}

impl OverheadFit {
    pub fn name(self) -> &'static str {
        match self {
            OverheadFit::Ratio => "ratio",
            OverheadFit::Line => "line",
            OverheadFit::Native => "native",
        }
    }
}

pub use instrumented::native::choose;

/// Why there is no correction on the profiler's test clock.
const TEST_CLOCK: &str = "the profiler's test clock counts the program's samples, not the machine's time: there is no overhead to measure";

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
///
/// With the profiler's test clock ([`Profiled::test_clock`]) there is no correction and
/// nothing runs: the profiled times are the program's counted samples, on which a probe costs
/// nothing, and the only thing to compare them with would be the machine's real time (which
/// would make the model depend on its speed and load). How well the correction works on
/// real hardware is the benchmark runner's business (`cargo run --release -p bench`).
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
    if profiled.test_clock {
        return Ok(Err(TEST_CLOCK.into()));
    }
    let chosen = choose(configurations, k, seed);
    // Both programs by what the profiler samples: CPU time for its CPU clock.
    let mut metrics = std::collections::HashMap::new();
    for config in &chosen {
        let clock = super::clock::sampled_clock(spec, workload, config)?;
        metrics.insert(
            spec.space.format_configuration(config),
            super::clock::whole_run_metric(spec, clock),
        );
    }
    let out = settings.work_dir.join("overhead-run.tsv");
    let env = [(
        runtime::profiler::ENV_VAR.to_string(),
        out.display().to_string(),
    )];
    let rounds = (spec.measure.repetitions as usize).max(3);
    let pairs = match instrumented::native::paired_medians(
        spec,
        workload,
        &profiled.binary,
        &env,
        &chosen,
        rounds,
        &|text| metrics[text],
        &mut |pair| on_pair(&pair.configuration, pair.instrumented, pair.native),
    )? {
        Ok(pairs) => pairs,
        Err(why) => return Ok(Err(why)),
    };
    let pairs: Vec<(String, f64, f64)> = pairs
        .into_iter()
        .map(|p| (p.configuration, p.instrumented, p.native))
        .collect();
    let points: Vec<(f64, f64)> = pairs.iter().map(|(_, p, n)| (*p, *n)).collect();
    let line = match fit {
        OverheadFit::Ratio => runtime::profiler::overhead_ratio(&points),
        OverheadFit::Line | OverheadFit::Native => runtime::profiler::overhead_correction(&points),
    };
    Ok(match line {
        Some(line) => Ok(OverheadCorrection {
            fit,
            line,
            pairs,
            per_configuration: Default::default(),
        }),
        None if pairs.is_empty() => Err("no configuration to measure".into()),
        None => Err(format!(
            "no positive {} fit to {} pairs",
            fit.name(),
            pairs.len()
        )),
    })
}

/// [`OverheadFit::Native`]: the native program (as the spec runs it, with the spec's
/// `workload`) measured in every profiled configuration and stored like `knobs measure`'s
/// runs, each paired with the profiled runs' time (of `sampled`, the workload as the profiler
/// sampled it: its regions and the time outside the profile, by the clock it sampled). The
/// inner error says why there is no correction: the test clock, no native program, a native
/// run that failed.
#[allow(clippy::too_many_arguments)]
pub fn native_correction(
    store: &measure::store::Store,
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    sampled: &Workload,
    profiled: &Profiled,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(measure::Event),
) -> Result<Result<OverheadCorrection, String>, Error> {
    if profiled.test_clock {
        return Ok(Err(TEST_CLOCK.into()));
    }
    if let Err(why) =
        instrumented::native::measure_in(store, settings, spec, workload, configurations, on_event)?
    {
        return Ok(Err(why));
    }
    let regions =
        instrumented::region_times_per_configuration(store, spec, sampled, &profiled.variant)?;
    let outside =
        super::model::outside_the_profile(store, spec, sampled, profiled, configurations.first())?
            .unwrap_or_default();
    let native = instrumented::selection(spec, workload, "");
    // Each metric's native summaries read once, not once per configuration.
    let mut by_metric: BTreeMap<&str, BTreeMap<String, f64>> = BTreeMap::new();
    let mut pairs = Vec::new();
    let mut per_configuration = BTreeMap::new();
    for config in configurations {
        let text = spec.space.format_configuration(config);
        let clock = super::clock::sampled_clock(spec, sampled, config)?;
        let metric = super::clock::whole_run_metric(spec, clock);
        if !by_metric.contains_key(metric.name()) {
            let summaries = store
                .summaries(&native, metric)?
                .into_iter()
                .filter_map(|s| Some((s.configuration, s.summary?.value)))
                .collect();
            by_metric.insert(metric.name(), summaries);
        }
        let Some(&native) = by_metric[metric.name()].get(&text) else {
            continue;
        };
        let Some(times) = regions.get(&text) else {
            continue;
        };
        let profiled_time = times
            .iter()
            .filter(|(region, _)| instrumented::is_program_region(region))
            .map(|(_, seconds)| seconds)
            .sum::<f64>()
            + outside.get(&text).copied().unwrap_or(0.0);
        if native > 0.0 && profiled_time > 0.0 {
            per_configuration.insert(text.clone(), native / profiled_time);
            pairs.push((text, profiled_time, native));
        }
    }
    let ratios: Vec<f64> = pairs.iter().map(|(_, p, n)| p / n).collect();
    let Some(slope) = stats::median(&ratios) else {
        return Ok(Err("no profiled configuration has a native time".into()));
    };
    Ok(Ok(OverheadCorrection {
        fit: OverheadFit::Native,
        line: runtime::profiler::Linear {
            slope,
            intercept: 0.0,
        },
        pairs,
        per_configuration,
    }))
}
