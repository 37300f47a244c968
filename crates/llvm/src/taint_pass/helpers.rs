//! The helpers the instrumented code calls, written in LLVM IR and linked into the module:
//! label unions, inline shadow loads and stores, and the per-site decision check.

use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMContextRef, LLVMModuleRef};

use crate::bitcode;

/// Accesses of up to this many bytes (and of exactly 32) get an inline shadow access.
pub(super) const INLINE_ACCESS: u64 = 16;

/// The helpers the instrumented code calls, in LLVM IR (linked into the module; all internal
/// and always inlined): the fast paths of the runtime's label union, shadow loads and stores
/// of `n` bytes (`__knobs_taint_load_<n>`, `__knobs_taint_store_<n>`), the per-site check
/// before recording a decision and the conditional branch's way. Labels with bit 31 clear are bit sets of options (the runtime's
/// header), so a union is an `or` unless a side is an interned set. The shadow layout is the
/// runtime's: `__knobs_taint_l1[addr >> 20]` is null or a page of 2^20 labels. Shadow accesses
/// carry TBAA types of their own under clang's root (labels, the first level's pointer, its
/// entries): the program never touches shadow memory, and label stores do not move the table.
fn helpers_ir() -> String {
    let mut ir = String::from(
        r#"
@__knobs_taint_l1 = external global ptr

declare i32 @__knobs_taint_union_slow(i32, i32)
declare i32 @__knobs_taint_load(ptr, i64)
declare void @__knobs_taint_store(ptr, i64, i32)
declare void @__knobs_taint_record(i32, i32, i32)

define i32 @__knobs_taint_union(i32 %a, i32 %b) alwaysinline {
entry:
  %u = or i32 %a, %b
  %big = icmp slt i32 %u, 0
  br i1 %big, label %slow, label %done, !prof !0
slow:
  %r = call i32 @__knobs_taint_union_slow(i32 %a, i32 %b)
  br label %done
done:
  %l = phi i32 [ %u, %entry ], [ %r, %slow ]
  ret i32 %l
}

define void @__knobs_taint_decide(ptr %last, i32 %id, i32 %data, i32 %ctrl) alwaysinline {
entry:
  %d = zext i32 %data to i64
  %c = zext i32 %ctrl to i64
  %h = shl i64 %d, 32
  %k = or i64 %h, %c
  %key = add i64 %k, 1
  %old = load i64, ptr %last, align 8
  %same = icmp eq i64 %old, %key
  br i1 %same, label %done, label %new, !prof !1
new:
  call void @__knobs_taint_record(i32 %id, i32 %data, i32 %ctrl)
  br label %done
done:
  ret void
}

; A conditional branch's way (1: the false edge, 2: the true edge) or'ed into its site's
; byte; the label its decision opens: none when the runtime marked the site one-way (bit 7).
define i32 @__knobs_taint_branch(ptr %way, i1 %cond, i32 %label) alwaysinline {
entry:
  %b = load i8, ptr %way, align 1
  %bit = select i1 %cond, i8 2, i8 1
  %nb = or i8 %b, %bit
  store i8 %nb, ptr %way, align 1
  %n = and i8 %b, -128
  %one_way = icmp ne i8 %n, 0
  %l = select i1 %one_way, i32 0, i32 %label
  ret i32 %l
}

define void @__knobs_taint_decide_tainted(ptr %last, i32 %id, i32 %data, i32 %ctrl) alwaysinline {
entry:
  %none = icmp eq i32 %data, 0
  br i1 %none, label %done, label %decide, !prof !1
decide:
  call void @__knobs_taint_decide(ptr %last, i32 %id, i32 %data, i32 %ctrl)
  br label %done
done:
  ret void
}
"#,
    );
    let sizes = (1..=INLINE_ACCESS).chain([32]);
    for n in sizes {
        // The checks shared by loads and stores: the access lies in one shadow page, below
        // 2^47, and the first level exists; then the page (null: all labels 0).
        let prologue = format!(
            r#"entry:
  %a = ptrtoint ptr %p to i64
  %l1 = load ptr, ptr @__knobs_taint_l1, align 8, !tbaa !5
  %off = and i64 %a, 1048575
  %cross = icmp ugt i64 %off, {limit}
  %high = icmp uge i64 %a, 140737488355328
  %nol1 = icmp eq ptr %l1, null
  %x = or i1 %cross, %high
  %bad = or i1 %x, %nol1
  br i1 %bad, label %slow, label %fast, !prof !0
fast:
  %i = lshr i64 %a, 20
  %slot = getelementptr inbounds ptr, ptr %l1, i64 %i
  %pg = load ptr, ptr %slot, align 8, !tbaa !7
  %none = icmp eq ptr %pg, null
  %s = getelementptr inbounds i32, ptr %pg, i64 %off"#,
            limit = (1u64 << 20) - n
        );
        ir.push_str(&format!(
            r#"
define i32 @__knobs_taint_load_{n}(ptr %p) alwaysinline {{
{prologue}
  br i1 %none, label %done, label %mapped
mapped:
  %v = load <{n} x i32>, ptr %s, align 4, !tbaa !2
  %or = call i32 @llvm.vector.reduce.or.v{n}i32(<{n} x i32> %v)
  %big = icmp slt i32 %or, 0
  br i1 %big, label %slow, label %done, !prof !0
slow:
  %r = call i32 @__knobs_taint_load(ptr %p, i64 {n})
  br label %done
done:
  %l = phi i32 [ 0, %fast ], [ %or, %mapped ], [ %r, %slow ]
  ret i32 %l
}}
declare i32 @llvm.vector.reduce.or.v{n}i32(<{n} x i32>)

define void @__knobs_taint_store_{n}(ptr %p, i32 %l) alwaysinline {{
{prologue}
  br i1 %none, label %unmapped, label %mapped
unmapped:
  %zero = icmp eq i32 %l, 0
  br i1 %zero, label %done, label %slow
mapped:
  %one = insertelement <{n} x i32> poison, i32 %l, i64 0
  %v = shufflevector <{n} x i32> %one, <{n} x i32> poison, <{n} x i32> zeroinitializer
  store <{n} x i32> %v, ptr %s, align 4, !tbaa !2
  br label %done
slow:
  call void @__knobs_taint_store(ptr %p, i64 {n}, i32 %l)
  br label %done
done:
  ret void
}}
"#
        ));
    }
    ir.push_str(
        r#"
!0 = !{!"branch_weights", i32 1, i32 2000}
!1 = !{!"branch_weights", i32 2000, i32 1}
!2 = !{!3, !3, i64 0}
!3 = !{!"knobs taint shadow", !4, i64 0}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"knobs taint shadow table", !4, i64 0}
!7 = !{!8, !8, i64 0}
!8 = !{!"knobs taint shadow page table", !4, i64 0}
"#,
    );
    ir
}

/// Parses [`helpers_ir`] and links it into `m`.
pub(super) fn link_helpers(m: LLVMModuleRef, ctx: LLVMContextRef) {
    let text = helpers_ir();
    let mut helpers: LLVMModuleRef = std::ptr::null_mut();
    let mut message: *mut std::ffi::c_char = std::ptr::null_mut();
    // SAFETY: `ctx` is the live context of the live module `m` (the handle rule). The buffer
    // copies `text` (pointer and length of a live `String`; the name is NUL-terminated) and
    // is consumed by `LLVMParseIRInContext`, which writes the parsed module or a
    // NUL-terminated message through pointers to live locals.
    let failed = unsafe {
        let buf = c::LLVMCreateMemoryBufferWithMemoryRangeCopy(
            text.as_ptr() as *const _,
            text.len(),
            c"knobs-taint-helpers".as_ptr(),
        );
        llvm_sys::ir_reader::LLVMParseIRInContext(ctx, buf, &mut helpers, &mut message) != 0
    };
    if failed {
        // SAFETY: on failure `message` is a NUL-terminated string LLVM allocated.
        let text = unsafe { std::ffi::CStr::from_ptr(message) }.to_string_lossy();
        panic!("the taint helpers do not parse: {text}");
    }
    // SAFETY: `helpers` is the module just parsed in `m`'s context and `m` is live; the data
    // layout and target strings are owned by `m` and copied by the setters; linking destroys
    // `helpers`, which is not used again.
    let failed = unsafe {
        c::LLVMSetDataLayout(helpers, c::LLVMGetDataLayoutStr(m));
        c::LLVMSetTarget(helpers, c::LLVMGetTarget(m));
        llvm_sys::linker::LLVMLinkModules2(m, helpers) != 0
    };
    if failed {
        panic!("the taint helpers do not link");
    }
    // Defined external so the linker keeps them; internal now (inlined, then dropped).
    for f in bitcode::functions(m) {
        // SAFETY: `f` is a function of the live module `m` (the handle rule); counting its
        // blocks and setting its linkage have no other precondition.
        unsafe {
            if c::LLVMCountBasicBlocks(f) > 0
                && bitcode::value_name(f).starts_with("__knobs_taint_")
            {
                c::LLVMSetLinkage(f, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            }
        }
    }
}
