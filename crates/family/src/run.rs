//! Family-based measurement as one call: [`run`] builds the program, maps functions to
//! features, instruments every function with the call-tree runtime, runs the variant
//! simulator (every feature on, plus one run per member of each set of alternatives) through
//! the results store, and writes the model.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use analysis::ProgramDominance;
use instrumented::{ModelOutput, Reporter, Session};
use measure::campaign::{Campaign, CampaignReport, RegionOutput};
use measure::store::RegionMeasurement;
use model::{ModelFile, Region, SourceSpan};
use serde::Serialize;
use space::{Configuration, GroupKind, Literal, OptionId, ValidConfigurations};

use crate::model::{Context, RunTimes};
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
    /// `None` on the test clock (`Settings::test_clock`), where it is not run.
    pub native_measurement: Option<CampaignReport>,
    /// Per run: the native median and the seconds of instrumentation cost taken out beyond
    /// the runtime's own calibration.
    pub overhead_correction: Vec<NativeFit>,
    /// The clock the call trees were read by, and why (`instrumented::region_clocks`, the
    /// rule ConfigCrusher's region times are read by; trees without CPU times, e.g.
    /// `KNOBS_REGION_CPU_US=off`, by the wall clock, and `why` says so).
    pub call_tree_clock: Option<instrumented::RegionClocks>,
    #[serde(flatten)]
    pub output: Option<ModelOutput>,
    pub notes: Vec<String>,
}

/// One run of the calibration build: its call tree.
fn calibration_run(
    spec: &measure::SystemSpec,
    binary: &std::path::Path,
    configuration: &Configuration,
    workload: &measure::Workload,
    dir: &std::path::Path,
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

/// How far one run's contexts were corrected to the native program's time.
#[derive(Clone, Debug, Serialize)]
pub struct NativeFit {
    pub configuration: String,
    pub native: f64,
    pub removed: f64,
}

/// The store's region for the time the instrumentation itself took (§5.1), kept so that
/// the stored regions add up to the run and the model can leave it out.
const OVERHEAD: &str = "overhead";

/// Runs the family-based approach.
pub fn run(
    session: &Session,
    options: &Options,
    reporter: &mut dyn Reporter,
) -> Result<Report, Error> {
    let spec = &session.spec;
    let settings = &session.settings;
    let workload = session.workload();
    let valid = ValidConfigurations::new(&spec.space)?;
    let mut report = Report {
        system: spec.name.clone(),
        workload: workload.name.clone(),
        total_configurations: u128::try_from(&valid.count()).unwrap_or(u128::MAX),
        features: Vec::new(),
        unmapped_options: Vec::new(),
        configurations: Vec::new(),
        instrumented_functions: 0,
        unprobed: Vec::new(),
        unseen: Vec::new(),
        fixed_settings: Vec::new(),
        measurement: None,
        native_measurement: None,
        overhead_correction: Vec::new(),
        call_tree_clock: None,
        output: None,
        notes: Vec::new(),
    };

    reporter.note("building and analysing the program");
    let built = instrumented::build(spec, settings, "the family-based approach")?;
    // The analysis reads the program specialised to its fixed settings (the spec's and those
    // observed on the measured workload itself, as the runs are not checked against them):
    // code no run of the workload reaches neither maps functions nor hides options. The runs
    // are of the program itself.
    spec.prepare_workload(workload)?;
    let (fixed, inference) =
        instrumented::infer::fixed_settings(spec, settings, &built, workload, &[])?;
    let specialised =
        (!fixed.is_empty()).then(|| analysis::specialise(&built.translation.program, &fixed));
    let program = &built.translation.program;
    let analysed = specialised.as_ref().map_or(program, |s| &s.program);
    let dominance = ProgramDominance::new(analysed);
    let influence = analysis::analyse(analysed, &dominance, &built.sources);
    if !fixed.is_empty() {
        report.fixed_settings = fixed
            .iter()
            .map(|f| format!("{} = {}", program.globals[f.global].name, f.value))
            .collect();
    }
    if let Some(failed) = inference.and_then(|i| i.failed) {
        report
            .notes
            .push(format!("no fixed settings were inferred: {failed}"));
    }
    let features = crate::feature_map(
        analysed,
        &spec.space,
        &spec.option_functions,
        options.derive.then_some(&influence),
    )?;
    report.features = features.mapped.clone();
    report.notes.extend(features.notes.iter().cloned());
    let mapped: Vec<OptionId> = features.by_function.values().copied().collect();
    report.unmapped_options = spec
        .space
        .ids()
        .filter(|o| !mapped.contains(o))
        .map(|o| spec.space.option(o).name.clone())
        .collect();
    report.unseen =
        crate::unseen_influences(analysed, &dominance, &influence, &features, &spec.space);
    if !report.unseen.is_empty() {
        let mut options: Vec<&str> = report
            .unseen
            .iter()
            .flat_map(|u| u.options.iter().map(String::as_str))
            .collect();
        options.sort_unstable();
        options.dedup();
        report.notes.push(format!(
            "{} decisions on {} change time in ways one run with every feature cannot see (listed under `unseen`): the model may be wrong for them",
            report.unseen.len(),
            options.join(", ")
        ));
    }

    // Every defined function gets enter/exit calls.
    let configurations = variant_simulator_runs(&valid);
    if configurations.is_empty() {
        return Err(Error::Invalid(
            "the space has no valid configuration".into(),
        ));
    }
    report.configurations = configurations
        .iter()
        .map(|c| spec.space.format_configuration(c))
        .collect();
    // The call-tree runtime: its test-clock build when the settings ask for it (tests).
    let library = settings.call_tree_runtime()?;
    let build = |functions: &[ir::FuncId], name: &str| -> Result<(PathBuf, String), Error> {
        let probes: Vec<llvm::RegionProbe> = functions
            .iter()
            .enumerate()
            .filter_map(|(id, f)| instrumented::function_probe(program, *f, id as u32))
            .collect();
        let bitcode = settings.work_dir.join(format!("program.{name}.bc"));
        llvm::instrument(
            &built.ssa,
            program,
            &built.translation.positions,
            &probes,
            &bitcode,
        )?;
        Ok(instrumented::link(
            spec,
            settings,
            &bitcode,
            library.clone(),
            runtime::call_tree::LINK_FLAGS,
            name,
            true,
        )?)
    };
    // Every defined function gets enter/exit calls, but for hot tiny ones that are no
    // feature's: a calibration run (every feature on, the analysis workload) finds them, and
    // their time goes to their callers.
    let mut functions: Vec<ir::FuncId> = program
        .functions
        .iter_enumerated()
        .filter(|(_, func)| !func.is_declaration && func.entry().is_some())
        .map(|(f, _)| f)
        .collect();
    if !options.all_probes {
        reporter.note("calibrating: which functions are too hot and tiny to time");
        let (binary, _) = build(&functions, "family-calibration")?;
        let analysis = spec.analysis_workload()?;
        spec.prepare_workload(analysis)?;
        let tree = calibration_run(
            spec,
            &binary,
            &configurations[0],
            analysis,
            &settings.work_dir,
        )?;
        let corrected = tree.corrected_self_seconds();
        let mut per_function: BTreeMap<u32, (u64, f64)> = BTreeMap::new();
        for (k, node) in tree.nodes.iter().enumerate() {
            if let Some(f) = node.function {
                let e = per_function.entry(f).or_default();
                e.0 += node.entries;
                e.1 += corrected[k];
            }
        }
        let hot: Vec<ir::FuncId> = per_function
            .iter()
            .filter(|(f, (entries, seconds))| {
                let func = functions[**f as usize];
                *entries >= options.probe_min_entries
                    && seconds / *entries as f64 * 1e9 < options.probe_min_ns
                    && !features.by_function.contains_key(&func)
                    && program.func(func).name != "main"
            })
            .map(|(f, _)| functions[*f as usize])
            .collect();
        report.unprobed = hot.iter().map(|f| program.func(*f).name.clone()).collect();
        functions.retain(|f| !hot.contains(f));
    }
    let names: Vec<String> = functions
        .iter()
        .map(|f| program.func(*f).name.clone())
        .collect();
    report.instrumented_functions = names.len();
    let (binary, variant) = build(&functions, "family")?;
    reporter.note(&format!(
        "running the variant simulator: {} configuration(s)",
        configurations.len()
    ));
    let store = session.store()?;
    let names = Arc::new(names);
    let read = {
        let names = names.clone();
        move |path: &std::path::Path| read_call_tree(path, &names)
    };
    let measured = instrumented::measure_instrumented(
        &store,
        settings,
        spec,
        workload,
        &binary,
        &variant,
        RegionOutput {
            env: runtime::call_tree::ENV_VAR.into(),
            read: Arc::new(read),
        },
        &configurations,
        &mut |e| reporter.measurement(e),
    )?;
    if let Some((configuration, why)) = measured.failed.first() {
        return Err(Error::Invalid(format!(
            "the variant simulator failed in `{configuration}`: {why}"
        )));
    }
    report.measurement = Some(measured);

    // The native program in the same configurations: the yardstick of the overhead
    // correction (§5.1). Not with the test clock: the call trees then hold the program's
    // counted work and the calibrated visit costs taken out exactly, while the native
    // program's time is the machine's (it would bring its speed and load into the model).
    let native = if settings.test_clock {
        report.notes.push(
            "the call trees are on the test clock: the native program is not run, and the \
             runtime's calibration alone takes out the instrumentation's cost"
                .into(),
        );
        None
    } else {
        Some(
            Campaign {
                retry_failed: settings.retry_failed,
                backend: settings.backend.clone(),
                ..Campaign::new(spec, workload)
            }
            .run(&store, &configurations, &mut |e| reporter.measurement(e))?,
        )
    };
    // The clock the call trees are read by, as ConfigCrusher's region times (the runtime
    // records both); the native times, the time outside the trees and the model by it.
    let clocks =
        instrumented::region_clocks(&store, spec, workload, &variant, options.region_clock)?;
    reporter.note(&clocks.to_string());
    let native_times: BTreeMap<String, f64> = match &native {
        None => BTreeMap::new(),
        Some(native) if native.failed.is_empty() => {
            let native_selection = instrumented::selection(spec, workload, "");
            let by = |metric| -> Result<BTreeMap<String, f64>, Error> {
                Ok(store
                    .summaries(&native_selection, metric)?
                    .into_iter()
                    .filter_map(|s| Some((s.configuration, s.summary?.value)))
                    .collect())
            };
            let (wall, cpu) = (by(measure::Metric::Wall)?, by(measure::Metric::Cpu)?);
            wall.into_iter()
                .map(|(config, w)| {
                    let t = match clocks.of(&config) {
                        instrumented::RegionClock::Cpu => cpu.get(&config).copied().unwrap_or(w),
                        instrumented::RegionClock::Wall => w,
                    };
                    (config, t)
                })
                .collect()
        }
        Some(native) => {
            report.notes.push(format!(
                "the native program did not run (`{}`: {}): the instrumentation's cost is taken out by the runtime's calibration alone, which underestimates it in programs with many calls",
                native.failed[0].0, native.failed[0].1
            ));
            BTreeMap::new()
        }
    };
    report.native_measurement = native;

    let measured =
        instrumented::region_times_per_configuration_by(&store, spec, workload, &variant, &clocks)?;
    let mut entries: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (config, _, r) in store.region_times(&instrumented::selection(spec, workload, &variant))? {
        let e = entries.entry((config, r.region)).or_default();
        *e = (*e).max(r.entries);
    }
    // What the call tree cannot see (the process starting and ending) goes to the base, so
    // the model predicts what `knobs measure` measures.
    let outside = instrumented::time_outside_for_the_base(
        &store,
        spec,
        workload,
        &variant,
        &clocks,
        settings.test_clock,
    )?;
    let mut runs = Vec::new();
    for c in &configurations {
        let text = spec.space.format_configuration(c);
        let regions = measured.get(&text).cloned().unwrap_or_default();
        let mut run = RunTimes {
            configuration: c.clone(),
            contexts: Vec::new(),
            base: outside.get(&text).copied().unwrap_or(0.0),
        };
        for (region, seconds) in regions {
            match region.as_str() {
                instrumented::BASE => run.base += seconds,
                OVERHEAD => {}
                path => run.contexts.push(Context {
                    path: path.split('>').map(String::from).collect(),
                    seconds,
                    entries: entries
                        .get(&(text.clone(), region.clone()))
                        .copied()
                        .unwrap_or(0),
                }),
            }
        }
        if let Some(&native) = native_times.get(&text) {
            let removed = crate::model::fit_to_native(&mut run, native);
            report.overhead_correction.push(NativeFit {
                configuration: text.clone(),
                native,
                removed,
            });
        }
        runs.push(run);
    }
    let feature_of: BTreeMap<String, OptionId> = features
        .by_function
        .iter()
        .map(|(f, o)| (program.func(*f).name.clone(), *o))
        .collect();
    let built_model = crate::model::build(&valid, &feature_of, &runs);
    report.notes.extend(built_model.notes.iter().cloned());
    let mut regions = vec![Region {
        id: instrumented::BASE.into(),
        location: None,
        options: Vec::new(),
        terms: built_model.base.clone(),
    }];
    for (function, terms) in &built_model.functions {
        let location = program.function_named(function).map(|f| {
            let func = program.func(f);
            let lines = func.lines.unwrap_or((0, 0));
            SourceSpan {
                file: func
                    .file
                    .map(|file| program.files[file].clone())
                    .unwrap_or_default(),
                lines: [lines.0, lines.1],
                function: Some(function.clone()),
            }
        });
        let mut options = terms.options();
        options.dedup();
        regions.push(Region {
            id: function.clone(),
            location,
            options: options.into_iter().map(String::from).collect(),
            terms: terms.clone(),
        });
    }
    let mut file = ModelFile::compose(model::InfluenceModel::new(), regions);
    file.express_against_reference(&instrumented::reference_choices(&spec.space)?);
    file.metric = Some(clocks.metric_text("the call trees of the variant simulator"));
    file.provenance
        .insert("region_clock".into(), clocks.clock.clone().into());
    report.call_tree_clock = Some(clocks);
    report.output = Some(instrumented::save_model(
        &mut file,
        session,
        "family",
        &variant,
        &configurations,
        options.model_path.clone(),
    )?);
    Ok(report)
}

/// A call tree as the store keeps it: one region per calling context (`main>print>scan`)
/// with its self time less the instrumentation's share, the root as the base, and what the
/// instrumentation took (its share of the visits, and the calibration at exit) as its own
/// region.
fn read_call_tree(
    path: &std::path::Path,
    names: &[String],
) -> Result<Vec<RegionMeasurement>, String> {
    let tree = runtime::call_tree::CallTree::read(path).map_err(|e| e.to_string())?;
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

/// The variant simulator's configurations: every feature selected, and the members of each
/// set of mutually exclusive alternatives (alternative groups, numeric options' values)
/// spread over as few runs as the largest set needs (§3.3), each run otherwise selecting as
/// much as the constraints allow; a member no such run takes gets a run of its own.
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
    let largest = choices.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let fullest = |literals: &[Literal]| {
        let mut bdd = valid.bdd().clone();
        for l in literals {
            bdd = bdd.and(&valid.literal(*l));
        }
        valid.extreme_in(&bdd, true)
    };
    let mut runs: Vec<Configuration> = Vec::new();
    for i in 0..largest {
        let mut literals: Vec<Literal> = Vec::new();
        for c in &choices {
            literals.push(c[i % c.len()]);
            if !valid.allows(&literals) {
                literals.pop();
            }
        }
        if let Some(c) = fullest(&literals)
            && !runs.contains(&c)
        {
            runs.push(c);
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

#[cfg(test)]
mod tests {
    use super::*;
    use space::ConfigSpace;

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
