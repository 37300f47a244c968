//! Dynamic taint instrumentation (Comprex §III–§IV): rewrites the SSA bitcode the translation
//! wrote so that, linked with `runtime::taint`'s library, the program reports every decision
//! with its data-flow and control-flow taint (`docs/comprex-records.md`).
//!
//! Design, in short (the runtime's C header states the runtime side):
//! - Labels: every SSA value gets an `i32` shadow label (0 = no option; `k + 1` = option `k`;
//!   larger ids are sets interned by the runtime). Unions go through an inlined helper
//!   (`__knobs_taint_union`: equal labels or an empty side inline, otherwise the runtime's
//!   cached union), constants are label 0 and cost nothing. Operations, casts, comparisons,
//!   selects and GEPs take the union of their operands' labels; a load takes the union of the
//!   shadow of the bytes it reads and its pointer's label (so table lookups indexed by an option
//!   are tainted).
//! - Memory: stores write `label(value) ∪ control taint` into the runtime's byte-granular
//!   shadow memory (globals, stack and heap alike); allocas and `malloc` results are cleared.
//! - Calls: the caller writes argument labels to the thread-local `__knobs_taint_args` (64
//!   slots; further arguments are unlabelled) and reads the result's label from
//!   `__knobs_taint_ret`, which the callee's `ret` writes. Calls to external (uninstrumented)
//!   functions follow summaries: `memcpy`/`memmove` (and the intrinsics) copy shadow,
//!   `memset` writes the value's label, `strcpy`/`strdup` copy the string's shadow, allocation
//!   functions return label 0, everything else returns the union of its arguments' labels.
//!   Indirect calls set both: the argument slots and a default result (the union), which an
//!   instrumented callee overwrites.
//! - Control taint (implicit flows): a conditional branch or switch calls
//!   `__knobs_taint_decision(id, label(cond))`, which records the decision and pushes the label;
//!   the start of the branch's immediate post-dominator pops it; functions with decisions open a
//!   frame at entry and close it at `ret` (dropping the frame's entries). Stores union the whole
//!   stack's taint (callees inherit their callers'); a phi's incoming value is unioned with the
//!   taint of the current frame's open decisions at the end of the incoming block (the SSA form
//!   of "a variable assigned under a tainted branch"), and so is a returned value. Values that
//!   stay inside the controlled code keep only their data taint, so a decision under a tainted
//!   branch reports the branch in its control taint, not its data taint.
//! - Sources (`analysis::ResolvedSources` on the translated program): a load from an option
//!   global (any address inside it) or from an option struct field, and the result of a selected
//!   call (e.g. `getenv("X")`), get the option's label added.
//! - Decisions: ids number the conditional branches and switches in module order (stable for one
//!   build); each reports its function, file, line and column. Untainted decisions are reported
//!   too, with empty taints (they make their region known to Comprex).
//!
//! The runtime is initialised at the start of `main` (a program without `main` records nothing).

use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;

use analysis::{FunctionDominance, ResolvedSource, ResolvedSources};
use inkwell::context::Context;
use ir::{Callee, InstKind, OpKind, Program, ValueDef, ValueId};
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::core as c;
use llvm_sys::prelude::{
    LLVMBasicBlockRef, LLVMBuilderRef, LLVMContextRef, LLVMModuleRef, LLVMTypeRef, LLVMValueRef,
};

use crate::translate::LlvmPositions;
use crate::{Error, llvm};

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
/// `positions`) for dynamic taint with the option `sources`; `options` names options by
/// `OptionId` index. Writes the verified module to `output`; link it with
/// `runtime::taint::build`'s library ([`crate::link_instrumented`]).
pub fn instrument_taint(
    ssa_bitcode: &Path,
    program: &Program,
    positions: &LlvmPositions,
    sources: &ResolvedSources,
    options: &[String],
    output: &Path,
) -> Result<TaintStats, Error> {
    let context = Context::create();
    let module = llvm::load_module(&context, ssa_bitcode)?;
    let m = module.as_mut_ptr();
    let stale = |message: String| Error::StaleBitcode {
        path: ssa_bitcode.to_path_buf(),
        message,
    };
    for s in &sources.sources {
        if s.0.index() >= options.len() {
            return Err(Error::Verify(format!(
                "source for option #{} but only {} option names",
                s.0.index(),
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
        let funcs: Vec<LLVMValueRef> = llvm::functions(m)
            .into_iter()
            .filter(|&f| {
                c::LLVMCountBasicBlocks(f) > 0 && !llvm::value_name(f).starts_with("__knobs_")
            })
            .collect();
        for &f in &funcs {
            pass.function(f);
            stats.functions += 1;
        }
        stats.decisions = pass.sites.len();
        pass.init_in_main(options);
        c::LLVMDisposeBuilder(pass.b);
    }
    if let Err(e) = module.verify() {
        return Err(Error::Verify(crate::first_line(e.to_str().unwrap_or("?"))));
    }
    llvm::write_bitcode(&module, output)?;
    Ok(stats)
}

/// The options (as label ids `k + 1`) each source load or call adds, by LLVM instruction.
fn source_sites(
    m: LLVMModuleRef,
    program: &Program,
    positions: &LlvmPositions,
    sources: &ResolvedSources,
) -> Result<HashMap<LLVMValueRef, Vec<u32>>, String> {
    let mut by_inst: HashMap<ir::InstId, Vec<u32>> = HashMap::new();
    for (k, inst) in program.insts.iter().enumerate() {
        let id = ir::InstId(k as u32);
        let mut opts: Vec<u32> = Vec::new();
        match &inst.kind {
            InstKind::Load { ptr } => {
                let (globals, fields) = address_roots(program, *ptr);
                for (o, s) in &sources.sources {
                    let hit = match s {
                        ResolvedSource::Global(g) => globals.contains(g),
                        ResolvedSource::Field(st, f) => fields.contains(&(*st, *f)),
                        ResolvedSource::Return(..) => false,
                    };
                    if hit {
                        opts.push(o.0 + 1);
                    }
                }
            }
            InstKind::Call {
                callee: Callee::Direct(f),
                args,
            } => {
                for (o, s) in &sources.sources {
                    if let ResolvedSource::Return(g, sel) = s
                        && g == f
                        && sel.as_ref().is_none_or(|sel| {
                            args.get(sel.index as usize).is_some_and(|a| {
                                matches!(program.value(*a), ValueDef::ConstStr(t) if *t == sel.value)
                            })
                        })
                    {
                        opts.push(o.0 + 1);
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
            let blocks: Vec<Vec<LLVMValueRef>> = llvm::blocks(func)
                .into_iter()
                .map(llvm::instructions)
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
    fctrl: LLVMValueRef,
    union: (LLVMTypeRef, LLVMValueRef),
    load: (LLVMTypeRef, LLVMValueRef),
    store: (LLVMTypeRef, LLVMValueRef),
    copy: (LLVMTypeRef, LLVMValueRef),
    strcopy: (LLVMTypeRef, LLVMValueRef),
    decision: (LLVMTypeRef, LLVMValueRef),
    pop: (LLVMTypeRef, LLVMValueRef),
    enter: (LLVMTypeRef, LLVMValueRef),
    leave: (LLVMTypeRef, LLVMValueRef),
    init: (LLVMTypeRef, LLVMValueRef),
    sources: HashMap<LLVMValueRef, Vec<u32>>,
    /// Per decision id: "method\tfile\tline\tcolumn".
    sites: Vec<String>,
}

/// A value's shadow label: `None` when it is known to be 0 (constants).
type Label = Option<LLVMValueRef>;

impl Pass {
    unsafe fn new(m: LLVMModuleRef, sources: HashMap<LLVMValueRef, Vec<u32>>) -> Pass {
        unsafe {
            let ctx = c::LLVMGetModuleContext(m);
            let i32t = c::LLVMInt32TypeInContext(ctx);
            let i64t = c::LLVMInt64TypeInContext(ctx);
            let ptrt = c::LLVMPointerTypeInContext(ctx, 0);
            let voidt = c::LLVMVoidTypeInContext(ctx);
            let td = llvm_sys::target::LLVMGetModuleDataLayout(m);
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
            let fctrl = tls(c"__knobs_taint_fctrl", i32t);
            let slow = declare(c"__knobs_taint_union_slow", i32t, &[i32t, i32t]);
            let b = c::LLVMCreateBuilderInContext(ctx);
            let union = Self::union_helper(ctx, m, b, i32t, slow);
            Pass {
                m,
                ctx,
                b,
                td,
                i32t,
                i64t,
                ptrt,
                args,
                ret,
                ctrl,
                fctrl,
                union,
                load: declare(c"__knobs_taint_load", i32t, &[ptrt, i64t]),
                store: declare(c"__knobs_taint_store", voidt, &[ptrt, i64t, i32t]),
                copy: declare(c"__knobs_taint_copy", voidt, &[ptrt, ptrt, i64t, i32t]),
                strcopy: declare(c"__knobs_taint_strcopy", voidt, &[ptrt, ptrt, i32t]),
                decision: declare(c"__knobs_taint_decision", voidt, &[i32t, i32t]),
                pop: declare(c"__knobs_taint_pop", voidt, &[i32t]),
                enter: declare(c"__knobs_taint_enter", voidt, &[]),
                leave: declare(c"__knobs_taint_leave", i32t, &[i32t]),
                init: declare(c"__knobs_taint_init", voidt, &[i32t, ptrt, i32t, ptrt]),
                sources,
                sites: Vec::new(),
            }
        }
    }

    /// `internal i32 @__knobs_taint_union(i32 a, i32 b)` (always inlined): the trivial cases
    /// inline, the rest in the runtime.
    unsafe fn union_helper(
        ctx: LLVMContextRef,
        m: LLVMModuleRef,
        b: LLVMBuilderRef,
        i32t: LLVMTypeRef,
        slow: (LLVMTypeRef, LLVMValueRef),
    ) -> (LLVMTypeRef, LLVMValueRef) {
        unsafe {
            let mut params = [i32t, i32t];
            let ty = c::LLVMFunctionType(i32t, params.as_mut_ptr(), 2, 0);
            let f = c::LLVMAddFunction(m, c"__knobs_taint_union".as_ptr(), ty);
            c::LLVMSetLinkage(f, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            let kind = c::LLVMGetEnumAttributeKindForName(c"alwaysinline".as_ptr(), 12);
            let attr = c::LLVMCreateEnumAttribute(ctx, kind, 0);
            c::LLVMAddAttributeAtIndex(f, llvm_sys::LLVMAttributeFunctionIndex, attr);
            let entry = c::LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr());
            let ret_a = c::LLVMAppendBasicBlockInContext(ctx, f, c"a".as_ptr());
            let check = c::LLVMAppendBasicBlockInContext(ctx, f, c"check".as_ptr());
            let ret_b = c::LLVMAppendBasicBlockInContext(ctx, f, c"b".as_ptr());
            let slow_bb = c::LLVMAppendBasicBlockInContext(ctx, f, c"slow".as_ptr());
            let (a, bv) = (c::LLVMGetParam(f, 0), c::LLVMGetParam(f, 1));
            let zero = c::LLVMConstInt(i32t, 0, 0);
            c::LLVMPositionBuilderAtEnd(b, entry);
            let eq = c::LLVMBuildICmp(
                b,
                llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                a,
                bv,
                c"".as_ptr(),
            );
            let bz = c::LLVMBuildICmp(
                b,
                llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                bv,
                zero,
                c"".as_ptr(),
            );
            let either = c::LLVMBuildOr(b, eq, bz, c"".as_ptr());
            c::LLVMBuildCondBr(b, either, ret_a, check);
            c::LLVMPositionBuilderAtEnd(b, ret_a);
            c::LLVMBuildRet(b, a);
            c::LLVMPositionBuilderAtEnd(b, check);
            let az = c::LLVMBuildICmp(
                b,
                llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                a,
                zero,
                c"".as_ptr(),
            );
            c::LLVMBuildCondBr(b, az, ret_b, slow_bb);
            c::LLVMPositionBuilderAtEnd(b, ret_b);
            c::LLVMBuildRet(b, bv);
            c::LLVMPositionBuilderAtEnd(b, slow_bb);
            let mut call_args = [a, bv];
            let r = c::LLVMBuildCall2(b, slow.0, slow.1, call_args.as_mut_ptr(), 2, c"".as_ptr());
            c::LLVMBuildRet(b, r);
            (ty, f)
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

    /// Label ids `opts` (each `k + 1`) as one label.
    unsafe fn options_label(&self, opts: &[u32]) -> Label {
        let mut l = None;
        for &o in opts {
            l = unsafe { self.union(l, Some(self.konst(u64::from(o)))) };
        }
        l
    }

    unsafe fn function(&mut self, f: LLVMValueRef) {
        unsafe {
            let name = llvm::value_name(f);
            let blocks = llvm::blocks(f);
            let index: HashMap<LLVMBasicBlockRef, u32> = blocks
                .iter()
                .enumerate()
                .map(|(k, &b)| (b, k as u32))
                .collect();
            let insts: Vec<Vec<LLVMValueRef>> =
                blocks.iter().map(|&b| llvm::instructions(b)).collect();
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
            // Decision sites, numbered now (module order, block order).
            let mut decision_of: HashMap<u32, u32> = HashMap::new();
            let mut pops: Vec<Vec<u32>> = vec![Vec::new(); n];
            for (k, &bb) in blocks.iter().enumerate() {
                if !dom.dom.is_reachable(k as u32) {
                    continue;
                }
                let term = c::LLVMGetBasicBlockTerminator(bb);
                if term.is_null() || !is_decision(term) {
                    continue;
                }
                let id = self.sites.len() as u32;
                self.sites.push(site_text(&name, term));
                decision_of.insert(k as u32, id);
                if let Some(p) = dom.ipdom(k as u32) {
                    pops[p as usize].push(id);
                }
            }
            let framed = !decision_of.is_empty();
            let mut shadow: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new();

            // Entry: argument labels, then the frame.
            let first = insts[0][0];
            c::LLVMPositionBuilderBefore(self.b, first);
            for k in 0..c::LLVMCountParams(f).min(MAX_ARGS) {
                let slot = self.arg_slot(k);
                let l = c::LLVMBuildLoad2(self.b, self.i32t, slot, c"".as_ptr());
                shadow.insert(c::LLVMGetParam(f, k), l);
            }
            if framed {
                self.call(self.enter, &[]);
            }

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
                // Pops at the block's start (after the phis).
                c::LLVMPositionBuilderBefore(self.b, body[0]);
                for &id in &pops[k as usize] {
                    self.call(self.pop, &[self.konst(u64::from(id))]);
                }
                for (j, &i) in body.iter().enumerate() {
                    let next = body.get(j + 1).copied();
                    self.instruction(i, next, &mut shadow, framed, decision_of.get(&k).copied());
                }
            }

            // Phi incoming values: the value's label ∪ the frame's control taint at the end of
            // the incoming block.
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
                            let fc = if framed {
                                *edge_ctrl
                                    .entry(pred)
                                    .or_insert_with(|| Some(self.load_tls(self.fctrl)))
                            } else {
                                None
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
    /// goes before `i`, code after it before `next` (the next original instruction).
    unsafe fn instruction(
        &self,
        i: LLVMValueRef,
        next: Option<LLVMValueRef>,
        shadow: &mut HashMap<LLVMValueRef, LLVMValueRef>,
        framed: bool,
        decision: Option<u32>,
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
                    let mem = self.call(self.load, &[ptr, self.size(size)]);
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
                    self.call(self.store, &[ptr, self.size(size), l]);
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
                        self.call(self.store, &[i, self.size(n), self.konst(0)]);
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
                    let l = if framed {
                        Some(self.call(self.leave, &[v.unwrap_or_else(|| self.konst(0))]))
                    } else {
                        v
                    };
                    if c::LLVMGetNumOperands(i) > 0 {
                        c::LLVMBuildStore(self.b, l.unwrap_or_else(|| self.konst(0)), self.ret);
                    }
                    None
                }
                Op::LLVMBr | Op::LLVMSwitch => {
                    if let Some(id) = decision {
                        before();
                        let cond = label(c::LLVMGetOperand(i, 0)).unwrap_or_else(|| self.konst(0));
                        self.call(self.decision, &[self.konst(u64::from(id)), cond]);
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
            let name = func.map(llvm::value_name).unwrap_or_default();
            let returns =
                c::LLVMGetTypeKind(c::LLVMTypeOf(i)) != llvm_sys::LLVMTypeKind::LLVMVoidTypeKind;
            let union_args = || {
                let mut l = None;
                for k in 0..nargs {
                    l = self.union(l, label(arg(k)));
                }
                l
            };
            if llvm::is_ignored_intrinsic(&name) || name.starts_with("__knobs_taint_") {
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

    /// Calls `__knobs_taint_init` first thing in `main`.
    unsafe fn init_in_main(&self, options: &[String]) {
        unsafe {
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
