//! Beyond the paper's constant-cost assumption (§5.2: a method costs the same whatever
//! features ran before). A compressor's level sets how long its match finder searches later,
//! in code no feature owns: one run with every feature selected sees one cost of it, and the
//! paper's model charges it to every configuration. This module finds the calling contexts
//! whose cost depends on options, from the first run and further runs chosen for it — the
//! configuration with the fewest features selected ([`fewest_features`]), then, where a
//! context's cost differs between the two, one run per option that differs, with only that
//! option deselected ([`deselected`]) — and models each such context from them: its cost in
//! the first run, plus per option the change deselecting it makes ([`correction_terms`]).
//! Options acting on a context together (an interaction among them) are not modelled: the
//! run with the fewest features shows it, and [`DependentContext::fewest_predicted`] says
//! how far off the per-option terms are there.

use std::collections::{BTreeMap, BTreeSet};

use model::{Factor, Term};
use serde::Serialize;
use space::{Configuration, GroupKind, Literal, OptionId, ValidConfigurations};

use crate::model::{RunTimes, context_factors};

/// A calling context whose cost depends on options.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DependentContext {
    /// The functions from the outermost instrumented one down, `main>compress>find_matches`.
    pub context: String,
    pub function: String,
    /// The run it was found in (every feature selected, one of the variant simulator's),
    /// and that run's total.
    pub run: String,
    pub run_total: f64,
    /// Its cost in that run, 0 where it did not run there.
    pub first: f64,
    /// The options whose deselection changes its cost, and by how much (cost with the option
    /// deselected less cost in the first run).
    pub changes: Vec<OptionChange>,
    /// Its cost in the run with the fewest features, and as the per-option changes predict
    /// it there (their difference is what options acting together add).
    pub fewest_measured: f64,
    pub fewest_predicted: f64,
}

/// What the check of the constant-cost assumption ran and found.
#[derive(Clone, Debug, Serialize)]
pub struct CostDependence {
    /// The further runs: the fewest features, then (where a context's cost differed) one
    /// per option deselected.
    pub configurations: Vec<String>,
    /// The calling contexts whose cost depends on options, the largest change first.
    pub contexts: Vec<DependentContext>,
    /// The functions and options that break the assumption noticeably (a change of at least
    /// [`NOTICEABLE`] of its run's total), the largest change first.
    pub functions: Vec<String>,
    pub options: Vec<String>,
    /// Contexts with smaller changes (modelled all the same).
    pub minor: usize,
}

/// The share of a run's total from which a change is worth naming.
pub const NOTICEABLE: f64 = 0.01;

impl CostDependence {
    /// The report of `contexts`, sorted, with the functions and options they name.
    pub fn new(configurations: Vec<String>, mut contexts: Vec<DependentContext>) -> Self {
        contexts.sort_by(|a, b| b.share().total_cmp(&a.share()));
        let mut functions: Vec<String> = Vec::new();
        let mut options: Vec<(String, f64)> = Vec::new();
        let minor = contexts.iter().filter(|c| c.share() < NOTICEABLE).count();
        for c in contexts.iter().filter(|c| c.share() >= NOTICEABLE) {
            if !functions.contains(&c.function) {
                functions.push(c.function.clone());
            }
            for change in &c.changes {
                match options.iter_mut().find(|(o, _)| *o == change.option) {
                    Some((_, sum)) => *sum += change.change.abs(),
                    None => options.push((change.option.clone(), change.change.abs())),
                }
            }
        }
        options.sort_by(|a, b| b.1.total_cmp(&a.1));
        CostDependence {
            configurations,
            contexts,
            functions,
            options: options.into_iter().map(|(o, _)| o).collect(),
            minor,
        }
    }
}

impl DependentContext {
    /// [`DependentContext::largest_change`] as a share of its run's total.
    pub fn share(&self) -> f64 {
        match self.run_total > 0.0 {
            true => self.largest_change() / self.run_total,
            false => 0.0,
        }
    }

    /// The largest change one option makes, or the difference in the run with the fewest
    /// features.
    pub fn largest_change(&self) -> f64 {
        self.changes
            .iter()
            .map(|c| c.change.abs())
            .fold((self.fewest_measured - self.first).abs(), f64::max)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OptionChange {
    pub option: String,
    pub change: f64,
}

/// How far a context's cost may differ between two runs and still count as the same: in
/// counted instructions not at all, in time by the noise of one run.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Of the larger of the two costs.
    pub relative: f64,
    /// Of the run's total.
    pub of_total: f64,
}

impl Tolerance {
    /// Counts repeat exactly: any difference of an instruction or more.
    pub const COUNTED: Tolerance = Tolerance {
        relative: 0.0,
        of_total: 0.0,
    };
    /// One run's time: a tenth of the context, and half a percent of the run.
    pub const TIMED: Tolerance = Tolerance {
        relative: 0.1,
        of_total: 0.005,
    };

    fn differ(&self, a: f64, b: f64, total: f64) -> bool {
        let d = (a - b).abs();
        d > 0.0 && d > self.relative * a.max(b) && d > self.of_total * total
    }
}

/// The options a run chooses a value of without a feature being deselected: alternative
/// members and numeric options, fixed as `first` has them.
fn chosen_literals(valid: &ValidConfigurations, first: &Configuration) -> Vec<Literal> {
    let space = valid.space();
    let alternatives: BTreeSet<OptionId> = space
        .groups()
        .iter()
        .filter(|g| g.kind == GroupKind::Alternative)
        .flat_map(|g| g.members.iter().copied())
        .collect();
    space
        .ids()
        .filter(|o| alternatives.contains(o) || !space.option(*o).is_binary())
        .map(|o| (o, first.0[o.index()]))
        .collect()
}

/// The valid configuration with `first`'s alternative members and numeric values and as few
/// other features selected as the constraints allow; `None` when that is `first` itself.
pub fn fewest_features(
    valid: &ValidConfigurations,
    first: &Configuration,
) -> Option<Configuration> {
    let mut bdd = valid.bdd().clone();
    for l in chosen_literals(valid, first) {
        bdd = bdd.and(&valid.literal(l));
    }
    valid
        .extreme_in(&bdd, false)
        .filter(|fewest| fewest != first)
}

/// The binary options selected in `first` and not in `fewest`: those a further run
/// deselects one at a time.
pub fn candidate_options(
    valid: &ValidConfigurations,
    first: &Configuration,
    fewest: &Configuration,
) -> Vec<OptionId> {
    let space = valid.space();
    space
        .ids()
        .filter(|o| {
            space.option(*o).is_binary() && first.0[o.index()] == 1 && fewest.0[o.index()] == 0
        })
        .collect()
}

/// `first` with `option` deselected, or, where the constraints forbid that, the valid
/// configuration without it that keeps `first`'s alternatives and selects most.
pub fn deselected(
    valid: &ValidConfigurations,
    first: &Configuration,
    option: OptionId,
) -> Option<Configuration> {
    let mut c = first.clone();
    c.0[option.index()] = 0;
    if valid.is_valid(&c) {
        return Some(c);
    }
    let mut bdd = valid.bdd().and(&valid.literal((option, 0)));
    for l in chosen_literals(valid, first) {
        bdd = bdd.and(&valid.literal(l));
    }
    valid.extreme_in(&bdd, true)
}

/// Each context's cost in a run (joined path → cost), and the run's total.
pub fn costs(run: &RunTimes) -> (BTreeMap<String, f64>, f64) {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for c in &run.contexts {
        *out.entry(c.path.join(">")).or_default() += c.seconds;
    }
    let total = run.base + out.values().sum::<f64>();
    (out, total)
}

/// Whether a context can run in `configuration`: every feature on its path is selected
/// (a context under a deselected feature is absent by design, which the model knows).
fn can_run(
    feature_of: &BTreeMap<String, OptionId>,
    context: &str,
    configuration: &Configuration,
) -> bool {
    context.split('>').all(|f| {
        feature_of
            .get(f)
            .is_none_or(|o| configuration.0[o.index()] != 0)
    })
}

/// The contexts whose cost differs between `first` and `other`, among those that can run in
/// both.
pub fn differing(
    feature_of: &BTreeMap<String, OptionId>,
    first: &RunTimes,
    other: &RunTimes,
    tolerance: Tolerance,
) -> BTreeSet<String> {
    let (a, total) = costs(first);
    let (b, _) = costs(other);
    a.keys()
        .chain(b.keys())
        .filter(|c| {
            can_run(feature_of, c, &first.configuration)
                && can_run(feature_of, c, &other.configuration)
        })
        .filter(|c| {
            let (x, y) = (
                a.get(*c).copied().unwrap_or(0.0),
                b.get(*c).copied().unwrap_or(0.0),
            );
            tolerance.differ(x, y, total)
        })
        .cloned()
        .collect()
}

/// The contexts whose cost depends on options: those that differ between `first` and
/// `fewest` or between `first` and a run with one option deselected (`flips`), each with
/// its per-option changes.
pub fn dependent_contexts(
    valid: &ValidConfigurations,
    feature_of: &BTreeMap<String, OptionId>,
    first: &RunTimes,
    fewest: &RunTimes,
    flips: &[(OptionId, RunTimes)],
    tolerance: Tolerance,
) -> Vec<DependentContext> {
    let space = valid.space();
    let mut flagged = differing(feature_of, first, fewest, tolerance);
    for (_, flip) in flips {
        flagged.extend(differing(feature_of, first, flip, tolerance));
    }
    let (first_costs, total) = costs(first);
    let (fewest_costs, _) = costs(fewest);
    let flip_costs: Vec<(OptionId, &RunTimes, BTreeMap<String, f64>)> = flips
        .iter()
        .map(|(o, run)| (*o, run, costs(run).0))
        .collect();
    let mut out = Vec::new();
    for context in flagged {
        let a = first_costs.get(&context).copied().unwrap_or(0.0);
        let mut changes = Vec::new();
        let mut predicted = a;
        for (o, run, by) in &flip_costs {
            if !can_run(feature_of, &context, &run.configuration) {
                continue; // a feature on its path: its term has the option already
            }
            let b = by.get(&context).copied().unwrap_or(0.0);
            if !tolerance.differ(a, b, total) {
                continue;
            }
            changes.push(OptionChange {
                option: space.option(*o).name.clone(),
                change: b - a,
            });
            if fewest.configuration.0[o.index()] == 0 {
                predicted += b - a;
            }
        }
        let fewest_measured = match can_run(feature_of, &context, &fewest.configuration) {
            true => fewest_costs.get(&context).copied().unwrap_or(0.0),
            false => predicted,
        };
        out.push(DependentContext {
            function: context.rsplit('>').next().unwrap_or_default().to_string(),
            context,
            run: space.format_configuration(&first.configuration),
            run_total: total,
            first: a,
            changes,
            fewest_measured,
            fewest_predicted: predicted,
        });
    }
    out
}

/// Per function, the terms that model its dependent contexts on top of the paper's model
/// (which charges each context its cost in the runs, as if constant): with the context's
/// features P, a context costing `a` with every option selected and `a + d_o` with option o
/// deselected costs `a + Σ d_o·(1 − o)`, so P gains `Σ d_o` and P·o gains `−d_o`.
pub fn correction_terms(
    valid: &ValidConfigurations,
    feature_of: &BTreeMap<String, OptionId>,
    first: &Configuration,
    dependent: &[DependentContext],
) -> BTreeMap<String, Vec<Term>> {
    let space = valid.space();
    let mut out: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    for d in dependent {
        let path: Vec<String> = d.context.split('>').map(String::from).collect();
        let prefix = context_factors(valid, feature_of, &path, first, &mut Vec::new());
        let terms = out.entry(d.function.clone()).or_default();
        let sum: f64 = d.changes.iter().map(|c| c.change).sum();
        terms.push(Term::from_factors(prefix.clone(), sum));
        for c in &d.changes {
            let mut factors = prefix.clone();
            let option = Factor::Option(c.option.clone());
            if !factors.contains(&option) && space.find(&c.option).is_some() {
                factors.push(option);
            }
            terms.push(Term::from_factors(factors, -c.change));
        }
    }
    out
}

/// The factors of the alternatives `other` chooses apart from `first`: its members of
/// alternative groups and its values of numeric options where they differ.
pub fn chosen_apart(
    valid: &ValidConfigurations,
    first: &Configuration,
    other: &Configuration,
) -> Vec<Factor> {
    let space = valid.space();
    chosen_literals(valid, other)
        .into_iter()
        .filter(|(o, v)| first.0[o.index()] != *v)
        .filter_map(|(o, v)| {
            let option = space.option(o);
            match option.is_binary() {
                true => (v == 1).then(|| Factor::Option(option.name.clone())),
                false => Some(Factor::Equals(option.name.clone(), option.numeric_value(v))),
            }
        })
        .collect()
}

/// Adds `terms`, each times `factors` and `sign`, to `into`.
pub fn add_terms(
    into: &mut BTreeMap<String, Vec<Term>>,
    terms: &BTreeMap<String, Vec<Term>>,
    factors: &[Factor],
    sign: f64,
) {
    for (function, list) in terms {
        let out = into.entry(function.clone()).or_default();
        for t in list {
            let mut with = t.options.clone();
            with.extend(factors.iter().cloned());
            out.push(Term::from_factors(with, sign * t.value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Context;
    use space::ConfigSpace;

    fn run(configuration: Vec<u32>, contexts: &[(&str, f64)]) -> RunTimes {
        RunTimes {
            configuration: Configuration(configuration),
            contexts: contexts
                .iter()
                .map(|(p, s)| Context {
                    path: p.split('>').map(String::from).collect(),
                    seconds: *s,
                    entries: 1,
                })
                .collect(),
            base: 0.0,
        }
    }

    /// A match finder whose cost Fast sets (6,400 off, 800 on), a checksum that is Check's
    /// own function: the match finder is found and modelled, Check's absence is not a
    /// dependence, and the corrected terms give every configuration's cost.
    #[test]
    fn a_context_whose_cost_an_option_sets_is_found_and_modelled() {
        let mut s = ConfigSpace::new("level");
        let fast = s.add_binary("Fast", None, false).unwrap();
        let check = s.add_binary("Check", None, false).unwrap();
        let valid = ValidConfigurations::new(&s).unwrap();
        let features: BTreeMap<String, OptionId> = [("checksum".to_string(), check)].into();
        let first = run(
            vec![1, 1],
            &[
                ("main", 10.0),
                ("main>find", 800.0),
                ("main>checksum", 300.0),
            ],
        );
        let fewest_config = fewest_features(&valid, &first.configuration).unwrap();
        assert_eq!(fewest_config, Configuration(vec![0, 0]));
        assert_eq!(
            candidate_options(&valid, &first.configuration, &fewest_config),
            [fast, check]
        );
        let fewest = run(vec![0, 0], &[("main", 10.0), ("main>find", 6400.0)]);
        assert_eq!(
            differing(&features, &first, &fewest, Tolerance::COUNTED),
            BTreeSet::from(["main>find".to_string()])
        );
        let flips = [
            (
                fast,
                run(
                    vec![0, 1],
                    &[
                        ("main", 10.0),
                        ("main>find", 6400.0),
                        ("main>checksum", 300.0),
                    ],
                ),
            ),
            (
                check,
                run(vec![1, 0], &[("main", 10.0), ("main>find", 800.0)]),
            ),
        ];
        let dependent = dependent_contexts(
            &valid,
            &features,
            &first,
            &fewest,
            &flips,
            Tolerance::COUNTED,
        );
        assert_eq!(dependent.len(), 1, "{dependent:?}");
        let d = &dependent[0];
        assert_eq!((d.function.as_str(), d.first), ("find", 800.0));
        assert_eq!(
            d.changes,
            [OptionChange {
                option: "Fast".into(),
                change: 5600.0
            }]
        );
        assert_eq!((d.fewest_measured, d.fewest_predicted), (6400.0, 6400.0));
        let terms = correction_terms(&valid, &features, &first.configuration, &dependent);
        let model = model::InfluenceModel::from_terms(
            terms["find"]
                .iter()
                .cloned()
                .chain([Term::from_factors(vec![], 800.0)]),
        );
        let bound = model.bind(&["Fast", "Check"]).unwrap();
        let predict = |fast: f64| bound.predict(&[fast, 1.0]);
        assert_eq!((predict(1.0), predict(0.0)), (800.0, 6400.0));
    }
}
