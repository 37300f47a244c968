//! Functions and blocks: declaring every function, translating a body block by block (one
//! ir block per LLVM block, result values allocated up front), and emitting ir instructions
//! with their position in the LLVM block.

use ir::{BlockId, FuncId, Inst, InstId, InstKind, ValueDef, ValueId};
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::LLVMTypeKind as Ty;
use llvm_sys::core as c;
use llvm_sys::debuginfo as di;
use llvm_sys::prelude::{LLVMBasicBlockRef, LLVMValueRef};

use super::globals::is_scalar_type;
use super::instruction::int_op;
use super::{FunctionShape, Translator, key};
use crate::{Error, bitcode};

impl Translator {
    /// Declares every function of the module (but ignored intrinsics), returning each with its
    /// id.
    pub(super) fn declare_functions(&mut self) -> Result<Vec<(LLVMValueRef, FuncId)>, Error> {
        let mut defined = Vec::new();
        for (k, f) in bitcode::functions(self.module).into_iter().enumerate() {
            let name = bitcode::value_name(f);
            if bitcode::is_ignored_intrinsic(&name) {
                continue;
            }
            let name = if name.is_empty() {
                format!("<unnamed function {k}>")
            } else {
                name
            };
            // SAFETY: `f` is a function of the module (the handle rule), as
            // `LLVMCountParams` requires.
            let params = unsafe { c::LLVMCountParams(f) } as usize;
            let id = self.program.add_function(&name, params)?;
            self.values.insert(key(f), self.program.func(id).address);
            defined.push((f, id));
        }
        Ok(defined)
    }

    /// The ir block of an LLVM block of the current function.
    pub(super) fn successor(&self, bb: LLVMBasicBlockRef) -> BlockId {
        self.blocks[&key(bb)]
    }

    /// Translates the body of function `f` (declared as `id`); a declaration gets its
    /// parameters' scalar facts only.
    pub(super) fn function(&mut self, f: LLVMValueRef, id: FuncId) {
        let llvm_blocks = bitcode::blocks(f);
        self.locals.clear();
        self.blocks.clear();
        for (k, &p) in self.program.func(id).params.clone().iter().enumerate() {
            // SAFETY: `f` is a function of the module (the handle rule) and `k` is below its
            // parameter count (`id` was declared with `LLVMCountParams(f)` parameters).
            let (param, ty) = unsafe {
                let param = c::LLVMGetParam(f, k as u32);
                (param, c::LLVMTypeOf(param))
            };
            self.locals.insert(key(param), p);
            if is_scalar_type(ty) {
                self.program.set_scalar(p);
            }
        }
        if llvm_blocks.is_empty() {
            return;
        }
        // SAFETY: `f` is a function of the module (the handle rule); its subprogram is null
        // or a `DISubprogram`.
        let subprogram = unsafe { di::LLVMGetSubprogram(f) };
        let mut lines: Option<(u32, u32)> = None;
        let file = if subprogram.is_null() {
            None
        } else {
            self.debug_structs.walk(self.context, subprogram);
            // SAFETY: `subprogram` is a non-null `DISubprogram`.
            let line = unsafe { di::LLVMDISubprogramGetLine(subprogram) };
            if line > 0 {
                lines = Some((line, line));
            }
            self.file_of_scope(subprogram)
        };
        let func = &mut self.program.functions[id];
        func.is_declaration = false;
        func.file = file;
        let mut per_block = Vec::with_capacity(llvm_blocks.len());
        for (local, &bb) in llvm_blocks.iter().enumerate() {
            let b = self.program.blocks.push(ir::Block {
                func: id,
                local: local as u32,
                insts: Vec::new(),
            });
            self.program.functions[id].blocks.push(b);
            self.blocks.insert(key(bb), b);
            let insts = bitcode::instructions(bb);
            for &i in &insts {
                // SAFETY: `i` is an instruction of the module (the handle rule); any value
                // has a type and any type a kind.
                let (ty, kind) = unsafe {
                    let ty = c::LLVMTypeOf(i);
                    (ty, c::LLVMGetTypeKind(ty))
                };
                if kind != Ty::LLVMVoidTypeKind {
                    let v = self.program.add_value(ValueDef::Undef);
                    self.locals.insert(key(i), v);
                    if is_scalar_type(ty) {
                        self.program.set_scalar(v);
                    }
                }
            }
            per_block.push((b, insts));
        }
        let mut instructions = 0u32;
        for (b, insts) in per_block {
            self.block = b;
            instructions += insts.len() as u32;
            for (k, &i) in insts.iter().enumerate() {
                self.llvm_index = k as u32;
                self.loc = self.debug_loc(i, file);
                if self.loc.line > 0 {
                    lines = Some(match lines {
                        None => (self.loc.line, self.loc.line),
                        Some((a, z)) => (a.min(self.loc.line), z.max(self.loc.line)),
                    });
                }
                self.instruction(i);
            }
            let ends_well = self
                .program
                .terminator(b)
                .is_some_and(|t| self.program.inst(t).kind.is_terminator());
            if !ends_well {
                self.emit(InstKind::Unreachable, None);
            }
        }
        self.program.functions[id].lines = lines;
        self.positions.shape[id] = FunctionShape {
            blocks: llvm_blocks.len() as u32,
            instructions,
        };
    }

    /// Appends an instruction to the current block, at the current LLVM instruction.
    pub(super) fn emit(&mut self, kind: InstKind, result: Option<ValueId>) -> InstId {
        let id = self.program.insts.next_id();
        if let Some(r) = result {
            self.program.values[r] = ValueDef::Inst(id);
        }
        self.program.insts.push(Inst {
            kind,
            result,
            block: self.block,
            loc: self.loc,
        });
        self.program.blocks[self.block].insts.push(id);
        self.positions.inst_index.push(self.llvm_index);
        id
    }

    /// Records the exact integer semantics of the instruction defining `v` (translated from
    /// `i`), when `i` works on integers of at most 64 bits (`Program::int_ops`).
    pub(super) fn know_int_op(&mut self, v: ValueId, i: LLVMValueRef, opcode: Op) {
        if let (Some(op), ValueDef::Inst(id)) = (int_op(i, opcode), &self.program.values[v]) {
            self.program.int_ops.insert(*id, op);
        }
    }

    /// Emits an instruction defining `result`, or a fresh value if `None`.
    pub(super) fn emit_value(&mut self, kind: InstKind, result: Option<ValueId>) -> ValueId {
        let v = result.unwrap_or_else(|| self.program.add_value(ValueDef::Undef));
        self.emit(kind, Some(v));
        v
    }
}
