//! Comprex end to end (Velez et al., Comprex, §III–§V), from a system spec to a model with a
//! local model per method.
//!
//! 1. [`explore`]: build the program ([`crate::build`]), instrument it for dynamic taint
//!    tracking with data-flow and control-flow taints (`frontend::instrument_taint`, the
//!    `runtime::taint` library), and run the iterative analysis (`comprex::explore`,
//!    Algorithm 1) with the spec's *analysis* workload: each run reports its decisions' taints,
//!    which refine the partition of the configuration space per region, until every subspace
//!    of every region has been explored;
//! 2. [`instrument_methods`]: the regions' methods get enter/exit calls, linked with the
//!    sampling profiler (`runtime::profiler`): self time is charged to the innermost open
//!    region, everything else to the base;
//! 3. [`measure_configurations`]: the explored configurations are measured with the real
//!    workload through the results store (repetitions, timeouts, resumable);
//! 4. [`build_model`]: per region, the measured times grouped by subspace and averaged become
//!    local models (`comprex::build_model`), composed into the global model; trivial terms
//!    and regions whose partition may be incomplete (§V.D) are reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ::comprex::{ComprexModel, Exploration, ExploreSettings, Granularity, ModelSettings, Pick};
use frontend::{RegionProbe, TaintStats};
use ir::InstKind;
use measure::campaign::{CampaignReport, Event, RegionOutput};
use measure::runner;
use measure::store::{RegionMeasurement, Store};
use measure::{SystemSpec, Workload};
use space::{Configuration, ValidConfigurations};

use crate::{BASE, Built, Error, Settings};

/// The iterative analysis' result.
pub struct Explored {
    pub built: Built,
    pub stats: TaintStats,
    pub exploration: Exploration,
    pub granularity: Granularity,
    /// Seconds of the taint runs (the analysis' cost).
    pub seconds: f64,
}

/// Stage 1: taint-instrument the program and explore the configuration space with it.
/// `on_run` hears of each taint run (configuration, decisions reported).
pub fn explore(
    spec: &SystemSpec,
    settings: &Settings,
    workload: &Workload,
    granularity: Granularity,
    max_runs: usize,
    on_run: &mut dyn FnMut(&str, usize),
) -> Result<Explored, Error> {
    let built = crate::build(spec, settings, "Comprex")?;
    let program = &built.translation.program;
    let names: Vec<String> = spec.space.names().iter().map(|n| n.to_string()).collect();
    let bitcode = settings.work_dir.join("program.taint.bc");
    let stats = frontend::instrument_taint(
        &built.ssa,
        program,
        &built.translation.positions,
        &built.sources,
        &names,
        &bitcode,
    )?;
    let library = runtime::taint::build(&settings.clang, &settings.work_dir.join("runtime"))?;
    let (binary, _) = crate::link(spec, settings, &bitcode, library, &[], "comprex-taint")?;
    spec.prepare_workload(workload)?;
    let valid = ValidConfigurations::new(&spec.space)?;
    let out = settings.work_dir.join("taint-run.json");
    let started = Instant::now();
    let exploration = ::comprex::explore(
        &valid,
        ExploreSettings {
            granularities: vec![granularity],
            start: None,
            pick: Pick::Fewest,
            max_runs,
        },
        |config: &Configuration| -> Result<Vec<::comprex::DecisionRecord>, String> {
            let text = spec.space.format_configuration(config);
            let mut invocation = spec
                .invocation_of(binary.clone(), config, workload)
                .map_err(|e| e.to_string())?;
            let _ = std::fs::remove_file(&out);
            invocation
                .env
                .push((runtime::taint::ENV_VAR.into(), out.display().to_string()));
            let result = runner::run(&invocation);
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
            let json = std::fs::read_to_string(&out)
                .map_err(|e| format!("no taint records ({}: {e})", out.display()))?;
            let run: ::comprex::TaintRun = serde_json::from_str(&json)
                .map_err(|e| format!("{}: malformed taint records: {e}", out.display()))?;
            on_run(&text, run.decisions.len());
            Ok(run.decisions)
        },
    )?;
    if exploration.regions(granularity).is_empty() {
        return Err(Error::Invalid(
            "the program never reached a decision influenced by an option: check the options' `source` entries".into(),
        ));
    }
    Ok(Explored {
        built,
        stats,
        exploration,
        granularity,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// A build with method-level regions linked to the sampling profiler.
pub struct Profiled {
    pub binary: PathBuf,
    pub variant: String,
    /// Region id → method name.
    pub methods: BTreeMap<u32, String>,
}

/// Stage 2: enter/exit calls around the methods of the explored regions, with the profiler.
pub fn instrument_methods(
    spec: &SystemSpec,
    settings: &Settings,
    explored: &Explored,
) -> Result<Profiled, Error> {
    let program = &explored.built.translation.program;
    let mut probes = Vec::new();
    let mut methods = BTreeMap::new();
    for region in explored.exploration.regions(Granularity::Method) {
        let Some(f) = program.function_named(&region.id) else {
            continue;
        };
        let func = program.func(f);
        let Some(entry) = func.entry() else { continue };
        let id = probes.len() as u32;
        let ends = func
            .blocks
            .iter()
            .flat_map(|&b| program.block(b).insts.iter().copied())
            .filter(|&i| matches!(program.inst(i).kind, InstKind::Return { .. }))
            .map(analysis::ProgramPoint::Before)
            .collect();
        probes.push(RegionProbe {
            id,
            start: vec![analysis::ProgramPoint::Before(
                program.block(entry).insts[0],
            )],
            end: ends,
        });
        methods.insert(id, func.name.clone());
    }
    let bitcode = settings.work_dir.join("program.methods.bc");
    frontend::instrument(
        &explored.built.ssa,
        program,
        &explored.built.translation.positions,
        &probes,
        &bitcode,
    )?;
    let library = runtime::profiler::build(&settings.clang, &settings.work_dir.join("runtime"))?;
    let (binary, variant) = crate::link(
        spec,
        settings,
        &bitcode,
        library,
        runtime::profiler::LINK_FLAGS,
        "comprex",
    )?;
    Ok(Profiled {
        binary,
        variant,
        methods,
    })
}

fn read_profile(path: &Path) -> Result<Vec<RegionMeasurement>, String> {
    let profile = runtime::profiler::Profile::read(path).map_err(|e| e.to_string())?;
    Ok(crate::region_measurements(&profile.times))
}

/// Stage 3: measure configurations with the profiled build and the real workload.
pub fn measure_configurations(
    store: &Store,
    settings: &Settings,
    spec: &SystemSpec,
    workload: &Workload,
    profiled: &Profiled,
    configurations: &[Configuration],
    on_event: &mut dyn FnMut(Event),
) -> Result<CampaignReport, Error> {
    crate::measure_instrumented(
        store,
        settings,
        spec,
        workload,
        &profiled.binary,
        &profiled.variant,
        RegionOutput {
            env: runtime::profiler::ENV_VAR.into(),
            read: read_profile,
        },
        configurations,
        on_event,
    )
}

/// Stage 4: local models per region from the stored profiles, and the global model.
pub fn build_model(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    explored: &Explored,
    profiled: &Profiled,
    settings: &ModelSettings,
) -> Result<ComprexModel, Error> {
    let medians = crate::median_region_times(store, spec, workload, &profiled.variant)?;
    let mut region_times = Vec::new();
    for (config, regions) in medians {
        let configuration = spec.space.parse_configuration(&config)?;
        let seconds = regions
            .into_iter()
            .map(|(region, s)| {
                let name = region
                    .strip_prefix('r')
                    .and_then(|id| id.parse::<u32>().ok())
                    .and_then(|id| profiled.methods.get(&id).cloned())
                    .unwrap_or(if region == BASE {
                        BASE.to_string()
                    } else {
                        region
                    });
                (name, s)
            })
            .collect();
        region_times.push(::comprex::RegionTimes {
            configuration,
            seconds,
        });
    }
    let valid = ValidConfigurations::new(&spec.space)?;
    let regions = explored.exploration.regions(explored.granularity);
    let mut model = ::comprex::build_model(&valid, regions, &region_times, settings)?;
    model.file.system = Some(spec.name.clone());
    model.file.metric = Some("wall time (s), from the sampling profiler".into());
    let provenance = &mut model.file.provenance;
    provenance.insert("approach".into(), "comprex".into());
    provenance.insert("variant".into(), profiled.variant.clone().into());
    provenance.insert("workload".into(), workload.name.clone().into());
    provenance.insert(
        "configurations".into(),
        explored.exploration.configurations.len().into(),
    );
    Ok(model)
}
