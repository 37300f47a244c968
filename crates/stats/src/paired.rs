//! Paired comparisons: Wilcoxon's signed-rank test and Holm's correction for testing several
//! hypotheses at once. The benchmark runner compares each approach's per-configuration
//! errors with the best approach's on the same configurations.

/// The outcome of [`wilcoxon_signed_rank`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SignedRank {
    /// Pairs with a non-zero difference (zero differences are dropped, Wilcoxon's way).
    pub n: usize,
    /// Sum of the ranks of the positive differences `x − y`.
    pub w_plus: f64,
    /// Two-sided p-value: exact (the null distribution enumerated) when there are no ties
    /// among the absolute differences and `n ≤ 60`, otherwise the normal approximation with
    /// the tie and continuity corrections.
    pub p: f64,
    pub exact: bool,
}

/// Wilcoxon's signed-rank test of `x` against `y`, paired by position: is the median of
/// `x − y` zero? `None` when the slices differ in length or no pair differs.
pub fn wilcoxon_signed_rank(x: &[f64], y: &[f64]) -> Option<SignedRank> {
    if x.len() != y.len() {
        return None;
    }
    let mut d: Vec<f64> = x
        .iter()
        .zip(y)
        .map(|(a, b)| a - b)
        .filter(|d| *d != 0.0 && d.is_finite())
        .collect();
    let n = d.len();
    if n == 0 {
        return None;
    }
    d.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Average ranks of equal absolute differences; Σ(t³ − t) for the variance's correction.
    let mut ranks = vec![0.0; n];
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && d[j + 1].abs() == d[i].abs() {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        ranks[i..=j].iter_mut().for_each(|x| *x = r);
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let w_plus: f64 = d
        .iter()
        .zip(&ranks)
        .filter(|(d, _)| **d > 0.0)
        .map(|(_, r)| r)
        .sum();
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    if ties == 0.0 && n <= 60 {
        // Number of subsets of {1..n} with each rank sum: the null distribution of W+.
        let max = n * (n + 1) / 2;
        let mut counts = vec![0.0f64; max + 1];
        counts[0] = 1.0;
        for k in 1..=n {
            for s in (k..=max).rev() {
                counts[s] += counts[s - k];
            }
        }
        let total = 2f64.powi(n as i32);
        let w = w_plus.round() as usize;
        let lower = w.min(max - w);
        let tail: f64 = counts[..=lower].iter().sum::<f64>() / total;
        return Some(SignedRank {
            n,
            w_plus,
            p: (2.0 * tail).min(1.0),
            exact: true,
        });
    }
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - ties / 48.0;
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = ((w_plus - mean).abs() - 0.5).max(0.0) / var.sqrt();
        (2.0 * normal_upper_tail(z)).min(1.0)
    };
    Some(SignedRank {
        n,
        w_plus,
        p,
        exact: false,
    })
}

/// P(Z > z) for a standard normal Z (Abramowitz and Stegun 26.2.17, error below 7.5e-8).
pub fn normal_upper_tail(z: f64) -> f64 {
    if z < 0.0 {
        return 1.0 - normal_upper_tail(-z);
    }
    let t = 1.0 / (1.0 + 0.231_641_9 * z);
    let poly = t
        * (0.319_381_530
            + t * (-0.356_563_782
                + t * (1.781_477_937 + t * (-1.821_255_978 + t * 1.330_274_429))));
    (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * poly
}

/// Holm's step-down adjustment of p-values for testing them together: the adjusted values,
/// in the input's order. Rejecting where an adjusted p is below α keeps the family-wise
/// error rate at α.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_values_match_the_tables() {
        // n = 5, every difference positive: W+ = 15, p = 2/32.
        let r = wilcoxon_signed_rank(&[1.0, 2.0, 3.0, 4.0, 5.0], &[0.0; 5]).unwrap();
        assert_eq!((r.n, r.w_plus, r.exact), (5, 15.0, true));
        assert!((r.p - 0.0625).abs() < 1e-12);
        // Differences 1, -2, 3, -4, 5, 6: W+ = 1 + 3 + 5 + 6 = 15 of 21, as extreme as 6.
        let r = wilcoxon_signed_rank(&[1.0, -2.0, 3.0, -4.0, 5.0, 6.0], &[0.0; 6]).unwrap();
        assert_eq!(r.w_plus, 15.0);
        // Subsets of {1..6} with sum ≤ 6: {}, 1, 2, 3, 4, 5, 6, 12, 13, 14, 15, 23, 123, 24 = 14.
        assert!((r.p - 2.0 * 14.0 / 64.0).abs() < 1e-12, "{}", r.p);
    }

    #[test]
    fn zero_differences_are_dropped_and_lengths_checked() {
        assert_eq!(wilcoxon_signed_rank(&[1.0, 2.0], &[1.0, 2.0]), None);
        assert_eq!(wilcoxon_signed_rank(&[1.0], &[1.0, 2.0]), None);
        let r = wilcoxon_signed_rank(&[1.0, 5.0, 7.0], &[1.0, 4.0, 5.0]).unwrap();
        assert_eq!(r.n, 2);
    }

    #[test]
    fn the_normal_approximation_is_close_to_the_exact_test() {
        // 40 pairs with distinct differences, shifted: exact and approximate p agree.
        let x: Vec<f64> = (0..40).map(|i| i as f64 * 0.37 % 5.0 + 0.3).collect();
        let y: Vec<f64> = (0..40).map(|i| (i as f64 * 1.13) % 5.0).collect();
        let exact = wilcoxon_signed_rank(&x, &y).unwrap();
        assert!(exact.exact);
        // Ties force the approximation: duplicate the data (every |d| appears twice).
        let x2: Vec<f64> = x.iter().chain(&x).copied().collect();
        let y2: Vec<f64> = y.iter().chain(&y).copied().collect();
        let approx = wilcoxon_signed_rank(&x2, &y2).unwrap();
        assert!(!approx.exact);
        // Doubling the sample makes the evidence stronger, never weaker.
        assert!(approx.p <= exact.p + 1e-9, "{} vs {}", approx.p, exact.p);
        assert!((normal_upper_tail(1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_upper_tail(-1.0) - 0.841_344_746).abs() < 1e-6);
    }

    #[test]
    fn holm_adjusts_step_down() {
        let a = holm(&[0.01, 0.04, 0.03, 0.005]);
        // Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → max so far 0.06.
        let want = [0.03, 0.06, 0.06, 0.02];
        for (g, w) in a.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{a:?}");
        }
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
    }
}
