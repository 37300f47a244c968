//! `changepoints`: which commits changed performance, and for which options and
//! interactions, measuring a small part of the commits × configurations grid — the
//! approach of Mühlbauer, Apel and Siegmund, "Identifying Software Performance Changes
//! Across Variants and Versions" (ASE 2020), §3.
//!
//! [`detect`] is the search: an initial sample (distance-based configurations, each with
//! its own independently drawn commits), then iterations of
//! 1. each configuration's change-point likelihood over commits ([`likelihood`], eq. 3–5);
//! 2. candidate commits: likelihood peaks above eq. 6, clustered by a kernel density
//!    estimate ([`candidates`]);
//! 3. per candidate commit, the options associated with it by a LASSO (eq. 7), or every
//!    configuration when the intercept dominates ([`association`]);
//! 4. new measurements by exploration and exploitation of commits and configurations
//!    ([`acquisition`], §3.4);
//! 5. the solution cache ([`cache`], §3.5), which also says when to stop.
//!
//! Measurements come from a [`MeasurementSource`]: a synthetic system ([`synthetic`], §4.1.4), a
//! recorded history ([`source::RecordedHistory`]), or a spec's `[history]` built commit by
//! commit and measured through the results store ([`store::StoreSource`]). [`evaluation`] scores a detection against a known truth (F1
//! with a commit tolerance) and runs the synthetic grid of Table 1. [`regions`] takes a
//! detection down to the code: the functions whose instructions moved at each change point,
//! from callgrind profiles the store source makes.
//!
//! Where the paper and its reference implementation differ, [`Settings`] follows the paper
//! and offers the other choice ([`Settings::reference`] selects them all).
//!
//! Architecture invariant: the search knows nothing of processes, builds or the results
//! store; a source is the only way a measurement comes in (only `store.rs` builds and
//! runs, through `history` and `measure`; its profiles for [`regions`] too), and everything
//! random is seeded.

pub mod acquisition;
pub mod association;
pub mod cache;
pub mod candidates;
pub mod evaluation;
mod features;
pub mod likelihood;
pub mod plot;
pub mod regions;
mod search;
pub mod source;
pub mod store;
pub mod synthetic;

pub use association::{Affects, Association};
pub use features::Features;
pub use search::{ChangePoint, Detection, Iteration, SampledConfiguration, Settings, detect};
pub use source::{CommitInfo, MeasurementSource, Observation, RecordedHistory};

/// Everything that can go wrong; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Invalid(String),
    #[error("measuring: {0}")]
    Measure(String),
    #[error(transparent)]
    Space(#[from] space::Error),
}
