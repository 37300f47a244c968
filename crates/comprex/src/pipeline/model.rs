//! Stored profiles → the global model and the per-method local models (with the overhead
//! correction, and the time outside the profile charged to the base).

use super::overhead::OverheadCorrection;
use super::profile::Profiled;
use super::taint::Explored;
use crate::Error;
use crate::{ComprexModel, ModelSettings};
use instrumented::BASE;
use measure::store::Store;
use measure::{SystemSpec, Workload};
use space::{Configuration, ValidConfigurations};
use std::collections::BTreeMap;

/// Per configuration, the time the profiler cannot see
/// ([`instrumented::time_outside_the_runtime`]); `None` when the metric is not the profiler's
/// clock (wall time and the wall clock, or cpu and `KNOBS_PROFILE_CLOCK=cpu`; `auto` is the
/// clock's), and
/// with the profiler's test clock ([`Profiled::test_clock`]: the profiles are the program's
/// counted samples, and the runner's real time minus them would bring the machine's speed
/// and load back into the model).
pub(super) fn outside_the_profile(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    profiled: &Profiled,
    some: Option<&Configuration>,
) -> Result<Option<BTreeMap<String, f64>>, Error> {
    let Some(config) = some else {
        return Ok(None);
    };
    if profiled.test_clock || profiled.counted {
        return Ok(None);
    }
    let clock = super::clock::sampled_clock(spec, workload, config)?;
    let metric = super::clock::whole_run_metric(spec, clock);
    let matches = match metric {
        measure::Metric::Wall => clock == instrumented::RegionClock::Wall,
        measure::Metric::Cpu => clock == instrumented::RegionClock::Cpu,
        _ => false,
    };
    if !matches {
        return Ok(None);
    }
    Ok(Some(instrumented::time_outside_the_runtime(
        store,
        spec,
        workload,
        &profiled.variant,
        metric,
    )?))
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
    let clock = match explored.measured().first() {
        Some(config) => super::clock::sampled_clock(spec, workload, config)?,
        None => instrumented::RegionClock::Wall,
    };
    let measured =
        instrumented::region_times_per_configuration(store, spec, workload, &profiled.variant)?;
    let outside =
        outside_the_profile(store, spec, workload, profiled, explored.measured().first())?;
    let mut region_times = Vec::new();
    for (config, mut regions) in measured {
        let configuration = spec.space.parse_configuration(&config)?;
        if let Some(extra) = outside.as_ref().and_then(|o| o.get(&config)) {
            *regions.entry(BASE.to_string()).or_default() += extra;
        }
        let seconds = regions
            .into_iter()
            // The profiler's own cost (its sampler's CPU time) is no method's.
            .filter(|(region, _)| instrumented::is_program_region(region))
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
                Some(c) if !c.per_configuration.is_empty() => (
                    name,
                    s * c.per_configuration.get(&config).copied().unwrap_or(1.0),
                ),
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
    let metric = if profiled.counted {
        "instructions (the program's own LLVM IR instructions, counted), from the method probes"
    } else {
        super::clock::ProfileClock::metric_text(clock)
    };
    model.file.metric = Some(metric.into());
    let provenance = &mut model.file.provenance;
    provenance.insert("approach".into(), "comprex".into());
    if !profiled.counted {
        provenance.insert("profile_clock".into(), clock.name().into());
    }
    // What one sample is worth: a region's time in one run is a whole number of them (not on
    // the test clock, whose samples are the program's own counted work, nor in counts).
    if !profiled.test_clock && !profiled.counted {
        provenance.insert(
            "profile_period_seconds".into(),
            super::clock::sampling_period(workload).into(),
        );
    }
    provenance.insert("variant".into(), profiled.variant.clone().into());
    provenance.insert("workload".into(), workload.name.clone().into());
    provenance.insert("configurations".into(), explored.measured().len().into());
    if !model.approximated.is_empty() {
        provenance.insert(
            "approximated_subspaces".into(),
            model.approximated.len().into(),
        );
    }
    if outside.is_some() {
        provenance.insert("base_includes_time_outside_the_profile".into(), true.into());
    }
    if let Some(c) = correction {
        provenance.insert("overhead_correction".into(), c.to_json());
        model.file.metric = Some(format!("{metric}, corrected for its overhead (§V.A)"));
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
            .measured()
            .iter()
            .map(|c| spec.space.values(c))
            .collect(),
    );
    Ok(model)
}
