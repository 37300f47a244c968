//! Noise statistics over a configuration's repetitions.

use serde::Serialize;

/// Summary of repeated measurements of one quantity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub sd: f64,
    /// Coefficient of variation, sd / mean (0 when the mean is 0).
    pub cv: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student's t); infinite for
    /// one value, since one run says nothing about the noise.
    pub ci95: f64,
}

impl Summary {
    /// Summarises the values; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let cv = if mean != 0.0 { sd / mean.abs() } else { 0.0 };
        let ci95 = if n > 1 {
            t_975(n - 1) * sd / (n as f64).sqrt()
        } else {
            f64::INFINITY
        };
        Some(Summary {
            n,
            median,
            mean,
            sd,
            cv,
            ci95,
        })
    }

    /// Whether the confidence interval is within `relative` × |mean|.
    pub fn ci_within(&self, relative: f64) -> bool {
        self.ci95 <= relative * self.mean.abs()
    }
}

/// The 97.5 % quantile of Student's t distribution with `df` degrees of freedom (two-sided
/// 95 % intervals).
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        // Beyond 30, the Cornish-Fisher expansion around the normal quantile (error < 1e-4).
        _ => {
            let (z, d) = (1.959964f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * d)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_hand_computation() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.median, 4.5);
        assert_eq!(s.mean, 5.0);
        // Sample variance 32/7.
        assert!((s.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((s.cv - s.sd / 5.0).abs() < 1e-12);
        assert!((s.ci95 - 2.365 * s.sd / 8f64.sqrt()).abs() < 1e-12);
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!((one.median, one.sd, one.cv), (3.0, 0.0, 0.0));
        assert!(!one.ci_within(0.5));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn t_quantiles_approach_the_normal() {
        assert!((t_975(31) - 2.0395).abs() < 0.0005);
        assert!((t_975(60) - 2.0003).abs() < 0.0005);
        assert!((t_975(1000) - 1.962).abs() < 0.002);
        assert!((1..200).all(|d| t_975(d) > t_975(d + 1)));
    }
}
