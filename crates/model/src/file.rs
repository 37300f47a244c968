//! The model JSON file: global terms plus per-region local models, optional regression trees
//! and a target transform (see docs/model-json.md).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::assignment::Given;
use crate::influence::{BoundModel, InfluenceModel};
use crate::tree::{BoundTree, Tree};

/// Value of the `format` field: identifies a knobs model file.
pub const FORMAT: &str = "knobs-model";
/// Version of the format this build writes and reads.
pub const VERSION: u32 = 1;

/// Where a region lives in the source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceSpan {
    pub file: String,
    /// First and last line, inclusive, 1-based.
    pub lines: [u32; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
}

/// A code region with its local model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Region {
    pub id: String,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceSpan>,
    /// The options that influence the region.
    pub options: Vec<String>,
    pub terms: InfluenceModel,
}

/// What the model's terms and trees predict: the performance itself, or its natural
/// logarithm (then a prediction is `exp` of their sum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transform {
    #[default]
    Identity,
    Log,
}

impl Transform {
    pub fn is_identity(&self) -> bool {
        *self == Transform::Identity
    }

    /// Maps a value of the modelled scale back to performance.
    pub fn inverse(&self, raw: f64) -> f64 {
        match self {
            Transform::Identity => raw,
            Transform::Log => raw.exp(),
        }
    }
}

/// A model file. `terms` is the global model; for white-box models it equals the sum of the
/// regions' local models plus the base (time outside every region). Tree models (CART,
/// random forests) keep their trees in `trees`: the prediction is the sum of the terms plus
/// the mean of the trees, mapped back through `transform`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelFile {
    pub format: String,
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// What the model predicts and in which unit, e.g. "wall time (s)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    pub terms: InfluenceModel,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<Region>,
    /// Regression trees whose mean is added to the terms (one for CART, many for a forest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trees: Vec<Tree>,
    /// `log`: terms and trees predict ln(performance).
    #[serde(default, skip_serializing_if = "Transform::is_identity")]
    pub transform: Transform,
    /// How the model was made (approach, learner, sample, seed); free-form.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub provenance: serde_json::Map<String, serde_json::Value>,
}

impl ModelFile {
    /// Records the configurations the model was built from (trained on, or measured), as
    /// `provenance.training = {"columns": [options…], "rows": [[values…], …]}` with each
    /// option's value (0/1, or the numeric value), so that an evaluation can leave them out.
    pub fn record_training(&mut self, columns: &[String], rows: Vec<Vec<f64>>) {
        self.provenance.insert(
            "training".into(),
            serde_json::json!({ "columns": columns, "rows": rows }),
        );
    }

    pub fn new(terms: InfluenceModel) -> Self {
        ModelFile {
            format: FORMAT.into(),
            version: VERSION,
            system: None,
            metric: None,
            terms,
            regions: vec![],
            trees: vec![],
            transform: Transform::Identity,
            provenance: Default::default(),
        }
    }

    /// A model made of regression trees (their mean is the prediction).
    pub fn from_trees(trees: Vec<Tree>) -> Self {
        ModelFile {
            trees,
            ..ModelFile::new(InfluenceModel::new())
        }
    }

    /// Whether the model is a plain sum of terms on the performance scale, so that the terms
    /// alone are the model (true for every model but tree models and transformed ones).
    pub fn is_influence_model(&self) -> bool {
        self.trees.is_empty() && self.transform.is_identity()
    }

    /// Every option the model mentions (terms and trees), sorted.
    pub fn options(&self) -> Vec<&str> {
        let mut names = self.terms.options();
        names.extend(self.trees.iter().flat_map(|t| t.options()));
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Resolves the model against column names once, for fast prediction of many rows.
    pub fn bind<S: AsRef<str>>(&self, columns: &[S]) -> Result<BoundModelFile, Error> {
        let index: BTreeMap<&str, usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_ref(), i))
            .collect();
        Ok(BoundModelFile {
            terms: self.terms.bind(columns)?,
            trees: self
                .trees
                .iter()
                .map(|t| t.bind(&index))
                .collect::<Result<_, _>>()?,
            transform: self.transform,
        })
    }

    /// A global model composed from a base model and regions' local models.
    pub fn compose(base: InfluenceModel, regions: Vec<Region>) -> Self {
        let mut parts = vec![&base];
        parts.extend(regions.iter().map(|r| &r.terms));
        let terms = InfluenceModel::sum(parts);
        ModelFile {
            regions,
            ..ModelFile::new(terms)
        }
    }

    /// Refuses to answer for another system: an error naming both when the model records a
    /// system other than `system` (`shown`: the model's path).
    pub fn check_system(&self, system: &str, shown: &str) -> Result<(), Error> {
        match &self.system {
            Some(own) if own != system => Err(Error::File {
                path: shown.into(),
                message: format!("a model of `{own}`, not of `{system}`"),
            }),
            _ => Ok(()),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("model serialises")
    }

    pub fn from_json(text: &str, shown: &str) -> Result<Self, Error> {
        let file: ModelFile = serde_json::from_str(text).map_err(|e| Error::File {
            path: shown.into(),
            message: e.to_string(),
        })?;
        if file.format != FORMAT {
            return Err(Error::File {
                path: shown.into(),
                message: format!("`format` is `{}`, expected `{FORMAT}`", file.format),
            });
        }
        if file.version != VERSION {
            return Err(Error::File {
                path: shown.into(),
                message: format!(
                    "model format version {} is not supported (this knobs reads {VERSION})",
                    file.version
                ),
            });
        }
        for (i, tree) in file.trees.iter().enumerate() {
            tree.check().map_err(|e| Error::File {
                path: shown.into(),
                message: format!("tree {i}: {e}"),
            })?;
        }
        Ok(file)
    }

    pub fn load(path: &Path) -> Result<Self, Error> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::File {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        Self::from_json(&text, &shown)
    }

    pub fn save(&self, path: &Path) -> Result<(), Error> {
        std::fs::write(path, self.to_json() + "\n").map_err(|e| Error::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }
}

/// A model file bound to columns: predicts the performance of a row of option values.
pub struct BoundModelFile {
    terms: BoundModel,
    trees: Vec<BoundTree>,
    transform: Transform,
}

impl BoundModelFile {
    pub fn predict(&self, row: &[f64]) -> f64 {
        let mut raw = self.terms.predict(row);
        if !self.trees.is_empty() {
            raw += self.trees.iter().map(|t| t.predict(row)).sum::<f64>() / self.trees.len() as f64;
        }
        self.transform.inverse(raw)
    }
}

/// Reads configurations as CSV (a header of option names; a row per configuration) and
/// writes them back with a final `prediction` column, each row's options and values given
/// to `predict`, which answers the prediction and its warnings (the checks every input
/// path shares). Every option in `required` (those the model uses) must be a column: a CSV
/// lacking one is more likely a mistake than a choice to leave it off. Returns the
/// warnings, each after `FILE:LINE: `.
pub fn predict_csv(
    input: impl Read,
    shown: &str,
    required: &[&str],
    output: impl Write,
    mut predict: impl FnMut(&Given) -> Result<(f64, Vec<String>), Error>,
) -> Result<Vec<String>, Error> {
    let err = |line: u64, message: String| Error::File {
        path: if line == 0 {
            shown.to_string()
        } else {
            format!("{shown}:{line}")
        },
        message,
    };
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(input);
    let header = reader.headers().map_err(|e| err(1, e.to_string()))?.clone();
    if header.iter().all(str::is_empty) {
        return Err(err(
            0,
            "the CSV is empty: it needs a header of option names and a row per configuration"
                .into(),
        ));
    }
    let columns: Vec<&str> = header.iter().collect();
    if let Some(twice) = columns
        .iter()
        .enumerate()
        .find(|(i, c)| columns[..*i].contains(c))
    {
        return Err(err(1, format!("column `{}` appears twice", twice.1)));
    }
    if let Some(missing) = required.iter().find(|o| !columns.contains(o)) {
        return Err(err(
            1,
            format!("the model uses option `{missing}`, which the CSV has no column for"),
        ));
    }
    let mut writer = csv::Writer::from_writer(output);
    let io = |e: csv::Error| err(0, e.to_string());
    let mut out_header: Vec<&str> = columns.clone();
    out_header.push("prediction");
    writer.write_record(&out_header).map_err(io)?;
    // Each warning once, at its first line, with how many more rows it applies to.
    let mut warnings: Vec<(String, u64, usize)> = Vec::new();
    let mut rows = 0;
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => err(
                    line,
                    format!("row has {len} fields but the header has {expected_len}"),
                ),
                _ => err(line, e.to_string()),
            }
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let given = record
            .iter()
            .zip(&columns)
            .map(|(cell, column)| {
                let value = cell.parse().map_err(|_| {
                    err(
                        line,
                        format!("`{cell}` is not a number (column `{column}`)"),
                    )
                })?;
                Ok((column.to_string(), value))
            })
            .collect::<Result<Given, Error>>()?;
        let (prediction, said) = predict(&given).map_err(|e| err(line, e.to_string()))?;
        for w in said {
            match warnings.iter_mut().find(|(text, ..)| *text == w) {
                Some(seen) => seen.2 += 1,
                None => warnings.push((w, line, 0)),
            }
        }
        let mut fields: Vec<String> = record.iter().map(str::to_string).collect();
        fields.push(crate::units::plain_number(prediction));
        writer.write_record(&fields).map_err(io)?;
        rows += 1;
    }
    let mut said: Vec<String> = warnings
        .into_iter()
        .map(|(w, line, more)| match more {
            0 => format!("{shown}:{line}: {w}"),
            n => format!("{shown}:{line}: {w} (and in {n} more rows)"),
        })
        .collect();
    if rows == 0 {
        said.push(format!(
            "{shown}: no configurations: the CSV has a header and no rows"
        ));
    }
    writer.flush().map_err(|e| err(0, e.to_string()))?;
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Factor, Node, Term};

    #[test]
    fn json_round_trips_with_regions() {
        let r1 = Region {
            id: "r1".into(),
            location: Some(SourceSpan {
                file: "main.c".into(),
                lines: [3, 9],
                function: Some("main".into()),
            }),
            options: vec!["A".into(), "C".into()],
            terms: InfluenceModel::from_terms([
                Term::new(&["A"], 3.0),
                Term::new(&["A", "C"], 3.0),
            ]),
        };
        let r2 = Region {
            id: "r2".into(),
            location: None,
            options: vec!["A".into(), "B".into()],
            terms: InfluenceModel::from_terms([Term::new(&["A", "B"], 3.0)]),
        };
        let base = InfluenceModel::from_terms([
            Term::new::<&str>(&[], 1.0),
            Term::from_factors(vec![Factor::Equals("level".into(), 6.0)], 0.25),
        ]);
        let mut file = ModelFile::compose(base, vec![r1, r2]);
        file.system = Some("example".into());
        assert_eq!(
            file.terms.to_string(),
            "1.00 + 3.00·A + 3.00·A·B + 3.00·A·C + 0.25·level=6"
        );
        let json = file.to_json();
        assert!(
            json.contains("\"options\": [\n        \"A\",\n        \"C\"\n      ]"),
            "{json}"
        );
        assert!(
            json.contains("\"lines\": [\n        3,\n        9\n      ]"),
            "{json}"
        );
        assert_eq!(ModelFile::from_json(&json, "m.json").unwrap(), file);
    }

    #[test]
    fn rejects_other_files() {
        assert!(
            ModelFile::from_json("{}", "m.json")
                .unwrap_err()
                .to_string()
                .starts_with("m.json: missing field")
        );
        let other = r#"{"format":"x","version":1,"terms":[]}"#;
        assert!(
            ModelFile::from_json(other, "m.json")
                .unwrap_err()
                .to_string()
                .contains("expected `knobs-model`")
        );
        let bad_factor =
            r#"{"format":"knobs-model","version":1,"terms":[{"options":["a=x"],"value":1}]}"#;
        assert!(ModelFile::from_json(bad_factor, "m.json").is_err());
    }

    fn step_tree(low: f64, high: f64) -> Tree {
        Tree {
            nodes: vec![
                Node::Split {
                    option: "level".into(),
                    threshold: 4.5,
                    left: 1,
                    right: 2,
                    gain: Some(2.0),
                },
                Node::Leaf { value: low },
                Node::Leaf { value: high },
            ],
        }
    }

    #[test]
    fn tree_models_round_trip_and_predict() {
        let mut file = ModelFile::from_trees(vec![step_tree(1.0, 3.0), step_tree(2.0, 4.0)]);
        file.provenance
            .insert("learner".into(), serde_json::json!("rf:trees=2"));
        let json = file.to_json();
        assert!(json.contains("\"trees\""), "{json}");
        assert!(
            !json.contains("transform"),
            "identity is not written: {json}"
        );
        let back = ModelFile::from_json(&json, "m.json").unwrap();
        assert_eq!(back, file);
        assert!(!back.is_influence_model());
        assert_eq!(back.options(), vec!["level"]);
        let bound = back.bind(&["x", "level"]).unwrap();
        assert_eq!(bound.predict(&[0.0, 3.0]), 1.5);
        assert_eq!(bound.predict(&[0.0, 6.0]), 3.5);
        assert!(back.bind(&["x"]).is_err());
        let mut out = Vec::new();
        let predict = |g: &Given| {
            let columns: Vec<&str> = g.iter().map(|(c, _)| c.as_str()).collect();
            let values: Vec<f64> = g.iter().map(|(_, v)| *v).collect();
            Ok((back.bind(&columns)?.predict(&values), vec![]))
        };
        predict_csv(
            "level,x\n3,0\n9,1\n".as_bytes(),
            "c.csv",
            &[],
            &mut out,
            predict,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "level,x,prediction\n3,0,1.5\n9,1,3.5\n"
        );
    }

    #[test]
    fn log_transform_exponentiates_terms() {
        let mut file = ModelFile::new(InfluenceModel::from_terms([
            Term::new::<&str>(&[], 1.0),
            Term::new(&["A"], 2.0f64.ln()),
        ]));
        file.transform = Transform::Log;
        let json = file.to_json();
        assert!(json.contains("\"transform\": \"log\""), "{json}");
        let back = ModelFile::from_json(&json, "m.json").unwrap();
        assert_eq!(back.transform, Transform::Log);
        let bound = back.bind(&["A"]).unwrap();
        assert!((bound.predict(&[0.0]) - 1f64.exp()).abs() < 1e-12);
        assert!((bound.predict(&[1.0]) - 2.0 * 1f64.exp()).abs() < 1e-12);
        let bad = json.replace("\"log\"", "\"sqrt\"");
        assert!(ModelFile::from_json(&bad, "m.json").is_err());
    }

    #[test]
    fn rejects_malformed_trees() {
        let text = r#"{"format":"knobs-model","version":1,"terms":[],
            "trees":[{"nodes":[{"option":"A","threshold":0.5,"left":0,"right":1},{"value":1}]}]}"#;
        let e = ModelFile::from_json(text, "m.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.json: tree 0: tree node 0"), "{e}");
    }

    #[test]
    fn predicts_a_csv() {
        let m = ModelFile::new(InfluenceModel::from_terms([
            Term::new::<&str>(&[], 1.0),
            Term::new(&["A"], 3.0),
            Term::new(&["A", "B"], 0.1 + 0.2),
        ]));
        let known = crate::KnownValues::default();
        let predict = |g: &Given| {
            let a = crate::assign(&m, &known, g)?;
            Ok((m.bind(&a.columns)?.predict(&a.values), a.warnings))
        };
        let mut out = Vec::new();
        let warnings = predict_csv(
            "A,B,C\n0,0,1\n1,1,0\n".as_bytes(),
            "c.csv",
            &[],
            &mut out,
            predict,
        )
        .unwrap();
        // Predictions print without floating-point noise: 4.3, not `4.300000000000001`.
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "A,B,C,prediction\n0,0,1,1\n1,1,0,4.3\n"
        );
        // The unknown column C is warned of per row, as for a typed configuration.
        assert_eq!(
            warnings,
            ["c.csv:2: the model does not know option `C`; it is ignored (and in 1 more rows)"]
        );
        let e = predict_csv("A\n2\n".as_bytes(), "c.csv", &[], Vec::new(), predict).unwrap();
        assert!(
            e[0].starts_with("c.csv:2: `A=2` is outside the values"),
            "{e:?}"
        );
        let e = predict_csv(
            "A,B\n0,1\n1\n".as_bytes(),
            "c.csv",
            &[],
            Vec::new(),
            predict,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.csv:3: row has 1 fields but the header has 2"
        );
        let e = predict_csv("".as_bytes(), "c.csv", &[], Vec::new(), predict).unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.csv: the CSV is empty: it needs a header of option names and a row per configuration"
        );
        let w = predict_csv("A,B\n".as_bytes(), "c.csv", &[], Vec::new(), predict).unwrap();
        assert_eq!(
            w,
            ["c.csv: no configurations: the CSV has a header and no rows"]
        );
        let e =
            predict_csv("A,A\n1,0\n".as_bytes(), "c.csv", &[], Vec::new(), predict).unwrap_err();
        assert_eq!(e.to_string(), "c.csv:1: column `A` appears twice");
        let e = predict_csv(
            "A\n1\n".as_bytes(),
            "c.csv",
            &["A", "B"],
            Vec::new(),
            predict,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.csv:1: the model uses option `B`, which the CSV has no column for"
        );
    }
}
