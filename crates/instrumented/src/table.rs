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

/// The influence terms of a table, and what it could not measure.
#[derive(Clone, Debug)]
pub struct TableInfluence {
    pub terms: InfluenceModel,
    /// Cells some valid configuration takes but no measured one does, as the options'
    /// values in each (`HEAVY, ITER=8`).
    pub unmeasured: Vec<String>,
    /// The terms that depend on an unmeasured cell, left out of `terms` (labels; `the
    /// constant` for the intercept).
    pub left_out: Vec<String>,
}

/// The influence terms of a table over `options`: `cell` gives the time of one combination
/// of their value indices (`None` for a combination no measured configuration takes). A
/// combination no valid configuration takes is never predicted; one that some valid
/// configuration takes but none measured is *unmeasured*: the terms that depend on it (term
/// `d` depends on cell `t` when every option's value in `t` is its baseline or its value in
/// `d`) are left out and named, never computed from a zero. Products of values no valid
/// configuration takes together (two members of one alternative group) are left out, so
/// every term is one a user can select.
pub fn influence_of_table(
    valid: &ValidConfigurations,
    options: &[OptionId],
    mut cell: impl FnMut(&[u32]) -> Option<f64>,
) -> Result<TableInfluence, Error> {
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
    let mut unmeasured: Vec<Vec<u32>> = Vec::new();
    for index in 0..ncells {
        let mut rest = index;
        for (d, a) in digits.iter_mut().zip(&arities) {
            *d = (rest % a) as u32;
            rest /= a;
        }
        let value = cell(&digits);
        if value.is_none() {
            let literals: Vec<space::Literal> = options
                .iter()
                .copied()
                .zip(digits.iter().copied())
                .collect();
            if valid.allows(&literals) {
                unmeasured.push(digits.clone());
            }
        }
        cells.push(value.unwrap_or(0.0));
    }
    let terms = model::influence_from_levels(&levels, &cells)?;
    let (kept, left_out) = selectable_terms(valid, options, &levels, &terms, &unmeasured);
    Ok(TableInfluence {
        terms: InfluenceModel::from_terms(kept),
        unmeasured: unmeasured
            .iter()
            .map(|digits| cell_text(space, options, digits))
            .collect(),
        left_out,
    })
}

/// The terms a user can select (no two values no valid configuration takes together),
/// split into those the measured cells determine and the labels of those that rest on an
/// `unmeasured` cell (`the constant` for the intercept).
fn selectable_terms(
    valid: &ValidConfigurations,
    options: &[OptionId],
    levels: &[Vec<model::Factor>],
    terms: &InfluenceModel,
    unmeasured: &[Vec<u32>],
) -> (Vec<model::Term>, Vec<String>) {
    let space = valid.space();
    let mut left_out = Vec::new();
    let mut kept = Vec::new();
    for t in terms.terms() {
        // The term's value index per option: its factor's level, or the baseline.
        let mut term_digits = vec![0u32; options.len()];
        let mut literals: Vec<space::Literal> = Vec::new();
        for f in &t.options {
            let Some(j) = options
                .iter()
                .position(|o| space.option(*o).name == f.option())
            else {
                continue;
            };
            if let Some(level) = levels[j].iter().position(|l| l == f) {
                term_digits[j] = level as u32 + 1;
                literals.push((options[j], level as u32 + 1));
            }
        }
        if !valid.allows(&literals) {
            continue;
        }
        let rests_on_unmeasured = unmeasured.iter().any(|u| {
            u.iter()
                .zip(&term_digits)
                .all(|(cell, term)| *cell == 0 || cell == term)
        });
        if rests_on_unmeasured {
            left_out.push(match t.label() {
                l if l.is_empty() => "the constant".to_string(),
                l => l,
            });
        } else {
            kept.push(t.clone());
        }
    }
    (kept, left_out)
}

/// A cell as the options' values in it: a binary option by its name when selected and
/// `name=off` when not, a numeric one as `name=value`.
fn cell_text(space: &ConfigSpace, options: &[OptionId], digits: &[u32]) -> String {
    options
        .iter()
        .zip(digits)
        .map(|(o, d)| {
            let option = space.option(*o);
            match (option.is_binary(), d) {
                (true, 0) => format!("{}=off", option.name),
                (true, _) => option.name.clone(),
                (false, _) => format!(
                    "{}={}",
                    option.name,
                    space::format_number(option.numeric_value(*d))
                ),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
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
