//! Cross-validation folds and the error of held-out predictions.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Splits positions `0..m` into `k` folds of (nearly) equal size at random; `k` is capped
/// at `m`, so `k ≥ m` is leave-one-out.
pub fn folds(m: usize, k: usize, seed: u64) -> Vec<Vec<usize>> {
    let k = k.clamp(1, m.max(1));
    let mut order: Vec<usize> = (0..m).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x6b6e_6f62_735f_6376));
    let mut out = vec![Vec::new(); k];
    for (i, p) in order.into_iter().enumerate() {
        out[i % k].push(p);
    }
    for f in &mut out {
        f.sort_unstable();
    }
    out
}

/// The positions not in `fold`.
pub fn complement(m: usize, fold: &[usize]) -> Vec<usize> {
    let mut inside = vec![false; m];
    for &p in fold {
        inside[p] = true;
    }
    (0..m).filter(|p| !inside[*p]).collect()
}

/// Sum of relative errors |p − a| / |a| (the caller divides by the count); an actual of 0
/// counts as 0 error here, since learn() rejects such training data up front.
pub fn relative_error_sum(predicted: &[f64], actual: &[f64]) -> f64 {
    predicted
        .iter()
        .zip(actual)
        .map(|(p, a)| {
            let e = ((p - a) / a).abs();
            if e.is_finite() {
                e
            } else if *a == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_partition_and_are_seeded() {
        let f = folds(10, 3, 7);
        let mut all: Vec<usize> = f.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(f.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 3, 3]);
        assert_eq!(f, folds(10, 3, 7));
        assert_eq!(folds(4, 10, 1).len(), 4);
        assert_eq!(complement(5, &[1, 3]), vec![0, 2, 4]);
    }
}
