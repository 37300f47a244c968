//! The family-based approach as one call: [`run`] sequences the stages of
//! [`crate::pipeline`] over a [`Session`] and returns a serialisable [`Report`]; progress
//! goes to a [`Reporter`].

use std::path::PathBuf;

use instrumented::{ModelOutput, Reporter, Session};
use measure::campaign::CampaignReport;
use serde::Serialize;
use space::ValidConfigurations;

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
    pub overhead_correction: Vec<NativeFit>,
    /// The clock the call trees were read by, and why (`instrumented::region_clocks`, the
    /// rule ConfigCrusher's region times are read by; trees without CPU times, e.g.
    /// `KNOBS_REGION_CPU_US=off`, by the wall clock, and `why` says so).
    pub call_tree_clock: Option<instrumented::RegionClocks>,
    /// What failed runs of the variant simulator left unmeasured (`--allow-failed`), and the
    /// terms the model leaves out for it.
    pub unmeasured: Vec<instrumented::failed::Unmeasured>,
    #[serde(flatten)]
    pub output: Option<ModelOutput>,
    pub notes: Vec<String>,
}

/// How far one run's contexts were corrected to the native program's time.
#[derive(Clone, Debug, Serialize)]
pub struct NativeFit {
    pub configuration: String,
    pub native: f64,
    pub removed: f64,
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
        .collect();
    report.instrumented_functions = names.len();
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
    let (runs, succeeded, unmeasured, clocks) = measure(
        &store,
        session,
        (&binary, &variant),
        names,
        &configurations,
        options.region_clock,
        &mut report,
        reporter,
    )?;
    let (mut file, notes) = pipeline::build_model(spec, &analysed, &runs, unmeasured, &clocks)?;
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
        unmeasured: Vec::new(),
        output: None,
        notes: analysed.notes.clone(),
    }
}

/// The measuring stages: the variant simulator's runs, the native program's, and each
/// successful run's contexts fitted to its native time; the configurations that succeeded,
/// what the failed ones left unmeasured, and the clock the call trees are read by.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn measure(
    store: &measure::store::Store,
    session: &Session,
    (binary, variant): (&std::path::Path, &str),
    names: Vec<String>,
    configurations: &[space::Configuration],
    region_clock: Option<instrumented::RegionClock>,
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<
    (
        Vec<crate::model::RunTimes>,
        Vec<space::Configuration>,
        Option<instrumented::failed::Unmeasured>,
        instrumented::RegionClocks,
    ),
    Error,
> {
    let (spec, settings, workload) = (&session.spec, &session.settings, session.workload());
    let (measured, failed) = pipeline::measure_simulator(
        store,
        settings,
        spec,
        workload,
        (binary, variant),
        names,
        configurations,
        reporter,
    )?;
    report.notes.extend(failed);
    let (succeeded, unmeasured) = pipeline::successful_runs(spec, configurations, &measured)?;
    report.measurement = Some(measured);

    let (native, why_not) =
        pipeline::measure_native(store, settings, spec, workload, &succeeded, reporter)?;
    report.notes.extend(why_not);
    // The clock the call trees are read by, as ConfigCrusher's region times (the runtime
    // records both); the native times, the time outside the trees and the model by it.
    let clocks = instrumented::region_clocks(store, spec, workload, variant, region_clock)?;
    reporter.note(&clocks.to_string());
    let native_times = match &native {
        Some(native) => {
            let (times, note) = pipeline::native_times(store, spec, workload, &clocks, native)?;
            report.notes.extend(note);
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
    Ok((runs, succeeded, unmeasured, clocks))
}

#[cfg(test)]
mod tests {
    use crate::pipeline::variant_simulator_runs;
    use space::{ConfigSpace, Configuration, GroupKind, ValidConfigurations};

    /// One run for binary options; alternatives and numeric values spread over as many runs
    /// as the largest set has members, every member in some run, constraints kept.
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
        assert_eq!(runs.len(), 3, "{runs:?}");
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
