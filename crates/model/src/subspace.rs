//! Subspace form ↔ influence form of a model over k binary options.
//!
//! The subspace form holds one value per combination of the options (a region measured in
//! each of the 2^k cells); cell `m` has option `j` selected when bit `j` of `m` is set. The
//! influence form holds one coefficient per subset S of the options, with
//! `cell(m) = Σ_{S ⊆ m} β_S`; its inverse is the Möbius transform
//! `β_S = Σ_{T ⊆ S} (−1)^{|S∖T|} cell(T)`. For {X, Y} with cells t1 = XY, t2 = X¬Y,
//! t3 = ¬XY, t4 = ¬X¬Y this is `t4 + (t2−t4)·X + (t3−t4)·Y + (t1−t2−t3+t4)·X·Y`
//! (ConfigCrusher §3.5). Both directions run in O(k·2^k).

use crate::Error;
use crate::influence::{Factor, InfluenceModel, Term};

/// At most this many options per subspace table (2^20 cells).
pub const MAX_OPTIONS: usize = 20;

fn check_width<S: AsRef<str>>(options: &[S]) -> Result<(), Error> {
    if options.len() > MAX_OPTIONS {
        return Err(Error::Invalid(format!(
            "{} options need 2^{} cells; at most {MAX_OPTIONS} options are supported",
            options.len(),
            options.len()
        )));
    }
    let mut names: Vec<&str> = options.iter().map(|o| o.as_ref()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::Invalid(
            "an option appears twice in the subspace table".into(),
        ));
    }
    Ok(())
}

/// Influence form of a subspace table. Exactly-zero coefficients are left out.
pub fn influence_from_subspaces<S: AsRef<str>>(
    options: &[S],
    cells: &[f64],
) -> Result<InfluenceModel, Error> {
    check_width(options)?;
    let k = options.len();
    if cells.len() != 1 << k {
        return Err(Error::Invalid(format!(
            "{k} options need {} cells, got {}",
            1usize << k,
            cells.len()
        )));
    }
    if let Some(bad) = cells.iter().find(|c| !c.is_finite()) {
        return Err(Error::Invalid(format!(
            "cell value `{bad}` is not a finite number"
        )));
    }
    let mut beta = cells.to_vec();
    for j in 0..k {
        for m in 0..beta.len() {
            if m & (1 << j) != 0 {
                beta[m] -= beta[m ^ (1 << j)];
            }
        }
    }
    Ok(InfluenceModel::from_terms(
        beta.into_iter()
            .enumerate()
            .filter(|(_, b)| *b != 0.0)
            .map(|(m, b)| {
                let names: Vec<&str> = (0..k)
                    .filter(|j| m & (1 << j) != 0)
                    .map(|j| options[j].as_ref())
                    .collect();
                Term::new(&names, b)
            }),
    ))
}

/// Influence form of a table over options with any number of values: `levels[j]` is the
/// factor of each non-baseline value of option `j` (`A` for a binary option, `level=5` and
/// `level=9` for a numeric option whose first value is the baseline), so
/// option `j` has `levels[j].len() + 1` values. Cells are in mixed radix, option 0 varying
/// fastest. Each value is an indicator, and the Möbius transform is taken per option:
/// `β(d) = Σ_{t_j ∈ {0, d_j}} (−1)^{#{j: t_j ≠ d_j}} cell(t)`. With binary options only this
/// is [`influence_from_subspaces`].
pub fn influence_from_levels(
    levels: &[Vec<Factor>],
    cells: &[f64],
) -> Result<InfluenceModel, Error> {
    let arities: Vec<usize> = levels.iter().map(|l| l.len() + 1).collect();
    let needed = arities
        .iter()
        .try_fold(1usize, |acc, a| acc.checked_mul(*a))
        .filter(|n| *n <= 1 << MAX_OPTIONS)
        .ok_or_else(|| Error::Invalid("too many value combinations for one table".into()))?;
    if cells.len() != needed {
        return Err(Error::Invalid(format!(
            "{} options with {arities:?} values need {needed} cells, got {}",
            levels.len(),
            cells.len()
        )));
    }
    if let Some(bad) = cells.iter().find(|c| !c.is_finite()) {
        return Err(Error::Invalid(format!(
            "cell value `{bad}` is not a finite number"
        )));
    }
    let digits = |mut m: usize| -> Vec<usize> {
        arities
            .iter()
            .map(|a| {
                let d = m % a;
                m /= a;
                d
            })
            .collect()
    };
    let mut beta = cells.to_vec();
    let mut stride = 1;
    for &a in &arities {
        for m in 0..beta.len() {
            if (m / stride) % a != 0 {
                beta[m] -= beta[m - ((m / stride) % a) * stride];
            }
        }
        stride *= a;
    }
    Ok(InfluenceModel::from_terms(
        beta.into_iter()
            .enumerate()
            .filter(|(_, b)| *b != 0.0)
            .map(|(m, b)| {
                let factors: Vec<Factor> = digits(m)
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| **d != 0)
                    .map(|(j, d)| levels[j][d - 1].clone())
                    .collect();
                Term::from_factors(factors, b)
            }),
    ))
}

/// Subspace table of an influence model over the given binary options (cell order as
/// above). The model may only mention these options.
pub fn subspaces_from_influence<S: AsRef<str>>(
    options: &[S],
    model: &InfluenceModel,
) -> Result<Vec<f64>, Error> {
    check_width(options)?;
    let k = options.len();
    let mut cells = vec![0.0; 1 << k];
    for t in model.terms() {
        let mut mask = 0usize;
        for f in &t.options {
            let Factor::Option(name) = f else {
                return Err(Error::Invalid(format!(
                    "term factor `{f}` is not a binary option"
                )));
            };
            let j = options
                .iter()
                .position(|o| o.as_ref() == name)
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "the model uses option `{name}`, which is not in the subspace table"
                    ))
                })?;
            mask |= 1 << j;
        }
        cells[mask] += t.value;
    }
    // Zeta transform: cell(m) = Σ_{S ⊆ m} β_S.
    for j in 0..k {
        for m in 0..cells.len() {
            if m & (1 << j) != 0 {
                cells[m] += cells[m ^ (1 << j)];
            }
        }
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn two_options_match_the_paper() {
        // t1 = XY = 10, t2 = X¬Y = 6, t3 = ¬XY = 4, t4 = ¬X¬Y = 1 (cells 0b11, 0b01, 0b10, 0b00).
        let (t1, t2, t3, t4) = (10.0, 6.0, 4.0, 1.0);
        let m = influence_from_subspaces(&["X", "Y"], &[t4, t2, t3, t1]).unwrap();
        let expected = InfluenceModel::from_terms([
            Term::new::<&str>(&[], t4),
            Term::new(&["X"], t2 - t4),
            Term::new(&["Y"], t3 - t4),
            Term::new(&["X", "Y"], t1 - t2 - t3 + t4),
        ]);
        assert_eq!(m.to_string(), expected.to_string());
        assert_eq!(m.to_string(), "1.00 + 5.00·X + 3.00·Y + 1.00·X·Y");
    }

    #[test]
    fn levels_generalise_subspaces_to_numeric_options() {
        // Binary options only: the same model as the subspace form.
        let cells = [1.0, 6.0, 4.0, 10.0];
        let a = influence_from_subspaces(&["X", "Y"], &cells).unwrap();
        let f = |s: &str| s.parse::<Factor>().unwrap();
        let b = influence_from_levels(&[vec![f("X")], vec![f("Y")]], &cells).unwrap();
        assert_eq!(a.to_string(), b.to_string());
        // A binary X and a numeric level with values 1, 5, 9 (1 the baseline): time is
        // 2 + level-dependent extra (0, 3, 7) + X adds 1, and 4 more with level 9.
        let mut cells = Vec::new();
        for level in 0..3 {
            for x in 0..2 {
                let extra = [0.0, 3.0, 7.0][level];
                cells.push(2.0 + extra + x as f64 * (1.0 + if level == 2 { 4.0 } else { 0.0 }));
            }
        }
        let levels = [vec![f("X")], vec![f("level=5"), f("level=9")]];
        let m = influence_from_levels(&levels, &cells).unwrap();
        let term = |fs: &[&str], v| Term::from_factors(fs.iter().map(|s| f(s)).collect(), v);
        assert_eq!(
            m.to_string(),
            InfluenceModel::from_terms([
                term(&[], 2.0),
                term(&["X"], 1.0),
                term(&["level=5"], 3.0),
                term(&["level=9"], 7.0),
                term(&["X", "level=9"], 4.0),
            ])
            .to_string()
        );
    }

    #[test]
    fn running_example_region() {
        // ConfigCrusher Fig. 2, region OR1 over {A, C}: 0 unless A; 3 with A, 6 with A and C.
        let m = influence_from_subspaces(&["A", "C"], &[0.0, 3.0, 0.0, 6.0]).unwrap();
        assert_eq!(m.to_string(), "3.00·A + 3.00·A·C");
    }

    #[test]
    fn bad_shapes_are_errors() {
        assert!(influence_from_subspaces(&["A"], &[1.0, 2.0, 3.0]).is_err());
        assert!(influence_from_subspaces(&["A", "A"], &[1.0; 4]).is_err());
        let m = InfluenceModel::from_terms([Term::new(&["Z"], 1.0)]);
        assert!(subspaces_from_influence(&["A"], &m).is_err());
    }

    proptest! {
        #[test]
        fn round_trip_for_1_to_6_options(k in 1usize..=6, seed in prop::collection::vec(-1000i32..1000, 64)) {
            let names: Vec<String> = (0..k).map(|i| format!("o{i}")).collect();
            let cells: Vec<f64> = seed[..1 << k].iter().map(|v| *v as f64 / 8.0).collect();
            let model = influence_from_subspaces(&names, &cells).unwrap();
            let back = subspaces_from_influence(&names, &model).unwrap();
            prop_assert_eq!(&back, &cells);
            // And the other way round: influence → cells → influence.
            let again = influence_from_subspaces(&names, &back).unwrap();
            prop_assert_eq!(again.to_string(), model.to_string());
            // Each cell's prediction equals the cell.
            let bound = model.bind(&names).unwrap();
            for (m, cell) in cells.iter().enumerate() {
                let row: Vec<f64> = (0..k).map(|j| ((m >> j) & 1) as f64).collect();
                prop_assert!((bound.predict(&row) - cell).abs() < 1e-9);
            }
        }
    }
}
