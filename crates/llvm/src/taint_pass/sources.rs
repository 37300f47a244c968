//! Option sources: the LLVM loads and calls that read an option (a load from an option
//! global or struct field, the result of a selected call), found through the translated
//! program and its positions.

use std::collections::HashMap;
use std::ffi::CString;

use ir::{Callee, InstKind, OpKind, Place, Program, ValueDef, ValueId};
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMModuleRef, LLVMValueRef};

use crate::bitcode;
use crate::translate::LlvmPositions;

/// The options (as label ids `k + 1`) each source load or call adds, by LLVM instruction.
pub(super) fn source_sites(
    m: LLVMModuleRef,
    program: &Program,
    positions: &LlvmPositions,
    sources: &[(usize, Place)],
) -> Result<HashMap<LLVMValueRef, Vec<u32>>, String> {
    let mut by_inst: HashMap<ir::InstId, Vec<u32>> = HashMap::new();
    for (id, inst) in program.insts.iter_enumerated() {
        let mut opts: Vec<u32> = Vec::new();
        match &inst.kind {
            InstKind::Load { ptr } => {
                let (globals, fields) = address_roots(program, *ptr);
                for (o, s) in sources {
                    let hit = match s {
                        Place::Global(g) => globals.contains(g),
                        Place::Field(st, f) => fields.contains(&(*st, *f)),
                        Place::Return(..) => false,
                    };
                    if hit {
                        opts.push(*o as u32 + 1);
                    }
                }
            }
            InstKind::Call {
                callee: Callee::Direct(f),
                args,
            } => {
                for (o, s) in sources {
                    if let Place::Return(g, sel) = s
                        && g == f
                        && sel.as_ref().is_none_or(|sel| {
                            args.get(sel.index as usize).is_some_and(|a| {
                                matches!(program.value(*a), ValueDef::ConstStr(t) if *t == sel.value)
                            })
                        })
                    {
                        opts.push(*o as u32 + 1);
                    }
                }
            }
            _ => {}
        }
        if !opts.is_empty() {
            opts.sort_unstable();
            opts.dedup();
            by_inst.insert(id, opts);
        }
    }
    let mut out = HashMap::new();
    let mut layouts: HashMap<ir::FuncId, Vec<Vec<LLVMValueRef>>> = HashMap::new();
    for (id, opts) in by_inst {
        let f = program.func_of(id);
        if let std::collections::hash_map::Entry::Vacant(e) = layouts.entry(f) {
            let name = &program.func(f).name;
            let cname = CString::new(name.as_str()).map_err(|e| e.to_string())?;
            // SAFETY: `m` is the live module `instrument_taint` loaded (the handle rule) and
            // `cname` a NUL-terminated name that outlives the call.
            let func = unsafe { c::LLVMGetNamedFunction(m, cname.as_ptr()) };
            if func.is_null() {
                return Err(format!("it has no function `{name}`"));
            }
            let blocks: Vec<Vec<LLVMValueRef>> = bitcode::blocks(func)
                .into_iter()
                .map(bitcode::instructions)
                .collect();
            let shape = positions.shape[f];
            let n: usize = blocks.iter().map(Vec::len).sum();
            if blocks.len() != shape.blocks as usize || n != shape.instructions as usize {
                return Err(format!("function `{name}` changed shape since translation"));
            }
            e.insert(blocks);
        }
        let blocks = &layouts[&f];
        let local = program.block(program.inst(id).block).local as usize;
        let k = positions.inst_index[id] as usize;
        let inst = blocks
            .get(local)
            .and_then(|b| b.get(k))
            .copied()
            .ok_or_else(|| format!("instruction {id} is not in block {local}"))?;
        out.insert(inst, opts);
    }
    Ok(out)
}

/// The globals an address lies in and the struct fields it names, following field and index
/// steps and casts back to their base.
fn address_roots(
    program: &Program,
    mut v: ValueId,
) -> (Vec<ir::GlobalId>, Vec<(ir::StructId, u32)>) {
    let (mut globals, mut fields) = (Vec::new(), Vec::new());
    let mut first = true;
    for _ in 0..64 {
        match program.value(v) {
            ValueDef::Global(g) => {
                globals.push(*g);
                break;
            }
            ValueDef::Inst(i) => match &program.inst(*i).kind {
                InstKind::FieldAddr {
                    base,
                    structure,
                    field,
                } => {
                    // Only the innermost field is the one read (`a.b.c` reads field c).
                    if first {
                        fields.push((*structure, *field));
                    }
                    first = false;
                    v = *base;
                }
                InstKind::IndexAddr { base, .. } => {
                    first = false;
                    v = *base;
                }
                InstKind::Op {
                    op: OpKind::Cast,
                    args,
                } if !args.is_empty() => v = args[0],
                _ => break,
            },
            _ => break,
        }
    }
    (globals, fields)
}
