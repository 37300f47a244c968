//! Acquiring new measurements (§3.4): commits for configurations already sampled, and new
//! configurations, each by exploration (agnostic of the current solution) and exploitation
//! (guided by it), within a per-iteration budget whose split shifts towards exploitation.

use std::collections::{BTreeMap, HashSet};

use rand::Rng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use space::{Configuration, ValidConfigurations};

use crate::Features;
use crate::association::{Affects, Association};

/// How new commits are explored.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum CommitExploration {
    /// The unmeasured commits farthest from the configuration's measured ones (the paper).
    Farthest,
    /// Unmeasured commits drawn at random (the reference implementation).
    Random,
}

/// The budget and its split (§3.4, with the paper's defaults).
#[derive(Clone, Debug, Serialize)]
pub struct AcquisitionSettings {
    /// New measurements per iteration (`n_measurements`).
    pub measurements: usize,
    /// Share of the budget for commits of sampled configurations; the rest measures new
    /// configurations (`n_commits_to_configs`, decays by `commits_to_configs_decay`).
    pub commits_to_configs: f64,
    pub commits_to_configs_decay: f64,
    /// Share of the commit budget for exploration (`n_commits_explore`, decays by
    /// `commits_explore_decay`).
    pub commits_explore: f64,
    pub commits_explore_decay: f64,
    pub commit_exploration: CommitExploration,
    /// New configurations for exploration per iteration (distance-based).
    pub explore_configurations: usize,
    /// New configurations per candidate commit for each of under- and over-approximation.
    pub exploit_configurations: usize,
    /// Share of the options left free when checking for under- or over-approximation.
    pub free_share: f64,
}

impl Default for AcquisitionSettings {
    fn default() -> Self {
        AcquisitionSettings {
            measurements: 200,
            commits_to_configs: 0.5,
            commits_to_configs_decay: 0.95,
            commits_explore: 0.5,
            commits_explore_decay: 0.9,
            commit_exploration: CommitExploration::Farthest,
            explore_configurations: 75,
            exploit_configurations: 3,
            free_share: 0.5,
        }
    }
}

/// The budget of one iteration.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Budget {
    pub explore_commits: usize,
    pub exploit_commits: usize,
    pub configurations: usize,
}

impl AcquisitionSettings {
    /// The split at iteration `i` (0-based), after `i` decays.
    pub fn budget(&self, i: usize) -> Budget {
        let to_commits = self.commits_to_configs * self.commits_to_configs_decay.powi(i as i32);
        let explore = self.commits_explore * self.commits_explore_decay.powi(i as i32);
        let commits = (self.measurements as f64 * to_commits).round() as usize;
        let explore_commits = (commits as f64 * explore).round() as usize;
        Budget {
            explore_commits,
            exploit_commits: commits - explore_commits,
            configurations: self.measurements - commits,
        }
    }
}

/// Shares `total` among `n` slots as evenly as possible, the remainder to random slots.
pub fn share(total: usize, n: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let mut out = vec![total / n; n];
    let mut slots: Vec<usize> = (0..n).collect();
    slots.shuffle(rng);
    for s in slots.into_iter().take(total % n) {
        out[s] += 1;
    }
    out
}

/// Up to `count` unmeasured commits for exploring a configuration's history.
pub fn explore_commits(
    measured: &BTreeMap<usize, f64>,
    commits: usize,
    count: usize,
    how: CommitExploration,
    rng: &mut ChaCha8Rng,
) -> Vec<usize> {
    let mut taken: HashSet<usize> = measured.keys().copied().collect();
    let mut out = Vec::new();
    match how {
        CommitExploration::Random => {
            let mut free: Vec<usize> = (0..commits).filter(|c| !taken.contains(c)).collect();
            free.shuffle(rng);
            out.extend(free.into_iter().take(count));
        }
        CommitExploration::Farthest => {
            // The midpoint of the widest gap, one at a time (each choice splits its gap).
            let mut points: Vec<usize> = taken.iter().copied().collect();
            points.sort_unstable();
            for _ in 0..count {
                let Some(c) = farthest(&points, commits) else {
                    break;
                };
                if !taken.insert(c) {
                    break;
                }
                out.push(c);
                let at = points.partition_point(|p| *p < c);
                points.insert(at, c);
            }
        }
    }
    out
}

/// The commit in `0..commits` farthest from every point (sorted); `None` if all are taken.
fn farthest(points: &[usize], commits: usize) -> Option<usize> {
    if points.is_empty() {
        return (commits > 0).then_some(commits / 2);
    }
    let mut best: Option<(usize, usize)> = None;
    let mut consider = |c: usize, d: usize| {
        if d > 0 && best.is_none_or(|(_, bd)| d > bd) {
            best = Some((c, d));
        }
    };
    consider(0, points[0]);
    for w in points.windows(2) {
        let mid = (w[0] + w[1]) / 2;
        consider(mid, (mid - w[0]).min(w[1] - mid));
    }
    let last = *points.last().expect("non-empty");
    if last + 1 < commits {
        consider(commits - 1, commits - 1 - last);
    }
    best.map(|(c, _)| c)
}

/// Up to `count` commits that exploit a configuration's likelihood: first its peaks
/// (a peak is the middle of the range between the nearest measured commits that differ,
/// so measuring it halves that range: the "narrow down" of §2.3's Figure 2), then commits
/// where the likelihood suggests a change but is not confident — above the mean `1/|V|`,
/// below eq. 6's threshold (§3.4.1), drawn at random.
pub fn exploit_commits(
    measured: &BTreeMap<usize, f64>,
    likelihood: &[f64],
    peaks: &[usize],
    threshold: f64,
    count: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<usize> {
    let mut out: Vec<usize> = peaks
        .iter()
        .copied()
        .filter(|v| !measured.contains_key(v))
        .take(count)
        .collect();
    let mean = 1.0 / likelihood.len() as f64;
    let mut open: Vec<usize> = (0..likelihood.len())
        .filter(|v| {
            likelihood[*v] > mean
                && likelihood[*v] < threshold
                && !measured.contains_key(v)
                && !out.contains(v)
        })
        .collect();
    open.shuffle(rng);
    open.truncate(count - out.len());
    out.extend(open);
    out
}

/// New configurations that test the current candidate solution (§3.4.2): per candidate
/// commit with associated features, some that keep every associated feature and free a
/// share of the others (under-approximation: is an option missing?), and some that free a
/// share of the associated ones and hold the others off (over-approximation: is one too
/// many?).
pub fn exploit_configurations(
    valid: &ValidConfigurations,
    features: &Features,
    candidate: &[Association],
    used: &HashSet<Configuration>,
    settings: &AcquisitionSettings,
    rng: &mut ChaCha8Rng,
) -> Vec<Configuration> {
    let space = valid.space();
    let mut by_commit: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for a in candidate {
        if let Affects::Feature(f) = a.affects {
            by_commit.entry(a.commit).or_default().push(f);
        }
    }
    let mut out: Vec<Configuration> = Vec::new();
    let mut taken = used.clone();
    for associated in by_commit.values() {
        let options: HashSet<u32> = associated
            .iter()
            .map(|f| features.literal(*f).0.0)
            .collect();
        let others: Vec<space::OptionId> =
            space.ids().filter(|id| !options.contains(&id.0)).collect();
        for under in [true, false] {
            for _ in 0..settings.exploit_configurations {
                let mut bdd = valid.bdd().clone();
                if under {
                    for f in associated {
                        bdd = bdd.and(&valid.literal(features.literal(*f)));
                    }
                    for id in &others {
                        if !rng.gen_bool(settings.free_share.clamp(0.0, 1.0)) {
                            bdd = bdd.and(&valid.literal((*id, 0)));
                        }
                    }
                } else {
                    for f in associated {
                        if !rng.gen_bool(settings.free_share.clamp(0.0, 1.0)) {
                            bdd = bdd.and(&valid.literal(features.literal(*f)));
                        }
                    }
                    for id in &others {
                        bdd = bdd.and(&valid.literal((*id, 0)));
                    }
                }
                // A few draws avoid configurations already used; constraints may leave none.
                for _ in 0..8 {
                    match valid.sample_uniform_in(&bdd, rng) {
                        Some(c) if !taken.contains(&c) => {
                            taken.insert(c.clone());
                            out.push(c);
                            break;
                        }
                        Some(_) => continue,
                        None => break,
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn farthest_commits_split_the_widest_gaps() {
        let measured: BTreeMap<usize, f64> = [(0, 1.0), (99, 1.0)].into_iter().collect();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let got = explore_commits(&measured, 100, 3, CommitExploration::Farthest, &mut rng);
        assert_eq!(got[0], 49);
        assert!(got[1] == 24 || got[1] == 74);
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn budget_shifts_to_exploitation_and_configurations() {
        let s = AcquisitionSettings::default();
        let b0 = s.budget(0);
        assert_eq!(
            (b0.explore_commits, b0.exploit_commits, b0.configurations),
            (50, 50, 100)
        );
        let b5 = s.budget(5);
        assert!(b5.explore_commits < b5.exploit_commits);
        assert!(b5.configurations > 100);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let shares = share(10, 3, &mut rng);
        assert_eq!(shares.iter().sum::<usize>(), 10);
        assert!(shares.iter().all(|s| *s == 3 || *s == 4));
    }
}
