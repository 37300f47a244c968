//! Whether an approach's model is significantly less accurate than the best one of the
//! same run: the seeds compare approaches with a multiple-comparison procedure; here every
//! model's absolute percentage error on each ground-truth configuration is paired with the
//! best model's (the lowest MAPE on all configurations), tested with Wilcoxon's signed-rank
//! test, and the p-values are Holm-corrected over the comparisons of the run.

use serde::{Deserialize, Serialize};
use stats::paired::{holm, wilcoxon_signed_rank};

/// The significance level.
pub const ALPHA: f64 = 0.05;

/// A run's comparison.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Comparison {
    /// The approach (step name) with the lowest MAPE on all configurations.
    pub best: String,
    pub alpha: f64,
    pub method: String,
    pub approaches: Vec<Compared>,
}

/// One approach against the best.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Compared {
    pub approach: String,
    /// MAPE on all ground-truth configurations, %.
    pub mape_all_percent: f64,
    /// Configurations whose errors differ from the best's (the test's n).
    pub n: usize,
    /// Two-sided p-value of the signed-rank test, and Holm-corrected.
    pub p: Option<f64>,
    pub p_holm: Option<f64>,
    /// Significantly less accurate than the best (`p_holm < alpha`); false for the best.
    pub worse: bool,
}

/// Compares each model's errors (per ground-truth configuration, in one order) with the
/// most accurate model's.
pub fn compare(errors: &[(String, Vec<f64>)]) -> Comparison {
    let mape = |e: &[f64]| stats::mean(e).unwrap_or(f64::INFINITY);
    let best = errors
        .iter()
        .min_by(|a, b| mape(&a.1).total_cmp(&mape(&b.1)))
        .map(|(n, e)| (n.clone(), e.clone()));
    let Some((best_name, best_errors)) = best else {
        return Comparison::default();
    };
    let mut approaches: Vec<Compared> = errors
        .iter()
        .map(|(name, e)| {
            let test = (name != &best_name)
                .then(|| wilcoxon_signed_rank(e, &best_errors))
                .flatten();
            Compared {
                approach: name.clone(),
                mape_all_percent: mape(e),
                n: test.map_or(0, |t| t.n),
                // Identical errors everywhere: no evidence of a difference.
                p: (name != &best_name).then(|| test.map_or(1.0, |t| t.p)),
                p_holm: None,
                worse: false,
            }
        })
        .collect();
    let tested: Vec<usize> = (0..approaches.len())
        .filter(|&i| approaches[i].p.is_some())
        .collect();
    let adjusted = holm(
        &tested
            .iter()
            .map(|&i| approaches[i].p.expect("tested"))
            .collect::<Vec<_>>(),
    );
    for (&i, p) in tested.iter().zip(adjusted) {
        approaches[i].p_holm = Some(p);
        approaches[i].worse = p < ALPHA;
    }
    Comparison {
        best: best_name,
        alpha: ALPHA,
        method: "Wilcoxon signed-rank test on the per-configuration absolute percentage \
                 errors against the best model's (all ground-truth configurations), \
                 Holm-corrected"
            .into(),
        approaches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_is_compared_with_every_other() {
        let good: Vec<f64> = (0..30).map(|i| 1.0 + (i % 3) as f64 * 0.1).collect();
        let wobble = [0.03, -0.03, 0.02, -0.02, 0.011, -0.01];
        let close: Vec<f64> = good
            .iter()
            .zip(wobble.iter().cycle())
            .map(|(e, w)| e + w)
            .collect();
        let bad: Vec<f64> = good.iter().map(|e| e + 5.0).collect();
        let c = compare(&[
            ("bad".into(), bad),
            ("good".into(), good),
            ("close".into(), close),
        ]);
        assert_eq!(c.best, "good");
        let get = |n: &str| c.approaches.iter().find(|a| a.approach == n).unwrap();
        assert!(get("bad").worse, "{c:?}");
        assert!(!get("close").worse, "{c:?}");
        assert!(!get("good").worse);
        assert_eq!(get("good").p, None);
        assert!(get("bad").p_holm.unwrap() >= get("bad").p.unwrap());
    }

    #[test]
    fn identical_models_are_not_worse() {
        let e = vec![1.0, 2.0, 3.0];
        let c = compare(&[("a".into(), e.clone()), ("b".into(), e)]);
        assert!(c.approaches.iter().all(|a| !a.worse));
        assert_eq!(compare(&[]).best, "");
    }
}
