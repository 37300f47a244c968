//! Hierarchical ridge regression: every option enters additively, and the few options with
//! the largest effects also interact fully — every product of them, each order shrunk more
//! than the one below.
//!
//! Why: some systems' performance is a dense interaction of a few options plus small
//! additive effects of the rest (LLVM: four passes interact four ways). Selection
//! (stepwise, lasso) must find each product from a sample that often lacks the combinations
//! that would show it, and trees spend their splits on it; ridge keeps all products of the
//! screened options and lets the data move each only as far as it supports, so a
//! combination missing from the sample is predicted from the lower orders instead of being
//! left undetermined.
//!
//! Each option is coded as `z = (x − centre) / half-range` of its training values (±1 for a
//! binary option), so the shrinkage does not depend on which value counts as "on". The
//! prior variance of a main effect is `main` (relative to the target's variance) and of a
//! product of k screened options `main · order^(k−1)`. The options that interact are the
//! `interacting` ones with the largest main effects in the additive fit. `interacting`,
//! `main` and `order` are chosen by the leave-one-out relative error, which ridge gives in
//! closed form (`eᵢ / (1 − hᵢᵢ)`). The model is written back as products of the options
//! themselves, so it stays a performance-influence model.

use std::collections::HashMap;

use crate::Target;
use crate::data::{Basic, TermSpec};
use crate::fitted::Fitted;
use crate::learner::RidgeSettings;
use crate::linalg::{cholesky, forward, solve_factored};

/// Prior variances of a main effect tried by tuning (relative to the target's variance).
pub const MAIN: [f64; 4] = [0.03, 0.3, 3.0, 30.0];
/// Factors by which each further order of interaction scales the prior variance.
pub const ORDER: [f64; 4] = [0.1, 0.3, 1.0, 3.0];
/// Numbers of interacting options tried by tuning (0: additive only); more would make
/// 2^k products, too many to learn from the samples where interactions matter.
pub const INTERACTING: [usize; 5] = [0, 2, 3, 4, 5];

/// An option's coding on the training rows: `z = (x − centre) / scale`.
#[derive(Clone, Copy)]
struct Coding {
    option: usize,
    centre: f64,
    scale: f64,
}

/// The design of one setting of `interacting`: per feature, the coded options it
/// multiplies (indices into the codings) and its order; the intercept is not a feature.
struct Design {
    features: Vec<Vec<usize>>,
}

impl Design {
    /// Main effects of every coded option, plus every product of two or more of the
    /// options at positions `screened` (indices into the codings).
    fn new(codings: usize, screened: &[usize]) -> Design {
        let mut features: Vec<Vec<usize>> = (0..codings).map(|c| vec![c]).collect();
        for mask in 1u32..(1 << screened.len()) {
            if mask.count_ones() >= 2 {
                features.push(
                    (0..screened.len())
                        .filter(|i| mask & (1 << i) != 0)
                        .map(|i| screened[i])
                        .collect(),
                );
            }
        }
        Design { features }
    }

    /// Prior precision (1 / variance) of each feature.
    fn precisions(&self, main: f64, order: f64) -> Vec<f64> {
        self.features
            .iter()
            .map(|f| 1.0 / (main * order.powi(f.len() as i32 - 1)))
            .collect()
    }
}

/// The weighted problem on the training positions: coded option values, the weighted
/// target scaled to unit variance and the row weights.
struct Problem<'a> {
    target: &'a Target<'a>,
    positions: Vec<usize>,
    codings: Vec<Coding>,
    /// `z[i][c]`: coded value of coding c in row i.
    z: Vec<Vec<f64>>,
    weights: Vec<f64>,
    /// The target, centred by its weighted mean and divided by its weighted sd.
    y: Vec<f64>,
    mean: f64,
    sd: f64,
}

impl<'a> Problem<'a> {
    fn new(target: &'a Target<'a>, positions: &[usize], relative: bool) -> Problem<'a> {
        let table = target.table;
        let codings: Vec<Coding> = (0..table.width())
            .filter_map(|j| {
                let values = positions.iter().map(|&p| table.rows[target.rows[p]][j]);
                let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                    (l.min(v), h.max(v))
                });
                (hi > lo).then_some(Coding {
                    option: j,
                    centre: (lo + hi) / 2.0,
                    scale: (hi - lo) / 2.0,
                })
            })
            .collect();
        let z = positions
            .iter()
            .map(|&p| {
                let row = &table.rows[target.rows[p]];
                codings
                    .iter()
                    .map(|c| (row[c.option] - c.centre) / c.scale)
                    .collect()
            })
            .collect();
        let mut weights: Vec<f64> = positions
            .iter()
            .map(|&p| {
                if relative && !target.log {
                    1.0 / target.actual[p].abs()
                } else {
                    1.0
                }
            })
            .collect();
        // Scaled to a mean square of 1, so the priors mean the same with or without weights.
        let rms = (weights.iter().map(|w| w * w).sum::<f64>() / weights.len().max(1) as f64).sqrt();
        weights.iter_mut().for_each(|w| *w /= rms);
        let raw: Vec<f64> = positions.iter().map(|&p| target.y[p]).collect();
        let w2: f64 = weights.iter().map(|w| w * w).sum();
        let mean = raw
            .iter()
            .zip(&weights)
            .map(|(y, w)| y * w * w)
            .sum::<f64>()
            / w2;
        let var = raw
            .iter()
            .zip(&weights)
            .map(|(y, w)| (w * (y - mean)).powi(2))
            .sum::<f64>()
            / w2;
        let sd = if var > 0.0 { var.sqrt() } else { 1.0 };
        Problem {
            target,
            positions: positions.to_vec(),
            codings,
            z,
            weights,
            y: raw.iter().map(|y| (y - mean) / sd).collect(),
            mean,
            sd,
        }
    }

    /// The weighted rows of the design: intercept first.
    fn rows(&self, design: &Design) -> Vec<Vec<f64>> {
        self.z
            .iter()
            .zip(&self.weights)
            .map(|(z, w)| {
                let mut row = Vec::with_capacity(design.features.len() + 1);
                row.push(*w);
                row.extend(
                    design
                        .features
                        .iter()
                        .map(|f| w * f.iter().map(|&c| z[c]).product::<f64>()),
                );
                row
            })
            .collect()
    }
}

impl Problem<'_> {
    /// Predicted performance of table rows by the coded fit `beta` of `design` (what
    /// [`terms`] writes as a model, without expanding it).
    fn predict(&self, design: &Design, beta: &[f64], rows: &[usize]) -> Vec<f64> {
        let table = self.target.table;
        rows.iter()
            .map(|&r| {
                let row = &table.rows[r];
                let z: Vec<f64> = self
                    .codings
                    .iter()
                    .map(|c| (row[c.option] - c.centre) / c.scale)
                    .collect();
                let value: f64 = beta[0]
                    + design
                        .features
                        .iter()
                        .zip(&beta[1..])
                        .map(|(f, b)| b * f.iter().map(|&c| z[c]).product::<f64>())
                        .sum::<f64>();
                self.target.back(self.mean + self.sd * value)
            })
            .collect()
    }
}

/// A ridge fit: coefficients (intercept first, on the scaled target) and the mean relative
/// leave-one-out error.
struct Solution {
    beta: Vec<f64>,
    loo: f64,
}

/// Solves the ridge problem with the given precisions (the intercept unpenalised) from the
/// Gram matrix of the weighted rows, and scores it by leave-one-out.
fn solve(
    problem: &Problem,
    rows: &[Vec<f64>],
    gram: &[f64],
    precisions: &[f64],
    with_loo: bool,
) -> Option<Solution> {
    let k = precisions.len() + 1;
    let mut a = gram.to_vec();
    for (f, p) in precisions.iter().enumerate() {
        a[(f + 1) * k + f + 1] += p;
    }
    // A tiny ridge on the intercept too, so a constant target still factorises.
    a[0] += 1e-12 * gram[0].max(1.0);
    cholesky(&mut a, k, 0.0)?;
    let wy: Vec<f64> = rows.iter().zip(&problem.y).zip(&problem.weights).fold(
        vec![0.0; k],
        |mut acc, ((r, y), w)| {
            for (s, x) in acc.iter_mut().zip(r) {
                *s += x * y * w;
            }
            acc
        },
    );
    let beta = solve_factored(&a, wy, k);
    if !with_loo {
        return Some(Solution {
            beta,
            loo: f64::NAN,
        });
    }
    let mut loo = 0.0;
    for ((row, y), (w, &p)) in rows
        .iter()
        .zip(&problem.y)
        .zip(problem.weights.iter().zip(&problem.positions))
    {
        let v = forward(&a, row.clone(), k);
        let h: f64 = v.iter().map(|x| x * x).sum();
        if 1.0 - h < 1e-8 {
            return None;
        }
        let fitted: f64 = row.iter().zip(&beta).map(|(x, b)| x * b).sum::<f64>() / w;
        // Unweighted leave-one-out residual on the target's own scale.
        let r = (y - fitted) / (1.0 - h) * problem.sd;
        loo += if problem.target.log {
            (-r).exp_m1().abs()
        } else {
            (r / problem.target.actual[p]).abs()
        };
    }
    Some(Solution {
        beta,
        loo: loo / problem.positions.len() as f64,
    })
}

/// The problem on the training positions and its coded options ranked by the size of
/// their main effects in the additive fit (an option that interacts strongly nearly always
/// has a main effect too: effect heredity; ranking by a fit with every pairwise product
/// instead was noisier on small samples).
fn screened<'a>(
    target: &'a Target<'a>,
    train: &[usize],
    relative: bool,
) -> (Problem<'a>, Vec<usize>) {
    let problem = Problem::new(target, train, relative);
    let n = problem.codings.len();
    // Screening: options ranked by the size of their main effect in the additive fit (an
    // option that interacts strongly nearly always has a main effect too: effect heredity).
    // Ranking by a fit with every pairwise product instead was noisier on small samples.
    let additive = Design::new(n, &[]);
    let rows = problem.rows(&additive);
    let gram = gram_of(&rows);
    let ranking = MAIN
        .iter()
        .filter_map(|&m| solve(&problem, &rows, &gram, &additive.precisions(m, 1.0), true))
        .min_by(|a, b| a.loo.total_cmp(&b.loo))
        .map(|s| s.beta[1..].iter().map(|b| b.abs()).collect())
        .unwrap_or_else(|| vec![0.0; n]);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| ranking[b].total_cmp(&ranking[a]));
    (problem, order)
}

/// Every setting tuning tries: (interacting, main, order).
pub fn grid() -> Vec<(usize, f64, f64)> {
    INTERACTING
        .iter()
        .flat_map(|&k| {
            let orders: &[f64] = if k == 0 { &ORDER[..1] } else { &ORDER };
            orders
                .iter()
                .flat_map(move |&o| MAIN.iter().map(move |&m| (k, m, o)))
        })
        .collect()
}

/// A design's weighted rows and their Gram matrix.
struct Weighted {
    rows: Vec<Vec<f64>>,
    gram: Vec<f64>,
}

/// Fits the problem at each setting of `grid` (with the leave-one-out error when
/// `with_loo`) and hands each fit to `visit` with its setting and design; a singular fit is
/// `None`. The designs of one number of interacting options share their Gram matrix.
fn for_each_fit(
    problem: &Problem,
    order: &[usize],
    grid: &[(usize, f64, f64)],
    with_loo: bool,
    mut visit: impl FnMut((usize, f64, f64), &Design, Option<Solution>),
) {
    let n = problem.codings.len();
    // The design of the current number of interacting options, its rows and Gram matrix.
    let mut current: Option<(usize, Design, Weighted)> = None;
    for &(k, m, o) in grid {
        let k = k.min(n);
        if current.as_ref().is_none_or(|c| c.0 != k) {
            let design = Design::new(n, &order[..k]);
            let x = problem.rows(&design);
            let gram = gram_of(&x);
            current = Some((k, design, Weighted { rows: x, gram }));
        }
        let (_, design, weighted) = current.as_ref().expect("set above");
        let solution = solve(
            problem,
            &weighted.rows,
            &weighted.gram,
            &design.precisions(m, o),
            with_loo,
        );
        visit((k, m, o), design, solution);
    }
}

/// Predictions (performance scale) of the held-out positions `test` by the model of every
/// setting of [`grid`] fitted on the positions `train`.
pub fn grid_held_out(
    target: &Target,
    train: &[usize],
    test: &[usize],
    relative: bool,
) -> Vec<Vec<f64>> {
    let rows: Vec<usize> = test.iter().map(|&p| target.rows[p]).collect();
    let (problem, order) = screened(target, train, relative);
    let mut out = Vec::new();
    for_each_fit(&problem, &order, &grid(), false, |_, design, solution| {
        out.push(match solution {
            Some(s) => problem.predict(design, &s.beta, &rows),
            None => vec![f64::NAN; rows.len()],
        });
    });
    out
}

/// Fits on all of the target: with `settings.tune`, at the setting of the grid with the
/// smallest leave-one-out error. Returns the model and the settings used.
pub fn fit(target: &Target, settings: &RidgeSettings) -> (Fitted, RidgeSettings) {
    let grid = if settings.tune {
        grid()
    } else {
        vec![(settings.interacting, settings.main, settings.order)]
    };
    let all: Vec<usize> = (0..target.rows.len()).collect();
    let (problem, order) = screened(target, &all, settings.relative);
    let mut best: Option<((usize, f64, f64), Fitted, f64)> = None;
    for_each_fit(
        &problem,
        &order,
        &grid,
        true,
        |setting, design, solution| {
            if let Some(s) = solution
                && best.as_ref().is_none_or(|b| s.loo < b.2)
            {
                best = Some((setting, terms(&problem, design, &s.beta), s.loo));
            }
        },
    );
    let (k, m, o, fitted) = match best {
        Some(((k, m, o), fitted, _)) => (k, m, o, fitted),
        // Every fit singular: the weighted mean.
        None => (
            0,
            settings.main,
            settings.order,
            Fitted::linear(vec![(TermSpec::default(), problem.mean)], target.log),
        ),
    };
    let resolved = RidgeSettings {
        tune: false,
        interacting: k,
        main: m,
        order: o,
        ..settings.clone()
    };
    (fitted, resolved)
}

/// The model as products of the options themselves: each coded feature
/// `Π (x − c) / s` expanded over the subsets of its options.
fn terms(problem: &Problem, design: &Design, beta: &[f64]) -> Fitted {
    let mut terms: Vec<(TermSpec, f64)> =
        vec![(TermSpec::default(), problem.mean + problem.sd * beta[0])];
    let mut index: HashMap<Vec<(usize, u64)>, usize> = HashMap::new();
    index.insert(TermSpec::default().key(), 0);
    for (feature, b) in design.features.iter().zip(&beta[1..]) {
        let codings: Vec<Coding> = feature.iter().map(|&c| problem.codings[c]).collect();
        let scale: f64 = codings.iter().map(|c| c.scale).product();
        let b = b * problem.sd / scale;
        for mask in 0u32..(1 << codings.len()) {
            let mut term = TermSpec::default();
            let mut coefficient = b;
            for (i, c) in codings.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    term = term
                        .times(Basic::Value(c.option))
                        .expect("distinct options");
                } else {
                    coefficient *= -c.centre;
                }
            }
            if coefficient == 0.0 {
                continue;
            }
            match index.get(&term.key()) {
                Some(&i) => terms[i].1 += coefficient,
                None => {
                    index.insert(term.key(), terms.len());
                    terms.push((term, coefficient));
                }
            }
        }
    }
    Fitted::linear(terms, problem.target.log)
}

/// `Σ rowᵢ rowᵢᵀ`, row-major k × k.
fn gram_of(rows: &[Vec<f64>]) -> Vec<f64> {
    let k = rows.first().map_or(0, Vec::len);
    let mut g = vec![0.0; k * k];
    for row in rows {
        for i in 0..k {
            let ri = row[i];
            for j in 0..=i {
                g[i * k + j] += ri * row[j];
            }
        }
    }
    for i in 0..k {
        for j in 0..i {
            g[j * k + i] = g[i * k + j];
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::data::Table;
    use crate::{Kind, Learner, train};

    /// Three binary options and a numeric one (values 2, 4, 8), with noise.
    fn mixed() -> Table {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let rows: Vec<Vec<f64>> = (0..24)
            .map(|_| {
                let mut r: Vec<f64> = (0..3).map(|_| rng.gen_range(0..2) as f64).collect();
                r.push([2.0, 4.0, 8.0][rng.gen_range(0..3)]);
                r
            })
            .collect();
        let performance = rows
            .iter()
            .map(|r| 50.0 + 10.0 * r[0] * r[1] + 3.0 * r[3] + 4.0 * r[2] + rng.gen_range(-2.0..2.0))
            .collect();
        Table {
            names: ["a", "b", "c", "n"].map(String::from).to_vec(),
            levels: vec![vec![], vec![], vec![], vec![2.0, 4.0, 8.0]],
            rows,
            performance,
        }
    }

    #[test]
    fn leave_one_out_matches_refitting_without_each_row() {
        let table = mixed();
        let rows: Vec<usize> = (0..table.rows.len()).collect();
        for (log, relative) in [(false, false), (false, true), (true, false)] {
            let target = Target::new(&table, &rows, log);
            let problem = Problem::new(&target, &rows, relative);
            let design = Design::new(problem.codings.len(), &[0, 1, 3]);
            let precisions = design.precisions(2.0, 0.5);
            let x = problem.rows(&design);
            let solution = solve(&problem, &x, &gram_of(&x), &precisions, true).unwrap();
            // Refit without row i on the same coding and scale, and predict row i.
            let mut error = 0.0;
            for i in 0..rows.len() {
                let keep: Vec<usize> = (0..rows.len()).filter(|&r| r != i).collect();
                let without = Problem {
                    target: &target,
                    positions: keep.clone(),
                    codings: problem.codings.clone(),
                    z: keep.iter().map(|&r| problem.z[r].clone()).collect(),
                    weights: keep.iter().map(|&r| problem.weights[r]).collect(),
                    y: keep.iter().map(|&r| problem.y[r]).collect(),
                    mean: problem.mean,
                    sd: problem.sd,
                };
                let xi: Vec<Vec<f64>> = keep.iter().map(|&r| x[r].clone()).collect();
                let beta = solve(&without, &xi, &gram_of(&xi), &precisions, false)
                    .unwrap()
                    .beta;
                let fitted: f64 =
                    x[i].iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>() / problem.weights[i];
                let predicted = problem.mean + problem.sd * fitted;
                let predicted = if log { predicted.exp() } else { predicted };
                error += ((predicted - table.performance[i]) / table.performance[i]).abs();
            }
            let error = error / rows.len() as f64;
            assert!(
                (solution.loo - error).abs() < 1e-9 * error.max(1.0),
                "log {log}, relative {relative}: closed form {} against refitting {error}",
                solution.loo
            );
        }
    }

    #[test]
    fn the_model_in_option_products_predicts_as_the_coded_fit() {
        let table = mixed();
        let rows: Vec<usize> = (0..table.rows.len()).collect();
        let target = Target::new(&table, &rows, false);
        let problem = Problem::new(&target, &rows, true);
        let design = Design::new(problem.codings.len(), &[0, 1, 2, 3]);
        let x = problem.rows(&design);
        let beta = solve(
            &problem,
            &x,
            &gram_of(&x),
            &design.precisions(1.0, 1.0),
            false,
        )
        .unwrap()
        .beta;
        let model = terms(&problem, &design, &beta);
        let predicted = model.predict_rows(&table, &rows);
        for (p, q) in predicted.iter().zip(problem.predict(&design, &beta, &rows)) {
            assert!((p - q).abs() < 1e-9 * q.abs(), "{p} vs {q}");
        }
        for (i, p) in predicted.iter().enumerate() {
            let coded = problem.mean
                + problem.sd * x[i].iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>()
                    / problem.weights[i];
            assert!(
                (p - coded).abs() < 1e-9 * coded.abs(),
                "row {i}: {p} vs {coded}"
            );
        }
        // Every product of the four options is a term (2^4 with the intercept).
        assert_eq!(model.terms.len(), 16);
    }

    /// Eight binary options: a full interaction of the first three (every combination its
    /// own value, far from additive, each of the three with a main effect) plus smaller
    /// additive effects of two others.
    fn dense_interaction() -> Table {
        let cells = [100.0, 130.0, 120.0, 190.0, 135.0, 150.0, 170.0, 160.0];
        Table::full_factorial(8, |r| {
            let cell = (r[0] + 2.0 * r[1] + 4.0 * r[2]) as usize;
            cells[cell] + 6.0 * r[3] + 3.0 * r[4]
        })
    }

    fn held_out_error(table: &Table, sample: &[usize], learner: &str) -> (f64, Learner) {
        let learner: Learner = learner.parse().unwrap();
        let trained = train(table, sample, &learner, 1).unwrap();
        let rest: Vec<usize> = (0..table.rows.len())
            .filter(|r| !sample.contains(r))
            .collect();
        let predicted = trained.predict(table, &rest);
        let actual: Vec<f64> = rest.iter().map(|&r| table.performance[r]).collect();
        (
            crate::cv::relative_error_sum(&predicted, &actual) / rest.len() as f64,
            trained.resolved,
        )
    }

    #[test]
    fn a_dense_interaction_of_few_options_is_learned_from_a_small_sample() {
        let table = dense_interaction();
        let sample = crate::experiment::deepperf_split(table.rows.len(), 40, 3).0;
        let (tuned, resolved) = held_out_error(&table, &sample, "ridge");
        let (additive, _) = held_out_error(&table, &sample, "ridge:interacting=0,main=3,order=1");
        let Kind::Ridge(chosen) = &resolved.kind else {
            panic!("{resolved}");
        };
        // Leave-one-out finds that the three options interact (the fourth and fifth add
        // nothing), and the products bring the error from the additive model's down to
        // the noise-free data's almost nothing.
        assert!(chosen.interacting >= 3, "{resolved}");
        assert!(additive > 0.05, "additive {additive}");
        assert!(tuned < 0.005, "tuned {tuned} ({resolved})");
    }
}
