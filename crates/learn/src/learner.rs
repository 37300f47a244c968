//! Learners as written on the command line: `NAME[:SETTING,SETTING…]`.
//!
//! | learner | settings (defaults) |
//! |---|---|
//! | `stepwise` | `degree=3` (largest interaction), `improvement=0.01` (stop when rounds lower the cross-validated error by less than this fraction), `rounds=50`, `bags=0` (N: mean of N selections on subsamples), `relative` (least squares weighted by 1/performance²) |
//! | `lasso` | `degree=2` (candidate products up to this many options), `folds=10`, `lambdas=30` (path length), `lambda=X` (fixed λ, no cross-validation) |
//! | `cart` | `tune` (grid search over `depth` × `leaf` by cross-validation, `folds=10`), or fixed `depth=N\|none`, `leaf=N` |
//! | `rf` | `trees=100`, `mtry=N` (options tried per split, at random; default all, i.e. bagged trees), `leaf=1` |
//! | `boost` | `tune` (grid search over `depth` 2–4 × `rounds` 25–200 by cross-validation, `folds=10`), or fixed `depth=N`, `rounds=N`; `rate=0.2` |
//! | `divide` | `tune` (depth 1 or 2 by cross-validation, `folds=10`), or fixed `depth=N`: a tree of binary options divides the space into regions, a stepwise model per region |
//! | `ridge` | `tune` (by leave-one-out), or fixed `interacting=N` (options that interact, ranked by main effect), `main=X` (prior variance of a main effect), `order=X` (factor per further order); `relative` (weighted by 1/performance²) |
//! | `ols:TERMS` | terms separated by `,`, factors by `*`: `ols:A,B,A*B,level=6` (the intercept is always fitted) |
//! | `auto` | `folds=N` (default leave-one-out up to 20 training configurations, 10 up to 100, 5 up to 200, 3 above): the mean of every learner above at its best settings by cross-validation, weighted by their cross-validated errors |
//! | `L1+L2+…` | the mean of several learners' models (all with or all without `log`); `W1*L1+W2*L2+…` weighs them (weights sum to 1) |
//!
//! Every learner takes `log` (or `transform=log`): model ln(performance) instead of the
//! performance (for `ols`, only `transform=log`, since a term may be named `log`).

use std::fmt;
use std::str::FromStr;

use model::Factor;

use crate::Error;

/// A learner with its settings and target transform.
#[derive(Clone, Debug, PartialEq)]
pub struct Learner {
    pub kind: Kind,
    /// Model ln(performance) instead of the performance.
    pub log: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Stepwise(StepwiseSettings),
    Lasso(LassoSettings),
    Cart(CartSettings),
    Forest(ForestSettings),
    Boost(BoostSettings),
    /// Divide and learn: a tree of binary options splits the space, stepwise per region.
    Divide(DivideSettings),
    /// Ridge on main effects plus every product of a few screened options.
    Ridge(RidgeSettings),
    /// Ordinary least squares on these terms (each a list of factors) plus an intercept.
    Ols(Vec<Vec<Factor>>),
    Auto(AutoSettings),
    /// The weighted mean of the members' models (weights positive, summing to 1; the same
    /// transform for all, so the mean is one model).
    Mean(Vec<(f64, Learner)>),
}

/// Forward selection as SPL Conqueror does it (see `stepwise.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct StepwiseSettings {
    /// Largest number of options in a term.
    pub degree: usize,
    /// Stop when a round lowers the cross-validated error by less than this fraction of it.
    pub improvement: f64,
    /// At most this many rounds (terms added).
    pub rounds: usize,
    /// 0: one selection; N: the mean of N selections on random subsamples (4/5 each).
    pub bags: usize,
    /// Fit relative errors: least squares weighted by 1/performance², the loss whose
    /// minimum is closest to that of the mean relative error (not with `log`, whose
    /// differences are relative already).
    pub relative: bool,
}

impl Default for StepwiseSettings {
    fn default() -> Self {
        StepwiseSettings {
            degree: 3,
            improvement: 0.01,
            rounds: 50,
            bags: 0,
            relative: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LassoSettings {
    /// Candidate features: products of up to this many options.
    pub degree: usize,
    pub folds: usize,
    /// Length of the λ path.
    pub lambdas: usize,
    /// A fixed λ (no cross-validation).
    pub lambda: Option<f64>,
}

impl Default for LassoSettings {
    fn default() -> Self {
        LassoSettings {
            degree: 2,
            folds: 10,
            lambdas: 30,
            lambda: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CartSettings {
    /// Grid search over `depth` × `leaf` by cross-validation; otherwise the fixed values.
    pub tune: bool,
    /// Largest depth; `None` = unlimited.
    pub depth: Option<usize>,
    /// Fewest training configurations in a leaf.
    pub leaf: usize,
    pub folds: usize,
}

impl Default for CartSettings {
    fn default() -> Self {
        CartSettings {
            tune: true,
            depth: None,
            leaf: 1,
            folds: 10,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ForestSettings {
    pub trees: usize,
    /// Options tried at each split, drawn at random; `None` = all of them (bagged trees).
    /// Breiman's ⌈options / 3⌉ does worse on configuration spaces, where a few options
    /// decide most of the performance and a split that cannot use them is wasted.
    pub mtry: Option<usize>,
    pub leaf: usize,
}

impl Default for ForestSettings {
    fn default() -> Self {
        ForestSettings {
            trees: 100,
            mtry: None,
            leaf: 1,
        }
    }
}

/// Gradient boosting of shallow trees (see `tree.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct BoostSettings {
    /// Grid search over `depth` × `rounds` by cross-validation; otherwise the fixed values.
    pub tune: bool,
    pub rounds: usize,
    /// Depth of each tree: 2 lets a tree model pairwise interactions, 3 three-way ones.
    pub depth: usize,
    /// Learning rate (shrinkage) of each tree.
    pub rate: f64,
    pub folds: usize,
}

impl Default for BoostSettings {
    fn default() -> Self {
        BoostSettings {
            tune: true,
            rounds: 100,
            depth: 3,
            rate: 0.2,
            folds: 10,
        }
    }
}

/// Divide and learn (see `divide.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct DivideSettings {
    /// Choose the depth, 1 or 2, by cross-validation; otherwise the fixed `depth`.
    pub tune: bool,
    /// Depth of the dividing tree (at most 2^depth regions).
    pub depth: usize,
    pub folds: usize,
}

impl Default for DivideSettings {
    fn default() -> Self {
        DivideSettings {
            tune: true,
            depth: 2,
            folds: 10,
        }
    }
}

/// Hierarchical ridge regression (see `ridge.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct RidgeSettings {
    /// Choose `interacting`, `main` and `order` by leave-one-out; otherwise the fixed values.
    pub tune: bool,
    /// How many options (those with the largest main effects) interact fully.
    pub interacting: usize,
    /// Prior variance of a main effect, relative to the target's variance.
    pub main: f64,
    /// Factor on the prior variance per further order of interaction.
    pub order: f64,
    /// Least squares weighted by 1/performance² (not with `log`).
    pub relative: bool,
}

impl Default for RidgeSettings {
    fn default() -> Self {
        RidgeSettings {
            tune: true,
            interacting: 4,
            main: 3.0,
            order: 1.0,
            relative: false,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutoSettings {
    /// Cross-validation folds; `None` = leave-one-out up to 20 training configurations, 10
    /// up to 100, 5 up to 200, 3 above.
    pub folds: Option<usize>,
}

impl Learner {
    pub const HELP: &'static str = "stepwise | lasso | cart | rf | boost | divide | ridge | ols:TERMS | auto, with settings after `:` (e.g. `lasso:degree=2,log`), or a mean `L1+L2`";

    pub fn new(kind: Kind) -> Learner {
        Learner { kind, log: false }
    }

    /// The learner's name without settings.
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Stepwise(_) => "stepwise",
            Kind::Lasso(_) => "lasso",
            Kind::Cart(_) => "cart",
            Kind::Forest(_) => "rf",
            Kind::Boost(_) => "boost",
            Kind::Divide(_) => "divide",
            Kind::Ridge(_) => "ridge",
            Kind::Ols(_) => "ols",
            Kind::Auto(_) => "auto",
            Kind::Mean(_) => "mean",
        }
    }

    /// Parses a comma-separated list of learners, where settings also use commas:
    /// `stepwise,rf` or `lasso:degree=2,log,rf`. A `;` separates learners unambiguously.
    pub fn parse_list(text: &str) -> Result<Vec<Learner>, Error> {
        if text.contains(';') {
            return text.split(';').map(str::parse).collect();
        }
        let mut parts: Vec<String> = Vec::new();
        for piece in text.split(',') {
            let head = piece.split(':').next().unwrap_or("").trim();
            if parts.is_empty() || NAMES.contains(&head) {
                parts.push(piece.to_string());
            } else {
                let last = parts.last_mut().expect("non-empty");
                last.push(',');
                last.push_str(piece);
            }
        }
        parts.iter().map(|p| p.parse()).collect()
    }
}

const NAMES: [&str; 10] = [
    "stepwise", "lasso", "cart", "rf", "forest", "boost", "divide", "ridge", "ols", "auto",
];

fn number<T: FromStr>(learner: &str, key: &str, value: &str) -> Result<T, Error> {
    value.trim().parse().map_err(|_| {
        Error::Learner(format!(
            "learner `{learner}`: `{key}={value}` is not a valid number"
        ))
    })
}

/// The largest count a learner setting may ask for (trees, rounds, folds, λ values, …):
/// beyond it a typo would allocate gigabytes before learning anything.
const MAX_COUNT: usize = 100_000;
/// The deepest dividing tree: its regions' terms expand into 2^depth products each.
const MAX_DIVIDE_DEPTH: usize = 8;
/// The most options `ridge` lets interact: their products number 2^N.
const MAX_INTERACTING: usize = 12;
/// The largest interaction degree of candidate terms: their number grows as options^degree.
const MAX_DEGREE: usize = 10;

fn positive(learner: &str, key: &str, value: &str) -> Result<usize, Error> {
    let n: usize = number(learner, key, value)?;
    let max = if key == "degree" {
        MAX_DEGREE
    } else {
        MAX_COUNT
    };
    if n == 0 || n > max {
        return Err(Error::Learner(format!(
            "learner `{learner}`: `{key}` must be at least 1 and at most {max}"
        )));
    }
    Ok(n)
}

/// The members of a mean `L1+L2+…` (equal weights) or `W1*L1+W2*L2+…` (weights that sum
/// to 1).
fn mean_members(text: &str) -> Result<Vec<(f64, Learner)>, Error> {
    let mut weights = Vec::new();
    let mut members = Vec::new();
    for part in text.split('+') {
        let part = part.trim();
        // A weight is a number before the first `*` (an `ols` term's `*` comes after `:`).
        let weighted = part
            .split_once('*')
            .filter(|(w, _)| !w.contains(':'))
            .and_then(|(w, rest)| w.trim().parse::<f64>().ok().map(|w| (w, rest)));
        match weighted {
            Some((w, rest)) => {
                if !(w.is_finite() && w > 0.0) {
                    return Err(Error::Learner(format!(
                        "`{text}`: the weight of a member must be a number > 0, not {w}"
                    )));
                }
                weights.push(Some(w));
                members.push(rest.parse::<Learner>()?);
            }
            None => {
                weights.push(None);
                members.push(part.parse::<Learner>()?);
            }
        }
    }
    let weights: Vec<f64> = if weights.iter().all(Option::is_none) {
        vec![1.0 / members.len() as f64; members.len()]
    } else {
        let given: Option<Vec<f64>> = weights.into_iter().collect();
        let given = given.ok_or_else(|| {
            Error::Learner(format!(
                "`{text}`: give every member of a mean a weight, or none"
            ))
        })?;
        let sum: f64 = given.iter().sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Err(Error::Learner(format!(
                "`{text}`: the weights of a mean must sum to 1, not {sum}"
            )));
        }
        given
    };
    Ok(weights.into_iter().zip(members).collect())
}

impl FromStr for Learner {
    type Err = Error;

    fn from_str(text: &str) -> Result<Learner, Error> {
        let text = text.trim();
        if text.contains('+') {
            let members = mean_members(text)?;
            if members
                .iter()
                .any(|(_, m)| matches!(m.kind, Kind::Mean(_) | Kind::Auto(_)))
            {
                return Err(Error::Learner(format!(
                    "`{text}`: a mean of learners cannot contain `auto` or another mean"
                )));
            }
            let log = members[0].1.log;
            if members.iter().any(|(_, m)| m.log != log) {
                return Err(Error::Learner(format!(
                    "`{text}`: the members of a mean must all model the performance or all its log"
                )));
            }
            return Ok(Learner {
                kind: Kind::Mean(members),
                log,
            });
        }
        let (head, rest) = match text.split_once(':') {
            Some((h, r)) => (h.trim(), Some(r)),
            None => (text, None),
        };
        let items: Vec<&str> = rest
            .map(|r| {
                r.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let mut log = false;
        let unknown = |item: &str, expected: &str| {
            Error::Learner(format!(
                "learner `{head}`: unknown setting `{item}`; expected {expected}"
            ))
        };
        let kind = match head {
            "stepwise" => {
                let mut s = StepwiseSettings::default();
                for item in &items {
                    match split_setting(item) {
                        ("degree", Some(v)) => s.degree = positive(head, "degree", v)?,
                        ("improvement", Some(v)) => {
                            s.improvement = number(head, "improvement", v)?;
                            if !(0.0..1.0).contains(&s.improvement) {
                                return Err(Error::Learner(format!(
                                    "learner `stepwise`: `improvement` is a fraction in [0, 1), not {v}"
                                )));
                            }
                        }
                        ("rounds", Some(v)) => s.rounds = positive(head, "rounds", v)?,
                        ("bags", Some(v)) => s.bags = number(head, "bags", v)?,
                        ("relative", None) => s.relative = true,
                        _ if is_log(item) => log = true,
                        _ => {
                            return Err(unknown(
                                item,
                                "degree=N, improvement=F, rounds=N, bags=N, relative, log",
                            ));
                        }
                    }
                }
                Kind::Stepwise(s)
            }
            "lasso" => {
                let mut s = LassoSettings::default();
                for item in &items {
                    match split_setting(item) {
                        ("degree", Some(v)) => s.degree = positive(head, "degree", v)?,
                        ("folds", Some(v)) => s.folds = positive(head, "folds", v)?,
                        ("lambdas", Some(v)) => s.lambdas = positive(head, "lambdas", v)?,
                        ("lambda", Some(v)) => {
                            let l: f64 = number(head, "lambda", v)?;
                            if !(l.is_finite() && l >= 0.0) {
                                return Err(Error::Learner(format!(
                                    "learner `lasso`: `lambda` must be a number ≥ 0, not {v}"
                                )));
                            }
                            s.lambda = Some(l);
                        }
                        _ if is_log(item) => log = true,
                        _ => {
                            return Err(unknown(
                                item,
                                "degree=N, folds=N, lambdas=N, lambda=X, log",
                            ));
                        }
                    }
                }
                if s.degree > 3 {
                    return Err(Error::Learner(
                        "learner `lasso`: `degree` is at most 3 (the candidate products grow as options^degree)".into(),
                    ));
                }
                Kind::Lasso(s)
            }
            "cart" => {
                let mut s = CartSettings::default();
                let mut fixed = false;
                let mut tune = false;
                for item in &items {
                    match split_setting(item) {
                        ("tune", None) => tune = true,
                        ("depth", Some(v)) => {
                            fixed = true;
                            s.depth = match v {
                                "none" | "unlimited" => None,
                                _ => Some(positive(head, "depth", v)?),
                            }
                        }
                        ("leaf", Some(v)) => {
                            fixed = true;
                            s.leaf = positive(head, "leaf", v)?;
                        }
                        ("folds", Some(v)) => s.folds = positive(head, "folds", v)?,
                        _ if is_log(item) => log = true,
                        _ => {
                            return Err(unknown(item, "tune, depth=N|none, leaf=N, folds=N, log"));
                        }
                    }
                }
                if tune && fixed {
                    return Err(Error::Learner(
                        "learner `cart`: `tune` searches depth and leaf itself; give either `tune` or `depth`/`leaf`".into(),
                    ));
                }
                s.tune = !fixed;
                Kind::Cart(s)
            }
            "rf" | "forest" => {
                let mut s = ForestSettings::default();
                for item in &items {
                    match split_setting(item) {
                        ("trees", Some(v)) => s.trees = positive(head, "trees", v)?,
                        ("mtry", Some(v)) => s.mtry = Some(positive(head, "mtry", v)?),
                        ("leaf", Some(v)) => s.leaf = positive(head, "leaf", v)?,
                        _ if is_log(item) => log = true,
                        _ => return Err(unknown(item, "trees=N, mtry=N, leaf=N, log")),
                    }
                }
                Kind::Forest(s)
            }
            "boost" => {
                let mut s = BoostSettings::default();
                let mut fixed = false;
                let mut tune = false;
                for item in &items {
                    match split_setting(item) {
                        ("tune", None) => tune = true,
                        ("rounds", Some(v)) => {
                            fixed = true;
                            s.rounds = positive(head, "rounds", v)?;
                        }
                        ("depth", Some(v)) => {
                            fixed = true;
                            s.depth = positive(head, "depth", v)?;
                        }
                        ("folds", Some(v)) => s.folds = positive(head, "folds", v)?,
                        ("rate", Some(v)) => {
                            s.rate = number(head, "rate", v)?;
                            if !(s.rate > 0.0 && s.rate <= 1.0) {
                                return Err(Error::Learner(format!(
                                    "learner `boost`: `rate` is in (0, 1], not {v}"
                                )));
                            }
                        }
                        _ if is_log(item) => log = true,
                        _ => {
                            return Err(unknown(
                                item,
                                "tune, rounds=N, depth=N, rate=F, folds=N, log",
                            ));
                        }
                    }
                }
                if tune && fixed {
                    return Err(Error::Learner(
                        "learner `boost`: `tune` searches depth and rounds itself; give either `tune` or `depth`/`rounds`".into(),
                    ));
                }
                s.tune = !fixed;
                Kind::Boost(s)
            }
            "divide" => {
                let mut s = DivideSettings::default();
                for item in &items {
                    match split_setting(item) {
                        ("tune", None) => s.tune = true,
                        ("depth", Some(v)) => {
                            s.tune = false;
                            s.depth = positive(head, "depth", v)?;
                            if s.depth > MAX_DIVIDE_DEPTH {
                                return Err(Error::Learner(format!(
                                    "learner `divide`: `depth` is at most {MAX_DIVIDE_DEPTH} (a region per combination of the options split on), not {v}"
                                )));
                            }
                        }
                        ("folds", Some(v)) => s.folds = positive(head, "folds", v)?,
                        _ if is_log(item) => log = true,
                        _ => return Err(unknown(item, "tune, depth=N, folds=N, log")),
                    }
                }
                Kind::Divide(s)
            }
            "ridge" => {
                let mut s = RidgeSettings::default();
                let factor = |key: &str, v: &str| -> Result<f64, Error> {
                    let x: f64 = number(head, key, v)?;
                    if !(x.is_finite() && x > 0.0) {
                        return Err(Error::Learner(format!(
                            "learner `ridge`: `{key}` must be a number > 0, not {v}"
                        )));
                    }
                    Ok(x)
                };
                for item in &items {
                    match split_setting(item) {
                        ("tune", None) => s.tune = true,
                        ("interacting", Some(v)) => {
                            s.tune = false;
                            s.interacting = number(head, "interacting", v)?;
                            if s.interacting > MAX_INTERACTING {
                                return Err(Error::Learner(format!(
                                    "learner `ridge`: `interacting` is at most {MAX_INTERACTING} (every product of them is a term), not {v}"
                                )));
                            }
                        }
                        ("main", Some(v)) => {
                            s.tune = false;
                            s.main = factor("main", v)?;
                        }
                        ("order", Some(v)) => {
                            s.tune = false;
                            s.order = factor("order", v)?;
                        }
                        ("relative", None) => s.relative = true,
                        _ if is_log(item) => log = true,
                        _ => {
                            return Err(unknown(
                                item,
                                "tune, interacting=N, main=X, order=X, relative, log",
                            ));
                        }
                    }
                }
                Kind::Ridge(s)
            }
            "ols" => {
                let mut terms = Vec::new();
                for item in &items {
                    if *item == "transform=log" {
                        log = true;
                        continue;
                    }
                    let factors = item
                        .split('*')
                        .map(|f| f.parse::<Factor>())
                        .collect::<Result<Vec<Factor>, _>>()
                        .map_err(|e| Error::Learner(format!("learner `ols`: {e}")))?;
                    terms.push(factors);
                }
                if rest.is_none() {
                    return Err(Error::Learner(
                        "learner `ols` needs its terms, as in `ols:A,B,A*B`".into(),
                    ));
                }
                Kind::Ols(terms)
            }
            "auto" => {
                let mut s = AutoSettings::default();
                for item in &items {
                    match split_setting(item) {
                        ("folds", Some(v)) => s.folds = Some(positive(head, "folds", v)?),
                        _ => return Err(unknown(item, "folds=N")),
                    }
                }
                Kind::Auto(s)
            }
            _ => {
                return Err(Error::Learner(format!(
                    "unknown learner `{text}`; expected {}",
                    Learner::HELP
                )));
            }
        };
        Ok(Learner { kind, log })
    }
}

fn split_setting(item: &str) -> (&str, Option<&str>) {
    match item.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (item.trim(), None),
    }
}

fn is_log(item: &str) -> bool {
    item == "log" || item == "transform=log"
}

impl fmt::Display for Learner {
    /// The canonical spelling with every setting, which parses back to the same learner.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Kind::Mean(members) = &self.kind {
            let equal = members.iter().all(|(w, _)| *w == members[0].0);
            let texts: Vec<String> = members
                .iter()
                .map(|(w, m)| {
                    if equal {
                        m.to_string()
                    } else {
                        format!("{w}*{m}")
                    }
                })
                .collect();
            return write!(f, "{}", texts.join("+"));
        }
        let mut items: Vec<String> = match &self.kind {
            Kind::Stepwise(s) => {
                let mut v = vec![
                    format!("degree={}", s.degree),
                    format!("improvement={}", s.improvement),
                    format!("rounds={}", s.rounds),
                ];
                if s.bags > 0 {
                    v.push(format!("bags={}", s.bags));
                }
                if s.relative {
                    v.push("relative".into());
                }
                v
            }
            Kind::Lasso(s) => {
                let mut v = vec![format!("degree={}", s.degree)];
                match s.lambda {
                    Some(l) => v.push(format!("lambda={l}")),
                    None => {
                        v.push(format!("folds={}", s.folds));
                        v.push(format!("lambdas={}", s.lambdas));
                    }
                }
                v
            }
            Kind::Cart(s) if s.tune => vec!["tune".into(), format!("folds={}", s.folds)],
            Kind::Cart(s) => vec![
                format!(
                    "depth={}",
                    s.depth.map_or("none".to_string(), |d| d.to_string())
                ),
                format!("leaf={}", s.leaf),
            ],
            Kind::Forest(s) => {
                let mut v = vec![format!("trees={}", s.trees)];
                if let Some(m) = s.mtry {
                    v.push(format!("mtry={m}"));
                }
                v.push(format!("leaf={}", s.leaf));
                v
            }
            Kind::Boost(s) if s.tune => vec![
                "tune".into(),
                format!("rate={}", s.rate),
                format!("folds={}", s.folds),
            ],
            Kind::Boost(s) => vec![
                format!("depth={}", s.depth),
                format!("rounds={}", s.rounds),
                format!("rate={}", s.rate),
            ],
            Kind::Divide(s) if s.tune => vec!["tune".into(), format!("folds={}", s.folds)],
            Kind::Divide(s) => vec![format!("depth={}", s.depth)],
            Kind::Ridge(s) => {
                let mut v = if s.tune {
                    vec!["tune".into()]
                } else {
                    vec![
                        format!("interacting={}", s.interacting),
                        format!("main={}", s.main),
                        format!("order={}", s.order),
                    ]
                };
                if s.relative {
                    v.push("relative".into());
                }
                v
            }
            Kind::Ols(terms) => terms
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join("*")
                })
                .collect(),
            Kind::Auto(s) => s.folds.iter().map(|k| format!("folds={k}")).collect(),
            Kind::Mean(_) => unreachable!("printed above"),
        };
        if self.log {
            items.push(if matches!(self.kind, Kind::Ols(_)) {
                "transform=log".into()
            } else {
                "log".into()
            });
        }
        write!(f, "{}", self.name())?;
        if !items.is_empty() || matches!(self.kind, Kind::Ols(_)) {
            write!(f, ":{}", items.join(","))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_canonically() {
        for text in [
            "stepwise",
            "stepwise:degree=2,improvement=0.001,log",
            "stepwise:relative",
            "lasso",
            "lasso:degree=1,lambda=0.5",
            "cart",
            "cart:depth=4,leaf=2,log",
            "cart:depth=none",
            "rf:trees=10,mtry=3",
            "boost",
            "boost:depth=2,rounds=50,rate=0.1,log",
            "divide",
            "divide:depth=3,log",
            "ridge",
            "ridge:relative,log",
            "ridge:interacting=3,main=0.3,order=1.5",
            "ols:A,B,A*B,level=6,transform=log",
            "ols:",
            "auto:folds=5",
            "auto",
            "stepwise:log+rf:trees=10,log",
            "0.25*stepwise:log+0.75*ridge:log",
            "0.5*ols:A*B+0.5*lasso",
        ] {
            let l: Learner = text.parse().unwrap();
            let again: Learner = l.to_string().parse().unwrap();
            assert_eq!(l, again, "{text} → {l}");
        }
        let l: Learner = "stepwise".parse().unwrap();
        assert_eq!(
            l.to_string(),
            "stepwise:degree=3,improvement=0.01,rounds=50"
        );
        let ols: Learner = "ols:A,B,A*B".parse().unwrap();
        match ols.kind {
            Kind::Ols(t) => assert_eq!(t[2].len(), 2),
            _ => panic!("ols"),
        }
    }

    #[test]
    fn explains_bad_learners() {
        let e = "svm".parse::<Learner>().unwrap_err().to_string();
        assert!(
            e.starts_with("unknown learner `svm`; expected stepwise"),
            "{e}"
        );
        let e = "lasso:alpha=1".parse::<Learner>().unwrap_err().to_string();
        assert!(e.contains("unknown setting `alpha=1`"), "{e}");
        let e = "rf:trees=x".parse::<Learner>().unwrap_err().to_string();
        assert!(e.contains("`trees=x` is not a valid number"), "{e}");
        assert!("rf:trees=0".parse::<Learner>().is_err());
        for absurd in [
            "rf:trees=100000000",
            "lasso:degree=50",
            "boost:rounds=1000000000",
            "divide:depth=9",
            "ridge:interacting=20",
        ] {
            let e = absurd.parse::<Learner>().unwrap_err().to_string();
            assert!(e.contains("at most"), "{absurd}: {e}");
        }
        assert!("ols".parse::<Learner>().is_err());
        assert!("cart:tune,depth=3".parse::<Learner>().is_err());
        assert!("boost:rate=0".parse::<Learner>().is_err());
        let e = "divide:leaf=3".parse::<Learner>().unwrap_err().to_string();
        assert!(e.contains("unknown setting `leaf=3`"), "{e}");
        assert!("stepwise:improvement=2".parse::<Learner>().is_err());
    }

    #[test]
    fn lists_split_between_learners_only() {
        let l = Learner::parse_list("stepwise,lasso:degree=1,log,ols:A,B*C,rf").unwrap();
        let names: Vec<String> = l.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            names,
            vec![
                "stepwise:degree=3,improvement=0.01,rounds=50",
                "lasso:degree=1,folds=10,lambdas=30,log",
                "ols:A,B*C",
                "rf:trees=100,leaf=1",
            ]
        );
        assert_eq!(Learner::parse_list("rf;cart").unwrap().len(), 2);
        let l = Learner::parse_list("lasso:degree=1,log+rf:log,cart").unwrap();
        assert_eq!(l.len(), 2);
        assert!(matches!(&l[0].kind, Kind::Mean(m) if m.len() == 2));
        assert!("stepwise+rf:log".parse::<Learner>().is_err());
        let e = "0.3*stepwise+0.3*rf"
            .parse::<Learner>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("must sum to 1, not 0.6"), "{e}");
        let e = "0.5*stepwise+rf"
            .parse::<Learner>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("give every member of a mean a weight, or none"),
            "{e}"
        );
        assert!("-0.5*stepwise+1.5*rf".parse::<Learner>().is_err());
        assert!("auto+rf".parse::<Learner>().is_err());
    }
}
