//! Call sites: labels through the argument and result slots for instrumented (and indirect)
//! callees (a by-value struct's slot with its bytes' labels), and summaries for external ones
//! (`memcpy`, `memset`, `strcpy`, allocation, the default union of the arguments).

use llvm_sys::core as c;
use llvm_sys::prelude::LLVMValueRef;

use super::{Label, MAX_ARGS, Pass};
use crate::bitcode;

impl Pass {
    /// A call: summaries for external functions, the label slots for instrumented ones.
    pub(super) fn call_site(
        &self,
        i: LLVMValueRef,
        before: &dyn Fn(),
        after: &dyn Fn(),
        label: &dyn Fn(LLVMValueRef) -> Label,
        source: &[u32],
    ) -> Label {
        // SAFETY: `i` is a call of the live module (the invariant of [`Pass`]): a user with
        // argument operands and a called value; any value has a type, any type a kind, and
        // blocks are counted only of a function (`LLVMIsAFunction`).
        let (nargs, nops, func, returns) = unsafe {
            let callee = c::LLVMGetCalledValue(i);
            let func = (!c::LLVMIsAFunction(callee).is_null()).then_some(callee);
            (
                c::LLVMGetNumArgOperands(i),
                c::LLVMGetNumOperands(i) as u32,
                func.map(|f| (f, c::LLVMCountBasicBlocks(f) == 0)),
                c::LLVMGetTypeKind(c::LLVMTypeOf(i)) != llvm_sys::LLVMTypeKind::LLVMVoidTypeKind,
            )
        };
        let arg = |k: u32| {
            assert!(k < nops, "operand {k} of a call with {nops}");
            // SAFETY: `i` is a user and `k` is below its operand count (asserted).
            unsafe { c::LLVMGetOperand(i, k) }
        };
        let name = func
            .map(|(f, _)| bitcode::value_name(f))
            .unwrap_or_default();
        let union_args = || {
            let mut l = None;
            for k in 0..nargs {
                l = self.union(l, label(arg(k)));
            }
            l
        };
        if bitcode::is_ignored_intrinsic(&name) || name.starts_with("__knobs_taint_") {
            return None;
        }
        let base = |n: &str| {
            name == n
                || name
                    .strip_prefix("llvm.")
                    .is_some_and(|r| r.starts_with(n) && r[n.len()..].starts_with('.'))
        };
        let result: Label = if base("memcpy") || base("memmove") {
            after();
            let ctrl = self.load_tls(self.ctrl);
            // A copy out of an option's place (`sources.rs`): every byte of the copy holds
            // the option, and the copy reads it.
            let extra = match self.source_label(source) {
                Some(s) => self.union(Some(ctrl), Some(s)).unwrap(),
                None => ctrl,
            };
            let n = self.zext_to_i64(arg(2));
            self.call(self.copy, &[arg(0), arg(1), n, extra]);
            return if returns { label(arg(0)) } else { None };
        } else if base("memset") {
            after();
            let ctrl = self.load_tls(self.ctrl);
            let l = self.union(label(arg(1)), Some(ctrl)).unwrap();
            let n = self.zext_to_i64(arg(2));
            self.call(self.store, &[arg(0), n, l]);
            if returns { label(arg(0)) } else { None }
        } else if name == "strcpy" || name == "strdup" {
            after();
            let ctrl = self.load_tls(self.ctrl);
            let src = if name == "strcpy" { arg(1) } else { arg(0) };
            self.call(self.strcopy, &[i, src, ctrl]);
            if name == "strcpy" {
                label(arg(0))
            } else {
                None
            }
        } else if matches!(name.as_str(), "malloc" | "calloc" | "realloc" | "free") {
            if name == "malloc" {
                after();
                let n = self.zext_to_i64(arg(0));
                self.call(self.store, &[i, n, self.konst(0)]);
            }
            None
        } else if let Some((_, true)) = func {
            // External: the default summary.
            if returns {
                after();
                union_args()
            } else {
                None
            }
        } else {
            // Instrumented (or indirect): argument slots; an indirect call also presets the
            // result to the default summary in case the callee is not instrumented.
            before();
            for k in 0..nargs.min(MAX_ARGS) {
                let mut l = label(arg(k));
                // A struct passed by value reaches the callee as a copy the code generator
                // makes, with no shadow: the pointer's label carries what the object's bytes
                // hold instead, and the callee's loads through it add their pointer's label.
                if let Some(size) = self.byval_size(i, k) {
                    l = self.union(l, Some(self.shadow_load(arg(k), size)));
                }
                let l = l.unwrap_or_else(|| self.konst(0));
                let slot = self.arg_slot(k);
                // SAFETY: the builder is before the call (`before`); an `i32` label stored
                // to an `i32` argument slot.
                unsafe { c::LLVMBuildStore(self.b, l, slot) };
            }
            if func.is_none() && returns {
                let l = union_args().unwrap_or_else(|| self.konst(0));
                // SAFETY: as above; to the `i32` thread-local result label.
                unsafe { c::LLVMBuildStore(self.b, l, self.ret) };
            }
            if returns {
                after();
                Some(self.load_tls(self.ret))
            } else {
                None
            }
        };
        if source.is_empty() {
            return result;
        }
        after();
        let s = self.source_label(source);
        self.union(result, s)
    }

    /// The size of the object argument `k` of `call` passes by value (`byval`), if it does.
    fn byval_size(&self, call: LLVMValueRef, k: u32) -> Option<u64> {
        // SAFETY: `call` is a call of the live module (the invariant of [`Pass`]); the
        // attribute name is passed with its length; attribute index `k + 1` is parameter `k`
        // (0 is the result), and a null attribute means none; a `byval` attribute is a type
        // attribute, whose value is a type of the context.
        unsafe {
            let kind = c::LLVMGetEnumAttributeKindForName(c"byval".as_ptr(), 5);
            let attribute = c::LLVMGetCallSiteEnumAttribute(call, k + 1, kind);
            if attribute.is_null() || c::LLVMIsTypeAttribute(attribute) == 0 {
                return None;
            }
            Some(self.store_size(c::LLVMGetTypeAttributeValue(attribute)))
        }
    }

    /// `v` (an integer) zero-extended or cast to `i64`, at the builder's position.
    fn zext_to_i64(&self, v: LLVMValueRef) -> LLVMValueRef {
        // SAFETY: the builder is positioned inside a function of the live module and `v` is a
        // value of it (the invariant of [`Pass`]); `i64t` is a type of its context.
        unsafe { c::LLVMBuildZExtOrBitCast(self.b, v, self.i64t, c"".as_ptr()) }
    }
}
