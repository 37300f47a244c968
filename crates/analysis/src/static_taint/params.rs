//! Which values point where a parameter of their function points ([`ParameterPointers`]):
//! loads through them read what the call site passes, so their taint is a label that each call
//! site substitutes, like a parameter's.

use ir::{FuncId, IdVec, InstKind, Program, ValueDef, ValueId};

/// Which values point where a parameter of their function points, by pointer arithmetic and
/// casts alone (`s`, `s + 1`, `(char *) s` in a loop over a string; not `&s->field`, whose
/// cells points-to keeps apart). A load through such a value reads what the call site
/// passes: its taint is a label substituted per call site, like a parameter's.
pub(crate) struct ParameterPointers {
    /// Per value: the parameter index, or `u32::MAX`.
    param: IdVec<ValueId, u32>,
    /// Per function: bit k set if a load reads through parameter k (k < 64).
    pub loads_through: IdVec<FuncId, u64>,
    /// The most parameters any function has: memory labels follow the parameter labels.
    pub max_params: u32,
}

impl ParameterPointers {
    #[inline]
    pub(super) fn of(&self, v: ValueId) -> Option<u32> {
        let k = self.param[v];
        (k != u32::MAX).then_some(k)
    }
}

pub(super) fn parameter_pointers(program: &Program) -> ParameterPointers {
    // A lattice per value: unknown (not yet reached) > parameter k > none.
    const UNKNOWN: u32 = u32::MAX - 1;
    const NONE: u32 = u32::MAX;
    let mut param = IdVec::from_elem(NONE, program.values.len());
    let max_params = program
        .functions
        .iter()
        .map(|f| f.params.len() as u32)
        .max()
        .unwrap_or(0);
    let mut loads_through = IdVec::from_elem(0u64, program.functions.len());
    for (fi, func) in program.functions.iter_enumerated() {
        if func.is_declaration {
            continue;
        }
        for (k, &p) in func.params.iter().enumerate() {
            if !program.is_scalar(p) {
                param[p] = k as u32;
            }
        }
        let insts: Vec<ir::InstId> = program.instructions_of(fi).collect();
        let derived = |kind: &InstKind| match kind {
            InstKind::IndexAddr { .. } => true,
            InstKind::Op { op, args } => *op == ir::OpKind::Cast && args.len() == 1,
            InstKind::Phi { .. } | InstKind::Select { .. } => true,
            _ => false,
        };
        for &i in &insts {
            if let Some(r) = program.inst(i).result
                && derived(&program.inst(i).kind)
                && !program.is_scalar(r)
            {
                param[r] = UNKNOWN;
            }
        }
        // Meet over the sources until stable (phis of a loop over a string start unknown).
        let meet = |a: u32, b: u32| match (a, b) {
            (UNKNOWN, x) | (x, UNKNOWN) => x,
            (x, y) if x == y => x,
            _ => NONE,
        };
        loop {
            let mut changed = false;
            for &i in &insts {
                let inst = program.inst(i);
                let Some(r) = inst.result else { continue };
                if param[r] == NONE || !derived(&inst.kind) || program.is_scalar(r) {
                    continue;
                }
                let get = |v: ValueId| match program.value(v) {
                    ValueDef::Inst(_) | ValueDef::Param { .. } => param[v],
                    // A null or undefined incoming value points nowhere.
                    ValueDef::ConstInt(0) | ValueDef::Undef => UNKNOWN,
                    _ => NONE,
                };
                let new = match &inst.kind {
                    InstKind::IndexAddr { base, .. } => get(*base),
                    InstKind::Op { args, .. } => get(args[0]),
                    InstKind::Phi { incoming } => incoming
                        .iter()
                        .fold(UNKNOWN, |acc, (v, _)| meet(acc, get(*v))),
                    InstKind::Select {
                        if_true, if_false, ..
                    } => meet(get(*if_true), get(*if_false)),
                    _ => NONE,
                };
                let new = meet(param[r], new);
                if new != param[r] {
                    param[r] = new;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for &i in &insts {
            if let Some(r) = program.inst(i).result
                && param[r] == UNKNOWN
            {
                param[r] = NONE;
            }
        }
        for &i in &insts {
            if let InstKind::Load { ptr } = &program.inst(i).kind
                && let k = param[*ptr]
                && k < 64
            {
                loads_through[fi] |= 1 << k;
            }
        }
    }
    ParameterPointers {
        param,
        loads_through,
        max_params,
    }
}
