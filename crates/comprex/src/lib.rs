//! `comprex`: the language-neutral core of Comprex (Velez et al., ICSE 2021), white-box
//! performance-influence modelling by iterative dynamic taint analysis.
//!
//! A taint run of the program in one configuration reports, for every control-flow decision
//! it reached, which options flowed into the condition (data-flow taint) and which decided
//! whether it was reached (control-flow taint) — a [`DecisionRecord`], documented in
//! `docs/comprex-records.md`. From those records each region (method, control-flow
//! statement or the whole program: a [`Granularity`]) gets a [`Partition`] of the valid
//! configurations into subspaces that take the same path through it; [`explore`] runs
//! Algorithm 1, choosing configurations until every subspace of every region has been run.
//! [`build_model`] turns per-region times measured in those configurations into local
//! performance-influence models and composes them into the global one, and flags regions
//! whose partitions look incomplete (§V.D).
//!
//! Subspaces are BDDs over the space's options (`space::ValidConfigurations`), so
//! constraints are respected and programs with many options stay cheap when few of them
//! matter to a region.
//!
//! [`pipeline`] runs the approach on a C program, one function per stage (taint-instrument
//! and explore, select probes, profile, correct the profiler's overhead, model), and [`run`]
//! is the whole approach as one call returning a [`Report`].
//!
//! Architecture invariant: the algorithms (`explore`, `partition`, `model`) know nothing of
//! LLVM or processes: they work on decision records, runs are callbacks and times are
//! inputs. Only `pipeline` builds, runs and profiles programs, through `instrumented`.
//!
//! Architecture invariant: the final partitions do not depend on the order of
//! configurations (the cross product is commutative and every subspace is eventually run).

mod explore;
mod model;
mod partition;
pub mod pipeline;
mod record;
mod run;

pub use explore::{
    Exploration, ExploreSettings, ExploredSubspace, Explorer, Pick, RegionPartition, cover,
    cover_regions, explore, minimum_cover,
};
pub use model::{
    ComprexModel, ModelSettings, RegionTimes, SuspectRegion, TrivialTerm, build_model,
    influence_form,
};
pub use partition::{CubeLiteral, Encoding, Partition, Subspace};
pub use record::{Decision, DecisionRecord, Granularity, RECORD_FORMAT, RECORD_VERSION, TaintRun};
pub use run::{
    CorrectionReport, ExplorationReport, Options, ProbeReport, RegionPartitionReport, Report,
    Suspect, UnprobedMethod, run,
};

/// Everything that can go wrong; each message is one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown option `{name}` in {context}")]
    UnknownOption { name: String, context: String },
    #[error("configuration `{0}` is not valid under the space's constraints")]
    InvalidConfiguration(String),
    #[error("taint run {run} (configuration `{configuration}`) failed: {cause}")]
    Run {
        run: usize,
        configuration: String,
        cause: String,
    },
    #[error("gave up after {runs} runs with {unexplored} subspaces still unexplored; {largest}")]
    Budget {
        runs: usize,
        unexplored: usize,
        /// The region with the most subspaces, described.
        largest: String,
    },
    #[error("region `{region}`: no measured configuration lies in subspace {subspace}")]
    Unmeasured { region: String, subspace: String },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Instrumented(#[from] instrumented::Error),
    #[error(transparent)]
    Llvm(#[from] llvm::Error),
    #[error(transparent)]
    Runtime(#[from] runtime::Error),
    #[error(transparent)]
    Measure(#[from] measure::Error),
    #[error(transparent)]
    Model(#[from] ::model::Error),
    #[error(transparent)]
    Space(#[from] space::Error),
}
