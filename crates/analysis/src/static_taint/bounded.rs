//! Helpers whose work their arguments bound: a function every decision of which depends on
//! its parameters alone (`burn (n)`, a loop up to `n`; a setter's `switch (key)`).
//!
//! Such a function's decisions are not decisions of its own: made concrete in the function,
//! they would carry the union of every call site's arguments, and one helper called under
//! different options would make those options interact. Like a helper that passes its
//! parameters on to the C library ([`super::library`]), its parameters become *library
//! parameters*: each call site is a decision on what that site passes, the region covering
//! the call times the helper's work, and the helper's own statements run whenever it runs.
//! This is a call-site summary in the IFDS sense, bounded by construction: one set of
//! parameter labels per function, substituted at each call site as return values are.

use ir::{FuncId, IdVec};

use super::solver::Solver;
use crate::options::SetId;

/// Marks the functions whose decisions depend on their parameters alone and makes those
/// parameters library parameters (each caller is enqueued to pass its arguments on). Called
/// between two runs of the fixpoint: what it adds changes only what call sites give.
pub(super) fn parameter_bounded(solver: &mut Solver) -> IdVec<FuncId, bool> {
    let program = solver.program;
    let mut bounded = IdVec::from_elem(false, program.functions.len());
    for (f, func) in program.functions.iter_enumerated() {
        if func.is_declaration || func.params.is_empty() || solver.ends_program[f] {
            continue;
        }
        let mut labels = SetId::EMPTY;
        let mut own_options = false;
        'blocks: for &b in &func.blocks {
            let mut taints = vec![solver.block_taint[b]];
            for &i in &program.block(b).insts {
                if let Some(c) = program.inst(i).kind.decision() {
                    taints.push(solver.value_taint[c]);
                }
            }
            for t in taints {
                let (real, _) = solver.split(t);
                if real != SetId::EMPTY {
                    own_options = true;
                    break 'blocks;
                }
                labels = solver.sets.union(labels, t);
            }
        }
        if own_options || labels == SetId::EMPTY {
            continue;
        }
        bounded[f] = true;
        let old = solver.library_params[f];
        let new = solver.sets.union(old, labels);
        if new != old {
            solver.library_params[f] = new;
            for k in 0..solver.call_graph.callers[f].len() {
                let call = solver.call_graph.callers[f][k];
                solver.enqueue(program.func_of(call));
            }
        }
    }
    bounded
}
