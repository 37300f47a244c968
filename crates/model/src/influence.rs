//! Performance-influence models: `perf(c) = Σ_t β_t · Π_{f ∈ t} f(c)`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Error;

/// One factor of a term, evaluated on a configuration.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub enum Factor {
    /// The option's value: 0/1 for a binary option, the number for a numeric one (linear).
    Option(String),
    /// 1 when a numeric option takes exactly this value, else 0 (a value indicator).
    Equals(String, f64),
}

impl Factor {
    pub fn option(&self) -> &str {
        match self {
            Factor::Option(n) | Factor::Equals(n, _) => n,
        }
    }

    fn eval(&self, value: f64) -> f64 {
        match self {
            Factor::Option(_) => value,
            Factor::Equals(_, v) => ((value - v).abs() <= 1e-9 * v.abs().max(1.0)) as u8 as f64,
        }
    }
}

impl fmt::Display for Factor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Factor::Option(n) => write!(f, "{n}"),
            Factor::Equals(n, v) => write!(f, "{n}={v}"),
        }
    }
}

impl FromStr for Factor {
    type Err = Error;

    /// `A` or `level=6`.
    fn from_str(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        let bad = || {
            Error::Invalid(format!(
                "`{s}` is not a term factor (expected `NAME` or `NAME=VALUE`)"
            ))
        };
        match s.split_once('=') {
            None if !s.is_empty() => Ok(Factor::Option(s.to_string())),
            None => Err(bad()),
            Some((n, v)) => {
                let v: f64 = v.trim().parse().map_err(|_| bad())?;
                if n.trim().is_empty() || !v.is_finite() {
                    return Err(bad());
                }
                Ok(Factor::Equals(n.trim().to_string(), v))
            }
        }
    }
}

impl Serialize for Factor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Factor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A set of factors (sorted, distinct; empty = the intercept) with its coefficient.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Term {
    pub options: Vec<Factor>,
    pub value: f64,
}

fn cmp_factors(a: &Factor, b: &Factor) -> Ordering {
    a.partial_cmp(b).unwrap_or(Ordering::Equal)
}

impl Term {
    /// A term over binary options (or linear numeric ones) given by name.
    pub fn new<S: AsRef<str>>(options: &[S], value: f64) -> Term {
        Term::from_factors(
            options
                .iter()
                .map(|o| Factor::Option(o.as_ref().to_string()))
                .collect(),
            value,
        )
    }

    pub fn from_factors(mut factors: Vec<Factor>, value: f64) -> Term {
        factors.sort_by(cmp_factors);
        factors.dedup();
        Term {
            options: factors,
            value,
        }
    }

    pub fn degree(&self) -> usize {
        self.options.len()
    }

    /// The term's factors as text, `A·B` (empty for the intercept).
    pub fn label(&self) -> String {
        self.options
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("·")
    }
}

/// Terms with the same factors summed into one, in the order their factors first appear:
/// what adding them one by one gives, without a search through every term per addition
/// (rewriting against reference members can make tens of thousands).
fn merged(terms: impl IntoIterator<Item = Term>) -> Vec<Term> {
    let mut out: Vec<Term> = Vec::new();
    // By label; a label is shared only if factor names themselves hold `·` or `=`.
    let mut index: HashMap<String, Vec<usize>> = HashMap::new();
    for t in terms {
        let t = Term::from_factors(t.options, t.value);
        let same = index.entry(t.label()).or_default();
        match same.iter().find(|&&i| out[i].options == t.options) {
            Some(&i) => out[i].value += t.value,
            None => {
                same.push(out.len());
                out.push(t);
            }
        }
    }
    out
}

/// A sum of terms. Terms are kept with distinct factor sets; the intercept is the term with
/// no factors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InfluenceModel {
    terms: Vec<Term>,
}

/// How small a term must be to be pruned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// |β| below this value.
    Absolute(f64),
    /// |β| below this fraction of the largest |β| in the model (intercept included).
    Relative(f64),
}

impl InfluenceModel {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_terms(terms: impl IntoIterator<Item = Term>) -> Self {
        Self {
            terms: merged(terms),
        }
    }

    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    pub fn intercept(&self) -> f64 {
        self.terms
            .iter()
            .find(|t| t.options.is_empty())
            .map_or(0.0, |t| t.value)
    }

    /// Adds a term, merging it with an existing term over the same factors.
    pub fn add(&mut self, term: Term) {
        let term = Term::from_factors(term.options, term.value);
        match self.terms.iter_mut().find(|t| t.options == term.options) {
            Some(t) => t.value += term.value,
            None => self.terms.push(term),
        }
    }

    /// Composition: the sum of several models (local models into a global one).
    pub fn sum<'a>(models: impl IntoIterator<Item = &'a InfluenceModel>) -> InfluenceModel {
        Self {
            terms: merged(models.into_iter().flat_map(|m| m.terms.iter().cloned())),
        }
    }

    /// Removes terms whose coefficient is below the threshold; the intercept always stays.
    /// Returns the removed terms.
    pub fn prune(&mut self, threshold: Threshold) -> Vec<Term> {
        let limit = match threshold {
            Threshold::Absolute(x) => x,
            Threshold::Relative(r) => {
                r * self.terms.iter().map(|t| t.value.abs()).fold(0.0, f64::max)
            }
        };
        let (keep, drop): (Vec<Term>, Vec<Term>) = self
            .terms
            .drain(..)
            .partition(|t| t.options.is_empty() || t.value.abs() >= limit);
        self.terms = keep;
        drop
    }

    /// Terms in reading order: intercept, then by |β| descending, then by degree and name.
    pub fn sorted_terms(&self) -> Vec<&Term> {
        let mut terms: Vec<&Term> = self.terms.iter().collect();
        terms.sort_by(|a, b| {
            (!a.options.is_empty())
                .cmp(&!b.options.is_empty())
                .then(
                    b.value
                        .abs()
                        .partial_cmp(&a.value.abs())
                        .unwrap_or(Ordering::Equal),
                )
                .then(a.degree().cmp(&b.degree()))
                .then(a.label().cmp(&b.label()))
        });
        terms
    }

    /// The model as a formula, `1.00 + 3.00·A + 3.00·A·B`, with `precision` decimals.
    pub fn format(&self, precision: usize) -> String {
        let mut out = String::new();
        for (i, t) in self.sorted_terms().into_iter().enumerate() {
            let magnitude = if i == 0 { t.value } else { t.value.abs() };
            if i > 0 {
                out.push_str(if t.value < 0.0 { " - " } else { " + " });
            }
            out.push_str(&format!("{magnitude:.precision$}"));
            if !t.options.is_empty() {
                out.push('·');
                out.push_str(&t.label());
            }
        }
        if out.is_empty() {
            out.push_str(&format!("{:.precision$}", 0.0));
        }
        out
    }

    /// Every option the model mentions, sorted.
    pub fn options(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .terms
            .iter()
            .flat_map(|t| t.options.iter().map(Factor::option))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Resolves the model against column names once, for fast prediction of many rows.
    pub fn bind<S: AsRef<str>>(&self, columns: &[S]) -> Result<BoundModel, Error> {
        let index: BTreeMap<&str, usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_ref(), i))
            .collect();
        let terms = self
            .terms
            .iter()
            .map(|t| {
                let factors = t
                    .options
                    .iter()
                    .map(|f| {
                        index
                            .get(f.option())
                            .map(|i| (*i, f.clone()))
                            .ok_or_else(|| {
                                Error::Invalid(format!(
                                    "the model uses option `{}`, which the configurations lack",
                                    f.option()
                                ))
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((factors, t.value))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(BoundModel {
            terms,
            width: columns.len(),
        })
    }
}

impl fmt::Display for InfluenceModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.format(f.precision().unwrap_or(2)))
    }
}

/// A model whose factors point at columns of a row of values.
pub struct BoundModel {
    terms: Vec<(Vec<(usize, Factor)>, f64)>,
    width: usize,
}

impl BoundModel {
    pub fn predict(&self, row: &[f64]) -> f64 {
        debug_assert_eq!(row.len(), self.width);
        self.terms
            .iter()
            .map(|(factors, beta)| {
                beta * factors
                    .iter()
                    .map(|(i, f)| f.eval(row[*i]))
                    .product::<f64>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_example() -> InfluenceModel {
        InfluenceModel::from_terms([
            Term::new(&["A", "C"], 3.0),
            Term::new::<&str>(&[], 1.0),
            Term::new(&["B", "A"], 3.0),
            Term::new(&["A"], 3.0),
        ])
    }

    #[test]
    fn prints_sorted_by_influence() {
        assert_eq!(
            running_example().to_string(),
            "1.00 + 3.00·A + 3.00·A·B + 3.00·A·C"
        );
        let m = InfluenceModel::from_terms([Term::new(&["X"], -0.5), Term::new(&["Y"], 2.0)]);
        assert_eq!(format!("{m:.1}"), "2.0·Y - 0.5·X");
    }

    #[test]
    fn predicts_with_binary_linear_and_indicator_factors() {
        let mut m = running_example();
        m.add(Term::from_factors(
            vec![Factor::Option("level".into())],
            0.5,
        ));
        m.add(Term::from_factors(
            vec![
                Factor::Equals("level".into(), 6.0),
                Factor::Option("A".into()),
            ],
            10.0,
        ));
        let bound = m.bind(&["A", "B", "C", "level"]).unwrap();
        assert_eq!(bound.predict(&[1.0, 1.0, 0.0, 2.0]), 1.0 + 3.0 + 3.0 + 1.0);
        assert_eq!(bound.predict(&[1.0, 0.0, 0.0, 6.0]), 1.0 + 3.0 + 3.0 + 10.0);
        assert!(m.bind(&["A", "B"]).is_err());
    }

    #[test]
    fn composition_and_pruning() {
        let local1 =
            InfluenceModel::from_terms([Term::new(&["A"], 3.0), Term::new(&["A", "C"], 3.0)]);
        let local2 =
            InfluenceModel::from_terms([Term::new(&["A", "B"], 3.0), Term::new(&["A"], 0.01)]);
        let base = InfluenceModel::from_terms([Term::new::<&str>(&[], 1.0)]);
        let mut global = InfluenceModel::sum([&base, &local1, &local2]);
        assert_eq!(global.to_string(), "1.00 + 3.01·A + 3.00·A·B + 3.00·A·C");
        global.add(Term::new(&["D"], 0.02));
        let dropped = global.prune(Threshold::Relative(0.01));
        assert_eq!(dropped, vec![Term::new(&["D"], 0.02)]);
        let dropped = global.prune(Threshold::Absolute(3.005));
        assert_eq!(dropped.len(), 2);
        assert_eq!(global.to_string(), "1.00 + 3.01·A");
    }

    #[test]
    fn terms_over_the_same_factors_merge_in_order_of_first_appearance() {
        let terms = vec![
            Term::new(&["B", "A"], 1.0),
            Term::new::<&str>(&[], 2.0),
            Term::new(&["A", "B"], 0.5),
            Term::from_factors(vec!["level=6".parse().unwrap()], 4.0),
            Term::new(&["C"], 1.0),
            Term::from_factors(vec!["level=6".parse().unwrap()], -1.0),
        ];
        let merged = InfluenceModel::from_terms(terms.clone());
        let mut one_by_one = InfluenceModel::new();
        for t in terms.clone() {
            one_by_one.add(t);
        }
        assert_eq!(merged, one_by_one);
        assert_eq!(
            merged.to_string(),
            "2.00 + 3.00·level=6 + 1.50·A·B + 1.00·C"
        );
        assert_eq!(merged.terms()[0].label(), "A·B");
        let halves = [
            InfluenceModel::from_terms(terms[..3].to_vec()),
            InfluenceModel::from_terms(terms[3..].to_vec()),
        ];
        assert_eq!(InfluenceModel::sum(&halves), merged);
        // Many distinct terms, each twice: one pass, not a search per term.
        let many: Vec<Term> = (0..40_000)
            .map(|i| Term::new(&[format!("o{}", i % 20_000)], 1.0))
            .collect();
        let big = InfluenceModel::from_terms(many);
        assert_eq!(big.terms().len(), 20_000);
        assert!(big.terms().iter().all(|t| t.value == 2.0));
    }
}
