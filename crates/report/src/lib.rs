//! `report`: one self-contained HTML page of what matters in a system's performance, from
//! its results store and any models of it (`knobs report`).
//!
//! The page ranks options and terms by their effect, the largest difference each makes to
//! the model's prediction between valid configurations (bars with units, see
//! [`model::Effects`]), lists the interactions, plots each model's predictions against the
//! measurements with each configuration's confidence interval, shows the per-region local
//! models with their function, file and lines (and the source lines themselves when the
//! files are at hand), the measurement noise of every configuration, and, for a store with
//! `[history]` measurements, the values across commits. It works for every approach's
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
mod valid;

use std::path::PathBuf;

pub use data::{Measured, Measurements};
pub use fastest::{MOST_CONFIGURATIONS, fastest};
pub use html::escape;
pub use trace::{chrome_trace, region_names};
pub use valid::{MOST_VALID, effect_configurations, valid_configurations};

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

#[cfg(test)]
mod tests {
    use super::*;
    use measure::Summary;
    use model::{InfluenceModel, ModelFile, Node, Region, Term, Transform, Tree};

    fn measurements() -> Measurements {
        let mut space = space::ConfigSpace::new("toy");
        space.add_binary("A", None, false).unwrap();
        space.add_numeric("level", &[1.0, 5.0]).unwrap();
        let measured = |configuration: &str, values: Vec<f64>, times: &[f64]| Measured {
            configuration: configuration.into(),
            values,
            summary: Summary::of(times).unwrap(),
            runs: times.len(),
            failed: 0,
        };
        Measurements {
            system: "toy".into(),
            spec_hash: "abc".into(),
            store: "knobs.db".into(),
            variant: String::new(),
            metric: "cpu".into(),
            seconds: true,
            space,
            configurations: vec![
                measured("level=1", vec![0.0, 1.0], &[0.010]),
                measured("A,level=1", vec![1.0, 1.0], &[0.030, 0.032]),
                measured("A,level=5", vec![1.0, 5.0], &[0.050, 0.049, 0.052]),
            ],
            variants: vec![("configcrusher:1".into(), 2)],
            history: ["c1", "c2", "c3"]
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let step = if i < 2 { 0.010 } else { 0.020 };
                    (
                        c.to_string(),
                        vec![("level=1".into(), step), ("A,level=1".into(), 0.03)],
                    )
                })
                .collect(),
            builds: Some(measure::store::BuildsSummary {
                builds: 4,
                failed: 1,
                seconds: 12.5,
            }),
        }
    }

    fn models() -> Vec<NamedModel> {
        let terms = InfluenceModel::from_terms([
            Term::new::<&str>(&[], 0.01),
            Term::new(&["A"], 0.02),
            Term::new(&["A", "level"], 0.005),
        ]);
        let mut regions = ModelFile::new(terms.clone());
        regions.regions = vec![Region {
            id: "r0".into(),
            location: None,
            options: vec!["A".into()],
            terms,
        }];
        let mut log = ModelFile::new(InfluenceModel::from_terms([
            Term::new::<&str>(&[], -4.0),
            Term::new(&["A"], 1.0),
        ]));
        log.transform = Transform::Log;
        let tree = ModelFile::from_trees(vec![Tree {
            nodes: vec![
                Node::Split {
                    option: "A".into(),
                    threshold: 0.5,
                    left: 1,
                    right: 2,
                    gain: Some(1.0),
                },
                Node::Leaf { value: 0.01 },
                Node::Leaf { value: 0.04 },
            ],
        }]);
        let constant = ModelFile::new(InfluenceModel::from_terms([Term::new::<&str>(&[], 0.03)]));
        [
            ("regions", regions),
            ("log", log),
            ("tree", tree),
            ("constant", constant),
        ]
        .into_iter()
        .map(|(name, file)| NamedModel {
            name: name.into(),
            file,
        })
        .collect()
    }

    #[test]
    fn every_kind_of_model_and_a_history_render() {
        let page = render(&Input {
            measurements: Some(measurements()),
            models: models(),
            source_dirs: vec![],
        });
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        for absent in ["NaN", "inf ", "inf<", "\"inf", "<script", "http"] {
            assert!(!page.contains(absent), "the page has `{absent}`");
        }
        assert!(page.contains("Most influential option: <strong>A</strong>"));
        // One scatter per model, each with the three configurations.
        assert_eq!(
            page.matches("data-chart=\"predicted-vs-measured\"").count(),
            4
        );
        assert!(page.contains("Warning: the model is a constant"));
        assert!(
            page.contains("×2.718"),
            "the log model's A reads as a factor"
        );
        assert!(page.contains("of the trees&#39; gain") || page.contains("of the trees' gain"));
        let history = &page[page.find("data-chart=\"history\"").unwrap()..];
        let history = &history[..history.find("</svg>").unwrap()];
        assert_eq!(history.matches("<polyline class=\"mark").count(), 2);
        assert!(page.contains("configcrusher:1"));
        assert!(page.contains("4 builds of the build options' values (1 failed), 12.5 s building"));
    }

    #[test]
    fn a_store_alone_and_models_alone_render() {
        let store_only = render(&Input {
            measurements: Some(measurements()),
            ..Input::default()
        });
        assert!(store_only.contains("Largest measured effect: <strong>"));
        assert!(!store_only.contains("data-chart=\"terms\""));
        let models_only = render(&Input {
            models: models(),
            ..Input::default()
        });
        assert!(models_only.contains("data-chart=\"regions\""));
        assert!(!models_only.contains("data-chart=\"noise\""));
    }
}
