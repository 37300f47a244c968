//! `configcrusher`: ConfigCrusher (Velez et al., journal version §3–§5) end to end.
//!
//! Static taint analysis (`analysis`) says which options influence each decision; this crate
//! turns that into regions (Algorithm 2, and their propagation by Algorithms 3 and 4:
//! [`regions`]), compresses the interactions into the configurations to measure (Algorithm 1,
//! [`compress()`]), and runs the pipeline ([`pipeline`], one function per stage): instrument
//! the regions with timers, measure the compressed configurations, and build the global and
//! per-region models. [`run`] is the whole approach as one call returning a [`Report`];
//! [`overhead`] reads the instrumentation's cost (the paper's Table 7) from the store.
//!
//! Architecture invariant: no LLVM types and no process handling of its own: programs are
//! built, linked and measured through `instrumented`, analysed through `analysis`.
//!
//! Architecture invariant: optimising regions never changes the model that measuring them
//! yields: an instruction's optimised influence contains its original influence and is
//! itself an interaction of the program (invariants 1 and 2 of the paper).

pub mod compress;
pub mod confirm;
pub mod overhead;
pub mod pipeline;
pub mod regions;
mod run;

pub use compress::{Compression, compress};
pub use confirm::Confirmation;
pub use pipeline::{
    Analysed, Instrumented, NativeCorrection, analyse, build_model, build_model_with_clocks,
    instrument, measure_configurations, native_correction,
};
pub use regions::{Region, RegionPlan, identify_regions, optimise_influence};
pub use run::{
    AnalysisReport, BuildReport, ConfigurationCount, FixedReport, InstrumentationReport, Options,
    RegionCount, Report, SetAside, Stage, run,
};

/// A measured run that contradicted an inferred fixed setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contradiction {
    pub global: String,
    /// The first configuration that contradicted it, and how.
    pub configuration: String,
    pub message: String,
    /// How many of the measured configurations contradicted it.
    pub configurations: usize,
}

/// Everything that can go wrong; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Invalid(String),
    #[error("unknown option `{name}` in {context}")]
    UnknownOption { name: String, context: String },
    #[error("interaction needs {needed} configurations, more than the limit of {limit}")]
    TooManyCombinations { needed: u128, limit: u128 },
    /// Runs contradicted fixed settings inferred from the observation runs: the analysis
    /// must be redone without them ([`run`] does). Per global: the first configuration that
    /// contradicted it and how.
    #[error("{}", .0.iter().map(|c| format!("configuration `{}`: {}", c.configuration, c.message)).collect::<Vec<_>>().join("; "))]
    InferredFixedContradicted(Vec<Contradiction>),
    #[error(transparent)]
    Instrumented(#[from] instrumented::Error),
    #[error(transparent)]
    Llvm(#[from] llvm::Error),
    #[error(transparent)]
    Analysis(#[from] analysis::Error),
    #[error(transparent)]
    Runtime(#[from] runtime::Error),
    #[error(transparent)]
    Measure(#[from] measure::Error),
    #[error(transparent)]
    Model(#[from] model::Error),
    #[error(transparent)]
    Space(#[from] space::Error),
}
