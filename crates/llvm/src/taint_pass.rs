//! Dynamic taint instrumentation (Comprex §III–§IV): rewrites the SSA bitcode the translation
//! wrote so that, linked with `runtime::taint_library`'s library, the program reports every decision
//! with its data-flow and control-flow taint (`docs/comprex-records.md`).
//!
//! Design, in short (the runtime's C header states the runtime side):
//! - Labels: every SSA value gets an `i32` shadow label: a bit set of options 0..30 when bit 31
//!   is clear (option `k` alone is `1 << k`), else a set the runtime interned (every set holding
//!   an option from 31 on; option `k` alone is `1 << 31 | (k - 30)`). Unions go through an
//!   inlined helper (`__knobs_taint_union`: a bitwise or unless a side is interned, then the
//!   runtime's cached union); constants are label 0 and cost nothing. Operations, casts,
//!   comparisons, selects and GEPs take the union of their operands' labels; a load takes the
//!   union of the shadow of the bytes it reads and its pointer's label (so table lookups indexed
//!   by an option are tainted).
//! - Memory: stores write `label(value) ∪ control taint` into the runtime's byte-granular
//!   shadow memory (globals, stack and heap alike); allocas and `malloc` results are cleared.
//!   Accesses of up to 16 bytes (and of 32) read and write the shadow inline (helpers written
//!   in LLVM IR, [`helpers_ir`], linked in and always inlined): the page table lookup, a vector
//!   load or store of the labels, and a call to the runtime only for accesses that cross a
//!   shadow page or meet an interned label.
//! - Calls: the caller writes argument labels to the thread-local `__knobs_taint_args` (64
//!   slots; further arguments are unlabelled) and reads the result's label from
//!   `__knobs_taint_ret`, which the callee's `ret` writes. Calls to external (uninstrumented)
//!   functions follow summaries: `memcpy`/`memmove` (and the intrinsics) copy shadow,
//!   `memset` writes the value's label, `strcpy`/`strdup` copy the string's shadow, allocation
//!   functions return label 0, everything else returns the union of its arguments' labels.
//!   Indirect calls set both: the argument slots and a default result (the union), which an
//!   instrumented callee overwrites.
//! - Control taint (implicit flows): a conditional branch or switch opens an entry with its
//!   condition's label, closed at the start of the branch's immediate post-dominator; executing
//!   again (a loop header) replaces its own entry. The entries live in the function: one stack
//!   slot per decision (its open entry's label, 0 when closed), which the optimiser turns into
//!   SSA values, and a static data-flow pass ([`open_decisions`]) says which decisions may be
//!   open at each block, so only those are read. The thread-local `__knobs_taint_ctrl` is the
//!   control taint of the running code: a function reads its caller's at entry (its base),
//!   sets it to base ∪ its open entries at every decision and pop, and restores the base at
//!   `ret`; so callees inherit it and stores union it. A phi's incoming value is unioned with
//!   the function's open entries at the end of the incoming block (the SSA form of "a variable
//!   assigned under a tainted branch"), and so is a returned value. Values that stay inside the
//!   controlled code keep only their data taint, so a decision under a tainted branch reports
//!   the branch in its control taint, not its data taint.
//! - Sources (places in the translated program, each with its option's index): a load from an option
//!   global (any address inside it) or from an option struct field, and the result of a selected
//!   call (e.g. `getenv("X")`), get the option's label added.
//! - Decisions: ids number the conditional branches and switches in module order (stable for one
//!   build); each reports its function, file, line and column. A decision records its (data,
//!   control) taint pair through the runtime only when it differs from the site's last recorded
//!   pair (`__knobs_taint_last`, one key per site, checked inline), so a decision executed again
//!   with the same taints costs a compare. Untainted decisions are reported too, with empty
//!   taints (they make their region known to Comprex).
//!
//! The runtime is initialised at the start of `main` (a program without `main` records nothing).

use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;

use inkwell::context::Context;
use ir::{Callee, InstKind, OpKind, Program, ValueDef, ValueId};
use ir::{FunctionDominance, Place};
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::core as c;
use llvm_sys::prelude::{
    LLVMBasicBlockRef, LLVMBuilderRef, LLVMContextRef, LLVMModuleRef, LLVMTypeRef, LLVMValueRef,
};

use crate::translate::LlvmPositions;
use crate::{Error, bitcode};

/// Number of argument label slots (the runtime's `KT_MAX_ARGS`).
const MAX_ARGS: u32 = 64;

/// What the taint instrumentation did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaintStats {
    /// Functions instrumented (with bodies).
    pub functions: usize,
    /// Decision sites (conditional branches and switches), numbered `0..decisions`.
    pub decisions: usize,
    /// Loads and calls that read an option (sources).
    pub source_sites: usize,
}

/// Instruments `ssa_bitcode` (written by [`crate::translate_bitcode`] for `program` and
/// `positions`) for dynamic taint with the option `sources` (each an option's index in
/// `options` and the place that holds it). Writes the verified module to `output`; link it with
/// `runtime::taint_library::build`'s library ([`crate::link_instrumented`]).
pub fn instrument_taint(
    ssa_bitcode: &Path,
    program: &Program,
    positions: &LlvmPositions,
    sources: &[(usize, Place)],
    options: &[String],
    output: &Path,
) -> Result<TaintStats, Error> {
    let context = Context::create();
    let module = bitcode::load_module(&context, ssa_bitcode)?;
    let m = module.as_mut_ptr();
    let stale = |message: String| Error::StaleBitcode {
        path: ssa_bitcode.to_path_buf(),
        message,
    };
    for s in sources {
        if s.0 >= options.len() {
            return Err(Error::Verify(format!(
                "source for option #{} but only {} option names",
                s.0,
                options.len()
            )));
        }
    }
    let source_sites = source_sites(m, program, positions, sources).map_err(stale)?;
    let mut stats = TaintStats {
        source_sites: source_sites.len(),
        ..TaintStats::default()
    };
    unsafe {
        let mut pass = Pass::new(m, source_sites);
        let funcs: Vec<LLVMValueRef> = bitcode::functions(m)
            .into_iter()
            .filter(|&f| {
                c::LLVMCountBasicBlocks(f) > 0 && !bitcode::value_name(f).starts_with("__knobs_")
            })
            .collect();
        for &f in &funcs {
            pass.function(f);
            stats.functions += 1;
        }
        stats.decisions = pass.sites.len();
        pass.init_in_main(options);
        c::LLVMDisposeBuilder(pass.b);
        // The sites have their locations; the binary needs no debug information, and without
        // it clang compiles the (larger) instrumented module faster.
        llvm_sys::debuginfo::LLVMStripModuleDebugInfo(m);
    }
    if let Err(e) = module.verify() {
        return Err(Error::Verify(crate::first_line(e.to_str().unwrap_or("?"))));
    }
    bitcode::write_bitcode(&module, output)?;
    Ok(stats)
}

/// The options (as label ids `k + 1`) each source load or call adds, by LLVM instruction.
fn source_sites(
    m: LLVMModuleRef,
    program: &Program,
    positions: &LlvmPositions,
    sources: &[(usize, Place)],
) -> Result<HashMap<LLVMValueRef, Vec<u32>>, String> {
    let mut by_inst: HashMap<ir::InstId, Vec<u32>> = HashMap::new();
    for (k, inst) in program.insts.iter().enumerate() {
        let id = ir::InstId(k as u32);
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
            let func = unsafe { c::LLVMGetNamedFunction(m, cname.as_ptr()) };
            if func.is_null() {
                return Err(format!("it has no function `{name}`"));
            }
            let blocks: Vec<Vec<LLVMValueRef>> = bitcode::blocks(func)
                .into_iter()
                .map(bitcode::instructions)
                .collect();
            let shape = positions.shape[f.index()];
            let n: usize = blocks.iter().map(Vec::len).sum();
            if blocks.len() != shape.blocks as usize || n != shape.instructions as usize {
                return Err(format!("function `{name}` changed shape since translation"));
            }
            e.insert(blocks);
        }
        let blocks = &layouts[&f];
        let local = program.block(program.inst(id).block).local as usize;
        let k = positions.inst_index[id.index()] as usize;
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

/// A function with decisions whose frame union (see [`Frame`]) would read more slots than this
/// in total keeps its slots in memory, and recomputes the union with one call: slots in SSA
/// cost code (and registers) per read, and one xz function (lzma_decode: 242 decisions in a
/// loop) needs 38,000 reads, which made clang take minutes.
const MAX_SLOT_READS: usize = 1024;

/// Accesses of up to this many bytes (and of exactly 32) get an inline shadow access.
const INLINE_ACCESS: u64 = 16;

/// The helpers the instrumented code calls, in LLVM IR (linked into the module; all internal
/// and always inlined): the fast paths of the runtime's label union, shadow loads and stores
/// of `n` bytes (`__knobs_taint_load_<n>`, `__knobs_taint_store_<n>`) and the per-site check
/// before recording a decision. Labels with bit 31 clear are bit sets of options (the runtime's
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
unsafe fn link_helpers(m: LLVMModuleRef, ctx: LLVMContextRef) {
    unsafe {
        let text = helpers_ir();
        let buf = c::LLVMCreateMemoryBufferWithMemoryRangeCopy(
            text.as_ptr() as *const _,
            text.len(),
            c"knobs-taint-helpers".as_ptr(),
        );
        let mut helpers: LLVMModuleRef = std::ptr::null_mut();
        let mut message: *mut std::ffi::c_char = std::ptr::null_mut();
        if llvm_sys::ir_reader::LLVMParseIRInContext(ctx, buf, &mut helpers, &mut message) != 0 {
            let text = std::ffi::CStr::from_ptr(message).to_string_lossy();
            panic!("the taint helpers do not parse: {text}");
        }
        c::LLVMSetDataLayout(helpers, c::LLVMGetDataLayoutStr(m));
        c::LLVMSetTarget(helpers, c::LLVMGetTarget(m));
        if llvm_sys::linker::LLVMLinkModules2(m, helpers) != 0 {
            panic!("the taint helpers do not link");
        }
        // Defined external so the linker keeps them; internal now (inlined, then dropped).
        for f in bitcode::functions(m) {
            if c::LLVMCountBasicBlocks(f) > 0
                && bitcode::value_name(f).starts_with("__knobs_taint_")
            {
                c::LLVMSetLinkage(f, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            }
        }
    }
}

/// Runtime declarations and the state of the pass.
struct Pass {
    m: LLVMModuleRef,
    ctx: LLVMContextRef,
    b: LLVMBuilderRef,
    td: llvm_sys::target::LLVMTargetDataRef,
    i32t: LLVMTypeRef,
    i64t: LLVMTypeRef,
    ptrt: LLVMTypeRef,
    args: LLVMValueRef,
    ret: LLVMValueRef,
    ctrl: LLVMValueRef,
    /// Per decision id: the last (data, ctrl) key recorded (a placeholder until the number of
    /// sites is known, see [`Pass::init_in_main`]).
    last: LLVMValueRef,
    union: (LLVMTypeRef, LLVMValueRef),
    union_slow: (LLVMTypeRef, LLVMValueRef),
    union_all: (LLVMTypeRef, LLVMValueRef),
    /// `__knobs_taint_union_<n>` by `n` ([`Pass::union_n`]).
    unions: std::cell::RefCell<HashMap<usize, (LLVMTypeRef, LLVMValueRef)>>,
    decide: (LLVMTypeRef, LLVMValueRef),
    /// `__knobs_taint_load_<n>` and `__knobs_taint_store_<n>` by `n`.
    inline_loads: HashMap<u64, (LLVMTypeRef, LLVMValueRef)>,
    inline_stores: HashMap<u64, (LLVMTypeRef, LLVMValueRef)>,
    load: (LLVMTypeRef, LLVMValueRef),
    store: (LLVMTypeRef, LLVMValueRef),
    copy: (LLVMTypeRef, LLVMValueRef),
    strcopy: (LLVMTypeRef, LLVMValueRef),
    init: (LLVMTypeRef, LLVMValueRef),
    sources: HashMap<LLVMValueRef, Vec<u32>>,
    /// Per decision id: "method\tfile\tline\tcolumn".
    sites: Vec<String>,
}

/// A value's shadow label: `None` when it is known to be 0 (constants).
type Label = Option<LLVMValueRef>;

/// Option `k`'s label (the runtime's encoding): bit `k` for the first 31 options, an interned
/// singleton (bit 31 set) for the rest.
fn option_label(k: u32) -> u32 {
    if k < 31 {
        1 << k
    } else {
        0x8000_0000 | (k - 30)
    }
}

/// A set of a function's decisions (by their index in the function), as bits.
#[derive(Clone, PartialEq, Eq)]
struct DecisionSet(Vec<u64>);

impl DecisionSet {
    fn new(n: usize) -> DecisionSet {
        DecisionSet(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, k: usize) {
        self.0[k / 64] |= 1 << (k % 64);
    }
    fn contains(&self, k: usize) -> bool {
        self.0[k / 64] & (1 << (k % 64)) != 0
    }
    fn remove(&mut self, k: usize) {
        self.0[k / 64] &= !(1 << (k % 64));
    }
    fn union_with(&mut self, other: &DecisionSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

/// The control taint of one instrumented function with decisions (a frame): the caller's
/// control taint at entry, per decision of the function a stack slot holding the label of its
/// open entry (0 when not open), and a slot holding the union of the open entries; the
/// optimiser promotes the slots to SSA values.
struct Frame {
    /// `__knobs_taint_ctrl` at entry.
    base: LLVMValueRef,
    /// Per decision of the function (by index): its slot.
    slots: Vec<LLVMValueRef>,
    /// The union of the slots (kept up to date at decisions and pops).
    open: LLVMValueRef,
    /// In functions where recomputing the union from the open slots would take more than
    /// [`MAX_SLOT_READS`] reads, the slots are the elements of this array in memory, and the
    /// runtime's `__knobs_taint_union_all` unions them all (closed slots are 0).
    array: Option<LLVMValueRef>,
    /// Per block: the decisions that may be open after its pops (their slots may be non-zero).
    open_in: Vec<DecisionSet>,
    /// Per block: the decision ending it (its index), if any.
    decision: Vec<Option<usize>>,
}

impl Pass {
    unsafe fn new(m: LLVMModuleRef, sources: HashMap<LLVMValueRef, Vec<u32>>) -> Pass {
        unsafe {
            let ctx = c::LLVMGetModuleContext(m);
            let i32t = c::LLVMInt32TypeInContext(ctx);
            let i64t = c::LLVMInt64TypeInContext(ctx);
            let ptrt = c::LLVMPointerTypeInContext(ctx, 0);
            let voidt = c::LLVMVoidTypeInContext(ctx);
            let td = llvm_sys::target::LLVMGetModuleDataLayout(m);
            link_helpers(m, ctx);
            let tls = |name: &std::ffi::CStr, ty: LLVMTypeRef| {
                let g = c::LLVMAddGlobal(m, ty, name.as_ptr());
                c::LLVMSetThreadLocal(g, 1);
                c::LLVMSetThreadLocalMode(
                    g,
                    llvm_sys::LLVMThreadLocalMode::LLVMInitialExecTLSModel,
                );
                g
            };
            let declare = |name: &std::ffi::CStr, ret: LLVMTypeRef, params: &[LLVMTypeRef]| {
                let mut params = params.to_vec();
                let ty = c::LLVMFunctionType(ret, params.as_mut_ptr(), params.len() as u32, 0);
                let f = c::LLVMGetNamedFunction(m, name.as_ptr());
                let f = if f.is_null() {
                    c::LLVMAddFunction(m, name.as_ptr(), ty)
                } else {
                    f
                };
                (ty, f)
            };
            let args = tls(
                c"__knobs_taint_args",
                c::LLVMArrayType2(i32t, u64::from(MAX_ARGS)),
            );
            let ret = tls(c"__knobs_taint_ret", i32t);
            let ctrl = tls(c"__knobs_taint_ctrl", i32t);
            let last = c::LLVMAddGlobal(m, c::LLVMArrayType2(i64t, 0), c"".as_ptr());
            let mut inline_loads = HashMap::new();
            let mut inline_stores = HashMap::new();
            for n in (1..=INLINE_ACCESS).chain([32]) {
                let load = CString::new(format!("__knobs_taint_load_{n}")).unwrap();
                let store = CString::new(format!("__knobs_taint_store_{n}")).unwrap();
                inline_loads.insert(n, declare(&load, i32t, &[ptrt]));
                inline_stores.insert(n, declare(&store, voidt, &[ptrt, i32t]));
            }
            Pass {
                m,
                ctx,
                b: c::LLVMCreateBuilderInContext(ctx),
                td,
                i32t,
                i64t,
                ptrt,
                args,
                ret,
                ctrl,
                last,
                union: declare(c"__knobs_taint_union", i32t, &[i32t, i32t]),
                union_slow: declare(c"__knobs_taint_union_slow", i32t, &[i32t, i32t]),
                union_all: declare(c"__knobs_taint_union_all", i32t, &[ptrt, i64t]),
                unions: Default::default(),
                decide: declare(c"__knobs_taint_decide", voidt, &[ptrt, i32t, i32t, i32t]),
                inline_loads,
                inline_stores,
                load: declare(c"__knobs_taint_load", i32t, &[ptrt, i64t]),
                store: declare(c"__knobs_taint_store", voidt, &[ptrt, i64t, i32t]),
                copy: declare(c"__knobs_taint_copy", voidt, &[ptrt, ptrt, i64t, i32t]),
                strcopy: declare(c"__knobs_taint_strcopy", voidt, &[ptrt, ptrt, i32t]),
                init: declare(
                    c"__knobs_taint_init",
                    voidt,
                    &[i32t, ptrt, i32t, ptrt, ptrt],
                ),
                sources,
                sites: Vec::new(),
            }
        }
    }

    unsafe fn call(&self, f: (LLVMTypeRef, LLVMValueRef), args: &[LLVMValueRef]) -> LLVMValueRef {
        unsafe {
            let mut args = args.to_vec();
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

    unsafe fn union(&self, a: Label, b: Label) -> Label {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) if x == y => Some(x),
            (Some(x), Some(y)) => Some(unsafe { self.call(self.union, &[x, y]) }),
        }
    }

    fn konst(&self, v: u64) -> LLVMValueRef {
        unsafe { c::LLVMConstInt(self.i32t, v, 0) }
    }

    fn size(&self, v: u64) -> LLVMValueRef {
        unsafe { c::LLVMConstInt(self.i64t, v, 0) }
    }

    unsafe fn load_tls(&self, g: LLVMValueRef) -> LLVMValueRef {
        unsafe { c::LLVMBuildLoad2(self.b, self.i32t, g, c"".as_ptr()) }
    }

    unsafe fn load_i32(&self, slot: LLVMValueRef) -> LLVMValueRef {
        unsafe { c::LLVMBuildLoad2(self.b, self.i32t, slot, c"".as_ptr()) }
    }

    /// The label of the `n` bytes at `ptr` in shadow memory.
    unsafe fn shadow_load(&self, ptr: LLVMValueRef, n: u64) -> LLVMValueRef {
        unsafe {
            match self.inline_loads.get(&n) {
                Some(&f) => self.call(f, &[ptr]),
                None => self.call(self.load, &[ptr, self.size(n)]),
            }
        }
    }

    /// Sets the label of the `n` bytes at `ptr` in shadow memory to `l`.
    unsafe fn shadow_store(&self, ptr: LLVMValueRef, n: u64, l: LLVMValueRef) {
        unsafe {
            match self.inline_stores.get(&n) {
                Some(&f) => self.call(f, &[ptr, l]),
                None => self.call(self.store, &[ptr, self.size(n), l]),
            };
        }
    }

    unsafe fn arg_slot(&self, k: u32) -> LLVMValueRef {
        unsafe {
            let mut idx = [self.konst(0), self.konst(u64::from(k))];
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

    unsafe fn store_size(&self, ty: LLVMTypeRef) -> u64 {
        unsafe {
            if c::LLVMTypeIsSized(ty) == 0 {
                return 0;
            }
            llvm_sys::target::LLVMStoreSizeOfType(self.td, ty)
        }
    }

    /// Option indices + 1 `opts` (as the sources map holds them) as one label.
    unsafe fn options_label(&self, opts: &[u32]) -> Label {
        let mut small = 0u32;
        let mut l = None;
        for &o in opts {
            match option_label(o - 1) {
                bits if bits & 0x8000_0000 == 0 => small |= bits,
                big => l = unsafe { self.union(l, Some(self.konst(u64::from(big)))) },
            }
        }
        if small != 0 {
            l = unsafe { self.union(Some(self.konst(u64::from(small))), l) };
        }
        l
    }

    /// The union of the open entries of `frame` among `set` (the frame's control taint), at
    /// the builder's position.
    unsafe fn frame_label(&self, frame: &Frame, set: &DecisionSet, except: Option<usize>) -> Label {
        unsafe {
            if let Some(array) = frame.array {
                // The closed slots are 0: the union of all but `except`'s (which its decision
                // is about to replace).
                if let Some(d) = except {
                    c::LLVMBuildStore(self.b, self.konst(0), frame.slots[d]);
                }
                let n = self.size(frame.slots.len() as u64);
                return Some(self.call(self.union_all, &[array, n]));
            }
            let labels: Vec<LLVMValueRef> = set
                .iter()
                .filter(|&k| Some(k) != except)
                .map(|k| self.load_i32(frame.slots[k]))
                .collect();
            match labels.len() {
                0 => None,
                1 => Some(labels[0]),
                n => Some(self.call(self.union_n(n), &labels)),
            }
        }
    }

    /// `internal i32 @__knobs_taint_union_<n>(i32 × n)` (always inlined): the union of `n`
    /// labels, an `or` of them all unless one is an interned set (then a chain of the
    /// runtime's unions, out of line). One branch for any `n`, where a chain of
    /// [`Pass::union`]s has one per label: frames of functions with hundreds of decisions
    /// union many slots.
    unsafe fn union_n(&self, n: usize) -> (LLVMTypeRef, LLVMValueRef) {
        if let Some(&f) = self.unions.borrow().get(&n) {
            return f;
        }
        unsafe {
            let b = c::LLVMCreateBuilderInContext(self.ctx);
            let mut params = vec![self.i32t; n];
            let ty = c::LLVMFunctionType(self.i32t, params.as_mut_ptr(), n as u32, 0);
            let name = CString::new(format!("__knobs_taint_union_{n}")).unwrap();
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

    unsafe fn function(&mut self, f: LLVMValueRef) {
        unsafe {
            let name = bitcode::value_name(f);
            let blocks = bitcode::blocks(f);
            let index: HashMap<LLVMBasicBlockRef, u32> = blocks
                .iter()
                .enumerate()
                .map(|(k, &b)| (b, k as u32))
                .collect();
            let insts: Vec<Vec<LLVMValueRef>> =
                blocks.iter().map(|&b| bitcode::instructions(b)).collect();
            let n = blocks.len();
            let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
            let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
            for (k, &bb) in blocks.iter().enumerate() {
                let term = c::LLVMGetBasicBlockTerminator(bb);
                if term.is_null() {
                    continue;
                }
                for s in 0..c::LLVMGetNumSuccessors(term) {
                    let t = index[&c::LLVMGetSuccessor(term, s)];
                    if !succs[k].contains(&t) {
                        succs[k].push(t);
                        preds[t as usize].push(k as u32);
                    }
                }
            }
            let dom = FunctionDominance::from_graph(&succs, &preds);
            // Decision sites, numbered now (module order, block order); each is popped at the
            // start of its branch's immediate post-dominator.
            let first_id = self.sites.len();
            let mut decision: Vec<Option<usize>> = vec![None; n];
            let mut pops: Vec<Vec<usize>> = vec![Vec::new(); n];
            for (k, &bb) in blocks.iter().enumerate() {
                if !dom.dom.is_reachable(k as u32) {
                    continue;
                }
                let term = c::LLVMGetBasicBlockTerminator(bb);
                if term.is_null() || !is_decision(term) {
                    continue;
                }
                let d = self.sites.len() - first_id;
                self.sites.push(site_text(&name, term));
                decision[k] = Some(d);
                if let Some(p) = dom.ipdom(k as u32) {
                    pops[p as usize].push(d);
                }
            }
            let ndecisions = self.sites.len() - first_id;
            let mut shadow: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new();

            // Entry: argument labels, then the frame.
            let first = insts[0][0];
            c::LLVMPositionBuilderBefore(self.b, first);
            for k in 0..c::LLVMCountParams(f).min(MAX_ARGS) {
                let slot = self.arg_slot(k);
                let l = c::LLVMBuildLoad2(self.b, self.i32t, slot, c"".as_ptr());
                shadow.insert(c::LLVMGetParam(f, k), l);
            }
            let frame = (ndecisions > 0).then(|| {
                let open_in = open_decisions(&dom, &preds, &decision, &pops, ndecisions);
                // The slot reads recomputing the union: at pops and at decisions that may
                // replace their own entry.
                let reads: usize = (0..n)
                    .filter(|&k| {
                        !pops[k].is_empty() || decision[k].is_some_and(|d| open_in[k].contains(d))
                    })
                    .map(|k| open_in[k].iter().count())
                    .sum();
                let array = (reads > MAX_SLOT_READS).then(|| {
                    let ty = c::LLVMArrayType2(self.i32t, ndecisions as u64);
                    let a = c::LLVMBuildAlloca(self.b, ty, c"".as_ptr());
                    c::LLVMBuildMemSet(
                        self.b,
                        a,
                        c::LLVMConstInt(c::LLVMInt8TypeInContext(self.ctx), 0, 0),
                        self.size(4 * ndecisions as u64),
                        4,
                    );
                    a
                });
                let slots: Vec<LLVMValueRef> = (0..ndecisions)
                    .map(|d| match array {
                        Some(a) => {
                            let mut idx = [self.size(d as u64)];
                            c::LLVMBuildInBoundsGEP2(
                                self.b,
                                self.i32t,
                                a,
                                idx.as_mut_ptr(),
                                1,
                                c"".as_ptr(),
                            )
                        }
                        None => {
                            let s = c::LLVMBuildAlloca(self.b, self.i32t, c"".as_ptr());
                            c::LLVMBuildStore(self.b, self.konst(0), s);
                            s
                        }
                    })
                    .collect();
                let open = c::LLVMBuildAlloca(self.b, self.i32t, c"".as_ptr());
                c::LLVMBuildStore(self.b, self.konst(0), open);
                let base = self.load_tls(self.ctrl);
                Frame {
                    base,
                    slots,
                    array,
                    open,
                    open_in,
                    decision: decision.clone(),
                }
            });

            // Shadow phis first (their incoming values are filled at the end).
            let mut phis: Vec<(LLVMValueRef, LLVMValueRef)> = Vec::new();
            for (k, block) in insts.iter().enumerate() {
                if !dom.dom.is_reachable(k as u32) {
                    continue;
                }
                for &i in block {
                    if c::LLVMGetInstructionOpcode(i) != Op::LLVMPHI {
                        break;
                    }
                    c::LLVMPositionBuilderBefore(self.b, block[0]);
                    let p = c::LLVMBuildPhi(self.b, self.i32t, c"".as_ptr());
                    shadow.insert(i, p);
                    phis.push((i, p));
                }
            }

            let label = |shadow: &HashMap<LLVMValueRef, LLVMValueRef>, v: LLVMValueRef| -> Label {
                shadow.get(&v).copied()
            };
            for &k in dom.dom.reverse_post_order() {
                let block = &insts[k as usize];
                let body: Vec<LLVMValueRef> = block
                    .iter()
                    .copied()
                    .filter(|&i| c::LLVMGetInstructionOpcode(i) != Op::LLVMPHI)
                    .collect();
                if body.is_empty() {
                    continue;
                }
                // Pops at the block's start (after the phis): the entries are cleared, the
                // control taint is the frame's remaining open entries over the caller's.
                if let Some(frame) = &frame
                    && !pops[k as usize].is_empty()
                {
                    c::LLVMPositionBuilderBefore(self.b, body[0]);
                    for &d in &pops[k as usize] {
                        c::LLVMBuildStore(self.b, self.konst(0), frame.slots[d]);
                    }
                    let open = self.frame_label(frame, &frame.open_in[k as usize], None);
                    c::LLVMBuildStore(self.b, open.unwrap_or_else(|| self.konst(0)), frame.open);
                    let ctrl = self.union(Some(frame.base), open).unwrap();
                    c::LLVMBuildStore(self.b, ctrl, self.ctrl);
                }
                for (j, &i) in body.iter().enumerate() {
                    let next = body.get(j + 1).copied();
                    let at = frame.as_ref().map(|f| (f, k as usize));
                    self.instruction(i, next, &mut shadow, at, first_id);
                }
            }

            // Phi incoming values: the value's label ∪ the frame's control taint at the end of
            // the incoming block (after its own decision).
            let mut edge_ctrl: HashMap<LLVMBasicBlockRef, Label> = HashMap::new();
            for (phi, sp) in phis {
                let mut done: HashMap<LLVMBasicBlockRef, LLVMValueRef> = HashMap::new();
                for k in 0..c::LLVMCountIncoming(phi) {
                    let pred = c::LLVMGetIncomingBlock(phi, k);
                    let v = c::LLVMGetIncomingValue(phi, k);
                    let mut lv = if let Some(&l) = done.get(&pred) {
                        l
                    } else {
                        let reachable = index.get(&pred).is_some_and(|&p| dom.dom.is_reachable(p));
                        let l = if reachable {
                            let term = c::LLVMGetBasicBlockTerminator(pred);
                            c::LLVMPositionBuilderBefore(self.b, term);
                            let fc = match &frame {
                                Some(frame) => *edge_ctrl
                                    .entry(pred)
                                    .or_insert_with(|| Some(self.load_i32(frame.open))),
                                None => None,
                            };
                            self.union(label(&shadow, v), fc)
                                .unwrap_or_else(|| self.konst(0))
                        } else {
                            self.konst(0)
                        };
                        done.insert(pred, l);
                        l
                    };
                    let mut pb = pred;
                    c::LLVMAddIncoming(sp, &mut lv, &mut pb, 1);
                }
            }
        }
    }

    /// Instruments one non-phi instruction: its label goes into `shadow`. Code for before it
    /// goes before `i`, code after it before `next` (the next original instruction). `frame`:
    /// the function's frame and the instruction's block, when the function has decisions
    /// (numbered from `first_id`).
    unsafe fn instruction(
        &self,
        i: LLVMValueRef,
        next: Option<LLVMValueRef>,
        shadow: &mut HashMap<LLVMValueRef, LLVMValueRef>,
        frame: Option<(&Frame, usize)>,
        first_id: usize,
    ) {
        unsafe {
            let label = |v: LLVMValueRef| -> Label { shadow.get(&v).copied() };
            let before = || c::LLVMPositionBuilderBefore(self.b, i);
            let after = || match next {
                Some(n) => c::LLVMPositionBuilderBefore(self.b, n),
                None => c::LLVMPositionBuilderAtEnd(self.b, c::LLVMGetInstructionParent(i)),
            };
            let op = c::LLVMGetInstructionOpcode(i);
            let source = self.sources.get(&i).cloned().unwrap_or_default();
            let result: Label = match op {
                Op::LLVMLoad => {
                    after();
                    let ptr = c::LLVMGetOperand(i, 0);
                    let size = self.store_size(c::LLVMTypeOf(i));
                    let mem = self.shadow_load(ptr, size);
                    let l = self.union(Some(mem), label(ptr));
                    let s = self.options_label(&source);
                    self.union(l, s)
                }
                Op::LLVMStore => {
                    before();
                    let v = c::LLVMGetOperand(i, 0);
                    let ptr = c::LLVMGetOperand(i, 1);
                    let size = self.store_size(c::LLVMTypeOf(v));
                    let ctrl = self.load_tls(self.ctrl);
                    let l = self.union(label(v), Some(ctrl)).unwrap();
                    self.shadow_store(ptr, size, l);
                    None
                }
                Op::LLVMAlloca => {
                    let ty = c::LLVMGetAllocatedType(i);
                    let count = c::LLVMGetOperand(i, 0);
                    if c::LLVMIsAConstantInt(count).is_null() {
                        None
                    } else {
                        let n = c::LLVMConstIntGetZExtValue(count) * self.store_size(ty);
                        after();
                        self.shadow_store(i, n, self.konst(0));
                        None
                    }
                }
                Op::LLVMCall => self.call_site(i, &before, &after, &label, &source),
                Op::LLVMRet => {
                    before();
                    let v = if c::LLVMGetNumOperands(i) > 0 {
                        label(c::LLVMGetOperand(i, 0))
                    } else {
                        None
                    };
                    // A value returned under this frame's open tainted decisions carries them;
                    // the caller's control taint is restored.
                    let l = match frame {
                        Some((frame, _)) => {
                            let open = self.load_i32(frame.open);
                            c::LLVMBuildStore(self.b, frame.base, self.ctrl);
                            self.union(v, Some(open))
                        }
                        None => v,
                    };
                    if c::LLVMGetNumOperands(i) > 0 {
                        c::LLVMBuildStore(self.b, l.unwrap_or_else(|| self.konst(0)), self.ret);
                    }
                    None
                }
                Op::LLVMBr | Op::LLVMSwitch => {
                    if let Some((frame, k)) = frame
                        && let Some(d) = frame.decision[k]
                    {
                        // The decision replaces its own open entry (a loop header is not
                        // control dependent on its previous outcome): its control taint is
                        // the other open entries over the caller's. Recorded unless the site's
                        // last record has the same taints; then its entry is open.
                        before();
                        let id = (first_id + d) as u64;
                        let cond = label(c::LLVMGetOperand(i, 0)).unwrap_or_else(|| self.konst(0));
                        // The union of the other open entries: the frame's union, unless this
                        // decision's own entry may be open.
                        let others = if frame.open_in[k].contains(d) {
                            self.frame_label(frame, &frame.open_in[k], Some(d))
                        } else {
                            Some(self.load_i32(frame.open))
                        };
                        let ctrl = self.union(Some(frame.base), others).unwrap();
                        let mut idx = [self.size(id)];
                        let last = c::LLVMBuildInBoundsGEP2(
                            self.b,
                            self.i64t,
                            self.last,
                            idx.as_mut_ptr(),
                            1,
                            c"".as_ptr(),
                        );
                        self.call(self.decide, &[last, self.konst(id), cond, ctrl]);
                        c::LLVMBuildStore(self.b, cond, frame.slots[d]);
                        let open = self.union(others, Some(cond)).unwrap();
                        c::LLVMBuildStore(self.b, open, frame.open);
                        let now = self.union(Some(ctrl), Some(cond)).unwrap();
                        c::LLVMBuildStore(self.b, now, self.ctrl);
                    }
                    None
                }
                Op::LLVMInvoke
                | Op::LLVMUnreachable
                | Op::LLVMIndirectBr
                | Op::LLVMResume
                | Op::LLVMFence
                | Op::LLVMLandingPad
                | Op::LLVMCallBr => None,
                _ => {
                    if c::LLVMGetTypeKind(c::LLVMTypeOf(i))
                        == llvm_sys::LLVMTypeKind::LLVMVoidTypeKind
                    {
                        None
                    } else {
                        after();
                        let mut l = None;
                        for k in 0..c::LLVMGetNumOperands(i) {
                            l = self.union(l, label(c::LLVMGetOperand(i, k as u32)));
                        }
                        l
                    }
                }
            };
            if let Some(l) = result {
                shadow.insert(i, l);
            }
        }
    }

    /// A call: summaries for external functions, the label slots for instrumented ones.
    unsafe fn call_site(
        &self,
        i: LLVMValueRef,
        before: &dyn Fn(),
        after: &dyn Fn(),
        label: &dyn Fn(LLVMValueRef) -> Label,
        source: &[u32],
    ) -> Label {
        unsafe {
            let nargs = c::LLVMGetNumArgOperands(i);
            let arg = |k: u32| c::LLVMGetOperand(i, k);
            let callee = c::LLVMGetCalledValue(i);
            let func = if c::LLVMIsAFunction(callee).is_null() {
                None
            } else {
                Some(callee)
            };
            let name = func.map(bitcode::value_name).unwrap_or_default();
            let returns =
                c::LLVMGetTypeKind(c::LLVMTypeOf(i)) != llvm_sys::LLVMTypeKind::LLVMVoidTypeKind;
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
                let n = c::LLVMBuildZExtOrBitCast(self.b, arg(2), self.i64t, c"".as_ptr());
                self.call(self.copy, &[arg(0), arg(1), n, ctrl]);
                if returns { label(arg(0)) } else { None }
            } else if base("memset") {
                after();
                let ctrl = self.load_tls(self.ctrl);
                let l = self.union(label(arg(1)), Some(ctrl)).unwrap();
                let n = c::LLVMBuildZExtOrBitCast(self.b, arg(2), self.i64t, c"".as_ptr());
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
                    let n = c::LLVMBuildZExtOrBitCast(self.b, arg(0), self.i64t, c"".as_ptr());
                    self.call(self.store, &[i, n, self.konst(0)]);
                }
                None
            } else if let Some(f) = func
                && c::LLVMCountBasicBlocks(f) == 0
            {
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
                    c::LLVMBuildStore(self.b, l, slot);
                }
                if func.is_none() && returns {
                    let l = union_args().unwrap_or_else(|| self.konst(0));
                    c::LLVMBuildStore(self.b, l, self.ret);
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
            let s = self.options_label(source);
            self.union(result, s)
        }
    }

    /// Defines the per-site array of last recorded keys (replacing the placeholder the
    /// decisions index) and calls `__knobs_taint_init` first thing in `main`.
    unsafe fn init_in_main(&self, options: &[String]) {
        unsafe {
            let ty = c::LLVMArrayType2(self.i64t, self.sites.len() as u64);
            let last = c::LLVMAddGlobal(self.m, ty, c"__knobs_taint_last".as_ptr());
            c::LLVMSetInitializer(last, c::LLVMConstNull(ty));
            c::LLVMSetLinkage(last, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            c::LLVMReplaceAllUsesWith(self.last, last);
            c::LLVMDeleteGlobal(self.last);
            let main = c::LLVMGetNamedFunction(self.m, c"main".as_ptr());
            if main.is_null() || c::LLVMCountBasicBlocks(main) == 0 {
                return;
            }
            let entry = c::LLVMGetEntryBasicBlock(main);
            c::LLVMPositionBuilderBefore(self.b, c::LLVMGetFirstInstruction(entry));
            let names: String = options.iter().map(|o| format!("{o}\n")).collect();
            let sites: String = self.sites.iter().map(|s| format!("{s}\n")).collect();
            let names = self.cstring_global(&names, c"__knobs_taint_names");
            let sites = self.cstring_global(&sites, c"__knobs_taint_sites");
            self.call(
                self.init,
                &[
                    self.konst(options.len() as u64),
                    names,
                    self.konst(self.sites.len() as u64),
                    sites,
                    last,
                ],
            );
        }
    }

    unsafe fn cstring_global(&self, text: &str, name: &std::ffi::CStr) -> LLVMValueRef {
        unsafe {
            let bytes = text.replace('\0', " ");
            let init =
                c::LLVMConstStringInContext2(self.ctx, bytes.as_ptr() as *const _, bytes.len(), 0);
            let g = c::LLVMAddGlobal(self.m, c::LLVMTypeOf(init), name.as_ptr());
            c::LLVMSetInitializer(g, init);
            c::LLVMSetGlobalConstant(g, 1);
            c::LLVMSetLinkage(g, llvm_sys::LLVMLinkage::LLVMPrivateLinkage);
            let _ = self.ptrt;
            g
        }
    }
}

/// Per block: the decisions (of `decision`, by block) that may be open after the block's pops
/// (`pops`): those with a path from their branch to the block that does not enter the block
/// that pops them. A forward data-flow fixpoint over the reachable blocks.
fn open_decisions(
    dom: &FunctionDominance,
    preds: &[Vec<u32>],
    decision: &[Option<usize>],
    pops: &[Vec<usize>],
    ndecisions: usize,
) -> Vec<DecisionSet> {
    let mut open_in = vec![DecisionSet::new(ndecisions); preds.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for &k in dom.dom.reverse_post_order() {
            let k = k as usize;
            let mut s = DecisionSet::new(ndecisions);
            for &p in &preds[k] {
                let p = p as usize;
                s.union_with(&open_in[p]);
                if let Some(d) = decision[p] {
                    s.insert(d);
                }
            }
            for &d in &pops[k] {
                s.remove(d);
            }
            if s != open_in[k] {
                open_in[k] = s;
                changed = true;
            }
        }
    }
    open_in
}

/// A conditional branch or a switch.
unsafe fn is_decision(term: LLVMValueRef) -> bool {
    unsafe {
        match c::LLVMGetInstructionOpcode(term) {
            Op::LLVMBr => c::LLVMIsConditional(term) != 0,
            Op::LLVMSwitch => true,
            _ => false,
        }
    }
}

/// "method\tfile\tline\tcolumn" for a decision (its own location, else the nearest one in its
/// block).
unsafe fn site_text(method: &str, term: LLVMValueRef) -> String {
    unsafe {
        let mut at = term;
        let mut i = term;
        while !i.is_null() {
            if c::LLVMGetDebugLocLine(i) > 0 {
                at = i;
                break;
            }
            i = c::LLVMGetPreviousInstruction(i);
        }
        let mut len = 0u32;
        let p = c::LLVMGetDebugLocFilename(at, &mut len);
        let file = if p.is_null() {
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize))
                .into_owned()
        };
        let clean = |s: &str| s.replace(['\t', '\n'], " ");
        format!(
            "{}\t{}\t{}\t{}",
            clean(method),
            clean(&file),
            c::LLVMGetDebugLocLine(at),
            c::LLVMGetDebugLocColumn(at)
        )
    }
}
