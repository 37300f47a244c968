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
/// its region file adds up to (no counter around the process: the program counts itself).
/// Local runs only: on Slurm it is an error.
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
    // Slurm's collector stores runs without reading their counts into them (yet).
    if matches!(settings.backend, measure::campaign::Backend::Slurm(_)) {
        return Err(Error::Invalid(
            "metric `instructions` with the white-box approaches runs locally only for now \
             (drop --backend slurm)"
                .into(),
        ));
    }
    let campaign = Campaign {
        variant: variant.to_string(),
        program: Some(binary.to_path_buf()),
        regions: Some(output),
        counted_regions: true,
        retry_failed: settings.retry_failed,
        backend: settings.backend.clone(),
        ..Campaign::new(spec, workload)
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
