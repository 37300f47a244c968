//! A table of times over some options' values, as the influence terms a user reads: every
//! white-box approach ends with one (ConfigCrusher per region, SPLat for the whole program).

use model::{Factor, InfluenceModel};
use space::{ConfigSpace, OptionId, ValidConfigurations};

use crate::Error;

/// Each non-baseline value of an option as a model factor: the option itself when binary,
/// `name=value` (a value indicator) when numeric.
pub fn levels(space: &ConfigSpace, options: &[OptionId]) -> Vec<Vec<Factor>> {
    options
        .iter()
        .map(|o| {
            let option = space.option(*o);
            if option.is_binary() {
                vec![Factor::Option(option.name.clone())]
            } else {
                (1..option.arity() as u32)
                    .map(|v| Factor::Equals(option.name.clone(), option.numeric_value(v)))
                    .collect()
            }
        })
        .collect()
}

/// The influence terms of a table over `options`: `cell` gives the time of one combination
/// of their value indices (`None` for a combination no valid configuration takes, which is
/// never predicted). Products of values no valid configuration takes together (two members
/// of one alternative group) are left out, so every term is one a user can select.
pub fn influence_of_table(
    valid: &ValidConfigurations,
    options: &[OptionId],
    mut cell: impl FnMut(&[u32]) -> Option<f64>,
) -> Result<InfluenceModel, Error> {
    let space = valid.space();
    let levels = levels(space, options);
    let arities: Vec<usize> = levels.iter().map(|l| l.len() + 1).collect();
    let ncells = arities
        .iter()
        .try_fold(1usize, |acc, a| acc.checked_mul(*a))
        .filter(|n| *n <= 1 << model::MAX_OPTIONS)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{} options have too many value combinations for one table (at most 2^{})",
                options.len(),
                model::MAX_OPTIONS
            ))
        })?;
    // One cell per combination (mixed radix, the first option varying fastest).
    let mut digits = vec![0u32; options.len()];
    let mut cells = Vec::with_capacity(ncells);
    for index in 0..ncells {
        let mut rest = index;
        for (d, a) in digits.iter_mut().zip(&arities) {
            *d = (rest % a) as u32;
            rest /= a;
        }
        cells.push(cell(&digits).unwrap_or(0.0));
    }
    let terms = model::influence_from_levels(&levels, &cells)?;
    Ok(InfluenceModel::from_terms(
        terms
            .terms()
            .iter()
            .filter(|t| {
                let literals: Vec<space::Literal> = t
                    .options
                    .iter()
                    .filter_map(|f| {
                        let j = options
                            .iter()
                            .position(|o| space.option(*o).name == f.option())?;
                        let value = levels[j].iter().position(|l| l == f)? as u32 + 1;
                        Some((options[j], value))
                    })
                    .collect();
                valid.allows(&literals)
            })
            .cloned(),
    ))
}

/// The space's exclusive choices (alternative groups, numeric values) as the model crate
/// expresses terms against them.
pub fn reference_choices(space: &ConfigSpace) -> Result<Vec<model::Choice>, Error> {
    space
        .exclusive_choices()
        .iter()
        .map(|c| model::Choice::parse(&c.members, c.given.as_deref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::from)
}
