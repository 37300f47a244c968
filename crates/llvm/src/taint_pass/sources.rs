//! Option sources: the LLVM loads and calls that read an option (a load from an option
//! global or struct field, the result of a selected call, a block copy out of an option's
//! place), found through the translated program and its positions.

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
        // A load, or a block copy out of the place (a struct passed by value, a nested struct
        // assigned whole): its copy holds the option, which the reads of the copy cannot name.
        let read = match &inst.kind {
            InstKind::Load { ptr } => Some(*ptr),
            InstKind::Call {
                callee: Callee::Direct(f),
                args,
            } if is_block_copy(&program.func(*f).name) => args.get(1).copied(),
            _ => None,
        };
        if let Some(ptr) = read {
            let (globals, fields) = address_roots(program, ptr);
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
        if let InstKind::Call {
            callee: Callee::Direct(f),
            args,
        } = &inst.kind
        {
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

/// `memcpy`, `memmove` and their intrinsics: the calls whose shadow copy takes a source's
/// labels (`calls.rs`).
fn is_block_copy(name: &str) -> bool {
    matches!(name, "memcpy" | "memmove")
        || name.starts_with("llvm.memcpy.")
        || name.starts_with("llvm.memmove.")
}

/// The globals an address lies in and the struct fields it lies in, following field and
/// index steps and casts back to their base. A load of `a.b.c` lies in field `c` and in the
/// enclosing field `b` too, so a source naming a nested struct (`b`) is read by every load of
/// one of its members; reads of a whole struct's copy (`applied = requested`) are keyed by
/// type like any other, so they are found as well. A negative constant index (`container_of`)
/// leaves the field it starts from, so no field before it counts.
fn address_roots(
    program: &Program,
    mut v: ValueId,
) -> (Vec<ir::GlobalId>, Vec<(ir::StructId, u32)>) {
    let (mut globals, mut fields) = (Vec::new(), Vec::new());
    let mut enclosing = true;
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
                    if enclosing {
                        fields.push((*structure, *field));
                    }
                    v = *base;
                }
                InstKind::IndexAddr { base, index } => {
                    if matches!(program.value(*index), ValueDef::ConstInt(k) if *k < 0) {
                        enclosing = false;
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Options kept in nested structs (`ctx->applied.frame.checksum`), read from a copy of the
    /// struct the program set them in, an array field read at a variable index, and a
    /// `container_of` step back from a member to its enclosing object.
    const NESTED: &str = r#"
typedef struct { int content_size; int checksum; } frame_params;
typedef struct { int level; frame_params frame; int table[4]; } params;
typedef struct { params requested; params applied; } context;
typedef struct { int before; frame_params member; } outer;
int run(context *ctx, int i, frame_params *m) {
  ctx->applied = ctx->requested;
  int r = ctx->applied.frame.checksum; /* nested */
  r += ctx->applied.table[i]; /* array */
  r += ctx->applied.level; /* flat */
  outer *o = (outer *)((char *)m - __builtin_offsetof(outer, member));
  return r + o->before; /* container */
}
"#;

    /// The (struct, field) pairs, by name, of the loads on `marker`'s line.
    fn fields_read(compiled: &crate::fixture::Compiled, marker: &str) -> Vec<(String, String)> {
        let program = &compiled.translation.program;
        let line = crate::fixture::line_of(NESTED, marker);
        let mut out = Vec::new();
        for inst in program.insts.iter() {
            if let InstKind::Load { ptr } = &inst.kind
                && inst.loc.line == line
            {
                for (st, f) in address_roots(program, *ptr).1 {
                    let s = &program.structs[st];
                    out.push((s.name.clone(), s.fields[f as usize].clone()));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(s, f)| (s.to_string(), f.to_string()))
            .collect()
    }

    #[test]
    fn a_load_lies_in_every_enclosing_field_but_not_across_container_of() {
        let compiled = crate::fixture::compile("nested.c", NESTED);
        assert_eq!(
            fields_read(&compiled, "/* nested */"),
            pairs(&[
                ("context", "applied"),
                ("frame_params", "checksum"),
                ("params", "frame"),
            ])
        );
        assert_eq!(
            fields_read(&compiled, "/* array */"),
            pairs(&[("context", "applied"), ("params", "table")])
        );
        assert_eq!(
            fields_read(&compiled, "/* flat */"),
            pairs(&[("context", "applied"), ("params", "level")])
        );
        assert_eq!(
            fields_read(&compiled, "/* container */"),
            pairs(&[("outer", "before")])
        );
    }
}
