//! Labels as built code: constants, unions (two labels, or `n` through a generated helper),
//! loads of label slots and thread-locals, argument slots, and shadow memory loads and stores.

use std::ffi::CString;

use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMTypeRef, LLVMValueRef};

use super::{Label, MAX_ARGS, Pass, option_label};

impl Pass {
    /// A call of `f` (its type and function) with `args`, at the builder's position.
    pub(super) fn call(
        &self,
        f: (LLVMTypeRef, LLVMValueRef),
        args: &[LLVMValueRef],
    ) -> LLVMValueRef {
        let mut args = args.to_vec();
        // SAFETY: the builder is positioned inside a function of the live module and `f` is a
        // function of it with its type (the invariant of [`Pass`]); `args` is a live vector
        // whose length is passed, of the values the callee's type takes (the module is
        // verified after the pass).
        unsafe {
            c::LLVMBuildCall2(
                self.b,
                f.0,
                f.1,
                args.as_mut_ptr(),
                args.len() as u32,
                c"".as_ptr(),
            )
        }
    }

    /// The union of two labels (no code when one is known to be 0, or both are the same).
    pub(super) fn union(&self, a: Label, b: Label) -> Label {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) if x == y => Some(x),
            (Some(x), Some(y)) => Some(self.call(self.union, &[x, y])),
        }
    }

    /// The `i32` constant `v`.
    pub(super) fn konst(&self, v: u64) -> LLVMValueRef {
        // SAFETY: `i32t` is a type of the live context (the invariant of [`Pass`]).
        unsafe { c::LLVMConstInt(self.i32t, v, 0) }
    }

    /// The `i64` constant `v`.
    pub(super) fn size(&self, v: u64) -> LLVMValueRef {
        // SAFETY: `i64t` is a type of the live context (the invariant of [`Pass`]).
        unsafe { c::LLVMConstInt(self.i64t, v, 0) }
    }

    /// A load of the `i32` thread-local `g` (`__knobs_taint_ctrl`, `__knobs_taint_ret`).
    pub(super) fn load_tls(&self, g: LLVMValueRef) -> LLVMValueRef {
        self.load_i32(g)
    }

    /// A load of the `i32` at `slot`, at the builder's position.
    pub(super) fn load_i32(&self, slot: LLVMValueRef) -> LLVMValueRef {
        // SAFETY: the builder is positioned inside a function of the live module and `slot`
        // is a pointer value of it (the invariant of [`Pass`]).
        unsafe { c::LLVMBuildLoad2(self.b, self.i32t, slot, c"".as_ptr()) }
    }

    /// The label of the `n` bytes at `ptr` in shadow memory.
    pub(super) fn shadow_load(&self, ptr: LLVMValueRef, n: u64) -> LLVMValueRef {
        match self.inline_loads.get(&n) {
            Some(&f) => self.call(f, &[ptr]),
            None => self.call(self.load, &[ptr, self.size(n)]),
        }
    }

    /// Sets the label of the `n` bytes at `ptr` in shadow memory to `l`.
    pub(super) fn shadow_store(&self, ptr: LLVMValueRef, n: u64, l: LLVMValueRef) {
        match self.inline_stores.get(&n) {
            Some(&f) => self.call(f, &[ptr, l]),
            None => self.call(self.store, &[ptr, self.size(n), l]),
        };
    }

    /// The address of argument label slot `k` (below [`MAX_ARGS`]) in `__knobs_taint_args`.
    pub(super) fn arg_slot(&self, k: u32) -> LLVMValueRef {
        let mut idx = [self.konst(0), self.konst(u64::from(k))];
        // SAFETY: the builder is positioned inside a function of the live module (the
        // invariant of [`Pass`]); `args` is the `[MAX_ARGS x i32]` thread-local the array type
        // describes, and `idx` a live local array of the two indices passed.
        unsafe {
            c::LLVMBuildInBoundsGEP2(
                self.b,
                c::LLVMArrayType2(self.i32t, u64::from(MAX_ARGS)),
                self.args,
                idx.as_mut_ptr(),
                2,
                c"".as_ptr(),
            )
        }
    }

    /// The store size of a type in bytes, 0 for an unsized one.
    pub(super) fn store_size(&self, ty: LLVMTypeRef) -> u64 {
        // SAFETY: `ty` is a type of the live context and `td` the module's data layout (the
        // invariant of [`Pass`]); the size is asked only of a sized type.
        unsafe {
            if c::LLVMTypeIsSized(ty) == 0 {
                return 0;
            }
            llvm_sys::target::LLVMStoreSizeOfType(self.td, ty)
        }
    }

    /// Option indices + 1 `opts` (as the sources map holds them) as one label.
    pub(super) fn options_label(&self, opts: &[u32]) -> Label {
        let mut small = 0u32;
        let mut l = None;
        for &o in opts {
            match option_label(o - 1) {
                bits if bits & 0x8000_0000 == 0 => small |= bits,
                big => l = self.union(l, Some(self.konst(u64::from(big)))),
            }
        }
        if small != 0 {
            l = self.union(Some(self.konst(u64::from(small))), l);
        }
        l
    }

    /// The label of a source's options, with a call telling the runtime the program read
    /// them (the order SPLat explores by), at the builder's position.
    pub(super) fn source_label(&self, opts: &[u32]) -> Label {
        let l = self.options_label(opts);
        if let Some(l) = l {
            self.call(self.read, &[l]);
        }
        l
    }

    /// `internal i32 @__knobs_taint_union_<n>(i32 × n)` (always inlined): the union of `n`
    /// labels, an `or` of them all unless one is an interned set (then a chain of the
    /// runtime's unions, out of line). One branch for any `n`, where a chain of
    /// [`Pass::union`]s has one per label: frames of functions with hundreds of decisions
    /// union many slots.
    pub(super) fn union_n(&self, n: usize) -> (LLVMTypeRef, LLVMValueRef) {
        if let Some(&f) = self.unions.borrow().get(&n) {
            return f;
        }
        let name = CString::new(format!("__knobs_taint_union_{n}")).unwrap();
        // SAFETY: `m` and `ctx` are live (the invariant of [`Pass`]). The function is added to
        // `m` with a type of the context (`params` is a live vector of `n` types, its length
        // passed) under a NUL-terminated name; the attribute name is passed with its length
        // (12); the blocks are appended to the new function and a builder of its own, disposed
        // of at the end, fills them: parameters are read below `n` (`n >= 2`: a frame unions
        // one label without a call), each operand is an `i32` of the function, and the
        // metadata array `weights` is a live local of the three operands passed.
        unsafe {
            let b = c::LLVMCreateBuilderInContext(self.ctx);
            let mut params = vec![self.i32t; n];
            let ty = c::LLVMFunctionType(self.i32t, params.as_mut_ptr(), n as u32, 0);
            let f = c::LLVMAddFunction(self.m, name.as_ptr(), ty);
            c::LLVMSetLinkage(f, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            let kind = c::LLVMGetEnumAttributeKindForName(c"alwaysinline".as_ptr(), 12);
            let attr = c::LLVMCreateEnumAttribute(self.ctx, kind, 0);
            c::LLVMAddAttributeAtIndex(f, llvm_sys::LLVMAttributeFunctionIndex, attr);
            let entry = c::LLVMAppendBasicBlockInContext(self.ctx, f, c"entry".as_ptr());
            let done = c::LLVMAppendBasicBlockInContext(self.ctx, f, c"done".as_ptr());
            let slow = c::LLVMAppendBasicBlockInContext(self.ctx, f, c"slow".as_ptr());
            c::LLVMPositionBuilderAtEnd(b, entry);
            let labels: Vec<LLVMValueRef> = (0..n).map(|k| c::LLVMGetParam(f, k as u32)).collect();
            let mut or = labels[0];
            for &l in &labels[1..] {
                or = c::LLVMBuildOr(b, or, l, c"".as_ptr());
            }
            let big = c::LLVMBuildICmp(
                b,
                llvm_sys::LLVMIntPredicate::LLVMIntSLT,
                or,
                self.konst(0),
                c"".as_ptr(),
            );
            let br = c::LLVMBuildCondBr(b, big, slow, done);
            let mut weights = [
                c::LLVMMDStringInContext2(self.ctx, c"branch_weights".as_ptr(), 14),
                c::LLVMValueAsMetadata(self.konst(1)),
                c::LLVMValueAsMetadata(self.konst(2000)),
            ];
            let prof = c::LLVMMDNodeInContext2(self.ctx, weights.as_mut_ptr(), 3);
            c::LLVMSetMetadata(
                br,
                c::LLVMGetMDKindIDInContext(self.ctx, c"prof".as_ptr(), 4),
                c::LLVMMetadataAsValue(self.ctx, prof),
            );
            c::LLVMPositionBuilderAtEnd(b, done);
            c::LLVMBuildRet(b, or);
            c::LLVMPositionBuilderAtEnd(b, slow);
            let slow_union = self.union_slow;
            let mut l = labels[0];
            for &x in &labels[1..] {
                let mut args = [l, x];
                l = c::LLVMBuildCall2(
                    b,
                    slow_union.0,
                    slow_union.1,
                    args.as_mut_ptr(),
                    2,
                    c"".as_ptr(),
                );
            }
            c::LLVMBuildRet(b, l);
            c::LLVMDisposeBuilder(b);
            self.unions.borrow_mut().insert(n, (ty, f));
            (ty, f)
        }
    }
}
