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
//!    [`cheap_cover`] (optional): only the subspaces of the regions with a large enough share
//!    of the calibration runs' time are each measured;
//! 3. [`instrument_methods`]: the regions' methods get enter/exit calls, linked with the
//!    sampling profiler (`runtime::profiler`; its test clock with
//!    `instrumented::Settings::test_clock`, for tests): self time is charged to the innermost
//!    open region, everything else to the base;
//!    [`choose_profile_clock`]: the profiler samples the wall clock or the threads' CPU
//!    clocks, one for every configuration (`auto`: as ConfigCrusher reads region times,
//!    decided from the program's own runs before profiling);
//! 4. [`measure_configurations`]: the explored configurations are measured with the real
//!    workload through the results store (repetitions, timeouts, resumable);
//! 5. [`overhead_correction`] (optional, §V.A): k of them also natively, and a line from
//!    profiled to native time (none on the test clock);
//! 6. [`build_model`] / [`build_model_corrected`]: per region, the measured times grouped by
//!    subspace and averaged become local models (`comprex::build_model`), composed into the
//!    global model; trivial terms and regions whose partition may be incomplete (§V.D) are
//!    reported.

mod callers;
mod cheap;
mod clock;
mod model;
mod overhead;
mod probes;
mod profile;
mod taint;

pub use callers::{CalleePartitions, partition_by_callers};
pub use cheap::{CheapCover, cheap_cover};
pub use clock::{
    DECIDING_RUNS, PROFILE_PERIOD_US, ProfileClock, choose_profile_clock, sampled_by,
    sampling_period,
};
pub use model::{build_model, build_model_corrected};
pub use overhead::{
    OverheadCorrection, OverheadFit, choose, native_correction, overhead_correction,
};
pub use probes::{DroppedProbe, ProbeSelection, ProbeSettings, select_probes};
pub use profile::{Profiled, instrument_methods, measure_configurations};
pub use taint::{ControlTaint, Explored, OneWayBranch, explore, explore_tracking, fold};
