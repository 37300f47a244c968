//! Associating candidate commits with options (§3.3.2): per candidate commit a LASSO of the
//! configurations' change-point likelihood at that commit on their features, λ by
//! cross-validation; features whose share of the coefficients passes eq. 7's threshold are
//! associated with the commit, and an intercept that passes it marks a change of every
//! configuration. Which configurations show a change at the commit corrects both: an option
//! that splits them clearly replaces an intercept it explains and kept options that add
//! nothing to it. An intercept that passes while fewer than half of the configurations show
//! the change is a change of some configurations that no option explains.

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// What a change point affects.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Affects {
    /// Every configuration (the model's intercept).
    All,
    /// Configurations with this feature.
    Feature(usize),
    /// Some configurations, which no option explains: the intercept passes eq. 7 and a
    /// share of the sampled configurations between `some_share` and `all_share` show a
    /// change, but no option the LASSO keeps or that splits them says which (lrzip's 669
    /// changed every back end but two).
    Unattributed,
}

/// A commit and something it changed the performance of.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Association {
    pub commit: usize,
    pub affects: Affects,
}

/// How associations are decided.
#[derive(Clone, Debug, Serialize)]
pub struct AssociationSettings {
    /// `N_influence` of eq. 7.
    pub factor: f64,
    /// Cross-validation folds for λ (the paper: three).
    pub folds: usize,
    /// Values of λ tried, from λ_max down to λ_max · 1e-3.
    pub lambdas: usize,
    /// Coefficients held non-negative (as the reference implementation's `positive=True`;
    /// the paper takes absolute values). Each configuration's likelihood is normalised, so a
    /// configuration with a second change elsewhere has less mass at this one: the second
    /// change's option then gets a negative coefficient here, and its absolute value would
    /// associate it with the wrong commit. Only a positive coefficient says "configurations
    /// with this option changed here".
    pub positive: bool,
    /// The intercept passing the threshold marks a change of every configuration (the
    /// paper); the reference implementation never reports one.
    pub intercept_rule: bool,
    /// The intercept stands for every configuration only when at least this share of the
    /// sampled configurations shows a change at the commit (their nearest measurements
    /// before and after it differ by the threshold). The intercept is the mean likelihood
    /// the options do not explain, so one configuration's peak that no option explains (a
    /// noisy measurement, a change of an interaction sampled once) passes eq. 7 as the
    /// intercept alone.
    pub all_share: f64,
    /// Below `all_share` and down to this share the intercept marks a change of some
    /// configurations that no option explains ([`Affects::Unattributed`]), if no option
    /// passed: a change is reported although the search cannot say of which options. Below
    /// it, a peak that no option explains is read as noise.
    pub some_share: f64,
    /// Nor when one option splits the configurations that show the change from those that
    /// do not: at least `all_share` of the configurations with it show the change and fewer
    /// than this share of those without it do. The commit is then associated with that
    /// option instead. Cross-validation picks the empty model when the likelihood at the
    /// commit varies with the gaps around it more than with the option (a few configurations
    /// measured close to the commit carry most of it), and the intercept alone then passes
    /// eq. 7; the paper's change of every configuration is one that the configurations
    /// without any one option show too.
    pub split_without_share: f64,
    /// Read the shares from a least-squares refit on the features the LASSO kept (a
    /// relaxed LASSO). Shrinkage moves a change of some configurations into the intercept,
    /// which the intercept rule would then read as a change of all; the refit gives the
    /// selected features their full size, but also inflates a feature kept by chance. Off
    /// (the default): the LASSO's own coefficients, as the paper.
    pub refit: bool,
}

impl Default for AssociationSettings {
    fn default() -> Self {
        AssociationSettings {
            factor: 1.0,
            folds: 3,
            lambdas: 100,
            positive: true,
            intercept_rule: true,
            all_share: 0.5,
            some_share: 0.3,
            split_without_share: 0.25,
            refit: false,
        }
    }
}

/// One candidate commit's model, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateModel {
    pub commit: usize,
    pub intercept: f64,
    /// Per feature its coefficient.
    pub coefficients: Vec<f64>,
    /// Eq. 7's threshold on the shares of the coefficients (and the intercept).
    pub threshold: f64,
    pub lambda: f64,
    /// Share of the configurations that show a change at the commit.
    pub changed: f64,
}

/// The associations of one candidate commit. `rows` are the configurations' features,
/// `y` their likelihood at the commit, `changed` per configuration whether it shows a
/// change there (`None`: not measured on both sides).
pub fn associate(
    commit: usize,
    rows: &[Vec<f64>],
    y: &[f64],
    changed: &[Option<bool>],
    settings: &AssociationSettings,
    rng: &mut ChaCha8Rng,
) -> (Vec<Association>, CandidateModel) {
    let split = splitting_feature(rows, changed);
    let share_changed = changed_share(changed.iter());
    let n = rows.first().map_or(0, Vec::len);
    let columns: Vec<Vec<f64>> = (0..n)
        .map(|f| rows.iter().map(|r| r[f]).collect())
        .collect();
    let lambda = choose_lambda(&columns, y, settings, rng);
    let solution = learn::lasso::path_with(&columns, y, &[lambda], true, settings.positive)
        .pop()
        .expect("one λ");
    let mut coefficients = vec![0.0; n];
    let mut intercept = solution.intercept;
    for (j, b) in &solution.coefficients {
        coefficients[*j] = *b;
    }
    if settings.refit && !solution.coefficients.is_empty() {
        let kept: Vec<usize> = solution.coefficients.iter().map(|(j, _)| *j).collect();
        let mut design = vec![vec![1.0; y.len()]];
        design.extend(kept.iter().map(|j| columns[*j].clone()));
        let beta = learn::least_squares(&design, y);
        intercept = beta[0];
        for (j, b) in kept.iter().zip(&beta[1..]) {
            coefficients[*j] = if settings.positive { b.max(0.0) } else { *b };
        }
    }
    // Shares of the total absolute influence; the intercept competes with the features
    // when the intercept rule is on.
    let mut magnitudes: Vec<f64> = coefficients.iter().map(|c| c.abs()).collect();
    if settings.intercept_rule {
        magnitudes.push(intercept.max(0.0));
    }
    let total: f64 = magnitudes.iter().sum();
    let count = magnitudes.len() as f64;
    let mut out = Vec::new();
    let mut threshold = f64::INFINITY;
    let mut unexplained = false;
    if total > 0.0 && count > 0.0 {
        let shares: Vec<f64> = magnitudes.iter().map(|m| m / total).collect();
        let mean = 1.0 / count;
        let sd = (shares.iter().map(|s| (mean - s).powi(2)).sum::<f64>() / count).sqrt();
        threshold = mean + settings.factor * sd;
        for (f, share) in shares.iter().enumerate() {
            if *share > threshold {
                let affects = if f == n {
                    if share_changed < settings.all_share {
                        unexplained = share_changed >= settings.some_share;
                        continue;
                    }
                    if let Some(split) = split.as_ref().filter(|s| s.is_clear(settings)) {
                        let a = Association {
                            commit,
                            affects: Affects::Feature(split.feature),
                        };
                        if !out.contains(&a) {
                            out.push(a);
                        }
                        continue;
                    }
                    Affects::All
                } else {
                    Affects::Feature(f)
                };
                out.push(Association { commit, affects });
            }
        }
    }
    if let Some(split) = split.as_ref().filter(|s| s.is_clear(settings)) {
        explain_by_split(commit, &mut out, split, rows, changed, settings);
    }
    if unexplained && out.is_empty() {
        out.push(Association {
            commit,
            affects: Affects::Unattributed,
        });
    }
    let model = CandidateModel {
        commit,
        intercept,
        coefficients,
        threshold,
        lambda,
        changed: share_changed,
    };
    (out, model)
}

/// Replaces the options the LASSO kept that add nothing to a clear split by the splitting
/// option. The likelihood at a commit varies with how close to it each configuration was
/// measured, so in a small sample the LASSO can keep options that merely co-occur with the
/// one that changed (the configurations measured nearest the commit happen to have them).
/// A kept option `f` adds nothing to the split on `s` when configurations with `s` and
/// without `f` show the change too (at least `all_share` of them, and some were measured)
/// and those with `f` and without `s` do not (fewer than `split_without_share`, or none
/// measured). A change of the interaction `f ∧ s` keeps `f` (the first stratum shows no
/// change), and a change of `f` alone keeps it (the second does).
fn explain_by_split(
    commit: usize,
    out: &mut Vec<Association>,
    split: &Split,
    rows: &[Vec<f64>],
    changed: &[Option<bool>],
    settings: &AssociationSettings,
) {
    let stratum = |f: usize, has_s: bool, has_f: bool| {
        let cells: Vec<&Option<bool>> = rows
            .iter()
            .zip(changed)
            .filter(|(r, c)| {
                c.is_some() && (r[split.feature] > 0.5) == has_s && (r[f] > 0.5) == has_f
            })
            .map(|(_, c)| c)
            .collect();
        (cells.len(), changed_share(cells.into_iter()))
    };
    let redundant = |f: usize| {
        let (n_s_only, s_only) = stratum(f, true, false);
        let (_, f_only) = stratum(f, false, true);
        n_s_only > 0 && s_only >= settings.all_share && f_only < settings.split_without_share
    };
    let before = out.len();
    out.retain(|a| match a.affects {
        Affects::Feature(f) => f == split.feature || !redundant(f),
        Affects::All | Affects::Unattributed => true,
    });
    let splitting = Association {
        commit,
        affects: Affects::Feature(split.feature),
    };
    if out.len() < before && !out.contains(&splitting) {
        out.push(splitting);
    }
}

/// Of the configurations measured on both sides of the commit, the share that shows a
/// change there.
fn changed_share<'a>(changed: impl Iterator<Item = &'a Option<bool>>) -> f64 {
    let (mut both_sides, mut yes) = (0usize, 0usize);
    for c in changed.flatten() {
        both_sides += 1;
        yes += usize::from(*c);
    }
    if both_sides == 0 {
        0.0
    } else {
        yes as f64 / both_sides as f64
    }
}

/// The feature that best splits the changed configurations from the unchanged ones.
#[derive(Clone, Debug, PartialEq)]
struct Split {
    feature: usize,
    /// Share of the configurations with the feature that changed.
    with: f64,
    /// Share of the configurations without it that changed.
    without: f64,
}

impl Split {
    fn is_clear(&self, settings: &AssociationSettings) -> bool {
        self.with >= settings.all_share && self.without < settings.split_without_share
    }
}

/// The feature whose configurations changed most more often than the others (the largest
/// `with − without`), among those with measured configurations on both sides of the split.
fn splitting_feature(rows: &[Vec<f64>], changed: &[Option<bool>]) -> Option<Split> {
    let n = rows.first().map_or(0, Vec::len);
    let mut best: Option<Split> = None;
    for feature in 0..n {
        let share = |has: bool| {
            changed_share(
                rows.iter()
                    .zip(changed)
                    .filter(|(r, _)| (r[feature] > 0.5) == has)
                    .map(|(_, c)| c),
            )
        };
        let measured = |has: bool| {
            rows.iter()
                .zip(changed)
                .any(|(r, c)| (r[feature] > 0.5) == has && c.is_some())
        };
        if !measured(true) || !measured(false) {
            continue;
        }
        let split = Split {
            feature,
            with: share(true),
            without: share(false),
        };
        if best
            .as_ref()
            .is_none_or(|b| split.with - split.without > b.with - b.without)
        {
            best = Some(split);
        }
    }
    best
}

/// λ with the smallest cross-validated squared error.
fn choose_lambda(
    columns: &[Vec<f64>],
    y: &[f64],
    settings: &AssociationSettings,
    rng: &mut ChaCha8Rng,
) -> f64 {
    let lmax = learn::lasso::lambda_max(columns, y);
    if lmax <= 0.0 {
        return 0.0;
    }
    let count = settings.lambdas.max(1);
    let lambdas: Vec<f64> = (0..count)
        .map(|k| lmax * 1e-3f64.powf(k as f64 / (count.max(2) - 1) as f64))
        .collect();
    let m = y.len();
    let folds = settings.folds.min(m);
    if folds < 2 {
        return lambdas[0];
    }
    let mut order: Vec<usize> = (0..m).collect();
    order.shuffle(rng);
    let mut errors = vec![0.0; lambdas.len()];
    for f in 0..folds {
        let test: Vec<usize> = order.iter().copied().skip(f).step_by(folds).collect();
        let train: Vec<usize> = (0..m).filter(|i| !test.contains(i)).collect();
        let pick = |rows: &[usize], c: &Vec<f64>| rows.iter().map(|i| c[*i]).collect::<Vec<f64>>();
        let train_columns: Vec<Vec<f64>> = columns.iter().map(|c| pick(&train, c)).collect();
        let test_columns: Vec<Vec<f64>> = columns.iter().map(|c| pick(&test, c)).collect();
        let train_y: Vec<f64> = train.iter().map(|i| y[*i]).collect();
        let solutions =
            learn::lasso::path_with(&train_columns, &train_y, &lambdas, false, settings.positive);
        for (l, s) in solutions.iter().enumerate() {
            errors[l] += test
                .iter()
                .enumerate()
                .map(|(t, i)| (s.predict(&test_columns, t) - y[*i]).powi(2))
                .sum::<f64>();
        }
    }
    let best = (0..lambdas.len())
        .min_by(|a, b| errors[*a].total_cmp(&errors[*b]))
        .unwrap_or(0);
    lambdas[best]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn the_option_that_explains_the_likelihood_is_associated() {
        // 4 features; configurations with feature 2 see a peak at the commit.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut rows = Vec::new();
        let mut y = Vec::new();
        for i in 0..32u32 {
            let row: Vec<f64> = (0..4).map(|b| f64::from((i >> b) & 1)).collect();
            y.push(if row[2] == 1.0 { 0.05 } else { 0.0 } + 0.001 * f64::from(i % 3));
            rows.push(row);
        }
        let changed: Vec<Option<bool>> = rows.iter().map(|r| Some(r[2] == 1.0)).collect();
        let (found, model) = associate(
            7,
            &rows,
            &y,
            &changed,
            &AssociationSettings::default(),
            &mut rng,
        );
        assert_eq!(
            found,
            vec![Association {
                commit: 7,
                affects: Affects::Feature(2)
            }],
            "{model:?}"
        );
    }

    #[test]
    fn a_change_of_every_configuration_is_the_intercept() {
        let found = associated_on_flat_likelihood(&[Some(true); 16]);
        assert_eq!(
            found,
            vec![Association {
                commit: 9,
                affects: Affects::All
            }]
        );
    }

    /// 16 configurations of 4 features, and a likelihood at the commit that no feature
    /// explains: the LASSO keeps the intercept alone.
    fn flat_likelihood() -> (Vec<Vec<f64>>, Vec<f64>) {
        let rows = (0..16u32)
            .map(|i| (0..4).map(|b| f64::from((i >> b) & 1)).collect())
            .collect();
        let y = (0..16).map(|i| 0.05 + 0.0001 * f64::from(i % 2)).collect();
        (rows, y)
    }

    /// What commit 9 is associated with on [`flat_likelihood`], given which configurations
    /// changed there.
    fn associated_on_flat_likelihood(changed: &[Option<bool>]) -> Vec<Association> {
        let (rows, y) = flat_likelihood();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        associate(
            9,
            &rows,
            &y,
            changed,
            &AssociationSettings::default(),
            &mut rng,
        )
        .0
    }

    #[test]
    fn the_intercept_alone_is_the_option_that_splits_the_changed_configurations() {
        // Every configuration with feature 1 shows the change, none without it (one of
        // them not measured on both sides).
        let (rows, y) = flat_likelihood();
        let mut changed: Vec<Option<bool>> = rows.iter().map(|r| Some(r[1] == 1.0)).collect();
        changed[0] = None;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let settings = AssociationSettings::default();
        let (found, model) = associate(9, &rows, &y, &changed, &settings, &mut rng);
        assert_eq!(model.coefficients[1], 0.0, "{model:?}");
        assert_eq!(
            found,
            vec![Association {
                commit: 9,
                affects: Affects::Feature(1)
            }]
        );
    }

    #[test]
    fn a_change_that_configurations_without_any_one_option_show_is_all() {
        // A quarter of the configurations (features 0 and 1 both off) show no change: no
        // single option splits the rest off, so the change stays one of all.
        let changed: Vec<Option<bool>> = (0..16).map(|i| Some(i % 4 != 0)).collect();
        let found = associated_on_flat_likelihood(&changed);
        assert_eq!(
            found,
            vec![Association {
                commit: 9,
                affects: Affects::All
            }]
        );
    }

    /// Commit 9's associations on 16 configurations of 4 features whose likelihood grows
    /// with features 1 and 2 (the configurations measured nearest the commit have them),
    /// given which configurations changed there.
    fn associated_where_features_1_and_2_peak(
        changed: impl Fn(&[f64]) -> bool,
    ) -> Vec<Association> {
        let rows: Vec<Vec<f64>> = (0..16u32)
            .map(|i| (0..4).map(|b| f64::from((i >> b) & 1)).collect())
            .collect();
        let y: Vec<f64> = rows.iter().map(|r| 0.01 + 0.05 * (r[1] + r[2])).collect();
        let changed: Vec<Option<bool>> = rows.iter().map(|r| Some(changed(r))).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let settings = AssociationSettings::default();
        associate(9, &rows, &y, &changed, &settings, &mut rng).0
    }

    #[test]
    fn options_that_add_nothing_to_a_clear_split_give_way_to_it() {
        // Every configuration with feature 0 changed, none without it: features 1 and 2,
        // which the LASSO keeps, add nothing (with 0 and without them changed; with them and
        // without 0 did not).
        let found = associated_where_features_1_and_2_peak(|r| r[0] == 1.0);
        assert_eq!(
            found,
            vec![Association {
                commit: 9,
                affects: Affects::Feature(0)
            }]
        );
    }

    #[test]
    fn an_option_of_an_interaction_stays_beside_the_split() {
        // Only configurations with features 0 and 1 changed: without feature 1 those with 0
        // did not, so feature 1 adds to the split on 0 and stays.
        let found = associated_where_features_1_and_2_peak(|r| r[0] == 1.0 && r[1] == 1.0);
        assert!(
            found.contains(&Association {
                commit: 9,
                affects: Affects::Feature(1)
            }),
            "{found:?}"
        );
    }

    #[test]
    fn a_change_of_some_configurations_that_no_option_explains_is_unattributed() {
        // 6 of 16 configurations changed, spread so that no option splits them off.
        let changed: Vec<Option<bool>> = (0..16)
            .map(|i| Some([1, 2, 4].contains(&(i % 8))))
            .collect();
        assert_eq!(
            associated_on_flat_likelihood(&changed),
            vec![Association {
                commit: 9,
                affects: Affects::Unattributed
            }]
        );
        // 2 of 16: a peak no option explains is noise.
        let changed: Vec<Option<bool>> = (0..16).map(|i| Some(i == 3 || i == 12)).collect();
        assert_eq!(associated_on_flat_likelihood(&changed), vec![]);
    }

    #[test]
    fn the_split_compares_measured_configurations_only() {
        let rows: Vec<Vec<f64>> = (0..8u32)
            .map(|i| (0..3).map(|b| f64::from((i >> b) & 1)).collect())
            .collect();
        // Feature 2 on: changed; off: unchanged or not measured on both sides.
        let changed: Vec<Option<bool>> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if r[2] == 1.0 {
                    Some(true)
                } else if i % 2 == 0 {
                    None
                } else {
                    Some(false)
                }
            })
            .collect();
        let split = splitting_feature(&rows, &changed).expect("a split");
        assert_eq!(
            split,
            Split {
                feature: 2,
                with: 1.0,
                without: 0.0
            }
        );
        assert_eq!(splitting_feature(&rows, &[None; 8]), None);
    }
}
