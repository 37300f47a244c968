//! Divide and learn (after DaL, Gong and Chen, FSE'23): a regression tree on the training
//! sample splits the configuration space by the binary options that divide the performance
//! most, and a stepwise model is learned inside each region.
//!
//! Why: where a few options switch the system between regimes (LLVM's passes interact four
//! ways), one sparse model for the whole space needs many high-order terms, and selection
//! or shrinkage loses them on small samples; inside a region the remaining structure is
//! nearly additive, which a model of a few rows can still learn.
//!
//! The model stays a performance-influence model: a region is a conjunction of `x = 1` and
//! `x = 0` literals, and each region's term `b·t` becomes `b·t·Π x·Π (1 − x)`, expanded into
//! products of options. So routing a configuration to its region is exact, and the learned
//! model is one linear model over option products like every other.

use std::collections::HashMap;

use crate::data::{Basic, TermSpec};
use crate::fitted::Fitted;
use crate::learner::{DivideSettings, StepwiseSettings};
use crate::{Target, cv, stepwise};

/// The depths tuning scores (a depth-d tree has at most 2^d regions); deeper trees leave
/// regions too small for a model of their own at the sample sizes where dividing helps.
pub const DEPTHS: [usize; 2] = [1, 2];

/// Fewest training configurations a region may hold: fewer leave the region's model with
/// nothing to learn from.
pub const MIN_REGION: usize = 8;

/// A region: literals (option, value 0 or 1) and the training positions inside it.
struct Region {
    literals: Vec<(usize, bool)>,
    positions: Vec<usize>,
}

/// Fits the divided model on the training positions `train` of the target.
pub fn fit_on(
    target: &Target,
    train: &[usize],
    depth: usize,
    settings: &StepwiseSettings,
    seed: u64,
) -> Fitted {
    let mut regions = Vec::new();
    divide(target, train.to_vec(), Vec::new(), depth, &mut regions);
    let mut terms: Vec<(TermSpec, f64)> = Vec::new();
    let mut index: HashMap<Vec<(usize, u64)>, usize> = HashMap::new();
    for region in &regions {
        let local = stepwise::fit(&target.subset(&region.positions), settings, seed);
        for (term, b) in &local.terms {
            for (t, c) in restricted(term, *b, &region.literals) {
                match index.get(&t.key()) {
                    Some(&i) => terms[i].1 += c,
                    None => {
                        index.insert(t.key(), terms.len());
                        terms.push((t, c));
                    }
                }
            }
        }
    }
    terms.retain(|(_, c)| *c != 0.0);
    Fitted::linear(terms, target.log)
}

/// Predictions (performance scale) of the held-out positions `test` by the model of every
/// depth of [`DEPTHS`] fitted on the positions `train`.
pub fn grid_held_out(target: &Target, train: &[usize], test: &[usize], seed: u64) -> Vec<Vec<f64>> {
    let rows: Vec<usize> = test.iter().map(|&p| target.rows[p]).collect();
    let settings = StepwiseSettings::default();
    DEPTHS
        .iter()
        .map(|&d| fit_on(target, train, d, &settings, seed).predict_rows(target.table, &rows))
        .collect()
}

/// Fits the divided model on all of the target: at the settings' depth, or (when `tune`)
/// at the depth of [`DEPTHS`] with the smallest cross-validated relative error.
pub fn fit(target: &Target, settings: &DivideSettings, seed: u64) -> (Fitted, usize) {
    let m = target.rows.len();
    let depth = if settings.tune {
        let mut errors = [0.0; DEPTHS.len()];
        for fold in cv::folds(m, settings.folds, seed) {
            let train = cv::complement(m, &fold);
            let actual: Vec<f64> = fold.iter().map(|&p| target.actual[p]).collect();
            for (d, predicted) in grid_held_out(target, &train, &fold, seed)
                .iter()
                .enumerate()
            {
                errors[d] += cv::relative_error_sum(predicted, &actual);
            }
        }
        let best = (0..DEPTHS.len())
            .min_by(|&a, &b| errors[a].total_cmp(&errors[b]))
            .unwrap_or(0);
        DEPTHS[best]
    } else {
        settings.depth
    };
    let all: Vec<usize> = (0..m).collect();
    let fitted = fit_on(target, &all, depth, &StepwiseSettings::default(), seed);
    (fitted, depth)
}

/// Splits `positions` recursively by the binary option that lowers the squared error of
/// the region means most, as long as both sides keep [`MIN_REGION`] configurations.
fn divide(
    target: &Target,
    positions: Vec<usize>,
    literals: Vec<(usize, bool)>,
    depth: usize,
    out: &mut Vec<Region>,
) {
    let split = if depth == 0 {
        None
    } else {
        best_split(target, &positions, &literals)
    };
    match split {
        None => out.push(Region {
            literals,
            positions,
        }),
        Some(j) => {
            let (ones, zeros): (Vec<usize>, Vec<usize>) = positions
                .iter()
                .partition(|&&p| target.table.rows[target.rows[p]][j] != 0.0);
            for (side, value) in [(zeros, false), (ones, true)] {
                let mut l = literals.clone();
                l.push((j, value));
                divide(target, side, l, depth - 1, out);
            }
        }
    }
}

/// The binary option (not yet on the path) whose split leaves the smallest within-side
/// sum of squares, if any split keeps both sides large enough and lowers it at all.
fn best_split(target: &Target, positions: &[usize], literals: &[(usize, bool)]) -> Option<usize> {
    let table = target.table;
    let sse = |ps: &mut dyn Iterator<Item = f64>| {
        let (mut n, mut s, mut q) = (0.0, 0.0, 0.0);
        for y in ps {
            n += 1.0;
            s += y;
            q += y * y;
        }
        if n == 0.0 { 0.0 } else { q - s * s / n }
    };
    let whole = sse(&mut positions.iter().map(|&p| target.y[p]));
    let mut best: Option<(usize, f64)> = None;
    for j in 0..table.width() {
        if !table.levels[j].is_empty() || literals.iter().any(|(o, _)| *o == j) {
            continue;
        }
        let on = |p: &usize| table.rows[target.rows[*p]][j] != 0.0;
        let ones = positions.iter().filter(|p| on(p)).count();
        if ones < MIN_REGION || positions.len() - ones < MIN_REGION {
            continue;
        }
        let e = sse(&mut positions.iter().filter(|p| on(p)).map(|&p| target.y[p]))
            + sse(&mut positions.iter().filter(|p| !on(p)).map(|&p| target.y[p]));
        if e < whole * (1.0 - 1e-9) && best.is_none_or(|(_, b)| e < b) {
            best = Some((j, e));
        }
    }
    best.map(|(j, _)| j)
}

/// `b·term` restricted to the region: times `x` for each `x = 1` literal and `(1 − x)` for
/// each `x = 0` literal, expanded into products of options.
fn restricted(term: &TermSpec, b: f64, literals: &[(usize, bool)]) -> Vec<(TermSpec, f64)> {
    // A binary option fixed in the region is 0 or 1 there: its factor in the term is 1 on
    // an `x = 1` region and zeroes the term on an `x = 0` one.
    let mut base = TermSpec(
        term.0
            .iter()
            .copied()
            .filter(|f| !literals.iter().any(|(o, _)| *o == f.option()))
            .collect(),
    );
    for f in &term.0 {
        if literals
            .iter()
            .any(|(o, v)| *o == f.option() && !*v && matches!(f, Basic::Value(_)))
        {
            return vec![];
        }
    }
    for (j, v) in literals {
        if *v {
            base = base
                .times(Basic::Value(*j))
                .expect("option not in the term");
        }
    }
    let zeros: Vec<usize> = literals
        .iter()
        .filter(|(_, v)| !v)
        .map(|(j, _)| *j)
        .collect();
    let mut out = Vec::with_capacity(1 << zeros.len());
    for mask in 0u32..(1 << zeros.len()) {
        let mut t = base.clone();
        for (i, j) in zeros.iter().enumerate() {
            if mask & (1 << i) != 0 {
                t = t.times(Basic::Value(*j)).expect("option not in the term");
            }
        }
        let sign = if mask.count_ones() % 2 == 0 {
            1.0
        } else {
            -1.0
        };
        out.push((t, sign * b));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Table;
    use crate::{Learner, train};

    /// Every combination of five binary options; the performance switches regime on `a`:
    /// 10 + 5·b + 2·d + e where a is on, 20 + 3·c + 4·d where it is off.
    fn regimes() -> Table {
        let names: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        let rows: Vec<Vec<f64>> = (0..32u32)
            .map(|i| (0..5).map(|j| ((i >> j) & 1) as f64).collect())
            .collect();
        let performance = rows
            .iter()
            .map(|r| {
                if r[0] == 1.0 {
                    10.0 + 5.0 * r[1] + 2.0 * r[3] + r[4]
                } else {
                    20.0 + 3.0 * r[2] + 4.0 * r[3]
                }
            })
            .collect();
        Table {
            levels: vec![vec![]; names.len()],
            names,
            rows,
            performance,
        }
    }

    fn mre(table: &Table, learner: &str) -> f64 {
        let all: Vec<usize> = (0..table.rows.len()).collect();
        let learner: Learner = learner.parse().unwrap();
        let trained = train(table, &all, &learner, 1).unwrap();
        let predicted = trained.predict(table, &all);
        crate::cv::relative_error_sum(&predicted, &table.performance) / all.len() as f64
    }

    #[test]
    fn regions_expand_into_one_exact_model() {
        let table = regimes();
        // One split on `a`, an additive model per side, written as products of options:
        // 20 + 3c + 4d − 10a + 5ab − 3ac − 2ad + ae.
        assert!(mre(&table, "divide:depth=1") < 1e-9);
        assert!(mre(&table, "divide:depth=1,log") < 1e-9);
        // Without dividing, the same stepwise search stops short of the exact model.
        assert!(mre(&table, "stepwise:degree=1") > 0.01);
    }

    #[test]
    fn a_term_restricted_to_a_region_is_zero_outside_it() {
        // b·c on the region a = 1, d = 0: b·c·a·(1 − d) = abc − abcd.
        let term = TermSpec(vec![Basic::Value(1), Basic::Value(2)]);
        let expanded = restricted(&term, 2.0, &[(0, true), (3, false)]);
        for i in 0..16u32 {
            let row: Vec<f64> = (0..4).map(|j| ((i >> j) & 1) as f64).collect();
            let value: f64 = expanded.iter().map(|(t, b)| b * t.eval(&row)).sum();
            let inside = row[0] == 1.0 && row[3] == 0.0;
            let expected = if inside { 2.0 * row[1] * row[2] } else { 0.0 };
            assert_eq!(value, expected, "{row:?}");
        }
        // A term on an option the region fixes to 0 vanishes; fixed to 1, the factor is 1.
        assert!(restricted(&TermSpec(vec![Basic::Value(3)]), 1.0, &[(3, false)]).is_empty());
        assert_eq!(
            restricted(&TermSpec(vec![Basic::Value(0)]), 1.0, &[(0, true)]),
            vec![(TermSpec(vec![Basic::Value(0)]), 1.0)]
        );
    }
}
