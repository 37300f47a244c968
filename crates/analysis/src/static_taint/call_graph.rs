//! The call graph the taint solver walks (direct calls, and indirect calls resolved by
//! points-to), and the functions that run only on the way out of the program.

use ir::{FuncId, IdVec, InstId, Program};

use crate::pointsto::PointsTo;

/// The resolved targets of every call instruction (direct, and indirect through points-to).
#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    /// Sorted by instruction.
    pub targets: Vec<(InstId, Vec<FuncId>)>,
    /// For each function, the call instructions that may call it.
    pub callers: IdVec<FuncId, Vec<InstId>>,
}

impl CallGraph {
    /// The call graph of `program` as points-to resolved its calls.
    pub(crate) fn new(program: &Program, pts: &PointsTo) -> CallGraph {
        let mut call_graph = CallGraph {
            targets: pts.call_targets.clone(),
            callers: IdVec::with_default(program.functions.len()),
        };
        for (i, targets) in &call_graph.targets {
            for &g in targets {
                call_graph.callers[g].push(*i);
            }
        }
        call_graph
    }

    #[inline]
    pub fn targets_of(&self, call: InstId) -> &[FuncId] {
        match self.targets.binary_search_by_key(&call, |(i, _)| *i) {
            Ok(k) => &self.targets[k].1,
            Err(_) => &[],
        }
    }
}

/// The functions that run only on the way out of the program: those that never return
/// ([`Program::can_return`]: `do_exit`, `abort_gzip`) and those called only from such
/// functions (`remove_output_file` in gzip's error exit). What they store is read only by
/// code that runs before the exit.
pub(crate) fn dying_functions(program: &Program, call_graph: &CallGraph) -> IdVec<FuncId, bool> {
    let mut dying: IdVec<FuncId, bool> = program
        .functions
        .iter_enumerated()
        .map(|(f, func)| !func.is_declaration && !program.can_return(f))
        .collect();
    loop {
        let mut changed = false;
        for f in dying.keys() {
            let callers = &call_graph.callers[f];
            if !dying[f]
                && !program.functions[f].is_declaration
                && !callers.is_empty()
                && callers.iter().all(|&c| dying[program.func_of(c)])
            {
                dying[f] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    dying
}

/// Per function: its address is used other than to call it (stored, passed, in a global's
/// initializer), so it may be called from outside the program's call sites.
pub(super) fn address_taken(program: &Program) -> IdVec<FuncId, bool> {
    let mut taken = IdVec::from_elem(false, program.functions.len());
    let mut mark = |v: ir::ValueId| {
        if let ir::ValueDef::Function(f) = program.value(v) {
            taken[*f] = true;
        }
    };
    for inst in &program.insts {
        inst.kind.for_each_use(&mut mark);
    }
    for global in &program.globals {
        for r in &global.initializer_refs {
            mark(r.address);
        }
    }
    taken
}
