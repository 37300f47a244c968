//! From call trees to the performance-influence model (§3.2.2–§3.2.3, §3.3).
//!
//! Each calling context (the functions from `main` down to one function) has a self time.
//! Its term is the set of features of the functions on the way (Algorithm 2's prefix plus
//! the function's own feature): as a set, a feature met twice counts once (S-Ref), and a
//! mandatory feature, selected in every valid configuration, is left out (S-Mand). A context
//! adds its self time to its term (Algorithm 3). C has no method refinement (`original`):
//! every call into a feature's function extends the prefix. With several runs (one per
//! member of the mutually exclusive alternatives), a term's time is its mean over the runs
//! that select all of its features, so code common to all runs is counted once. When the runs
//! differ in one set of alternatives only (an alternative group, or a numeric option's
//! values), each run's time belongs to the member it selects: every context of the run has
//! that member among its features (§3.3: "compute the times consumed by the corresponding
//! features"), so the model tells the members apart even where their code is shared. With
//! several sets varied together, that is not possible from these runs, and a note says so.

use std::collections::BTreeMap;

use model::{Factor, InfluenceModel, Term};
use space::{Configuration, OptionId, ValidConfigurations};

/// One run of the variant simulator: its configuration, its calling contexts, and the time
/// outside every instrumented function.
#[derive(Clone, Debug)]
pub struct RunTimes {
    pub configuration: Configuration,
    pub contexts: Vec<Context>,
    pub base: f64,
}

/// A calling context: function names from the outermost instrumented function down, its
/// self time and how often it was entered.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    pub path: Vec<String>,
    pub seconds: f64,
    pub entries: u64,
}

/// §5.1 with the native program as the yardstick. The enter/exit calls cost more inside the
/// program than in the runtime's calibration loop (the calls themselves, caches), so what the
/// run's contexts and base add up to beyond the native program's time is the rest of the
/// instrumentation's cost: it is taken out of the contexts in proportion to their visits
/// (half of each visit in the callee, half in its caller), none below zero (what a context
/// cannot give goes to the others). Returns the seconds taken out.
pub fn fit_to_native(run: &mut RunTimes, native: f64) -> f64 {
    let total = run.base + run.contexts.iter().map(|c| c.seconds).sum::<f64>();
    let excess = total - native;
    if excess <= 0.0 {
        return 0.0;
    }
    let index: BTreeMap<&[String], usize> = run
        .contexts
        .iter()
        .enumerate()
        .map(|(k, c)| (c.path.as_slice(), k))
        .collect();
    let mut weight: Vec<f64> = run
        .contexts
        .iter()
        .map(|c| c.entries as f64 / 2.0)
        .collect();
    for c in &run.contexts {
        if let Some(parent) = c
            .path
            .split_last()
            .and_then(|(_, up)| index.get(up).copied())
        {
            weight[parent] += c.entries as f64 / 2.0;
        }
    }
    // Contexts whose time runs out drop out and the rest share what is left.
    let mut removed = 0.0;
    for _ in 0..64 {
        let left = excess - removed;
        let all: f64 = run
            .contexts
            .iter()
            .zip(&weight)
            .filter(|(c, _)| c.seconds > 0.0)
            .map(|(_, w)| w)
            .sum();
        if left <= excess * 1e-9 || all <= 0.0 {
            break;
        }
        for (c, w) in run.contexts.iter_mut().zip(&weight) {
            if c.seconds > 0.0 {
                let cut = (left * w / all).min(c.seconds);
                c.seconds -= cut;
                removed += cut;
            }
        }
    }
    removed
}

/// A calling context's features in a run of `configuration` (Algorithm 2's prefix and the
/// function's own feature): a feature met twice counts once (S-Ref), a mandatory one not at
/// all (S-Mand). A feature's function that ran with its feature off gets no factor, and a
/// note in `notes` says so.
pub fn context_factors(
    valid: &ValidConfigurations,
    feature_of: &BTreeMap<String, OptionId>,
    path: &[String],
    configuration: &Configuration,
    notes: &mut Vec<String>,
) -> Vec<Factor> {
    let space = valid.space();
    let mut factors: Vec<Factor> = Vec::new();
    for name in path {
        let Some(&o) = feature_of.get(name) else {
            continue;
        };
        let option = space.option(o);
        let value = configuration.0[o.index()];
        let factor = if option.is_binary() {
            if value == 0 {
                let note = format!(
                    "function `{name}` (feature `{}`) ran in `{}`, where its feature is off: its time goes to the features that called it",
                    option.name,
                    space.format_configuration(configuration)
                );
                if !notes.contains(&note) {
                    notes.push(note);
                }
                continue;
            }
            if !valid.allows(&[(o, 0)]) {
                continue; // S-Mand
            }
            Factor::Option(option.name.clone())
        } else {
            Factor::Equals(option.name.clone(), option.numeric_value(value))
        };
        if !factors.contains(&factor) {
            factors.push(factor); // S-Ref
        }
    }
    factors
}

/// The model, per function: each function's local model, and the base (time outside every
/// function: the process's start and end).
#[derive(Clone, Debug)]
pub struct FamilyModel {
    pub base: InfluenceModel,
    pub functions: BTreeMap<String, InfluenceModel>,
    /// Mapped functions that ran in a configuration without their feature.
    pub notes: Vec<String>,
}

/// Builds the model from the runs; `feature_of` maps function names to their features.
pub fn build(
    valid: &ValidConfigurations,
    feature_of: &BTreeMap<String, OptionId>,
    runs: &[RunTimes],
) -> FamilyModel {
    let space = valid.space();
    // (function, term's factors as text) → per run, its time; the factors of each term.
    let mut times: BTreeMap<(String, Vec<String>), BTreeMap<usize, f64>> = BTreeMap::new();
    let mut factors_of: BTreeMap<Vec<String>, Vec<Factor>> = BTreeMap::new();
    let mut notes: Vec<String> = Vec::new();
    // The sets of alternatives whose member differs between runs.
    let mut varied = 0;
    let mut member_of_run: Vec<Option<Factor>> = vec![None; runs.len()];
    let mut varied_members: Vec<Vec<Option<Factor>>> = Vec::new();
    let mut sets: Vec<Vec<OptionId>> = space
        .groups()
        .iter()
        .filter(|g| g.kind == space::GroupKind::Alternative)
        .map(|g| g.members.clone())
        .collect();
    sets.extend(
        space
            .ids()
            .filter(|o| !space.option(*o).is_binary())
            .map(|o| vec![o]),
    );
    for set in &sets {
        let member = |run: &RunTimes| -> Option<Factor> {
            if let [o] = set[..]
                && !space.option(o).is_binary()
            {
                let option = space.option(o);
                return Some(Factor::Equals(
                    option.name.clone(),
                    option.numeric_value(run.configuration.0[o.index()]),
                ));
            }
            set.iter()
                .find(|m| run.configuration.0[m.index()] == 1)
                .map(|m| Factor::Option(space.option(*m).name.clone()))
        };
        let members: Vec<Option<Factor>> = runs.iter().map(member).collect();
        if members.iter().any(|m| *m != members[0]) {
            varied += 1;
            member_of_run = members.clone();
            varied_members.push(members);
        }
    }
    // Several sets: additive when every run differs from the first in one set only.
    let mut one_set_each: Option<Vec<Option<Factor>>> = None;
    if varied > 1 {
        member_of_run = vec![None; runs.len()];
        one_set_each = (0..runs.len())
            .map(|r| {
                let differ: Vec<&Option<Factor>> = varied_members
                    .iter()
                    .filter(|m| m[r] != m[0])
                    .map(|m| &m[r])
                    .collect();
                match differ[..] {
                    [] => Some(None),
                    [m] => m.clone().map(Some),
                    _ => None,
                }
            })
            .collect();
        if one_set_each.is_some() {
            notes.push(format!(
                "the runs vary {varied} sets of alternatives one at a time: each set's effect is added to the others', and how the sets interact (one set's member changing another's effect) is not measured"
            ));
        } else {
            notes.push(format!(
                "the runs vary {varied} sets of alternatives together: time outside the alternatives' own functions is averaged over the runs, not told apart by alternative"
            ));
        }
    }
    for (r, run) in runs.iter().enumerate() {
        for Context { path, seconds, .. } in &run.contexts {
            let mut factors =
                context_factors(valid, feature_of, path, &run.configuration, &mut notes);
            if let Some(m) = &member_of_run[r]
                && !factors.contains(m)
            {
                factors.push(m.clone());
            }
            factors.sort_by_key(|f| f.to_string());
            let labels: Vec<String> = factors.iter().map(|f| f.to_string()).collect();
            factors_of.entry(labels.clone()).or_insert(factors);
            let function = path.last().cloned().unwrap_or_default();
            *times
                .entry((function, labels))
                .or_default()
                .entry(r)
                .or_default() += seconds;
        }
        *times
            .entry((String::new(), Vec::new()))
            .or_default()
            .entry(r)
            .or_default() += run.base;
    }
    let holds = |factors: &[Factor], run: &RunTimes| {
        factors.iter().all(|f| {
            let Some(o) = space.find(f.option()) else {
                return false;
            };
            let value = run.configuration.0[o.index()];
            match f {
                Factor::Option(_) => value == 1,
                Factor::Equals(_, v) => space.option(o).numeric_value(value) == *v,
            }
        })
    };
    let mut functions: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    factors_of.entry(Vec::new()).or_default();
    if let Some(member_of_run) = one_set_each {
        for ((function, labels), per_run) in times {
            let terms = functions.entry(function).or_default();
            terms.extend(additive_terms(
                &factors_of[&labels],
                &per_run,
                &member_of_run,
                &|f: &[Factor], r: usize| holds(f, &runs[r]),
            ));
        }
        return family_model(functions, notes);
    }
    for ((function, labels), per_run) in times {
        let factors = factors_of[&labels].clone();
        let selected: Vec<usize> = (0..runs.len())
            .filter(|r| holds(&factors, &runs[*r]))
            .collect();
        if selected.is_empty() {
            continue;
        }
        let mean = selected
            .iter()
            .map(|r| per_run.get(r).copied().unwrap_or(0.0))
            .sum::<f64>()
            / selected.len() as f64;
        functions
            .entry(function)
            .or_default()
            .push(Term::from_factors(factors, mean));
    }
    family_model(functions, notes)
}

/// The model of the terms per function (`""` the base).
fn family_model(mut functions: BTreeMap<String, Vec<Term>>, notes: Vec<String>) -> FamilyModel {
    let base = InfluenceModel::from_terms(functions.remove("").unwrap_or_default());
    FamilyModel {
        base,
        functions: functions
            .into_iter()
            .map(|(f, terms)| (f, InfluenceModel::from_terms(terms)))
            .collect(),
        notes,
    }
}

/// One term's times when each run but the first differs from it in one set of alternatives
/// (`member_of_run`: the member that run chooses, `None` for the first): the first run's
/// time on the term's `factors`, and per other run what choosing its member changes, on the
/// factors and the member. Each set's effect adds to the others' (their interactions are not
/// measured by such runs). `holds(factors, run)`: the run selects all of them.
fn additive_terms(
    factors: &[Factor],
    per_run: &BTreeMap<usize, f64>,
    member_of_run: &[Option<Factor>],
    holds: &dyn Fn(&[Factor], usize) -> bool,
) -> Vec<Term> {
    let in_first = holds(factors, 0);
    let first = match in_first {
        true => per_run.get(&0).copied().unwrap_or(0.0),
        false => 0.0,
    };
    let mut terms = Vec::new();
    if in_first && first != 0.0 {
        terms.push(Term::from_factors(factors.to_vec(), first));
    }
    for (r, member) in member_of_run.iter().enumerate().skip(1) {
        let Some(member) = member else { continue };
        let mut with = factors.to_vec();
        if !with.contains(member) {
            with.push(member.clone());
        }
        if !holds(&with, r) {
            continue;
        }
        let change = per_run.get(&r).copied().unwrap_or(0.0) - first;
        if change != 0.0 {
            terms.push(Term::from_factors(with, change));
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use space::ConfigSpace;

    fn context(path: &str, seconds: f64, entries: u64) -> Context {
        Context {
            path: path.split('>').map(String::from).collect(),
            seconds,
            entries,
        }
    }

    /// The excess over the native time comes out of the contexts by their visits: a callee
    /// entered 1,000 times and its caller lose the most.
    #[test]
    fn the_excess_over_native_goes_by_visits() {
        let mut run = RunTimes {
            configuration: Configuration(vec![]),
            contexts: vec![
                context("main", 1.0, 1),
                context("main>hot", 0.5, 1000),
                context("main>cold", 2.0, 1),
            ],
            base: 0.1,
        };
        let removed = fit_to_native(&mut run, 3.0);
        assert!((removed - 0.6).abs() < 1e-12, "{removed}");
        // Weights: main 0.5 + 500 + 0.5, hot 500, cold 0.5 (of 1001.5).
        let total: f64 = run.contexts.iter().map(|c| c.seconds).sum::<f64>() + run.base;
        assert!((total - 3.0).abs() < 1e-12);
        assert!(run.contexts[2].seconds > 1.999);
        assert_eq!(fit_to_native(&mut run, 5.0), 0.0);
        // What a context cannot give (hot has 0.2 s left) goes to the others.
        let removed = fit_to_native(&mut run, 1.0);
        let total: f64 = run.contexts.iter().map(|c| c.seconds).sum::<f64>() + run.base;
        assert!(
            (total - 1.0).abs() < 1e-9,
            "{total} after removing {removed}"
        );
        assert_eq!(run.contexts[1].seconds, 0.0);
    }

    /// §3.2's printer driver, with the call tree of Fig. 7 flattened into contexts as a C
    /// version calls them (feature functions under their guards in `print` and `scan`).
    #[test]
    fn the_printer_driver_model_of_section_3_2() {
        let mut s = ConfigSpace::new("printer");
        let base = s.add_binary("Base", None, true).unwrap();
        for f in ["Logging", "ColorScan", "AutoScan"] {
            s.add_binary(f, None, false).unwrap();
        }
        let valid = ValidConfigurations::new(&s).unwrap();
        let features: BTreeMap<String, OptionId> = [
            ("main", "Base"),
            ("print_base", "Base"),
            ("print_logging", "Logging"),
            ("print_colorscan", "ColorScan"),
            ("print_autoscan", "AutoScan"),
            ("scan_logging", "Logging"),
            ("scan_base", "Base"),
        ]
        .into_iter()
        .map(|(f, o)| (f.to_string(), s.find(o).unwrap()))
        .collect();
        let contexts = [
            ("main", 0.0),
            ("main>print", 0.0),
            ("main>print>print_autoscan", 1.0),
            ("main>print>print_autoscan>scan", 0.0),
            ("main>print>print_autoscan>scan>scan_logging", 0.5),
            ("main>print>print_autoscan>scan>scan_base", 1.0),
            ("main>print>print_colorscan", 5.0),
            ("main>print>print_colorscan>scan", 0.0),
            ("main>print>print_colorscan>scan>scan_logging", 0.5),
            ("main>print>print_colorscan>scan>scan_base", 1.0),
            ("main>print>print_logging", 1.0),
            ("main>print>print_base", 2.0),
        ]
        .map(|(p, s)| context(p, s, 1))
        .to_vec();
        let all = Configuration(vec![1, 1, 1, 1]);
        assert!(valid.is_valid(&all));
        let m = build(
            &valid,
            &features,
            &[RunTimes {
                configuration: all,
                contexts,
                base: 0.0,
            }],
        );
        let _ = base;
        let mut parts = vec![&m.base];
        parts.extend(m.functions.values());
        let global = InfluenceModel::sum(parts);
        // The paper's final model, with its terms on the mandatory Base merged (S-Mand):
        // Base 2, Logging 1, ColorScan 5 + 1, AutoScan 1 + 1, ColorScan#Logging 0.5,
        // AutoScan#Logging 0.5.
        assert_eq!(
            global.format(2),
            "2.00 + 6.00·ColorScan + 2.00·AutoScan + 1.00·Logging + 0.50·AutoScan·Logging + 0.50·ColorScan·Logging"
        );
        assert!(m.notes.is_empty(), "{:?}", m.notes);
    }

    /// Two sets of alternatives (a level, a block size), varied one at a time as
    /// `variant_simulator_runs` does: shared code's cost is told apart per set and the sets'
    /// effects add, so every configuration of the two sets is predicted from three runs.
    #[test]
    fn two_sets_varied_one_at_a_time_are_told_apart() {
        let mut s = ConfigSpace::new("lz");
        let level = s.add_binary("level", None, true).unwrap();
        let fast = s.add_binary("fast", Some(level), false).unwrap();
        let best = s.add_binary("best", Some(level), false).unwrap();
        s.add_group(space::GroupKind::Alternative, Some(level), vec![fast, best])
            .unwrap();
        let block = s.add_numeric("block", &[4.0, 7.0]).unwrap();
        let valid = ValidConfigurations::new(&s).unwrap();
        // `compress` costs 10 (fast) or 100 (best), plus 5 with 4 MB blocks (block = 7).
        let cost = |member: OptionId, b: u32| {
            10.0 * if member == best { 10.0 } else { 1.0 } + 5.0 * f64::from(b)
        };
        let run = |member: OptionId, b: u32| {
            let mut c = vec![0; s.len()];
            c[level.index()] = 1;
            c[member.index()] = 1;
            c[block.index()] = b;
            RunTimes {
                configuration: Configuration(c),
                contexts: vec![
                    context("main", 1.0, 1),
                    context("main>compress", cost(member, b), 1),
                ],
                base: 0.0,
            }
        };
        let m = build(
            &valid,
            &BTreeMap::new(),
            &[run(fast, 0), run(best, 0), run(fast, 1)],
        );
        assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
        assert!(m.notes[0].contains("one at a time"), "{:?}", m.notes);
        let mut parts = vec![&m.base];
        parts.extend(m.functions.values());
        let global = InfluenceModel::sum(parts);
        let bound = global.bind(&["level", "fast", "best", "block"]).unwrap();
        for member in [fast, best] {
            for b in [0, 1] {
                let row = [
                    1.0,
                    f64::from(u8::from(member == fast)),
                    f64::from(u8::from(member == best)),
                    if b == 1 { 7.0 } else { 4.0 },
                ];
                assert_eq!(bound.predict(&row), 1.0 + cost(member, b), "{global}");
            }
        }
    }

    /// One run per member of one alternative group: each run's time is its member's, shared
    /// code included, so the model tells the members apart; a feature's own function keeps
    /// its term.
    #[test]
    fn one_set_of_alternatives_gives_each_member_its_runs_time() {
        let mut s = ConfigSpace::new("codec");
        let codec = s.add_binary("codec", None, true).unwrap();
        let zip = s.add_binary("zip", Some(codec), false).unwrap();
        let lz = s.add_binary("lz", Some(codec), false).unwrap();
        s.add_group(space::GroupKind::Alternative, Some(codec), vec![zip, lz])
            .unwrap();
        let trace = s.add_binary("trace", None, false).unwrap();
        let valid = ValidConfigurations::new(&s).unwrap();
        let features: BTreeMap<String, OptionId> = [("log", trace)]
            .into_iter()
            .map(|(f, o)| (f.to_string(), o))
            .collect();
        // `compress` is shared code whose time depends on the codec; `log` is trace's.
        let run = |member: OptionId, compress: f64| {
            let mut c = vec![0; s.len()];
            c[codec.index()] = 1;
            c[member.index()] = 1;
            c[trace.index()] = 1;
            RunTimes {
                configuration: Configuration(c),
                contexts: vec![
                    context("main", 1.0, 1),
                    context("main>compress", compress, 1),
                    context("main>log", 0.5, 1),
                ],
                base: 0.0,
            }
        };
        let m = build(&valid, &features, &[run(zip, 4.0), run(lz, 2.0)]);
        let mut parts = vec![&m.base];
        parts.extend(m.functions.values());
        let mut file = model::ModelFile::new(InfluenceModel::sum(parts));
        file.express_against_reference(&[model::Choice::parse(
            &["zip".to_string(), "lz".to_string()],
            None,
        )
        .unwrap()]);
        assert_eq!(file.terms.format(2), "5.00 - 2.00·lz + 0.50·trace");
        assert!(m.notes.is_empty(), "{:?}", m.notes);
    }
}
