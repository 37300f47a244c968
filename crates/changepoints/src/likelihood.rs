//! Change-point likelihood of one configuration's sampled history (§3.2, eq. 3–5).
//!
//! Every pair of measured commits `a < b` whose performance differs by at least the
//! threshold (eq. 3) is evidence that some commit `v` with `a < v ≤ b` changed performance,
//! weighed by `(b − a)^-2` (eq. 4): a near pair says more than a far one, which may hide
//! several changes. The sums are normalised to a distribution over commits (eq. 5).

use std::collections::BTreeMap;

use serde::Serialize;

/// When two measurements of one configuration count as different (eq. 3's τ).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Threshold {
    /// `|π(a) − π(b)| ≥ τ · min(π(a), π(b))`: a change of τ·100 % either way.
    Relative(f64),
    /// `|π(a) − π(b)| ≥ τ`, in the measurement's unit.
    Absolute(f64),
}

impl Threshold {
    pub fn differs(&self, a: f64, b: f64) -> bool {
        let d = (a - b).abs();
        match *self {
            Threshold::Relative(t) => d >= t * a.abs().min(b.abs()),
            Threshold::Absolute(t) => d >= t,
        }
    }
}

/// `p(v)` for every commit `v` in `0..commits` from the measured `(commit, value)` pairs;
/// all zero when no pair differs (no evidence of any change). Commit 0 has no predecessor
/// and is never a change point.
///
/// Each differing pair adds its weight to a range of commits, so the sums are one
/// difference array: O(m² + commits) for m measured commits.
pub fn likelihood(
    history: &BTreeMap<usize, f64>,
    commits: usize,
    threshold: Threshold,
) -> Vec<f64> {
    let mut delta = vec![0.0f64; commits + 1];
    let points: Vec<(usize, f64)> = history.iter().map(|(c, v)| (*c, *v)).collect();
    for (i, &(a, pa)) in points.iter().enumerate() {
        for &(b, pb) in &points[i + 1..] {
            if b >= commits || !threshold.differs(pa, pb) {
                continue;
            }
            let w = 1.0 / ((b - a) as f64).powi(2);
            delta[a + 1] += w;
            delta[b + 1] -= w;
        }
    }
    let mut p = Vec::with_capacity(commits);
    let mut running = 0.0;
    for d in &delta[..commits] {
        running += d;
        // Cancellation in the running sum leaves tiny residues where no range is open.
        p.push(if running.abs() < 1e-15 { 0.0 } else { running });
    }
    let total: f64 = p.iter().sum();
    if total > 0.0 {
        for x in &mut p {
            *x /= total;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(points: &[(usize, f64)]) -> BTreeMap<usize, f64> {
        points.iter().copied().collect()
    }

    #[test]
    fn one_step_puts_the_mass_between_the_nearest_differing_pair() {
        // Performance steps from 1 to 2 at commit 50.
        let h = history(&[
            (0, 1.0),
            (40, 1.0),
            (49, 1.0),
            (55, 2.0),
            (70, 2.0),
            (99, 2.0),
        ]);
        let p = likelihood(&h, 100, Threshold::Relative(0.1));
        let total: f64 = p.iter().sum();
        assert!((total - 1.0).abs() < 1e-12);
        let best = (0..100).max_by(|a, b| p[*a].total_cmp(&p[*b])).unwrap();
        assert!((50..=55).contains(&best), "peak at {best}");
        assert!(p[50] > p[45] && p[50] > p[60]);
        assert_eq!(p[0], 0.0);
    }

    #[test]
    fn no_difference_no_likelihood() {
        let h = history(&[(0, 1.0), (50, 1.05), (99, 1.0)]);
        assert!(
            likelihood(&h, 100, Threshold::Relative(0.1))
                .iter()
                .all(|x| *x == 0.0)
        );
        assert!(
            likelihood(&h, 100, Threshold::Absolute(0.01))
                .iter()
                .any(|x| *x > 0.0)
        );
    }
}
