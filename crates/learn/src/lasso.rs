//! LASSO by coordinate descent over a path of λ with warm starts; λ chosen by
//! cross-validated relative error.
//!
//! Minimises `(1/2m)·‖y − β₀ − Xβ‖² + λ·‖β‖₁` with an unpenalised intercept β₀. Columns
//! are centred and scaled to unit variance internally (so that the penalty treats a rare
//! option like a common one, and so that uncentred 0/1 columns do not fight the intercept),
//! and the coefficients are mapped back to the raw columns at the end. Candidate features
//! are every term of up to `degree` options (see [`crate::data::all_terms`]); columns that
//! are constant on the training data, or equal to an earlier column, are left out.
//!
//! λ runs from λ_max (the smallest λ with every β = 0) down to λ_max·1e-4 on a log scale;
//! each solution starts from the previous one, coordinates that will stay zero are screened
//! out by the sequential strong rule (with a KKT check over all of them afterwards), and
//! the path stops early once the fit explains almost all of the variance.

use std::collections::HashSet;

use crate::Target;
use crate::cv;
use crate::data::{Table, TermSpec, all_terms};
use crate::fitted::Fitted;
use crate::learner::LassoSettings;
use crate::linalg::{dot, subtract_scaled};

/// Smallest λ of the path, relative to λ_max.
const LAMBDA_RATIO: f64 = 1e-4;
/// Coordinate descent stops when no coefficient (on standardised columns) moves by more
/// than this fraction of the target's standard deviation: glmnet's default (1e-7 on the
/// squared change relative to the variance) while cross-validating, and a much tighter
/// one for the model that is kept.
const TOLERANCE: f64 = 3.2e-4;
const PRECISE_TOLERANCE: f64 = 1e-7;
/// At most this many sweeps (full or active-set) per λ.
const MAX_SWEEPS: usize = 1000;
const PRECISE_MAX_SWEEPS: usize = 10_000;
/// The path stops early once the fit explains this fraction of the variance: smaller λ
/// would only chase the last noise (glmnet stops at 0.999 by default).
const EXPLAINED: f64 = 0.99999;

/// Candidate features of a LASSO of this degree on the table.
pub fn features(table: &Table, degree: usize) -> Vec<TermSpec> {
    all_terms(&table.basics(), degree)
}

/// A LASSO solution on the raw columns: intercept and (feature, coefficient) pairs.
#[derive(Clone, Debug)]
pub struct Solution {
    pub intercept: f64,
    pub coefficients: Vec<(usize, f64)>,
}

impl Solution {
    pub fn predict(&self, columns: &[Vec<f64>], i: usize) -> f64 {
        self.intercept
            + self
                .coefficients
                .iter()
                .map(|(j, b)| b * columns[*j][i])
                .sum::<f64>()
    }
}

/// The raw feature columns on the given table rows.
pub fn columns(table: &Table, features: &[TermSpec], rows: &[usize]) -> Vec<Vec<f64>> {
    features.iter().map(|f| f.column(table, rows)).collect()
}

/// λ_max of the data: the largest |correlation| of a standardised column with the centred
/// target, divided by m.
pub fn lambda_max(columns: &[Vec<f64>], y: &[f64]) -> f64 {
    let m = y.len() as f64;
    let ybar = y.iter().sum::<f64>() / m;
    columns
        .iter()
        .map(|c| {
            let mean = c.iter().sum::<f64>() / m;
            let sd = (c.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / m).sqrt();
            if sd <= 1e-12 * mean.abs().max(1.0) {
                0.0
            } else {
                (c.iter()
                    .zip(y)
                    .map(|(v, t)| (v - mean) * (t - ybar))
                    .sum::<f64>()
                    / (m * sd))
                    .abs()
            }
        })
        .fold(0.0, f64::max)
}

/// The λ path: `count` values from λ_max down to λ_max·1e-4, evenly spaced in log scale.
pub fn lambda_path(lambda_max: f64, count: usize) -> Vec<f64> {
    if lambda_max <= 0.0 {
        return vec![0.0];
    }
    if count == 1 {
        return vec![lambda_max];
    }
    (0..count)
        .map(|k| lambda_max * LAMBDA_RATIO.powf(k as f64 / (count - 1) as f64))
        .collect()
}

/// Solutions for every λ of `lambdas` (decreasing), fitted on the given raw columns.
/// `precise`: converge tightly and never stop the path early (for the model kept, not for
/// the many fits of cross-validation).
pub fn path(columns: &[Vec<f64>], y: &[f64], lambdas: &[f64], precise: bool) -> Vec<Solution> {
    path_with(columns, y, lambdas, precise, false)
}

/// [`path`], with every coefficient constrained to be non-negative when `positive`.
pub fn path_with(
    columns: &[Vec<f64>],
    y: &[f64],
    lambdas: &[f64],
    precise: bool,
    positive: bool,
) -> Vec<Solution> {
    let m = y.len();
    let mf = m as f64;
    let ybar = y.iter().sum::<f64>() / mf;
    let y_var = y.iter().map(|v| (v - ybar).powi(2)).sum::<f64>() / mf;
    // Standardise the usable columns: non-constant, and not a repeat of an earlier column.
    let mut seen: HashSet<Vec<u64>> = HashSet::new();
    let mut used: Vec<usize> = Vec::new();
    let mut means = Vec::new();
    let mut sds = Vec::new();
    let mut z: Vec<Vec<f64>> = Vec::new();
    for (j, c) in columns.iter().enumerate() {
        let mean = c.iter().sum::<f64>() / mf;
        let sd = (c.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / mf).sqrt();
        if sd <= 1e-12 * mean.abs().max(1.0)
            || !seen.insert(c.iter().map(|v| v.to_bits()).collect())
        {
            continue;
        }
        used.push(j);
        means.push(mean);
        sds.push(sd);
        z.push(c.iter().map(|v| (v - mean) / sd).collect());
    }
    let p = z.len();
    let mut beta = vec![0.0; p];
    let mut r: Vec<f64> = y.iter().map(|v| v - ybar).collect();
    // gradient[j] = z_jᵀr / m at the last solution: the KKT conditions and the screening
    // below both read it.
    let mut gradient: Vec<f64> = z.iter().map(|zj| dot(zj, &r) / mf).collect();
    let mut previous = gradient.iter().fold(0.0, |a: f64, g| a.max(g.abs()));
    let (tolerance, max_sweeps) = if precise {
        (PRECISE_TOLERANCE, PRECISE_MAX_SWEEPS)
    } else {
        (TOLERANCE, MAX_SWEEPS)
    };
    let until = Convergence {
        tol: tolerance * y_var.sqrt().max(1e-300),
        max_sweeps,
        positive,
    };
    let mut out = Vec::with_capacity(lambdas.len());
    let mut saturated: Option<Solution> = None;
    for &lambda in lambdas {
        if let Some(s) = &saturated {
            out.push(s.clone());
            continue;
        }
        // Sequential strong rule (Tibshirani et al. 2012): a coefficient that is zero and
        // whose gradient is below 2λ − λ_previous almost surely stays zero, so coordinate
        // descent runs on the others; a check of the KKT conditions over all coordinates
        // catches the rare exception.
        let cutoff = 2.0 * lambda - previous;
        let mut screened: Vec<bool> = (0..p)
            .map(|j| beta[j] != 0.0 || gradient[j].abs() >= cutoff)
            .collect();
        loop {
            let set: Vec<usize> = (0..p).filter(|j| screened[*j]).collect();
            descend(&z, &mut beta, &mut r, lambda, mf, &set, until);
            let mut violated = false;
            for j in 0..p {
                gradient[j] = dot(&z[j], &r) / mf;
                let violates = if positive {
                    gradient[j] > lambda * (1.0 + 1e-9)
                } else {
                    gradient[j].abs() > lambda * (1.0 + 1e-9)
                };
                if !screened[j] && violates {
                    screened[j] = true;
                    violated = true;
                }
            }
            if !violated {
                break;
            }
        }
        previous = lambda;
        let coefficients: Vec<(usize, f64)> = (0..p)
            .filter(|j| beta[*j] != 0.0)
            .map(|j| (used[j], beta[j] / sds[j]))
            .collect();
        let intercept = ybar
            - (0..p)
                .filter(|j| beta[*j] != 0.0)
                .map(|j| beta[j] / sds[j] * means[j])
                .sum::<f64>();
        let solution = Solution {
            intercept,
            coefficients,
        };
        let rss = dot(&r, &r) / mf;
        if !precise && rss <= (1.0 - EXPLAINED) * y_var {
            saturated = Some(solution.clone());
        }
        out.push(solution);
    }
    out
}

/// How coordinate descent runs: it stops when no coefficient moved by `tol`, or after
/// `max_sweeps` sweeps; `positive` holds every coefficient at zero or above.
#[derive(Clone, Copy)]
struct Convergence {
    tol: f64,
    max_sweeps: usize,
    positive: bool,
}

/// Coordinate descent on the coordinates `set` until it converges: sweeps over the whole
/// set alternate with sweeps over its non-zero coefficients only.
fn descend(
    z: &[Vec<f64>],
    beta: &mut [f64],
    r: &mut [f64],
    lambda: f64,
    m: f64,
    set: &[usize],
    until: Convergence,
) {
    let Convergence {
        tol,
        max_sweeps,
        positive,
    } = until;
    let mut sweeps = 0;
    while sweeps < max_sweeps {
        sweeps += 1;
        if sweep(z, beta, r, lambda, m, set, positive) < tol {
            return;
        }
        let active: Vec<usize> = set.iter().copied().filter(|j| beta[*j] != 0.0).collect();
        while sweeps < max_sweeps {
            sweeps += 1;
            if sweep(z, beta, r, lambda, m, &active, positive) < tol {
                break;
            }
        }
    }
}

/// One coordinate-descent sweep over the given coordinates; returns the largest change of
/// a coefficient.
fn sweep(
    z: &[Vec<f64>],
    beta: &mut [f64],
    r: &mut [f64],
    lambda: f64,
    m: f64,
    set: &[usize],
    positive: bool,
) -> f64 {
    let mut largest: f64 = 0.0;
    for &j in set {
        let rho = dot(&z[j], r) / m + beta[j];
        let mut new = soft_threshold(rho, lambda);
        if positive {
            new = new.max(0.0);
        }
        let delta = new - beta[j];
        if delta != 0.0 {
            subtract_scaled(r, delta, &z[j]);
            beta[j] = new;
            largest = largest.max(delta.abs());
        }
    }
    largest
}

fn soft_threshold(x: f64, lambda: f64) -> f64 {
    if x > lambda {
        x - lambda
    } else if x < -lambda {
        x + lambda
    } else {
        0.0
    }
}

/// Held-out predictions (performance scale) of every λ: `out[l][i]` for test position i.
pub(crate) fn held_out(
    target: &Target,
    features: &[TermSpec],
    train: &[usize],
    test: &[usize],
    lambdas: &[f64],
) -> Vec<Vec<f64>> {
    let table = target.table;
    let train_rows: Vec<usize> = train.iter().map(|&p| target.rows[p]).collect();
    let test_rows: Vec<usize> = test.iter().map(|&p| target.rows[p]).collect();
    let y: Vec<f64> = train.iter().map(|&p| target.y[p]).collect();
    let solutions = path(&columns(table, features, &train_rows), &y, lambdas, false);
    let test_columns = columns(table, features, &test_rows);
    solutions
        .iter()
        .map(|s| {
            (0..test.len())
                .map(|i| target.back(s.predict(&test_columns, i)))
                .collect()
        })
        .collect()
}

/// Fits the LASSO: λ fixed, or chosen by `folds`-fold cross-validation of the relative error.
/// Returns the model and the λ used.
pub(crate) fn lasso(target: &Target, settings: &LassoSettings, seed: u64) -> (Fitted, f64) {
    let features = features(target.table, settings.degree);
    let all_columns = columns(target.table, &features, &target.rows);
    let lmax = lambda_max(&all_columns, &target.y);
    let lambda = match settings.lambda {
        Some(l) => l,
        None => {
            let lambdas = lambda_path(lmax, settings.lambdas);
            let errors = cv_errors(target, &features, &lambdas, settings.folds, seed);
            let best = (0..lambdas.len())
                .min_by(|a, b| errors[*a].total_cmp(&errors[*b]))
                .unwrap_or(0);
            lambdas[best]
        }
    };
    (
        fit_at(target, &features, &all_columns, lmax, lambda),
        lambda,
    )
}

/// Cross-validated mean relative error of every λ.
pub(crate) fn cv_errors(
    target: &Target,
    features: &[TermSpec],
    lambdas: &[f64],
    folds: usize,
    seed: u64,
) -> Vec<f64> {
    let m = target.rows.len();
    let mut sums = vec![0.0; lambdas.len()];
    if m < 2 {
        return sums;
    }
    for fold in cv::folds(m, folds, seed) {
        let train = cv::complement(m, &fold);
        let actual: Vec<f64> = fold.iter().map(|&p| target.actual[p]).collect();
        for (l, predicted) in held_out(target, features, &train, &fold, lambdas)
            .iter()
            .enumerate()
        {
            sums[l] += cv::relative_error_sum(predicted, &actual);
        }
    }
    sums.iter().map(|s| s / m as f64).collect()
}

/// The solution at λ, reached by a warm-started path from λ_max.
pub(crate) fn fit_at(
    target: &Target,
    features: &[TermSpec],
    columns: &[Vec<f64>],
    lambda_max: f64,
    lambda: f64,
) -> Fitted {
    let mut lambdas: Vec<f64> = lambda_path(lambda_max, 30)
        .into_iter()
        .filter(|l| *l > lambda)
        .collect();
    lambdas.push(lambda);
    let solution = path(columns, &target.y, &lambdas, true)
        .pop()
        .expect("one λ");
    let mut terms = vec![(TermSpec::default(), solution.intercept)];
    terms.extend(
        solution
            .coefficients
            .iter()
            .map(|(j, b)| (features[*j].clone(), *b)),
    );
    Fitted::linear(terms, target.log)
}
