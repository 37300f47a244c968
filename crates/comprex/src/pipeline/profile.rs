//! The profiled build (enter/exit calls per probed method, linked with the sampling
//! profiler) and its measurement on the real workload through the results store.

use super::taint::Explored;
use crate::Error;
use crate::Granularity;
use instrumented::Settings;
use measure::campaign::{CampaignReport, Event, RegionOutput};
use measure::region_output::ReadRegions;
use measure::store::{RegionMeasurement, Store};
use measure::{SystemSpec, Workload};
use space::Configuration;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A build with method-level regions linked to the sampling profiler.
pub struct Profiled {
    pub binary: PathBuf,
    pub variant: String,
    /// Region id → method name.
    pub methods: BTreeMap<u32, String>,
    /// Method regions that got no probe (no function of that name, or one that cannot be
    /// probed): their time is charged to the calling probed method, whose partition does not
    /// hold their decisions, so the model cannot attribute it to their options.
    pub unprobed: Vec<String>,
    /// Linked with the profiler's test clock ([`Settings::test_clock`]): its profiles hold
    /// the samples the program took with `__knobs_test_sample`, so the runner's real times
    /// mean nothing next to them (no time outside the profile, no overhead correction).
    pub test_clock: bool,
    /// The counting build (`metric = "instructions"`): the probes are region timers reading
    /// the program's own count of its IR instructions, so each method's "time" is its exact
    /// self count and the base holds everything outside a probed method.
    pub counted: bool,
}

/// Stage 2: enter/exit calls around the methods of the explored regions, linked with the
/// sampling profiler ([`Settings::profiler_runtime`]: its test clock with
/// [`Settings::test_clock`], and the program then takes its own samples). Time in methods
/// without a probe is charged to the innermost probed method on the call stack, or to the
/// base. After [`super::taint::fold`], the methods probe selection left unprobed are no longer
/// regions, so they get no probe.
pub fn instrument_methods(
    spec: &SystemSpec,
    settings: &Settings,
    explored: &Explored,
) -> Result<Profiled, Error> {
    instrument_named(spec, settings, explored, "comprex")
}

pub(super) fn instrument_named(
    spec: &SystemSpec,
    settings: &Settings,
    explored: &Explored,
    approach: &str,
) -> Result<Profiled, Error> {
    let program = &explored.built.translation.program;
    let mut probes = Vec::new();
    let mut ids = BTreeMap::new();
    let mut unprobed = Vec::new();
    for region in explored.exploration.regions(Granularity::Method) {
        let id = probes.len() as u32;
        let probe = program
            .function_named(&region.id)
            .and_then(|f| instrumented::function_probe(program, f, id).map(|p| (f, p)));
        match probe {
            Some((f, probe)) => {
                probes.push(probe);
                ids.insert(id, program.func(f).name.clone());
            }
            None => unprobed.push(region.id.clone()),
        }
    }
    let counted = instrumented::counting::counts_instructions(spec);
    let positions = &explored.built.translation.positions;
    let ssa = &explored.built.ssa;
    let (bitcode, library, link_flags, approach) = if counted {
        // The region timers on the program's own instruction count: a probed method's self
        // count is exact (the probes add nothing to it), where a profiler's samples are not.
        let approach = format!("{approach}-counted");
        let bitcode = settings.work_dir.join(format!("program.{approach}.bc"));
        llvm::instrument_counting(ssa, program, positions, &probes, &[], &bitcode)?;
        let library = instrumented::counting::counting_runtime(settings)?;
        (bitcode, library, runtime::LINK_FLAGS, approach)
    } else {
        let bitcode = settings.work_dir.join(format!("program.{approach}.bc"));
        llvm::instrument(ssa, program, positions, &probes, &bitcode)?;
        // The test clock's build with `settings.test_clock`: time is then the samples the
        // program takes with `__knobs_test_sample`, not the machine's.
        let library = settings.profiler_runtime()?;
        let flags = runtime::profiler::LINK_FLAGS;
        (bitcode, library, flags, approach.to_string())
    };
    let (binary, variant) = instrumented::link(
        spec, settings, &bitcode, library, link_flags, &approach, true,
    )?;
    Ok(Profiled {
        binary,
        variant,
        methods: ids,
        unprobed,
        test_clock: settings.test_clock && !counted,
        counted,
    })
}

pub(super) fn read_profile(path: &Path) -> Result<Vec<RegionMeasurement>, String> {
    let profile = runtime::profiler::Profile::read(path).map_err(|e| e.to_string())?;
    Ok(instrumented::region_measurements(&profile.times))
}

/// The counting build's region file: per probed method its self count of instructions.
fn read_counts(path: &Path) -> Result<Vec<RegionMeasurement>, String> {
    let times = runtime::RegionTimes::read(path).map_err(|e| e.to_string())?;
    if !times.counted {
        return Err(format!(
            "{}: the region file is in seconds but the spec measures instructions",
            path.display()
        ));
    }
    instrumented::counting::comparable_with_its_truth(&times)?;
    Ok(instrumented::region_measurements(&times))
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
    // The counting build's region file holds each method's self count; the profiler's, its
    // samples.
    let (measure, read): (Measure, Arc<ReadRegions>) = if profiled.counted {
        (
            instrumented::counting::measure_counted,
            Arc::new(read_counts),
        )
    } else {
        (instrumented::measure_instrumented, Arc::new(read_profile))
    };
    Ok(measure(
        store,
        settings,
        spec,
        workload,
        &profiled.binary,
        &profiled.variant,
        RegionOutput {
            env: runtime::ENV_VAR.into(),
            read,
        },
        configurations,
        on_event,
    )?)
}

/// How a build's configurations are measured (`instrumented::measure_instrumented`, or
/// `instrumented::counting::measure_counted` for the counting build).
type Measure = fn(
    &Store,
    &Settings,
    &SystemSpec,
    &Workload,
    &Path,
    &str,
    RegionOutput,
    &[Configuration],
    &mut dyn FnMut(Event),
) -> Result<CampaignReport, instrumented::Error>;
