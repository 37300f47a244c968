//! `family`: family-based performance measurement (Siegmund et al. 2013) on C programs.
//!
//! A C program with run-time options already is a *variant simulator*: run with every
//! feature enabled, it executes every feature's code. Each function is mapped to the
//! feature (option) it implements ([`features`]: source annotations, name patterns in the
//! spec, or derived from the static taint analysis), and so is each block of code the
//! variant simulator marks as a feature's ([`blocks`]: a node of the call tree of its own);
//! the program runs once with every option selected, plus once per member of each set of mutually exclusive alternatives (§3.3),
//! with enter/exit calls on every function linked to the call-tree runtime
//! (`runtime::call_tree`: Algorithm 1, self times per calling context as Equation 2 gives
//! them, recursion folded). [`model`] turns the call trees into the performance-influence
//! model: the features along a call path are the term's prefix (Algorithm 2, simplified by
//! S-Ref and S-Mand), the self times are summed per term (Algorithm 3), with the
//! instrumentation's cost per visit taken out (§5.1). [`unseen`] lists what such a model
//! cannot see — options that change time through data flow or inside a function's own code
//! — so the output says so. [`dependence`] goes beyond the paper's assumption that a
//! function costs the same whatever options ran before (§5.2): it finds the calling contexts
//! whose cost depends on options from further runs and models them per option. With
//! `metric = "instructions"` the variant simulator counts its own IR instructions and the
//! model is in counts. [`pipeline`] runs the approach on a C program, one function per
//! stage, and [`run`] is the whole approach as one call returning a [`Report`].
//!
//! Architecture invariant: `features`, `blocks`, `model`, `dependence` and `unseen` know
//! nothing of processes or LLVM; only `pipeline` builds and runs programs, through `instrumented`, `llvm` and
//! `measure`.

pub mod blocks;
pub mod dependence;
pub mod features;
pub mod model;
pub mod pipeline;
mod run;
pub mod unseen;

pub use features::{FeatureMap, FeatureSource, MappedFunction, feature_map};
pub use run::{Options, Report, run};
pub use unseen::{UnseenInfluence, unseen_influences};

/// Everything that can go wrong; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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
    Space(#[from] space::Error),
    #[error(transparent)]
    Model(#[from] ::model::Error),
}
