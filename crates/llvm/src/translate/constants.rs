//! Operands: the ir value of an LLVM operand — a local, a module-wide value, or a constant
//! (integers, floats, C strings, constant expressions, aliases) made on first use.

use ir::{InstKind, OpKind, ValueDef, ValueId};
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::LLVMTypeKind as Ty;
use llvm_sys::LLVMValueKind as Vk;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMTypeRef, LLVMValueRef};

use super::{Translator, key};

/// The value of an integer constant of at most 64 bits (sign-extended).
pub(super) fn const_int(v: LLVMValueRef) -> Option<i64> {
    // SAFETY: `v` is a value of the module (the handle rule); the `&&` asks the type's width
    // and the constant's value only of a `ConstantInt`, whose type is an integer type.
    unsafe {
        (c::LLVMGetValueKind(v) == Vk::LLVMConstantIntValueKind
            && c::LLVMGetIntTypeWidth(c::LLVMTypeOf(v)) <= 64)
            .then(|| c::LLVMConstIntGetSExtValue(v))
    }
}

/// Width of an integer type of at most 64 bits.
pub(super) fn int_width(ty: LLVMTypeRef) -> Option<u32> {
    // SAFETY: `ty` is a type of the module's context (the handle rule); its width is asked
    // only once its kind says it is an integer type.
    unsafe {
        (c::LLVMGetTypeKind(ty) == Ty::LLVMIntegerTypeKind)
            .then(|| c::LLVMGetIntTypeWidth(ty))
            .filter(|w| (1..=64).contains(w))
    }
}

/// The contents of a constant global array of characters, up to its first NUL.
pub(super) fn c_string(global: LLVMValueRef) -> Option<String> {
    // SAFETY: `global` is a value of the module (the handle rule). Constness and the
    // initializer are asked only of a global variable; the initializer is null or a constant,
    // checked, and asked whether it is a string only once `LLVMIsAConstantDataArray` says it
    // is a `ConstantDataSequential`, as is `LLVMGetAsString`, which returns `len` bytes owned
    // by the constant (alive with the module), copied before the block ends.
    unsafe {
        if c::LLVMGetValueKind(global) != Vk::LLVMGlobalVariableValueKind
            || c::LLVMIsGlobalConstant(global) == 0
        {
            return None;
        }
        let init = c::LLVMGetInitializer(global);
        if init.is_null()
            || c::LLVMIsAConstantDataArray(init).is_null()
            || c::LLVMIsConstantString(init) == 0
        {
            return None;
        }
        let mut len = 0usize;
        let p = c::LLVMGetAsString(init, &mut len);
        let bytes = std::slice::from_raw_parts(p as *const u8, len);
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(len);
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

/// Strips casts (constant expressions that keep the address) off a constant.
pub(super) fn strip_casts(mut v: LLVMValueRef) -> LLVMValueRef {
    // SAFETY: `v` is a value of the module (the handle rule); the opcode is asked only of a
    // constant expression (the `&&`), and operand 0 taken only of a cast, which has one.
    unsafe {
        while c::LLVMGetValueKind(v) == Vk::LLVMConstantExprValueKind
            && matches!(
                c::LLVMGetConstOpcode(v),
                Op::LLVMBitCast | Op::LLVMAddrSpaceCast | Op::LLVMPtrToInt | Op::LLVMIntToPtr
            )
        {
            v = c::LLVMGetOperand(v, 0);
        }
    }
    v
}

impl Translator {
    /// The ir value of an operand. With `emit`, constant expressions that compute addresses
    /// (a field of a global struct) become instructions before the user; without (phi
    /// operands, which must stay at the block's start), they collapse to their base.
    pub(super) fn operand_in(&mut self, v: LLVMValueRef, emit: bool) -> ValueId {
        if let Some(&id) = self.locals.get(&key(v)) {
            return id;
        }
        if let Some(&id) = self.values.get(&key(v)) {
            return id;
        }
        // SAFETY: `v` is an operand in the module (the handle rule); any value has a kind.
        let def = match unsafe { c::LLVMGetValueKind(v) } {
            Vk::LLVMConstantIntValueKind => match const_int(v) {
                Some(n) => ValueDef::ConstInt(n),
                None => ValueDef::Undef,
            },
            Vk::LLVMConstantFPValueKind => {
                let mut lost = 0;
                // SAFETY: `v` is a `ConstantFP`, as `LLVMConstRealGetDouble` requires, and
                // `lost` a live local it writes.
                ValueDef::ConstFloat(unsafe { c::LLVMConstRealGetDouble(v, &mut lost) })
            }
            Vk::LLVMConstantExprValueKind => return self.constant_expr(v, emit),
            Vk::LLVMGlobalAliasValueKind => {
                // SAFETY: `v` is a global alias, as `LLVMAliasGetAliasee` requires.
                let target = unsafe { c::LLVMAliasGetAliasee(v) };
                let id = self.operand_in(target, false);
                self.values.insert(key(v), id);
                return id;
            }
            _ => return self.undef,
        };
        let id = self.program.add_value(def);
        self.values.insert(key(v), id);
        id
    }

    pub(super) fn operand(&mut self, v: LLVMValueRef) -> ValueId {
        self.operand_in(v, true)
    }

    /// A constant expression: a C string's tail, a cast's operand, an emitted `getelementptr`
    /// or generic operation (with `emit`; else its base, or undef).
    fn constant_expr(&mut self, v: LLVMValueRef, emit: bool) -> ValueId {
        // SAFETY: `v` is a constant expression of the module (the caller checked its kind;
        // the handle rule), as `LLVMGetConstOpcode` requires.
        let opcode = unsafe { c::LLVMGetConstOpcode(v) };
        match opcode {
            Op::LLVMGetElementPtr => {
                // SAFETY: a `getelementptr` expression has its base as operand 0.
                let base = strip_casts(unsafe { c::LLVMGetOperand(v, 0) });
                if let Some(s) = c_string(base) {
                    // `"text" + k`: the rest of the string.
                    // SAFETY: a constant expression is a user; its operands 1.. are read
                    // below their count.
                    let indices: Vec<LLVMValueRef> = unsafe {
                        let n = c::LLVMGetNumOperands(v);
                        (1..n as u32).map(|k| c::LLVMGetOperand(v, k)).collect()
                    };
                    let offset = indices
                        .into_iter()
                        .map(|index| const_int(index).unwrap_or(0))
                        .sum::<i64>()
                        .clamp(0, s.len() as i64) as usize;
                    let id = self.program.const_str(s.get(offset..).unwrap_or(""));
                    self.values.insert(key(v), id);
                    return id;
                }
                if emit {
                    self.gep(v, None)
                } else {
                    self.operand_in(base, false)
                }
            }
            Op::LLVMBitCast | Op::LLVMAddrSpaceCast | Op::LLVMPtrToInt | Op::LLVMIntToPtr => {
                // SAFETY: a cast expression has one operand.
                self.operand_in(unsafe { c::LLVMGetOperand(v, 0) }, emit)
            }
            _ if emit => {
                // SAFETY: a constant expression is a user; its operands are read below their
                // count.
                let operands: Vec<LLVMValueRef> = unsafe {
                    let n = c::LLVMGetNumOperands(v);
                    (0..n as u32).map(|k| c::LLVMGetOperand(v, k)).collect()
                };
                let args = operands.into_iter().map(|o| self.operand(o)).collect();
                self.emit_value(
                    InstKind::Op {
                        op: OpKind::Other,
                        args,
                    },
                    None,
                )
            }
            _ => self.undef,
        }
    }
}
