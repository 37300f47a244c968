//! Candidate commits (§3.3.1): each configuration's likelihood peaks above eq. 6's
//! threshold, pooled over configurations and clustered by kernel density estimation; the
//! local maxima of the density are the candidates.

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// The kernel of the density estimate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Kernel {
    /// `exp(−|x|/h) / 2h`, as the reference implementation uses.
    Exponential,
    Gaussian,
}

/// How peaks are clustered.
#[derive(Clone, Debug, Serialize)]
pub struct KdeSettings {
    pub kernel: Kernel,
    /// Bandwidths tried (in commits); the one with the best cross-validated log-likelihood of
    /// the pooled peaks wins.
    pub bandwidths: Vec<f64>,
    pub folds: usize,
    /// Of two local maxima of the density closer than this many commits, only the higher is
    /// a candidate. `None` (the default): the resolution of the peaks themselves — a
    /// maximum is dropped when a higher one lies within half the gap between the measured
    /// commits around its closest peak. A configuration measured at few commits places its
    /// peak in the middle of a wide gap, so such peaks scatter around a change, and the
    /// cross-validated bandwidth is narrow where many configurations agree exactly: every
    /// stray peak would be a candidate. Peaks narrowed down by exploitation (gaps of a commit
    /// or two) keep changes a few commits apart as candidates of their own.
    pub separation: Option<usize>,
}

impl Default for KdeSettings {
    /// The reference implementation's grid: 100 bandwidths from 0.1 to 10 commits, evenly
    /// spaced in log scale, 5-fold cross-validation.
    fn default() -> Self {
        KdeSettings {
            kernel: Kernel::Exponential,
            bandwidths: (0..100)
                .map(|i| 10f64.powf(-1.0 + 2.0 * i as f64 / 99.0))
                .collect(),
            folds: 5,
            separation: None,
        }
    }
}

/// Eq. 6: the mean likelihood `1/|V|` plus `factor` standard deviations of `p` over all
/// commits.
pub fn peak_threshold(p: &[f64], factor: f64) -> f64 {
    let n = p.len() as f64;
    let mean = 1.0 / n;
    let sd = (p.iter().map(|x| (mean - x).powi(2)).sum::<f64>() / n).sqrt();
    mean + factor * sd
}

/// Local maxima of `x` (a plateau counts once, at its middle, as `scipy.signal.find_peaks`
/// places it) whose height is at least `min_height`. The first and last points are never
/// peaks.
pub fn peaks(x: &[f64], min_height: f64) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 1;
    while i + 1 < x.len() {
        if x[i - 1] < x[i] {
            let mut j = i;
            while j + 1 < x.len() && x[j + 1] == x[i] {
                j += 1;
            }
            if j + 1 < x.len() && x[j + 1] < x[i] {
                if x[i] >= min_height {
                    out.push((i + j) / 2);
                }
                i = j + 1;
                continue;
            }
            i = j.max(i) + 1;
            continue;
        }
        i += 1;
    }
    out
}

/// A density over commits estimated from `points` (peaks, with repeats).
struct Density<'a> {
    /// Distinct points and how often each occurs.
    points: &'a [(f64, f64)],
    total: f64,
    kernel: Kernel,
    h: f64,
}

impl Density<'_> {
    fn at(&self, x: f64) -> f64 {
        let sum: f64 = self
            .points
            .iter()
            .map(|(p, w)| w * kernel(self.kernel, (x - p) / self.h))
            .sum();
        sum / (self.total * self.h)
    }
}

fn kernel(k: Kernel, u: f64) -> f64 {
    match k {
        Kernel::Exponential => 0.5 * (-u.abs()).exp(),
        Kernel::Gaussian => (-0.5 * u * u).exp() / (2.0 * std::f64::consts::PI).sqrt(),
    }
}

fn weighted(points: &[usize]) -> Vec<(f64, f64)> {
    let mut sorted = points.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<(f64, f64)> = Vec::new();
    for p in sorted {
        match out.last_mut() {
            Some((q, w)) if *q == p as f64 => *w += 1.0,
            _ => out.push((p as f64, 1.0)),
        }
    }
    out
}

/// The bandwidth with the best cross-validated log-likelihood.
fn bandwidth(points: &[usize], settings: &KdeSettings, rng: &mut ChaCha8Rng) -> f64 {
    let folds = settings.folds.clamp(2, points.len().max(2));
    let mut shuffled = points.to_vec();
    shuffled.shuffle(rng);
    // Per fold: the training points and the held-out points, each weighted.
    type Fold = (Vec<(f64, f64)>, Vec<(f64, f64)>);
    let parts: Vec<Fold> = (0..folds)
        .map(|f| {
            let mut test = Vec::new();
            let mut train = Vec::new();
            for (i, p) in shuffled.iter().enumerate() {
                if i % folds == f {
                    test.push(*p);
                } else {
                    train.push(*p);
                }
            }
            (weighted(&train), weighted(&test))
        })
        .filter(|(train, test)| !train.is_empty() && !test.is_empty())
        .collect();
    let mut best = (
        f64::NEG_INFINITY,
        settings.bandwidths.first().copied().unwrap_or(1.0),
    );
    for &h in &settings.bandwidths {
        let mut score = 0.0;
        for (train, test) in &parts {
            let density = Density {
                points: train,
                total: train.iter().map(|x| x.1).sum(),
                kernel: settings.kernel,
                h,
            };
            score += test
                .iter()
                .map(|(x, w)| w * density.at(*x).max(1e-300).ln())
                .sum::<f64>();
        }
        if score > best.0 {
            best = (score, h);
        }
    }
    best.1
}

/// A configuration's likelihood peak: its commit and the gap between the measured commits
/// around it (how precisely the measurements place it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peak {
    pub commit: usize,
    pub gap: usize,
}

/// The candidate commits: local maxima over `0..commits` of the density of the pooled
/// peaks, and the bandwidth used.
pub fn cluster(
    pooled: &[Peak],
    commits: usize,
    settings: &KdeSettings,
    rng: &mut ChaCha8Rng,
) -> (Vec<usize>, f64) {
    if pooled.is_empty() {
        return (Vec::new(), 0.0);
    }
    let at: Vec<usize> = pooled.iter().map(|p| p.commit).collect();
    let h = if at.len() < 2 {
        1.0
    } else {
        bandwidth(&at, settings, rng)
    };
    let points = weighted(&at);
    let density = Density {
        points: &points,
        total: at.len() as f64,
        kernel: settings.kernel,
        h,
    };
    let curve: Vec<f64> = (0..commits).map(|v| density.at(v as f64)).collect();
    let mut maxima = peaks(&curve, 0.0);
    maxima.sort_by(|a, b| curve[*b].total_cmp(&curve[*a]).then(a.cmp(b)));
    let mut kept: Vec<usize> = Vec::new();
    for m in maxima {
        let separation = settings.separation.unwrap_or_else(|| resolution(pooled, m));
        if kept.iter().all(|k| k.abs_diff(m) >= separation) {
            kept.push(m);
        }
    }
    kept.sort_unstable();
    (kept, h)
}

/// Half the gap around the peak closest to `m` (the narrowest of equally close ones).
fn resolution(pooled: &[Peak], m: usize) -> usize {
    pooled
        .iter()
        .min_by_key(|p| (p.commit.abs_diff(m), p.gap))
        .map_or(1, |p| p.gap.div_ceil(2).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn peaks_as_scipy_finds_them() {
        assert_eq!(
            peaks(&[0.0, 1.0, 0.0, 2.0, 2.0, 2.0, 1.0, 3.0], 0.0),
            vec![1, 4]
        );
        assert_eq!(peaks(&[0.0, 1.0, 0.0, 2.0, 2.0, 0.0], 1.5), vec![3]);
        assert!(peaks(&[1.0, 1.0, 1.0], 0.0).is_empty());
        assert!(peaks(&[0.0, 1.0, 1.0], 0.0).is_empty());
    }

    #[test]
    fn nearby_peaks_cluster_into_one_candidate() {
        let pooled: Vec<Peak> = [100, 101, 99, 100, 102, 100, 400, 401, 399, 400]
            .into_iter()
            .map(|commit| Peak { commit, gap: 2 })
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (candidates, h) = cluster(&pooled, 1000, &KdeSettings::default(), &mut rng);
        assert!(h > 0.0);
        assert_eq!(candidates, vec![100, 400], "bandwidth {h}");
    }

    #[test]
    fn imprecise_peaks_near_a_precise_change_are_not_candidates_but_precise_ones_are() {
        // Precise peaks (gap 1) at 100 and 108; imprecise ones (gap 30) scattered around 100.
        let mut pooled: Vec<Peak> = [100, 100, 100, 100, 108, 108, 108]
            .into_iter()
            .map(|commit| Peak { commit, gap: 1 })
            .collect();
        pooled.extend([88, 113].into_iter().map(|commit| Peak { commit, gap: 30 }));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (candidates, h) = cluster(&pooled, 300, &KdeSettings::default(), &mut rng);
        assert_eq!(candidates, vec![100, 108], "bandwidth {h}");
        // A fixed separation of 10 merges the two changes and keeps the imprecise peaks.
        let fixed = KdeSettings {
            separation: Some(10),
            ..KdeSettings::default()
        };
        let (candidates, _) = cluster(&pooled, 300, &fixed, &mut rng);
        assert_eq!(candidates, vec![88, 100, 113]);
    }
}
