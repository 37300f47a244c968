//! Noise statistics over a configuration's repetitions: a [`Summary`] of them, computed with
//! the workspace's `stats` crate, and the one value they are read as.

use serde::Serialize;

/// Summary of repeated measurements of one quantity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    /// What the repetitions are read as — by the models, the datasets, the reports: the mean
    /// of the fastest half ([`::stats::fastest_half_mean`]; the minimum of up to three), since
    /// on a shared machine noise only ever slows a run down.
    pub value: f64,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub sd: f64,
    /// Coefficient of variation, sd / mean (0 when the mean is 0).
    pub cv: f64,
    /// Half-width of the 95 % confidence interval of `value` (bootstrap); infinite for one
    /// value, since one run says nothing about the noise.
    pub ci95: f64,
}

impl Summary {
    /// Summarises the values (computed by the `stats` crate, hence the `::stats` paths:
    /// this module has the same name); `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        Some(Summary {
            n: values.len(),
            value: ::stats::fastest_half_mean(values)?,
            median: ::stats::median(values)?,
            mean: ::stats::mean(values)?,
            sd: ::stats::sample_sd(values).unwrap_or(0.0),
            cv: ::stats::coefficient_of_variation(values).unwrap_or(0.0),
            ci95: ::stats::bootstrap_ci95_half_width(values, ::stats::fastest_half_mean)
                .unwrap_or(f64::INFINITY),
        })
    }

    /// Whether the confidence interval is within `relative` × |value|.
    pub fn ci_within(&self, relative: f64) -> bool {
        self.ci95 <= relative * self.value.abs()
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
        assert_eq!(s.value, 3.5);
        // Sample variance 32/7.
        assert!((s.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((s.cv - s.sd / 5.0).abs() < 1e-12);
        assert!(s.ci95 > 0.0 && s.ci95.is_finite());
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!(
            (one.value, one.median, one.sd, one.cv),
            (3.0, 3.0, 0.0, 0.0)
        );
        assert!(!one.ci_within(0.5));
        assert!(Summary::of(&[]).is_none());
    }
}
