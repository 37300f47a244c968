//! ConfigCrusher as one call: [`run`] sequences the stages of [`crate::pipeline`] over a
//! [`Session`] and returns a serialisable [`Report`]; progress goes to a [`Reporter`].

use std::path::PathBuf;

use analysis::explanation::Explanation;
use instrumented::{ModelOutput, Reporter, Session};
use serde::Serialize;

use crate::Error;
use crate::overhead::{Overhead, overhead};
use crate::pipeline::{
    Analysed, NativeCorrection, analyse, build_model_with_clocks, instrument,
    measure_configurations, native_correction,
};

/// Where `run` stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// After the analysis, regions and compression: nothing is built or measured.
    Analyse,
    /// After building the instrumented program: nothing is measured.
    Instrument,
    /// The whole pipeline: measure and write the model.
    #[default]
    Model,
}

/// What `run` does beyond the session's defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// Apply the propagation optimisations (Algorithms 3 and 4) before placing regions.
    pub optimise: bool,
    /// Largest number of combinations one interaction may ask for.
    pub combination_limit: u128,
    pub stop_after: Stage,
    /// Explain why these options meet in the same decisions (implies stopping after the
    /// analysis).
    pub explain: Vec<String>,
    /// Where the model JSON goes (default: `NAME.configcrusher.json` beside the spec).
    pub model_path: Option<PathBuf>,
    /// Globals not to infer as fixed settings, beyond the spec's `not_fixed` (the ones a
    /// measured run contradicted).
    pub not_fixed: Vec<String>,
    /// Options with no source and no annotation are a warning, not an error: the analysis
    /// cannot see them and the model leaves them out (the report names them).
    pub allow_unsourced: bool,
    /// Read the region times by this clock in every configuration (default: as the spec's
    /// metric resolves, `instrumented::region_clocks`).
    pub region_clock: Option<instrumented::RegionClock>,
    /// Dynamic confirmation ([`crate::confirm`]): keep an interaction only where its options
    /// meet in a branch that went both ways, in functions that ran, on the measured workload
    /// in the static cover's configurations (an assumption the report names).
    pub confirm: bool,
    /// The workload dynamic confirmation observes (default: the spec's measurement
    /// workload; [`run`] gives it the session's): the one the model is of.
    pub confirm_workload: Option<String>,
    /// Measure the native program in the measured configurations as well and scale each
    /// one's region times to its native time ([`NativeCorrection`]): the model then predicts
    /// the program as the spec runs it, not the instrumented build.
    pub native_correction: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            optimise: true,
            combination_limit: 1 << 16,
            stop_after: Stage::Model,
            explain: Vec::new(),
            model_path: None,
            not_fixed: Vec::new(),
            allow_unsourced: false,
            region_clock: None,
            confirm: false,
            confirm_workload: None,
            native_correction: true,
        }
    }
}

/// Everything a ConfigCrusher run found, built and measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub system: String,
    pub workload: String,
    pub build: BuildReport,
    pub analysis: AnalysisReport,
    /// Present when the spec has `[build.fixed]`.
    pub fixed: Option<FixedReport>,
    pub regions: RegionCount,
    pub configurations: ConfigurationCount,
    /// The configurations to measure, as the store writes them.
    pub compressed: Vec<String>,
    pub explanation: Option<Explanation>,
    pub instrumentation: Option<InstrumentationReport>,
    pub measurement: Option<measure::campaign::CampaignReport>,
    pub overhead: Option<Overhead>,
    /// The instrumented build against the native program, which the model is corrected by.
    pub native_correction: Option<NativeCorrection>,
    /// The clock the region times were read by (wall, cpu or mixed per configuration), and
    /// why.
    pub region_clock: Option<instrumented::RegionClocks>,
    /// Regions whose tables have cells no successful run measured (`--allow-failed`), and
    /// the terms the model leaves out for them.
    pub unmeasured: Vec<instrumented::failed::Unmeasured>,
    /// The model file written, with the store and variant its measurements are in.
    #[serde(flatten)]
    pub output: Option<ModelOutput>,
    /// Things a user should know about the result (what the analysis could not see, why
    /// nothing was compressed, settings that changed nothing).
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    pub functions: usize,
    pub instructions: usize,
    pub seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AnalysisReport {
    pub seconds: f64,
    /// The process's peak resident memory after the analysis (loading and translating the
    /// bitcode included).
    pub peak_memory_mib: Option<f64>,
    pub tainted_decisions: usize,
    pub irrelevant: Vec<String>,
    /// Options the analysis could not see (no source, no annotation; `--allow-unsourced`):
    /// the model leaves them out, without knowing that they change nothing.
    pub unsourced: Vec<String>,
    /// Tainted decisions set aside as cold (on paths that end the program), the options they
    /// would have brought together, and a few functions they are in.
    pub set_aside: SetAside,
    /// Maximal interactions, by option name.
    pub interactions: Vec<Vec<String>>,
    /// Present with dynamic confirmation: the static interactions, and those it dropped
    /// because their options met only in branches that went one way (or never ran) on its
    /// workload.
    pub confirmation: Option<crate::Confirmation>,
    pub memory_cells: usize,
    /// The program exceeded points-to's per-object budget: stack and heap objects were
    /// analysed as one (much coarser).
    pub points_to_merged: bool,
    /// The initialisation phase and the options whose state it alone writes.
    pub load_time: LoadTimeReport,
}

/// What the analysis treated as load-time constants (`analysis::static_taint::LoadTime`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadTimeReport {
    /// The blocks of `main` in the initialisation, and all its blocks (`[0, 0]`: the
    /// program has no initialisation phase).
    pub main_blocks: [usize; 2],
    /// Functions called only during the initialisation.
    pub init_functions: usize,
    /// The initialisation's last source line in `main`.
    pub end: Option<String>,
    /// Options whose state only the initialisation writes: load-time constants.
    pub constant: Vec<String>,
    /// Options whose state code after the initialisation may write (ordinary memory), each
    /// with one such write.
    pub rewritten: Vec<RewrittenOption>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RewrittenOption {
    pub option: String,
    /// Where: file:line in function.
    pub at: String,
}

/// What the analysis set aside as cold: decisions on paths that end the program.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SetAside {
    pub decisions: usize,
    /// The options of those decisions, by name.
    pub options: Vec<String>,
    /// The functions they are in (up to five), most decisions first.
    pub functions: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FixedReport {
    pub folded_reads: usize,
    pub decided_branches: usize,
    pub dead_functions: usize,
    pub dead_blocks: usize,
    /// Settings no read of which was folded (they change nothing).
    pub unread: Vec<String>,
    /// The settings inferred from the program's own runs, and from which runs.
    pub inferred: Option<instrumented::infer::Inference>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RegionCount {
    pub count: usize,
    pub before_propagation: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConfigurationCount {
    /// Configurations ConfigCrusher measures.
    pub measured: usize,
    /// Valid configurations of the space (saturated at `u128::MAX`).
    pub total: u128,
    /// No cover of the interactions can be smaller.
    pub lower_bound: u128,
    /// Whether `measured` is proven the fewest that cover them.
    pub minimal: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct InstrumentationReport {
    pub binary: PathBuf,
    pub variant: String,
    pub enter_calls: usize,
    pub exit_calls: usize,
    pub split_edges: usize,
    pub value_checks: usize,
}

/// Runs ConfigCrusher: analyse, compress, instrument, measure, model — or up to
/// `options.stop_after`.
pub fn run(
    session: &Session,
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<Report, Error> {
    let spec = &session.spec;
    let workload = session.workload();
    spec.prepare_workload(workload)?;
    let option_ids = explained_options(session, &options.explain)?;
    let mut options = options.clone();
    options
        .confirm_workload
        .get_or_insert_with(|| session.workload.clone());
    let mut dropped: Vec<String> = Vec::new();
    // Inferred fixed settings measured runs contradict are dropped and everything from the
    // analysis on redone; each round drops at least one, so this ends.
    loop {
        match run_once(session, &options, &option_ids, &dropped, reporter) {
            Err(Error::InferredFixedContradicted(contradictions))
                if contradictions
                    .iter()
                    .any(|c| !options.not_fixed.contains(&c.global)) =>
            {
                for c in contradictions {
                    let note = format!(
                        "{} (in {} of the measured configurations, the first: configuration \
                         `{}`); `{}` is no longer taken as fixed, and the analysis is redone",
                        c.message, c.configurations, c.configuration, c.global
                    );
                    reporter.note(&note);
                    dropped.push(note);
                    options.not_fixed.push(c.global);
                }
            }
            other => return other,
        }
    }
}

/// One round of [`run`] with these options; `dropped` notes the fixed settings earlier
/// rounds dropped.
fn run_once(
    session: &Session,
    options: &Options,
    option_ids: &[(space::OptionId, String)],
    dropped: &[String],
    reporter: &mut dyn Reporter,
) -> Result<Report, Error> {
    let spec = &session.spec;
    let workload = session.workload();
    let analysed = analyse(spec, &session.settings, options)?;
    let mut report = analysis_report(session, &analysed);
    report.notes.extend(dropped.iter().cloned());
    for line in report.summary_lines() {
        reporter.note(&line);
    }
    if !option_ids.is_empty() {
        report.explanation = Some(Explanation::new(
            analysed.program(),
            &analysed.influence,
            option_ids,
        ));
    }
    if options.stop_after == Stage::Analyse || !option_ids.is_empty() {
        return Ok(report);
    }

    let built = instrument(spec, &analysed, &session.settings)?;
    let instrumentation = InstrumentationReport {
        binary: built.binary.clone(),
        variant: built.variant.clone(),
        enter_calls: built.stats.enter_calls,
        exit_calls: built.stats.exit_calls,
        split_edges: built.stats.split_edges,
        value_checks: built.stats.value_checks,
    };
    reporter.note(&instrumentation.to_string());
    report.instrumentation = Some(instrumentation);
    if options.stop_after == Stage::Instrument {
        return Ok(report);
    }

    let store = session.store()?;
    measure_and_correct(
        session,
        options,
        &analysed,
        &built,
        &store,
        &mut report,
        reporter,
    )?;
    let (model, clocks) = build_model_with_clocks(
        &store,
        &session.settings,
        spec,
        workload,
        &analysed,
        &built.variant,
        options.region_clock,
        report.native_correction.as_ref(),
    )?;
    report.region_clock = Some(clocks);
    report.unmeasured = instrumented::failed::recorded(&model);
    report.overhead = Some(overhead(&store, spec, workload, &built.variant)?);
    let out = options
        .model_path
        .clone()
        .unwrap_or_else(|| spec.dir.join(format!("{}.configcrusher.json", spec.name)));
    model.save(&out)?;
    report.output = Some(ModelOutput {
        model_path: out,
        store: session.store_path.clone(),
        variant: built.variant,
    });
    Ok(report)
}

/// The measuring stages: the compressed configurations with the instrumented build (a
/// failed one is an error unless `--allow-failed`), and the native program in them for the
/// correction (a note says why there is none).
fn measure_and_correct(
    session: &Session,
    options: &Options,
    analysed: &Analysed,
    built: &crate::Instrumented,
    store: &measure::store::Store,
    report: &mut Report,
    reporter: &mut dyn Reporter,
) -> Result<(), Error> {
    let (spec, workload) = (&session.spec, session.workload());
    measure::runner::kill_runs_on_interrupt();
    let measured = measure_configurations(
        store,
        &session.settings,
        spec,
        workload,
        built,
        &analysed.compression.configurations,
        &mut |event| reporter.measurement(event),
    )?;
    reporter.note(&measured.summary(spec.measure.max_cv));
    let failed = instrumented::failed::check(&measured, session.settings.allow_failed)?;
    report.notes.extend(failed);
    // The correction compares the two builds where the instrumented one ran
    // (`--allow-failed`: not in the configurations that failed).
    let succeeded: Vec<space::Configuration> = analysed
        .compression
        .configurations
        .iter()
        .filter(|c| {
            let text = spec.space.format_configuration(c);
            !measured.failed.iter().any(|(f, _)| *f == text)
        })
        .cloned()
        .collect();
    report.measurement = Some(measured);
    if options.native_correction {
        match native_correction(
            store,
            &session.settings,
            spec,
            workload,
            built,
            &succeeded,
            options.region_clock,
            &mut |event| reporter.measurement(event),
        )? {
            Ok(c) => {
                reporter.note(&c.to_string());
                report.native_correction = Some(c);
            }
            Err(why) => report.notes.push(format!(
                "no native correction (the model is the instrumented build's): {why}"
            )),
        }
    }
    Ok(())
}

/// The options `--explain` names, resolved; an unknown name is an error.
fn explained_options(
    session: &Session,
    names: &[String],
) -> Result<Vec<(space::OptionId, String)>, Error> {
    let space = &session.spec.space;
    names
        .iter()
        .map(|name| {
            space.find(name).map(|o| (o, name.clone())).ok_or_else(|| {
                Error::Invalid(format!("--explain: the space has no option `{name}`"))
            })
        })
        .collect()
}

/// The report's analysis part, with the notes the analysis calls for.
fn analysis_report(session: &Session, analysed: &Analysed) -> Report {
    let spec = &session.spec;
    let program = &analysed.translation.program;
    let mut notes = Vec::new();
    let fixed = fixed_report(spec, analysed, &mut notes);
    let points_to = &analysed.influence.facts.points_to;
    if points_to.merged {
        notes.push(format!(
            "points-to: {} memory cells; the program exceeded the per-object budget, so its \
             stack and heap objects were analysed as one (fields still per struct type)",
            points_to.cells.len()
        ));
    }
    notes.extend(analysed.confirmation.as_ref().and_then(confirmation_note));
    let interactions = analysed.interactions(spec);
    let total = analysed.total_configurations;
    let measured = analysed.compression.configurations.len();
    if measured as u128 >= total
        && let Some(widest) = interactions.iter().max_by_key(|i| i.len())
        && widest.len() >= 2
    {
        notes.push(format!(
            "the analysis found {} options in one interaction, so ConfigCrusher measures every \
             configuration, like brute force; `--explain {},{}` shows where two of them meet",
            widest.len(),
            widest[0],
            widest[widest.len() - 1]
        ));
    }
    Report {
        system: spec.name.clone(),
        workload: session.workload.clone(),
        build: BuildReport {
            functions: program.functions.len(),
            instructions: program.insts.len(),
            seconds: analysed.build_seconds,
        },
        analysis: AnalysisReport {
            seconds: analysed.analysis_seconds,
            peak_memory_mib: analysed.peak_memory_mib,
            tainted_decisions: analysed.influence.decisions.len(),
            irrelevant: analysed.irrelevant.clone(),
            unsourced: analysed.unsourced.clone(),
            set_aside: set_aside(spec, analysed),
            interactions,
            confirmation: analysed.confirmation.clone(),
            memory_cells: points_to.cells.len(),
            points_to_merged: points_to.merged,
            load_time: load_time(spec, analysed),
        },
        fixed,
        regions: RegionCount {
            count: analysed.plan.regions.len(),
            before_propagation: analysed.regions_unoptimised,
        },
        configurations: ConfigurationCount {
            measured,
            total,
            lower_bound: analysed.compression.lower_bound,
            minimal: analysed.compression.optimal,
        },
        compressed: analysed
            .compression
            .configurations
            .iter()
            .map(|c| spec.space.format_configuration(c))
            .collect(),
        explanation: None,
        instrumentation: None,
        measurement: None,
        overhead: None,
        native_correction: None,
        region_clock: None,
        unmeasured: Vec::new(),
        output: None,
        notes,
    }
}

/// The analysis's load-time constants, by option name.
fn load_time(spec: &measure::SystemSpec, analysed: &Analysed) -> LoadTimeReport {
    let lt = &analysed.influence.load_time;
    let program = analysed.program();
    let name = |o: space::OptionId| spec.space.option(o).name.clone();
    LoadTimeReport {
        main_blocks: [lt.main_blocks.0, lt.main_blocks.1],
        init_functions: lt.init_functions,
        end: lt.end.map(|l| program.describe_loc(l)),
        constant: lt.constant.iter().map(|&o| name(o)).collect(),
        rewritten: lt
            .rewritten
            .iter()
            .map(|&(o, i)| RewrittenOption {
                option: name(o),
                at: format!(
                    "{} in {}",
                    program.describe_loc(program.inst(i).loc),
                    program.func(program.func_of(i)).name
                ),
            })
            .collect(),
    }
}

/// The cold decisions of the analysis, summarised.
fn set_aside(spec: &measure::SystemSpec, analysed: &Analysed) -> SetAside {
    let si = &analysed.influence;
    let program = analysed.program();
    let mut options = analysis::OptionSet::new();
    let mut per_function: std::collections::BTreeMap<String, usize> = Default::default();
    for d in &si.set_aside {
        options = options.union(si.sets.get(d.options));
        *per_function
            .entry(program.func(program.func_of(d.inst)).name.clone())
            .or_default() += 1;
    }
    let mut functions: Vec<(String, usize)> = per_function.into_iter().collect();
    functions.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    SetAside {
        decisions: si.set_aside.len(),
        options: analysed.names(spec, &options),
        functions: functions.into_iter().take(5).map(|(f, _)| f).collect(),
    }
}

/// ` (a, b, c, …)`: the first `shown` of `names`, or nothing when there are none.
fn first_names(names: &[String], shown: usize) -> String {
    if names.is_empty() {
        return String::new();
    }
    let more = if names.len() > shown { ", …" } else { "" };
    format!(" ({}{more})", names[..names.len().min(shown)].join(", "))
}

impl Report {
    /// The analysis in a few lines, as a person reads it.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "built {}: {} functions, {} instructions in {:.1} s",
            self.system, self.build.functions, self.build.instructions, self.build.seconds
        )];
        if let Some(f) = &self.fixed {
            lines.extend(fixed_lines(f));
        }
        let a = &self.analysis;
        let interactions: Vec<String> = a
            .interactions
            .iter()
            .map(|i| format!("{{{}}}", i.join(",")))
            .collect();
        lines.push(format!(
            "analysed in {:.2} s{}: {} tainted decisions; irrelevant options: {}; interactions: {}",
            a.seconds,
            a.peak_memory_mib
                .map_or(String::new(), |m| format!(" (peak memory {m:.0} MiB)")),
            a.tainted_decisions,
            none_or_list(&a.irrelevant),
            if interactions.is_empty() {
                "none".to_string()
            } else {
                interactions.join(" ")
            }
        ));
        if let Some(c) = &a.confirmation {
            lines.extend(confirmation_lines(c));
        }
        if a.set_aside.decisions > 0 {
            lines.push(format!(
                "set aside as cold (paths that end the program): {} tainted decisions of {{{}}} \
                 in {}{}; `--explain` lists those of two options",
                a.set_aside.decisions,
                a.set_aside.options.join(","),
                a.set_aside.functions.join(", "),
                if a.set_aside.functions.len() == 5 {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        lines.push(load_time_line(&a.load_time));
        if !a.unsourced.is_empty() {
            lines.push(format!(
                "WARNING: options the analysis cannot see (no `source`, no annotation), left out \
                 of the model unexamined, not found irrelevant: {}",
                a.unsourced.join(", ")
            ));
        }
        lines.push(format!(
            "regions: {} ({} before propagation); configurations to measure: {} of {} (lower bound {}){}",
            self.regions.count,
            self.regions.before_propagation,
            self.configurations.measured,
            self.configurations.total,
            self.configurations.lower_bound,
            if self.configurations.minimal {
                ""
            } else {
                ", perhaps not the fewest"
            }
        ));
        lines
    }
}

/// The fixed settings in a line or two: those inferred, and what folding them did.
fn fixed_lines(f: &FixedReport) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(why) = f.inferred.as_ref().and_then(|i| i.failed.as_ref()) {
        lines.push(format!("fixed settings inferred: none ({why})"));
    } else if let Some(i) = &f.inferred {
        let settings: Vec<String> = i
            .fixed
            .iter()
            .map(|s| format!("{} = {} ({} reads)", s.global, s.value, s.reads))
            .collect();
        lines.push(format!(
            "fixed settings inferred: of {} integer globals read in {} runs of workload \
                 `{}` ({}), {} held one value in all: {}",
            i.observed,
            i.configurations.len(),
            i.workload,
            i.configurations.join("; "),
            i.fixed.len(),
            none_or_list(&settings)
        ));
    }
    lines.push(format!(
        "fixed settings: {} reads folded, {} branches decided; unreachable in every run: \
             {} functions and {} blocks of the others",
        f.folded_reads, f.decided_branches, f.dead_functions, f.dead_blocks
    ));
    lines
}

/// What the fixed settings did, when there are any (given or inferred); a note for those
/// `[build.fixed]` names that no folded read has.
fn fixed_report(
    spec: &measure::SystemSpec,
    analysed: &Analysed,
    notes: &mut Vec<String>,
) -> Option<FixedReport> {
    if analysed.specialised.is_none() && analysed.inference.is_none() {
        return None;
    }
    let program = &analysed.translation.program;
    let folded = analysed
        .specialised
        .as_ref()
        .map_or(&[][..], |s| &s.folded_loads[..]);
    let unread: Vec<String> = spec
        .build
        .iter()
        .flat_map(|b| b.fixed.keys())
        .filter(|name| {
            !folded
                .iter()
                .any(|f| program.globals[f.global].name == **name)
        })
        .cloned()
        .collect();
    if !unread.is_empty() {
        notes.push(format!(
            "[build.fixed]: no read of {} was folded (read through pointers, or not an \
             integer), so they change nothing",
            unread.join(", ")
        ));
    }
    let s = analysed.specialised.as_ref();
    Some(FixedReport {
        inferred: analysed.inference.clone(),
        folded_reads: folded.len(),
        decided_branches: s.map_or(0, |s| s.decided),
        dead_functions: s.map_or(0, |s| s.dead_functions),
        dead_blocks: s.map_or(0, |s| s.dead_blocks),
        unread,
    })
}

/// The assumption dynamic confirmation adds, when it dropped interactions.
fn confirmation_note(c: &crate::Confirmation) -> Option<String> {
    (!c.dropped.is_empty()).then(|| {
        format!(
            "assumption (dynamic confirmation): the model leaves out the interactions {} the \
         static analysis found, as their options met only in branches that went one way, \
         or never ran, in {} runs of workload `{}` (the static cover's configurations); \
         other configurations or workloads may take them otherwise (without dynamic \
         confirmation: the static analysis's {} configurations)",
            c.dropped
                .iter()
                .map(|i| format!("{{{}}}", i.join(",")))
                .collect::<Vec<_>>()
                .join(" "),
            c.runs,
            c.workload,
            c.static_configurations
        )
    })
}

/// The load-time constants in a line.
fn load_time_line(lt: &LoadTimeReport) -> String {
    if lt.main_blocks[0] == 0 {
        return "load-time constants: none (no initialisation phase: no `main` that sets an \
                option's state before its work)"
            .to_string();
    }
    let rewritten: Vec<String> = lt
        .rewritten
        .iter()
        .map(|r| format!("{} ({})", r.option, r.at))
        .collect();
    format!(
        "load-time constants (written only by the initialisation: {} of {} blocks of main, to \
         {}, and {} functions called only there): {}; written after it: {}",
        lt.main_blocks[0],
        lt.main_blocks[1],
        lt.end.as_deref().unwrap_or("?"),
        lt.init_functions,
        none_or_list(&lt.constant),
        none_or_list(&rewritten),
    )
}

/// Names joined by commas, or `none`.
fn none_or_list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// Dynamic confirmation in a line or two: what it observed and dropped, and whether failed
/// runs kept it from dropping anything.
fn confirmation_lines(c: &crate::Confirmation) -> Vec<String> {
    let mut lines = Vec::new();
    let sets = |sets: &[Vec<String>]| {
        if sets.is_empty() {
            "none".to_string()
        } else {
            sets.iter()
                .map(|i| format!("{{{}}}", i.join(",")))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    lines.push(format!(
        "dynamic confirmation: {} runs of workload `{}` (the static cover) in {:.1} s \
             observed {} tainted branches: {} went one way in every run, {} never ran; \
             {} of {} functions never entered{}; \
             static interactions {} ({} configurations); dropped: {}",
        c.runs,
        c.workload,
        c.seconds,
        c.branches_observed,
        c.branches_decided,
        c.branches_never_run,
        c.functions_never_entered.len(),
        c.functions_observed,
        first_names(&c.functions_never_entered, 5),
        sets(&c.static_interactions),
        c.static_configurations,
        sets(&c.dropped),
    ));
    if !c.failed.is_empty() {
        lines.push(format!(
            "WARNING: dynamic confirmation confirmed nothing away: {} observed runs \
                 failed ({}), and a failed run may have gone the other way anywhere",
            c.failed.len(),
            instrumented::failed::listed(&c.failed)
        ));
    }
    lines
}

impl std::fmt::Display for InstrumentationReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "instrumented: {} region entry and {} exit calls ({} split edges){} → {}",
            self.enter_calls,
            self.exit_calls,
            self.split_edges,
            match self.value_checks {
                0 => String::new(),
                n => format!(", {n} checks of fixed settings"),
            },
            self.binary.display()
        )
    }
}
