//! Call sites: labels through the argument and result slots for instrumented (and indirect)
//! callees, and summaries for external ones (`memcpy`, `memset`, `strcpy`, allocation, the
//! default union of the arguments).

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
            let n = self.zext_to_i64(arg(2));
            self.call(self.copy, &[arg(0), arg(1), n, ctrl]);
            if returns { label(arg(0)) } else { None }
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
                let l = label(arg(k)).unwrap_or_else(|| self.konst(0));
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

    /// `v` (an integer) zero-extended or cast to `i64`, at the builder's position.
    fn zext_to_i64(&self, v: LLVMValueRef) -> LLVMValueRef {
        // SAFETY: the builder is positioned inside a function of the live module and `v` is a
        // value of it (the invariant of [`Pass`]); `i64t` is a type of its context.
        unsafe { c::LLVMBuildZExtOrBitCast(self.b, v, self.i64t, c"".as_ptr()) }
    }
}
