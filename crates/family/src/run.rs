//! The family-based approach as one call: [`run`] sequences the stages of
//! [`crate::pipeline`] over a [`Session`] and returns a serialisable [`Report`]; progress
//! goes to a [`Reporter`].

use std::path::PathBuf;

use instrumented::{ModelOutput, Reporter, Session};
use measure::campaign::CampaignReport;
use serde::Serialize;
use space::ValidConfigurations;

use std::collections::BTreeMap;

use space::{Configuration, OptionId};

use model::Term;

use crate::dependence::{self, CostDependence, Tolerance};
use crate::model::RunTimes;
use crate::pipeline::{self, ProbeThresholds};
use crate::{Error, MappedFunction, UnseenInfluence};

/// What `run` does beyond the session's defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// Derive features from the static taint analysis (functions called only under
    /// decisions on one option) besides annotations and the spec's patterns.
    pub derive: bool,
    /// Where the model JSON goes (default: `NAME.family.json` beside the spec).
    pub model_path: Option<PathBuf>,
    /// Enter/exit calls on every function, even hot tiny ones (default: functions entered at
    /// least `probe_min_entries` times in the calibration run, at less than `probe_min_ns`
    /// of self time per call, and no feature's, get none).
    pub all_probes: bool,
    pub probe_min_entries: u64,
    pub probe_min_ns: f64,
    /// Read the call trees by this clock (default: as the spec's metric resolves,
    /// `instrumented::region_clocks`).
    pub region_clock: Option<instrumented::RegionClock>,
    /// Whether to check the paper's assumption that every calling context costs the same
    /// whatever options ran before (§5.2) with further runs and model the contexts whose cost
    /// depends on options ([`crate::dependence`]), or assume it (the paper's model alone).
    /// `None`: check in counted instructions, assume in time, where one run per
    /// configuration cannot tell a change of a context's cost from the machine's noise.
    pub check_constant_cost: Option<bool>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            derive: true,
            model_path: None,
            all_probes: false,
            probe_min_entries: 1000,
            probe_min_ns: 100.0,
            region_clock: None,
            check_constant_cost: None,
        }
    }
}

/// What a family-based run mapped, ran and modelled.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub system: String,
    pub workload: String,
    /// Valid configurations of the space (saturated at `u128::MAX`).
    pub total_configurations: u128,
    /// The feature map: every function with a feature, and where it came from.
    pub features: Vec<MappedFunction>,
    /// Options no function is mapped to: the model has no term of their own for them.
    pub unmapped_options: Vec<String>,
    /// The variant simulator's runs (one, plus one per member of each set of alternatives).
    pub configurations: Vec<String>,
    /// Functions instrumented with enter/exit calls.
    pub instrumented_functions: usize,
    /// Hot tiny functions left without enter/exit calls (their time is their callers').
    pub unprobed: Vec<String>,
    /// Decisions on options the model cannot see (data flow, code inside a function).
    pub unseen: Vec<UnseenInfluence>,
    /// Fixed settings the analysis assumed (`global = value`): the spec's and those observed
    /// on the measured workload (in all-off, all-on and two random configurations).
    pub fixed_settings: Vec<String>,
    pub measurement: Option<CampaignReport>,
    /// The native program in the same configurations (the overhead correction's yardstick);
    /// `None` on the test clock (`Settings::test_clock`), where it is not run, and when the
    /// spec's program is not built (a note says so).
    pub native_measurement: Option<CampaignReport>,
    /// Per run: the native median and the seconds of instrumentation cost taken out beyond
    /// the runtime's own calibration.
    pub overhead_correction: Vec<pipeline::NativeFit>,
    /// The clock the call trees were read by, and why (`instrumented::region_clocks`, the
    /// rule ConfigCrusher's region times are read by; trees without CPU times, e.g.
    /// `KNOBS_REGION_CPU_US=off`, by the wall clock, and `why` says so).
    pub call_tree_clock: Option<instrumented::RegionClocks>,
    /// Beyond the paper's assumption that a context's cost does not depend on the options
    /// (§5.2): the further runs and the contexts whose cost does (none when the check found
    /// none); `None` when not checked ([`Options::check_constant_cost`]) or when there was
    /// nothing to check
    /// (every feature mandatory, or a failed run).
    pub cost_dependence: Option<CostDependence>,
    /// What failed runs of the variant simulator left unmeasured (`--allow-failed`), and the
    /// terms the model leaves out for it.
    pub unmeasured: Vec<instrumented::failed::Unmeasured>,
    #[serde(flatten)]
    pub output: Option<ModelOutput>,
    pub notes: Vec<String>,
}

impl Report {
    /// Adds `note` unless the report has it already (the measuring stages run again for the
    /// further runs of the constant-cost check).
    fn note(&mut self, note: Option<String>) {
        if let Some(note) = note
            && !self.notes.contains(&note)
        {
            self.notes.push(note);
        }
    }
}

/// Runs the family-based approach: the stages of [`crate::pipeline`] in order.
pub fn run(
    session: &Session,
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<Report, Error> {
    let spec = &session.spec;
    let settings = &session.settings;
    let workload = session.workload();
    let valid = ValidConfigurations::new(&spec.space)?;
    reporter.note("building and analysing the program");
    let analysed = pipeline::analyse(spec, settings, workload, options.derive)?;
    let configurations = pipeline::variant_simulator_runs(&valid);
    if configurations.is_empty() {
        return Err(Error::Invalid(
            "the space has no valid configuration".into(),
        ));
    }
    let mut report = new_report(spec, workload, &valid, &analysed, &configurations);
    if !options.all_probes {
        reporter.note("calibrating: which functions are too hot and tiny to time");
    }
    let thresholds = (!options.all_probes).then_some(ProbeThresholds {
        min_entries: options.probe_min_entries,
        min_ns: options.probe_min_ns,
    });
    let probed =
        pipeline::probed_functions(spec, settings, &analysed, &configurations[0], thresholds)?;
    report.unprobed = probed.unprobed;
    let names: Vec<String> = probed
        .functions
        .iter()
        .map(|f| analysed.program().func(*f).name.clone())
        .chain(analysed.blocks.iter().map(|b| b.label.clone()))
        .collect();
    report.instrumented_functions = probed.functions.len();
    let counting = instrumented::counting::counts_instructions(spec);
    let (binary, variant) = pipeline::instrument(
        spec,
        settings,
        &analysed,
        &probed.functions,
        "family",
        counting,
    )?;
    reporter.note(&format!(
        "running the variant simulator: {} configuration(s)",
        configurations.len()
    ));
    let store = session.store()?;
    // Per run, the run with the fewest features beside it (the constant-cost check).
    let check = options.check_constant_cost.unwrap_or(counting);
    let fewest: Vec<Option<Configuration>> = configurations
        .iter()
        .map(|c| {
            check
                .then(|| dependence::fewest_features(&valid, c))
                .flatten()
                .filter(|f| !configurations.contains(f))
        })
        .collect();
    let mut measured: Vec<Configuration> = configurations.clone();
    for f in fewest.iter().flatten() {
        if !measured.contains(f) {
            measured.push(f.clone());
        }
    }
    let simulator = Simulator {
        store: &store,
        session,
        binary: &binary,
        variant: &variant,
        names,
        region_clock: options.region_clock,
    };
    let (mut runs, mut succeeded, mut clocks) =
        measure(&simulator, &measured, &mut report, reporter)?;
    // What failed runs leave unmeasured is the variant simulator's: the check's runs with
    // the same alternatives do not measure the terms the model takes from its runs.
    let (_, unmeasured) = match &report.measurement {
        Some(m) => pipeline::successful_runs(spec, &configurations, m)?,
        None => (Vec::new(), None),
    };
    let mut corrections = BTreeMap::new();
    if fewest.iter().any(Option::is_some) {
        let feature_of = analysed.feature_names();
        let checked = check_constant_cost(
            &simulator,
            (&valid, &feature_of),
            (&configurations, &fewest),
            (&mut runs, &mut succeeded, &mut clocks),
            &mut report,
            reporter,
        )?;
        if let Some((dependence, terms)) = checked {
            corrections = terms;
            report.notes.extend(dependence_notes(&dependence));
            report.cost_dependence = Some(dependence);
        }
    }
    runs.retain(|r| configurations.contains(&r.configuration));
    let (mut file, notes) =
        pipeline::build_model(spec, &analysed, &runs, &corrections, unmeasured, &clocks)?;
    report.notes.extend(notes);
    report.unmeasured = instrumented::failed::recorded(&file);
    report.call_tree_clock = Some(clocks);
    report.output = Some(instrumented::save_model(
        &mut file,
        session,
        "family",
        &variant,
        &succeeded,
        options.model_path.clone(),
    )?);
    Ok(report)
}

/// The report before anything ran: the analysis, and the variant simulator's runs.
fn new_report(
    spec: &measure::SystemSpec,
    workload: &measure::Workload,
    valid: &ValidConfigurations,
    analysed: &pipeline::Analysed,
    configurations: &[space::Configuration],
) -> Report {
    Report {
        system: spec.name.clone(),
        workload: workload.name.clone(),
        total_configurations: u128::try_from(&valid.count()).unwrap_or(u128::MAX),
        features: analysed.features.mapped.clone(),
        unmapped_options: analysed.unmapped_options.clone(),
        configurations: configurations
            .iter()
            .map(|c| spec.space.format_configuration(c))
            .collect(),
        instrumented_functions: 0,
        unprobed: Vec::new(),
        unseen: analysed.unseen.clone(),
        fixed_settings: analysed.fixed_settings.clone(),
        measurement: None,
        native_measurement: None,
        overhead_correction: Vec::new(),
        call_tree_clock: None,
        cost_dependence: None,
        unmeasured: Vec::new(),
        output: None,
        notes: analysed.notes.clone(),
    }
}

/// The instrumented variant simulator and where its runs go.
struct Simulator<'a> {
    store: &'a measure::store::Store,
    session: &'a Session,
    binary: &'a std::path::Path,
    variant: &'a str,
    /// The instrumented functions, in probe order.
    names: Vec<String>,
    region_clock: Option<instrumented::RegionClock>,
}

/// Beyond the constant-cost assumption (§5.2): each of the variant simulator's runs
/// (`paper`) against the run with the fewest features beside it (`fewest`, measured with
/// them); where a context's cost differs, one further run per option that differs, with only
/// it deselected, and the contexts whose cost depends on options from them, with the terms
/// that model them per function. The first run's terms hold for every configuration, and
/// another run's (it chooses other alternatives) replace them where its alternatives are
/// chosen. `runs`, `succeeded` and `clocks` then cover the further runs too. `None` when
/// there was nothing to check (no further run, or a failed one).
#[allow(clippy::type_complexity)]
fn check_constant_cost(
    simulator: &Simulator,
    (valid, feature_of): (&ValidConfigurations, &BTreeMap<String, OptionId>),
    (paper, fewest): (&[Configuration], &[Option<Configuration>]),
    (runs, succeeded, clocks): (
        &mut Vec<RunTimes>,
        &mut Vec<Configuration>,
        &mut instrumented::RegionClocks,
    ),
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<Option<(CostDependence, BTreeMap<String, Vec<Term>>)>, Error> {
    let spec = &simulator.session.spec;
    let tolerance = match instrumented::counting::counts_instructions(spec) {
        true => Tolerance::COUNTED,
        false => Tolerance::TIMED,
    };
    let run_of =
        |runs: &[RunTimes], c: &Configuration| runs.iter().find(|r| r.configuration == *c).cloned();
    let mut further: Vec<Configuration> = Vec::new();
    let mut plans = Vec::new();
    for (p, (c, f)) in paper.iter().zip(fewest).enumerate() {
        let Some(f) = f else { continue };
        if !further.contains(f) {
            further.push(f.clone());
        }
        // A failed run (--allow-failed) leaves nothing to compare.
        let (Some(with), Some(without)) = (run_of(runs, c), run_of(runs, f)) else {
            continue;
        };
        if dependence::differing(feature_of, &with, &without, tolerance).is_empty() {
            continue;
        }
        let flips: Vec<(OptionId, Configuration)> = dependence::candidate_options(valid, c, f)
            .into_iter()
            .filter_map(|o| Some((o, dependence::deselected(valid, c, o)?)))
            .collect();
        plans.push((p, with, without, flips));
    }
    let shown = |runs: &[Configuration]| -> Vec<String> {
        runs.iter()
            .map(|c| spec.space.format_configuration(c))
            .collect()
    };
    if plans.is_empty() {
        // Checked: no context's cost differs.
        return Ok((!further.is_empty()).then(|| {
            (
                CostDependence::new(shown(&further), Vec::new()),
                BTreeMap::new(),
            )
        }));
    }
    let mut all: Vec<Configuration> = succeeded.clone();
    for (_, _, _, flips) in &plans {
        for (_, c) in flips {
            if !all.contains(c) {
                all.push(c.clone());
                further.push(c.clone());
            }
        }
    }
    reporter.note(&format!(
        "checking the constant-cost assumption (§5.2): {} run(s) with one option deselected",
        all.len() - succeeded.len()
    ));
    let (new_runs, new_succeeded, new_clocks) = measure(simulator, &all, report, reporter)?;
    (*runs, *succeeded, *clocks) = (new_runs, new_succeeded, new_clocks);
    let mut contexts = Vec::new();
    let mut terms: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    let mut first_terms: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    for (p, with, without, flips) in plans {
        let flipped: Vec<(OptionId, RunTimes)> = flips
            .iter()
            .filter_map(|(o, c)| Some((*o, run_of(runs, c)?)))
            .collect();
        let found =
            dependence::dependent_contexts(valid, feature_of, &with, &without, &flipped, tolerance);
        let found_terms = dependence::correction_terms(valid, feature_of, &paper[p], &found);
        if p == 0 {
            dependence::add_terms(&mut terms, &found_terms, &[], 1.0);
            first_terms = found_terms;
        } else {
            // Where this run's alternatives are chosen, its terms instead of the first's.
            let chosen = dependence::chosen_apart(valid, &paper[0], &paper[p]);
            dependence::add_terms(&mut terms, &found_terms, &chosen, 1.0);
            dependence::add_terms(&mut terms, &first_terms, &chosen, -1.0);
        }
        contexts.extend(found);
    }
    Ok(Some((
        CostDependence::new(shown(&further), contexts),
        terms,
    )))
}

/// What the check of the constant-cost assumption found, for the notes.
fn dependence_notes(dependence: &CostDependence) -> Vec<String> {
    const SHOWN: usize = 5;
    if dependence.contexts.is_empty() {
        return Vec::new();
    }
    let mut functions = dependence.functions.clone();
    if functions.len() > SHOWN {
        let more = functions.len() - SHOWN;
        functions.truncate(SHOWN);
        functions.push(format!("{more} more"));
    }
    let noticeable = dependence.contexts.len() - dependence.minor;
    let mut notes = vec![match noticeable {
        0 => format!(
            "the paper's assumption that a function costs the same whatever options ran \
             before (§5.2) fails by less than {} % of the run in {} calling contexts; the \
             model takes each one's cost per option from the runs with it deselected \
             (`cost_dependence`)",
            dependence::NOTICEABLE * 100.0,
            dependence.minor
        ),
        _ => format!(
            "the paper's assumption that a function costs the same whatever options ran \
             before (§5.2) fails in {noticeable} calling contexts, of {} (options: {}), and \
             by less than {} % of the run in {} more; the model takes each one's cost per \
             option from the runs with it deselected (`cost_dependence`)",
            functions.join(", "),
            dependence.options.join(", "),
            dependence::NOTICEABLE * 100.0,
            dependence.minor
        ),
    }];
    let interacting: Vec<&str> = dependence
        .contexts
        .iter()
        .filter(|c| {
            let d = (c.fewest_measured - c.fewest_predicted).abs();
            d > 1e-6 * c.fewest_measured.abs().max(c.first.abs()).max(1.0)
        })
        .map(|c| c.context.as_str())
        .collect();
    if !interacting.is_empty() {
        notes.push(format!(
            "{} of them cost differently with the fewest features than their per-option changes \
             add up to (options acting on them together, not modelled): {}",
            interacting.len(),
            interacting
                .iter()
                .take(SHOWN)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    notes
}

/// The measuring stages: the variant simulator's runs, the native program's, and each
/// successful run's contexts fitted to its native time; the configurations that succeeded
/// and the clock the call trees are read by.
#[allow(clippy::type_complexity)]
fn measure(
    simulator: &Simulator,
    configurations: &[space::Configuration],
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<
    (
        Vec<crate::model::RunTimes>,
        Vec<space::Configuration>,
        instrumented::RegionClocks,
    ),
    Error,
> {
    let Simulator {
        store,
        session,
        binary,
        variant,
        region_clock,
        ..
    } = *simulator;
    let (spec, settings, workload) = (&session.spec, &session.settings, session.workload());
    let (measured, failed) = pipeline::measure_simulator(
        store,
        settings,
        spec,
        workload,
        (binary, variant),
        simulator.names.clone(),
        configurations,
        reporter,
    )?;
    report.note(failed);
    let (succeeded, _) = pipeline::successful_runs(spec, configurations, &measured)?;
    report.measurement = Some(measured);

    let (native, why_not) =
        pipeline::measure_native(store, settings, spec, workload, &succeeded, reporter)?;
    report.note(why_not);
    // The clock the call trees are read by, as ConfigCrusher's region times (the runtime
    // records both); the native times, the time outside the trees and the model by it.
    let clocks = instrumented::region_clocks(store, spec, workload, variant, region_clock)?;
    reporter.note(&clocks.to_string());
    let native_times = match &native {
        Some(native) => {
            let (times, note) = pipeline::native_times(store, spec, workload, &clocks, native)?;
            report.note(note);
            times
        }
        None => Default::default(),
    };
    report.native_measurement = native;
    let (runs, fits) = pipeline::run_times(
        store,
        settings,
        spec,
        workload,
        (variant, &clocks),
        &succeeded,
        &native_times,
    )?;
    report.overhead_correction = fits;
    Ok((runs, succeeded, clocks))
}

#[cfg(test)]
mod tests {
    use crate::pipeline::variant_simulator_runs;
    use space::{ConfigSpace, Configuration, GroupKind, ValidConfigurations};

    /// One run for binary options; alternatives and numeric values one set at a time, every
    /// member in some run, constraints kept.
    #[test]
    fn runs_cover_every_alternative_with_every_feature_selected() {
        let mut s = ConfigSpace::new("t");
        for n in ["A", "B"] {
            s.add_binary(n, None, false).unwrap();
        }
        let valid = ValidConfigurations::new(&s).unwrap();
        assert_eq!(variant_simulator_runs(&valid), [Configuration(vec![1, 1])]);

        let codec = s.add_binary("codec", None, true).unwrap();
        let mut members = Vec::new();
        for n in ["zip", "lz", "raw"] {
            members.push(s.add_binary(n, Some(codec), false).unwrap());
        }
        s.add_group(GroupKind::Alternative, Some(codec), members)
            .unwrap();
        s.add_numeric("level", &[1.0, 9.0]).unwrap();
        s.add_constraint("raw => !A", "test").unwrap();
        let valid = ValidConfigurations::new(&s).unwrap();
        let runs = variant_simulator_runs(&valid);
        // The first, two more codecs, the other level: one set varied at a time.
        assert_eq!(runs.len(), 4, "{runs:?}");
        for r in &runs[1..] {
            let differing = ["zip", "lz", "raw", "level"]
                .iter()
                .filter(|n| {
                    let o = s.find(n).unwrap().index();
                    r.0[o] != runs[0].0[o]
                })
                .count();
            // A codec replaces another (two members differ), or the level does.
            assert!(
                differing == 2 || differing == 1,
                "{r:?} against {:?}",
                runs[0]
            );
        }
        for r in &runs {
            assert!(valid.is_valid(r));
        }
        let has = |name: &str, v: u32| {
            let o = s.find(name).unwrap();
            runs.iter().any(|r| r.0[o.index()] == v)
        };
        for m in ["zip", "lz", "raw"] {
            assert!(has(m, 1), "{m}");
        }
        assert!(has("level", 0) && has("level", 1));
        // B is on everywhere; A wherever raw is not chosen.
        let (a, b, raw) = (
            s.find("A").unwrap(),
            s.find("B").unwrap(),
            s.find("raw").unwrap(),
        );
        assert!(
            runs.iter()
                .all(|r| r.0[b.index()] == 1 && r.0[a.index()] != r.0[raw.index()])
        );
    }
}
