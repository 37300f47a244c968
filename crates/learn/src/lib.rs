//! `learn`: black-box learners of performance models from measured configurations.
//!
//! Given a [`space::Dataset`] and the rows to train on, [`learn`] fits one of
//!
//! - `stepwise`: forward selection of terms and interactions as SPL Conqueror does it;
//! - `lasso`: L1-penalised least squares over options and their products, λ by
//!   cross-validation;
//! - `cart`: a regression tree, depth and leaf size by cross-validation;
//! - `rf`: a random forest (bagged trees);
//! - `boost`: gradient-boosted shallow trees, depth and rounds by cross-validation;
//! - `divide`: divide and learn — a tree of binary options splits the space into regions,
//!   a stepwise model per region (depth by cross-validation);
//! - `ridge`: ridge regression on every option plus every product of the few options with
//!   the largest effects, higher orders shrunk more (settings by leave-one-out);
//! - `ols:TERMS`: least squares on given terms;
//! - `auto`: the mean of all of these (each at the settings that cross-validate best on the
//!   training sample; from 200 configurations boosting with smaller steps instead of
//!   divide), weighted by their cross-validated errors, on ln(performance) when every
//!   performance is positive,
//!
//! and returns a [`model::ModelFile`]: linear learners give performance-influence terms,
//! trees give trees. [`experiment`] runs the evaluation protocols of the literature (DeepPerf's
//! random samples of growing size; sampling strategies × learners as in Comprex's tables),
//! and models are scored with the workspace's `stats` crate (MAPE, means and confidence
//! intervals). All numerics (least squares, coordinate descent, tree growing) live here,
//! without an ML dependency.
//!
//! Architecture invariant: learners see a dataset as numbers (option values and
//! performance); they never measure, and sampling strategies become rows of the dataset
//! before any learner runs ([`sample_rows`]). Everything random is seeded (ChaCha8), so a
//! learner, a seed and a sample always give the same model.

mod auto;
mod cv;
mod data;
mod divide;
pub mod experiment;
mod fitted;
pub mod lasso;
mod learner;
mod linalg;
pub mod published;
mod ridge;
mod stepwise;
mod tree;

use std::collections::HashSet;

use model::{Factor, ModelFile};
use serde_json::{Value, json};
use space::Dataset;

pub use data::Table;
pub use experiment::sample_rows;
pub use learner::{
    AutoSettings, BoostSettings, CartSettings, DivideSettings, ForestSettings, Kind, LassoSettings,
    Learner, RidgeSettings, StepwiseSettings,
};
pub use linalg::least_squares;

use data::{Basic, TermSpec};
use fitted::Fitted;

/// Everything that can go wrong while learning or evaluating; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A learner that does not parse, or settings out of range.
    #[error("{0}")]
    Learner(String),
    /// Data a learner cannot use (too few rows, zero or non-positive performance, …).
    #[error("{0}")]
    Data(String),
    /// A sample that cannot be drawn from the dataset.
    #[error("{0}")]
    Sample(String),
    #[error(transparent)]
    Space(#[from] space::Error),
    #[error(transparent)]
    Model(#[from] model::Error),
}

/// An error measure that cannot be computed (no configurations, an actual value of 0) is
/// data the learner cannot be scored on.
impl From<stats::Error> for Error {
    fn from(e: stats::Error) -> Error {
        Error::Data(e.to_string())
    }
}

/// What a learner fits: training rows of a table with their targets on the modelled scale.
pub(crate) struct Target<'a> {
    pub table: &'a Table,
    pub rows: Vec<usize>,
    /// The target: performance, or ln(performance) when `log`.
    pub y: Vec<f64>,
    pub actual: Vec<f64>,
    pub log: bool,
}

impl<'a> Target<'a> {
    fn new(table: &'a Table, rows: &[usize], log: bool) -> Target<'a> {
        let actual: Vec<f64> = rows.iter().map(|&r| table.performance[r]).collect();
        let y = actual
            .iter()
            .map(|v| if log { v.ln() } else { *v })
            .collect();
        Target {
            table,
            rows: rows.to_vec(),
            y,
            actual,
            log,
        }
    }

    /// The target restricted to some of its positions.
    fn subset(&self, positions: &[usize]) -> Target<'a> {
        Target {
            table: self.table,
            rows: positions.iter().map(|&p| self.rows[p]).collect(),
            y: positions.iter().map(|&p| self.y[p]).collect(),
            actual: positions.iter().map(|&p| self.actual[p]).collect(),
            log: self.log,
        }
    }

    /// A value on the modelled scale mapped back to performance.
    fn back(&self, raw: f64) -> f64 {
        if self.log { raw.exp() } else { raw }
    }
}

/// A fitted model in the learners' representation, with the settings actually used.
pub struct Trained {
    pub(crate) fitted: Fitted,
    /// The learner with every choice made (λ, depth, leaf, the learner `auto` picked), so
    /// that fitting it again on the same rows gives the same model.
    pub resolved: Learner,
    /// Facts for the model's provenance (cross-validation scores of `auto`'s candidates).
    pub notes: serde_json::Map<String, Value>,
}

impl Trained {
    /// Predicted performance of the given table rows.
    pub fn predict(&self, table: &Table, rows: &[usize]) -> Vec<f64> {
        self.fitted.predict_rows(table, rows)
    }

    /// Number of terms (intercept included) plus leaves of all trees.
    pub fn size(&self) -> usize {
        self.fitted.size()
    }

    /// Number of terms, intercept included (0 for pure tree models).
    pub fn terms(&self) -> usize {
        self.fitted.terms.len()
    }

    /// Number of leaves over all trees.
    pub fn leaves(&self) -> usize {
        self.fitted.size() - self.fitted.terms.len()
    }

    pub fn to_model_file(&self, table: &Table) -> ModelFile {
        self.fitted.to_model_file(table)
    }
}

/// Fits `learner` on the given rows of the table. `seed` drives every random choice
/// (cross-validation folds, forests).
pub fn train(
    table: &Table,
    rows: &[usize],
    learner: &Learner,
    seed: u64,
) -> Result<Trained, Error> {
    check_rows(table, rows)?;
    let needs_relative = !matches!(
        learner.kind,
        Kind::Ols(_) | Kind::Forest(_) | Kind::Cart(CartSettings { tune: false, .. })
    );
    if needs_relative || learner.log {
        let positive = learner.log;
        if let Some(&r) = rows.iter().find(|&&r| {
            let v = table.performance[r];
            v == 0.0 || (positive && v <= 0.0)
        }) {
            return Err(Error::Data(format!(
                "learner `{}` needs {} performance (training row {} has {})",
                learner.name(),
                if positive {
                    "positive (for `log`)"
                } else {
                    "non-zero (it scores by relative error)"
                },
                r + 1,
                table.performance[r]
            )));
        }
    }
    let mut notes = serde_json::Map::new();
    let (fitted, resolved) = fit(table, rows, learner, seed, &mut notes)?;
    Ok(Trained {
        fitted,
        resolved,
        notes,
    })
}

/// Fits a learner; returns the model and the learner with every choice made.
fn fit(
    table: &Table,
    rows: &[usize],
    learner: &Learner,
    seed: u64,
    notes: &mut serde_json::Map<String, Value>,
) -> Result<(Fitted, Learner), Error> {
    let target = Target::new(table, rows, learner.log);
    let resolved = |kind: Kind| Learner {
        kind,
        log: learner.log,
    };
    Ok(match &learner.kind {
        Kind::Stepwise(s) => (stepwise::fit(&target, s, seed), learner.clone()),
        Kind::Lasso(s) => {
            let (fitted, lambda) = lasso::lasso(&target, s, seed);
            let kind = Kind::Lasso(LassoSettings {
                lambda: Some(lambda),
                ..s.clone()
            });
            (fitted, resolved(kind))
        }
        Kind::Cart(s) => {
            let (fitted, depth, leaf) = tree::cart_tuned(&target, s, seed);
            let kind = Kind::Cart(CartSettings {
                tune: false,
                depth,
                leaf,
                ..s.clone()
            });
            (fitted, resolved(kind))
        }
        Kind::Forest(s) => (tree::forest(&target, s, seed), learner.clone()),
        Kind::Boost(s) => {
            let (fitted, depth, rounds) = tree::boost(&target, s, seed);
            let kind = Kind::Boost(BoostSettings {
                tune: false,
                depth,
                rounds,
                ..s.clone()
            });
            (fitted, resolved(kind))
        }
        Kind::Divide(s) => {
            let (fitted, depth) = divide::fit(&target, s, seed);
            let kind = Kind::Divide(DivideSettings {
                tune: false,
                depth,
                ..s.clone()
            });
            (fitted, resolved(kind))
        }
        Kind::Ridge(s) => {
            let (fitted, chosen) = ridge::fit(&target, s);
            (fitted, resolved(Kind::Ridge(chosen)))
        }
        Kind::Ols(terms) => {
            let specs = terms
                .iter()
                .map(|t| term_spec(table, t))
                .collect::<Result<Vec<_>, _>>()?;
            (stepwise::ols(&target, &specs), learner.clone())
        }
        Kind::Mean(members) => {
            let mut models = Vec::new();
            let mut chosen = Vec::new();
            let weights: Vec<f64> = members.iter().map(|(w, _)| *w).collect();
            for (_, member) in members {
                let (f, l) = fit(table, rows, member, seed, notes)?;
                models.push(f);
                chosen.push(l);
            }
            // Each member as learned, so that a reader sees its terms at full weight.
            let recorded: Vec<Value> = models
                .iter()
                .zip(&chosen)
                .map(|(f, l)| {
                    let file = f.to_model_file(table);
                    json!({"learner": l.to_string(), "terms": file.terms, "trees": file.trees.len()})
                })
                .collect();
            notes.insert("members".into(), Value::Array(recorded));
            (
                Fitted::weighted(&models, &weights),
                resolved(Kind::Mean(weights.into_iter().zip(chosen).collect())),
            )
        }
        Kind::Auto(s) => {
            let mut targets = vec![Target::new(table, rows, false)];
            if rows.iter().all(|&r| table.performance[r] > 0.0) {
                targets.push(Target::new(table, rows, true));
            }
            let choice = auto::choose(&targets, s, seed);
            notes.insert("cv_mre".into(), json!(choice.error));
            let mut ranked = choice.candidates.clone();
            ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
            ranked.truncate(10);
            notes.insert(
                "candidates".into(),
                Value::Array(
                    ranked
                        .iter()
                        .map(|(l, e)| json!({"learner": l.to_string(), "cv_mre": e}))
                        .collect(),
                ),
            );
            fit(table, rows, &choice.learner, seed, notes)?
        }
    })
}

fn check_rows(table: &Table, rows: &[usize]) -> Result<(), Error> {
    if rows.is_empty() {
        return Err(Error::Data("no training configurations".into()));
    }
    if let Some(r) = rows.iter().find(|&&r| r >= table.rows.len()) {
        return Err(Error::Data(format!(
            "training row {} is not in the dataset ({} rows)",
            r + 1,
            table.rows.len()
        )));
    }
    if let Some(&r) = rows.iter().find(|&&r| !table.performance[r].is_finite()) {
        return Err(Error::Data(format!(
            "training row {} has no finite performance",
            r + 1
        )));
    }
    Ok(())
}

/// An `ols` term (factors by name) on the table's options.
fn term_spec(table: &Table, factors: &[Factor]) -> Result<TermSpec, Error> {
    let mut term = TermSpec::default();
    for f in factors {
        let j = table.option_index(f.option()).ok_or_else(|| {
            Error::Data(format!(
                "learner `ols`: the dataset has no option `{}`",
                f.option()
            ))
        })?;
        let basic = match f {
            Factor::Option(_) => Basic::Value(j),
            Factor::Equals(_, v) => Basic::Equals(j, *v),
        };
        term = term.times(basic).ok_or_else(|| {
            Error::Data(format!(
                "learner `ols`: option `{}` appears twice in one term",
                f.option()
            ))
        })?;
    }
    Ok(term)
}

/// Learns a model of the dataset from the given rows (indices into `data.configurations`)
/// and returns it as a model file whose provenance records the learner as asked and as
/// resolved, the seed, and the training configurations.
pub fn learn(
    data: &Dataset,
    rows: &[usize],
    learner: &Learner,
    seed: u64,
) -> Result<ModelFile, Error> {
    let table = Table::new(data);
    let trained = train(&table, rows, learner, seed)?;
    let mut file = trained.to_model_file(&table);
    // Alternative group members and value indicators against a reference member: no term
    // for a product no configuration selects, none that the intercept already is.
    let choices = data
        .space
        .exclusive_choices()
        .iter()
        .map(|c| model::Choice::parse(&c.members, c.given.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    file.express_against_reference(&choices);
    file.system = Some(data.space.name.clone()).filter(|s| !s.is_empty());
    file.metric = Some(data.metric.clone()).filter(|s| !s.is_empty());
    let p = &mut file.provenance;
    p.insert("approach".into(), json!("black-box"));
    p.insert("learner".into(), json!(learner.to_string()));
    p.insert("resolved".into(), json!(trained.resolved.to_string()));
    p.insert("seed".into(), json!(seed));
    p.extend(trained.notes);
    file.record_training(
        &table.names,
        rows.iter().map(|&r| table.rows[r].clone()).collect(),
    );
    Ok(file)
}

/// The rows of the table that are among the model's training configurations (read from its
/// provenance); `None` when the model does not record them. A training configuration that
/// names options the table lacks matches nothing.
pub fn training_rows(file: &ModelFile, table: &Table) -> Option<Vec<usize>> {
    let training = file.provenance.get("training")?;
    let columns: Vec<&str> = training
        .get("columns")?
        .as_array()?
        .iter()
        .map(|c| c.as_str())
        .collect::<Option<_>>()?;
    let index: Vec<Option<usize>> = columns.iter().map(|c| table.option_index(c)).collect();
    let recorded: HashSet<Vec<u64>> = training
        .get("rows")?
        .as_array()?
        .iter()
        .filter_map(|r| {
            r.as_array()?
                .iter()
                .map(|v| v.as_f64().map(f64::to_bits))
                .collect()
        })
        .collect();
    Some(
        (0..table.rows.len())
            .filter(|&r| {
                let key: Option<Vec<u64>> = index
                    .iter()
                    .map(|j| j.map(|j| table.rows[r][j].to_bits()))
                    .collect();
                key.is_some_and(|k| recorded.contains(&k))
            })
            .collect(),
    )
}

/// Which configurations a model is evaluated on (`knobs evaluate`).
#[derive(Clone, Debug, PartialEq)]
pub struct EvaluationRows {
    pub rows: Vec<usize>,
    /// `test` (the rows asked for), `untrained` or `all`.
    pub set: &'static str,
    /// Per row of the table, whether the model was built from it; `None` when the model
    /// does not record its training configurations.
    pub trained: Option<Vec<bool>>,
}

impl EvaluationRows {
    /// The rows asked for (`test`), else those the model was not built from, else (with
    /// `all`, or when the model does not record them) every row of the table.
    pub fn choose(
        file: &ModelFile,
        table: &Table,
        test: Option<Vec<usize>>,
        all: bool,
    ) -> EvaluationRows {
        let trained = training_rows(file, table).map(|training| {
            let mut trained = vec![false; table.rows.len()];
            for r in training {
                trained[r] = true;
            }
            trained
        });
        let (rows, set) = match (test, &trained) {
            (Some(rows), _) => (rows, "test"),
            (None, Some(t)) if !all => (untrained(t), "untrained"),
            (None, _) => ((0..table.rows.len()).collect(), "all"),
        };
        EvaluationRows { rows, set, trained }
    }

    /// The rows the model was not built from (`None` when it does not record them).
    pub fn untrained(&self) -> Option<Vec<usize>> {
        self.trained.as_deref().map(untrained)
    }

    /// How many rows the model was built from, if it records them.
    pub fn trained_count(&self) -> Option<usize> {
        self.trained
            .as_ref()
            .map(|t| t.iter().filter(|&&b| b).count())
    }
}

fn untrained(trained: &[bool]) -> Vec<usize> {
    (0..trained.len()).filter(|r| !trained[*r]).collect()
}

/// MAPE (%) of a model file's predictions on the given rows of the table.
pub fn evaluate(file: &ModelFile, table: &Table, rows: &[usize]) -> Result<f64, Error> {
    let bound = file.bind(&table.names)?;
    let predicted: Vec<f64> = rows
        .iter()
        .map(|&r| bound.predict(&table.rows[r]))
        .collect();
    let actual: Vec<f64> = rows.iter().map(|&r| table.performance[r]).collect();
    Ok(stats::mape(&predicted, &actual)?)
}
