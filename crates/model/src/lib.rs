//! `model`: performance-influence models.
//!
//! An [`InfluenceModel`] is a sum of [`Term`]s, each a coefficient times a product of
//! [`Factor`]s (a binary option, a numeric option's value, or a numeric value indicator):
//! `1.00 + 3.00·A + 3.00·A·B`. This crate predicts with models, composes local models into a
//! global one, converts between the subspace form (one value per combination of a region's
//! options) and the influence form, prunes small terms, and reads and writes the model JSON
//! that other tools rely on ([`ModelFile`], documented in `docs/model-json.md`). Black-box
//! learners that are not linear store regression [`Tree`]s in the model file, and a model
//! may predict ln(performance) ([`Transform::Log`]); [`ModelFile::bind`] predicts with any
//! of them. Options and terms are ranked by their effect: the largest difference they make to
//! the model's prediction between configurations ([`Effects`] over [`Configurations`]),
//! never more than the model's own spread, not by their coefficients; values are printed
//! in a unit that suits them ([`Scale`]).
//!
//! Architecture invariant: models refer to options by name only; this crate knows nothing of
//! constraint reasoning (`space`), programs or measurements.

mod assignment;
mod effects;
mod file;
mod influence;
mod reference;
mod subspace;
mod tree;
mod units;

pub use assignment::{Assignment, Given, KnownValues, assign, parse_assignment, parse_given};
pub use effects::{
    Configurations, Effects, MOST_COMBINATIONS, OptionEffect, unmeasured_warning, warnings,
};
pub use file::{
    BoundModelFile, FORMAT, ModelFile, Region, SourceSpan, Transform, VERSION, predict_csv,
};
pub use influence::{BoundModel, Factor, InfluenceModel, Term, Threshold};
pub use reference::Choice;
pub use subspace::{
    MAX_OPTIONS, influence_from_levels, influence_from_subspaces, subspaces_from_influence,
};
pub use tree::{Node, Tree, importances};
pub use units::{SIGNIFICANT_DIGITS, Scale, is_seconds, plain_number, show_value};

/// Errors of this crate; each message is one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Invalid(String),
    #[error("{path}: {message}")]
    File { path: String, message: String },
}
