//! Fixed settings found by themselves: which integer globals hold one value in every run of
//! the workload, learned from the program's own runs instead of a hand-written
//! `[build.fixed]` (which a user will not know to write).
//!
//! A build checks every load of a defined integer global that is not where an option lives,
//! with the runtime observing instead of checking (`runtime::OBSERVE_ENV`): each check
//! reports the first value it read and whether another came. The build runs on the
//! analysis workload in a few differently configured variants: every option off (the valid
//! configuration with the fewest selected), every option on (the most), and
//! [`RANDOM_CONFIGURATIONS`] drawn uniformly (seeded). A global whose reads all saw the same
//! value in all of them is a candidate. The candidates are used like `[build.fixed]` and
//! checked in every instrumented run (ConfigCrusher); one that a measured run contradicts is
//! dropped and the analysis redone (`configcrusher::run`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::{Built, Settings};
use ir::{InstKind, Place, ValueDef};
use measure::{SystemSpec, Workload, runner};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use space::{Configuration, ValidConfigurations};

use crate::Error;

/// Uniformly drawn configurations beside all-off and all-on.
pub const RANDOM_CONFIGURATIONS: usize = 2;

/// A global inferred to hold one value in every run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InferredSetting {
    pub global: String,
    pub value: i64,
    /// Loads of it that ran, over all observation runs.
    pub reads: u64,
}

/// What the observation runs found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Inference {
    /// The configurations run (the analysis workload), in the store's text form.
    pub configurations: Vec<String>,
    pub workload: String,
    /// Globals observed (read at least once).
    pub observed: usize,
    pub fixed: Vec<InferredSetting>,
    /// Why nothing was inferred, when an observation run failed (a timeout, a crash):
    /// inference is a help, so the analysis goes on without it.
    pub failed: Option<String>,
}

/// Observes the program's integer globals in a few runs of `workload` and returns those that
/// held one value throughout; `excluded` names globals not to infer (the spec's own fixed
/// settings and `not_fixed`).
pub fn infer_fixed(
    spec: &SystemSpec,
    settings: &Settings,
    built: &Built,
    workload: &Workload,
    excluded: &[String],
) -> Result<Inference, Error> {
    let program = &built.translation.program;
    let option_globals: Vec<ir::GlobalId> = built
        .sources
        .sources
        .iter()
        .filter_map(|(_, place)| match place {
            Place::Global(g) => Some(*g),
            _ => None,
        })
        .collect();
    // Direct loads of defined, non-struct globals that hold no option.
    let mut loads = Vec::new();
    let mut global_of = Vec::new();
    for (i, inst) in program.insts.iter_enumerated() {
        let InstKind::Load { ptr } = inst.kind else {
            continue;
        };
        let ValueDef::Global(g) = program.value(ptr) else {
            continue;
        };
        let global = &program.globals[*g];
        if !global.defined
            || global.structure.is_some()
            || option_globals.contains(g)
            || excluded.contains(&global.name)
            || global.annotations.iter().any(|a| a.starts_with("knobs:"))
        {
            continue;
        }
        loads.push(i);
        global_of.push(*g);
    }
    let mut inference = Inference {
        workload: workload.name.clone(),
        ..Inference::default()
    };
    if loads.is_empty() {
        return Ok(inference);
    }
    let bitcode = settings.work_dir.join("program.observe.bc");
    let checks = llvm::instrument_observing(
        &built.ssa,
        program,
        &built.translation.positions,
        &loads,
        &[],
        &bitcode,
    )?
    .checks;
    let library = settings.region_timer_runtime()?;
    let (binary, _) = crate::link(
        spec,
        settings,
        &bitcode,
        library,
        runtime::LINK_FLAGS,
        "observe",
        // Runs only on the small analysis workload: compile time matters, not speed.
        false,
    )?;
    spec.prepare_workload(workload)?;

    let valid = ValidConfigurations::new(&spec.space)?;
    let mut configurations: Vec<Configuration> = Vec::new();
    for maximise in [false, true] {
        if let Some(c) = valid.extreme_in(valid.bdd(), maximise) {
            configurations.push(c);
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x66697865);
    for _ in 0..RANDOM_CONFIGURATIONS {
        configurations.push(valid.sample_uniform(&mut rng));
    }
    let mut unique: Vec<Configuration> = Vec::new();
    for c in configurations {
        if !unique.contains(&c) {
            unique.push(c);
        }
    }

    // Per global: the one value all its reads saw so far (`None`: more than one), and reads.
    let mut seen: BTreeMap<ir::GlobalId, (Option<i64>, u64)> = BTreeMap::new();
    let out = settings.work_dir.join("observe.times");
    for config in &unique {
        let text = spec.space.format_configuration(config);
        let times = match observe_run(spec, &binary, config, workload, &out) {
            Ok(times) => times,
            Err(why) => {
                inference.failed = Some(format!("observing `{text}`: {why}"));
                return Ok(inference);
            }
        };
        for (id, o) in &times.observed {
            // A check's id is its load's index.
            if !checks.iter().any(|c| c.id == *id) {
                return Err(Error::Invalid(format!(
                    "observing `{text}`: the program reports check {id}, which was never inserted"
                )));
            }
            let entry = seen
                .entry(global_of[*id as usize])
                .or_insert((Some(o.first), 0));
            entry.1 += o.count;
            if o.varied || entry.0 != Some(o.first) {
                entry.0 = None;
            }
        }
        inference.configurations.push(text);
    }
    inference.observed = seen.len();
    inference.fixed = seen
        .into_iter()
        .filter_map(|(g, (value, reads))| {
            Some(InferredSetting {
                global: program.globals[g].name.clone(),
                value: value?,
                reads,
            })
        })
        .collect();
    Ok(inference)
}

/// The fixed settings an analysis folds: the spec's `[build.fixed]`, and, unless the spec
/// says `infer_fixed = false`, those [`infer_fixed`] observes on `workload` (never the
/// spec's own, its `not_fixed`, or `not_fixed` here).
pub fn fixed_settings(
    spec: &SystemSpec,
    settings: &Settings,
    built: &Built,
    workload: &Workload,
    not_fixed: &[String],
) -> Result<(Vec<analysis::FixedGlobal>, Option<Inference>), Error> {
    let mut fixed = spec_fixed_globals(spec, &built.translation.program)?;
    let Some(b) = spec.build.as_ref().filter(|b| b.infer_fixed) else {
        return Ok((fixed, None));
    };
    let mut excluded: Vec<String> = b.fixed.keys().cloned().collect();
    excluded.extend(b.not_fixed.iter().cloned());
    excluded.extend(not_fixed.iter().cloned());
    let inference = infer_fixed(spec, settings, built, workload, &excluded)?;
    let program = &built.translation.program;
    for s in &inference.fixed {
        if let Some(global) = program.global_named(&s.global) {
            fixed.push(analysis::FixedGlobal {
                global,
                value: s.value,
            });
        }
    }
    Ok((fixed, Some(inference)))
}

/// The spec's own fixed settings (`[build.fixed]`), as the analysis takes them.
pub fn spec_fixed_globals(
    spec: &SystemSpec,
    program: &ir::Program,
) -> Result<Vec<analysis::FixedGlobal>, Error> {
    let Some(build) = &spec.build else {
        return Ok(Vec::new());
    };
    build
        .fixed
        .iter()
        .map(|(name, &value)| match program.global_named(name) {
            Some(global) if program.globals[global].defined => {
                Ok(analysis::FixedGlobal { global, value })
            }
            _ => Err(Error::Invalid(format!(
                "{}: [build.fixed] names `{name}`, which is not a global the program defines",
                spec.path.display()
            ))),
        })
        .collect()
}

/// One observation run: the region-times file it wrote.
pub fn observe_run(
    spec: &SystemSpec,
    binary: &Path,
    config: &Configuration,
    workload: &Workload,
    out: &Path,
) -> Result<runtime::RegionTimes, String> {
    let mut invocation = spec
        .invocation_of(binary.to_path_buf(), config, workload)
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(out);
    invocation
        .env
        .push((runtime::ENV_VAR.into(), out.display().to_string()));
    invocation
        .env
        .push((runtime::OBSERVE_ENV.into(), "1".into()));
    let result = runner::run(&invocation);
    if !result.outcome.is_ok() {
        let last = result.stderr_tail.lines().last().unwrap_or("");
        return Err(format!(
            "the observing build {}{}",
            result.outcome.describe(),
            if last.is_empty() {
                String::new()
            } else {
                format!(": {last}")
            }
        ));
    }
    runtime::RegionTimes::read(out).map_err(|e| e.to_string())
}
