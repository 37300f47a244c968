//! `report`: one self-contained HTML page of what matters in a system's performance, from
//! its results store and any models of it (`knobs report`).
//!
//! The page ranks options and terms by their effect over the options' whole ranges (bars
//! with units), lists the interactions, plots each model's predictions against the
//! measurements with each configuration's confidence interval, shows the per-region local
//! models with their function, file and lines (and the source lines themselves when the
//! files are at hand), the measurement noise of every configuration, and, for a store with
//! `[history]` measurements, the medians across commits. It works for every approach's
//! model file (black-box terms or trees, ConfigCrusher, Comprex, SPLat, family-based), for
//! models alone, and for a store alone.
//!
//! Charts are inline SVG, the style sheet is inline, and there is no script: the file opens
//! from a `file://` URL, loads nothing, and prints.
//!
//! [`fastest`] answers "which configuration is fastest" by the model: every valid
//! configuration of the space predicted (`knobs predict --best`).
//!
//! [`chrome_trace`] writes a configuration's region times as a Chrome trace (`knobs trace`).
//!
//! Architecture invariant: never measures, runs or learns anything and never loads anything
//! from the network; it reads a store ([`Measurements::load`]) and model files, and
//! [`render`] is a pure function of them (and of the source files regions point at).

mod data;
mod fastest;
mod html;
mod sections;
mod svg;
mod trace;

use std::path::PathBuf;

pub use data::{Measured, Measurements};
pub use fastest::{MOST_CONFIGURATIONS, fastest};
pub use html::escape;
pub use trace::{chrome_trace, region_names};

/// Errors of this crate; each message is one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Measure(#[from] measure::Error),
    #[error(transparent)]
    Space(#[from] space::Error),
    #[error(transparent)]
    Model(#[from] model::Error),
    #[error("{0}")]
    Invalid(String),
}

/// A model to report on, with the name it is shown under (its path).
pub struct NamedModel {
    pub name: String,
    pub file: model::ModelFile,
}

/// What a report is made of: measurements, models, or both.
#[derive(Default)]
pub struct Input {
    pub measurements: Option<Measurements>,
    pub models: Vec<NamedModel>,
    /// Directories where the source files regions name are looked up (besides the paths
    /// as written): the spec's directory, usually.
    pub source_dirs: Vec<PathBuf>,
}

/// The report as one HTML document.
pub fn render(input: &Input) -> String {
    let system = input
        .measurements
        .as_ref()
        .map(|m| m.system.clone())
        .or_else(|| input.models.iter().find_map(|m| m.file.system.clone()))
        .unwrap_or_else(|| "a system".into());
    let mut body = String::new();
    body.push_str(&sections::header(input, &system));
    for named in &input.models {
        body.push_str(&sections::model(named, input));
    }
    if let Some(m) = &input.measurements {
        body.push_str(&sections::measurements(m));
        body.push_str(&sections::history(m));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>knobs report: {}</title><style>{}</style></head><body>{body}<p class=\"meta\">Written by knobs {}. Self-contained: no scripts, nothing loaded.</p></body></html>\n",
        escape(&system),
        html::STYLE,
        env!("CARGO_PKG_VERSION")
    )
}
