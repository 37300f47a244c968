//! ConfigCrusher end to end (Velez et al., journal version,
//! §3–§5), from a system spec to a performance-influence model with per-region local models.
//!
//! The pipeline, one function per stage:
//!
//! 1. [`analyse`]: build the program ([`instrumented::build`]: clang-19 → bitcode → `ir`, option
//!    sources from the spec's `source` entries and `knobs:option=` annotations), run
//!    the static taint analysis (statement-influence map), identify regions (Algorithm 2)
//!    before and after propagation (Algorithms 3/4), and compress the interactions into
//!    configurations (Algorithm 1) that satisfy the space's constraints;
//! 2. [`instrument`]: insert region timers at the regions' start and end points, link the
//!    runtime (`runtime`), giving an instrumented binary and a *variant* name for the store;
//! 3. [`measure_configurations`]: run the compressed configurations through the measurement
//!    engine (`measure`: repetitions, timeouts, resumable store), collecting region times;
//! 4. [`build_model`]: per region, the self time in each combination of the region's options
//!    (the median over a configuration's repetitions, averaged over the configurations with
//!    that combination) becomes a local model (subspace → influence form); the global model
//!    is their sum plus the base (time outside every region).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use analysis::{OptionSet, StatementInfluence};
use instrumented::{BASE, Settings};
use ir::ProgramDominance;
use llvm::{RegionProbe, Translation};

use crate::compress::Compression;
use crate::regions::RegionPlan;
use measure::campaign::{CampaignReport, Event, RegionOutput};
use measure::store::{RegionMeasurement, Store};
use measure::{SystemSpec, Workload};
use model::{InfluenceModel, ModelFile, Region, SourceSpan, Term};
use space::{Configuration, OptionId, ValidConfigurations};

use crate::Error;

/// The environment variable the runtime writes region times to.
pub const REGION_TIMES_ENV: &str = runtime::ENV_VAR;

/// The result of building and analysing the program.
pub struct Analysed {
    pub translation: Translation,
    /// The program as the spec's fixed settings leave it, when it has any: what the analysis
    /// read (the same ids as `translation.program`, which instrumentation rewrites).
    pub specialised: Option<analysis::Specialised>,
    /// The SSA bitcode the instrumenter rewrites.
    pub ssa: PathBuf,
    pub influence: StatementInfluence,
    /// The regions to instrument (after propagation, when enabled).
    pub plan: RegionPlan,
    /// Regions Algorithm 2 finds without propagation, for comparison (R before/after).
    pub regions_unoptimised: usize,
    pub compression: Compression,
    /// Valid configurations of the space (saturated at `u128::MAX`).
    pub total_configurations: u128,
    /// Options no decision depends on.
    pub irrelevant: Vec<String>,
    /// Options with neither a `source` nor an annotation, which the analysis cannot see
    /// (only with [`crate::Options::allow_unsourced`]; otherwise they are an error). They are
    /// not in `irrelevant`: nothing is known about them.
    pub unsourced: Vec<String>,
    pub build_seconds: f64,
    pub analysis_seconds: f64,
    /// This process's peak resident memory (MiB) when the analysis ended: what building and
    /// analysing the program took, before any measuring adds its own.
    pub peak_memory_mib: Option<f64>,
    /// Fixed settings inferred from the program's own runs (none when inference is off).
    pub inference: Option<instrumented::infer::Inference>,
    /// What dynamic confirmation dropped ([`crate::Options::confirm`]).
    pub confirmation: Option<crate::confirm::Confirmation>,
}

impl Analysed {
    /// The program the analysis read.
    pub fn program(&self) -> &ir::Program {
        match &self.specialised {
            Some(s) => &s.program,
            None => &self.translation.program,
        }
    }

    /// Option names of a set, in the space's order.
    pub fn names(&self, spec: &SystemSpec, set: &OptionSet) -> Vec<String> {
        set.iter()
            .map(|o| spec.space.option(o).name.clone())
            .collect()
    }

    /// The maximal interactions, by name.
    pub fn interactions(&self, spec: &SystemSpec) -> Vec<Vec<String>> {
        self.compression
            .maximal
            .iter()
            .map(|s| self.names(spec, s))
            .collect()
    }
}

/// Stage 1: build, analyse, place regions, compress.
pub fn analyse(
    spec: &SystemSpec,
    settings: &Settings,
    options: &crate::Options,
) -> Result<Analysed, Error> {
    let built = instrumented::build(spec, settings, "ConfigCrusher")?;
    let unsourced = unsourced_options(spec, &built.sources);
    if !unsourced.is_empty() && !options.allow_unsourced {
        return Err(unsourced_error(spec, &unsourced));
    }
    let started = Instant::now();
    let (fixed, inference) = instrumented::infer::fixed_settings(
        spec,
        settings,
        &built,
        spec.analysis_workload()?,
        &options.not_fixed,
    )?;
    let mut specialised =
        (!fixed.is_empty()).then(|| analysis::specialise(&built.translation.program, &fixed));
    let mut influence = analyse_program(&built, &specialised);
    let valid = ValidConfigurations::new(&spec.space)?;
    let confirmation = if options.confirm {
        Some(confirm(
            spec,
            settings,
            options,
            (&built, &fixed, &valid),
            &mut influence,
            &mut specialised,
        )?)
    } else {
        None
    };
    let program = match &specialised {
        Some(s) => &s.program,
        None => &built.translation.program,
    };
    let dominance = ProgramDominance::new(program);
    let regions_unoptimised =
        crate::identify_regions(program, &dominance, influence.influence.as_slice(), &[])
            .regions
            .len();
    let plan = if options.optimise {
        let (optimised, pulled) = crate::optimise_influence(
            program,
            &mut influence.sets,
            influence.influence.as_slice(),
            &influence.call_graph,
        );
        crate::identify_regions(program, &dominance, &optimised, &pulled)
    } else {
        crate::identify_regions(program, &dominance, influence.influence.as_slice(), &[])
    };
    let interactions = interactions_of(&influence);
    let compression = crate::compress(&valid, &interactions, options.combination_limit)?;
    let total_configurations = u128::try_from(&valid.count()).unwrap_or(u128::MAX);
    let relevant = influence.relevant_options();
    // An option selected in every configuration (mandatory up to the root: a grouping such as
    // "level") cannot change anything; it is not reported as irrelevant either.
    let irrelevant = spec
        .space
        .ids()
        .filter(|o| !relevant.contains(*o) && !spec.space.always_selected(*o))
        .map(|o| spec.space.option(o).name.clone())
        .filter(|name| !unsourced.contains(name))
        .collect();
    let analysis_seconds = started.elapsed().as_secs_f64();
    Ok(Analysed {
        specialised,
        ssa: built.ssa,
        influence,
        plan,
        regions_unoptimised,
        compression,
        total_configurations,
        irrelevant,
        unsourced,
        build_seconds: built.seconds,
        analysis_seconds,
        peak_memory_mib: measure::runner::peak_memory_mib(),
        inference,
        confirmation,
        translation: built.translation,
    })
}

/// Options the analysis cannot see, as the error that stops it (without
/// `--allow-unsourced`).
fn unsourced_error(spec: &SystemSpec, unsourced: &[String]) -> Error {
    Error::Invalid(format!(
        "{}: the analysis cannot see option{} {}: no `source` in the spec and no \
         knobs:option= annotation (add one, or pass --allow-unsourced to leave {} out of the \
         model)",
        spec.path.display(),
        if unsourced.len() == 1 { "" } else { "s" },
        unsourced.join(", "),
        if unsourced.len() == 1 { "it" } else { "them" },
    ))
}

/// The program's influence as the static analysis finds it, on the program specialised to
/// its fixed settings if it is.
fn analyse_program(
    built: &instrumented::Built,
    specialised: &Option<analysis::Specialised>,
) -> StatementInfluence {
    let program = match specialised {
        Some(s) => &s.program,
        None => &built.translation.program,
    };
    analysis::analyse(program, &ProgramDominance::new(program), &built.sources)
}

/// Dynamic confirmation ([`crate::confirm`]): the static cover observed on the confirmation
/// workload, the branches that went one way and the functions no run entered folded into
/// `specialised`, and `influence` analysed again.
fn confirm(
    spec: &SystemSpec,
    settings: &Settings,
    options: &crate::Options,
    (built, fixed, valid): (
        &instrumented::Built,
        &[analysis::FixedGlobal],
        &ValidConfigurations,
    ),
    influence: &mut StatementInfluence,
    specialised: &mut Option<analysis::Specialised>,
) -> Result<crate::confirm::Confirmation, Error> {
    let workload = spec.workload(options.confirm_workload.as_deref())?;
    let static_interactions = interactions_of(influence);
    let static_cover = crate::compress(valid, &static_interactions, options.combination_limit)?;
    if static_cover.configurations.len() > crate::confirm::MAX_RUNS {
        return Err(Error::Invalid(format!(
            "dynamic confirmation: the static analysis's cover has {} configurations, more \
             runs than the limit of {}; run without dynamic confirmation",
            static_cover.configurations.len(),
            crate::confirm::MAX_RUNS
        )));
    }
    let outcomes = crate::confirm::branch_outcomes(
        spec,
        settings,
        built,
        influence,
        workload,
        &static_cover.configurations,
    )?;
    if !outcomes.fixed.is_empty() || !outcomes.never_entered.is_empty() {
        *specialised = Some(analysis::specialise_with(
            &built.translation.program,
            fixed,
            &outcomes.fixed,
            &outcomes.never_entered,
        ));
        *influence = analyse_program(built, specialised);
    }
    let confirmed = interactions_of(influence);
    let names = |sets: &[OptionSet]| -> Vec<Vec<String>> {
        sets.iter()
            .map(|s| {
                s.iter()
                    .map(|o| spec.space.option(o).name.clone())
                    .collect()
            })
            .collect()
    };
    let dropped: Vec<OptionSet> = static_cover
        .maximal
        .iter()
        .filter(|s| !confirmed.iter().any(|c| s.is_subset(c)))
        .cloned()
        .collect();
    Ok(crate::confirm::Confirmation {
        workload: workload.name.clone(),
        runs: static_cover.configurations.len(),
        seconds: outcomes.seconds,
        branches_observed: outcomes.observed,
        branches_decided: outcomes.decided,
        branches_never_run: outcomes.never,
        functions_observed: outcomes.functions,
        functions_never_entered: outcomes
            .never_entered
            .iter()
            .map(|&f| built.translation.program.func(f).name.clone())
            .collect(),
        static_interactions: names(&static_cover.maximal),
        static_configurations: static_cover.configurations.len(),
        dropped: names(&dropped),
        failed: outcomes.failed,
    })
}

/// The distinct non-empty influence sets: what the compression covers.
fn interactions_of(influence: &StatementInfluence) -> Vec<OptionSet> {
    influence
        .interactions()
        .iter()
        .map(|s| influence.sets.get(*s).clone())
        .collect()
}

/// Options the analysis cannot see: neither they nor an option below them in the hierarchy
/// has a source, and they are not selected in every configuration (a grouping such as
/// "level", whose members carry the sources, changes nothing by itself).
fn unsourced_options(spec: &SystemSpec, sources: &analysis::ResolvedSources) -> Vec<String> {
    let space = &spec.space;
    let mut seen = vec![false; space.len()];
    for (o, _) in &sources.sources {
        // The option and every option above it: a parent's value is its members'.
        let mut at = Some(*o);
        while let Some(x) = at {
            seen[x.index()] = true;
            at = space.option(x).parent;
        }
    }
    space
        .ids()
        .filter(|o| !seen[o.index()] && !space.always_selected(*o))
        .map(|o| space.option(o).name.clone())
        .collect()
}

/// An instrumented build of the program.
pub struct Instrumented {
    pub binary: PathBuf,
    pub stats: llvm::InstrumentStats,
    /// The store's name for this build's measurements: `configcrusher:` and a hash of the
    /// binary, so a changed program or plan is measured afresh and a rerun resumes.
    pub variant: String,
    /// The reads of fixed settings it checks, by check id.
    pub fixed_reads: std::sync::Arc<Vec<FixedRead>>,
}

/// Stage 2: insert region timers and link the runtime.
pub fn instrument(
    spec: &SystemSpec,
    analysed: &Analysed,
    settings: &Settings,
) -> Result<Instrumented, Error> {
    let probes: Vec<RegionProbe> = analysed
        .plan
        .regions
        .iter()
        .enumerate()
        .map(|(i, r)| RegionProbe {
            id: i as u32,
            start: r.start.clone(),
            end: r.end.clone(),
        })
        .collect();
    // Every read the analysis folded is checked in every run (check id = index).
    let program = &analysed.translation.program;
    let folded = analysed
        .specialised
        .as_ref()
        .map_or(&[][..], |s| &s.folded_loads[..]);
    let checks: Vec<llvm::ValueCheck> = folded
        .iter()
        .enumerate()
        .map(|(k, f)| llvm::ValueCheck {
            inst: f.inst,
            id: k as u32,
            expected: f.expected,
        })
        .collect();
    let fixed_reads = folded
        .iter()
        .map(|f| {
            let name = &program.globals[f.global].name;
            let value = spec.build.as_ref().and_then(|b| b.fixed.get(name)).copied();
            FixedRead {
                global: name.clone(),
                value: value.unwrap_or(f.expected),
                at: program.describe_loc(program.inst(f.inst).loc),
                inferred: value.is_none(),
            }
        })
        .collect();
    let bitcode = settings.work_dir.join("program.instrumented.bc");
    // `metric = "instructions"`: the counting build, its runs a variant of their own.
    let counting = instrumented::counting::counts_instructions(spec);
    let instrument = if counting {
        |ssa: &Path,
         p: &ir::Program,
         at: &llvm::LlvmPositions,
         probes: &[RegionProbe],
         checks: &[llvm::ValueCheck],
         out: &Path| {
            llvm::instrument_counting(ssa, p, at, probes, checks, out).map(|(stats, _)| stats)
        }
    } else {
        llvm::instrument_with_checks
    };
    let stats = instrument(
        &analysed.ssa,
        program,
        &analysed.translation.positions,
        &probes,
        &checks,
        &bitcode,
    )?;
    let (runtime, approach) = if counting {
        (
            instrumented::counting::counting_runtime(settings)?,
            "configcrusher-counted",
        )
    } else {
        (settings.region_timer_runtime()?, "configcrusher")
    };
    let (binary, variant) = instrumented::link(
        spec,
        settings,
        &bitcode,
        runtime,
        runtime::LINK_FLAGS,
        approach,
        true,
    )?;
    Ok(Instrumented {
        binary,
        stats,
        variant,
        fixed_reads: std::sync::Arc::new(fixed_reads),
    })
}

/// A read of a fixed setting the instrumented program checks.
#[derive(Clone, Debug)]
pub struct FixedRead {
    pub global: String,
    /// The value the spec gives it.
    pub value: i64,
    /// `file:line` of the read.
    pub at: String,
    /// Inferred from the program's runs, not written in `[build.fixed]`.
    pub inferred: bool,
}

/// How a run that contradicts `[build.fixed]` fails (the start of its message).
const FIXED_VIOLATED: &str = "[build.fixed] says";
/// How a run that contradicts an inferred fixed setting fails (the start of its message,
/// then the global's name in backquotes).
const INFERRED_VIOLATED: &str = "the inferred fixed setting";

/// Reads a region-times file into the store's form: every region entered, plus the base. A
/// run in which a folded read saw another value than the fixed one is an error: the analysis
/// that chose its regions and configurations assumed otherwise.
fn read_region_times(
    path: &Path,
    fixed_reads: &[FixedRead],
    counting: bool,
) -> Result<Vec<RegionMeasurement>, String> {
    let times = runtime::RegionTimes::read(path).map_err(|e| e.to_string())?;
    if times.counted != counting {
        return Err(format!(
            "{}: the region file is in {} but the spec measures {}",
            path.display(),
            if times.counted {
                "instructions"
            } else {
                "seconds"
            },
            if counting { "instructions" } else { "time" }
        ));
    }
    instrumented::counting::comparable_with_its_truth(&times)?;
    // Every inferred setting the run contradicts, so one round of re-analysis drops them all.
    let mut inferred: Vec<String> = Vec::new();
    for (&id, violation) in &times.fixed_violations {
        let read = fixed_reads.get(id as usize).ok_or_else(|| {
            format!("the program reports fixed-setting check {id}, which was never inserted")
        })?;
        if read.inferred
            && !inferred
                .iter()
                .any(|m| m.contains(&format!("`{}`", read.global)))
        {
            inferred.push(format!(
                "{INFERRED_VIOLATED} `{}` = {} (one value in every observation run) does not \
                 hold: the read at {} saw {} ({} of its reads)",
                read.global, read.value, read.at, violation.value, violation.count
            ));
        }
    }
    if !inferred.is_empty() {
        return Err(inferred.join("; "));
    }
    if let Some((&id, violation)) = times.fixed_violations.iter().next() {
        let read = fixed_reads.get(id as usize).ok_or_else(|| {
            format!("the program reports fixed-setting check {id}, which was never inserted")
        })?;
        return Err(format!(
            "{FIXED_VIOLATED} `{}` is {} in every run, but the read at {} saw {} ({} of its reads): \
             correct or remove it",
            read.global, read.value, read.at, violation.value, violation.count
        ));
    }
    Ok(instrumented::region_measurements(&times))
}

/// Stage 3: measure the configurations with the instrumented binary.
pub fn measure_configurations(
    store: &Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    instrumented: &Instrumented,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(Event),
) -> Result<CampaignReport, Error> {
    let counting = ::instrumented::counting::counts_instructions(spec);
    let measure = if counting {
        ::instrumented::counting::measure_counted
    } else {
        ::instrumented::measure_instrumented
    };
    measure(
        store,
        settings,
        spec,
        workload,
        &instrumented.binary,
        &instrumented.variant,
        RegionOutput {
            env: REGION_TIMES_ENV.into(),
            read: {
                let fixed_reads = instrumented.fixed_reads.clone();
                std::sync::Arc::new(move |path: &Path| {
                    read_region_times(path, &fixed_reads, counting)
                })
            },
        },
        configurations,
        // A run that contradicts an inferred fixed setting is not reported run by run: the
        // whole round is redone without it, and [`crate::run`] says so once per setting.
        &mut |event| match event {
            Event::Done {
                status: measure::campaign::ConfigurationStatus::Failed { why, .. },
                ..
            } if why.contains(INFERRED_VIOLATED) => {}
            event => on_event(event),
        },
    )
    .map_err(Error::from)
    .and_then(|report| {
        // A contradicted fixed setting invalidates the analysis, not just one run: an inferred
        // one is dropped and the analysis redone ([`crate::run`]), a written one is an error.
        let mut contradictions: Vec<crate::Contradiction> = Vec::new();
        for (config, why) in &report.failed {
            for part in why.split("; ") {
                let Some(at) = part.find(INFERRED_VIOLATED) else {
                    continue;
                };
                let message = part[at..].to_string();
                let global = message.split('`').nth(1).unwrap_or_default().to_string();
                match contradictions.iter_mut().find(|c| c.global == global) {
                    Some(c) => c.configurations += 1,
                    None => contradictions.push(crate::Contradiction {
                        global,
                        configuration: config.clone(),
                        message,
                        configurations: 1,
                    }),
                }
            }
        }
        if !contradictions.is_empty() {
            return Err(Error::InferredFixedContradicted(contradictions));
        }
        match report
            .failed
            .iter()
            .find(|(_, why)| why.contains(FIXED_VIOLATED))
        {
            Some((config, why)) => Err(Error::Invalid(format!(
                "{}: configuration `{config}`: {}",
                spec.path.display(),
                &why[why.find(FIXED_VIOLATED).unwrap_or(0)..]
            ))),
            None => Ok(report),
        }
    })
}

/// The instrumented build against the program as the spec runs it, in every measured
/// configuration: the region timers cost little, but the build they sit in is one
/// whole-program module compiled by knobs, not the program's own build, and it runs some
/// code slower or faster than the native program (gzip's `--rsyncable` path 1.16× at `-1`,
/// its `-9` 1.01×). Each configuration's region times are scaled to its native time.
#[derive(Clone, Debug, Serialize)]
pub struct NativeCorrection {
    /// Per measured configuration: the instrumented build's time (its regions and the time
    /// outside them) and the native program's, by the clock its region times are read by.
    pub pairs: Vec<instrumented::native::Pair>,
    /// Instrumented over native time, the median over the configurations.
    pub ratio: f64,
    /// The native program's runs, stored as `knobs measure` stores them.
    pub measurement: CampaignReport,
}

impl NativeCorrection {
    /// Native over instrumented time of each measured configuration (store text).
    fn factors(&self) -> std::collections::HashMap<&str, f64> {
        self.pairs
            .iter()
            .map(|p| (p.configuration.as_str(), p.native / p.instrumented))
            .collect()
    }
}

impl std::fmt::Display for NativeCorrection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (lo, hi) = self
            .pairs
            .iter()
            .map(|p| p.instrumented / p.native)
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
                (lo.min(r), hi.max(r))
            });
        write!(
            f,
            "native correction: the instrumented build took {:.3}× the native program's time \
             (median over the {} measured configurations, {lo:.3}–{hi:.3}×); each \
             configuration's region times are scaled to its native time",
            self.ratio,
            self.pairs.len()
        )
    }
}

/// Measures the native program (as the spec runs it, stored like `knobs measure`'s runs) in
/// the measured `configurations` and pairs each with the instrumented build's time by the
/// clock its region times are read by. The inner error says why there is no correction: the
/// test clock (a count of the program's work, not the machine's time), a metric that is not
/// time, no native program, a native run that failed.
#[allow(clippy::too_many_arguments)]
pub fn native_correction(
    store: &Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    instrumented: &Instrumented,
    configurations: &[Configuration],
    forced: Option<instrumented::RegionClock>,
    on_event: &mut dyn FnMut(Event),
) -> Result<Result<NativeCorrection, String>, Error> {
    use measure::Metric;
    if ::instrumented::counting::counts_instructions(spec) {
        return Ok(Err(
            "counted instructions: the probes add none to any count, so the counting build's \
             counts are the program's own and there is no native time to scale them by"
                .into(),
        ));
    }
    if settings.test_clock {
        return Ok(Err(
            "the region timers' test clock counts the program's work, not the machine's time"
                .into(),
        ));
    }
    if !matches!(
        spec.measure.metric,
        Metric::Auto | Metric::Wall | Metric::Cpu
    ) {
        return Ok(Err(format!(
            "the spec's metric `{}` is not what the region timers read",
            spec.measure.metric.name()
        )));
    }
    let measurement = match ::instrumented::native::measure_in(
        store,
        settings,
        spec,
        workload,
        configurations,
        on_event,
    )? {
        Ok(measurement) => measurement,
        Err(why) => return Ok(Err(why)),
    };
    let variant = &instrumented.variant;
    let clocks = ::instrumented::region_clocks(store, spec, workload, variant, forced)?;
    let measured =
        ::instrumented::region_times_per_configuration_by(store, spec, workload, variant, &clocks)?;
    let outside =
        ::instrumented::time_outside_for_the_base(store, spec, workload, variant, &clocks, false)?;
    let native = ::instrumented::selection(spec, workload, "");
    let by = |metric| -> Result<std::collections::BTreeMap<String, f64>, Error> {
        Ok(store
            .summaries(&native, metric)?
            .into_iter()
            .filter_map(|s| Some((s.configuration, s.summary?.value)))
            .collect())
    };
    let (wall, cpu) = (by(Metric::Wall)?, by(Metric::Cpu)?);
    let mut pairs = Vec::new();
    for config in configurations {
        let text = spec.space.format_configuration(config);
        let Some(regions) = measured.get(&text) else {
            continue;
        };
        let times = match clocks.of(&text) {
            ::instrumented::RegionClock::Cpu => &cpu,
            ::instrumented::RegionClock::Wall => &wall,
        };
        let Some(&native) = times.get(&text) else {
            continue;
        };
        // The program's own time in the instrumented build: the timers' cost is in no
        // region a model carries, so scaling by it would leave the model short of native.
        let instrumented = regions
            .iter()
            .filter(|(region, _)| ::instrumented::is_program_region(region))
            .map(|(_, seconds)| seconds)
            .sum::<f64>()
            + outside.get(&text).copied().unwrap_or(0.0);
        if native > 0.0 && instrumented > 0.0 {
            pairs.push(::instrumented::native::Pair {
                configuration: text,
                instrumented,
                native,
            });
        }
    }
    let ratios: Vec<f64> = pairs.iter().map(|p| p.instrumented / p.native).collect();
    let Some(ratio) = stats::median(&ratios) else {
        return Ok(Err("no measured configuration has both times".into()));
    };
    Ok(Ok(NativeCorrection {
        pairs,
        ratio,
        measurement,
    }))
}

/// Each region's local model from the table of its options' values over the measured
/// configurations (`mean`: a configuration's time in a region), and what their unmeasured
/// cells leave out.
fn region_models(
    spec: &SystemSpec,
    analysed: &Analysed,
    configs: &[(Configuration, &str)],
    mean: &dyn Fn(&str, &str) -> f64,
) -> Result<(Vec<Region>, Vec<instrumented::failed::Unmeasured>), Error> {
    let program = &analysed.translation.program;
    let valid = ValidConfigurations::new(&spec.space)?;
    let mut regions = Vec::new();
    let mut unmeasured = Vec::new();
    for (i, region) in analysed.plan.regions.iter().enumerate() {
        let id = format!("r{i}");
        let options: Vec<OptionId> = analysed.influence.sets.get(region.options).iter().collect();
        let names: Vec<String> = options
            .iter()
            .map(|o| spec.space.option(*o).name.clone())
            .collect();
        let table = instrumented::influence_of_table(&valid, &options, |digits| {
            let matching: Vec<f64> = configs
                .iter()
                .filter(|(c, _)| {
                    options
                        .iter()
                        .zip(digits)
                        .all(|(o, d)| c.0[o.index()] == *d)
                })
                .map(|(_, text)| mean(text, &id))
                .collect();
            (!matching.is_empty()).then(|| matching.iter().sum::<f64>() / matching.len() as f64)
        })?;
        if !table.unmeasured.is_empty() {
            unmeasured.push(instrumented::failed::Unmeasured {
                region: id.clone(),
                cells: table.unmeasured,
                terms_left_out: table.left_out,
            });
        }
        let terms = table.terms;
        let func = program.func(region.function);
        let file = func
            .file
            .map(|f| program.files[f].clone())
            .unwrap_or_default();
        let lines = region.lines.or(func.lines).unwrap_or((0, 0));
        regions.push(Region {
            id,
            location: Some(SourceSpan {
                file,
                lines: [lines.0, lines.1],
                function: Some(func.name.clone()),
            }),
            options: names,
            terms,
        });
    }
    Ok((regions, unmeasured))
}

/// Stage 4: local models per region and the global model, from the stored region times. A
/// region's cell no successful run measured (its configurations failed) leaves out the terms
/// that rest on it; the model records which (`instrumented::failed`).
pub fn build_model(
    store: &Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    analysed: &Analysed,
    variant: &str,
) -> Result<ModelFile, Error> {
    Ok(build_model_with_clocks(
        store, settings, spec, workload, analysed, variant, None, None,
    )?
    .0)
}

/// [`build_model`], and the clock each configuration's region times were read by
/// (`instrumented::region_clocks`: the spec's metric, `auto` resolved as for the black-box
/// runs; `forced`: this clock for every configuration), each configuration's region times
/// scaled to its native time when there is a `correction`.
#[allow(clippy::too_many_arguments)]
pub fn build_model_with_clocks(
    store: &Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    analysed: &Analysed,
    variant: &str,
    forced: Option<instrumented::RegionClock>,
    correction: Option<&NativeCorrection>,
) -> Result<(ModelFile, instrumented::RegionClocks), Error> {
    let clocks = instrumented::region_clocks(store, spec, workload, variant, forced)?;
    let measured =
        instrumented::region_times_per_configuration_by(store, spec, workload, variant, &clocks)?;
    let mut configs: Vec<(Configuration, &str)> = Vec::new();
    for config in measured.keys() {
        configs.push((spec.space.parse_configuration(config)?, config));
    }
    // Looked up for every region and table cell: one map, not a search of the pairs.
    let factors = correction
        .map(NativeCorrection::factors)
        .unwrap_or_default();
    let scale = |config: &str| factors.get(config).copied().unwrap_or(1.0);
    let mean = |config: &str, region: &str| {
        measured[config].get(region).copied().unwrap_or(0.0) * scale(config)
    };

    let (mut regions, unmeasured) = region_models(spec, analysed, &configs, &mean)?;
    // What the region timers cannot see (the process starting and ending) is time outside
    // every region, by the same clock, so it goes to the base and the model predicts what
    // `knobs measure` measures.
    let outside = instrumented::time_outside_for_the_base(
        store,
        spec,
        workload,
        variant,
        &clocks,
        settings.test_clock,
    )?;
    let base_time = configs
        .iter()
        .map(|(_, c)| mean(c, BASE) + outside.get(*c).copied().unwrap_or(0.0) * scale(c))
        .sum::<f64>()
        / configs.len() as f64;
    let base = InfluenceModel::from_terms([Term::new::<&str>(&[], base_time)]);
    regions.insert(
        0,
        Region {
            id: BASE.into(),
            location: None,
            options: Vec::new(),
            terms: base.clone(),
        },
    );
    // `compose` adds the base itself; the base region is listed for completeness.
    let mut file = ModelFile::compose(InfluenceModel::new(), regions);
    // Alternative group members against a reference member (the intercept stands for it).
    file.express_against_reference(&instrumented::reference_choices(&spec.space)?);
    file.system = Some(spec.name.clone());
    file.metric = Some(clocks.metric_text("region timers"));
    file.provenance
        .insert("approach".into(), "configcrusher".into());
    file.provenance
        .insert("region_clock".into(), clocks.clock.clone().into());
    file.provenance.insert("variant".into(), variant.into());
    if let Some(c) = correction {
        file.provenance
            .insert("native_correction".into(), c.ratio.into());
    }
    file.provenance
        .insert("workload".into(), workload.name.clone().into());
    file.provenance
        .insert("configurations".into(), configs.len().into());
    instrumented::failed::record(&mut file, &unmeasured);
    file.record_training(
        &spec
            .space
            .options()
            .iter()
            .map(|o| o.name.clone())
            .collect::<Vec<_>>(),
        configs.iter().map(|(c, _)| spec.space.values(c)).collect(),
    );
    Ok((file, clocks))
}
