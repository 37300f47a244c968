//! `instrumented`: building, linking and measuring an instrumented program, the part every
//! white-box approach shares.
//!
//! [`build`] compiles the spec's C sources with clang-19 (or loads its bitcode), translates
//! them to `ir` and resolves where the program keeps its options; [`link`] links instrumented
//! bitcode with a runtime library into a binary whose hash names the store *variant* of its
//! measurements (a changed program is measured afresh, a rerun resumes); [`measure_instrumented`]
//! runs it on configurations through `measure`'s campaign, storing each run's region times;
//! [`region_times_per_configuration`] reads them back. [`Session`] bundles what an approach's `run` needs
//! (spec, workload, store, tools) and [`Reporter`] receives its progress. [`failed`] is what
//! every approach does with configurations whose runs failed: an error naming them, or (with
//! [`Settings::allow_failed`]) a model without the terms that rest on them, which it names.
//!
//! Architecture invariant: no approach's algorithms live here (regions, partitions, models
//! belong to the approach crates); no LLVM types (through `llvm`'s API only).

pub mod failed;
pub mod infer;
pub mod native;
mod table;

/// The counting build (`metric = "instructions"`).
pub mod counting;

use std::path::{Path, PathBuf};
use std::time::Instant;

use analysis::{FieldRef, OptionSource, ResolvedSources, SourceKind};
use ir::ArgSelector;
use llvm::{CompileOptions, Translation};
use measure::campaign::{Backend, Campaign, CampaignReport, Event, RegionOutput};
use measure::store::{RegionMeasurement, Store};
use measure::{SystemSpec, Workload};
use sha2::{Digest, Sha256};
use space::{Configuration, OptionId};

pub use table::{TableInfluence, influence_of_table, levels, reference_choices};

/// Everything that can go wrong; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Llvm(#[from] llvm::Error),
    #[error(transparent)]
    Analysis(#[from] analysis::Error),
    #[error(transparent)]
    Runtime(#[from] runtime::Error),
    #[error(transparent)]
    Measure(#[from] measure::Error),
    #[error(transparent)]
    Space(#[from] space::Error),
    #[error(transparent)]
    Model(#[from] model::Error),
}

/// The tools and the directory builds use.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where bitcode, the runtime and the instrumented binary go.
    pub work_dir: PathBuf,
    pub clang: PathBuf,
    pub llvm_link: PathBuf,
    /// Measure configurations whose earlier runs failed again (default: keep the failure).
    pub retry_failed: bool,
    /// For tests: link the region timers' test-clock build (`runtime::build_test_clock`)
    /// instead of the real one (default false). Time is then the program's counted work
    /// (its calls of `__knobs_test_work(ns)`), not the machine's clock, so a model does not
    /// depend on the machine's speed or load; the program must call that function.
    pub test_clock: bool,
    /// Where the measured configurations run (default: here). On Slurm the instrumented
    /// build in `work_dir` must be on a file system the nodes see; the approaches' other
    /// runs (taint tracking, calibration) are made here.
    pub backend: Backend,
    /// Build the model although some measured configurations failed (crashed, timed out):
    /// the terms that rest on their cells are left out and named ([`failed`]). Default: a
    /// failed configuration is an error naming it.
    pub allow_failed: bool,
}

impl Settings {
    /// A campaign of the program as the spec runs it, run where these settings say and
    /// retrying failed configurations as they say.
    pub fn campaign<'a>(&self, spec: &'a SystemSpec, workload: &'a Workload) -> Campaign<'a> {
        Campaign {
            retry_failed: self.retry_failed,
            backend: self.backend.clone(),
            ..Campaign::new(spec, workload)
        }
    }

    pub fn new(work_dir: PathBuf) -> Settings {
        Settings {
            // Absolute: the builds run from the spec's directory, not from knobs' own.
            work_dir: std::path::absolute(&work_dir).unwrap_or(work_dir),
            clang: "clang-19".into(),
            llvm_link: "llvm-link-19".into(),
            retry_failed: false,
            test_clock: false,
            backend: Backend::Local,
            allow_failed: false,
        }
    }

    /// Builds (or reuses) the region-timer runtime in `work_dir/runtime`: the test-clock
    /// build when [`Settings::test_clock`] is set, else the real one.
    pub fn region_timer_runtime(&self) -> Result<PathBuf, Error> {
        let dir = self.work_dir.join("runtime");
        Ok(if self.test_clock {
            runtime::build_test_clock(&self.clang, &dir)?
        } else {
            runtime::build(&self.clang, &dir)?
        })
    }

    /// Builds (or reuses) the sampling profiler (Comprex's method-level measurement) in
    /// `work_dir/runtime`: the test-clock build (`runtime::profiler::build_test_clock`, whose
    /// time passes only when the program calls `__knobs_test_sample(periods)`) when
    /// [`Settings::test_clock`] is set, else the real one.
    pub fn profiler_runtime(&self) -> Result<PathBuf, Error> {
        let dir = self.work_dir.join("runtime");
        Ok(if self.test_clock {
            runtime::profiler::build_test_clock(&self.clang, &dir)?
        } else {
            runtime::profiler::build(&self.clang, &dir)?
        })
    }

    /// Builds (or reuses) the call-tree runtime (family-based measurement) in
    /// `work_dir/runtime`: the test-clock build (`runtime::call_tree::build_test_clock`) when
    /// [`Settings::test_clock`] is set, else the real one.
    pub fn call_tree_runtime(&self) -> Result<PathBuf, Error> {
        let dir = self.work_dir.join("runtime");
        Ok(if self.test_clock {
            runtime::call_tree::build_test_clock(&self.clang, &dir)?
        } else {
            runtime::call_tree::build(&self.clang, &dir)?
        })
    }
}

/// What an approach's `run` works on: the system spec, the workload it measures, where the
/// results store is, and the tools and directory its builds use.
pub struct Session {
    pub spec: SystemSpec,
    /// The workload measured (a name in the spec).
    pub workload: String,
    pub store_path: PathBuf,
    pub settings: Settings,
}

impl Session {
    /// Loads the spec and checks the workload; `store` defaults to `knobs.db` beside the spec,
    /// `work_dir` to `.knobs/APPROACH` beside it.
    pub fn open(
        spec_path: &Path,
        workload: Option<&str>,
        store: Option<PathBuf>,
        work_dir: Option<PathBuf>,
        approach: &str,
    ) -> Result<Session, Error> {
        let spec_file = SystemSpec::load(spec_path)?;
        spec_file.check_cwd()?;
        let workload = spec_file.workload(workload)?.name.clone();
        Ok(Session {
            store_path: store.unwrap_or_else(|| measure::store::default_path(&spec_file.path)),
            settings: Settings::new(
                work_dir.unwrap_or_else(|| spec_file.dir.join(format!(".knobs/{approach}"))),
            ),
            spec: spec_file,
            workload,
        })
    }

    /// The measured workload.
    pub fn workload(&self) -> &Workload {
        self.spec
            .workload(Some(&self.workload))
            .expect("checked when the session was opened")
    }

    /// Opens (creates) the results store.
    pub fn store(&self) -> Result<Store, Error> {
        Ok(Store::open(&self.store_path)?)
    }
}

/// Receives an approach's progress while it runs: lines worth showing a person (stages,
/// notes) and measurement events (for a progress bar). Results are in the report `run`
/// returns, never only here.
pub trait Reporter {
    /// A line of progress or a note.
    fn note(&mut self, line: &str);
    /// A measurement event.
    fn measurement(&mut self, event: Event<'_>) {
        let _ = event;
    }
}

/// Where an approach left its model and the measurements it was built from.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ModelOutput {
    pub model_path: PathBuf,
    pub store: PathBuf,
    /// The store variant of the instrumented build's runs (`knobs results show --variant`).
    pub variant: String,
}

/// A reporter that drops everything (for tests and library use).
pub struct Silent;

impl Reporter for Silent {
    fn note(&mut self, _: &str) {}
}

/// The program, built and translated, with its option sources resolved.
pub struct Built {
    pub translation: Translation,
    /// The SSA bitcode instrumentation passes rewrite.
    pub ssa: PathBuf,
    pub sources: ResolvedSources,
    pub seconds: f64,
}

/// Builds the program as the spec's `[build]` says and resolves its option sources.
pub fn build(spec: &SystemSpec, settings: &Settings, approach: &str) -> Result<Built, Error> {
    spec.check_no_build_options(approach)?;
    let build = spec.build.as_ref().ok_or_else(|| {
        Error::Invalid(format!(
            "{}: no [build] section: {approach} needs the program's C sources or bitcode",
            spec.path.display()
        ))
    })?;
    std::fs::create_dir_all(&settings.work_dir).map_err(io(&settings.work_dir))?;
    let started = Instant::now();
    let bitcode = match &build.bitcode {
        Some(bc) => spec.dir.join(bc),
        None => {
            let options = CompileOptions {
                clang: settings.clang.clone(),
                llvm_link: settings.llvm_link.clone(),
                include_dirs: build.include.iter().map(|d| spec.dir.join(d)).collect(),
                defines: build
                    .defines
                    .iter()
                    .map(|d| match d.split_once('=') {
                        Some((n, v)) => (n.to_string(), Some(v.to_string())),
                        None => (d.clone(), None),
                    })
                    .collect(),
                flags: build.flags.clone(),
                ..CompileOptions::default()
            };
            let sources: Vec<PathBuf> = build.sources.iter().map(|s| spec.dir.join(s)).collect();
            llvm::compile_c(&sources, &options, &settings.work_dir.join("bitcode"))?
        }
    };
    let ssa = settings.work_dir.join("program.ssa.bc");
    let translation = llvm::translate_bitcode(&bitcode, Some(&ssa))?;
    let program = &translation.program;
    let mut sources = ResolvedSources::from_annotations(program, &spec.space)?;
    sources.extend(ResolvedSources::resolve(program, &option_sources(spec))?);
    if sources.sources.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: no option sources: give options a `source` (a global, a struct field or a function) or annotate globals with knobs:option=NAME",
            spec.path.display()
        )));
    }
    Ok(Built {
        translation,
        ssa,
        sources,
        seconds: started.elapsed().as_secs_f64(),
    })
}

pub fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Invalid(format!("{}: {e}", path.display()))
}

/// The spec's option sources in the analysis' terms.
fn option_sources(spec: &SystemSpec) -> Vec<OptionSource> {
    let mut out = Vec::new();
    for (i, sources) in spec.option_sources.iter().enumerate() {
        for s in sources {
            let kind = if let Some(name) = &s.global {
                SourceKind::Global { name: name.clone() }
            } else if let Some(structure) = &s.structure {
                let field = match s.field.as_ref().and_then(|f| f.as_integer()) {
                    Some(index) => FieldRef::Index(index as u32),
                    None => FieldRef::Name(
                        s.field
                            .as_ref()
                            .and_then(|f| f.as_str())
                            .unwrap_or_default()
                            .to_string(),
                    ),
                };
                SourceKind::StructField {
                    structure: structure.clone(),
                    field,
                }
            } else {
                SourceKind::FunctionReturn {
                    function: s.function.clone().unwrap_or_default(),
                    selector: s.arg.as_ref().map(|value| ArgSelector {
                        index: s.arg_index.unwrap_or(0),
                        value: value.clone(),
                    }),
                }
            };
            out.push(OptionSource {
                option: OptionId(i as u32),
                kind,
            });
        }
    }
    out
}

/// The program built for dynamic taint tracking: what Comprex explores with and SPLat reads
/// its orders from.
pub struct TaintBuild {
    pub built: Built,
    pub stats: llvm::TaintStats,
    pub binary: PathBuf,
}

/// Builds the program, instruments it for dynamic taint tracking with every option of the
/// space as a label, and links it with the taint runtime (`approach` names the binary).
pub fn taint_build(
    spec: &SystemSpec,
    settings: &Settings,
    approach: &str,
) -> Result<TaintBuild, Error> {
    let built = build(spec, settings, approach)?;
    let names: Vec<String> = spec.space.names().iter().map(|n| n.to_string()).collect();
    let bitcode = settings.work_dir.join("program.taint.bc");
    let stats = llvm::instrument_taint(
        &built.ssa,
        &built.translation.program,
        &built.translation.positions,
        &built.sources.by_index(),
        &names,
        &bitcode,
    )?;
    let library =
        runtime::taint_library::build(&settings.clang, &settings.work_dir.join("runtime"))?;
    let suffix = format!("{}-taint", approach.to_lowercase());
    let (binary, _) = link(spec, settings, &bitcode, library, &[], &suffix, false)?;
    Ok(TaintBuild {
        built,
        stats,
        binary,
    })
}

/// Runs the taint-instrumented `binary` once in a configuration on `workload` and returns
/// the taint-run record it wrote to `out` (JSON, `docs/comprex-records.md`); a failed run or
/// a missing record is an error saying why. `one_way` names the file of branch sites that
/// open no control entry (`runtime::taint_library::ONE_WAY_VAR`).
pub fn taint_run(
    spec: &SystemSpec,
    binary: &Path,
    config: &Configuration,
    workload: &Workload,
    out: &Path,
    one_way: Option<&Path>,
) -> Result<String, String> {
    let mut invocation = spec
        .invocation_of(binary.to_path_buf(), config, workload)
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(out);
    invocation.env.push((
        runtime::taint_library::ENV_VAR.into(),
        out.display().to_string(),
    ));
    if let Some(list) = one_way {
        invocation.env.push((
            runtime::taint_library::ONE_WAY_VAR.into(),
            list.display().to_string(),
        ));
    }
    let result = measure::runner::run(&invocation);
    if !result.outcome.is_ok() {
        let last = result.stderr_tail.lines().last().unwrap_or("");
        return Err(format!(
            "the taint-instrumented program {}{}",
            result.outcome.describe(),
            if last.is_empty() {
                String::new()
            } else {
                format!(": {last}")
            }
        ));
    }
    std::fs::read_to_string(out).map_err(|e| format!("no taint records ({}: {e})", out.display()))
}

/// Enter/exit calls around a whole function: enter before its first instruction, exit
/// before each return (`None` for a declaration).
pub fn function_probe(program: &ir::Program, f: ir::FuncId, id: u32) -> Option<llvm::RegionProbe> {
    let func = program.func(f);
    let entry = func.entry()?;
    let end = program
        .instructions_of(f)
        .filter(|&i| matches!(program.inst(i).kind, ir::InstKind::Return { .. }))
        .map(ir::ProgramPoint::Before)
        .collect();
    Some(llvm::RegionProbe {
        id,
        start: vec![ir::ProgramPoint::Before(program.block(entry).insts[0])],
        end,
    })
}

/// Where and how an approach writes its model: the system, the provenance every approach
/// records (approach, workload, variant, the configurations it measured, so an evaluation
/// can leave them out), and the file (`path`, or `NAME.APPROACH.json` beside the spec).
pub fn save_model(
    file: &mut model::ModelFile,
    session: &Session,
    approach: &str,
    variant: &str,
    configurations: &[Configuration],
    path: Option<PathBuf>,
) -> Result<ModelOutput, Error> {
    let spec = &session.spec;
    file.system = Some(spec.name.clone());
    file.provenance.insert("approach".into(), approach.into());
    if !variant.is_empty() {
        file.provenance.insert("variant".into(), variant.into());
    }
    file.provenance
        .insert("workload".into(), session.workload.clone().into());
    file.provenance
        .insert("configurations".into(), configurations.len().into());
    let names: Vec<String> = spec.space.names().iter().map(|n| n.to_string()).collect();
    file.record_training(
        &names,
        configurations
            .iter()
            .map(|c| spec.space.values(c))
            .collect(),
    );
    let model_path =
        path.unwrap_or_else(|| spec.dir.join(format!("{}.{approach}.json", spec.name)));
    file.save(&model_path)?;
    Ok(ModelOutput {
        model_path,
        store: session.store_path.clone(),
        variant: variant.to_string(),
    })
}

/// Links instrumented bitcode with a runtime library into a binary (optimised as the
/// native build is, unless it only records taint: `llvm::link_instrumented`) and names the
/// store variant of its measurements after the binary's hash.
pub fn link(
    spec: &SystemSpec,
    settings: &Settings,
    bitcode: &Path,
    runtime: PathBuf,
    runtime_flags: &[&str],
    approach: &str,
    optimise: bool,
) -> Result<(PathBuf, String), Error> {
    let binary = settings.work_dir.join(format!("{}.{approach}", spec.name));
    let mut flags: Vec<String> = runtime_flags.iter().map(|f| f.to_string()).collect();
    if let Some(b) = &spec.build {
        flags.extend(b.link.iter().cloned());
    }
    // Linked under another name and renamed into place: runs of an earlier build (Slurm
    // tasks of a resumed round) may be starting the binary while it is written.
    let partial =
        settings
            .work_dir
            .join(format!(".{}.{approach}.{}", spec.name, std::process::id()));
    let linked = llvm::link_instrumented(
        &settings.clang,
        bitcode,
        &[runtime],
        &flags,
        &partial,
        optimise,
    );
    if let Err(e) = linked {
        let _ = std::fs::remove_file(&partial);
        return Err(e.into());
    }
    let bytes = std::fs::read(&partial).map_err(io(&partial))?;
    std::fs::rename(&partial, &binary).map_err(io(&binary))?;
    let digest = Sha256::digest(&bytes);
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    Ok((binary, format!("{approach}:{hash}")))
}

/// Measures configurations with an instrumented binary, storing each run's region times
/// (read from the file named by `env` with `read`) under the variant.
#[allow(clippy::too_many_arguments)]
pub fn measure_instrumented(
    store: &Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    binary: &Path,
    variant: &str,
    output: RegionOutput,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(Event),
) -> Result<CampaignReport, Error> {
    let campaign = Campaign {
        variant: variant.to_string(),
        program: Some(binary.to_path_buf()),
        regions: Some(output),
        ..settings.campaign(spec, workload)
    };
    Ok(campaign.run(store, configurations, on_event)?)
}

/// The region times of a runtime file in the store's form: `base` and `r<id>` per region.
pub fn region_measurements(times: &runtime::RegionTimes) -> Vec<RegionMeasurement> {
    let mut out = vec![RegionMeasurement {
        region: BASE.into(),
        seconds: times.base,
        entries: 1,
        cpu_seconds: times.cpu.map(|c| c.base),
    }];
    out.extend(times.regions.iter().map(|(id, t)| RegionMeasurement {
        region: format!("r{id}"),
        seconds: t.self_seconds,
        entries: t.entries,
        cpu_seconds: t.cpu_seconds,
    }));
    if times.startup > 0.0 {
        out.push(RegionMeasurement {
            region: STARTUP.into(),
            seconds: times.startup,
            entries: 0,
            cpu_seconds: times.cpu.map(|c| c.startup),
        });
    }
    if times.probes > 0.0 || times.cpu.is_some_and(|c| c.reads > 0) {
        out.push(RegionMeasurement {
            region: PROBES.into(),
            seconds: times.probes,
            entries: 0,
            // The probes run on a CPU: their wall time, and the CPU clock's reads.
            cpu_seconds: times
                .cpu
                .map(|c| times.probes + c.reads as f64 * c.read_ns * 1e-9),
        });
    }
    out
}

/// The clock a model reads a configuration's region times by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionClock {
    /// The wall clock: what the region timers always recorded; right for programs that
    /// sleep, wait or run threads in parallel.
    Wall,
    /// The threads' CPU clocks (user + system): a CPU-bound program's time without the
    /// time it waited for a CPU another program held.
    Cpu,
}

impl RegionClock {
    pub fn name(self) -> &'static str {
        match self {
            RegionClock::Wall => "wall",
            RegionClock::Cpu => "cpu",
        }
    }

    /// A region's time in one run by this clock; `None` by the CPU clock when the runtime
    /// did not read it.
    pub fn seconds(self, r: &RegionMeasurement) -> Option<f64> {
        match self {
            RegionClock::Wall => Some(r.seconds),
            RegionClock::Cpu => r.cpu_seconds,
        }
    }
}

/// Which clock each configuration's region times are read by, chosen as the spec's metric
/// resolves ([`region_clocks`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RegionClocks {
    /// `wall`, `cpu`, or `mixed` (CPU time, but some configurations' runs lack it).
    pub clock: String,
    /// Why, in a sentence (what `auto` saw).
    pub why: String,
    /// Configurations (store text) read by the CPU clock; all others by the wall clock.
    #[serde(skip)]
    pub cpu: std::collections::BTreeSet<String>,
}

impl RegionClocks {
    /// Every configuration by the wall clock.
    pub fn wall(why: &str) -> RegionClocks {
        RegionClocks {
            clock: "wall".into(),
            why: why.into(),
            cpu: Default::default(),
        }
    }

    pub fn of(&self, configuration: &str) -> RegionClock {
        if self.cpu.contains(configuration) {
            RegionClock::Cpu
        } else {
            RegionClock::Wall
        }
    }

    /// The model's metric text: the clock and where it was read.
    pub fn metric_text(&self, source: &str) -> String {
        match self.clock.as_str() {
            "cpu" => format!("CPU time (s, user + system), from {source}"),
            "wall" => format!("wall time (s), from {source}"),
            "instructions" => format!(
                "instructions (the program's own LLVM IR instructions, counted), from {source}"
            ),
            _ => format!(
                "CPU time (s), wall time for configurations measured without CPU times, from \
                 {source}"
            ),
        }
    }
}

impl std::fmt::Display for RegionClocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "region times read by the {} clock: {}",
            self.clock, self.why
        )
    }
}

/// `auto`'s one clock for a model: the CPU clock when most of the `configurations` whose
/// deciding runs were seen kept one CPU busy (`busy` of them, by `measure::store::auto_metric`),
/// else the wall clock. One clock for every configuration: a region's terms compare its times
/// across configurations, which one configuration read by the other clock would skew (a
/// CPU-bound configuration whose runs all met a busy machine can look like one that waits).
pub fn auto_clock(busy: usize, configurations: usize) -> RegionClock {
    if 2 * busy > configurations {
        RegionClock::Cpu
    } else {
        RegionClock::Wall
    }
}

/// The clock the region timers' times of a variant are read by, per configuration: as the
/// spec's metric says — `wall` (and any metric but `cpu`) the wall clock, `cpu` the CPU
/// clock, `auto` the CPU clock when most configurations are CPU-bound by the rule the
/// black-box runs are read by (`measure::store::auto_metric` of a configuration's most
/// CPU-bound run of this variant: it kept one CPU busy, or waited for one, nearly all its
/// wall time), else the wall clock, for every configuration. A configuration whose runs
/// lack CPU times (an older runtime, `KNOBS_REGION_CPU_US=off`) is read by the wall clock,
/// and `why` says so. `forced`: this clock for every configuration instead (a user's
/// choice, e.g. to compare the two clocks on the same runs).
pub fn region_clocks(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
    forced: Option<RegionClock>,
) -> Result<RegionClocks, Error> {
    use measure::Metric;
    let selection = selection(spec, workload, variant);
    let mut without_cpu: std::collections::BTreeSet<String> = Default::default();
    let mut configurations: std::collections::BTreeSet<String> = Default::default();
    for (config, _, r) in store.region_times(&selection)? {
        if r.cpu_seconds.is_none() && is_program_region(&r.region) {
            without_cpu.insert(config.clone());
        }
        configurations.insert(config);
    }
    let (wanted, mut why) = match (forced, spec.measure.metric) {
        (Some(clock), Metric::Instructions) => {
            return Err(Error::Invalid(format!(
                "--region-clock {}: the spec's metric is `instructions`, which the counting \
                 build counts; it reads no clock",
                clock.name()
            )));
        }
        (None, Metric::Instructions) => {
            return Ok(RegionClocks {
                clock: "instructions".into(),
                why: "instructions (the spec's metric): the counting build's own count".into(),
                cpu: Default::default(),
            });
        }
        (Some(RegionClock::Wall), _) => {
            return Ok(RegionClocks::wall("wall (as asked)"));
        }
        (Some(RegionClock::Cpu), _) => (configurations.clone(), "cpu (as asked)".to_string()),
        (None, Metric::Cpu) => (configurations.clone(), "cpu (as the spec says)".to_string()),
        (None, Metric::Auto) => {
            let deciding = store.deciding_runs(&selection)?;
            let busy = deciding
                .values()
                .filter(|run| run.auto_metric() == Metric::Cpu)
                .count();
            let (_, why) = store.resolve_metric(&selection, Metric::Auto)?;
            if auto_clock(busy, deciding.len()) == RegionClock::Cpu {
                (
                    configurations.clone(),
                    format!(
                        "cpu (auto: {busy} of {} measured configurations kept one CPU busy)",
                        deciding.len()
                    ),
                )
            } else {
                return Ok(RegionClocks::wall(&format!(
                    "wall (auto: {busy} of {} measured configurations kept one CPU busy; {why})",
                    deciding.len()
                )));
            }
        }
        (None, m) => {
            return Ok(RegionClocks::wall(&format!(
                "wall (the spec's metric is {})",
                m.name()
            )));
        }
    };
    let cpu: std::collections::BTreeSet<String> =
        wanted.difference(&without_cpu).cloned().collect();
    let lacking = wanted.intersection(&without_cpu).count();
    if lacking > 0 {
        why.push_str(&format!(
            "; {lacking} configurations by the wall clock: their runs have no CPU times"
        ));
    }
    let clock = if cpu.is_empty() {
        "wall"
    } else if cpu.len() == configurations.len() {
        "cpu"
    } else {
        "mixed"
    };
    Ok(RegionClocks {
        clock: clock.into(),
        why,
        cpu,
    })
}

/// The region id of time spent outside every region.
pub const BASE: &str = "base";

/// The pseudo-region of the region timers' own cost, which the runtime takes out of the
/// regions (`probes` in docs/region-times.md): stored so that it is not mistaken for time
/// outside the runtime, and in no model.
pub const PROBES: &str = "probes";

/// The pseudo-region of the runtime's own start (`startup` in docs/region-times.md): not the
/// program's time, so it is taken out of the time outside the runtime, and in no model.
pub const STARTUP: &str = "startup";

/// Whether a stored region holds the program's own time: not [`PROBES`] or [`STARTUP`], the
/// runtime's cost, which no model carries.
pub fn is_program_region(region: &str) -> bool {
    region != PROBES && region != STARTUP
}

/// The store's selection of one spec's runs of a workload in a variant (`""`: the program
/// as the spec runs it).
pub fn selection(spec: &SystemSpec, workload: &Workload, variant: &str) -> measure::Selection {
    measure::Selection {
        system: Some(spec.name.clone()),
        spec_hash: Some(spec.hash.clone()),
        workload: Some(workload.name.clone()),
        variant: variant.to_string(),
        commit: String::new(),
    }
}

/// Per configuration (in the store's text form) of a variant's measurements, each region's
/// time: its mean over the configuration's fastest half of runs (by the time their regions
/// add up to; at least one run), 0 in runs that did not enter the region. Read like every
/// measurement ([`measure::Summary::value`]): noise only ever slows a run down, so the runs
/// that saw least of it are the ones to read; whole runs, so that the regions still add up
/// to what those runs took.
pub fn region_times_per_configuration(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
) -> Result<std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>, Error> {
    region_times_per_configuration_by(store, spec, workload, variant, &RegionClocks::wall(""))
}

/// [`region_times_per_configuration`], each configuration's times read by its clock in
/// `clocks`.
pub fn region_times_per_configuration_by(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
    clocks: &RegionClocks,
) -> Result<std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>, Error> {
    use std::collections::BTreeMap;
    let times = store.region_times(&selection(spec, workload, variant))?;
    // Per configuration, per run (in the store's order), each region's seconds.
    let mut runs: BTreeMap<&str, BTreeMap<i64, BTreeMap<&str, f64>>> = BTreeMap::new();
    for (config, run, r) in &times {
        let regions = runs.entry(config).or_default().entry(*run).or_default();
        if let Some(s) = clocks.of(config).seconds(r) {
            *regions.entry(&r.region).or_default() += s;
        }
    }
    let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for (config, by_run) in runs {
        let mut ranked: Vec<(f64, &BTreeMap<&str, f64>)> = by_run
            .values()
            .map(|regions| (regions.values().sum::<f64>(), regions))
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        ranked.truncate((by_run.len() / 2).max(1));
        let kept = ranked.len() as f64;
        let mut means: BTreeMap<String, f64> = BTreeMap::new();
        for (_, regions) in &ranked {
            for (region, s) in regions.iter() {
                *means.entry(region.to_string()).or_default() += s / kept;
            }
        }
        if !means.is_empty() {
            out.insert(config.to_string(), means);
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid(format!(
            "no region times measured: every configuration failed (see `knobs results show --variant {variant}`)"
        )));
    }
    Ok(out)
}

/// Per configuration (in the store's text form), the mean over a variant's fastest half of
/// runs ([`stats::fastest_half_mean`]) of the measured time (`metric`: wall, or user + system for cpu) minus the time the runtime
/// charged to the base and the regions and its probes' own cost: what the runtime cannot
/// see, the process starting before its constructor and ending after its destructor (xz:
/// 6–10 ms per run, a quarter of a 30 ms run). It is time outside every region, so models
/// add it to the base and predict what is measured without the probes. Callers pass only a
/// metric the runtime's own clock measures.
pub fn time_outside_the_runtime(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
    metric: measure::Metric,
) -> Result<std::collections::BTreeMap<String, f64>, Error> {
    time_outside(
        store,
        &selection(spec, workload, variant),
        |_, r| Some(r.seconds),
        |run| match metric {
            measure::Metric::Cpu => run.user + run.system_time,
            _ => run.wall,
        },
    )
}

/// [`time_outside_the_runtime`] of the region timers, each configuration by its clock in
/// `clocks`: wall time less the wall clock's total, or user + system time less the CPU
/// clocks' total (the probes' and the clock reads' own cost included in both).
pub fn time_outside_the_region_timers(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
    clocks: &RegionClocks,
) -> Result<std::collections::BTreeMap<String, f64>, Error> {
    time_outside(
        store,
        &selection(spec, workload, variant),
        |config, r| clocks.of(config).seconds(r),
        |run| match clocks.of(&run.configuration) {
            RegionClock::Cpu => run.user + run.system_time,
            RegionClock::Wall => run.wall,
        },
    )
}

/// What a model adds to its base: [`time_outside_the_region_timers`] when the spec measures
/// time. Nothing when the runs' region times are the test clock's counted work (the runner's
/// real time minus them would bring the machine's speed and load back into the model) or the
/// metric is not a time.
pub fn time_outside_for_the_base(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
    clocks: &RegionClocks,
    test_clock: bool,
) -> Result<std::collections::BTreeMap<String, f64>, Error> {
    let time_metric = matches!(
        spec.measure.metric,
        measure::Metric::Wall | measure::Metric::Cpu | measure::Metric::Auto
    );
    if test_clock || !time_metric {
        return Ok(Default::default());
    }
    time_outside_the_region_timers(store, spec, workload, variant, clocks)
}

/// Per configuration, the fastest-half mean over the selected runs of `measured` less what
/// the runtime `charged` (its regions, base and probes) in that run.
fn time_outside(
    store: &Store,
    selection: &measure::Selection,
    charged: impl Fn(&str, &RegionMeasurement) -> Option<f64>,
    measured: impl Fn(&measure::store::StoredRun) -> f64,
) -> Result<std::collections::BTreeMap<String, f64>, Error> {
    use std::collections::BTreeMap;
    let mut runtime_total: BTreeMap<i64, f64> = BTreeMap::new();
    for (config, run, r) in store.region_times(selection)? {
        *runtime_total.entry(run).or_default() += charged(&config, &r).unwrap_or(0.0);
    }
    let mut per_config: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in store.runs(selection)? {
        if let (true, Some(total)) = (run.is_ok(), runtime_total.get(&run.id)) {
            per_config
                .entry(run.configuration.clone())
                .or_default()
                .push((measured(&run) - total).max(0.0));
        }
    }
    Ok(per_config
        .into_iter()
        .filter_map(|(c, v)| Some((c, stats::fastest_half_mean(&v)?)))
        .collect())
}
