//! The family-based approach on a C program, one function per stage:
//!
//! 1. [`analyse`]: build the program, specialise it to its fixed settings, map functions to
//!    features ([`crate::feature_map`]) and list what the model cannot see
//!    ([`crate::unseen_influences`]);
//! 2. [`probed_functions`]: every defined function but the hot tiny ones no feature owns
//!    (found in a calibration run on the analysis workload);
//! 3. [`instrument`]: those functions with enter/exit calls, linked with the call-tree
//!    runtime;
//! 4. [`measure_simulator`]: the variant simulator's runs ([`variant_simulator_runs`])
//!    through the results store; failed runs are an error unless
//!    `instrumented::Settings::allow_failed`;
//! 5. [`measure_native`] and [`native_times`]: the native program in the same configurations,
//!    the yardstick of the overhead correction (§5.1);
//! 6. [`run_times`]: each successful run's calling contexts from the store, fitted to its
//!    native time;
//! 7. [`build_model`]: the model file, per function, with what failed runs left unmeasured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use analysis::ProgramDominance;
use instrumented::Reporter;
use instrumented::failed::Unmeasured;
use measure::campaign::{CampaignReport, RegionOutput};
use measure::store::{RegionMeasurement, Store};
use measure::{SystemSpec, Workload};
use model::{ModelFile, Region, SourceSpan};
use space::{Configuration, GroupKind, Literal, OptionId, ValidConfigurations};

use crate::blocks::FeatureBlock;
use crate::model::{Context, RunTimes};
use crate::{Error, FeatureMap, UnseenInfluence};

/// The store's region for the time the instrumentation itself took (§5.1), kept so that
/// the stored regions add up to the run and the model can leave it out.
const OVERHEAD: &str = "overhead";

/// The program, and what the analysis of it (specialised to its fixed settings) says.
pub struct Analysed {
    pub built: instrumented::Built,
    pub features: FeatureMap,
    /// The blocks of code the variant simulator marks as features' (their own nodes of the
    /// call tree).
    pub blocks: Vec<FeatureBlock>,
    /// Options no function is mapped to.
    pub unmapped_options: Vec<String>,
    pub unseen: Vec<UnseenInfluence>,
    /// The fixed settings assumed, as `global = value`.
    pub fixed_settings: Vec<String>,
    /// What a user should know about the analysis.
    pub notes: Vec<String>,
}

impl Analysed {
    /// The program as built (the functions the model names and instruments).
    pub fn program(&self) -> &ir::Program {
        &self.built.translation.program
    }

    /// The feature map by function name, and the feature blocks' by their labels.
    pub fn feature_names(&self) -> BTreeMap<String, OptionId> {
        let program = self.program();
        self.features
            .by_function
            .iter()
            .map(|(f, o)| (program.func(*f).name.clone(), *o))
            .chain(self.blocks.iter().map(|b| (b.label.clone(), b.option)))
            .collect()
    }
}

/// Stage 1: build and analyse the program. The analysis reads it specialised to its fixed
/// settings (the spec's and those observed on the measured workload itself, as the runs are
/// not checked against them): code no run of the workload reaches neither maps functions nor
/// hides options.
pub fn analyse(
    spec: &SystemSpec,
    settings: &instrumented::Settings,
    workload: &Workload,
    derive: bool,
) -> Result<Analysed, Error> {
    let built = instrumented::build(spec, settings, "the family-based approach")?;
    spec.prepare_workload(workload)?;
    let (fixed, inference) =
        instrumented::infer::fixed_settings(spec, settings, &built, workload, &[])?;
    let program = &built.translation.program;
    let specialised = (!fixed.is_empty()).then(|| analysis::specialise(program, &fixed));
    let fixed_settings = fixed
        .iter()
        .map(|f| format!("{} = {}", program.globals[f.global].name, f.value))
        .collect();
    let mut notes = Vec::new();
    if let Some(failed) = inference.and_then(|i| i.failed) {
        notes.push(format!("no fixed settings were inferred: {failed}"));
    }
    let analysed = specialised.as_ref().map_or(program, |s| &s.program);
    let dominance = ProgramDominance::new(analysed);
    let influence = analysis::analyse(analysed, &dominance, &built.sources);
    let mut features = crate::feature_map(
        analysed,
        &spec.space,
        &spec.option_functions,
        derive.then_some(&influence),
    )?;
    notes.extend(features.notes.iter().cloned());
    let blocks = crate::blocks::feature_blocks(program, &spec.space)?;
    features
        .mapped
        .extend(blocks.iter().map(|b| crate::MappedFunction {
            function: b.label.clone(),
            feature: spec.space.option(b.option).name.clone(),
            source: crate::FeatureSource::Annotation,
            why: format!(
                "a block of `{}` the variant simulator marks ({}:{}-{})",
                program.func(b.function).name,
                b.file,
                b.lines.0,
                b.lines.1
            ),
        }));
    let mapped: Vec<OptionId> = features
        .by_function
        .values()
        .copied()
        .chain(blocks.iter().map(|b| b.option))
        .collect();
    let unmapped_options = spec
        .space
        .ids()
        .filter(|o| !mapped.contains(o))
        .map(|o| spec.space.option(o).name.clone())
        .collect();
    let traced = crate::blocks::inside(
        analysed,
        &crate::blocks::feature_blocks(analysed, &spec.space)?,
    );
    let mut unseen = crate::unseen_influences(
        analysed,
        &dominance,
        &influence,
        (&features, &traced),
        &spec.space,
    );
    unseen.extend(crate::blocks::untraced(analysed));
    notes.extend(unseen_note(&unseen));
    Ok(Analysed {
        built,
        features,
        blocks,
        unmapped_options,
        unseen,
        fixed_settings,
        notes,
    })
}

/// The options whose decisions the model cannot see, in one note.
fn unseen_note(unseen: &[UnseenInfluence]) -> Option<String> {
    if unseen.is_empty() {
        return None;
    }
    let mut options: Vec<&str> = unseen
        .iter()
        .flat_map(|u| u.options.iter().map(String::as_str))
        .collect();
    options.sort_unstable();
    options.dedup();
    Some(format!(
        "{} decisions on {} change time in ways one run with every feature cannot see (listed under `unseen`): the model may be wrong for them",
        unseen.len(),
        options.join(", ")
    ))
}

/// The functions that get enter/exit calls, and the hot tiny ones left without.
pub struct Probed {
    pub functions: Vec<ir::FuncId>,
    pub unprobed: Vec<String>,
}

/// How hot and tiny a function must be to go without enter/exit calls.
#[derive(Clone, Copy, Debug)]
pub struct ProbeThresholds {
    pub min_entries: u64,
    pub min_ns: f64,
}

/// Stage 2: every defined function, but (with `thresholds`) the hot tiny ones no feature
/// owns: a calibration run (every feature on, the analysis workload) finds them, and their
/// time goes to their callers.
pub fn probed_functions(
    spec: &SystemSpec,
    settings: &instrumented::Settings,
    analysed: &Analysed,
    first: &Configuration,
    thresholds: Option<ProbeThresholds>,
) -> Result<Probed, Error> {
    let program = analysed.program();
    let mut functions: Vec<ir::FuncId> = program
        .functions
        .iter_enumerated()
        .filter(|(f, func)| {
            !func.is_declaration && func.entry().is_some() && !crate::blocks::is_marker(program, *f)
        })
        .map(|(f, _)| f)
        .collect();
    let Some(thresholds) = thresholds else {
        return Ok(Probed {
            functions,
            unprobed: Vec::new(),
        });
    };
    // Timed, also when the model is counted: the probes' cost is time, not instructions.
    let (binary, _) = instrument(
        spec,
        settings,
        analysed,
        &functions,
        "family-calibration",
        false,
    )?;
    let analysis = spec.analysis_workload()?;
    spec.prepare_workload(analysis)?;
    let tree = calibration_run(spec, &binary, first, analysis, &settings.work_dir)?;
    let corrected = tree.corrected_self_seconds();
    let mut per_function: BTreeMap<u32, (u64, f64)> = BTreeMap::new();
    for (k, node) in tree.nodes.iter().enumerate() {
        // Ids past the functions' are feature blocks.
        if let Some(f) = node.function.filter(|f| (*f as usize) < functions.len()) {
            let e = per_function.entry(f).or_default();
            e.0 += node.entries;
            e.1 += corrected[k];
        }
    }
    let hot: Vec<ir::FuncId> = per_function
        .iter()
        .filter(|(f, (entries, seconds))| {
            let func = functions[**f as usize];
            *entries >= thresholds.min_entries
                && seconds / *entries as f64 * 1e9 < thresholds.min_ns
                && !analysed.features.by_function.contains_key(&func)
                && program.func(func).name != "main"
        })
        .map(|(f, _)| functions[*f as usize])
        .collect();
    functions.retain(|f| !hot.contains(f));
    Ok(Probed {
        functions,
        unprobed: hot.iter().map(|f| program.func(*f).name.clone()).collect(),
    })
}

/// One run of the calibration build: its call tree.
fn calibration_run(
    spec: &SystemSpec,
    binary: &Path,
    configuration: &Configuration,
    workload: &Workload,
    dir: &Path,
) -> Result<runtime::call_tree::CallTree, Error> {
    let out = dir.join("calibration.tree");
    let mut invocation = spec.invocation_of(binary.to_path_buf(), configuration, workload)?;
    let _ = std::fs::remove_file(&out);
    invocation.env.push((
        runtime::call_tree::ENV_VAR.into(),
        out.display().to_string(),
    ));
    let result = measure::runner::run(&invocation);
    if !result.outcome.is_ok() {
        return Err(Error::Invalid(format!(
            "the calibration run (`{}`) {}: {}",
            spec.space.format_configuration(configuration),
            result.outcome.describe(),
            result.stderr_tail.lines().last().unwrap_or("")
        )));
    }
    Ok(runtime::call_tree::CallTree::read(&out)?)
}

/// Stage 3: `functions` with enter/exit calls (ids in their order), and so are the feature
/// blocks (ids after them, in order), linked with the call-tree runtime (its
/// test-clock build when the settings ask for it); the binary and its store variant. With
/// `counting` (`metric = "instructions"`), the program counts its own IR instructions and the
/// call tree's clock is that count (`runtime::call_tree::build_counting`): the model is in
/// instructions, in the unit of `instrumented::counting::plain_counting_build`'s truth.
pub fn instrument(
    spec: &SystemSpec,
    settings: &instrumented::Settings,
    analysed: &Analysed,
    functions: &[ir::FuncId],
    name: &str,
    counting: bool,
) -> Result<(PathBuf, String), Error> {
    let built = &analysed.built;
    let program = analysed.program();
    let mut probes: Vec<llvm::RegionProbe> = functions
        .iter()
        .enumerate()
        .filter_map(|(id, f)| instrumented::function_probe(program, *f, id as u32))
        .collect();
    probes.extend(
        analysed
            .blocks
            .iter()
            .enumerate()
            .map(|(k, b)| llvm::RegionProbe {
                id: (functions.len() + k) as u32,
                start: b.start_points(),
                end: b.end_points(),
            }),
    );
    let name = if counting {
        format!("{name}-counted")
    } else {
        name.to_string()
    };
    let bitcode = settings.work_dir.join(format!("program.{name}.bc"));
    let positions = &built.translation.positions;
    let runtime = if counting {
        llvm::instrument_counting(&built.ssa, program, positions, &probes, &[], &bitcode)?;
        runtime::call_tree::build_counting(&settings.clang, &settings.work_dir.join("runtime"))?
    } else {
        llvm::instrument(&built.ssa, program, positions, &probes, &bitcode)?;
        settings.call_tree_runtime()?
    };
    Ok(instrumented::link(
        spec,
        settings,
        &bitcode,
        runtime,
        runtime::call_tree::LINK_FLAGS,
        &name,
        true,
    )?)
}

/// Stage 4: the variant simulator's runs with the instrumented `binary` (its functions by
/// `names`, in probe order), each run's call tree stored under `variant`. Failed runs are
/// an error naming them, unless `settings.allow_failed`; then the second value names them.
#[allow(clippy::too_many_arguments)]
pub fn measure_simulator(
    store: &Store,
    settings: &instrumented::Settings,
    spec: &SystemSpec,
    workload: &Workload,
    (binary, variant): (&Path, &str),
    names: Vec<String>,
    configurations: &[Configuration],
    reporter: &mut dyn Reporter,
) -> Result<(CampaignReport, Option<String>), Error> {
    let names = Arc::new(names);
    let read = move |path: &Path| read_call_tree(path, &names);
    let measure = if instrumented::counting::counts_instructions(spec) {
        instrumented::counting::measure_counted
    } else {
        instrumented::measure_instrumented
    };
    let measured = measure(
        store,
        settings,
        spec,
        workload,
        binary,
        variant,
        RegionOutput {
            env: runtime::call_tree::ENV_VAR.into(),
            read: Arc::new(read),
        },
        configurations,
        &mut |e| reporter.measurement(e),
    )?;
    let note = instrumented::failed::check(&measured, settings.allow_failed)?;
    Ok((measured, note))
}

/// A call tree as the store keeps it: one region per calling context (`main>print>scan`)
/// with its self time less the instrumentation's share, the root as the base, and what the
/// instrumentation took (its share of the visits, and the calibration at exit) as its own
/// region.
fn read_call_tree(path: &Path, names: &[String]) -> Result<Vec<RegionMeasurement>, String> {
    let tree = runtime::call_tree::CallTree::read(path).map_err(|e| e.to_string())?;
    if tree.counted && tree.other_threads > 0 {
        // The count clock is the traced thread's count; the truth counts the whole program.
        return Err(format!(
            "the counting build counts the main thread only, and {} enter/exit events came from other \
             threads in this run: their instructions are in no calling context",
            tree.other_threads
        ));
    }
    let corrected = tree.corrected_self_seconds();
    let corrected_cpu = tree.corrected_cpu_seconds();
    let mut out = Vec::with_capacity(tree.nodes.len() + 1);
    let mut overhead = tree.calibration;
    // The visits and the calibration run on a CPU: their cost by either clock, and the CPU
    // clock's reads besides.
    let mut overhead_cpu = tree.calibration + tree.cpu_reads as f64 * tree.cpu_read_ns * 1e-9;
    for (k, node) in tree.nodes.iter().enumerate() {
        overhead += node.self_seconds - corrected[k];
        if let Some(cpu) = &corrected_cpu {
            overhead_cpu += node.cpu_seconds.unwrap_or(0.0) - cpu[k];
        }
        let region = if k == 0 {
            instrumented::BASE.to_string()
        } else {
            tree.path(k)
                .iter()
                .map(|f| {
                    names
                        .get(*f as usize)
                        .cloned()
                        .ok_or_else(|| format!("function id {f} was not instrumented"))
                })
                .collect::<Result<Vec<_>, _>>()?
                .join(">")
        };
        out.push(RegionMeasurement {
            region,
            seconds: corrected[k],
            entries: node.entries,
            cpu_seconds: corrected_cpu.as_ref().map(|cpu| cpu[k]),
        });
    }
    out.push(RegionMeasurement {
        region: OVERHEAD.into(),
        seconds: overhead,
        entries: 0,
        cpu_seconds: corrected_cpu.map(|_| overhead_cpu),
    });
    Ok(out)
}

/// Stage 5a: the native program in the same configurations, the yardstick of the overhead
/// correction (§5.1); without it (the second value says why) the runtime's calibration alone
/// takes out the instrumentation's cost. Not with the test clock: the call trees then hold
/// the program's counted work and the calibrated visit costs taken out exactly, while the
/// native program's time is the machine's (it would bring its speed and load into the
/// model). Not when the spec's program is not built: it is the approach's yardstick, not its
/// input.
pub fn measure_native(
    store: &Store,
    settings: &instrumented::Settings,
    spec: &SystemSpec,
    workload: &Workload,
    configurations: &[Configuration],
    reporter: &mut dyn Reporter,
) -> Result<(Option<CampaignReport>, Option<String>), Error> {
    if instrumented::counting::counts_instructions(spec) {
        return Ok((
            None,
            Some(
                "counted instructions: the probes add none to any count, so the variant \
                 simulator's counts are the program's own and there is no native time to \
                 correct them by"
                    .into(),
            ),
        ));
    }
    if settings.test_clock {
        return Ok((
            None,
            Some(
                "the call trees are on the test clock: the native program is not run, and the \
                 runtime's calibration alone takes out the instrumentation's cost"
                    .into(),
            ),
        ));
    }
    if let Err(why) = spec.program() {
        return Ok((
            None,
            Some(format!(
                "no native program to correct by ({why}; build it as the spec's `[run] \
                 program` to correct for the instrumentation's cost): the runtime's \
                 calibration alone takes it out, which underestimates it in programs with many \
                 calls"
            )),
        ));
    }
    let measured = settings
        .campaign(spec, workload)
        .run(store, configurations, &mut |e| reporter.measurement(e))?;
    Ok((Some(measured), None))
}

/// Stage 5b: the native time of each configuration by the clock its call tree is read by;
/// none when the native program failed anywhere (then the second value says so).
pub fn native_times(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    clocks: &instrumented::RegionClocks,
    native: &CampaignReport,
) -> Result<(BTreeMap<String, f64>, Option<String>), Error> {
    if let Some((config, why)) = native.failed.first() {
        return Ok((
            BTreeMap::new(),
            Some(format!(
                "the native program did not run (`{config}`: {why}): the instrumentation's cost is taken out by the runtime's calibration alone, which underestimates it in programs with many calls"
            )),
        ));
    }
    let selection = instrumented::selection(spec, workload, "");
    let by = |metric| -> Result<BTreeMap<String, f64>, Error> {
        Ok(store
            .summaries(&selection, metric)?
            .into_iter()
            .filter_map(|s| Some((s.configuration, s.summary?.value)))
            .collect())
    };
    let (wall, cpu) = (by(measure::Metric::Wall)?, by(measure::Metric::Cpu)?);
    let times = wall
        .into_iter()
        .map(|(config, w)| {
            let t = match clocks.of(&config) {
                instrumented::RegionClock::Cpu => cpu.get(&config).copied().unwrap_or(w),
                instrumented::RegionClock::Wall => w,
            };
            (config, t)
        })
        .collect();
    Ok((times, None))
}

/// How far one run's contexts were corrected to the native program's time.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NativeFit {
    pub configuration: String,
    pub native: f64,
    pub removed: f64,
}

/// Stage 6: each of `configurations`' calling contexts from the store (read by `clocks`),
/// with the time outside the call tree in the base, fitted to its native time where there
/// is one.
pub fn run_times(
    store: &Store,
    settings: &instrumented::Settings,
    spec: &SystemSpec,
    workload: &Workload,
    (variant, clocks): (&str, &instrumented::RegionClocks),
    configurations: &[Configuration],
    native_times: &BTreeMap<String, f64>,
) -> Result<(Vec<RunTimes>, Vec<NativeFit>), Error> {
    let measured =
        instrumented::region_times_per_configuration_by(store, spec, workload, variant, clocks)?;
    let mut entries: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (config, _, r) in store.region_times(&instrumented::selection(spec, workload, variant))? {
        let e = entries.entry((config, r.region)).or_default();
        *e = (*e).max(r.entries);
    }
    // What the call tree cannot see (the process starting and ending) goes to the base, so
    // the model predicts what `knobs measure` measures.
    let outside = instrumented::time_outside_for_the_base(
        store,
        spec,
        workload,
        variant,
        clocks,
        settings.test_clock,
    )?;
    let mut runs = Vec::new();
    let mut fits = Vec::new();
    for c in configurations {
        let text = spec.space.format_configuration(c);
        let mut run = RunTimes {
            configuration: c.clone(),
            contexts: Vec::new(),
            base: outside.get(&text).copied().unwrap_or(0.0),
        };
        for (region, seconds) in measured.get(&text).cloned().unwrap_or_default() {
            match region.as_str() {
                instrumented::BASE => run.base += seconds,
                OVERHEAD => {}
                path => run.contexts.push(Context {
                    path: path.split('>').map(String::from).collect(),
                    seconds,
                    entries: entries.get(&(text.clone(), region)).copied().unwrap_or(0),
                }),
            }
        }
        if let Some(&native) = native_times.get(&text) {
            let removed = crate::model::fit_to_native(&mut run, native);
            fits.push(NativeFit {
                configuration: text.clone(),
                native,
                removed,
            });
        }
        runs.push(run);
    }
    Ok((runs, fits))
}

/// The variant simulator's runs that succeeded, and what the failed ones leave unmeasured:
/// each alternative member or numeric value only failed runs took (no term of it can be
/// measured). An error when no run succeeded.
pub fn successful_runs(
    spec: &SystemSpec,
    configurations: &[Configuration],
    measured: &CampaignReport,
) -> Result<(Vec<Configuration>, Option<Unmeasured>), Error> {
    let failed: Vec<&str> = measured.failed.iter().map(|(c, _)| c.as_str()).collect();
    let (ok, bad): (Vec<Configuration>, Vec<Configuration>) = configurations
        .iter()
        .cloned()
        .partition(|c| !failed.contains(&spec.space.format_configuration(c).as_str()));
    if bad.is_empty() {
        return Ok((ok, None));
    }
    if ok.is_empty() {
        return Err(Error::Invalid(format!(
            "no run of the variant simulator succeeded ({}): there is nothing to build a model from",
            instrumented::failed::listed(&measured.failed)
        )));
    }
    // The options a run chooses a value of: alternative members and numeric options (a
    // binary option outside an alternative is on in every run).
    let alternatives: Vec<OptionId> = spec
        .space
        .groups()
        .iter()
        .filter(|g| g.kind == GroupKind::Alternative)
        .flat_map(|g| g.members.iter().copied())
        .collect();
    let mut left_out: Vec<String> = Vec::new();
    for c in &bad {
        for (o, &v) in spec.space.ids().zip(&c.0) {
            let option = spec.space.option(o);
            let chosen = !option.is_binary() || (alternatives.contains(&o) && v == 1);
            if !chosen || ok.iter().any(|r| r.0[o.index()] == v) {
                continue;
            }
            let term = match option.is_binary() {
                true => format!("every term of {}", option.name),
                false => format!("every term of {}={}", option.name, option.format_value(v)),
            };
            if !left_out.contains(&term) {
                left_out.push(term);
            }
        }
    }
    Ok((
        ok,
        Some(Unmeasured {
            region: "the variant simulator".into(),
            cells: bad
                .iter()
                .map(|c| {
                    space::shown_configuration(&spec.space.format_configuration(c)).to_string()
                })
                .collect(),
            terms_left_out: left_out,
        }),
    ))
}

/// Stage 7: the model file, per function (with its source location), from the runs, and
/// what failed runs left unmeasured in its provenance; the model's notes.
pub fn build_model(
    spec: &SystemSpec,
    analysed: &Analysed,
    runs: &[RunTimes],
    corrections: &BTreeMap<String, Vec<model::Term>>,
    unmeasured: Option<Unmeasured>,
    clocks: &instrumented::RegionClocks,
) -> Result<(ModelFile, Vec<String>), Error> {
    let valid = ValidConfigurations::new(&spec.space)?;
    let program = analysed.program();
    let mut built = crate::model::build(&valid, &analysed.feature_names(), runs);
    for (function, terms) in corrections {
        let own = built.functions.remove(function).unwrap_or_default();
        let correction = model::InfluenceModel::from_terms(terms.iter().cloned());
        built.functions.insert(
            function.clone(),
            model::InfluenceModel::sum([&own, &correction]),
        );
    }
    let mut regions = vec![Region {
        id: instrumented::BASE.into(),
        location: None,
        options: Vec::new(),
        terms: built.base.clone(),
    }];
    for (function, terms) in &built.functions {
        let mut options = terms.options();
        options.dedup();
        let block = analysed.blocks.iter().find(|b| &b.label == function);
        regions.push(Region {
            id: function.clone(),
            location: match block {
                Some(b) => Some(block_location(program, b)),
                None => location(program, function),
            },
            options: options.into_iter().map(String::from).collect(),
            terms: terms.clone(),
        });
    }
    let mut file = ModelFile::compose(model::InfluenceModel::new(), regions);
    file.express_against_reference(&instrumented::reference_choices(&spec.space)?);
    file.metric = Some(clocks.metric_text("the call trees of the variant simulator"));
    file.provenance
        .insert("region_clock".into(), clocks.clock.clone().into());
    instrumented::failed::record(&mut file, unmeasured.as_slice());
    Ok((file, built.notes))
}

/// Where a feature block is in the sources: its markers' lines, in its function.
fn block_location(program: &ir::Program, block: &FeatureBlock) -> SourceSpan {
    SourceSpan {
        file: block.file.clone(),
        lines: [block.lines.0, block.lines.1],
        function: Some(program.func(block.function).name.clone()),
    }
}

/// Where a function is in the sources.
fn location(program: &ir::Program, function: &str) -> Option<SourceSpan> {
    program.function_named(function).map(|f| {
        let func = program.func(f);
        let lines = func.lines.unwrap_or((0, 0));
        SourceSpan {
            file: func
                .file
                .map(|file| program.files[file].clone())
                .unwrap_or_default(),
            lines: [lines.0, lines.1],
            function: Some(function.to_string()),
        }
    })
}

/// The variant simulator's configurations: every feature selected, and the members of each
/// set of mutually exclusive alternatives (alternative groups, numeric options' values)
/// varied one set at a time (§3.3): a first run with the first member of every set the
/// constraints allow, then per set one run per other member with the first run's choices
/// of the other sets, so each run's difference from the first is one member's (varying the
/// sets together would leave the model unable to tell the sets' effects apart). Each run
/// otherwise selects as much as the constraints allow; a member no such run takes gets a
/// run of its own.
pub fn variant_simulator_runs(valid: &ValidConfigurations) -> Vec<Configuration> {
    let space = valid.space();
    let mut choices: Vec<Vec<Literal>> = Vec::new();
    for g in space.groups() {
        if g.kind == GroupKind::Alternative {
            choices.push(g.members.iter().map(|m| (*m, 1)).collect());
        }
    }
    for o in space.ids() {
        if !space.option(o).is_binary() {
            choices.push(
                (0..space.option(o).arity() as u32)
                    .map(|v| (o, v))
                    .collect(),
            );
        }
    }
    let fullest = |literals: &[Literal]| {
        let mut bdd = valid.bdd().clone();
        for l in literals {
            bdd = bdd.and(&valid.literal(*l));
        }
        valid.extreme_in(&bdd, true)
    };
    // Adds to `literals` each set's first member in `order` the constraints allow.
    let complete = |literals: &mut Vec<Literal>,
                    skip: Option<usize>,
                    order: &dyn Fn(usize) -> Vec<Literal>| {
        for k in (0..choices.len()).filter(|k| Some(*k) != skip) {
            for l in order(k) {
                literals.push(l);
                if valid.allows(literals) {
                    break;
                }
                literals.pop();
            }
        }
    };
    let mut first: Vec<Literal> = Vec::new();
    complete(&mut first, None, &|k| choices[k].clone());
    let Some(first_run) = fullest(&first) else {
        return Vec::new();
    };
    let mut runs: Vec<Configuration> = vec![first_run.clone()];
    // The first run's choice of set `k` first, then its other members.
    let first_choice = |k: usize| -> Vec<Literal> {
        let mut order: Vec<Literal> = choices[k]
            .iter()
            .copied()
            .filter(|l| first_run.0[l.0.index()] == l.1)
            .collect();
        order.extend(choices[k].iter().copied());
        order
    };
    for (k, set) in choices.iter().enumerate() {
        for l in set {
            if first_run.0[l.0.index()] == l.1 {
                continue;
            }
            let mut literals = vec![*l];
            complete(&mut literals, Some(k), &first_choice);
            if valid.allows(&literals)
                && let Some(c) = fullest(&literals)
                && !runs.contains(&c)
            {
                runs.push(c);
            }
        }
    }
    for l in choices.iter().flatten() {
        if !runs.iter().any(|r| r.0[l.0.index()] == l.1)
            && let Some(c) = fullest(&[*l])
        {
            runs.push(c);
        }
    }
    runs
}
