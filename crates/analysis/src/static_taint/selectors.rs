//! Setters with a constant selector: `set_param (p, KEY, v)`, a `switch (key)` storing `v`
//! into the field `key` names. Analysed once for all call sites, every field would hold every
//! caller's `v` (zstd's `ZSTD_CCtxParams_setParameter` stores each option into one object),
//! and every option read back from it would interact with all the others.
//!
//! For a small function that decides on a scalar parameter, the stores it makes through its
//! parameters are made at each call site instead, as if the function were inlined there: only
//! the stores in blocks reachable when the call's constant arguments are folded in (a
//! `switch`, a comparison with the constant, [`ir::IntOp::evaluate`]), each with the taint it
//! has at that site (the callee's parameter labels replaced by that site's arguments, the
//! site's own control and context). Bounded: functions of at most [`MAX_INSTRUCTIONS`]
//! instructions, folded once per call site.

use ir::{BlockId, FuncId, IdVec, InstId, InstKind, Program, ValueDef, ValueId};

use super::call_graph::CallGraph;
use crate::options::FxMap;

/// The largest function whose stores are made per call site.
pub(super) const MAX_INSTRUCTIONS: usize = 2_000;

/// The stores of selector functions, made at their call sites.
#[derive(Default)]
pub(super) struct SelectorStores {
    /// Per instruction: a store of a selector function through one of its parameters, which
    /// its call sites make (not the function itself).
    pub(super) deferred: IdVec<InstId, bool>,
    /// Per selector function: its deferred stores.
    pub(super) stores: FxMap<FuncId, Vec<InstId>>,
    /// Per call site and selector callee: the deferred stores reachable at that site.
    pub(super) at_site: FxMap<(InstId, FuncId), Vec<InstId>>,
}

pub(super) fn selector_stores(program: &Program, call_graph: &CallGraph) -> SelectorStores {
    let mut out = SelectorStores {
        deferred: IdVec::from_elem(false, program.insts.len()),
        ..SelectorStores::default()
    };
    for (f, func) in program.functions.iter_enumerated() {
        if func.is_declaration || func.name == "main" || call_graph.callers[f].is_empty() {
            continue;
        }
        let insts: Vec<InstId> = program.instructions_of(f).collect();
        if insts.len() > MAX_INSTRUCTIONS || !decides_on_a_parameter(program, f, &insts) {
            continue;
        }
        let stores: Vec<InstId> = insts
            .iter()
            .copied()
            .filter(|&i| match &program.inst(i).kind {
                InstKind::Store { ptr, .. } => rooted_at_parameter(program, *ptr),
                _ => false,
            })
            .collect();
        if stores.is_empty() {
            continue;
        }
        for &call in &call_graph.callers[f] {
            let InstKind::Call { args, .. } = &program.inst(call).kind else {
                continue;
            };
            let reachable = reachable_with(program, f, args);
            let here = stores
                .iter()
                .copied()
                .filter(|&st| reachable[program.inst(st).block])
                .collect();
            out.at_site.insert((call, f), here);
        }
        for &st in &stores {
            out.deferred[st] = true;
        }
        out.stores.insert(f, stores);
    }
    out
}

/// Whether a branch or switch of `f` decides on a scalar parameter (directly, through a
/// cast, or through a comparison of it).
fn decides_on_a_parameter(program: &Program, f: FuncId, insts: &[InstId]) -> bool {
    let is_param = |v: ValueId| {
        matches!(program.value(v), ValueDef::Param { func, .. } if *func == f)
            && program.is_scalar(v)
    };
    let from_param = |v: ValueId| {
        is_param(v)
            || match program.value(v) {
                ValueDef::Inst(i) => match &program.inst(*i).kind {
                    InstKind::Op { args, .. } => args.iter().any(|&a| {
                        is_param(a)
                            || matches!(program.value(a), ValueDef::Inst(j)
                                if matches!(&program.inst(*j).kind,
                                    InstKind::Op { args, .. } if args.iter().any(|&b| is_param(b))))
                    }),
                    _ => false,
                },
                _ => false,
            }
    };
    insts.iter().any(|&i| {
        program
            .inst(i)
            .kind
            .control_decision()
            .is_some_and(from_param)
    })
}

/// Whether `ptr` is a parameter or an address computed from one (fields, elements, casts).
fn rooted_at_parameter(program: &Program, mut ptr: ValueId) -> bool {
    for _ in 0..16 {
        match program.value(ptr) {
            ValueDef::Param { .. } => return true,
            ValueDef::Inst(i) => match &program.inst(*i).kind {
                InstKind::FieldAddr { base, .. } | InstKind::IndexAddr { base, .. } => ptr = *base,
                InstKind::Op { op, args } if *op == ir::OpKind::Cast && args.len() == 1 => {
                    ptr = args[0]
                }
                _ => return false,
            },
            _ => return false,
        }
    }
    false
}

/// The blocks of `f` a call with these arguments can reach: branches and switches on values
/// folded from the constant arguments take one way.
fn reachable_with(program: &Program, f: FuncId, args: &[ValueId]) -> IdVec<BlockId, bool> {
    let func = program.func(f);
    let mut constant: FxMap<ValueId, i64> = FxMap::default();
    for (&p, &a) in func.params.iter().zip(args) {
        if let ValueDef::ConstInt(c) = program.value(a) {
            constant.insert(p, *c);
        }
    }
    let value_of = |constant: &FxMap<ValueId, i64>, v: ValueId| match program.value(v) {
        ValueDef::ConstInt(c) => Some(*c),
        _ => constant.get(&v).copied(),
    };
    let mut reachable = IdVec::from_elem(false, program.blocks.len());
    let Some(&entry) = func.blocks.first() else {
        return reachable;
    };
    reachable[entry] = true;
    let mut work = vec![entry];
    while let Some(b) = work.pop() {
        for &i in &program.block(b).insts {
            let inst = program.inst(i);
            if let (InstKind::Op { args, .. }, Some(r), Some(op)) =
                (&inst.kind, inst.result, program.int_ops.get(&i))
            {
                let known: Option<Vec<i64>> =
                    args.iter().map(|&a| value_of(&constant, a)).collect();
                if let Some(v) = known.and_then(|k| op.evaluate(&k)) {
                    constant.insert(r, v);
                }
            }
        }
        let Some(t) = program.terminator(b) else {
            continue;
        };
        let next = match &program.inst(t).kind {
            InstKind::Branch {
                cond,
                if_true,
                if_false,
            } => match value_of(&constant, *cond) {
                Some(c) => vec![if c != 0 { *if_true } else { *if_false }],
                None => vec![*if_true, *if_false],
            },
            InstKind::Switch {
                value,
                default,
                cases,
            } => match value_of(&constant, *value) {
                Some(c) => vec![
                    cases
                        .iter()
                        .find(|(k, _)| *k == c)
                        .map_or(*default, |(_, b)| *b),
                ],
                None => program.inst(t).kind.successors(),
            },
            kind => kind.successors(),
        };
        for s in next {
            if !reachable[s] {
                reachable[s] = true;
                work.push(s);
            }
        }
    }
    reachable
}
