//! What an option and a term change in a model's prediction, and a unit to print it in.
//!
//! A coefficient alone misleads: `-0.00·buffer` is per byte, value indicators such as
//! `level=3` and `level=9` are never on together, and terms of options in an alternative
//! offset each other. So effects are read off the model's own predictions over a set of
//! configurations ([`Configurations`]: the space's valid ones, or those the model was built
//! from):
//!
//! - the model's *spread* is its largest prediction minus its smallest;
//! - an option's effect is the largest difference in prediction between two of the
//!   configurations that differ in that option and in as few others as possible (none for
//!   a free option: the largest max − min over the option's values with every other option
//!   held; one for a member of an alternative: the member swapped in for another);
//! - a term's effect is how far its own value (coefficient × factors) moves over the
//!   configurations, at most the spread: a term whose own span is larger is offset by
//!   other terms, and says so ([`Effects::is_offset`]).
//!
//! Every effect is thus a difference between two predictions of the configurations, never
//! more than the spread. For a model of ln(performance) they are differences of logarithms:
//! `exp` of one is a ratio of predictions.

use std::collections::{BTreeMap, HashMap};

use crate::Error;
use crate::assignment::KnownValues;
use crate::file::ModelFile;
use crate::influence::{Factor, InfluenceModel, Term, Threshold};
use crate::units::Scale;

/// How many combinations of the options' values [`Configurations::combinations`] lists at
/// most; beyond, it lists an evenly spread selection of them.
pub const MOST_COMBINATIONS: usize = 65_536;

/// How much work (rows × options²) the search for pairs that differ in an option and one
/// other may take per option; beyond, [`OptionEffect::others`] is `None`.
const MOST_PAIR_WORK: usize = 20_000_000;

/// Configurations to read effects over: one row of values per configuration, a column per
/// option, and what they are in words.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Configurations {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
    /// What they are: `the 48 valid configurations of the space`.
    pub described: String,
}

impl Configurations {
    /// The configurations the model was built from (its `provenance.training`), if recorded.
    pub fn from_training(file: &ModelFile) -> Option<Configurations> {
        let training = file.provenance.get("training")?;
        let columns: Vec<String> = training["columns"]
            .as_array()?
            .iter()
            .map(|c| c.as_str().map(str::to_string))
            .collect::<Option<_>>()?;
        let rows: Vec<Vec<f64>> = training["rows"]
            .as_array()?
            .iter()
            .map(|r| {
                r.as_array()?
                    .iter()
                    .map(|v| v.as_f64())
                    .collect::<Option<Vec<f64>>>()
            })
            .collect::<Option<_>>()?;
        if rows.is_empty()
            || file
                .options()
                .iter()
                .any(|o| !columns.iter().any(|c| c == o))
        {
            return None;
        }
        Some(Configurations {
            described: format!("the {} configurations the model was built from", rows.len()),
            columns,
            rows,
        })
    }

    /// Every combination of the values the model's options take (0/1 for a binary option,
    /// the values its terms and training name for a numeric one), constraints unknown; an
    /// evenly spread selection of [`MOST_COMBINATIONS`] when there are more.
    pub fn combinations(file: &ModelFile) -> Configurations {
        let known = KnownValues::from_training(file);
        let columns: Vec<String> = file.options().into_iter().map(String::from).collect();
        let values: Vec<Vec<f64>> = columns
            .iter()
            .map(|c| {
                let mut v = known.values(c);
                for t in file.terms.terms() {
                    for f in &t.options {
                        if let Factor::Equals(n, x) = f
                            && n == c
                            && !v.contains(x)
                        {
                            v.push(*x);
                        }
                    }
                }
                if v.is_empty() {
                    v = vec![0.0, 1.0];
                }
                v.sort_by(f64::total_cmp);
                v
            })
            .collect();
        let total = values
            .iter()
            .try_fold(1usize, |n, v| n.checked_mul(v.len()))
            .unwrap_or(usize::MAX);
        let taken = total.min(MOST_COMBINATIONS);
        // Combination i of `total` in mixed radix; a stride spreads a selection over all.
        let stride = (total / taken).max(1);
        let rows = (0..taken)
            .map(|k| {
                let mut i = k.saturating_mul(stride);
                values
                    .iter()
                    .map(|v| {
                        let x = v[i % v.len()];
                        i /= v.len();
                        x
                    })
                    .collect()
            })
            .collect();
        let described = if taken == total {
            format!("the {total} combinations of the options' values (constraints unknown)")
        } else {
            format!(
                "{taken} of the combinations of the options' values (constraints unknown; \
                 a selection, so effects may be larger)"
            )
        };
        Configurations {
            columns,
            rows,
            described,
        }
    }

    /// The configurations the model was built from, else every combination of its values.
    pub fn of_model(file: &ModelFile) -> Configurations {
        Configurations::from_training(file).unwrap_or_else(|| Configurations::combinations(file))
    }
}

/// What an option changes in the prediction.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionEffect {
    pub option: String,
    /// The largest difference in prediction over the pairs of configurations that differ in
    /// the option (and in `others` more options), signed as the prediction with the
    /// option's larger value minus with its smaller.
    pub effect: f64,
    /// How many other options differ in those pairs: 0 when the option varies alone, 1 for
    /// a member of an alternative; `None` when no two configurations differ in the option
    /// and at most one other, or too many configurations of too many options to search
    /// (then every pair that differs in the option counts).
    pub others: Option<usize>,
}

/// Effects of a model's options and terms over a set of configurations (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct Effects {
    /// The smallest and largest prediction, on the model's scale (ln for a log model).
    pub lowest: f64,
    pub highest: f64,
    /// By |effect|, largest first.
    pub options: Vec<OptionEffect>,
    pub configurations: Configurations,
}

impl Effects {
    /// Reads the effects of `file` over `configurations`, which must give a value for every
    /// option the model uses.
    pub fn of(file: &ModelFile, configurations: Configurations) -> Result<Effects, Error> {
        let raw = ModelFile {
            transform: crate::file::Transform::Identity,
            ..file.clone()
        };
        let bound = raw.bind(&configurations.columns)?;
        let predictions: Vec<f64> = configurations
            .rows
            .iter()
            .map(|r| bound.predict(r))
            .collect();
        let lowest = predictions.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = predictions
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let (lowest, highest) = if predictions.is_empty() {
            (0.0, 0.0)
        } else {
            (lowest, highest)
        };
        let mut options: Vec<OptionEffect> = file
            .options()
            .into_iter()
            .filter_map(|o| {
                let j = configurations.columns.iter().position(|c| c == o)?;
                Some(option_effect(o, j, &configurations.rows, &predictions))
            })
            .collect();
        options.sort_by(|a, b| {
            b.effect
                .abs()
                .total_cmp(&a.effect.abs())
                .then(a.option.cmp(&b.option))
        });
        Ok(Effects {
            lowest,
            highest,
            options,
            configurations,
        })
    }

    /// The largest difference between two predictions: every effect is at most this.
    pub fn spread(&self) -> f64 {
        self.highest - self.lowest
    }

    /// How far the term's own value moves over the configurations, signed as its
    /// coefficient, at most the spread (see [`Effects::is_offset`]); 0 for the intercept.
    pub fn term(&self, term: &Term) -> f64 {
        let own = self.own_span(term);
        own.min(self.spread()) * term.value.signum()
    }

    /// Whether the term's own value moves further than the model's predictions do: other
    /// terms offset it, so its coefficient overstates what it changes.
    pub fn is_offset(&self, term: &Term) -> bool {
        self.own_span(term) > self.spread() + 1e-9 * self.spread().abs().max(1e-300)
    }

    fn own_span(&self, term: &Term) -> f64 {
        if term.options.is_empty() {
            return 0.0;
        }
        self.spread_of(&InfluenceModel::from_terms([term.clone()]))
    }

    /// How far a part of the model (a region's local model) moves over the configurations:
    /// its largest value minus its smallest (0 if it names options they lack).
    pub fn spread_of(&self, part: &InfluenceModel) -> f64 {
        let Ok(bound) = part.bind(&self.configurations.columns) else {
            return 0.0;
        };
        let (lo, hi) = self
            .configurations
            .rows
            .iter()
            .map(|r| bound.predict(r))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        if hi >= lo { hi - lo } else { 0.0 }
    }

    /// The effect of one option (0 if the model does not use it).
    pub fn option(&self, option: &str) -> f64 {
        self.options
            .iter()
            .find(|o| o.option == option)
            .map_or(0.0, |o| o.effect)
    }

    /// Removes the terms (never the intercept) whose effect is below the threshold:
    /// [`Threshold::Absolute`] in the model's unit, [`Threshold::Relative`] as a fraction
    /// of the spread. Returns the removed terms.
    pub fn prune(&self, model: &mut InfluenceModel, threshold: Threshold) -> Vec<Term> {
        let limit = match threshold {
            Threshold::Absolute(x) => x,
            Threshold::Relative(r) => r * self.spread(),
        };
        let (keep, drop): (Vec<Term>, Vec<Term>) = model
            .terms()
            .iter()
            .cloned()
            .partition(|t| t.options.is_empty() || self.term(t).abs() >= limit);
        *model = InfluenceModel::from_terms(keep);
        drop
    }
}

/// The effect of the option in column `j` (see [`OptionEffect`]).
fn option_effect(option: &str, j: usize, rows: &[Vec<f64>], predictions: &[f64]) -> OptionEffect {
    let width = rows.first().map_or(0, Vec::len);
    let held = |skip: Option<usize>| {
        largest_difference(rows, predictions, j, |r: &[f64]| {
            (0..width)
                .filter(|&k| k != j && Some(k) != skip)
                .map(|k| r[k].to_bits())
                .collect::<Vec<u64>>()
        })
    };
    if let Some(effect) = held(None) {
        return OptionEffect {
            option: option.into(),
            effect,
            others: Some(0),
        };
    }
    // One grouping per other option: bounded so that a large sample of many options stays
    // quick; past the bound, every pair counts (and says so).
    let affordable = rows.len().saturating_mul(width * width) <= MOST_PAIR_WORK;
    let one_other = (0..width)
        .filter(|&k| k != j && affordable)
        .filter_map(|k| held(Some(k)))
        .max_by(|a, b| a.abs().total_cmp(&b.abs()));
    if let Some(effect) = one_other {
        return OptionEffect {
            option: option.into(),
            effect,
            others: Some(1),
        };
    }
    OptionEffect {
        option: option.into(),
        effect: largest_difference(rows, predictions, j, |_| Vec::new()).unwrap_or(0.0),
        others: None,
    }
}

/// Among pairs of rows with the same `key` and different values in column `j`, the
/// largest |difference of predictions|, signed as the prediction at the larger value minus
/// at the smaller; `None` when no such pair exists.
fn largest_difference(
    rows: &[Vec<f64>],
    predictions: &[f64],
    j: usize,
    key: impl Fn(&[f64]) -> Vec<u64>,
) -> Option<f64> {
    // Per key, per value of the column: the value, the smallest and largest prediction.
    type ByValue = BTreeMap<u64, (f64, f64, f64)>;
    let mut groups: HashMap<Vec<u64>, ByValue> = HashMap::new();
    for (r, &p) in rows.iter().zip(predictions) {
        let entry = groups
            .entry(key(r))
            .or_default()
            .entry(r[j].to_bits())
            .or_insert((r[j], p, p));
        entry.1 = entry.1.min(p);
        entry.2 = entry.2.max(p);
    }
    let mut best: Option<f64> = None;
    for by_value in groups.values() {
        let values: Vec<&(f64, f64, f64)> = by_value.values().collect();
        for (a, va) in values.iter().enumerate() {
            for vb in &values[a + 1..] {
                let (small, large) = if va.0 < vb.0 { (va, vb) } else { (vb, va) };
                for d in [large.2 - small.1, large.1 - small.2] {
                    if best.is_none_or(|b| d.abs() > b.abs()) {
                        best = Some(d);
                    }
                }
            }
        }
    }
    best
}

impl InfluenceModel {
    /// Terms in reading order: the intercept, then by |effect| descending, then by degree
    /// and name.
    pub fn ranked_terms(&self, effects: &Effects) -> Vec<&Term> {
        let mut terms: Vec<(&Term, f64)> = self
            .terms()
            .iter()
            .map(|t| (t, effects.term(t).abs()))
            .collect();
        terms.sort_by(|(a, ea), (b, eb)| {
            (!a.options.is_empty())
                .cmp(&!b.options.is_empty())
                .then(eb.total_cmp(ea))
                .then(a.degree().cmp(&b.degree()))
                .then(a.label().cmp(&b.label()))
        });
        terms.into_iter().map(|(t, _)| t).collect()
    }

    /// The model as a formula ranked by effect, coefficients multiplied by `scale.factor`
    /// and printed with `precision` decimals: `12.40 + 3.10·A - 0.02·level`.
    pub fn format_ranked(&self, effects: &Effects, scale: &Scale, precision: usize) -> String {
        let mut out = String::new();
        for (i, t) in self.ranked_terms(effects).into_iter().enumerate() {
            let value = t.value * scale.factor;
            let magnitude = if i == 0 { value } else { value.abs() };
            if i > 0 {
                out.push_str(if value < 0.0 { " - " } else { " + " });
            }
            // More decimals only for a coefficient whose effect is visible (per byte of a
            // buffer); a term whose effect rounds to zero prints as zero.
            let visible =
                effects.term(t).abs() * scale.factor >= 0.5 * 10f64.powi(-(precision as i32));
            let decimals = if visible {
                decimals_for(magnitude, precision)
            } else {
                precision
            };
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

impl Scale {
    /// The unit a model's terms read best in: that of its spread (its intercept for a
    /// constant), for the model's metric or else `metric`; none for models of
    /// ln(performance) or of something other than time.
    pub fn of_model(file: &ModelFile, effects: &Effects, metric: Option<&str>) -> Scale {
        if file.transform == crate::file::Transform::Log {
            return Scale::NONE;
        }
        let largest = if effects.spread() > 0.0 {
            effects.spread()
        } else {
            file.terms.intercept()
        };
        Scale::for_metric(file.metric.as_deref().or(metric), largest)
    }
}

/// What a reader should know before trusting a model, one sentence each: a learned model
/// with about as many terms as configurations it was built from fits their noise; a
/// constant says no option matters.
/// A white-box model built with failed configurations accepted records, under `unmeasured`,
/// the cells no successful run measured and the terms it left out for them: its predictions
/// for configurations in those cells are not measured, and a reader must be told.
pub fn unmeasured_warning(file: &ModelFile) -> Option<String> {
    let entries = file.provenance.get("unmeasured")?.as_array()?;
    let left_out: Vec<String> = entries
        .iter()
        .flat_map(|e| e["terms_left_out"].as_array().into_iter().flatten())
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    let cells: Vec<String> = entries
        .iter()
        .flat_map(|e| e["cells"].as_array().into_iter().flatten())
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    (!entries.is_empty()).then(|| {
        format!(
            "built with failed configurations: no successful run measured {}; the model leaves \
             out {}, so its predictions for those configurations are not measured",
            cells.join("; "),
            if left_out.is_empty() {
                "no term".to_string()
            } else {
                left_out.join(", ")
            }
        )
    })
}

/// Why a reader should be careful with this model, one sentence each.
pub fn warnings(file: &ModelFile) -> Vec<String> {
    let mut out: Vec<String> = unmeasured_warning(file).into_iter().collect();
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

    fn rows(columns: &[&str], rows: &[&[f64]]) -> Configurations {
        Configurations {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: rows.iter().map(|r| r.to_vec()).collect(),
            described: "test".into(),
        }
    }

    #[test]
    fn ranks_by_effect_over_the_configurations_not_by_coefficient() {
        let m = InfluenceModel::from_terms([
            Term::new::<&str>(&[], 1.0),
            Term::new(&["A"], 0.02),
            Term::new(&["buffer"], -1.5e-10),
            Term::new(&["noop"], 1e-12),
        ]);
        let big = 256.0 * 1024.0 * 1024.0;
        let configs = rows(
            &["A", "buffer", "noop"],
            &[
                &[0.0, 1.0, 0.0],
                &[1.0, 1.0, 1.0],
                &[0.0, big, 0.0],
                &[1.0, big, 1.0],
            ],
        );
        let effects = Effects::of(&ModelFile::new(m.clone()), configs).unwrap();
        let effect = effects.term(&m.terms()[2]);
        assert!((effect + 0.0403).abs() < 1e-3, "{effect}");
        assert!((effects.option("buffer") + 0.0403).abs() < 1e-3);
        let order: Vec<String> = m.ranked_terms(&effects).iter().map(|t| t.label()).collect();
        assert_eq!(order, ["", "buffer", "A", "noop"]);
        // A per-byte coefficient gets the decimals it needs; one whose effect rounds to zero
        // does not.
        assert_eq!(
            m.format_ranked(&effects, &Scale::NONE, 2),
            "1.00 - 0.00000000015·buffer + 0.02·A + 0.00·noop"
        );
    }

    /// xz's shape: value indicators of one numeric option, an alternative, and terms that
    /// offset each other. Every effect is a difference of two predictions.
    #[test]
    fn effects_never_exceed_the_models_spread() {
        let m = InfluenceModel::from_terms([
            Term::new::<&str>(&[], 0.3),
            Term::new(&["extreme"], 0.285),
            Term::new(&["extreme", "level"], -0.105),
            Term::from_factors(vec!["level=3".parse().unwrap()], 0.05),
            Term::from_factors(vec!["level=6".parse().unwrap()], 0.06),
            Term::from_factors(vec!["level=9".parse().unwrap()], 0.07),
            Term::new(&["crc32"], 5.0),
            Term::new(&["crc64"], 5.0),
        ]);
        let mut configs = rows(&["crc32", "crc64", "extreme", "level"], &[]);
        for level in [0.0, 3.0, 6.0, 9.0] {
            for extreme in [0.0, 1.0] {
                for crc in [[1.0, 0.0], [0.0, 1.0]] {
                    configs.rows.push(vec![crc[0], crc[1], extreme, level]);
                }
            }
        }
        let effects = Effects::of(&ModelFile::new(m.clone()), configs).unwrap();
        let spread = effects.spread();
        // Largest: extreme at level 0 (+0.285) vs level 9 with extreme (0.285 - 0.945 + 0.07).
        assert!((spread - (0.3 + 0.285 + 0.0 - (0.3 + 0.285 - 0.945 + 0.07))).abs() < 1e-9);
        for o in &effects.options {
            assert!(o.effect.abs() <= spread + 1e-12, "{o:?} > {spread}");
        }
        for t in m.terms() {
            assert!(effects.term(t).abs() <= spread + 1e-12, "{t:?}");
        }
        // extreme: +0.285 at level 0, -0.66 at level 9: the largest change is a speed-up.
        assert!((effects.option("extreme") + 0.66).abs() < 1e-9);
        // level with extreme held: level 0 → 9 changes by 0.07 - 0.945.
        assert!((effects.option("level") + 0.875).abs() < 1e-9);
        // The members of the alternative swap for each other and change nothing; each alone
        // would offset the intercept by 5.
        let crc32 = &effects
            .options
            .iter()
            .find(|o| o.option == "crc32")
            .unwrap();
        assert_eq!((crc32.effect, crc32.others), (0.0, Some(1)));
        assert!(effects.is_offset(&m.terms()[6]));
        assert!(!effects.is_offset(&m.terms()[1]));
        // −0.105 × 9 = −0.945 is more than the predictions move: `extreme` and the
        // indicators offset part of it, and its effect is capped at the spread.
        assert!(effects.is_offset(&m.terms()[2]));
        assert!((effects.term(&m.terms()[2]) + spread).abs() < 1e-12);
        // Pruning by effect keeps the interaction (the largest coefficient × 9) and drops
        // the small indicators.
        let mut pruned = m.clone();
        let dropped = effects.prune(&mut pruned, Threshold::Relative(0.1));
        let labels: Vec<String> = dropped.iter().map(|t| t.label()).collect();
        assert_eq!(labels, ["level=3", "level=6", "level=9"]);
    }

    #[test]
    fn combinations_without_training() {
        let file = ModelFile::new(InfluenceModel::from_terms([
            Term::new(&["A"], 1.0),
            Term::from_factors(vec!["level=6".parse().unwrap()], 2.0),
        ]));
        let c = Configurations::combinations(&file);
        assert_eq!(c.columns, ["A", "level"]);
        assert_eq!(c.rows.len(), 2);
        assert!(c.described.contains("constraints unknown"));
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
