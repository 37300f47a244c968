//! `configcrusher`: the ConfigCrusher approach end to end (Velez et al., journal version,
//! §3–§5), from a system spec to a performance-influence model with per-region local models.
//!
//! The pipeline, one function per stage:
//!
//! 1. [`analyse`]: build the program (`frontend`: clang-19 → bitcode → `ir`), resolve where it
//!    keeps its options (the spec's `source` entries and `knobs:option=` annotations), run
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
//!
//! Architecture invariant: this crate orchestrates; it holds no analysis, instrumentation or
//! measuring logic of its own beyond turning measured region times into models.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use analysis::{
    ArgSelector, Compression, FieldRef, OptionSet, OptionSource, ProgramDominance, RegionPlan,
    ResolvedSources, SourceKind, StatementInfluence,
};
use frontend::{CompileOptions, RegionProbe, Translation};
use measure::campaign::{Campaign, CampaignReport, Event, RegionOutput};
use measure::store::{RegionMeasurement, Selection, Store};
use measure::{SystemSpec, Workload};
use model::{InfluenceModel, ModelFile, Region, SourceSpan, Term};
use sha2::{Digest, Sha256};
use space::{Configuration, OptionId, ValidConfigurations};

/// The environment variable the runtime writes region times to.
pub const REGION_TIMES_ENV: &str = "KNOBS_REGION_TIMES";

/// The region id of time spent outside every region.
pub const BASE: &str = "base";

/// Everything that can go wrong; one line each.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Frontend(#[from] frontend::Error),
    #[error(transparent)]
    Analysis(#[from] analysis::Error),
    #[error(transparent)]
    Runtime(#[from] runtime::Error),
    #[error(transparent)]
    Measure(#[from] measure::Error),
    #[error(transparent)]
    Model(#[from] model::Error),
    #[error(transparent)]
    Space(#[from] space::Error),
}

/// Tools and limits.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where bitcode, the runtime and the instrumented binary go.
    pub work_dir: PathBuf,
    pub clang: PathBuf,
    pub llvm_link: PathBuf,
    /// Apply the propagation optimisations (Algorithms 3 and 4) before placing regions.
    pub optimise: bool,
    /// Largest number of combinations one interaction may ask for.
    pub combination_limit: u128,
}

impl Settings {
    pub fn new(work_dir: PathBuf) -> Settings {
        Settings {
            work_dir,
            clang: "clang-19".into(),
            llvm_link: "llvm-link-19".into(),
            optimise: true,
            combination_limit: 1 << 16,
        }
    }
}

/// The result of building and analysing the program.
pub struct Analysed {
    pub translation: Translation,
    /// The SSA bitcode the instrumenter rewrites.
    pub ssa: PathBuf,
    pub influence: StatementInfluence,
    /// The regions to instrument (after propagation, when enabled).
    pub plan: RegionPlan,
    /// Regions Algorithm 2 finds without propagation, for comparison (R before/after).
    pub regions_unoptimised: usize,
    pub compression: Compression,
    /// Options no decision depends on.
    pub irrelevant: Vec<String>,
    pub build_seconds: f64,
    pub analysis_seconds: f64,
}

impl Analysed {
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

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
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

/// Stage 1: build, analyse, place regions, compress.
pub fn analyse(spec: &SystemSpec, settings: &Settings) -> Result<Analysed, Error> {
    let build = spec.build.as_ref().ok_or_else(|| {
        Error::Invalid(format!(
            "{}: no [build] section: ConfigCrusher needs the program's C sources or bitcode",
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
            frontend::compile_c(&sources, &options, &settings.work_dir.join("bitcode"))?
        }
    };
    let ssa = settings.work_dir.join("program.ssa.bc");
    let translation = frontend::translate_bitcode(&bitcode, Some(&ssa))?;
    let build_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let program = &translation.program;
    let mut sources = ResolvedSources::from_annotations(program, &spec.space)?;
    sources.extend(ResolvedSources::resolve(program, &option_sources(spec))?);
    if sources.sources.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: no option sources: give options a `source` (a global, a struct field or a function) or annotate globals with knobs:option=NAME",
            spec.path.display()
        )));
    }
    let dominance = ProgramDominance::new(program);
    let mut influence = analysis::analyse(program, &dominance, &sources);
    let regions_unoptimised =
        analysis::identify_regions(program, &dominance, &influence.influence, &[])
            .regions
            .len();
    let plan = if settings.optimise {
        let (optimised, pulled) = analysis::optimise_influence(
            program,
            &mut influence.sets,
            &influence.influence,
            &influence.call_graph,
        );
        analysis::identify_regions(program, &dominance, &optimised, &pulled)
    } else {
        analysis::identify_regions(program, &dominance, &influence.influence, &[])
    };
    let interactions: Vec<OptionSet> = influence
        .interactions()
        .iter()
        .map(|s| influence.sets.get(*s).clone())
        .collect();
    let valid = ValidConfigurations::new(&spec.space)?;
    let compression = analysis::compress(&valid, &interactions, settings.combination_limit)?;
    let relevant = influence.relevant_options();
    let irrelevant = spec
        .space
        .ids()
        .filter(|o| !relevant.contains(*o))
        .map(|o| spec.space.option(o).name.clone())
        .collect();
    Ok(Analysed {
        ssa,
        influence,
        plan,
        regions_unoptimised,
        compression,
        irrelevant,
        build_seconds,
        analysis_seconds: started.elapsed().as_secs_f64(),
        translation,
    })
}

/// An instrumented build of the program.
pub struct Instrumented {
    pub binary: PathBuf,
    pub stats: frontend::InstrumentStats,
    /// The store's name for this build's measurements: `configcrusher:` and a hash of the
    /// binary, so a changed program or plan is measured afresh and a rerun resumes.
    pub variant: String,
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
    let bitcode = settings.work_dir.join("program.instrumented.bc");
    let stats = frontend::instrument(
        &analysed.ssa,
        &analysed.translation.program,
        &analysed.translation.positions,
        &probes,
        &bitcode,
    )?;
    let runtime = runtime::build(&settings.clang, &settings.work_dir.join("runtime"))?;
    let binary = settings
        .work_dir
        .join(format!("{}.instrumented", spec.name));
    let mut link: Vec<String> = runtime::LINK_FLAGS.iter().map(|f| f.to_string()).collect();
    if let Some(b) = &spec.build {
        link.extend(b.link.iter().cloned());
    }
    frontend::link_instrumented(&settings.clang, &bitcode, &[runtime], &link, &binary)?;
    let bytes = std::fs::read(&binary).map_err(io(&binary))?;
    let digest = Sha256::digest(&bytes);
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    Ok(Instrumented {
        binary,
        stats,
        variant: format!("configcrusher:{hash}"),
    })
}

/// Reads a region-times file into the store's form: every region entered, plus the base.
fn read_region_times(path: &Path) -> Result<Vec<RegionMeasurement>, String> {
    let times = runtime::RegionTimes::read(path).map_err(|e| e.to_string())?;
    let mut out = vec![RegionMeasurement {
        region: BASE.into(),
        seconds: times.base,
        entries: 1,
    }];
    out.extend(times.regions.iter().map(|(id, t)| RegionMeasurement {
        region: format!("r{id}"),
        seconds: t.self_seconds,
        entries: t.entries,
    }));
    Ok(out)
}

/// Stage 3: measure the configurations with the instrumented binary.
pub fn measure_configurations(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    instrumented: &Instrumented,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(Event),
) -> Result<CampaignReport, Error> {
    let campaign = Campaign {
        variant: instrumented.variant.clone(),
        program: Some(instrumented.binary.clone()),
        regions: Some(RegionOutput {
            env: REGION_TIMES_ENV.into(),
            read: read_region_times,
        }),
        ..Campaign::new(spec, workload)
    };
    Ok(campaign.run(store, configurations, on_event)?)
}

/// Stage 4: local models per region and the global model, from the stored region times.
pub fn build_model(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    analysed: &Analysed,
    variant: &str,
) -> Result<ModelFile, Error> {
    let times = store.region_times(&Selection {
        system: Some(spec.name.clone()),
        spec_hash: Some(spec.hash.clone()),
        workload: Some(workload.name.clone()),
        variant: variant.to_string(),
    })?;
    // Per configuration: the median over its runs of each region's time (0 in runs that
    // did not enter the region). The median, not the mean: a run delayed by a busy machine
    // should not move the model.
    let mut runs: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    let mut seconds: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for (config, run, r) in &times {
        let list = runs.entry(config).or_default();
        if list.last() != Some(run) {
            list.push(*run);
        }
        seconds
            .entry((config, &r.region))
            .or_default()
            .push(r.seconds);
    }
    if runs.is_empty() {
        return Err(Error::Invalid(
            "no region times measured: every configuration failed (see `knobs results show --variant …`)".into(),
        ));
    }
    let mut configs: Vec<(Configuration, &str)> = Vec::new();
    for config in runs.keys() {
        configs.push((spec.space.parse_configuration(config)?, config));
    }
    let mean = |config: &str, region: &str| {
        let mut values = seconds.get(&(config, region)).cloned().unwrap_or_default();
        values.resize(runs[config].len(), 0.0);
        measure::Summary::of(&values).map_or(0.0, |s| s.median)
    };

    let program = &analysed.translation.program;
    let mut regions = Vec::new();
    for (i, region) in analysed.plan.regions.iter().enumerate() {
        let id = format!("r{i}");
        let options: Vec<OptionId> = analysed.influence.sets.get(region.options).iter().collect();
        if let Some(o) = options.iter().find(|o| !spec.space.option(**o).is_binary()) {
            return Err(Error::Invalid(format!(
                "region {id} depends on numeric option `{}`; ConfigCrusher models binary options only so far",
                spec.space.option(*o).name
            )));
        }
        let names: Vec<String> = options
            .iter()
            .map(|o| spec.space.option(*o).name.clone())
            .collect();
        // One cell per combination of the region's options (bit j: option j selected).
        let cells: Vec<f64> = (0..1usize << options.len())
            .map(|cell| {
                let matching: Vec<f64> = configs
                    .iter()
                    .filter(|(c, _)| {
                        options
                            .iter()
                            .enumerate()
                            .all(|(j, o)| (c.0[o.index()] == 1) == (cell >> j & 1 == 1))
                    })
                    .map(|(_, text)| mean(text, &id))
                    .collect();
                // A combination the constraints forbid is never predicted; 0 keeps its
                // cell out of the way.
                if matching.is_empty() {
                    0.0
                } else {
                    matching.iter().sum::<f64>() / matching.len() as f64
                }
            })
            .collect();
        let terms = model::influence_from_subspaces(&names, &cells)?;
        let func = program.func(region.function);
        let file = func
            .file
            .map(|f| program.files[f.index()].clone())
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
    let base_time = configs.iter().map(|(_, c)| mean(c, BASE)).sum::<f64>() / configs.len() as f64;
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
    file.system = Some(spec.name.clone());
    file.metric = Some("wall time (s), from region timers".into());
    file.provenance
        .insert("approach".into(), "configcrusher".into());
    file.provenance.insert("variant".into(), variant.into());
    file.provenance
        .insert("workload".into(), workload.name.clone().into());
    file.provenance
        .insert("configurations".into(), configs.len().into());
    Ok(file)
}
