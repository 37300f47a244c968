//! Instructions: each LLVM instruction becomes zero, one or several ir instructions
//! (`getelementptr` steps, materialised constant expressions), calls name their callee, and
//! integer instructions record their exact semantics ([`int_op`]).

use ir::{Callee, InstId, InstKind, IntOp, IntOpKind, OpKind, Predicate, ValueDef, ValueId};
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::LLVMTypeKind as Ty;
use llvm_sys::LLVMValueKind as Vk;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMTypeRef, LLVMValueRef};

use super::constants::{const_int, int_width, strip_casts};
use super::{Translator, key};
use crate::bitcode;

/// The exact integer semantics of `i` (an instruction of opcode `opcode`), if it computes on
/// integers.
pub(super) fn int_op(i: LLVMValueRef, opcode: Op) -> Option<IntOp> {
    use IntOpKind as K;
    // SAFETY: `i` is an instruction (the handle rule) of one of the opcodes below, each of
    // which has an operand 0 (binary operations, comparisons, casts, loads).
    let operand = |k| unsafe { c::LLVMTypeOf(c::LLVMGetOperand(i, k)) };
    // SAFETY: `i` is a live value (the handle rule); any value has a type.
    let result = || int_width(unsafe { c::LLVMTypeOf(i) });
    let kind = match opcode {
        Op::LLVMAdd => K::Add,
        Op::LLVMSub => K::Sub,
        Op::LLVMMul => K::Mul,
        Op::LLVMAnd => K::And,
        Op::LLVMOr => K::Or,
        Op::LLVMXor => K::Xor,
        Op::LLVMShl => K::Shl,
        Op::LLVMLShr => K::LShr,
        Op::LLVMAShr => K::AShr,
        Op::LLVMUDiv => K::UDiv,
        Op::LLVMSDiv => K::SDiv,
        Op::LLVMURem => K::URem,
        Op::LLVMSRem => K::SRem,
        Op::LLVMICmp => {
            use llvm_sys::LLVMIntPredicate as P;
            // SAFETY: `i` is an `icmp`, whose predicate is one of the integer predicates.
            K::Compare(match unsafe { c::LLVMGetICmpPredicate(i) } {
                P::LLVMIntEQ => Predicate::Eq,
                P::LLVMIntNE => Predicate::Ne,
                P::LLVMIntUGT => Predicate::Ugt,
                P::LLVMIntUGE => Predicate::Uge,
                P::LLVMIntULT => Predicate::Ult,
                P::LLVMIntULE => Predicate::Ule,
                P::LLVMIntSGT => Predicate::Sgt,
                P::LLVMIntSGE => Predicate::Sge,
                P::LLVMIntSLT => Predicate::Slt,
                P::LLVMIntSLE => Predicate::Sle,
            })
        }
        Op::LLVMZExt => K::ZExt { to: result()? },
        Op::LLVMSExt => K::SExt { to: result()? },
        Op::LLVMTrunc => K::Trunc { to: result()? },
        Op::LLVMLoad => {
            return Some(IntOp {
                kind: K::Load,
                bits: result()?,
            });
        }
        _ => return None,
    };
    Some(IntOp {
        kind,
        bits: int_width(operand(0))?,
    })
}

impl Translator {
    /// The ir values of operands `range` of `i` (which must have them).
    fn operands(&mut self, i: LLVMValueRef, range: std::ops::Range<u32>) -> Vec<ValueId> {
        // SAFETY: `i` is an instruction (the handle rule), hence a user; callers pass ranges
        // within its operands (checked here).
        let operands: Vec<LLVMValueRef> = unsafe {
            assert!(
                range.end <= c::LLVMGetNumOperands(i) as u32,
                "operands out of range"
            );
            range.map(|k| c::LLVMGetOperand(i, k)).collect()
        };
        operands.into_iter().map(|o| self.operand(o)).collect()
    }

    /// A terminator with successors LLVM does not give a decided value for (indirectbr,
    /// callbr, exception handling): a switch over all successors.
    fn switch_over_successors(&mut self, i: LLVMValueRef, value: ValueId) {
        // SAFETY: `i` is a terminator (the handle rule; every caller matched a terminator
        // opcode), with `n` successors read below `n`.
        let successors: Vec<_> = unsafe {
            let n = c::LLVMGetNumSuccessors(i);
            (0..n).map(|k| c::LLVMGetSuccessor(i, k)).collect()
        };
        let Some((&first, rest)) = successors.split_first() else {
            self.emit(InstKind::Unreachable, None);
            return;
        };
        let default = self.successor(first);
        let cases = rest
            .iter()
            .enumerate()
            .map(|(k, &s)| (k as i64 + 1, self.successor(s)))
            .collect();
        self.emit(
            InstKind::Switch {
                value,
                default,
                cases,
            },
            None,
        );
    }

    /// Translates one LLVM instruction of the current block (into zero, one or several ir
    /// instructions).
    pub(super) fn instruction(&mut self, i: LLVMValueRef) {
        let result = self.locals.get(&key(i)).copied();
        // SAFETY: `i` is an instruction of the module (the handle rule), hence a user, as
        // both calls require.
        let (opcode, nops) = unsafe {
            (
                c::LLVMGetInstructionOpcode(i),
                c::LLVMGetNumOperands(i) as u32,
            )
        };
        let op = |k: u32| {
            assert!(k < nops, "operand {k} of an instruction with {nops}");
            // SAFETY: `i` is a user (above) and `k` is below its operand count (asserted).
            unsafe { c::LLVMGetOperand(i, k) }
        };
        match opcode {
            Op::LLVMRet => {
                let value = (nops > 0).then(|| self.operand(op(0)));
                self.emit(InstKind::Return { value }, None);
            }
            Op::LLVMBr => {
                // SAFETY: `i` is a branch, as `LLVMIsConditional` requires.
                if unsafe { c::LLVMIsConditional(i) } != 0 {
                    // SAFETY: `i` is a conditional branch: it has a condition and successors
                    // 0 and 1.
                    let (cond, if_true, if_false) = unsafe {
                        (
                            c::LLVMGetCondition(i),
                            c::LLVMGetSuccessor(i, 0),
                            c::LLVMGetSuccessor(i, 1),
                        )
                    };
                    let cond = self.operand(cond);
                    let if_true = self.successor(if_true);
                    let if_false = self.successor(if_false);
                    self.emit(
                        InstKind::Branch {
                            cond,
                            if_true,
                            if_false,
                        },
                        None,
                    );
                } else {
                    // SAFETY: `i` is an unconditional branch, a terminator with one successor.
                    let target = self.successor(unsafe { c::LLVMGetSuccessor(i, 0) });
                    self.emit(InstKind::Jump { target }, None);
                }
            }
            Op::LLVMSwitch => {
                let value = self.operand(op(0));
                // SAFETY: `i` is a switch (a terminator): it has a default destination and
                // `n` successors, read below `n`.
                let (default, successors) = unsafe {
                    let n = c::LLVMGetNumSuccessors(i);
                    let successors: Vec<_> = (0..n).map(|k| c::LLVMGetSuccessor(i, k)).collect();
                    (c::LLVMGetSwitchDefaultDest(i), successors)
                };
                let default = self.successor(default);
                // Operands: value, default, then (case value, destination) pairs.
                let cases = (1..successors.len() as u32)
                    .map(|k| {
                        let case = const_int(op(2 * k)).unwrap_or(k as i64);
                        (case, self.successor(successors[k as usize]))
                    })
                    .collect();
                self.emit(
                    InstKind::Switch {
                        value,
                        default,
                        cases,
                    },
                    None,
                );
            }
            Op::LLVMIndirectBr => {
                let value = self.operand(op(0));
                self.switch_over_successors(i, value);
            }
            Op::LLVMInvoke | Op::LLVMCallBr => {
                self.call(i, result);
                let value = result.unwrap_or(self.undef);
                self.switch_over_successors(i, value);
            }
            Op::LLVMUnreachable => {
                self.emit(InstKind::Unreachable, None);
            }
            Op::LLVMResume | Op::LLVMCleanupRet | Op::LLVMCatchRet | Op::LLVMCatchSwitch => {
                let undef = self.undef;
                self.switch_over_successors(i, undef);
            }
            Op::LLVMFNeg => {
                let args = self.operands(i, 0..1);
                self.emit_value(
                    InstKind::Op {
                        op: OpKind::Unary,
                        args,
                    },
                    result,
                );
            }
            Op::LLVMAdd
            | Op::LLVMFAdd
            | Op::LLVMSub
            | Op::LLVMFSub
            | Op::LLVMMul
            | Op::LLVMFMul
            | Op::LLVMUDiv
            | Op::LLVMSDiv
            | Op::LLVMFDiv
            | Op::LLVMURem
            | Op::LLVMSRem
            | Op::LLVMFRem
            | Op::LLVMShl
            | Op::LLVMLShr
            | Op::LLVMAShr
            | Op::LLVMAnd
            | Op::LLVMOr
            | Op::LLVMXor => {
                let args = self.operands(i, 0..2);
                let v = self.emit_value(
                    InstKind::Op {
                        op: OpKind::Binary,
                        args,
                    },
                    result,
                );
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMICmp | Op::LLVMFCmp => {
                let args = self.operands(i, 0..2);
                let v = self.emit_value(
                    InstKind::Op {
                        op: OpKind::Compare,
                        args,
                    },
                    result,
                );
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMTrunc
            | Op::LLVMZExt
            | Op::LLVMSExt
            | Op::LLVMFPToUI
            | Op::LLVMFPToSI
            | Op::LLVMUIToFP
            | Op::LLVMSIToFP
            | Op::LLVMFPTrunc
            | Op::LLVMFPExt
            | Op::LLVMPtrToInt
            | Op::LLVMIntToPtr
            | Op::LLVMBitCast
            | Op::LLVMAddrSpaceCast
            | Op::LLVMFreeze => {
                let args = self.operands(i, 0..1);
                let v = self.emit_value(
                    InstKind::Op {
                        op: OpKind::Cast,
                        args,
                    },
                    result,
                );
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMAlloca => {
                // SAFETY: `i` is an alloca, as `LLVMGetAllocatedType` requires; any type has
                // a kind.
                let (ty, kind) = unsafe {
                    let ty = c::LLVMGetAllocatedType(i);
                    (ty, c::LLVMGetTypeKind(ty))
                };
                let structure = (kind == Ty::LLVMStructTypeKind).then(|| self.struct_id(ty));
                self.emit_value(InstKind::Alloca { structure }, result);
            }
            Op::LLVMLoad => {
                // SAFETY: `i` is a live value (the handle rule); any value has a type.
                let ptr = self.access_pointer(op(0), unsafe { c::LLVMTypeOf(i) });
                let v = self.emit_value(InstKind::Load { ptr }, result);
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMStore => {
                let value = self.operand(op(0));
                // SAFETY: the stored value is a live value (the handle rule) with a type.
                let ptr = self.access_pointer(op(1), unsafe { c::LLVMTypeOf(op(0)) });
                self.emit(InstKind::Store { value, ptr }, None);
            }
            Op::LLVMAtomicRMW | Op::LLVMAtomicCmpXchg => {
                // Reads the old value and writes a new one.
                let ptr = self.operand(op(0));
                let value = self.operand(op(nops - 1));
                self.emit(InstKind::Store { value, ptr }, None);
                self.emit_value(InstKind::Load { ptr }, result);
            }
            Op::LLVMGetElementPtr => {
                self.gep(i, result);
            }
            Op::LLVMPHI => {
                // SAFETY: `i` is a phi: it has `n` incoming (value, block) pairs, read below
                // `n`.
                let pairs: Vec<_> = unsafe {
                    let n = c::LLVMCountIncoming(i);
                    (0..n)
                        .map(|k| (c::LLVMGetIncomingValue(i, k), c::LLVMGetIncomingBlock(i, k)))
                        .collect()
                };
                let incoming = pairs
                    .into_iter()
                    .map(|(v, from)| (self.operand_in(v, false), self.successor(from)))
                    .collect();
                self.emit_value(InstKind::Phi { incoming }, result);
            }
            Op::LLVMSelect => {
                let cond = self.operand(op(0));
                let if_true = self.operand(op(1));
                let if_false = self.operand(op(2));
                self.emit_value(
                    InstKind::Select {
                        cond,
                        if_true,
                        if_false,
                    },
                    result,
                );
            }
            Op::LLVMCall => self.call(i, result),
            Op::LLVMFence => {}
            _ => {
                // extractvalue, insertvalue, vector operations, va_arg, landingpad, …
                let args = self.operands(i, 0..nops);
                if result.is_some() {
                    self.emit_value(
                        InstKind::Op {
                            op: OpKind::Other,
                            args,
                        },
                        result,
                    );
                }
            }
        }
    }

    /// `getelementptr` (instruction or constant expression): a `FieldAddr` per struct step, an
    /// `IndexAddr` per non-zero other index, a cast when nothing remains.
    pub(super) fn gep(&mut self, gep: LLVMValueRef, result: Option<ValueId>) -> ValueId {
        // SAFETY: `gep` is a `getelementptr` instruction or constant expression of the module
        // (the handle rule): a user with its base as operand 0 and the indices after it (read
        // below their count), and a source element type.
        let (base, indices, mut ty) = unsafe {
            let n = c::LLVMGetNumOperands(gep) as u32;
            let indices: Vec<LLVMValueRef> = (1..n).map(|k| c::LLVMGetOperand(gep, k)).collect();
            (
                c::LLVMGetOperand(gep, 0),
                indices,
                c::LLVMGetGEPSourceElementType(gep),
            )
        };
        let mut current = self.operand(base);
        let mut last_step: Option<InstId> = None;
        for (k, index) in (1..).zip(indices) {
            let constant = const_int(index);
            // SAFETY: `ty` is a type of the module's context; any type has a kind.
            let type_kind = unsafe { c::LLVMGetTypeKind(ty) };
            let step = if k == 1 {
                // Over the pointer itself: pointer arithmetic unless zero.
                (constant != Some(0)).then(|| InstKind::IndexAddr {
                    base: current,
                    index: self.operand(index),
                })
            } else if type_kind == Ty::LLVMStructTypeKind {
                let field = constant.unwrap_or(0) as u32;
                let structure = self.struct_id(ty);
                // SAFETY: `ty` is a struct type; the field index is checked against its
                // element count (a well-formed module's always is within it).
                ty = unsafe {
                    assert!(
                        field < c::LLVMCountStructElementTypes(ty),
                        "getelementptr field {field} out of range"
                    );
                    c::LLVMStructGetTypeAtIndex(ty, field)
                };
                Some(InstKind::FieldAddr {
                    base: current,
                    structure,
                    field,
                })
            } else {
                if matches!(type_kind, Ty::LLVMArrayTypeKind | Ty::LLVMVectorTypeKind) {
                    // SAFETY: `ty` is an array or vector type, which has an element type.
                    ty = unsafe { c::LLVMGetElementType(ty) };
                }
                (constant != Some(0)).then(|| InstKind::IndexAddr {
                    base: current,
                    index: self.operand(index),
                })
            };
            if let Some(step) = step {
                current = self.emit_value(step, None);
                last_step = self.program.insts.last_id();
            }
        }
        match (last_step, result) {
            // The last step defines the GEP's own (pre-allocated) value.
            (Some(last), Some(r)) => {
                self.program.values[current] = ValueDef::Undef;
                self.program.insts[last].result = Some(r);
                self.program.values[r] = ValueDef::Inst(last);
                r
            }
            (Some(_), None) => current,
            (None, result) => self.emit_value(
                InstKind::Op {
                    op: OpKind::Cast,
                    args: vec![current],
                },
                result,
            ),
        }
    }

    /// The pointer of a load or store. LLVM folds the constant `&global.first_field` to
    /// `@global`, so an access of another type than the global's struct at the global's
    /// address is made a field-0 access again (descending through nested first fields), as
    /// field-sensitive points-to and struct-field option sources expect.
    fn access_pointer(&mut self, ptr: LLVMValueRef, access: LLVMTypeRef) -> ValueId {
        let base = strip_casts(ptr);
        let mut current = self.operand(ptr);
        // SAFETY: `base` is a value of the module (the handle rule); any value has a kind.
        if unsafe { c::LLVMGetValueKind(base) } != Vk::LLVMGlobalVariableValueKind {
            return current;
        }
        // SAFETY: `base` is a global variable, which has a value type.
        let mut ty = unsafe { c::LLVMGlobalGetValueType(base) };
        while ty != access {
            // SAFETY: `ty` is a type of the module's context; any type has a kind.
            let kind = unsafe { c::LLVMGetTypeKind(ty) };
            if kind == Ty::LLVMArrayTypeKind {
                // Element 0 of an array is the array (arrays are collapsed to their base).
                // SAFETY: `ty` is an array type, which has an element type.
                ty = unsafe { c::LLVMGetElementType(ty) };
                continue;
            }
            if kind != Ty::LLVMStructTypeKind {
                break;
            }
            // SAFETY: `ty` is a struct type, as both calls require.
            let empty = unsafe {
                c::LLVMIsOpaqueStruct(ty) != 0 || c::LLVMCountStructElementTypes(ty) == 0
            };
            if empty {
                break;
            }
            let structure = self.struct_id(ty);
            current = self.emit_value(
                InstKind::FieldAddr {
                    base: current,
                    structure,
                    field: 0,
                },
                None,
            );
            // SAFETY: `ty` is a non-opaque struct type with at least one element (checked
            // above), so index 0 is valid.
            ty = unsafe { c::LLVMStructGetTypeAtIndex(ty, 0) };
        }
        current
    }

    /// A call (or invoke, callbr): its callee, direct or through a pointer, and arguments;
    /// ignored intrinsics emit nothing (debug variables' types are walked for field names).
    fn call(&mut self, i: LLVMValueRef, result: Option<ValueId>) {
        // SAFETY: `i` is a call-like instruction of the module (the handle rule; every caller
        // matched its opcode), which has a called value and argument operands; any value has
        // a kind.
        let (called, nargs, kind) = unsafe {
            let called = strip_casts(c::LLVMGetCalledValue(i));
            (
                called,
                c::LLVMGetNumArgOperands(i),
                c::LLVMGetValueKind(called),
            )
        };
        if kind == Vk::LLVMFunctionValueKind {
            let name = bitcode::value_name(called);
            if bitcode::is_ignored_intrinsic(&name) {
                if name.starts_with("llvm.dbg.") && nargs > 1 {
                    // The variable's type may name struct fields.
                    // SAFETY: the call has more than one argument, so operand 1 exists (a
                    // variable wrapped as a value, which `LLVMValueAsMetadata` unwraps).
                    let var = unsafe { c::LLVMValueAsMetadata(c::LLVMGetOperand(i, 1)) };
                    if !var.is_null() {
                        self.debug_structs.walk(self.context, var);
                    }
                }
                return;
            }
        }
        let args = self.operands(i, 0..nargs);
        if kind == Vk::LLVMInlineAsmValueKind {
            if result.is_some() {
                self.emit_value(
                    InstKind::Op {
                        op: OpKind::Other,
                        args,
                    },
                    result,
                );
            }
            return;
        }
        let callee = match self
            .values
            .get(&key(called))
            .map(|&v| self.program.value(v))
        {
            Some(ValueDef::Function(f)) => Callee::Direct(*f),
            _ => Callee::Indirect(self.operand(called)),
        };
        let result = result.unwrap_or_else(|| self.program.add_value(ValueDef::Undef));
        self.emit(InstKind::Call { callee, args }, Some(result));
    }
}
