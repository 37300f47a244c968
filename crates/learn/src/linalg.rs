//! Dense least squares: normal equations solved by Cholesky on equilibrated columns, with a
//! small ridge when the columns are (nearly) linearly dependent.

/// Solves `min ‖Xβ − y‖²` for X given as columns (all of `y`'s length). When XᵀX is
/// singular or nearly so, a ridge of 1e-10 (relative to the equilibrated diagonal) is added
/// and grown until the factorisation succeeds: dependent columns then share their
/// coefficient instead of blowing up.
pub fn least_squares(columns: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let k = columns.len();
    if k == 0 {
        return vec![];
    }
    // Equilibrate: scale each column to unit norm so the ridge and pivot tests are relative.
    let scale: Vec<f64> = columns
        .iter()
        .map(|c| {
            let n = dot(c, c).sqrt();
            if n > 0.0 { 1.0 / n } else { 0.0 }
        })
        .collect();
    let mut gram = vec![0.0; k * k];
    let mut rhs = vec![0.0; k];
    for i in 0..k {
        for j in 0..=i {
            let g = dot(&columns[i], &columns[j]) * scale[i] * scale[j];
            gram[i * k + j] = g;
            gram[j * k + i] = g;
        }
        rhs[i] = dot(&columns[i], y) * scale[i];
    }
    let mut ridge = 0.0;
    loop {
        let mut a = gram.clone();
        for i in 0..k {
            // A zero column gets a unit diagonal: its coefficient is then 0.
            a[i * k + i] += if scale[i] == 0.0 { 1.0 } else { ridge };
        }
        if let Some(beta) = cholesky_solve(&mut a, &rhs, k) {
            return beta.iter().zip(&scale).map(|(b, s)| b * s).collect();
        }
        ridge = if ridge == 0.0 { 1e-10 } else { ridge * 100.0 };
    }
}

/// Dot product with four independent sums, which the compiler turns into vector code
/// (a single running sum must keep the order of additions and cannot be vectorised).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0; 4];
    let chunks = n / 4;
    for i in 0..chunks {
        for k in 0..4 {
            acc[k] += a[4 * i + k] * b[4 * i + k];
        }
    }
    let mut tail = 0.0;
    for i in 4 * chunks..n {
        tail += a[i] * b[i];
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// `y ← y − alpha·x`.
pub fn subtract_scaled(y: &mut [f64], alpha: f64, x: &[f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi -= alpha * xi;
    }
}

/// Cholesky factorisation in place and solve; `None` when a pivot is not clearly positive
/// (relative to 1, the equilibrated diagonal).
fn cholesky_solve(a: &mut [f64], b: &[f64], k: usize) -> Option<Vec<f64>> {
    const PIVOT: f64 = 1e-11;
    cholesky(a, k, PIVOT)?;
    Some(solve_factored(a, b.to_vec(), k))
}

/// Cholesky factorisation of the k × k row-major matrix `a` in place (its lower triangle
/// becomes L, with `a = L Lᵀ`); `None` when a pivot is at most `pivot`.
pub fn cholesky(a: &mut [f64], k: usize, pivot: f64) -> Option<()> {
    for j in 0..k {
        let mut d = a[j * k + j];
        for p in 0..j {
            d -= a[j * k + p] * a[j * k + p];
        }
        if d.is_nan() || d <= pivot {
            return None;
        }
        let d = d.sqrt();
        a[j * k + j] = d;
        for i in j + 1..k {
            let mut s = a[i * k + j];
            for p in 0..j {
                s -= a[i * k + p] * a[j * k + p];
            }
            a[i * k + j] = s / d;
        }
    }
    Some(())
}

/// Solves `L v = b` with the factor from [`cholesky`].
pub fn forward(l: &[f64], mut b: Vec<f64>, k: usize) -> Vec<f64> {
    for i in 0..k {
        for p in 0..i {
            b[i] -= l[i * k + p] * b[p];
        }
        b[i] /= l[i * k + i];
    }
    b
}

/// Solves `L Lᵀ x = b` with the factor from [`cholesky`].
pub fn solve_factored(l: &[f64], b: Vec<f64>, k: usize) -> Vec<f64> {
    let mut z = forward(l, b, k);
    for i in (0..k).rev() {
        for p in i + 1..k {
            z[i] -= l[p * k + i] * z[p];
        }
        z[i] /= l[i * k + i];
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_small_system_by_hand() {
        // Points (0,1), (1,3), (2,5), (3,6): slope and intercept by the textbook formulas.
        // x̄ = 1.5, ȳ = 3.75, Sxy = 8.5, Sxx = 5 → slope 1.7, intercept 1.2.
        let ones = vec![1.0; 4];
        let x = vec![0.0, 1.0, 2.0, 3.0];
        let beta = least_squares(&[ones, x], &[1.0, 3.0, 5.0, 6.0]);
        assert!((beta[0] - 1.2).abs() < 1e-12, "{beta:?}");
        assert!((beta[1] - 1.7).abs() < 1e-12, "{beta:?}");
    }

    #[test]
    fn dependent_columns_fall_back_to_a_tiny_ridge() {
        // b = a exactly: the fit is still exact and the two coefficients share the effect.
        let ones = vec![1.0; 4];
        let a = vec![0.0, 1.0, 0.0, 1.0];
        let beta = least_squares(&[ones, a.clone(), a], &[2.0, 6.0, 2.0, 6.0]);
        assert!((beta[0] - 2.0).abs() < 1e-6, "{beta:?}");
        assert!((beta[1] + beta[2] - 4.0).abs() < 1e-6, "{beta:?}");
        assert!((beta[1] - beta[2]).abs() < 1e-4, "{beta:?}");
        let zero = least_squares(&[vec![0.0; 3]], &[1.0, 2.0, 3.0]);
        assert_eq!(zero, vec![0.0]);
    }
}
