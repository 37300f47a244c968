//! A learned model in the learners' own representation: fast to evaluate on table rows
//! during cross-validation, and turned into a [`model::ModelFile`] at the end.

use model::{InfluenceModel, ModelFile, Term, Transform};

use crate::data::{Table, TermSpec};
use crate::tree::GrownTree;

/// `Σ terms + mean(trees)`, on the performance scale or (when `log`) on ln(performance) —
/// the same shape as a model file, so that averages of models are models again.
#[derive(Clone, Debug, Default)]
pub struct Fitted {
    /// Terms with coefficients; the intercept is the term without factors.
    pub terms: Vec<(TermSpec, f64)>,
    pub trees: Vec<GrownTree>,
    pub log: bool,
}

impl Fitted {
    pub fn linear(terms: Vec<(TermSpec, f64)>, log: bool) -> Fitted {
        Fitted {
            terms,
            trees: vec![],
            log,
        }
    }

    pub fn forest(trees: Vec<GrownTree>, log: bool) -> Fitted {
        Fitted {
            terms: vec![],
            trees,
            log,
        }
    }

    /// The equally weighted mean of models with the same transform.
    pub fn average(members: &[Fitted]) -> Fitted {
        Fitted::weighted(members, &vec![1.0 / members.len() as f64; members.len()])
    }

    /// `Σ weights[k] · members[k]` for models with the same transform (weights sum to 1).
    pub fn weighted(members: &[Fitted], weights: &[f64]) -> Fitted {
        let log = members[0].log;
        debug_assert!(members.iter().all(|m| m.log == log));
        let mut terms: Vec<(TermSpec, f64)> = Vec::new();
        for (m, w) in members.iter().zip(weights) {
            for (t, b) in &m.terms {
                match terms.iter_mut().find(|(u, _)| u == t) {
                    Some((_, c)) => *c += w * b,
                    None => terms.push((t.clone(), w * b)),
                }
            }
        }
        // mean over all T trees of (s·tree) must give Σ_members w·mean(member's trees), so a
        // member with n trees has its trees scaled by s = T·w / n.
        let total: usize = members.iter().map(|m| m.trees.len()).sum();
        let trees = members
            .iter()
            .zip(weights)
            .flat_map(|(m, w)| {
                let s = total as f64 * w / m.trees.len() as f64;
                m.trees.iter().map(move |t| t.scaled(s))
            })
            .collect();
        Fitted { terms, trees, log }
    }

    /// Predicted performance of the given table rows.
    pub fn predict_rows(&self, table: &Table, rows: &[usize]) -> Vec<f64> {
        let mut raw: Vec<f64> = rows
            .iter()
            .map(|&r| {
                self.terms
                    .iter()
                    .map(|(t, b)| b * t.eval(&table.rows[r]))
                    .sum()
            })
            .collect();
        // Tree by tree, so that one tree's nodes stay in cache for all rows.
        let share = 1.0 / self.trees.len().max(1) as f64;
        let values: Vec<&[f64]> = rows.iter().map(|&r| table.rows[r].as_slice()).collect();
        for tree in &self.trees {
            tree.add_predictions(&values, share, &mut raw);
        }
        if self.log {
            raw.iter_mut().for_each(|v| *v = v.exp());
        }
        raw
    }

    /// Terms (intercept included) plus leaves of all trees.
    pub fn size(&self) -> usize {
        self.terms.len() + self.trees.iter().map(|t| t.leaves()).sum::<usize>()
    }

    pub fn to_model_file(&self, table: &Table) -> ModelFile {
        let mut file = ModelFile::new(InfluenceModel::from_terms(
            self.terms
                .iter()
                .map(|(t, b)| Term::from_factors(t.to_factors(&table.names), *b)),
        ));
        file.trees = self.trees.iter().map(|t| t.to_tree(&table.names)).collect();
        if self.log {
            file.transform = Transform::Log;
        }
        file
    }
}
