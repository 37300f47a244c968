//! `splat`: SPLat (Kim et al. 2013) as the ConfigCrusher journal (§2.1, §5.2) uses it for
//! performance: run the program, see which options its path reaches and in which order,
//! and re-run it depth-first with the most recently reached unexplored option flipped, until
//! every combination of reached options has run; each explored configuration is measured
//! end to end, and the model is the table of those measurements (a configuration whose
//! path did not reach an option predicts the same for both of its values).
//!
//! Two notions of "reached" ([`Reach`]): SPLat's, the first *read* of an option (a load of
//! where the program keeps it), and SPLat-delayed's, the first time an option's value
//! reaches a *decision* (the journal refactored programs to delay reads; knobs sees it
//! through the dynamic taint instrumentation). Both come from one taint-instrumented build
//! (`instrumented::taint_build`), whose runtime writes the two orders.
//!
//! [`explore`] is the search (runs are callbacks), [`table`] turns explored paths and their
//! times into a model, [`off_path`] measures (in counts) what options change on paths that
//! do not reach them, [`pipeline`] runs the approach on a C program, one function per stage
//! (explore, reached options, measure, times, model), and [`run`] is the whole approach as
//! one call returning a [`Report`].
//!
//! Architecture invariant: the search and the table know nothing of processes or LLVM;
//! only `pipeline` builds and runs programs, through `instrumented` and `measure`.

mod explore;
pub mod off_path;
pub mod pipeline;
mod run;
pub mod table;

pub use explore::{Exploration, Path, Reach, explore};
pub use run::{Options, Report, run};

/// Everything that can go wrong; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Invalid(String),
    /// A run's path did not reach an option an earlier run with the same choices reached:
    /// the program is not deterministic in what it reads, which SPLat assumes.
    #[error(
        "configuration `{configuration}` did not reach option `{missing}`, which an earlier run with the same choices reached: the program's path is not determined by its options (SPLat needs that)"
    )]
    Nondeterministic {
        configuration: String,
        missing: String,
    },
    #[error("run {run} (configuration `{configuration}`): {cause}")]
    Run {
        run: usize,
        configuration: String,
        cause: String,
    },
    #[error(transparent)]
    Instrumented(#[from] instrumented::Error),
    #[error(transparent)]
    Measure(#[from] measure::Error),
    #[error(transparent)]
    Space(#[from] space::Error),
    #[error(transparent)]
    Model(#[from] model::Error),
}
