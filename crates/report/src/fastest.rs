//! Which valid configurations a model predicts fastest: every valid configuration of the
//! space predicted, the smallest first.

use model::ModelFile;
use space::{ConfigSpace, ValidConfigurations};

use crate::Error;

/// How many valid configurations [`fastest`] predicts at most.
pub const MOST_CONFIGURATIONS: u64 = 1_000_000;

/// The `n` valid configurations of `space` with the smallest predictions, as their compact
/// text with the prediction, smallest first (ties in the space's order).
pub fn fastest(
    file: &ModelFile,
    space: &ConfigSpace,
    n: usize,
) -> Result<Vec<(String, f64)>, Error> {
    let valid = ValidConfigurations::new(space)?;
    let count = valid.count();
    if count > MOST_CONFIGURATIONS.into() {
        return Err(Error::Invalid(format!(
            "the space has {count} valid configurations, more than the {MOST_CONFIGURATIONS} predicted at most; predict a sample (`knobs space sample … | knobs predict MODEL`)"
        )));
    }
    let bound = file.bind(&space.names())?;
    let mut predicted: Vec<(String, f64)> = valid
        .iter()
        .map(|c| {
            (
                space.format_configuration(&c),
                bound.predict(&space.values(&c)),
            )
        })
        .collect();
    predicted.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    predicted.truncate(n);
    Ok(predicted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{InfluenceModel, Term};

    #[test]
    fn the_fastest_are_valid_and_smallest() {
        let mut space = ConfigSpace::new("s");
        space.add_binary("A", None, false).unwrap();
        space.add_binary("B", None, false).unwrap();
        space.add_numeric("level", &[1.0, 5.0]).unwrap();
        space.add_constraint("!A => B", "test").unwrap();
        let file = ModelFile::new(InfluenceModel::from_terms([
            Term::new::<&str>(&[], 10.0),
            Term::new(&["A"], -4.0),
            Term::new(&["B"], 1.0),
            Term::new(&["level"], -0.5),
        ]));
        let top = fastest(&file, &space, 2).unwrap();
        // A on, B off, level 5: 10 - 4 - 2.5; then A and B on.
        assert_eq!(
            top,
            [
                ("A,level=5".to_string(), 3.5),
                ("A,B,level=5".to_string(), 4.5)
            ]
        );
    }
}
