//! The configurations effects are read over: a space's valid configurations when there are
//! few enough to predict each, else those measured, else those the model knows.

use model::{Configurations, ModelFile};
use space::{ConfigSpace, ValidConfigurations};

use crate::Error;
use crate::data::Measurements;

/// How many valid configurations effects are read over at most; a larger space is read
/// over its measured configurations.
pub const MOST_VALID: u64 = 20_000;

/// Every valid configuration of `space` as rows of its options' values, if there are at most
/// [`MOST_VALID`].
pub fn valid_configurations(space: &ConfigSpace) -> Result<Option<Configurations>, Error> {
    let valid = ValidConfigurations::new(space)?;
    let count = valid.count();
    if count > MOST_VALID.into() {
        return Ok(None);
    }
    let rows: Vec<Vec<f64>> = valid.iter().map(|c| space.values(&c)).collect();
    Ok(Some(Configurations {
        columns: space.names().into_iter().map(String::from).collect(),
        described: format!("the {} valid configurations of the space", rows.len()),
        rows,
    }))
}

/// What `file`'s effects are read over: the measured space's valid configurations (or,
/// for a large space, the measured ones) when they name every option of the model, else
/// the configurations the model was built from, else the combinations of its values.
pub fn effect_configurations(
    file: &ModelFile,
    measurements: Option<&Measurements>,
) -> Configurations {
    let names_all = |c: &Configurations| {
        file.options()
            .iter()
            .all(|o| c.columns.iter().any(|c| c == o))
    };
    let from_space = measurements.and_then(|m| match valid_configurations(&m.space) {
        Ok(Some(valid)) => Some(valid),
        _ if !m.configurations.is_empty() => Some(Configurations {
            columns: m.space.names().into_iter().map(String::from).collect(),
            rows: m.configurations.iter().map(|c| c.values.clone()).collect(),
            described: format!("the {} measured configurations", m.configurations.len()),
        }),
        _ => None,
    });
    from_space
        .filter(names_all)
        .unwrap_or_else(|| Configurations::of_model(file))
}
