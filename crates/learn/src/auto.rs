//! `auto`: choose the learner, its settings and the target transform per dataset by
//! cross-validation on the training sample only.
//!
//! Candidates: stepwise selection (on the performance scale both plain and weighted for
//! relative error, the better by cross-validation), LASSO with pairwise terms at every λ of
//! its path, CART at every depth × leaf size of its grid, bagged regression trees (`rf`),
//! boosted trees at every depth × rounds of their grid, divide-and-learn at each of its
//! depths (from [`LARGE_SAMPLE`] training configurations gentle boosting instead, see
//! [`GENTLE_BOOST`]), and hierarchical ridge at every setting of its grid (plain and, on the
//! performance scale, weighted for relative error) — each on the performance and, when every
//! performance is positive, on ln(performance). All are scored by the same k-fold split of
//! the training configurations: the mean relative error of their held-out predictions. Grid
//! settings (λ, depth, leaf, ridge's priors) are scored side by side in that one
//! cross-validation rather than tuned again inside each fold, which costs one fit per fold
//! instead of one per grid point. A family tuned inside each fold instead would be judged by
//! an honest error while the others' errors are those of the best of their grids, which are
//! lower than what the chosen setting will do on new configurations; scoring all grids side
//! by side keeps the families comparable. The best setting of each family is its candidate.
//!
//! What `auto` returns: on small samples the cross-validated errors of a dozen candidates
//! are noisy, and the smallest one is often luck. So `auto` returns the mean of all the
//! families on ln(performance) (on the performance when some is not positive), each weighted
//! by its cross-validated error to the power −[`WEIGHT_POWER`] (−[`LARGE_WEIGHT_POWER`] from
//! [`LARGE_SAMPLE`] configurations) — a mean of models is again
//! one model: terms plus trees — unless one candidate errs less than half as much (see
//! [`CLEARLY_BETTER`]). Switching to the single candidate (or the mean of a subset) with the
//! smallest error whenever it was better by more than one standard error did worse (30
//! repetitions: Apache 9 18.11 % against 15.75 %, LLVM 11 4.72 against 4.53).

use crate::cv;
use crate::learner::{
    AutoSettings, BoostSettings, CartSettings, DivideSettings, ForestSettings, Kind, LassoSettings,
    Learner, RidgeSettings, StepwiseSettings,
};
use crate::{Target, divide, lasso, ridge, stepwise, tree};

/// Folds when the settings leave it open: one per configuration (leave-one-out) up to
/// [`LEAVE_ONE_OUT_UP_TO`] training configurations, 10 up to 100, 5 up to 200, 3 above (the
/// folds then still train on well over a hundred configurations, and the cost of
/// cross-validation grows with configurations × folds).
fn default_folds(m: usize) -> usize {
    match m {
        _ if m <= LEAVE_ONE_OUT_UP_TO => m,
        0..=100 => 10,
        101..=200 => 5,
        _ => 3,
    }
}

/// On samples this small a random 10-fold split is itself a source of noise in the
/// cross-validated errors (which configurations share a fold changes the errors and so the
/// weights of the mean); leave-one-out has no such randomness and each fit trains on all
/// but one configuration, at most twice the fits of 10 folds here. (30 repetitions of
/// DeepPerf's protocol: x264 16 8.44 → 7.74 %, BDBC 18 42.2 → 40.6 %, the other cells up to
/// 20 unchanged within 0.02; no change at 22–27, so it stops at 20.)
const LEAVE_ONE_OUT_UP_TO: usize = 20;
const _: () = assert!(
    LEAVE_ONE_OUT_UP_TO == 20,
    "default_folds' ranges start after it"
);

/// Up to this many training configurations, `auto`'s stepwise family is the mean of
/// [`STEPWISE_BAGS`] selections on subsamples: on small samples greedy selection is
/// unstable (one configuration more or less changes the terms) and the mean of unstable
/// models errs less than each; on larger ones selection is stable and bagging costs ten
/// selections for little.
const BAGGED_UP_TO: usize = 60;
const STEPWISE_BAGS: usize = 10;

/// The learner `auto` chose with its cross-validated error (mean relative error, as a
/// fraction), and every candidate's error.
pub struct Choice {
    pub learner: Learner,
    pub error: f64,
    pub candidates: Vec<(Learner, f64)>,
}

/// A candidate with its held-out prediction (performance scale) of every training position.
struct Scored {
    learner: Learner,
    predicted: Vec<f64>,
}

/// `targets`: the training data on the performance scale, then (optionally) on its log.
pub fn choose(targets: &[Target], settings: &AutoSettings, seed: u64) -> Choice {
    let m = targets[0].rows.len();
    let k = settings.folds.unwrap_or(default_folds(m));
    let folds = cv::folds(m, k, seed);
    let mut scored: Vec<Scored> = Vec::new();
    for target in targets {
        let families = families(target, &folds, seed);
        let weighted = weighted_mean(target, &families);
        scored.extend(families);
        scored.push(weighted);
    }
    let actual = &targets[0].actual;
    let candidates: Vec<(Learner, f64)> = scored
        .iter()
        .map(|s| {
            let error = cv::relative_error_sum(&s.predicted, actual) / m as f64;
            (s.learner.clone(), error)
        })
        .collect();
    // The last target's weighted mean of its families, unless a candidate errs less than
    // half as much.
    let default = candidates.len() - 1;
    let best = (0..candidates.len())
        .filter(|&i| candidates[i].1.is_finite())
        .min_by(|&a, &b| candidates[a].1.total_cmp(&candidates[b].1))
        .unwrap_or(default);
    let chosen = if candidates[best].1 < CLEARLY_BETTER * candidates[default].1 {
        best
    } else {
        default
    };
    let (learner, error) = candidates[chosen].clone();
    Choice {
        learner,
        error,
        candidates,
    }
}

/// A candidate replaces the weighted mean when its cross-validated error is less than this
/// fraction of the mean's: where one family fits the system (nearly) exactly, the mean of
/// all would only add the others' errors; smaller differences are, on small samples, as
/// often luck as not.
const CLEARLY_BETTER: f64 = 0.5;

/// How sharply the default mean favours the families with small cross-validated errors:
/// each family's weight is proportional to its error to the power −`WEIGHT_POWER`. The mean
/// of a few good families errs less than the single best (their errors partly cancel) and is
/// more stable on small samples, while a family that fits the system badly (twice the best
/// error) keeps a weight of 1/16 of the best's, where an equal mean of all would let it pull
/// every prediction its way. Unlike weights fitted to the held-out predictions (stacking),
/// these are not tuned on the errors they are judged by.
const WEIGHT_POWER: i32 = 4;

/// From this many training configurations, cross-validated errors are measured on so many
/// held-out configurations that a few percent between two families is real rather than
/// luck, so the mean weights by [`LARGE_WEIGHT_POWER`]; and gentle boosting
/// ([`GENTLE_BOOST`]) replaces divide-and-learn. (Dune at 240 / 375, 30 repetitions of
/// DeepPerf's protocol: 7.78 / 7.00 % → 7.64 / 6.74 %. With both changes from 40
/// configurations instead, and divide kept, the cells from 44 to 90 of Apache, BDBC, BDBJ,
/// LLVM and Dune moved by at most 0.3, within their margins, for up to 25 % more time.)
const LARGE_SAMPLE: usize = 200;

/// The weight power of the mean from [`LARGE_SAMPLE`] configurations: a family whose error
/// is 10 % above the best's keeps under half its weight (with 4, two thirds), so families
/// that are reliably worse pull the mean less (Dune 375: 6.91 → 6.74 % on 10 repetitions,
/// with 16 or 40 no better at 375 and worse at 240).
const LARGE_WEIGHT_POWER: i32 = 8;

/// The weight power of the mean on a sample of `m` training configurations.
fn weight_power(m: usize) -> i32 {
    if m >= LARGE_SAMPLE {
        LARGE_WEIGHT_POWER
    } else {
        WEIGHT_POWER
    }
}

/// Gentle boosting, the family that takes divide-and-learn's place from [`LARGE_SAMPLE`]
/// configurations: the boosting grid's largest round count at half its rate, depth 4.
/// Smaller steps fit the many small effects of numeric options (Dune's cells, pre- and
/// post-smoothing steps) with less of the noise, and beside the grid's boosting it is a
/// second, different tree ensemble in the mean. Divide makes room for it within 1 s per
/// model: it costs about as much as stepwise selection (a selection per region and depth),
/// and on the only published cells this large (Dune) it errs by 10 %, against 7–8 % for
/// the trees, so at power 8 its weight is a few percent and dropping it changed no mean by
/// more than 0.01. As the grid's boosting instead (when its cross-validated error was
/// smaller) gentle boosting did worse (Dune 240 / 375: 7.70 / 6.80 against 7.64 / 6.75); at
/// depth 5 or 6 it erred by 7.63 / 6.66 and 7.66 / 6.67 at up to a fifth more time per
/// model, too close to 1 s at 375 on a loaded machine.
pub const GENTLE_BOOST: BoostSettings = BoostSettings {
    tune: false,
    rounds: 200,
    depth: 4,
    rate: 0.1,
    folds: 10,
};

/// The mean of all families weighted by their cross-validated errors (see [`weight_power`]),
/// with its held-out predictions (a mean on the target's scale, so geometric for log).
fn weighted_mean(target: &Target, families: &[Scored]) -> Scored {
    let errors: Vec<f64> = families
        .iter()
        .map(|f| cv::relative_error_sum(&f.predicted, &target.actual))
        .collect();
    let smallest = errors.iter().copied().fold(f64::INFINITY, f64::min);
    // Relative to the smallest error, so that tiny errors do not overflow; families with no
    // error at all (an exact fit) share the whole weight, and one that cannot be scored
    // (infinite or NaN error) gets none.
    let raw: Vec<f64> = errors
        .iter()
        .map(|&e| {
            if !e.is_finite() {
                0.0
            } else if smallest == 0.0 {
                if e == 0.0 { 1.0 } else { 0.0 }
            } else {
                (e / smallest).powi(-weight_power(target.rows.len()))
            }
        })
        .collect();
    let total: f64 = raw.iter().sum();
    let weights: Vec<f64> = if total > 0.0 {
        raw.iter().map(|w| w / total).collect()
    } else {
        vec![1.0 / families.len() as f64; families.len()]
    };
    let members: Vec<(f64, &Scored)> = weights
        .iter()
        .copied()
        .zip(families)
        .filter(|(w, _)| *w > 0.0)
        .collect();
    let predicted = (0..target.rows.len())
        .map(|p| {
            let raw: f64 = members
                .iter()
                .map(|(w, s)| {
                    w * if target.log {
                        s.predicted[p].ln()
                    } else {
                        s.predicted[p]
                    }
                })
                .sum();
            target.back(raw)
        })
        .collect();
    Scored {
        learner: Learner {
            kind: Kind::Mean(
                members
                    .iter()
                    .map(|(w, s)| (*w, s.learner.clone()))
                    .collect(),
            ),
            log: target.log,
        },
        predicted,
    }
}

/// The best candidate of each family on one target, with its held-out predictions.
fn families(target: &Target, folds: &[Vec<usize>], seed: u64) -> Vec<Scored> {
    let m = target.rows.len();
    // On the performance scale, stepwise is fitted both plainly and weighted for relative
    // error; on ln(performance) the two are the same. Small samples get the mean of bagged
    // selections.
    let bagging: &[usize] = if m <= BAGGED_UP_TO {
        &[0, STEPWISE_BAGS]
    } else {
        &[0]
    };
    let stepwise_variants: Vec<StepwiseSettings> = [false, true]
        .into_iter()
        .filter(|relative| !*relative || !target.log)
        .flat_map(|relative| {
            bagging.iter().map(move |&bags| StepwiseSettings {
                relative,
                bags,
                ..StepwiseSettings::default()
            })
        })
        .collect();
    let lasso_settings = LassoSettings::default();
    let forest_settings = ForestSettings::default();
    let features = lasso::features(target.table, lasso_settings.degree);
    let all_columns = lasso::columns(target.table, &features, &target.rows);
    let lambdas = lasso::lambda_path(
        lasso::lambda_max(&all_columns, &target.y),
        lasso_settings.lambdas,
    );
    let mut stepwise_predicted = vec![vec![0.0; m]; stepwise_variants.len()];
    let mut lasso_predicted = vec![vec![0.0; m]; lambdas.len()];
    let mut cart_predicted = vec![vec![vec![0.0; m]; tree::DEPTHS.len()]; tree::LEAVES.len()];
    let mut forest_predicted = vec![0.0; m];
    let boost_settings = BoostSettings::default();
    let mut boost_predicted =
        vec![vec![vec![0.0; m]; tree::BOOST_ROUNDS.len()]; tree::BOOST_DEPTHS.len()];
    let mut divide_predicted = vec![vec![0.0; m]; divide::DEPTHS.len()];
    // From LARGE_SAMPLE configurations gentle boosting takes the place of divide.
    let gentle = m >= LARGE_SAMPLE;
    let mut gentle_predicted = vec![0.0; m];
    // Ridge, like stepwise, both plainly and weighted for relative error on the performance;
    // every setting of its grid side by side, as for the trees.
    let ridge_relative: Vec<bool> = [false, true]
        .into_iter()
        .filter(|relative| !*relative || !target.log)
        .collect();
    let ridge_grid = ridge::grid();
    let mut ridge_predicted = vec![vec![vec![0.0; m]; ridge_grid.len()]; ridge_relative.len()];
    for (f, fold) in folds.iter().enumerate() {
        let train = cv::complement(m, fold);
        let test_rows: Vec<usize> = fold.iter().map(|&p| target.rows[p]).collect();
        let put = |into: &mut Vec<f64>, values: &[f64]| {
            for (&p, v) in fold.iter().zip(values) {
                into[p] = *v;
            }
        };
        for (v, settings) in stepwise_variants.iter().enumerate() {
            let fitted = stepwise::fit(&target.subset(&train), settings, seed);
            put(
                &mut stepwise_predicted[v],
                &fitted.predict_rows(target.table, &test_rows),
            );
        }
        for (l, values) in lasso::held_out(target, &features, &train, fold, &lambdas)
            .iter()
            .enumerate()
        {
            put(&mut lasso_predicted[l], values);
        }
        for (l, by_depth) in tree::grid_held_out(target, &train, fold).iter().enumerate() {
            for (d, values) in by_depth.iter().enumerate() {
                put(&mut cart_predicted[l][d], values);
            }
        }
        let fitted = tree::forest_on(target, &train, &forest_settings, seed ^ (f as u64 + 1));
        put(
            &mut forest_predicted,
            &fitted.predict_rows(target.table, &test_rows),
        );
        if gentle {
            let BoostSettings {
                depth,
                rounds,
                rate,
                ..
            } = GENTLE_BOOST;
            let fitted = tree::boosted(target, &train, depth, rounds, rate);
            put(
                &mut gentle_predicted,
                &fitted.predict_rows(target.table, &test_rows),
            );
        }
        if !gentle {
            for (d, values) in divide::grid_held_out(target, &train, fold, seed)
                .iter()
                .enumerate()
            {
                put(&mut divide_predicted[d], values);
            }
        }
        for (v, &relative) in ridge_relative.iter().enumerate() {
            let grid = ridge::grid_held_out(target, &train, fold, relative);
            for (g, values) in grid.iter().enumerate() {
                put(&mut ridge_predicted[v][g], values);
            }
        }
        let grid = tree::boost_grid_held_out(target, &train, fold, boost_settings.rate);
        for (d, by_rounds) in grid.iter().enumerate() {
            for (r, values) in by_rounds.iter().enumerate() {
                put(&mut boost_predicted[d][r], values);
            }
        }
    }
    let error = |p: &[f64]| cv::relative_error_sum(p, &target.actual);
    let with_log = |kind: Kind| Learner {
        kind,
        log: target.log,
    };
    let s_best = smallest_error(&stepwise_predicted, error);
    let l_best = smallest_error(&lasso_predicted, error);
    let (bl, bd) = smallest_error_in_grid(&cart_predicted, error);
    let (bbd, bbr) = smallest_error_in_grid(&boost_predicted, error);
    let (rv, rg) = smallest_error_in_grid(&ridge_predicted, error);
    let (interacting, main, order) = ridge_grid[rg];
    let divide_or_gentle = if gentle {
        Scored {
            learner: with_log(Kind::Boost(GENTLE_BOOST)),
            predicted: gentle_predicted,
        }
    } else {
        let d_best = smallest_error(&divide_predicted, error);
        Scored {
            learner: with_log(Kind::Divide(DivideSettings {
                tune: false,
                depth: divide::DEPTHS[d_best],
                ..DivideSettings::default()
            })),
            predicted: divide_predicted.swap_remove(d_best),
        }
    };
    vec![
        Scored {
            learner: with_log(Kind::Stepwise(stepwise_variants[s_best].clone())),
            predicted: stepwise_predicted.swap_remove(s_best),
        },
        Scored {
            learner: with_log(Kind::Lasso(LassoSettings {
                lambda: Some(lambdas[l_best]),
                ..lasso_settings
            })),
            predicted: lasso_predicted.swap_remove(l_best),
        },
        Scored {
            learner: with_log(Kind::Cart(CartSettings {
                tune: false,
                depth: tree::DEPTHS[bd],
                leaf: tree::LEAVES[bl],
                ..CartSettings::default()
            })),
            predicted: std::mem::take(&mut cart_predicted[bl][bd]),
        },
        Scored {
            learner: with_log(Kind::Forest(forest_settings)),
            predicted: forest_predicted,
        },
        Scored {
            learner: with_log(Kind::Boost(BoostSettings {
                tune: false,
                depth: tree::BOOST_DEPTHS[bbd],
                rounds: tree::BOOST_ROUNDS[bbr],
                ..boost_settings
            })),
            predicted: std::mem::take(&mut boost_predicted[bbd][bbr]),
        },
        divide_or_gentle,
        Scored {
            learner: with_log(Kind::Ridge(RidgeSettings {
                tune: false,
                interacting,
                main,
                order,
                relative: ridge_relative[rv],
            })),
            predicted: std::mem::take(&mut ridge_predicted[rv][rg]),
        },
    ]
}

/// The position (row, column) of the first of the smallest errors in a grid of held-out
/// predictions.
fn smallest_error_in_grid(
    predicted: &[Vec<Vec<f64>>],
    error: impl Fn(&[f64]) -> f64,
) -> (usize, usize) {
    let mut best = (0, 0, f64::INFINITY);
    for (i, row) in predicted.iter().enumerate() {
        for (j, p) in row.iter().enumerate() {
            let e = error(p);
            if e < best.2 {
                best = (i, j, e);
            }
        }
    }
    (best.0, best.1)
}

/// The position of the first of the smallest errors among held-out predictions.
fn smallest_error(predicted: &[Vec<f64>], error: impl Fn(&[f64]) -> f64) -> usize {
    let mut best = (0, f64::INFINITY);
    for (i, p) in predicted.iter().enumerate() {
        let e = error(p);
        if e < best.1 {
            best = (i, e);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::data::Table;

    /// Six binary options, one of which matters, and noise that no learner can fit: no
    /// candidate beats the default by a standard error.
    fn noisy() -> Table {
        noisy_of(30)
    }

    fn noisy_of(configurations: usize) -> Table {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let names: Vec<String> = ["a", "b", "c", "d", "e", "f"].map(String::from).to_vec();
        let rows: Vec<Vec<f64>> = (0..configurations)
            .map(|_| (0..6).map(|_| rng.gen_range(0..2) as f64).collect())
            .collect();
        let performance = rows
            .iter()
            .map(|r| 100.0 + 10.0 * r[0] + rng.gen_range(-8.0..8.0))
            .collect();
        Table {
            levels: vec![vec![]; names.len()],
            names,
            rows,
            performance,
        }
    }

    #[test]
    fn small_samples_are_cross_validated_leave_one_out() {
        assert_eq!(default_folds(11), 11);
        assert_eq!(default_folds(LEAVE_ONE_OUT_UP_TO), LEAVE_ONE_OUT_UP_TO);
        assert_eq!(default_folds(LEAVE_ONE_OUT_UP_TO + 1), 10);
        assert_eq!(default_folds(150), 5);
        assert_eq!(default_folds(375), 3);
    }

    #[test]
    fn auto_returns_the_mean_of_all_families_weighted_by_their_errors() {
        check_weighted_mean(&noisy(), 7, WEIGHT_POWER);
    }

    #[test]
    fn large_samples_trade_divide_for_gentle_boosting_and_weight_more_sharply() {
        let gentle =
            |families: &[Learner]| families.iter().any(|l| l.kind == Kind::Boost(GENTLE_BOOST));
        let dividing =
            |families: &[Learner]| families.iter().any(|l| matches!(l.kind, Kind::Divide(_)));
        let table = noisy_of(LARGE_SAMPLE);
        let families = check_weighted_mean(&table, 7, LARGE_WEIGHT_POWER);
        assert!(gentle(&families) && !dividing(&families), "{families:?}");
        // One configuration fewer: the families and weights of smaller samples.
        let smaller = Table {
            rows: table.rows[1..].to_vec(),
            performance: table.performance[1..].to_vec(),
            ..table
        };
        let families = check_weighted_mean(&smaller, 7, WEIGHT_POWER);
        assert!(!gentle(&families) && dividing(&families), "{families:?}");
    }

    /// Checks that `auto` on all of `table` returns the mean of its `count` families on the
    /// log, weighted in proportion to their errors to the power −`power`; returns them.
    fn check_weighted_mean(table: &Table, count: usize, power: i32) -> Vec<Learner> {
        let table = table.clone();
        let rows: Vec<usize> = (0..table.rows.len()).collect();
        let targets = [
            Target::new(&table, &rows, false),
            Target::new(&table, &rows, true),
        ];
        let choice = choose(&targets, &AutoSettings::default(), 1);
        let families: Vec<&(Learner, f64)> = choice
            .candidates
            .iter()
            .filter(|(l, _)| l.log && !matches!(l.kind, Kind::Mean(_)))
            .collect();
        assert_eq!(families.len(), count);
        let Kind::Mean(members) = &choice.learner.kind else {
            panic!("{}", choice.learner);
        };
        assert!(choice.learner.log, "{}", choice.learner);
        assert_eq!(members.len(), count, "{}", choice.learner);
        // Weights in proportion to error^-power, in the families' own order.
        let raw: Vec<f64> = families.iter().map(|f| f.1.powi(-power)).collect();
        assert_eq!(choice.error, choice.candidates.last().unwrap().1);
        let total: f64 = raw.iter().sum();
        for ((w, member), (family, r)) in members.iter().zip(families.iter().zip(&raw)) {
            assert_eq!(member, &family.0);
            assert!((w - r / total).abs() < 1e-9, "{w} vs {}", r / total);
        }
        let best = families.iter().map(|f| f.1).fold(f64::INFINITY, f64::min);
        let worst = families.iter().map(|f| f.1).fold(0.0, f64::max);
        assert!(
            worst > 1.1 * best,
            "the families' errors differ: {best} … {worst}"
        );
        families.into_iter().map(|f| f.0.clone()).collect()
    }
}
