//! What calls into the C library are given, and which parameters of each function reach
//! such calls: the decisions the library makes from its inputs (how long `nanosleep` sleeps,
//! how many bytes `memset` writes).
//!
//! A library call's input is the taint of its argument values and of the objects they point
//! to. A local object of the caller (a `struct timespec` filled in just before `nanosleep`)
//! holds what the function stored into it, symbolic in its parameters like a value. Options
//! that reach a call that way through a parameter are not a decision inside a helper called
//! from everywhere (that would give it every caller's options): the helper's *library
//! parameters* make each of its call sites a decision on what that site passes, so the region
//! covering the call site times the library's work.

use ir::{FuncId, IdVec, InstId, InstKind, Program, ValueDef, ValueId};

use crate::options::{FxMap, SetId};

/// What a call is given that a library decides its work from: symbolic `values` (argument
/// values, the caller's local objects they point to, and what a defined callee passes on to
/// the library), and the concrete taint of the other `objects` they point to.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LibraryInput {
    pub(super) values: SetId,
    pub(super) objects: SetId,
}

/// Per local object (an alloca's address): the stores of its own function into it, found
/// syntactically through field and index addresses and casts.
pub(super) struct LocalObjects {
    stores: FxMap<ValueId, Vec<InstId>>,
}

impl LocalObjects {
    pub(super) fn new(program: &Program) -> LocalObjects {
        let mut stores: FxMap<ValueId, Vec<InstId>> = FxMap::default();
        for (i, inst) in program.insts.iter_enumerated() {
            if let InstKind::Store { ptr, .. } = inst.kind
                && let Some(object) = local_object(program, ptr)
            {
                stores.entry(object).or_default().push(i);
            }
        }
        LocalObjects { stores }
    }

    /// The stores into the local object `ptr` points into, if it points into one.
    pub(super) fn stores_into(&self, program: &Program, ptr: ValueId) -> Option<&[InstId]> {
        local_object(program, ptr).map(|o| self.stores.get(&o).map_or(&[][..], |s| s))
    }
}

/// The alloca `ptr` points into, through field and index addresses and casts.
pub(super) fn local_object(program: &Program, mut ptr: ValueId) -> Option<ValueId> {
    for _ in 0..64 {
        let ValueDef::Inst(i) = program.value(ptr) else {
            return None;
        };
        match &program.inst(*i).kind {
            InstKind::Alloca { .. } => return Some(ptr),
            InstKind::FieldAddr { base, .. } | InstKind::IndexAddr { base, .. } => ptr = *base,
            InstKind::Op {
                op: ir::OpKind::Cast,
                args,
            } if args.len() == 1 => ptr = args[0],
            _ => return None,
        }
    }
    None
}

/// Per function: the parameter labels (symbolic, as [`super::solver::Solver`] numbers them)
/// whose values reach a library call in it or in its callees.
pub(super) type LibraryParameters = IdVec<FuncId, SetId>;
