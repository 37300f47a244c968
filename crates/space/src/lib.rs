//! `space`: configuration spaces and how to sample them.
//!
//! A [`ConfigSpace`] holds options (binary, or numeric with explicit discretised values), their
//! tree structure (parent, mandatory, alternative and or-groups) and cross-tree constraints
//! written as propositional [`Formula`]s. [`ValidConfigurations`] compiles a space to a BDD and
//! answers the questions every approach asks: is it satisfiable, how many valid
//! configurations are there, which are they, is this one valid (and if not, which rule it
//! breaks, via [`ConfigSpace::violations`]), and give me one uniformly at random.
//! [`sampling`] builds the samples black-box learners measure, and [`formats`] reads the
//! formats in the field: SPL Conqueror XML, DIMACS, dataset CSV and knobs' own TOML spec.
//!
//! Architecture invariant: this crate knows nothing of measurements, models or programs; a
//! [`Dataset`] pairs configurations with numbers and nothing more.

mod choices;
pub mod formats;
mod formula;
pub mod sampling;
mod space;
mod valid;

pub use choices::ExclusiveChoice;
pub use formats::{Dataset, load_space};
pub use formula::{Formula, FormulaError};
pub use sampling::{Sample, Strategy, TupleCoverage, sample};
pub use space::{
    ConfigOption, ConfigSpace, Configuration, Constraint, Domain, Group, GroupKind,
    NO_OPTION_SELECTED, OptionId, Rule, format_number, shown_configuration,
};
pub use valid::{
    DistanceTable, Literal, ONE_HOT_MAX_VALUES, OptionVars, ValidConfigurations, VariableRole,
};

/// Everything that can go wrong with a space, a file describing one, or a configuration.
/// Each message is one line meant for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown option `{name}` in {context}")]
    UnknownOption { name: String, context: String },
    #[error("{origin}: constraint `{constraint}`: {message}")]
    Constraint {
        constraint: String,
        origin: String,
        message: String,
    },
    #[error("unsatisfiable: {0}")]
    Unsatisfiable(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Config(String),
    /// A malformed file; `line` is 1-based, 0 when unknown.
    #[error("{}", format_location(path, *line, message))]
    Format {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {cause}")]
    Io { path: String, cause: std::io::Error },
}

fn format_location(path: &str, line: usize, message: &str) -> String {
    if line == 0 {
        format!("{path}: {message}")
    } else {
        format!("{path}:{line}: {message}")
    }
}

impl Error {
    pub(crate) fn format(path: &str, line: usize, message: impl Into<String>) -> Error {
        Error::Format {
            path: path.to_string(),
            line,
            message: message.into(),
        }
    }
}
