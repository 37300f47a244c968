//! Stepwise forward selection as SPL Conqueror does it, and ordinary least squares.
//!
//! Each round considers as candidates every basic factor (each option's value and each value
//! indicator of a numeric option) and every product of a term already selected with one more
//! option's factor, up to `degree` options per term. Each candidate is fitted by least
//! squares together with the terms already selected, and scored by its cross-validated
//! relative error: the mean of |prediction − actual| / actual over leave-one-out predictions.
//! The best candidate joins the model each round. Selection stops after `rounds` rounds, or
//! when three rounds in a row have not lowered the best error so far by at least the
//! fraction `improvement` (default 1 %); the model is then the shortest prefix of the
//! selection with the best error. (Looking a few rounds ahead matters when a term only pays
//! off together with the next one, as with alternative options.) A backward pass then drops
//! every term whose removal does not raise the error, and the rest is refitted by least
//! squares.
//!
//! SPL Conqueror's own default stops when a round gains less than 0.1 percentage points of
//! error on the training sample; that stalls on systems whose error is spread over many
//! small interactions (x264), and an error measured on the sample itself rewards overfitting.
//! A relative threshold on a cross-validated error does neither, and needs no separate
//! validation set.
//!
//! With `relative`, every fit is least squares weighted by 1/performance²: each row and its
//! target are divided by the performance, so residuals are relative errors, and the
//! leave-one-out shortcut below holds for the weighted rows as it does for the plain ones.
//!
//! Why it is fast: leave-one-out residuals of a least-squares fit are `eᵢ / (1 − hᵢᵢ)` with
//! the leverages `hᵢᵢ` of the hat matrix. Keeping an orthonormal basis of the selected
//! columns (Gram–Schmidt) and every candidate's residual against it, adding a candidate
//! changes residuals and leverages by one rank-one update, so scoring a candidate costs
//! O(rows) and each round O(candidates × rows).

use std::collections::HashSet;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::Target;
use crate::data::TermSpec;
use crate::fitted::Fitted;
use crate::learner::StepwiseSettings;
use crate::linalg::{dot, least_squares};

/// A candidate term with its column made orthogonal to the selected terms' columns.
struct Candidate {
    term: TermSpec,
    residual: Vec<f64>,
    /// Squared norm of the raw column, to recognise columns the selected ones already span.
    raw_norm2: f64,
}

/// Rounds in a row without enough improvement before selection stops.
const PATIENCE: usize = 3;

/// Below this fraction of its raw squared norm, a column is a combination of selected ones.
const DEPENDENT: f64 = 1e-9;

/// Stepwise selection, or with `bags` the mean of that many selections on random subsamples
/// (each 4/5 of the configurations, drawn without replacement so that leave-one-out stays
/// honest): greedy selection is unstable on small samples, and the mean of unstable models
/// errs less than each of them. The mean of linear models is a linear model.
pub fn fit(target: &Target, settings: &StepwiseSettings, seed: u64) -> Fitted {
    if settings.bags == 0 {
        return stepwise(target, settings);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let m = target.rows.len();
    let take = (m * 4).div_ceil(5);
    let models: Vec<Fitted> = (0..settings.bags)
        .map(|_| {
            let mut positions: Vec<usize> = (0..m).collect();
            positions.shuffle(&mut rng);
            positions.truncate(take);
            positions.sort_unstable();
            stepwise(&target.subset(&positions), settings)
        })
        .collect();
    Fitted::average(&models)
}

/// The row weights of the least-squares fits: 1/performance for a `relative` fit on the
/// performance scale (squared in the loss), else 1.
fn row_weights(target: &Target, settings: &StepwiseSettings) -> Vec<f64> {
    if settings.relative && !target.log {
        target.actual.iter().map(|a| 1.0 / a).collect()
    } else {
        vec![1.0; target.rows.len()]
    }
}

/// `column` with each row multiplied by its weight.
fn weighted(column: &[f64], weights: &[f64]) -> Vec<f64> {
    column.iter().zip(weights).map(|(c, w)| c * w).collect()
}

/// The orthonormal basis of the (weighted) intercept column, and the target's residual and
/// the leverages against it.
fn intercept_fit(y: &[f64], weights: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let norm = dot(weights, weights).sqrt();
    let q: Vec<f64> = weights.iter().map(|w| w / norm).collect();
    let gamma = dot(&q, y);
    let residual = y.iter().zip(&q).map(|(v, qi)| v - gamma * qi).collect();
    let leverage = q.iter().map(|qi| qi * qi).collect();
    (q, residual, leverage)
}

pub fn stepwise(target: &Target, settings: &StepwiseSettings) -> Fitted {
    let table = target.table;
    let m = target.rows.len();
    let weights = row_weights(target, settings);
    let y = weighted(&target.y, &weights);
    let basics = table.basics();
    let basic_columns: Vec<Vec<f64>> = basics
        .iter()
        .map(|b| {
            target
                .rows
                .iter()
                .map(|&r| b.eval(&table.rows[r]))
                .collect()
        })
        .collect();

    // State of the current fit: orthonormal basis, residuals, leverages (all weighted).
    let (intercept, mut residual, mut leverage) = intercept_fit(&y, &weights);
    let mut basis: Vec<Vec<f64>> = vec![intercept];
    let mut selected: Vec<(TermSpec, Vec<f64>)> = Vec::new();
    let score = loo_error(target, &weights, &residual, &leverage, None);

    let mut seen: HashSet<Vec<(usize, u64)>> = HashSet::new();
    let mut pool: Vec<Candidate> = Vec::new();
    for (b, column) in basics.iter().zip(&basic_columns) {
        let term = TermSpec(vec![*b]);
        seen.insert(term.key());
        if let Some(c) = candidate(term, weighted(column, &weights), &basis) {
            pool.push(c);
        }
    }

    // Rounds continue past a round that does not improve enough (the next term may only
    // pay off together with a later one), up to `PATIENCE` such rounds in a row; the model
    // kept is the best prefix of the selection.
    let mut best_score = score;
    let mut best_len = 0;
    let mut stale = 0;
    for _round in 0..settings.rounds {
        if m < 3 {
            break;
        }
        let mut best: Option<(usize, f64)> = None;
        for (i, c) in pool.iter().enumerate() {
            let s = loo_error(target, &weights, &residual, &leverage, Some(&c.residual));
            if s.is_finite() && best.is_none_or(|(_, b)| s < b) {
                best = Some((i, s));
            }
        }
        let Some((index, new_score)) = best else {
            break;
        };
        let chosen = pool.swap_remove(index);
        let norm = dot(&chosen.residual, &chosen.residual).sqrt();
        let q: Vec<f64> = chosen.residual.iter().map(|v| v / norm).collect();
        let gamma = dot(&q, &residual);
        for i in 0..m {
            residual[i] -= gamma * q[i];
            leverage[i] += q[i] * q[i];
        }
        // Keep the remaining candidates orthogonal to the grown basis; drop dependent ones.
        pool.retain_mut(|c| {
            let p = dot(&q, &c.residual);
            for (r, qi) in c.residual.iter_mut().zip(&q) {
                *r -= p * qi;
            }
            dot(&c.residual, &c.residual) > DEPENDENT * c.raw_norm2
        });
        basis.push(q);
        let raw: Vec<f64> = target
            .rows
            .iter()
            .map(|&r| chosen.term.eval(&table.rows[r]))
            .collect();
        // New candidates: the chosen term times one more option's factor.
        if chosen.term.degree() < settings.degree {
            for (b, column) in basics.iter().zip(&basic_columns) {
                let Some(term) = chosen.term.times(*b) else {
                    continue;
                };
                if !seen.insert(term.key()) {
                    continue;
                }
                let product: Vec<f64> = raw
                    .iter()
                    .zip(column)
                    .zip(&weights)
                    .map(|((x, y), w)| x * y * w)
                    .collect();
                if let Some(c) = candidate(term, product, &basis) {
                    pool.push(c);
                }
            }
        }
        selected.push((chosen.term, raw));
        // Strictly better, by the fraction and by more than rounding (an exact fit scores 0
        // and must not let zero-coefficient terms in).
        if best_score - new_score > (best_score * settings.improvement).max(1e-12) {
            best_score = new_score;
            best_len = selected.len();
            stale = 0;
        } else {
            stale += 1;
            if stale >= PATIENCE {
                break;
            }
        }
    }
    selected.truncate(best_len);
    backward(target, &weights, &mut selected, best_score);

    let mut columns = vec![weights.clone()];
    columns.extend(selected.iter().map(|(_, c)| weighted(c, &weights)));
    let beta = least_squares(&columns, &y);
    let mut terms = vec![(TermSpec::default(), beta[0])];
    terms.extend(
        selected
            .into_iter()
            .zip(&beta[1..])
            .map(|((t, _), b)| (t, *b)),
    );
    Fitted::linear(terms, target.log)
}

/// Backward elimination: drops selected terms, latest first, whose removal does not raise
/// the leave-one-out error. These are terms that were only stepping stones to an interaction
/// (A·C·E is a candidate only once A and A·C are in) and keep a coefficient of about zero.
fn backward(
    target: &Target,
    weights: &[f64],
    selected: &mut Vec<(TermSpec, Vec<f64>)>,
    mut score: f64,
) {
    'again: loop {
        for i in (0..selected.len()).rev() {
            let columns: Vec<&[f64]> = selected
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, (_, c))| c.as_slice())
                .collect();
            let without = loo_error_of(target, weights, &columns);
            if without <= score * (1.0 + 1e-9) + 1e-12 {
                selected.remove(i);
                score = without;
                continue 'again;
            }
        }
        return;
    }
}

/// Leave-one-out error of the (weighted) least-squares fit on an intercept and these raw
/// columns.
fn loo_error_of(target: &Target, weights: &[f64], columns: &[&[f64]]) -> f64 {
    let m = target.y.len();
    let y = weighted(&target.y, weights);
    let (intercept, mut residual, mut leverage) = intercept_fit(&y, weights);
    let mut basis: Vec<Vec<f64>> = vec![intercept];
    for c in columns {
        if let Some(c) = candidate(TermSpec::default(), weighted(c, weights), &basis) {
            let norm = dot(&c.residual, &c.residual).sqrt();
            basis.push(c.residual.iter().map(|v| v / norm).collect());
        }
    }
    for q in &basis[1..] {
        let gamma = dot(q, &residual);
        for i in 0..m {
            residual[i] -= gamma * q[i];
            leverage[i] += q[i] * q[i];
        }
    }
    loo_error(target, weights, &residual, &leverage, None)
}

/// A candidate with its column orthogonalised against the basis (twice, for accuracy), or
/// `None` when the basis already spans it (including constant and all-zero columns).
fn candidate(term: TermSpec, mut column: Vec<f64>, basis: &[Vec<f64>]) -> Option<Candidate> {
    let raw_norm2 = dot(&column, &column);
    if raw_norm2 == 0.0 {
        return None;
    }
    for _ in 0..2 {
        for q in basis {
            let p = dot(q, &column);
            for (c, qi) in column.iter_mut().zip(q) {
                *c -= p * qi;
            }
        }
    }
    (dot(&column, &column) > DEPENDENT * raw_norm2).then_some(Candidate {
        term,
        residual: column,
        raw_norm2,
    })
}

/// Mean relative leave-one-out error of the current fit, or of the fit with one more
/// column whose part orthogonal to the basis is `extra`. Infinite when a configuration
/// would have leverage 1 (its leave-one-out prediction is undefined). Residuals are of the
/// weighted rows: row i's is its weight times its own.
fn loo_error(
    target: &Target,
    weights: &[f64],
    residual: &[f64],
    leverage: &[f64],
    extra: Option<&[f64]>,
) -> f64 {
    let m = residual.len();
    let (scale, gamma) = match extra {
        Some(r) => {
            let n2 = dot(r, r);
            (1.0 / n2.sqrt(), dot(r, residual) / n2.sqrt())
        }
        None => (0.0, 0.0),
    };
    let mut sum = 0.0;
    for i in 0..m {
        let (e, h) = match extra {
            Some(r) => {
                let q = r[i] * scale;
                (residual[i] - gamma * q, leverage[i] + q * q)
            }
            None => (residual[i], leverage[i]),
        };
        let d = 1.0 - h;
        if d < 1e-8 {
            return f64::INFINITY;
        }
        let r = e / d;
        sum += if target.log {
            // The prediction is exp(y − r) = actual·exp(−r): relative error |exp(−r) − 1|.
            relative_change(-r).abs()
        } else {
            let actual = target.actual[i];
            (r / weights[i] / actual).abs()
        };
    }
    sum / m as f64
}

/// exp(x) − 1, by its Taylor series for |x| < 0.25 (the usual case here, and much cheaper
/// than `exp_m1`; the first omitted term is below 2e-8 relative).
fn relative_change(x: f64) -> f64 {
    if x.abs() < 0.25 {
        x * (1.0
            + x * (1.0 / 2.0
                + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0))))))
    } else {
        x.exp_m1()
    }
}

/// Least squares on the given terms plus an intercept.
pub fn ols(target: &Target, terms: &[TermSpec]) -> Fitted {
    let m = target.rows.len();
    let mut columns = vec![vec![1.0; m]];
    columns.extend(terms.iter().map(|t| t.column(target.table, &target.rows)));
    let beta = least_squares(&columns, &target.y);
    let mut out = vec![(TermSpec::default(), beta[0])];
    out.extend(terms.iter().cloned().zip(beta[1..].iter().copied()));
    Fitted::linear(out, target.log)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::data::Table;

    /// Every combination of eight binary options; the performance is additive in many small
    /// effects, plus noise no model can learn.
    fn many_small_effects() -> Table {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let effects = [6.0, 5.0, 4.0, 3.0, 2.5, 2.0, 1.5, 1.0];
        Table::full_factorial(8, |r| {
            100.0
                + r.iter().zip(&effects).map(|(x, e)| x * e).sum::<f64>()
                + rng.gen_range(-4.0..4.0)
        })
    }

    #[test]
    fn bagging_is_the_mean_of_selections_on_seeded_subsamples() {
        let table = many_small_effects();
        let rows: Vec<usize> = (0..20).map(|i| i * 12).collect();
        let target = Target::new(&table, &rows, false);
        let settings = StepwiseSettings {
            bags: 3,
            ..StepwiseSettings::default()
        };
        let bagged = fit(&target, &settings, 7).predict_rows(&table, &(0..256).collect::<Vec<_>>());
        // The same three subsamples of 16 (4/5 of 20), drawn in turn from the seed.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut members = Vec::new();
        for _ in 0..3 {
            let mut positions: Vec<usize> = (0..20).collect();
            positions.shuffle(&mut rng);
            positions.truncate(16);
            positions.sort_unstable();
            members.push(
                stepwise(&target.subset(&positions), &settings)
                    .predict_rows(&table, &(0..256).collect::<Vec<_>>()),
            );
        }
        let single =
            stepwise(&target, &settings).predict_rows(&table, &(0..256).collect::<Vec<_>>());
        let mut differs = false;
        for r in 0..256 {
            let mean = members.iter().map(|m| m[r]).sum::<f64>() / 3.0;
            assert!(
                (bagged[r] - mean).abs() < 1e-9 * mean,
                "row {r}: {} vs {mean}",
                bagged[r]
            );
            differs |= (bagged[r] - single[r]).abs() > 1e-6;
        }
        assert!(differs, "the bagged model is not the single selection");
    }

    #[test]
    fn bagging_lowers_the_error_of_selection_on_small_noisy_samples() {
        let table = many_small_effects();
        let (mut single, mut bagged) = (0.0, 0.0);
        for s in 0..20 {
            let (sample, rest) = crate::experiment::deepperf_split(256, 20, s);
            let target = Target::new(&table, &sample, false);
            let actual: Vec<f64> = rest.iter().map(|&r| table.performance[r]).collect();
            let error = |bags: usize| {
                let settings = StepwiseSettings {
                    bags,
                    ..StepwiseSettings::default()
                };
                let p = fit(&target, &settings, s).predict_rows(&table, &rest);
                crate::cv::relative_error_sum(&p, &actual) / rest.len() as f64
            };
            single += error(0);
            bagged += error(10);
        }
        // Over 20 samples of 20: about 3.6 % single, 2.8 % bagged.
        assert!(
            bagged < 0.9 * single,
            "bagged {bagged} against single {single}"
        );
    }
}
