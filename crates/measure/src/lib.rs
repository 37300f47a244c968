//! `measure`: runs a configurable program and keeps what it measured.
//!
//! A [`SystemSpec`] (`knobs.toml`) says how to run the program in a configuration: the
//! argv template, each option's arguments or environment variables, the workloads,
//! repetitions and timeout. The [`runner`] starts one run directly (no shell) in its own
//! process group and records wall, user and system time and peak memory; a timeout kills
//! the group. A [`Campaign`] measures a list of configurations with repetitions and noise
//! statistics ([`stats`]), committing every run to the SQLite [`Store`] as it finishes, so a
//! killed campaign resumes where it stopped. The store turns back into a [`space::Dataset`]
//! for the learners.
//!
//! Architecture invariant: knows nothing of models or learners; what leaves this crate is
//! runs, summaries and datasets. Nothing here goes through a shell.

pub mod campaign;
pub mod init;
pub mod instructions;
pub mod region_output;
pub mod runner;
pub mod slurm;
pub mod spec;
pub mod stats;
pub mod store;

pub use campaign::{AtCommit, Campaign, CampaignReport, ConfigurationStatus, Event, FailedBuild};
pub use runner::peak_memory_mib;
pub use spec::{
    HistorySpec, Invocation, MeasureSettings, Metric, SystemSpec, Workload, load_space,
};
pub use stats::Summary;
pub use store::{Selection, Store};

/// Everything that can go wrong; each message is one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A malformed spec; `line` and `column` are 1-based, 0 when unknown.
    #[error("{}", spec_location(path, *line, *column, message))]
    Spec {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(transparent)]
    Space(#[from] space::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Store(String),
    #[error("{path}: {cause}")]
    Io { path: String, cause: std::io::Error },
}

fn spec_location(path: &str, line: usize, column: usize, message: &str) -> String {
    match (line, column) {
        (0, _) => format!("{path}: {message}"),
        (l, 0) => format!("{path}:{l}: {message}"),
        (l, c) => format!("{path}:{l}:{c}: {message}"),
    }
}
