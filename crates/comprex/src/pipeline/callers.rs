//! Stage 2b (beyond the paper): a callee's cost partitioned by what its callers decide.
//!
//! The paper partitions a method region by the decisions inside it and measures its self time
//! (§III–§IV). A callee's cost also depends on whether, how often and with what its callers
//! call it: the branches and function-pointer choices on the way to each call and the loops
//! around it. The taint runtime carries that context into a callee's *own* decisions as their
//! control-flow taint, but a callee without a branch of its own whose cost is a library call
//! (a copy, a sleep) reports only the decisions whose data taint adds an option beyond that
//! context, so the options that chose or repeated the call vanish from its partition
//! (issue 45's helper: M's handlers and S's call lost, only H and W kept). Here such a
//! method region's partition is refined by the decisions of its nearest region callers in the call
//! graph (direct, and indirect through points-to), replaying the taint runs and running more
//! where that leaves subspaces unexplored.
//!
//! A method that decides on every call (its entry runs into a conditional branch before any
//! return: a loop, an `if`) needs none of that: every call reports that decision with the
//! whole calling context as its control-flow taint, so its own partition already tells the
//! contexts apart, and refining it by every decision of its callers would only split it by
//! what does not decide the call.

use super::taint::{Explored, refold};
use crate::{Error, Granularity};
use measure::{SystemSpec, Workload};
use std::collections::{BTreeMap, BTreeSet};

/// How a callee's cost is partitioned (`knobs comprex --callee-partitions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CalleePartitions {
    /// By its own decisions and its nearest region callers' (the default).
    #[default]
    Callers,
    /// By its own decisions only, as the paper does.
    Own,
}

/// Refines every method region's partition by the decisions of its nearest region callers
/// (composed with the folding of unprobed methods already in `explored.fold`). Returns the
/// taint runs that needed beyond those made, and the regions that gained a caller.
pub fn partition_by_callers(
    spec: &SystemSpec,
    workload: &Workload,
    explored: &mut Explored,
    max_runs: usize,
    on_run: &mut dyn FnMut(&str, usize),
) -> Result<(usize, BTreeMap<String, Vec<String>>), Error> {
    let regions: BTreeSet<String> = explored
        .exploration
        .regions(Granularity::Method)
        .iter()
        .map(|r| r.id.clone())
        .collect();
    let program = &explored.built.translation.program;
    let callers = super::probes::call_graph_callers(explored);
    // Per region, the nearest region methods that call it.
    let mut inherited: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for region in &regions {
        let Some(f) = program.function_named(region) else {
            continue;
        };
        if decides_on_every_call(program, f) {
            continue;
        }
        let mut visited = BTreeSet::from([f]);
        let mut stack = vec![f];
        // Up the call graph to the nearest callers that are regions: a caller without a
        // decision passes its callers' on (a handler called through a pointer), a region
        // caller's own partition already holds what decided its calls.
        let mut names = Vec::new();
        while let Some(g) = stack.pop() {
            for &c in &callers[g] {
                if !visited.insert(c) {
                    continue;
                }
                let name = &program.func(c).name;
                if regions.contains(name) {
                    names.push(name.clone());
                } else {
                    stack.push(c);
                }
            }
        }
        names.sort();
        if !names.is_empty() {
            inherited.insert(region.clone(), names);
        }
    }
    // Decisions of method `m` refine `m`'s own region(s) and those of every region it calls.
    let probe_fold = explored.fold.clone();
    let own = |m: &str| -> Vec<String> {
        probe_fold
            .get(m)
            .cloned()
            .unwrap_or_else(|| vec![m.to_string()])
    };
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (callee, methods) in &inherited {
        for m in methods {
            let targets = map
                .entry(m.clone())
                .or_insert_with(|| own(m).into_iter().collect());
            targets.insert(callee.clone());
        }
    }
    for (m, into) in &probe_fold {
        map.entry(m.clone())
            .or_insert_with(|| into.iter().cloned().collect());
    }
    let map = map
        .into_iter()
        .map(|(m, t)| (m, t.into_iter().collect()))
        .collect();
    let runs = refold(spec, workload, explored, map, max_runs, on_run)?;
    explored.fold = probe_fold;
    Ok((runs, inherited))
}

/// Whether `f`'s entry, following unconditional jumps, reaches a conditional branch or switch
/// before a return: then every call of `f` reaches a decision site, whose record carries the
/// call's context as control-flow taint.
fn decides_on_every_call(program: &ir::Program, f: ir::FuncId) -> bool {
    let Some(&entry) = program.func(f).blocks.first() else {
        return false;
    };
    let mut seen = BTreeSet::new();
    let mut block = entry;
    while seen.insert(block) {
        let Some(last) = program.terminator(block) else {
            return false;
        };
        match &program.inst(last).kind {
            ir::InstKind::Jump { target } => block = *target,
            kind => return kind.control_decision().is_some(),
        }
    }
    false
}
