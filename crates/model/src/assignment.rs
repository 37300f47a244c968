//! A configuration written as text (`level=6,extreme`) turned into the values a model
//! predicts from, with a warning for every value the model never saw: a prediction there is
//! an extrapolation.

use std::collections::BTreeMap;

use crate::Error;
use crate::file::ModelFile;
use crate::influence::Factor;

/// The values each option may take: those of the configurations a model was built from, or
/// a space's. Options not listed are taken to be binary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KnownValues(BTreeMap<String, Vec<f64>>);

impl KnownValues {
    /// The values each option took in the model's `provenance.training` (empty without it).
    pub fn from_training(file: &ModelFile) -> KnownValues {
        let mut known = KnownValues::default();
        let Some(training) = file.provenance.get("training") else {
            return known;
        };
        let columns = training["columns"].as_array().cloned().unwrap_or_default();
        let rows = training["rows"].as_array().cloned().unwrap_or_default();
        for (i, column) in columns.iter().enumerate() {
            let Some(name) = column.as_str() else {
                continue;
            };
            for v in rows.iter().filter_map(|r| r.get(i)?.as_f64()) {
                known.include(name, v);
            }
        }
        known
    }

    /// Adds a value an option may take.
    pub fn include(&mut self, option: &str, value: f64) {
        let values = self.0.entry(option.to_string()).or_default();
        if !values.contains(&value) {
            values.push(value);
            values.sort_by(f64::total_cmp);
        }
    }

    /// The values listed for an option, smallest first (empty when not listed).
    pub fn values(&self, option: &str) -> Vec<f64> {
        self.0.get(option).cloned().unwrap_or_default()
    }

    /// Whether an option takes values other than 0 and 1.
    pub fn is_numeric(&self, option: &str) -> bool {
        self.0
            .get(option)
            .is_some_and(|v| v.iter().any(|x| *x != 0.0 && *x != 1.0))
    }

    fn allows(&self, option: &str, value: f64) -> bool {
        match self.0.get(option) {
            Some(values) => values
                .iter()
                .any(|v| (v - value).abs() <= 1e-9 * v.abs().max(1.0)),
            None => value == 0.0 || value == 1.0,
        }
    }

    fn listed(&self, option: &str) -> String {
        let values = self
            .0
            .get(option)
            .cloned()
            .unwrap_or_else(|| vec![0.0, 1.0]);
        values
            .iter()
            .map(|v| format!("{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A configuration as the model's columns and their values, and what to beware of.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    /// Every option the model mentions, sorted.
    pub columns: Vec<String>,
    pub values: Vec<f64>,
    /// One sentence per value outside those known, or option the model does not use.
    pub warnings: Vec<String>,
}

/// A configuration as every option given and its value, from any input (a typed
/// `level=6,extreme`, a CSV row): binary options 0/1, numeric ones their number.
pub type Given = Vec<(String, f64)>;

/// Reads `a,b,level=6` (or `a=1`) as the options given; an option given twice is an error.
pub fn parse_given(text: &str) -> Result<Given, Error> {
    let mut given: Given = Vec::new();
    for item in text
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (name, value) = match item.split_once('=') {
            Some((n, v)) => {
                let parsed: f64 = v.trim().parse().map_err(|_| {
                    Error::Invalid(format!(
                        "`{}` is not a number (option `{}`)",
                        v.trim(),
                        n.trim()
                    ))
                })?;
                (n.trim(), parsed)
            }
            None => (item, 1.0),
        };
        if given.iter().any(|(n, _)| n == name) {
            return Err(Error::Invalid(format!(
                "option `{name}` appears more than once in the configuration"
            )));
        }
        given.push((name.to_string(), value));
    }
    Ok(given)
}

/// Reads `a,b,level=6` (or `a=1`; unlisted binary options are off) for `file`: see
/// [`assign`].
pub fn parse_assignment(
    file: &ModelFile,
    known: &KnownValues,
    text: &str,
) -> Result<Assignment, Error> {
    assign(file, known, &parse_given(text)?)
}

/// The values of the model's options in a configuration given by any input, checked the
/// same way for all: every numeric option the model uses needs a value (binary ones left out
/// are off); an option neither the model nor `known` has is ignored with a warning, and a
/// value outside `known` is used with one.
pub fn assign(file: &ModelFile, known: &KnownValues, given: &Given) -> Result<Assignment, Error> {
    let columns: Vec<String> = file.options().into_iter().map(String::from).collect();
    let mut values: Vec<Option<f64>> = columns
        .iter()
        .map(|c| (!needs_value(file, known, c)).then_some(0.0))
        .collect();
    let mut warnings = Vec::new();
    for (name, value) in given {
        let (name, value) = (name.as_str(), *value);
        let used = columns.iter().position(|c| c == name);
        if used.is_none() && !known.0.contains_key(name) {
            warnings.push(format!(
                "the model does not know option `{name}`; it is ignored"
            ));
            continue;
        }
        if !known.allows(name, value) {
            warnings.push(outside(known, name, value));
        }
        if let Some(i) = used {
            values[i] = Some(value);
        }
    }
    // A binary option left out is off, and checked as if given so: typed or a CSV row, the
    // same configuration gets the same warnings.
    let left_out = known
        .0
        .keys()
        .filter(|o| !known.is_numeric(o) && !given.iter().any(|(n, _)| n == *o));
    for option in left_out {
        if !known.allows(option, 0.0) {
            warnings.push(outside(known, option, 0.0));
        }
    }
    let values = values
        .into_iter()
        .zip(&columns)
        .map(|(v, c)| {
            v.ok_or_else(|| {
                Error::Invalid(format!("numeric option `{c}` needs a value, as in `{c}=…`"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Assignment {
        columns,
        values,
        warnings,
    })
}

/// The warning for a value outside those known: the same whichever input gave it.
fn outside(known: &KnownValues, option: &str, value: f64) -> String {
    format!(
        "`{option}={value}` is outside the values the model knows ({}): the prediction is an extrapolation",
        known.listed(option)
    )
}

/// Whether an option is numeric, so that leaving it out is an error rather than "off".
fn needs_value(file: &ModelFile, known: &KnownValues, option: &str) -> bool {
    known.is_numeric(option)
        || file.terms.terms().iter().any(|t| {
            t.options
                .iter()
                .any(|f| matches!(f, Factor::Equals(n, _) if n == option))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InfluenceModel, Term};

    fn xz() -> ModelFile {
        let mut file = ModelFile::new(InfluenceModel::from_terms([
            Term::new::<&str>(&[], 1.0),
            Term::new(&["extreme"], 2.0),
            Term::from_factors(vec!["level=6".parse().unwrap()], 0.5),
            Term::new(&["parallel"], 0.25),
        ]));
        file.record_training(
            &["extreme".into(), "level".into(), "parallel".into()],
            vec![vec![0.0, 0.0, 1.0], vec![1.0, 6.0, 2.0]],
        );
        file
    }

    #[test]
    fn reads_a_configuration_and_warns_outside_the_known_values() {
        let file = xz();
        let known = KnownValues::from_training(&file);
        let a = parse_assignment(&file, &known, "level=6,extreme,parallel=1").unwrap();
        assert_eq!(a.columns, ["extreme", "level", "parallel"]);
        assert_eq!(a.values, [1.0, 6.0, 1.0]);
        assert!(a.warnings.is_empty());
        let bound = file.bind(&a.columns).unwrap();
        assert_eq!(bound.predict(&a.values), 1.0 + 2.0 + 0.5 + 0.25);
        let a = parse_assignment(&file, &known, "level=6 parallel=3 turbo").unwrap();
        assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);
        assert!(
            a.warnings[0].starts_with("`parallel=3` is outside the values the model knows (1, 2)")
        );
        assert!(a.warnings[1].contains("does not know option `turbo`"));
        // `extreme` was on in one configuration and off in the other; a binary option only
        // ever on is warned of when left out (off), as a CSV row with a 0 for it is.
        let mut always = file.clone();
        always.record_training(
            &["check".into(), "level".into(), "parallel".into()],
            vec![vec![1.0, 6.0, 1.0]],
        );
        let known_always = KnownValues::from_training(&always);
        let a = parse_assignment(&always, &known_always, "level=6,parallel=1").unwrap();
        assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
        assert!(a.warnings[0].starts_with("`check=0` is outside the values the model knows (1)"));
        let e = parse_assignment(&file, &known, "extreme,parallel=1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "numeric option `level` needs a value, as in `level=…`"
        );
        assert!(parse_assignment(&file, &known, "level=six").is_err());
        let e = parse_assignment(&file, &known, "level=6,level=3").unwrap_err();
        assert_eq!(
            e.to_string(),
            "option `level` appears more than once in the configuration"
        );
    }
}
