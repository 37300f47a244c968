//! Comprex as one call: [`run`] sequences the stages of [`crate::pipeline`] over a
//! [`Session`] and returns a serialisable [`Report`]; progress goes to a [`Reporter`].

use std::path::PathBuf;

use instrumented::{ModelOutput, Reporter, Session};
use serde::Serialize;
use space::ValidConfigurations;

use crate::pipeline::{self, OverheadFit, ProbeSettings};
use crate::{Error, Granularity, ModelSettings};

/// What `run` does beyond the session's defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// The workload of the taint runs (default: the spec's first with purpose "analysis").
    pub analysis_workload: Option<String>,
    /// Region granularity of the iterative analysis; profiling and models are per method.
    pub granularity: Granularity,
    /// Only run the iterative analysis at every granularity (the paper's Table IV).
    pub granularity_table: bool,
    /// Stop the iterative analysis after this many taint runs.
    pub max_runs: usize,
    /// Terms smaller than this many seconds are reported as trivial and left out.
    pub trivial_below: f64,
    /// A probe on every method region; otherwise hot tiny methods get none (`probes`).
    pub all_probes: bool,
    pub probes: ProbeSettings,
    /// §V.A's correction from this many configurations with and without the profiler (0:
    /// none), fitted as `fit`, the configurations chosen with `seed`.
    pub overhead_correction: usize,
    pub overhead_fit: OverheadFit,
    pub seed: u64,
    /// Where the model JSON goes (default: `NAME.comprex.json` beside the spec).
    pub model_path: Option<PathBuf>,
    /// The profiler samples this clock (default: as the spec's metric resolves,
    /// [`pipeline::choose_profile_clock`]).
    pub profile_clock: Option<instrumented::RegionClock>,
    /// A callee's cost partitioned by its callers' decisions too, or by its own only (the
    /// paper's).
    pub callee_partitions: pipeline::CalleePartitions,
    /// Which tainted branches open control taint: every one (the paper's), or those that went
    /// both ways in the taint runs.
    pub control_taint: pipeline::ControlTaint,
    /// A method region whose self time (with that of the methods folded into it) is below this
    /// share of the calibration runs' time is cheap: the configurations measured are a cover
    /// of the other regions' subspaces, and a cheap region's subspace none of them lies in
    /// takes the mean of its measured ones. `None`: every explored configuration is measured
    /// (the paper's).
    pub cheap_below: Option<f64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            analysis_workload: None,
            granularity: Granularity::Method,
            granularity_table: false,
            max_runs: 256,
            trivial_below: 0.001,
            all_probes: false,
            probes: ProbeSettings::default(),
            overhead_correction: 5,
            overhead_fit: OverheadFit::Native,
            seed: 1,
            model_path: None,
            profile_clock: None,
            callee_partitions: pipeline::CalleePartitions::Callers,
            control_taint: pipeline::ControlTaint::EveryBranch,
            cheap_below: None,
        }
    }
}

/// Everything a Comprex run explored, measured and modelled.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub system: String,
    pub workload: String,
    pub analysis_workload: String,
    /// Valid configurations of the space (saturated at `u128::MAX`).
    pub total_configurations: u128,
    /// The iterative analysis at the chosen granularity (absent with `granularity_table`).
    pub exploration: Option<ExplorationReport>,
    /// Table IV: one exploration's regions at each granularity, with their covers.
    pub granularity_table: Vec<ExplorationReport>,
    pub probes: Option<ProbeReport>,
    /// What `cheap_below` chose to measure (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cheap_regions: Option<CheapRegionsReport>,
    /// Configurations measured with the profiler (after folding unprobed methods).
    pub configurations: Vec<String>,
    /// The clock the profiler sampled, and why.
    pub profile_clock: Option<pipeline::ProfileClock>,
    pub measurement: Option<measure::campaign::CampaignReport>,
    pub overhead_correction: Option<CorrectionReport>,
    pub trivial_terms: usize,
    /// Per method region partitioned by its callers' decisions too, those callers.
    pub callee_partitions: std::collections::BTreeMap<String, Vec<String>>,
    /// Regions whose partition may be incomplete (§V.D).
    pub suspects: Vec<Suspect>,
    /// The model file written, with the store and variant its measurements are in.
    #[serde(flatten)]
    pub output: Option<ModelOutput>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExplorationReport {
    pub granularity: String,
    /// Configurations the exploration ran (taint runs).
    pub configurations: usize,
    /// Table IV: the fewest configurations that reach every subspace of every region at
    /// this granularity, from the one exploration's records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cover: Option<usize>,
    /// Whether `cover` is proven the fewest (an exhaustive search in spaces of at most 4,096
    /// configurations; else a greedy cover).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cover_minimal: Option<bool>,
    pub seconds: f64,
    pub decision_sites: usize,
    pub control_taint: pipeline::ControlTaint,
    /// Explorations made: more than one when one-way branches were looked for.
    pub explorations: usize,
    /// Tainted branches that went one way in every taint run and so opened no control taint
    /// (`control_taint` two-way-branches).
    pub one_way_branches: Vec<pipeline::OneWayBranch>,
    /// One-way branches a later taint run saw take the other way.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub broken_one_way_branches: Vec<pipeline::OneWayBranch>,
    /// Each region's partition: its subspaces as formulas.
    pub regions: Vec<RegionPartitionReport>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RegionPartitionReport {
    pub region: String,
    pub subspaces: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    pub probed: usize,
    pub methods: usize,
    /// Calibration runs made (0: a cached calibration of the same build was reused).
    pub calibration_runs: usize,
    pub unprobed: Vec<UnprobedMethod>,
    /// Hot tiny methods that keep their probe (reachable from an entry point without a
    /// probed caller).
    pub kept: Vec<String>,
    /// Taint runs the folding needed beyond the exploration.
    pub extra_taint_runs: usize,
    /// Per method: its share of the calibration runs' time.
    #[serde(skip)]
    pub shares: std::collections::BTreeMap<String, f64>,
}

/// The regions `cheap_below` left to approximation, and what was measured instead.
#[derive(Clone, Debug, Serialize)]
pub struct CheapRegionsReport {
    /// The share of the calibration runs' time below which a region is cheap.
    pub below: f64,
    /// The explored configurations, and those measured: a cover of the costly regions'
    /// subspaces.
    pub explored: usize,
    pub measured: usize,
    /// Method regions costly enough to have every subspace measured, with their share of the
    /// calibration runs' time.
    pub costly: Vec<(String, f64)>,
    /// Cheap regions, and their subspaces no measured configuration lies in (each takes the
    /// mean of its region's measured configurations).
    pub cheap: usize,
    pub approximated_subspaces: Vec<(String, String)>,
    /// Options cheap regions are partitioned by that every measured configuration sets alike.
    pub unvaried: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct UnprobedMethod {
    pub method: String,
    pub entries: u64,
    pub ns_per_entry: f64,
    pub into: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CorrectionReport {
    pub fit: OverheadFit,
    pub slope: f64,
    pub intercept: f64,
    /// Per configuration: its text, the profiled and the native medians (seconds).
    pub pairs: Vec<(String, f64, f64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Suspect {
    pub region: String,
    pub subspace: String,
    pub cv: f64,
    pub measurements: usize,
}

fn granularity_name(g: Granularity) -> &'static str {
    match g {
        Granularity::Program => "program",
        Granularity::Method => "method",
        Granularity::Statement => "statement",
    }
}

fn exploration_report(explored: &pipeline::Explored, g: Granularity) -> ExplorationReport {
    ExplorationReport {
        granularity: granularity_name(g).to_string(),
        configurations: explored.exploration.configurations.len(),
        cover: None,
        cover_minimal: None,
        seconds: explored.seconds,
        decision_sites: explored.stats.decisions,
        control_taint: explored.control,
        explorations: explored.explorations,
        one_way_branches: explored.one_way.clone(),
        broken_one_way_branches: explored.broken.clone(),
        regions: explored
            .exploration
            .regions(g)
            .iter()
            .map(|r| RegionPartitionReport {
                region: r.id.clone(),
                subspaces: r.subspaces.iter().map(|s| s.text.clone()).collect(),
            })
            .collect(),
    }
}

/// Runs Comprex: iterative dynamic taint analysis, probe selection, profiling of the explored
/// configurations, overhead correction and the model — or only Table IV with
/// `granularity_table`. Each step is a stage of [`crate::pipeline`].
pub fn run(
    session: &Session,
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<Report, Error> {
    let spec = &session.spec;
    let settings = &session.settings;
    let workload = session.workload();
    let analysis = match &options.analysis_workload {
        Some(name) => spec.workload(Some(name))?,
        None => spec.analysis_workload()?,
    };
    spec.prepare_workload(workload)?;
    let mut report = new_report(spec, workload, analysis)?;
    // Said as the taint runs start, which take that long.
    if options.analysis_workload.is_none() && analysis.name == workload.name {
        let note = format!(
            "the taint runs use the measured workload `{}` (the spec has no workload with \
             purpose \"analysis\"); a taint run is several times slower than a native one, so \
             give a smaller one: a `[[workload]]` with `purpose = \"analysis\"`, or \
             --analysis-workload NAME",
            workload.name
        );
        reporter.note(&note);
    }
    if options.granularity_table {
        report.granularity_table = granularity_table(spec, settings, analysis, options, reporter)?;
        return Ok(report);
    }
    let mut method_level = explore(spec, settings, analysis, options, &mut report, reporter)?;
    let counted = instrumented::counting::counts_instructions(spec);
    if counted && !options.all_probes {
        // Calibration keeps probes from costing time; a count has no such cost to avoid.
        report.notes.push(
            "counted instructions: every method region gets a probe (a probe adds nothing to \
             the count, so there is nothing to calibrate)"
                .into(),
        );
    }
    if !options.all_probes && !counted {
        report.probes = Some(probe(
            spec,
            settings,
            analysis,
            &mut method_level,
            options,
            reporter,
        )?);
    }
    if options.callee_partitions == pipeline::CalleePartitions::Callers {
        partition_by_callers(
            spec,
            analysis,
            &mut method_level,
            options,
            &mut report,
            reporter,
        )?;
    }
    note_broken_one_way(&method_level, &mut report);
    let approximate = cheap_regions(spec, &mut method_level, options, &mut report, reporter)?;
    let configurations = &method_level.measured().to_vec();
    report.configurations = configurations
        .iter()
        .map(|c| spec.space.format_configuration(c))
        .collect();

    let store = session.store()?;
    let (profiled, workload) = profile(
        &store,
        session,
        &method_level,
        options,
        &mut report,
        reporter,
    )?;
    let workload = &workload;
    let correction = correct_overhead(
        &store,
        session,
        workload,
        &profiled,
        configurations,
        options,
        &mut report,
        reporter,
    )?;
    let model = pipeline::build_model_corrected(
        &store,
        spec,
        workload,
        &method_level,
        &profiled,
        &ModelSettings {
            trivial_below: options.trivial_below,
            approximate,
            ..ModelSettings::default()
        },
        correction.as_ref(),
    )?;
    write_model(session, options, model, profiled.variant, &mut report)?;
    Ok(report)
}

/// The profiled build and its runs: the explored configurations measured with the methods'
/// probes, sampling the clock chosen for them; the build and the workload as it samples it.
fn profile(
    store: &measure::store::Store,
    session: &Session,
    method_level: &pipeline::Explored,
    options: &Options,
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<(pipeline::Profiled, measure::Workload), Error> {
    let (spec, settings) = (&session.spec, &session.settings);
    let configurations = method_level.measured();
    let mut profiled = pipeline::instrument_methods(spec, settings, method_level)?;
    if !profiled.unprobed.is_empty() {
        report.notes.push(format!(
            "{} method regions got no probe ({}): their time counts as their callers', and \
             the options only they read are not modelled there",
            profiled.unprobed.len(),
            profiled.unprobed.join(", ")
        ));
    }
    measure::runner::kill_runs_on_interrupt();
    if profiled.counted {
        reporter.note(
            "counted instructions: each probed method's self count of the program's IR \
             instructions, the base the rest (docs/profiler.md, \"Counted instructions\")",
        );
        let workload = session.workload();
        let measured = measure_profiled(
            store,
            session,
            &profiled,
            workload,
            configurations,
            reporter,
        )?;
        report.notes.extend(measured.1);
        report.measurement = Some(measured.0);
        return Ok((profiled, session.workload().clone()));
    }
    let clock = pipeline::choose_profile_clock(
        store,
        spec,
        session.workload(),
        configurations,
        options.seed,
        options.profile_clock,
    )?;
    reporter.note(&clock.to_string());
    // Every profiled run samples the chosen clock, and its profiles are stored apart from the
    // other clock's (one variant per clock: a stored profile holds one clock's times).
    let workload = pipeline::sampled_by(session.workload(), clock.clock);
    if clock.clock == instrumented::RegionClock::Cpu {
        profiled.variant.push_str("+cpu");
        if !runtime::profiler::perf_task_clock_allowed() {
            report.notes.push(
                "the CPU clock is sampled by POSIX CPU timers (perf events are not allowed \
                 here: perf_event_paranoid above 2, or a container's seccomp), which the kernel \
                 checks only at its scheduler tick: a method shorter than a tick is seen only \
                 over many runs; `--profile-clock wall` samples at the period asked for"
                    .into(),
            );
        }
    }
    // Profiles at another period are other measurements (a method's time is samples × period).
    let period_us = (pipeline::sampling_period(&workload) * 1e6).round();
    profiled.variant.push_str(&format!("+{period_us}us"));
    report.profile_clock = Some(clock);
    let (measured, notes) = measure_profiled(
        store,
        session,
        &profiled,
        &workload,
        configurations,
        reporter,
    )?;
    report.notes.extend(notes);
    report.measurement = Some(measured);
    Ok((profiled, workload))
}

/// The explored configurations measured with the profiled build, and the notes on its
/// failed runs.
fn measure_profiled(
    store: &measure::store::Store,
    session: &Session,
    profiled: &pipeline::Profiled,
    workload: &measure::Workload,
    configurations: &[space::Configuration],
    reporter: &mut dyn Reporter,
) -> Result<(measure::campaign::CampaignReport, Option<String>), Error> {
    let (spec, settings) = (&session.spec, &session.settings);
    let measured = pipeline::measure_configurations(
        store,
        settings,
        spec,
        workload,
        profiled,
        configurations,
        &mut |event| reporter.measurement(event),
    )?;
    reporter.note(&measured.summary(spec.measure.max_cv));
    let notes = instrumented::failed::check(&measured, settings.allow_failed)?;
    Ok((measured, notes))
}

/// The report before anything ran: the system, the workloads, the space's size.
fn new_report(
    spec: &measure::SystemSpec,
    workload: &measure::Workload,
    analysis: &measure::Workload,
) -> Result<Report, Error> {
    let total =
        u128::try_from(&ValidConfigurations::new(&spec.space)?.count()).unwrap_or(u128::MAX);
    Ok(Report {
        system: spec.name.clone(),
        workload: workload.name.clone(),
        analysis_workload: analysis.name.clone(),
        total_configurations: total,
        exploration: None,
        granularity_table: Vec::new(),
        probes: None,
        cheap_regions: None,
        configurations: Vec::new(),
        profile_clock: None,
        measurement: None,
        overhead_correction: None,
        trivial_terms: 0,
        callee_partitions: Default::default(),
        suspects: Vec::new(),
        output: None,
        notes: Vec::new(),
    })
}

/// Table IV, as the paper does: one exploration, then per granularity the configurations
/// that cover its regions' subspaces. Exploring until the program region's partition (the
/// cross product of every decision's) is covered sees every decision the finer regions
/// partition on.
fn granularity_table(
    spec: &measure::SystemSpec,
    settings: &instrumented::Settings,
    analysis: &measure::Workload,
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<Vec<ExplorationReport>, Error> {
    let all = [
        Granularity::Program,
        Granularity::Method,
        Granularity::Statement,
    ];
    let explored = explore_tracking(spec, settings, analysis, &all, options, reporter)?;
    let valid = ValidConfigurations::new(&spec.space)?;
    Ok(all
        .into_iter()
        .map(|g| {
            let mut row = exploration_report(&explored, g);
            let (cover, minimal) = crate::minimum_cover(&valid, &explored.exploration, g);
            row.cover = Some(cover.len());
            row.cover_minimal = Some(minimal);
            row
        })
        .collect())
}

/// The iterative analysis. Profiling and models need the method partitions: a chosen
/// granularity is tracked in the same runs, which continue until both are explored.
fn explore(
    spec: &measure::SystemSpec,
    settings: &instrumented::Settings,
    analysis: &measure::Workload,
    options: &Options,
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<pipeline::Explored, Error> {
    let mut granularities = vec![Granularity::Method];
    if options.granularity != Granularity::Method {
        granularities.push(options.granularity);
        report.notes.push(format!(
            "regions at {} granularity for the analysis; profiling and models are per method",
            granularity_name(options.granularity)
        ));
    }
    let explored = explore_tracking(spec, settings, analysis, &granularities, options, reporter)?;
    let exploration = exploration_report(&explored, options.granularity);
    reporter.note(&format!(
        "dynamic taint analysis (workload `{}`): {} configurations of {} in {:.1} s; {} decision sites instrumented",
        analysis.name,
        exploration.configurations,
        report.total_configurations,
        exploration.seconds,
        exploration.decision_sites
    ));
    if options.control_taint == pipeline::ControlTaint::TwoWayBranches {
        reporter.note(&one_way_line(&explored));
    }
    report.exploration = Some(exploration);
    Ok(explored)
}

/// Every method region's partition refined by its nearest region callers' decisions, said in a
/// line (the taint runs it needed, the regions that gained callers).
fn partition_by_callers(
    spec: &measure::SystemSpec,
    analysis: &measure::Workload,
    method_level: &mut pipeline::Explored,
    options: &Options,
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<(), Error> {
    let mut progress = TaintProgress::default();
    let (runs, inherited) = pipeline::partition_by_callers(
        spec,
        analysis,
        method_level,
        options.max_runs,
        &mut |_, _| progress.ran(reporter),
    )
    .map_err(|e| budget_error(e, options.max_runs))?;
    reporter.note(&format!(
        "callee partitions: {} of {} method regions also partitioned by their callers' \
         decisions ({runs} more taint runs; --callee-partitions own for the paper's)",
        inherited.len(),
        method_level.exploration.regions(Granularity::Method).len()
    ));
    report.callee_partitions = inherited;
    Ok(())
}

/// Probe selection, and the folding of unprobed methods into the partitions of the probed
/// ones their time goes to.
fn probe(
    spec: &measure::SystemSpec,
    settings: &instrumented::Settings,
    analysis: &measure::Workload,
    method_level: &mut pipeline::Explored,
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<ProbeReport, Error> {
    let selection =
        pipeline::select_probes(spec, settings, analysis, method_level, &options.probes)?;
    let mut progress = TaintProgress::default();
    let extra = pipeline::fold(
        spec,
        analysis,
        method_level,
        selection.fold(),
        options.max_runs,
        &mut |_, _| progress.ran(reporter),
    )
    .map_err(|e| budget_error(e, options.max_runs))?;
    let probes = ProbeReport {
        probed: selection.probed.len(),
        methods: selection.probed.len() + selection.dropped.len(),
        calibration_runs: selection.calibration_runs,
        unprobed: selection
            .dropped
            .iter()
            .map(|d| UnprobedMethod {
                method: d.method.clone(),
                entries: d.entries,
                ns_per_entry: d.ns_per_entry,
                into: d.into.clone(),
            })
            .collect(),
        kept: selection.kept.clone(),
        extra_taint_runs: extra,
        shares: selection.shares.clone(),
    };
    reporter.note(&probes.summary(&analysis.name, options.probes.min_ns_per_entry));
    Ok(probes)
}

/// One-way branches the taint runs after the exploration (folding, callee partitions) saw go
/// the other way, into the exploration's report and a note: the assumption broke there.
fn note_broken_one_way(method_level: &pipeline::Explored, report: &mut Report) {
    if method_level.broken.is_empty() {
        return;
    }
    if let Some(exploration) = &mut report.exploration {
        exploration.broken_one_way_branches = method_level.broken.clone();
    }
    let sites: Vec<String> = method_level
        .broken
        .iter()
        .map(|b| format!("{}:{} in {}", b.site.file, b.site.line, b.site.method))
        .collect();
    report.notes.push(format!(
        "{} branches taken as one-way went the other way in a later taint run ({}): their \
         options are missing from the control taint of what follows them; rerun with \
         --control-taint every-branch",
        sites.len(),
        sites.join(", ")
    ));
}

/// With `cheap_below`, the configurations to measure ([`pipeline::Explored::cover`]): a cover
/// of the subspaces of the method regions that are not cheap by the calibration runs. Returns
/// the cheap regions, whose unmeasured subspaces the model approximates.
fn cheap_regions(
    spec: &measure::SystemSpec,
    method_level: &mut pipeline::Explored,
    options: &Options,
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<std::collections::BTreeSet<String>, Error> {
    let Some(below) = options.cheap_below else {
        return Ok(Default::default());
    };
    let Some(probes) = &report.probes else {
        report.notes.push(
            "--cheap-below needs the calibration runs (not made with --all-probes or in \
             counted instructions): every explored configuration is measured"
                .into(),
        );
        return Ok(Default::default());
    };
    let folded: Vec<(String, Vec<String>)> = probes
        .unprobed
        .iter()
        .map(|u| (u.method.clone(), u.into.clone()))
        .collect();
    let regions = method_level.exploration.regions(Granularity::Method);
    let valid = ValidConfigurations::new(&spec.space)?;
    let pipeline::CheapCover {
        cover,
        costly,
        cheap,
        unvaried,
    } = pipeline::cheap_cover(&valid, regions, &probes.shares, &folded, below);
    if !unvaried.is_empty() {
        report.notes.push(format!(
            "cheap regions: every measured configuration sets {} alike, which cheap regions \
             are partitioned by: their effect there is not measured, those regions take the \
             measured value (use a lower --cheap-below, or none)",
            unvaried.join(", ")
        ));
    }
    reporter.note(&format!(
        "cheap regions: {} of {} method regions take less than {:.1} % of the calibration runs' time; \
         measuring {} of the {} explored configurations, a cover of the other {}'s subspaces",
        cheap.len(),
        regions.len(),
        100.0 * below,
        cover.len(),
        method_level.exploration.configurations.len(),
        costly.len()
    ));
    report.cheap_regions = Some(CheapRegionsReport {
        below,
        explored: method_level.exploration.configurations.len(),
        measured: cover.len(),
        costly,
        cheap: cheap.len(),
        approximated_subspaces: Vec::new(),
        unvaried,
    });
    method_level.cover = Some(cover);
    Ok(cheap)
}

/// §V.A's correction, if asked for: `None` when not, or when it cannot be made (a note says
/// why).
#[allow(clippy::too_many_arguments)]
fn correct_overhead(
    store: &measure::store::Store,
    session: &Session,
    workload: &measure::Workload,
    profiled: &pipeline::Profiled,
    configurations: &[space::Configuration],
    options: &Options,
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<Option<pipeline::OverheadCorrection>, Error> {
    let (spec, settings) = (&session.spec, &session.settings);
    if options.overhead_correction == 0 {
        return Ok(None);
    }
    if profiled.counted {
        report.notes.push(
            "no overhead correction: counted instructions, and the probes add none to any count"
                .into(),
        );
        return Ok(None);
    }
    let correction = if options.overhead_fit == OverheadFit::Native {
        // Compared where the profiled build ran (`--allow-failed`: not where it failed).
        let failed: Vec<&str> = report
            .measurement
            .iter()
            .flat_map(|m| m.failed.iter().map(|(c, _)| c.as_str()))
            .collect();
        let succeeded: Vec<space::Configuration> = configurations
            .iter()
            .filter(|c| !failed.contains(&spec.space.format_configuration(c).as_str()))
            .cloned()
            .collect();
        pipeline::native_correction(
            store,
            spec,
            settings,
            session.workload(),
            workload,
            profiled,
            &succeeded,
            &mut |event| reporter.measurement(event),
        )?
    } else {
        pipeline::overhead_correction(
            spec,
            settings,
            workload,
            profiled,
            configurations,
            options.overhead_correction,
            options.seed,
            options.overhead_fit,
            &mut |config, p, n| {
                reporter.note(&format!(
                    "overhead: `{}`: {p:.4} s profiled, {n:.4} s native (medians, interleaved)",
                    space::shown_configuration(config)
                ))
            },
        )?
    };
    Ok(match correction {
        Ok(c) => {
            report.overhead_correction = Some(CorrectionReport {
                fit: c.fit,
                slope: c.line.slope,
                intercept: c.line.intercept,
                pairs: c.pairs.clone(),
            });
            Some(c)
        }
        Err(why) => {
            report.notes.push(format!("no overhead correction: {why}"));
            None
        }
    })
}

/// Writes the model where the options say (default `NAME.comprex.json` beside the spec) and
/// reports its trivial terms and suspect regions.
fn write_model(
    session: &Session,
    options: &Options,
    model: crate::ComprexModel,
    variant: String,
    report: &mut Report,
) -> Result<(), Error> {
    let spec = &session.spec;
    let out = options
        .model_path
        .clone()
        .unwrap_or_else(|| spec.dir.join(format!("{}.comprex.json", spec.name)));
    model.file.save(&out)?;
    report.trivial_terms = model.trivial.len();
    if let Some(cheap) = &mut report.cheap_regions {
        cheap.approximated_subspaces = model.approximated.clone();
    }
    report.suspects = model
        .suspects
        .iter()
        .map(|s| Suspect {
            region: s.region.clone(),
            subspace: s.subspace.clone(),
            cv: s.cv,
            measurements: s.measurements,
        })
        .collect();
    report.output = Some(ModelOutput {
        model_path: out,
        store: session.store_path.clone(),
        variant,
    });
    Ok(())
}

/// [`pipeline::explore_tracking`] with its progress said in a few lines: what it taints
/// with and its limit first, the limit named by its flag when it is reached.
fn explore_tracking(
    spec: &measure::SystemSpec,
    settings: &instrumented::Settings,
    analysis: &measure::Workload,
    granularities: &[Granularity],
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<pipeline::Explored, Error> {
    let max_runs = options.max_runs;
    reporter.note(&format!(
        "dynamic taint analysis on workload `{}`: taint runs until every subspace is \
         explored (at most {max_runs}, --max-runs)",
        analysis.name
    ));
    let mut progress = TaintProgress::default();
    pipeline::explore_tracking(
        spec,
        settings,
        analysis,
        granularities,
        options.control_taint,
        max_runs,
        &mut |_, _| progress.ran(reporter),
    )
    .map_err(|e| budget_error(e, max_runs))
}

/// What looking for one-way branches found, in a line: how many, where the first few are, and
/// the assumption it rests on.
fn one_way_line(explored: &pipeline::Explored) -> String {
    let first: Vec<String> = explored
        .one_way
        .iter()
        .take(4)
        .map(|b| format!("{}:{} in {}", b.site.file, b.site.line, b.site.method))
        .collect();
    let more = explored.one_way.len().saturating_sub(first.len());
    format!(
        "control taint: {} tainted branches went one way in every taint run and opened no \
         control taint ({}{}; {} explorations); assumed to go that way on the measured \
         workload too (--control-taint every-branch for the paper's)",
        explored.one_way.len(),
        first.join(", "),
        if more > 0 {
            format!(", {more} more")
        } else {
            String::new()
        },
        explored.explorations
    )
}

/// Taint runs counted, said at 16, 32, 64, …: a long exploration shows it advances, in a
/// few lines, not one per run.
#[derive(Default)]
struct TaintProgress {
    runs: usize,
}

impl TaintProgress {
    fn ran(&mut self, reporter: &mut dyn Reporter) {
        self.runs += 1;
        if self.runs >= 16 && self.runs.is_power_of_two() {
            reporter.note(&format!("  {} taint runs so far", self.runs));
        }
    }
}

/// The exploration's budget as the flag that sets it.
fn budget_error(e: Error, max_runs: usize) -> Error {
    match e {
        Error::Budget {
            runs,
            unexplored,
            largest,
        } => Error::Invalid(format!(
            "gave up after {runs} taint runs (--max-runs {max_runs}) with {unexplored} \
             subspaces still unexplored; {largest}: raise --max-runs, or give a smaller analysis \
             workload (--analysis-workload)"
        )),
        e => e,
    }
}

impl ProbeReport {
    /// The probe selection in one line, as a person reads it.
    pub fn summary(&self, analysis_workload: &str, min_ns: f64) -> String {
        format!(
            "probes: {} of {} method regions (calibration on `{analysis_workload}`: {}); {} hot methods below {min_ns} ns per call left unprobed{}",
            self.probed,
            self.methods,
            match self.calibration_runs {
                0 => "cached".to_string(),
                n => format!("{n} runs"),
            },
            self.unprobed.len(),
            if self.kept.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} kept (reachable from an entry point without a probed caller): {}",
                    self.kept.len(),
                    self.kept.join(", ")
                )
            }
        )
    }
}
