//! Error metrics and summaries of repeated experiments.

use crate::Error;

/// Mean absolute percentage error, also called mean relative error (MRE):
/// `mean(|predicted − actual| / |actual|) × 100`. An actual value of 0 makes the relative
/// error undefined and is an error, as is an empty input.
pub fn mape(predicted: &[f64], actual: &[f64]) -> Result<f64, Error> {
    assert_eq!(
        predicted.len(),
        actual.len(),
        "one prediction per actual value"
    );
    if actual.is_empty() {
        return Err(Error::Data(
            "no configurations to compute the error on".into(),
        ));
    }
    let mut sum = 0.0;
    for (p, a) in predicted.iter().zip(actual) {
        if *a == 0.0 {
            return Err(Error::Data(
                "a measured performance is 0, so the relative error (MAPE) is undefined".into(),
            ));
        }
        sum += ((p - a) / a).abs();
    }
    Ok(sum / actual.len() as f64 * 100.0)
}

/// Mean of repeated measurements with the half-width of its 95 % confidence interval,
/// `t(0.975, n−1) · sd / √n` (Student's t; 0 for a single value).
pub fn mean_and_margin(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t975(n - 1) * var.sqrt() / (n as f64).sqrt())
}

/// The 97.5 % quantile of Student's t with `df` degrees of freedom (table up to 30, then
/// the Cornish–Fisher expansion, accurate to about 1e-4 there).
fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if (1..=30).contains(&df) {
        return TABLE[df - 1];
    }
    let z: f64 = 1.959964;
    let v = df as f64;
    z + (z.powi(3) + z) / (4.0 * v)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mape_by_hand() {
        // |110−100|/100 = 10 %, |45−50|/50 = 10 %, |3−4|/4 = 25 % → 15 %.
        let m = mape(&[110.0, 45.0, 3.0], &[100.0, 50.0, 4.0]).unwrap();
        assert!((m - 15.0).abs() < 1e-12);
        assert!(
            mape(&[1.0], &[0.0])
                .unwrap_err()
                .to_string()
                .contains("is 0")
        );
        assert!(mape(&[], &[]).is_err());
    }

    #[test]
    fn margin_uses_student_t() {
        // 1..=5: mean 3, sd √2.5, t(4) = 2.776.
        let (mean, margin) = mean_and_margin(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(mean, 3.0);
        assert!((margin - 2.776 * 2.5f64.sqrt() / 5f64.sqrt()).abs() < 1e-9);
        assert!((t975(40) - 2.021).abs() < 1e-3);
        assert!((t975(1000) - 1.962).abs() < 1e-3);
    }
}
