//! Dynamic confirmation (the hybrid, optional): the static analysis keeps an interaction
//! wherever its options *may* meet in a decision; this keeps it only where they meet in a
//! decision that decides something on the workload the model is of.
//!
//! The program is built observing the condition of every conditional branch the static
//! analysis found tainted and the entry of every function (`llvm::instrument_observing`,
//! the fixed settings' observation runtime) and run on the measured workload in every
//! configuration of the static cover, so every combination of every static interaction
//! runs. A branch that went one way in every run (a status every option's validation
//! derives, `if (ret != OK)`, that is always OK) decides nothing there, one that never ran
//! reaches nothing, and a function no run entered (a compressor's decompression context,
//! whose copies points-to cannot keep apart from the compression context's) writes nothing
//! the runs read: the program is specialised with those conditions as constants and those
//! functions as never called, as fixed settings specialise it (`analysis::specialise_with`),
//! and analysed again. Options that met only through such code no longer interact.
//!
//! The measured workload, not the small analysis one: a compressor's multi-block path, its
//! buffer-full branches, run only on inputs as large as the measured ones. This is an
//! assumption, not a proof: a configuration outside the cover, or another workload, may take
//! the other way. The report names the interactions it dropped and the workload.

use std::time::Instant;

use analysis::StatementInfluence;
use instrumented::Settings;
use measure::{SystemSpec, Workload};
use serde::Serialize;
use space::Configuration;

use crate::Error;

/// Most runs a confirmation makes: one per configuration of the static cover.
pub const MAX_RUNS: usize = 256;

/// What dynamic confirmation did: the assumption the model rests on.
#[derive(Clone, Debug, Serialize)]
pub struct Confirmation {
    /// The workload the observed runs ran.
    pub workload: String,
    /// Runs made (the static cover's configurations).
    pub runs: usize,
    pub seconds: f64,
    /// Tainted conditional branches observed, those that went one way in every run, and
    /// those that never ran.
    pub branches_observed: usize,
    pub branches_decided: usize,
    pub branches_never_run: usize,
    /// Functions observed (every defined one), and those no run entered (by name).
    pub functions_observed: usize,
    pub functions_never_entered: Vec<String>,
    /// The maximal interactions of the static analysis alone, and how many configurations
    /// would have covered them.
    pub static_interactions: Vec<Vec<String>>,
    pub static_configurations: usize,
    /// Static maximal interactions no confirmed interaction contains: their options met
    /// only through branches that never went another way on the workload.
    pub dropped: Vec<Vec<String>>,
    /// Observed runs that failed (`--allow-failed`), with why: a failed run may have gone
    /// the other way anywhere, so nothing was confirmed away.
    pub failed: Vec<(String, String)>,
}

/// What the observed runs say of the static analysis's tainted branches.
#[derive(Default)]
pub struct Outcomes {
    /// Conditions that gave one value in every run (their branches went one way), and
    /// those that never ran (value `None`: nothing is reached through their branches).
    pub fixed: Vec<analysis::FixedValue>,
    /// How many of them went one way, and never ran.
    pub decided: usize,
    pub never: usize,
    /// Defined functions no run entered.
    pub never_entered: Vec<ir::FuncId>,
    /// Branches observed, and functions.
    pub observed: usize,
    pub functions: usize,
    pub seconds: f64,
    /// Runs that failed (with `Settings::allow_failed`; else they are an error), with why.
    pub failed: Vec<(String, String)>,
}

/// The conditions of the tainted conditional branches: the instructions whose values decide
/// them, once each.
fn tainted_conditions(program: &ir::Program, influence: &StatementInfluence) -> Vec<ir::InstId> {
    let mut conditions: Vec<ir::InstId> = Vec::new();
    for d in &influence.decisions {
        if d.kind != analysis::DecisionKind::Branch {
            continue;
        }
        let Some(cond) = program.inst(d.inst).kind.control_decision() else {
            continue;
        };
        if let ir::ValueDef::Inst(j) = program.value(cond)
            && matches!(
                program.inst(*j).kind,
                ir::InstKind::Op { .. } | ir::InstKind::Load { .. }
            )
            && !conditions.contains(j)
        {
            conditions.push(*j);
        }
    }
    conditions
}

/// The program observing `conditions` and the entries of `functions`, built in `dir`: the
/// binary, and the checks it reports.
fn observing_build(
    spec: &SystemSpec,
    settings: &Settings,
    built: &instrumented::Built,
    conditions: &[ir::InstId],
    functions: &[ir::FuncId],
    dir: &std::path::Path,
) -> Result<(std::path::PathBuf, llvm::Observing), Error> {
    let program = &built.translation.program;
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Invalid(format!("dynamic confirmation: {}: {e}", dir.display())))?;
    let bitcode = dir.join("program.branches.bc");
    let observing = llvm::instrument_observing(
        &built.ssa,
        program,
        &built.translation.positions,
        conditions,
        functions,
        &bitcode,
    )?;
    let library = settings.region_timer_runtime()?;
    let (binary, _) = instrumented::link(
        spec,
        settings,
        &bitcode,
        library,
        runtime::LINK_FLAGS,
        "branches",
        false,
    )?;
    Ok((binary, observing))
}

/// Failed observed runs: an error naming them, unless `allow`.
fn refuse_failed(failed: &[(String, String)], runs: usize, allow: bool) -> Result<(), Error> {
    if allow {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "dynamic confirmation: {} of {runs} observed configurations failed: {}; fix them, or \
         pass {} to confirm nothing away",
        failed.len(),
        instrumented::failed::listed(failed),
        instrumented::failed::ALLOW_FLAG
    )))
}

/// Builds the program observing the conditions of the tainted conditional branches of
/// `influence` (in `settings.work_dir/confirm`) and runs it on `workload` in each of
/// `configurations`: which went one way in every run, and which never ran. A failed run is
/// an error naming every failed one, unless `settings.allow_failed`: then nothing is taken
/// as decided (a failed run may have gone the other way anywhere) and `failed` says why.
pub fn branch_outcomes(
    spec: &SystemSpec,
    settings: &Settings,
    built: &instrumented::Built,
    influence: &StatementInfluence,
    workload: &Workload,
    configurations: &[Configuration],
) -> Result<Outcomes, Error> {
    let program = &built.translation.program;
    let conditions = tainted_conditions(program, influence);
    let mut outcomes = Outcomes::default();
    // Every function the program may run: one no run enters is code the workload never runs.
    let functions: Vec<ir::FuncId> = program
        .functions
        .iter_enumerated()
        .filter(|(_, f)| !f.is_declaration)
        .map(|(k, _)| k)
        .collect();
    let dir = settings.work_dir.join("confirm");
    let (binary, llvm::Observing { checks, entries }) =
        observing_build(spec, settings, built, &conditions, &functions, &dir)?;
    spec.prepare_workload(workload)?;
    let started = Instant::now();
    // Per check: the one value every run saw (`None`: more than one), if any ran it.
    let mut seen: Vec<Option<Option<i64>>> = vec![None; conditions.len() + functions.len()];
    let out = dir.join("branches.times");
    for config in configurations {
        let times = match instrumented::infer::observe_run(spec, &binary, config, workload, &out) {
            Ok(times) => times,
            Err(cause) => {
                outcomes
                    .failed
                    .push((spec.space.format_configuration(config), cause));
                continue;
            }
        };
        for (id, o) in &times.observed {
            let Some(slot) = seen.get_mut(*id as usize) else {
                return Err(Error::Invalid(format!(
                    "dynamic confirmation: the program reports check {id}, never inserted"
                )));
            };
            *slot = Some(match *slot {
                None if !o.varied => Some(o.first),
                Some(Some(v)) if !o.varied && v == o.first => Some(v),
                _ => None,
            });
        }
    }
    outcomes.seconds = started.elapsed().as_secs_f64();
    outcomes.observed = checks.len();
    outcomes.functions = entries.len();
    if !outcomes.failed.is_empty() {
        refuse_failed(
            &outcomes.failed,
            configurations.len(),
            settings.allow_failed,
        )?;
        return Ok(outcomes);
    }
    for check in &checks {
        let value = match seen[check.id as usize] {
            None => {
                outcomes.never += 1;
                None
            }
            Some(Some(value)) => {
                outcomes.decided += 1;
                Some(value)
            }
            Some(None) => continue,
        };
        outcomes.fixed.push(analysis::FixedValue {
            inst: check.inst,
            value,
        });
    }
    outcomes.never_entered = entries
        .iter()
        .filter(|(_, id)| seen[*id as usize].is_none())
        .map(|(f, _)| *f)
        .collect();
    Ok(outcomes)
}
