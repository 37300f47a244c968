//! The counting build (`metric = "instructions"`): the program counts its own LLVM IR
//! instructions (`llvm::instrument_counting`) and the region timers read that count instead
//! of a clock (`runtime::build_counting`; what is counted: docs/region-times.md,
//! "Counting"). Its region "times" are counts, a model built from them is in instructions,
//! and its ground truth is the same count of the whole program.

use std::path::{Path, PathBuf};

use measure::campaign::{Campaign, CampaignReport, Event, RegionOutput};
use measure::{Metric, SystemSpec, Workload};
use space::Configuration;

use crate::{Error, Settings};

/// Whether the spec asks for counted instructions, so the instrumented builds count.
pub fn counts_instructions(spec: &SystemSpec) -> bool {
    spec.measure.metric == Metric::Instructions
}

/// Builds (or reuses) the region timers' counting build in `work_dir/runtime`.
pub fn counting_runtime(settings: &Settings) -> Result<PathBuf, Error> {
    Ok(runtime::build_counting(
        &settings.clang,
        &settings.work_dir.join("runtime"),
    )?)
}

/// `crate::measure_instrumented` of a counting build: each run's instructions are the count
/// its region file adds up to (no counter around the process: the program counts itself),
/// locally or on Slurm.
#[allow(clippy::too_many_arguments)]
pub fn measure_counted(
    store: &measure::store::Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    binary: &Path,
    variant: &str,
    output: RegionOutput,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(Event),
) -> Result<CampaignReport, Error> {
    let campaign = Campaign {
        variant: variant.to_string(),
        program: Some(binary.to_path_buf()),
        regions: Some(output),
        counted_regions: true,
        ..settings.campaign(spec, workload)
    };
    Ok(campaign.run(store, configurations, on_event)?)
}

/// The ground truth a counted model is compared with: the program as the spec builds it,
/// counting its instructions with no region instrumented, linked with the counting runtime
/// (its region file's `total` is the whole program's count, the unit every counted model is
/// in). Returns the binary and its store variant (`counted:<hash>`).
pub fn plain_counting_build(
    spec: &SystemSpec,
    settings: &Settings,
) -> Result<(PathBuf, String), Error> {
    let built = crate::build(spec, settings, "the counted ground truth")?;
    let bitcode = settings.work_dir.join("program.counted.bc");
    let program = &built.translation.program;
    let positions = &built.translation.positions;
    llvm::instrument_counting(&built.ssa, program, positions, &[], &[], &bitcode)?;
    let runtime = counting_runtime(settings)?;
    crate::link(
        spec,
        settings,
        &bitcode,
        runtime,
        runtime::LINK_FLAGS,
        "counted",
        true,
    )
}

/// The configurations measured with [`plain_counting_build`]'s binary: each run's
/// instructions are its whole count, stored under the build's variant, which is returned
/// with the report (read a configuration's count with [`crate::selection`] of it). What a
/// black-box approach measures when the spec counts instructions, so that its model is in
/// the unit of the counted white-box models and of their ground truth.
pub fn measure_plain_counted(
    store: &measure::store::Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(Event),
) -> Result<(CampaignReport, String), Error> {
    let (binary, variant) = plain_counting_build(spec, settings)?;
    let output = RegionOutput {
        env: runtime::ENV_VAR.into(),
        read: std::sync::Arc::new(|path: &Path| {
            let times = runtime::RegionTimes::read(path).map_err(|e| e.to_string())?;
            if !times.counted {
                return Err(format!(
                    "{}: the counting build wrote seconds, not instructions",
                    path.display()
                ));
            }
            comparable_with_its_truth(&times)?;
            Ok(crate::region_measurements(&times))
        }),
    };
    let report = measure_counted(
        store,
        settings,
        spec,
        workload,
        &binary,
        &variant,
        output,
        configurations,
        on_event,
    )?;
    Ok((report, variant))
}

/// Whether a counting build's run is comparable with its ground truth: only threads with
/// region events are counted (from their start to their last event) and the ground truth
/// has no region, so a run in which another thread than the main one entered a region
/// counts instructions its truth does not. An error saying so for such a run.
pub fn comparable_with_its_truth(times: &runtime::RegionTimes) -> Result<(), String> {
    if times.counted && times.threads > 1 {
        return Err(format!(
            "the counting build counts one thread exactly, and {} threads entered regions in \
             this run (docs/region-times.md, \"Counting\")",
            times.threads
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_run_with_more_than_one_counted_thread_is_refused() {
        let mut times = runtime::RegionTimes {
            counted: true,
            threads: 1,
            ..Default::default()
        };
        assert!(comparable_with_its_truth(&times).is_ok());
        times.threads = 2;
        let e = comparable_with_its_truth(&times).unwrap_err();
        assert!(e.contains("2 threads entered regions"), "{e}");
        // Timed runs are not the counting build's concern.
        times.counted = false;
        assert!(comparable_with_its_truth(&times).is_ok());
    }
}
