//! Option sources as seeds of the fixpoint: the memory a source names (a global, every
//! object's struct field, what a selected call returns) and the results of selected calls.

use ir::{FuncId, IdVec, InstId, InstKind, Place, Program, ValueDef, ValueId};

use super::call_graph::CallGraph;
use crate::options::{FxMap, SetId, SetInterner};
use crate::sources::ResolvedSources;

/// The addresses option sources write with the options they hold (sorted), and the taint of
/// the results of selected source calls added to `value_taint`.
pub(super) fn seed_sources(
    program: &Program,
    sources: &ResolvedSources,
    call_graph: &CallGraph,
    sets: &mut SetInterner,
    value_taint: &mut IdVec<ValueId, SetId>,
) -> Vec<(ValueId, SetId)> {
    let mut returns: FxMap<(FuncId, InstId), SetId> = FxMap::default();
    let mut seed_writes: Vec<(ValueId, SetId)> = Vec::new();
    for (option, source) in &sources.sources {
        let s = sets.singleton(*option);
        match source {
            Place::Global(g) => {
                seed_writes.push((program.globals[*g].address, s));
            }
            Place::Field(st, field) => {
                for inst in &program.insts {
                    if let InstKind::FieldAddr {
                        structure,
                        field: f,
                        ..
                    } = &inst.kind
                        && structure == st
                        && f == field
                        && let Some(r) = inst.result
                    {
                        seed_writes.push((r, s));
                    }
                }
            }
            Place::Return(f, selector) => {
                for &call in &call_graph.callers[*f] {
                    let InstKind::Call { args, .. } = &program.inst(call).kind else {
                        continue;
                    };
                    let selected = match selector {
                        None => true,
                        Some(sel) => args.get(sel.index as usize).is_some_and(|a| {
                            matches!(program.value(*a), ValueDef::ConstStr(t) if *t == sel.value)
                        }),
                    };
                    if selected {
                        let key = (*f, call);
                        let old = returns.get(&key).copied().unwrap_or(SetId::EMPTY);
                        returns.insert(key, sets.union(old, s));
                    }
                }
            }
        }
    }
    // Seed call results (and what they point to) of selected source calls.
    for (&(_, call), &s) in &returns {
        if let Some(r) = program.inst(call).result {
            value_taint[r] = sets.union(value_taint[r], s);
            seed_writes.push((r, s));
        }
    }
    seed_writes.sort_unstable();
    seed_writes
}
