//! `stats`: the one statistics module of the workspace.
//!
//! Every summary of numbers that more than one crate needs lives here, once: the mean,
//! the median, the mean of the fastest half (what a configuration's repeated timings are
//! read as), a bootstrap confidence interval of any statistic, the sample standard deviation, the coefficient of variation, the geometric
//! mean (of positive ratios, computed through logarithms), Student's t quantile for 95 %
//! confidence intervals with the half-width of such an interval, and the mean absolute
//! percentage error (MAPE) of predictions; [`paired`]: Wilcoxon's signed-rank test and Holm's
//! correction, to compare approaches on the same configurations. `measure` summarises
//! repeated runs with it, `learn` scores models and experiments with it, `bench` compares
//! approaches with it.
//!
//! Conventions: a statistic that is undefined for its input (an empty slice; fewer than two
//! values for a spread) is `None` rather than NaN, so each caller decides what such a case
//! means for it. Only `std` is used.

pub mod paired;

/// Why an error measure cannot be computed; each message is one line for the user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No values to compute the error on.
    #[error("no configurations to compute the error on")]
    Empty,
    /// An actual value of 0, for which the relative error is undefined.
    #[error("a measured performance is 0, so the relative error (MAPE) is undefined")]
    ZeroActual,
}

/// The 97.5 % quantile of Student's t distribution with `df` degrees of freedom: the factor
/// of two-sided 95 % confidence intervals. A table (three decimals) up to 30 degrees of
/// freedom, then the Cornish–Fisher expansion around the normal quantile (error below
/// 1e-4 there); infinite for 0 degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        _ => {
            let (z, d) = (1.959964f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * d)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

/// The arithmetic mean; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The median (the mean of the middle two for an even count; values ordered by
/// [`f64::total_cmp`]); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

/// The mean of the smallest half of the values (at least one: the minimum of up to three);
/// `None` when empty. Time on a shared machine has one-sided noise — another tenant, an
/// interrupt or a descheduled virtual CPU only ever make a run slower — so the fastest runs
/// are the ones that saw least of it, and their mean is steadier across sessions than the
/// median or the mean (`docs/results/README.md` has the measurements), while still
/// averaging over more than one run once there are four.
pub fn fastest_half_mean(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.truncate((values.len() / 2).max(1));
    mean(&sorted)
}

/// The half-width of a 95 % percentile-bootstrap confidence interval of `statistic` over
/// `values`: the larger distance from the statistic to the 2.5 % and 97.5 % quantiles of
/// it over 1,000 resamples (drawn with a fixed seed, so the same values always give the
/// same interval); `None` for fewer than two values, since one value says nothing about
/// the spread. Unlike Student's t it assumes no distribution, which suits a statistic such
/// as [`fastest_half_mean`] and skewed timings.
pub fn bootstrap_ci95_half_width(
    values: &[f64],
    statistic: fn(&[f64]) -> Option<f64>,
) -> Option<f64> {
    const RESAMPLES: usize = 1000;
    if values.len() < 2 {
        return None;
    }
    let estimate = statistic(values)?;
    // xorshift64*: enough for picking indices, and no dependency.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut resample = vec![0.0; values.len()];
    let mut estimates = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for slot in resample.iter_mut() {
            *slot = values[(next() % values.len() as u64) as usize];
        }
        estimates.push(statistic(&resample)?);
    }
    estimates.sort_by(f64::total_cmp);
    let low = estimates[RESAMPLES * 25 / 1000];
    let high = estimates[RESAMPLES * 975 / 1000 - 1];
    Some((estimate - low).max(high - estimate))
}

/// The sample standard deviation (divisor n − 1); `None` for fewer than two values.
pub fn sample_sd(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let squares = values.iter().map(|v| (v - m).powi(2)).sum::<f64>();
    Some((squares / (values.len() - 1) as f64).sqrt())
}

/// The coefficient of variation, sample standard deviation / |mean|; `None` for fewer than
/// two values or a mean of 0.
pub fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    if m == 0.0 {
        return None;
    }
    Some(sample_sd(values)? / m.abs())
}

/// The half-width of the 95 % confidence interval of the mean, `t(0.975, n − 1) · sd / √n`
/// (Student's t, [`t975`]); `None` for fewer than two values, since one value says nothing
/// about the spread.
pub fn ci95_half_width(values: &[f64]) -> Option<f64> {
    let n = values.len();
    Some(t975(n.checked_sub(1)?) * sample_sd(values)? / (n as f64).sqrt())
}

/// The geometric mean of positive values (ratios, typically), `exp(mean(ln v))`; `None`
/// when empty or when a value is not positive (0, negative or NaN).
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    if !values.iter().all(|&v| v > 0.0) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    Some(mean(&logs)?.exp())
}

/// Mean absolute percentage error, also called mean relative error (MRE):
/// `mean(|predicted − actual| / |actual|) × 100`. An actual value of 0 makes the relative
/// error undefined and is an error ([`Error::ZeroActual`]), as is an empty input
/// ([`Error::Empty`]).
///
/// # Panics
///
/// When the slices differ in length: there must be one prediction per actual value.
pub fn mape(predicted: &[f64], actual: &[f64]) -> Result<f64, Error> {
    assert_eq!(
        predicted.len(),
        actual.len(),
        "one prediction per actual value"
    );
    if actual.is_empty() {
        return Err(Error::Empty);
    }
    let mut sum = 0.0;
    for (p, a) in predicted.iter().zip(actual) {
        if *a == 0.0 {
            return Err(Error::ZeroActual);
        }
        sum += ((p - a) / a).abs();
    }
    Ok(sum / actual.len() as f64 * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastest_half_mean_by_hand() {
        assert_eq!(fastest_half_mean(&[]), None);
        assert_eq!(fastest_half_mean(&[5.0]), Some(5.0));
        // Up to three values: the minimum.
        assert_eq!(fastest_half_mean(&[3.0, 1.0, 2.0]), Some(1.0));
        // Ten: the mean of the five smallest, whatever the five slow ones are.
        let runs = [1.0, 9.0, 1.2, 30.0, 1.1, 0.9, 12.0, 1.3, 50.0, 70.0];
        assert!((fastest_half_mean(&runs).unwrap() - 1.1).abs() < 1e-12);
    }

    #[test]
    fn bootstrap_interval_is_deterministic_and_tracks_the_spread() {
        assert_eq!(bootstrap_ci95_half_width(&[1.0], median), None);
        assert_eq!(
            bootstrap_ci95_half_width(&[2.0; 6], fastest_half_mean),
            Some(0.0)
        );
        let tight = [1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.01, 1.00];
        let wide = [1.0, 1.3, 0.8, 1.1, 1.5, 0.7, 1.2, 0.9];
        let t = bootstrap_ci95_half_width(&tight, mean).unwrap();
        let w = bootstrap_ci95_half_width(&wide, mean).unwrap();
        assert_eq!(Some(t), bootstrap_ci95_half_width(&tight, mean));
        assert!(t < 0.02 && w > 10.0 * t, "{t} {w}");
        // Near Student's t for the mean of well-behaved values.
        let student = ci95_half_width(&wide).unwrap();
        assert!((w / student - 1.0).abs() < 0.35, "{w} {student}");
    }

    #[test]
    fn mape_by_hand() {
        // |110−100|/100 = 10 %, |45−50|/50 = 10 %, |3−4|/4 = 25 % → 15 %.
        let m = mape(&[110.0, 45.0, 3.0], &[100.0, 50.0, 4.0]).unwrap();
        assert!((m - 15.0).abs() < 1e-12);
        // Negative actual values count by their magnitude.
        assert!((mape(&[-90.0], &[-100.0]).unwrap() - 10.0).abs() < 1e-12);
        assert_eq!(mape(&[1.0], &[0.0]), Err(Error::ZeroActual));
        assert!(Error::ZeroActual.to_string().contains("is 0"));
        assert_eq!(mape(&[], &[]), Err(Error::Empty));
    }

    #[test]
    #[should_panic(expected = "one prediction per actual value")]
    fn mape_needs_one_prediction_per_value() {
        let _ = mape(&[1.0], &[1.0, 2.0]);
    }

    #[test]
    fn summaries_match_hand_computation() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        assert_eq!(median(&v), Some(4.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        // Sample variance 32/7.
        let sd = sample_sd(&v).unwrap();
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((coefficient_of_variation(&v).unwrap() - sd / 5.0).abs() < 1e-12);
        assert!((ci95_half_width(&v).unwrap() - 2.365 * sd / 8f64.sqrt()).abs() < 1e-12);
        assert!((sample_sd(&[1.0, 3.0]).unwrap() - 2f64.sqrt()).abs() < 1e-12);
        // The coefficient of variation is relative to |mean|.
        assert!(
            (coefficient_of_variation(&[-1.0, -3.0]).unwrap() - 2f64.sqrt() / 2.0).abs() < 1e-12
        );
    }

    #[test]
    fn undefined_statistics_are_none() {
        assert_eq!(mean(&[]), None);
        assert_eq!(median(&[]), None);
        assert_eq!(sample_sd(&[]), None);
        assert_eq!(sample_sd(&[3.0]), None);
        assert_eq!(coefficient_of_variation(&[3.0]), None);
        assert_eq!(coefficient_of_variation(&[-1.0, 1.0]), None);
        assert_eq!(ci95_half_width(&[]), None);
        assert_eq!(ci95_half_width(&[3.0]), None);
        assert_eq!(geometric_mean(&[]), None);
        assert_eq!(geometric_mean(&[2.0, 0.0]), None);
        assert_eq!(geometric_mean(&[2.0, -1.0]), None);
        assert_eq!(geometric_mean(&[f64::NAN]), None);
    }

    #[test]
    fn geometric_mean_of_ratios() {
        assert!((geometric_mean(&[2.0, 0.5]).unwrap() - 1.0).abs() < 1e-12);
        assert!((geometric_mean(&[1.0, 4.0, 16.0]).unwrap() - 4.0).abs() < 1e-12);
        assert!((geometric_mean(&[1.1]).unwrap() - 1.1).abs() < 1e-15);
    }

    #[test]
    fn margin_uses_student_t() {
        // 1..=5: mean 3, sd √2.5, t(4) = 2.776.
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(mean(&v), Some(3.0));
        let margin = ci95_half_width(&v).unwrap();
        assert!((margin - 2.776 * 2.5f64.sqrt() / 5f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn t_quantiles_approach_the_normal() {
        assert_eq!(t975(0), f64::INFINITY);
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(30), 2.042);
        assert!((t975(31) - 2.0395).abs() < 0.0005);
        assert!((t975(40) - 2.021).abs() < 1e-3);
        assert!((t975(60) - 2.0003).abs() < 0.0005);
        assert!((t975(1000) - 1.962).abs() < 1e-3);
        assert!((0..200).all(|d| t975(d) > t975(d + 1)));
    }
}
