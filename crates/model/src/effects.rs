//! What a term changes over the options' whole ranges, and a unit to print it in.
//!
//! A coefficient alone misleads for numeric options: `-0.00·buffer` is per byte, and over a
//! range of 255 MiB it may be the largest effect of all. The effect of a term is its
//! coefficient times, per linear factor, the span of the option's values (1 for binary
//! options and value indicators); models are read, ranked and drawn by it.

use std::collections::BTreeMap;

use crate::file::ModelFile;
use crate::influence::{Factor, InfluenceModel, Term};

/// The smallest and largest value of each numeric option; options not listed span 0…1
/// (binary options).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ranges(BTreeMap<String, (f64, f64)>);

impl Ranges {
    /// The ranges of the options in the configurations a model was built from (its
    /// `provenance.training`); empty when the file does not record them.
    pub fn from_training(file: &ModelFile) -> Ranges {
        let mut ranges = Ranges::default();
        let Some(training) = file.provenance.get("training") else {
            return ranges;
        };
        let columns = training["columns"].as_array().cloned().unwrap_or_default();
        let rows = training["rows"].as_array().cloned().unwrap_or_default();
        for (i, column) in columns.iter().enumerate() {
            let Some(name) = column.as_str() else {
                continue;
            };
            let values = rows
                .iter()
                .filter_map(|r| r.get(i).and_then(|v| v.as_f64()));
            for v in values {
                ranges.include(name, v);
            }
        }
        ranges
    }

    /// Widens an option's range to hold `value`.
    pub fn include(&mut self, option: &str, value: f64) {
        let range = self.0.entry(option.to_string()).or_insert((value, value));
        range.0 = range.0.min(value);
        range.1 = range.1.max(value);
    }

    /// The option's smallest and largest value, if known.
    pub fn get(&self, option: &str) -> Option<(f64, f64)> {
        self.0.get(option).copied()
    }

    /// How far a linear factor of the option moves over its range: max − min (1 when the
    /// range is unknown, as for a binary option).
    pub fn span(&self, option: &str) -> f64 {
        match self.0.get(option) {
            Some((lo, hi)) if hi > lo => hi - lo,
            _ => 1.0,
        }
    }
}

impl Term {
    /// The coefficient times the span of each linear factor's option: how much the term
    /// changes the prediction over the options' ranges.
    pub fn effect(&self, ranges: &Ranges) -> f64 {
        self.options
            .iter()
            .map(|f| match f {
                Factor::Option(name) => ranges.span(name),
                Factor::Equals(..) => 1.0,
            })
            .product::<f64>()
            * self.value
    }
}

impl InfluenceModel {
    /// Terms in reading order: the intercept, then by |effect| over the ranges descending,
    /// then by degree and name.
    pub fn ranked_terms(&self, ranges: &Ranges) -> Vec<&Term> {
        let mut terms: Vec<&Term> = self.terms().iter().collect();
        terms.sort_by(|a, b| {
            (!a.options.is_empty())
                .cmp(&!b.options.is_empty())
                .then(b.effect(ranges).abs().total_cmp(&a.effect(ranges).abs()))
                .then(a.degree().cmp(&b.degree()))
                .then(a.label().cmp(&b.label()))
        });
        terms
    }

    /// The model as a formula ranked by effect, coefficients multiplied by `scale.factor`
    /// and printed with `precision` decimals: `12.40 + 3.10·A - 0.02·level`.
    pub fn format_ranked(&self, ranges: &Ranges, scale: &Scale, precision: usize) -> String {
        let mut out = String::new();
        for (i, t) in self.ranked_terms(ranges).into_iter().enumerate() {
            let value = t.value * scale.factor;
            let magnitude = if i == 0 { value } else { value.abs() };
            if i > 0 {
                out.push_str(if value < 0.0 { " - " } else { " + " });
            }
            let decimals = decimals_for(magnitude, precision);
            out.push_str(&format!("{magnitude:.decimals$}"));
            if !t.options.is_empty() {
                out.push('·');
                out.push_str(&t.label());
            }
        }
        if out.is_empty() {
            out.push_str(&format!("{:.precision$}", 0.0));
        }
        out
    }
}

/// `precision` decimals, or as many as show a non-zero value with 2 significant digits
/// (at most 12): a coefficient per byte is small, not zero.
fn decimals_for(value: f64, precision: usize) -> usize {
    let magnitude = value.abs();
    if magnitude == 0.0 || magnitude >= 0.5 * 10f64.powi(-(precision as i32)) {
        return precision;
    }
    ((-magnitude.log10()).ceil() as usize + 1).clamp(precision, 12)
}

/// A unit to print values in: values are multiplied by `factor`; `unit` is empty when the
/// metric is not a time (or unknown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub factor: f64,
    pub unit: &'static str,
}

impl Scale {
    /// Values printed as they are.
    pub const NONE: Scale = Scale {
        factor: 1.0,
        unit: "",
    };

    /// The unit a model's terms read best in: that of its largest effect over `ranges` (its
    /// intercept for a constant), for the model's metric or else `metric`; none for models
    /// of ln(performance) or of something other than time.
    pub fn of_model(file: &ModelFile, ranges: &Ranges, metric: Option<&str>) -> Scale {
        if file.transform == crate::file::Transform::Log {
            return Scale::NONE;
        }
        let largest = file
            .terms
            .terms()
            .iter()
            .filter(|t| !t.options.is_empty())
            .map(|t| t.effect(ranges).abs())
            .fold(0.0, f64::max);
        let largest = if largest > 0.0 {
            largest
        } else {
            file.terms.intercept()
        };
        Scale::for_metric(file.metric.as_deref().or(metric), largest)
    }

    /// For a metric in seconds, the unit (s, ms, µs, ns) in which `largest` is at least 1
    /// (seconds for 0); [`Scale::NONE`] for other metrics.
    pub fn for_metric(metric: Option<&str>, largest: f64) -> Scale {
        if !metric.is_some_and(is_seconds) {
            return Scale::NONE;
        }
        let largest = largest.abs();
        if largest == 0.0 || !largest.is_finite() {
            return Scale {
                factor: 1.0,
                unit: "s",
            };
        }
        let units = [(1.0, "s"), (1e3, "ms"), (1e6, "µs"), (1e9, "ns")];
        units
            .into_iter()
            .find(|(factor, _)| largest * factor >= 1.0)
            .map_or(
                Scale {
                    factor: 1e9,
                    unit: "ns",
                },
                |(factor, unit)| Scale { factor, unit },
            )
    }

    /// A value in this unit with `precision` decimals: `12.40 ms`.
    pub fn show(&self, value: f64, precision: usize) -> String {
        let text = format!("{:.precision$}", value * self.factor);
        if self.unit.is_empty() {
            text
        } else {
            format!("{text} {}", self.unit)
        }
    }
}

/// Whether a model's `metric` text names a time in seconds (`time_s`, `wall time (s)`,
/// `cpu, end to end`), not memory, instructions or a ratio to a reference.
pub fn is_seconds(metric: &str) -> bool {
    let m = metric.to_ascii_lowercase();
    if ["rss", "instructions", "per_reference", "kib"]
        .iter()
        .any(|w| m.contains(w))
    {
        return false;
    }
    m.contains("(s)")
        || m.contains("_s")
        || m.contains("time")
        || ["wall", "cpu", "user", "system"]
            .iter()
            .any(|w| m.starts_with(w))
}

/// What a reader should know before trusting a model, one sentence each: a learned model
/// with about as many terms as configurations it was built from fits their noise; a
/// constant says no option matters.
pub fn warnings(file: &ModelFile) -> Vec<String> {
    let mut out = Vec::new();
    let terms = file.terms.terms().len();
    let trained = file
        .provenance
        .get("training")
        .and_then(|t| t["rows"].as_array())
        .map(|rows| rows.len());
    let leaves: usize = file.trees.iter().map(|t| t.leaves()).sum();
    // White-box models are exact per region by construction; only fitted ones can
    // saturate.
    let learned = file.provenance.contains_key("learner");
    if let Some(rows) = trained
        && learned
        && file.trees.is_empty()
        && rows > 1
        && terms + 2 > rows
    {
        out.push(format!(
            "{terms} terms from {rows} configurations: the model can fit their noise; \
             measure more configurations before trusting small terms"
        ));
    }
    let constant_terms = file.terms.terms().iter().all(|t| t.options.is_empty());
    let constant_trees = file.trees.iter().all(|t| t.leaves() <= 1);
    if constant_terms && constant_trees && (terms > 0 || leaves > 0) {
        out.push(
            "the model is a constant: no option explains the measurements \
             (too few configurations, or too much noise)"
                .to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_effect_over_the_range_not_by_coefficient() {
        let m = InfluenceModel::from_terms([
            Term::new::<&str>(&[], 1.0),
            Term::new(&["A"], 0.02),
            Term::new(&["buffer"], -1.5e-10),
        ]);
        let mut ranges = Ranges::default();
        ranges.include("buffer", 1.0);
        ranges.include("buffer", 256.0 * 1024.0 * 1024.0);
        let effect = m.terms()[2].effect(&ranges);
        assert!((effect + 0.0403).abs() < 1e-3, "{effect}");
        let order: Vec<String> = m.ranked_terms(&ranges).iter().map(|t| t.label()).collect();
        assert_eq!(order, ["", "buffer", "A"]);
        assert_eq!(
            m.format_ranked(&ranges, &Scale::NONE, 2),
            "1.00 - 0.00000000015·buffer + 0.02·A"
        );
        // Without ranges, buffer counts as binary.
        let order: Vec<String> = m
            .ranked_terms(&Ranges::default())
            .iter()
            .map(|t| t.label())
            .collect();
        assert_eq!(order, ["", "A", "buffer"]);
    }

    #[test]
    fn picks_a_time_unit_for_the_largest_value() {
        assert_eq!(Scale::for_metric(Some("time_s"), 2.5).unit, "s");
        assert_eq!(Scale::for_metric(Some("wall time (s)"), 0.0251).unit, "ms");
        assert_eq!(Scale::for_metric(Some("cpu, end to end"), 3e-5).unit, "µs");
        assert_eq!(Scale::for_metric(Some("max_rss_kib"), 0.001), Scale::NONE);
        assert_eq!(Scale::for_metric(None, 0.001), Scale::NONE);
        assert_eq!(Scale::for_metric(Some("time_s"), 0.0).unit, "s");
        let ms = Scale::for_metric(Some("wall_s"), 0.0251);
        assert_eq!(ms.show(0.0251, 1), "25.1 ms");
    }

    #[test]
    fn warns_of_saturated_and_constant_models() {
        let mut file = ModelFile::new(InfluenceModel::from_terms(
            (0..11).map(|i| Term::new(&[format!("o{i}")], 1.0)),
        ));
        file.record_training(&["o0".into()], vec![vec![0.0]; 12]);
        assert!(
            warnings(&file).is_empty(),
            "not learned: exact by construction"
        );
        file.provenance.insert("learner".into(), "stepwise".into());
        let w = warnings(&file);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("11 terms from 12 configurations"), "{w:?}");
        file.record_training(&["o0".into()], vec![vec![0.0]; 40]);
        assert!(warnings(&file).is_empty());
        let constant = ModelFile::new(InfluenceModel::from_terms([Term::new::<&str>(&[], 2.0)]));
        assert!(warnings(&constant)[0].starts_with("the model is a constant"));
    }
}
