//! Scoring a detection against a known truth (§4.1.4) and the synthetic grid of Table 1.
//!
//! The unit is an association (commit, option), an interaction being several with one
//! commit and a change of every configuration being (commit, all). A found association is
//! correct when the truth has one with the same option within `tolerance` commits; a true
//! one is recalled when a found one is that close. F1 is their harmonic mean.

use std::time::Instant;

use serde::Serialize;

use crate::Error;
use crate::association::{Affects, Association};
use crate::likelihood::Threshold;
use crate::search::{Settings, detect};
use crate::synthetic::{SyntheticSettings, SyntheticSource, SyntheticSystem};

/// The paper's tolerance: a change point found within 5 commits of the true one counts.
pub const TOLERANCE: usize = 5;

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Score {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub found: usize,
    pub truth: usize,
}

/// The true associations of a synthetic system (its options are its features, in order).
pub fn truth(system: &SyntheticSystem) -> Vec<Association> {
    let mut out = Vec::new();
    for c in &system.change_points {
        if c.options.is_empty() {
            out.push(Association {
                commit: c.commit,
                affects: Affects::All,
            });
        }
        for o in &c.options {
            out.push(Association {
                commit: c.commit,
                affects: Affects::Feature(*o),
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Precision, recall and F1 of `found` against `truth`, an association matching one with
/// the same option within `tolerance` commits. A change that no option explains
/// ([`Affects::Unattributed`]) claims no option: within `tolerance` of a true change it
/// counts neither way (the commit is right, its options unsaid), elsewhere it is false.
pub fn score(truth: &[Association], found: &[Association], tolerance: usize) -> Score {
    let near = |a: &Association, b: &Association| {
        a.affects == b.affects && a.commit.abs_diff(b.commit) <= tolerance
    };
    let found: Vec<Association> = found
        .iter()
        .filter(|f| {
            f.affects != Affects::Unattributed
                || !truth
                    .iter()
                    .any(|t| t.commit.abs_diff(f.commit) <= tolerance)
        })
        .cloned()
        .collect();
    let found = &found[..];
    let correct = found
        .iter()
        .filter(|f| truth.iter().any(|t| near(f, t)))
        .count();
    let recalled = truth
        .iter()
        .filter(|t| found.iter().any(|f| near(f, t)))
        .count();
    let precision = if found.is_empty() {
        0.0
    } else {
        correct as f64 / found.len() as f64
    };
    let recall = if truth.is_empty() {
        1.0
    } else {
        recalled as f64 / truth.len() as f64
    };
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    Score {
        precision,
        recall,
        f1,
        found: found.len(),
        truth: truth.len(),
    }
}

/// One point of the synthetic grid (Table 1).
#[derive(Clone, Debug, Serialize)]
pub struct GridPoint {
    pub options: usize,
    pub commits: usize,
    pub change_points: usize,
    pub p_interaction: f64,
    /// Initial configurations per option (`N_initial`).
    pub initial_per_option: usize,
    pub measurements: usize,
}

/// Table 1's full grid: 4 · 2 · 4 · 3 · 3 · 3 = 864 points.
pub fn table1() -> Vec<GridPoint> {
    let mut out = Vec::new();
    for options in [8, 16, 32, 64] {
        for commits in [1000, 2500] {
            for change_points in [1, 2, 5, 10] {
                for p_interaction in [0.5, 0.7, 0.9] {
                    for initial_per_option in [2, 5, 10] {
                        for measurements in [100, 200, 500] {
                            out.push(GridPoint {
                                options,
                                commits,
                                change_points,
                                p_interaction,
                                initial_per_option,
                                measurements,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// A small subset of Table 1 that runs in seconds: both history lengths' smaller one, the
/// two smaller option counts, few and several change points, the middle interaction
/// parameter, N_initial 2 and 500 measurements per iteration.
pub fn quick_grid() -> Vec<GridPoint> {
    table1()
        .into_iter()
        .filter(|g| {
            g.commits == 1000
                && (g.options == 8 || g.options == 16)
                && (g.change_points == 2 || g.change_points == 5)
                && g.p_interaction == 0.7
                && g.initial_per_option == 2
                && g.measurements == 500
        })
        .collect()
}

/// The result of one synthetic system.
#[derive(Clone, Debug, Serialize)]
pub struct GridRow {
    pub point: GridPoint,
    pub seed: u64,
    pub score: Score,
    pub iterations: usize,
    pub measurements: usize,
    /// Measurements over the whole grid of configurations × commits.
    pub effort: f64,
    pub stopped: String,
    pub seconds: f64,
}

/// The system of a grid point and seed (the same one the reference comparison uses).
pub fn grid_system(point: &GridPoint, seed: u64, noise: f64) -> Result<SyntheticSystem, Error> {
    SyntheticSystem::generate(&SyntheticSettings {
        options: point.options,
        commits: point.commits,
        change_points: point.change_points,
        p_interaction: point.p_interaction,
        noise,
        seed,
        ..SyntheticSettings::default()
    })
}

/// The search settings of a grid point: `base` with the point's initial sample and budget.
pub fn grid_settings(point: &GridPoint, base: &Settings, seed: u64) -> Settings {
    let mut s = base.clone();
    s.initial_configurations = point.initial_per_option * point.options;
    s.acquisition.measurements = point.measurements;
    s.seed = seed;
    s
}

/// A grid point's system for one seed with the search parameters it is run with, named
/// as the reference comparison names it: what the reference implementation is run on.
pub fn reference_system(
    point: &GridPoint,
    seed: u64,
    base: &Settings,
    noise: f64,
) -> Result<(String, SyntheticSystem), Error> {
    let mut system = grid_system(point, seed, noise)?;
    let settings = grid_settings(point, base, seed);
    system.params = Some(serde_json::json!({
        "seed": seed,
        "measurements_per_iteration": point.measurements,
        "max_iterations": settings.max_iterations,
        "n_initial_configs": settings.initial_configurations,
        "commit_rate": settings.commit_share,
        "threshold": match settings.threshold {
            Threshold::Relative(t) | Threshold::Absolute(t) => t,
        },
    }));
    let name = format!(
        "o{}-c{}-cp{}-p{}-n{}-m{}-s{seed}.json",
        point.options,
        point.commits,
        point.change_points,
        point.p_interaction,
        point.initial_per_option,
        point.measurements
    );
    Ok((name, system))
}

/// Associations written as `[commit, option]` (an option's index), `[commit, -1]` (every
/// configuration) or `[commit]` (no option explains it), as `knobs changepoints score`
/// reads another tool's detection.
pub fn associations_from_pairs(pairs: &[Vec<f64>]) -> Result<Vec<Association>, Error> {
    pairs
        .iter()
        .map(|a| {
            let affects = match a[..] {
                [_] => Affects::Unattributed,
                [_, option, ..] if option < 0.0 => Affects::All,
                [_, option, ..] => Affects::Feature(option as usize),
                [] => {
                    return Err(Error::Invalid(
                        "an association needs a commit (and an option, unless no option \
                         explains it)"
                            .into(),
                    ));
                }
            };
            Ok(Association {
                commit: a[0] as usize,
                affects,
            })
        })
        .collect()
}

/// Runs the search on one grid point and seed and scores it.
pub fn run_point(
    point: &GridPoint,
    seed: u64,
    base: &Settings,
    noise: f64,
) -> Result<GridRow, Error> {
    let started = Instant::now();
    let system = grid_system(point, seed, noise)?;
    let truth = truth(&system);
    let mut source = SyntheticSource::new(system, seed);
    let settings = grid_settings(point, base, seed);
    let detection = detect(&mut source, &settings)?;
    let score = score(&truth, &detection.associations, TOLERANCE);
    let grid = 2f64.powi(point.options as i32) * point.commits as f64;
    Ok(GridRow {
        point: point.clone(),
        seed,
        score,
        iterations: detection.iterations.len(),
        measurements: detection.measurements,
        effort: detection.measurements as f64 / grid,
        stopped: detection.stopped,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(commit: usize, f: Option<usize>) -> Association {
        Association {
            commit,
            affects: f.map_or(Affects::All, Affects::Feature),
        }
    }

    #[test]
    fn a_change_no_option_explains_is_false_only_away_from_true_changes() {
        let truth = vec![a(100, Some(1))];
        let unattributed = |commit| Association {
            commit,
            affects: Affects::Unattributed,
        };
        let s = score(&truth, &[a(100, Some(1)), unattributed(103)], TOLERANCE);
        assert_eq!((s.precision, s.recall, s.found), (1.0, 1.0, 1));
        let s = score(&truth, &[a(100, Some(1)), unattributed(300)], TOLERANCE);
        assert_eq!((s.precision, s.recall, s.found), (0.5, 1.0, 2));
    }

    #[test]
    fn scores_with_a_tolerance() {
        let truth = vec![a(100, Some(1)), a(100, Some(2)), a(500, None)];
        let found = vec![a(104, Some(1)), a(106, Some(2)), a(500, Some(3))];
        let s = score(&truth, &found, TOLERANCE);
        assert!((s.precision - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.recall - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.f1 - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(score(&truth, &[], TOLERANCE).f1, 0.0);
        assert_eq!(table1().len(), 864);
    }

    #[test]
    fn associations_read_from_pairs() {
        let read = associations_from_pairs(&[vec![3.0], vec![4.0, -1.0], vec![5.0, 2.0]]).unwrap();
        assert_eq!(
            read,
            [
                Association {
                    commit: 3,
                    affects: Affects::Unattributed
                },
                a(4, None),
                a(5, Some(2)),
            ]
        );
        let err = associations_from_pairs(&[vec![1.0, 0.0], vec![]]).unwrap_err();
        assert!(err.to_string().contains("needs a commit"), "{err}");
    }

    #[test]
    fn a_reference_system_carries_its_search_parameters() {
        let point = &GridPoint {
            options: 8,
            commits: 1000,
            change_points: 2,
            p_interaction: 0.7,
            initial_per_option: 2,
            measurements: 500,
        };
        let base = Settings::default();
        let (name, system) = reference_system(point, 3, &base, 0.0).unwrap();
        assert_eq!(name, "o8-c1000-cp2-p0.7-n2-m500-s3.json");
        let params = system.params.as_ref().unwrap();
        assert_eq!(params["seed"], 3);
        assert_eq!(params["measurements_per_iteration"], 500);
        assert_eq!(params["n_initial_configs"], 16);
        let mut bare = system.clone();
        bare.params = None;
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            serde_json::to_value(grid_system(point, 3, 0.0).unwrap()).unwrap()
        );
    }
}
