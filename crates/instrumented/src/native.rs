//! An instrumented build against the program as the spec runs it: a few configurations run
//! with both, interleaved, so that a model built from the instrumented build's times can be
//! corrected to the native program's (Comprex's §V.A overhead correction), or the native
//! program measured and stored in every measured configuration (the per-configuration
//! corrections of ConfigCrusher and Comprex).

use std::path::Path;

use measure::runner;
use measure::{Metric, SystemSpec, Workload};
use space::Configuration;

use crate::Error;

/// The native program (as the spec runs it) measured in `configurations` and stored like
/// `knobs measure`'s runs, for a correction to its times. The inner error says why there is
/// none: no native program, or a native run that failed.
pub fn measure_in(
    store: &measure::store::Store,
    settings: &crate::Settings,
    spec: &SystemSpec,
    workload: &Workload,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(measure::Event),
) -> Result<Result<measure::campaign::CampaignReport, String>, Error> {
    // E.g. the spec's program is built separately and was not: nothing to compare with.
    if let Err(why) = spec.program() {
        return Ok(Err(format!("the program as the spec runs it: {why}")));
    }
    let measured = settings
        .campaign(spec, workload)
        .run(store, configurations, on_event)?;
    if let Some((config, why)) = measured.failed.first() {
        return Ok(Err(format!(
            "the native program failed in {} configurations, the first `{config}`: {why}",
            measured.failed.len()
        )));
    }
    Ok(Ok(measured))
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

/// One configuration's medians, instrumented and native, by the same metric.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Pair {
    pub configuration: String,
    pub instrumented: f64,
    pub native: f64,
}

/// Runs each of `configurations` with the program as the spec runs it and with `binary`
/// (its environment extended by `env`): one warm-up each, then `rounds` rounds alternating
/// the two, so that the two medians of a pair are taken under the same conditions and the
/// drift of a shared machine between two campaigns does not become the build's cost. The
/// runs are not stored. `metric` reads a run of a configuration (store text); `on_pair`
/// hears of each pair. The inner error says why there are no pairs (the spec's program does
/// not exist, or a run failed).
#[allow(clippy::too_many_arguments)]
pub fn paired_medians(
    spec: &SystemSpec,
    workload: &Workload,
    binary: &Path,
    env: &[(String, String)],
    configurations: &[Configuration],
    rounds: usize,
    metric: &dyn Fn(&str) -> Metric,
    on_pair: &mut dyn FnMut(&Pair),
) -> Result<Result<Vec<Pair>, String>, Error> {
    let native = match spec.program() {
        Ok(p) => std::path::absolute(&p).unwrap_or(p),
        // E.g. the spec's program is built separately and was not: nothing to compare with.
        Err(why) => return Ok(Err(format!("the program as the spec runs it: {why}"))),
    };
    spec.prepare_workload(workload)?;
    let mut pairs = Vec::new();
    for config in configurations {
        let text = spec.space.format_configuration(config);
        let metric = metric(&text);
        let plain = spec.invocation_of(native.clone(), config, workload)?;
        let mut with = spec.invocation_of(binary.to_path_buf(), config, workload)?;
        with.env.extend(env.iter().cloned());
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
        let pair = Pair {
            configuration: text,
            instrumented: median(&p),
            native: median(&n),
        };
        on_pair(&pair);
        pairs.push(pair);
    }
    Ok(Ok(pairs))
}
