//! Instrumentation: region enter/exit calls inserted into the SSA bitcode the translation
//! wrote, at the `ir::ProgramPoint`s of each region, then linking with the runtime.
//!
//! Calls are `void __knobs_region_enter(uint32_t region)` and `void
//! __knobs_region_exit(uint32_t region)` (C ABI; the runtime library defines them). At one
//! point, exits come before enters (a region ending where another begins is closed first),
//! each in the order the probes are given. An edge `from → to` gets its calls at the end of
//! `from` when `to` is its only successor, at the start of `to` when `from` is its only
//! predecessor, and otherwise in a new block on the edge (phis of `to` are rebuilt to name
//! it). Inserted calls carry the debug location of the instruction they precede.
//!
//! Value checks ([`ValueCheck`], [`instrument_with_checks`]) guard what the analysis assumed
//! of a load (a fixed setting's declared value): right after the load, its integer result is
//! sign-extended to 64 bits and passed to `void __knobs_fixed_check(uint32_t id, int64_t
//! value, int64_t expected)`, which compares and records violations (the runtime, not inline
//! code: one cast and one call per check). They come before any region call inserted at the
//! same place, and carry the load's debug location.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use inkwell::context::Context;
use ir::ProgramPoint;
use ir::{FuncId, Program};
use llvm_sys::LLVMOpcode;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMBasicBlockRef, LLVMBuilderRef, LLVMTypeRef, LLVMValueRef};

use crate::translate::LlvmPositions;
use crate::{Error, bitcode, first_line};

pub const ENTER: &str = "__knobs_region_enter";
pub const EXIT: &str = "__knobs_region_exit";
pub const FIXED_CHECK: &str = "__knobs_fixed_check";

/// One region to instrument: its runtime id and where it starts and ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionProbe {
    pub id: u32,
    pub start: Vec<ProgramPoint>,
    pub end: Vec<ProgramPoint>,
}

/// A check that the value a load reads is the one the analysis assumed: after `inst` (an ir
/// `Load` whose LLVM instruction loads an integer of at most 64 bits), the loaded value,
/// sign-extended to 64 bits, is compared with `expected` by the runtime, which reports a
/// mismatch under `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueCheck {
    pub inst: ir::InstId,
    /// The runtime's id for this check (reported with a violation).
    pub id: u32,
    /// The assumed value in canonical form: the w-bit value sign-extended to 64 bits (an i1
    /// `true` is -1, an i8 200 is -56).
    pub expected: i64,
}

/// What the instrumentation inserted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstrumentStats {
    pub enter_calls: usize,
    pub exit_calls: usize,
    /// Edges that needed a new block.
    pub split_edges: usize,
    /// `__knobs_fixed_check` calls (one per [`ValueCheck`]).
    pub value_checks: usize,
}

/// Where calls go, resolved to LLVM before anything is changed.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Site {
    /// Before this LLVM instruction (its address).
    Before(usize),
    /// On the edge with this index in the list of edges.
    Edge(usize),
}

/// Inserts the probes' calls into `ssa_bitcode` (the file [`crate::translate_bitcode`] wrote
/// for this `program` and `positions`), verifies the module and writes it to `output`.
pub fn instrument(
    ssa_bitcode: &Path,
    program: &Program,
    positions: &LlvmPositions,
    probes: &[RegionProbe],
    output: &Path,
) -> Result<InstrumentStats, Error> {
    instrument_with_checks(ssa_bitcode, program, positions, probes, &[], output)
}

/// [`instrument`], and a `__knobs_fixed_check` call after each check's load. A check whose
/// instruction is not a load of an integer of at most 64 bits is an error
/// ([`Error::ValueCheck`]), as is any site that does not resolve; nothing is written then.
pub fn instrument_with_checks(
    ssa_bitcode: &Path,
    program: &Program,
    positions: &LlvmPositions,
    probes: &[RegionProbe],
    checks: &[ValueCheck],
    output: &Path,
) -> Result<InstrumentStats, Error> {
    instrument_checked(
        ssa_bitcode,
        program,
        positions,
        probes,
        checks,
        &[],
        false,
        output,
    )
    .map(|(stats, _)| stats)
}

/// A build that observes values (run it with `runtime::OBSERVE_ENV` set): a value check
/// after each of `loads` (loads, or other non-phi instructions such as a branch's `icmp`)
/// that gives an integer of at most 64 bits (check id = its index in `loads`), no regions.
/// Others are skipped. Each function of `entries` gets a check of the constant 0 where it
/// starts (ids after those of `loads`, in order): whether any run entered it.
pub fn instrument_observing(
    ssa_bitcode: &Path,
    program: &Program,
    positions: &LlvmPositions,
    loads: &[ir::InstId],
    entries: &[FuncId],
    output: &Path,
) -> Result<Observing, Error> {
    let checks: Vec<ValueCheck> = loads
        .iter()
        .enumerate()
        .map(|(k, &inst)| ValueCheck {
            inst,
            id: k as u32,
            expected: 0,
        })
        .collect();
    let entries: Vec<(FuncId, u32)> = entries
        .iter()
        .enumerate()
        .map(|(k, &f)| (f, (loads.len() + k) as u32))
        .collect();
    let (_, checks) = instrument_checked(
        ssa_bitcode,
        program,
        positions,
        &[],
        &checks,
        &entries,
        true,
        output,
    )?;
    Ok(Observing { checks, entries })
}

/// What an observing build reports: the value checks inserted, and the check id of each
/// observed function entry.
pub struct Observing {
    pub checks: Vec<ValueCheck>,
    pub entries: Vec<(FuncId, u32)>,
}

/// [`instrument_with_checks`]; with `lenient`, a check whose load is not an integer load is
/// left out instead of failing. `entries`: a check of the constant 0 where each function
/// starts, under the id given. Returns the checks inserted.
#[allow(clippy::too_many_arguments)]
fn instrument_checked(
    ssa_bitcode: &Path,
    program: &Program,
    positions: &LlvmPositions,
    probes: &[RegionProbe],
    checks: &[ValueCheck],
    entries: &[(FuncId, u32)],
    lenient: bool,
    output: &Path,
) -> Result<(InstrumentStats, Vec<ValueCheck>), Error> {
    let context = Context::create();
    let module = bitcode::load_module(&context, ssa_bitcode)?;
    let m = module.as_mut_ptr();
    let ctx = context.raw();
    let stale = |message: String| Error::StaleBitcode {
        path: ssa_bitcode.to_path_buf(),
        message,
    };
    let mut layout: HashMap<FuncId, FunctionLayout> = HashMap::new();
    let mut layout_of = |f: FuncId| -> Result<FunctionLayout, Error> {
        if let Some(l) = layout.get(&f) {
            return Ok(l.clone());
        }
        let l = function_layout(m, program, positions, f).map_err(stale)?;
        layout.insert(f, l.clone());
        Ok(l)
    };
    // Every point resolved first: inserting shifts instruction positions.
    let mut sites: Vec<Site> = Vec::new();
    let mut site_index: HashMap<Site, usize> = HashMap::new();
    let mut calls: Vec<Vec<(bool, u32)>> = Vec::new(); // per site: (is_enter, region)
    let mut edges: Vec<(FuncId, LLVMBasicBlockRef, LLVMBasicBlockRef, u32, u32)> = Vec::new();
    for pass_enter in [false, true] {
        for probe in probes {
            let points = if pass_enter { &probe.start } else { &probe.end };
            for &point in points {
                let site = match point {
                    ProgramPoint::Before(i) => {
                        let f = program.func_of(i);
                        let blocks = layout_of(f)?;
                        let local = program.block(program.inst(i).block).local as usize;
                        let k = positions.inst_index[i] as usize;
                        let inst = blocks[local].1.get(k).copied().ok_or_else(|| {
                            stale(format!("instruction {i} is not in block {local}"))
                        })?;
                        Site::Before(inst as usize)
                    }
                    ProgramPoint::Edge { from, to } => {
                        let f = program.block(from).func;
                        let blocks = layout_of(f)?;
                        let (lf, lt) = (program.block(from).local, program.block(to).local);
                        let k = edges
                            .iter()
                            .position(|e| e.0 == f && e.3 == lf && e.4 == lt)
                            .unwrap_or_else(|| {
                                edges.push((
                                    f,
                                    blocks[lf as usize].0,
                                    blocks[lt as usize].0,
                                    lf,
                                    lt,
                                ));
                                edges.len() - 1
                            });
                        Site::Edge(k)
                    }
                };
                let index = *site_index.entry(site).or_insert_with(|| {
                    sites.push(site);
                    calls.push(Vec::new());
                    sites.len() - 1
                });
                calls[index].push((pass_enter, probe.id));
            }
        }
    }
    // The checks' loads, resolved before any change too: (load, its bit width, check).
    let mut check_sites: Vec<(LLVMValueRef, u32, &ValueCheck)> = Vec::new();
    for check in checks {
        let bad = |message: String| Error::ValueCheck {
            id: check.id,
            inst: check.inst,
            message,
        };
        // Lenient: a load that cannot be checked is not checked.
        let bad = |message: String| -> Result<(), Error> {
            if lenient { Ok(()) } else { Err(bad(message)) }
        };
        let i = check.inst;
        if !program.insts.contains_id(i) {
            bad(format!(
                "the program has only {} instructions",
                program.insts.len()
            ))?;
            continue;
        }
        let is_load = matches!(program.inst(i).kind, ir::InstKind::Load { .. });
        // Observing builds also watch other integers (a branch's condition).
        let observable = lenient && matches!(program.inst(i).kind, ir::InstKind::Op { .. });
        if !is_load && !observable {
            bad("it is not a load".into())?;
            continue;
        }
        let blocks = layout_of(program.func_of(i))?;
        let local = program.block(program.inst(i).block).local as usize;
        let k = positions.inst_index[i] as usize;
        let inst = blocks[local]
            .1
            .get(k)
            .copied()
            .ok_or_else(|| stale(format!("instruction {i} is not in block {local}")))?;
        // SAFETY: `inst` is an instruction of the live module loaded above (the handle rule);
        // any value has a type and any type a kind, and the width is asked only of an integer
        // type (the `||` stops at another kind).
        let width = unsafe {
            let opcode = c::LLVMGetInstructionOpcode(inst);
            if (is_load && opcode != LLVMOpcode::LLVMLoad)
                || !c::LLVMIsATerminatorInst(inst).is_null()
                || opcode == LLVMOpcode::LLVMPHI
            {
                // An atomic read-modify-write also reads, but is not a plain load.
                bad(format!(
                    "its LLVM instruction is not a `load`: {}",
                    llvm_text(inst)
                ))?;
                continue;
            }
            let ty = c::LLVMTypeOf(inst);
            if c::LLVMGetTypeKind(ty) != llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
                || c::LLVMGetIntTypeWidth(ty) > 64
            {
                bad(format!(
                    "it does not load an integer of at most 64 bits: {}",
                    llvm_text(inst)
                ))?;
                continue;
            }
            c::LLVMGetIntTypeWidth(ty)
        };
        check_sites.push((inst, width, check));
    }
    let inserted: Vec<ValueCheck> = check_sites.iter().map(|(_, _, c)| **c).collect();
    // Where each observed function starts: before its entry block's first instruction that
    // is not an `alloca` (those stay together at the top).
    let mut entry_sites: Vec<(LLVMValueRef, u32)> = Vec::new();
    for &(f, id) in entries {
        let Some(entry) = program.func(f).entry() else {
            continue;
        };
        let blocks = layout_of(f)?;
        let local = program.block(entry).local as usize;
        let first = blocks[local].1.iter().copied().find(|&i| {
            // SAFETY: `i` is an instruction of the live module loaded above (the handle rule).
            unsafe { c::LLVMGetInstructionOpcode(i) != LLVMOpcode::LLVMAlloca }
        });
        if let Some(first) = first {
            entry_sites.push((first, id));
        }
    }

    let mut stats = InstrumentStats::default();
    // SAFETY: `ctx` is the live context of the live module `m` (the handle rule); the types
    // are the context's, `params` a live local array of the one parameter type passed, and a
    // function is added to `m` (under a NUL-terminated name) only when it has none of that
    // name. The builder is the context's, disposed of at the end of this function.
    let (void, i32t, fn_type, enter, exit, builder) = unsafe {
        let void = c::LLVMVoidTypeInContext(ctx);
        let i32t = c::LLVMInt32TypeInContext(ctx);
        let mut params = [i32t];
        let fn_type = c::LLVMFunctionType(void, params.as_mut_ptr(), 1, 0);
        let declare = |name: &std::ffi::CStr| {
            let f = c::LLVMGetNamedFunction(m, name.as_ptr());
            if f.is_null() {
                c::LLVMAddFunction(m, name.as_ptr(), fn_type)
            } else {
                f
            }
        };
        let enter = declare(c"__knobs_region_enter");
        let exit = declare(c"__knobs_region_exit");
        let builder = c::LLVMCreateBuilderInContext(ctx);
        (void, i32t, fn_type, enter, exit, builder)
    };
    let emit = |builder: LLVMBuilderRef, site_calls: &[(bool, u32)], near: &[LLVMValueRef]| {
        let loc = near
            .iter()
            .map(|&i| nearest_debug_loc(i))
            .find(|l| !l.is_null())
            .unwrap_or(std::ptr::null_mut());
        // SAFETY: `builder` is positioned inside a function of the live module (every caller
        // positions it first); `loc` is null or a `DILocation` of the module (setting null
        // clears the builder's location, never the stale one of an earlier position in
        // another function); each call passes an `i32` constant of the context to a
        // `void (i32)` function of the module with that type, from a live local array of one
        // argument, and gets the location when there is one.
        unsafe {
            c::LLVMSetCurrentDebugLocation2(builder, loc);
            for &(is_enter, id) in site_calls {
                let mut args = [c::LLVMConstInt(i32t, id as u64, 0)];
                let callee = if is_enter { enter } else { exit };
                let call =
                    c::LLVMBuildCall2(builder, fn_type, callee, args.as_mut_ptr(), 1, c"".as_ptr());
                if !loc.is_null() {
                    llvm_sys::debuginfo::LLVMInstructionSetDebugLoc(call, loc);
                }
            }
        }
    };
    // Points before instructions first, edges after: an edge out of a block with one
    // successor is instrumented before its terminator, and must come after the calls placed
    // before that terminator itself (a region that ends on the edge may start right there);
    // an edge into a block with one predecessor goes before that block's first call already.
    let order = sites
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Site::Before(_)))
        .chain(
            sites
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, Site::Edge(_))),
        );
    for (index, site) in order {
        let site_calls = &calls[index];
        for &(is_enter, _) in site_calls {
            if is_enter {
                stats.enter_calls += 1;
            } else {
                stats.exit_calls += 1;
            }
        }
        match *site {
            Site::Before(inst) => {
                let inst = first_non_phi_from(inst as LLVMValueRef);
                // SAFETY: `inst` is an instruction of the live module (the handle rule).
                unsafe { c::LLVMPositionBuilderBefore(builder, inst) };
                emit(builder, site_calls, &[inst]);
            }
            Site::Edge(k) => {
                let (f, from, to, _, lt) = edges[k];
                // SAFETY: `from` is a block of the live module with a successor (`to`),
                // so it ends in a terminator; terminators have a successor count.
                let (term, single_successor) = unsafe {
                    let term = c::LLVMGetBasicBlockTerminator(from);
                    (term, c::LLVMGetNumSuccessors(term) == 1)
                };
                let cfg_preds = program.cfg(f).preds[lt as usize].len();
                if single_successor {
                    // SAFETY: `term` is an instruction of the live module and `to` a
                    // block of it, which has a first instruction (its terminator at least).
                    let into = unsafe {
                        c::LLVMPositionBuilderBefore(builder, term);
                        first_non_phi_from(c::LLVMGetFirstInstruction(to))
                    };
                    emit(builder, site_calls, &[term, into]);
                } else if cfg_preds == 1 {
                    // SAFETY: `to` is a block of the live module, whose first instruction
                    // exists (it ends in a terminator); the builder goes before the first
                    // one that is not a phi.
                    let first = unsafe {
                        let first = first_non_phi_from(c::LLVMGetFirstInstruction(to));
                        c::LLVMPositionBuilderBefore(builder, first);
                        first
                    };
                    emit(builder, site_calls, &[first, term]);
                } else {
                    stats.split_edges += 1;
                    let middle = split_edge(ctx, builder, from, to);
                    // SAFETY: `middle` is the new block, which ends in its branch to `to`;
                    // `to` has a first instruction (it ends in a terminator).
                    let into = unsafe {
                        let br = c::LLVMGetBasicBlockTerminator(middle);
                        c::LLVMPositionBuilderBefore(builder, br);
                        first_non_phi_from(c::LLVMGetFirstInstruction(to))
                    };
                    emit(builder, site_calls, &[into, term]);
                }
            }
        }
    }
    // Checks last, each right after its load: before any region call placed after it, and
    // without moving the debug locations region calls took from their neighbours.
    if !check_sites.is_empty() || !entry_sites.is_empty() {
        // SAFETY: `ctx` and `m` are live (the handle rule): the types are the context's,
        // `params` a live local array of the three parameter types passed, and the check
        // function is added under a NUL-terminated name only when `m` has none. Each load
        // is an instruction of `m` that never ends its block, so it has a next instruction
        // to position the builder before; its location is null or a `DILocation`; the
        // sign extension takes the loaded integer (narrower than 64 bits) to `i64`; the
        // call passes an `i32`, an `i64` and an `i64` constant to the
        // `void (i32, i64, i64)` function of that type, from a live local array of three.
        // An entry site is an instruction of `m` too (resolved above, before any change),
        // so the builder can be positioned before it; its call passes three constants.
        unsafe {
            let i64t = c::LLVMInt64TypeInContext(ctx);
            let mut params = [i32t, i64t, i64t];
            let check_type = c::LLVMFunctionType(void, params.as_mut_ptr(), 3, 0);
            let name = std::ffi::CString::new(FIXED_CHECK).expect("no NUL in the name");
            let mut check_fn = c::LLVMGetNamedFunction(m, name.as_ptr());
            if check_fn.is_null() {
                check_fn = c::LLVMAddFunction(m, name.as_ptr(), check_type);
            }
            // The call `check (id, value, expected)` where the builder is, at `loc`.
            let build_check = |id, value, expected, loc: llvm_sys::prelude::LLVMMetadataRef| {
                let mut args = [id, value, expected];
                let call = c::LLVMBuildCall2(
                    builder,
                    check_type,
                    check_fn,
                    args.as_mut_ptr(),
                    3,
                    c"".as_ptr(),
                );
                if !loc.is_null() {
                    llvm_sys::debuginfo::LLVMInstructionSetDebugLoc(call, loc);
                }
            };
            for &(load, width, check) in &check_sites {
                let next = c::LLVMGetNextInstruction(load); // a load never ends a block
                c::LLVMPositionBuilderBefore(builder, next);
                let loc = nearest_debug_loc(load);
                c::LLVMSetCurrentDebugLocation2(builder, loc);
                let value = if width < 64 {
                    let ext = c::LLVMBuildSExt(builder, load, i64t, c"".as_ptr());
                    if !loc.is_null() {
                        llvm_sys::debuginfo::LLVMInstructionSetDebugLoc(ext, loc);
                    }
                    ext
                } else {
                    load
                };
                build_check(
                    c::LLVMConstInt(i32t, u64::from(check.id), 0),
                    value,
                    c::LLVMConstInt(i64t, check.expected as u64, 1),
                    loc,
                );
                stats.value_checks += 1;
            }
            for &(first, id) in &entry_sites {
                c::LLVMPositionBuilderBefore(builder, first);
                let loc = nearest_debug_loc(first);
                c::LLVMSetCurrentDebugLocation2(builder, loc);
                let zero = c::LLVMConstInt(i64t, 0, 1);
                build_check(c::LLVMConstInt(i32t, u64::from(id), 0), zero, zero, loc);
            }
        }
    }
    // SAFETY: the builder made above, disposed of once, after its last use; `m` is live.
    unsafe {
        c::LLVMDisposeBuilder(builder);
        crate::memory_effects::drop_stale_memory_effects(m);
    }
    module
        .verify()
        .map_err(|e| Error::Verify(first_line(&e.to_string())))?;
    bitcode::write_bitcode(&module, output)?;
    Ok((stats, inserted))
}

/// The LLVM blocks of a function with their instructions (shared: cloning is cheap).
type FunctionLayout = std::rc::Rc<Vec<(LLVMBasicBlockRef, Vec<LLVMValueRef>)>>;

/// The LLVM blocks and instructions of `f`, checked against the shape recorded at
/// translation.
fn function_layout(
    m: llvm_sys::prelude::LLVMModuleRef,
    program: &Program,
    positions: &LlvmPositions,
    f: FuncId,
) -> Result<FunctionLayout, String> {
    let name = &program.func(f).name;
    let cname = std::ffi::CString::new(name.as_str()).map_err(|e| e.to_string())?;
    // SAFETY: `m` is the live module being instrumented (the handle rule) and `cname` a
    // NUL-terminated name that outlives the call.
    let func = unsafe { c::LLVMGetNamedFunction(m, cname.as_ptr()) };
    if func.is_null() {
        return Err(format!("it has no function `{name}`"));
    }
    let blocks: Vec<_> = bitcode::blocks(func)
        .into_iter()
        .map(|b| (b, bitcode::instructions(b)))
        .collect();
    let shape = positions.shape[f];
    let instructions: usize = blocks.iter().map(|(_, i)| i.len()).sum();
    if blocks.len() != shape.blocks as usize || instructions != shape.instructions as usize {
        return Err(format!(
            "function `{name}` has {} blocks and {instructions} instructions, not {} and {}",
            blocks.len(),
            shape.blocks,
            shape.instructions
        ));
    }
    Ok(std::rc::Rc::new(blocks))
}

/// An LLVM instruction as text, for messages (one line).
fn llvm_text(inst: LLVMValueRef) -> String {
    // SAFETY: `inst` is a live value (the handle rule); its printed form is a NUL-terminated
    // string LLVM allocated, copied and then disposed of once.
    unsafe {
        let text = c::LLVMPrintValueToString(inst);
        let out = std::ffi::CStr::from_ptr(text)
            .to_string_lossy()
            .trim()
            .to_string();
        c::LLVMDisposeMessage(text);
        first_line(&out)
    }
}

/// The debug location of `inst`, else of the nearest instruction after it in its block, else
/// before it (phis, allocas and branches made by clang often have none or line 0).
fn nearest_debug_loc(inst: LLVMValueRef) -> llvm_sys::prelude::LLVMMetadataRef {
    use llvm_sys::debuginfo::LLVMInstructionGetDebugLoc as loc_of;
    // SAFETY: `inst` is an instruction of the live module (the handle rule); the walks call
    // `LLVMGetNextInstruction` and `LLVMGetPreviousInstruction` only on non-null instructions
    // of its block, and ask a location's line only of a non-null `DILocation`.
    unsafe {
        for step in [c::LLVMGetNextInstruction, c::LLVMGetPreviousInstruction] {
            let mut i = inst;
            while !i.is_null() {
                let loc = loc_of(i);
                // Line 0 is what clang gives compiler-made code (and parameters' `llvm.dbg.value`).
                if !loc.is_null() && llvm_sys::debuginfo::LLVMDILocationGetLine(loc) > 0 {
                    return loc;
                }
                i = step(i);
            }
        }
    }
    std::ptr::null_mut()
}

/// `inst` itself, or the first instruction after it that is not a phi or landing pad.
fn first_non_phi_from(mut inst: LLVMValueRef) -> LLVMValueRef {
    // SAFETY: `inst` is an instruction of the live module (the handle rule); the walk stops at
    // the block's terminator at the latest (neither a phi nor a landing pad), so every
    // instruction asked its opcode or successor is non-null.
    unsafe {
        while matches!(
            c::LLVMGetInstructionOpcode(inst),
            LLVMOpcode::LLVMPHI | LLVMOpcode::LLVMLandingPad
        ) {
            inst = c::LLVMGetNextInstruction(inst);
        }
    }
    inst
}

/// A new block on the edge `from → to`: `from`'s branches to `to` go to it, it jumps to `to`,
/// and `to`'s phis name it instead of `from`.
fn split_edge(
    ctx: llvm_sys::prelude::LLVMContextRef,
    builder: LLVMBuilderRef,
    from: LLVMBasicBlockRef,
    to: LLVMBasicBlockRef,
) -> LLVMBasicBlockRef {
    // SAFETY: `ctx`, `builder`, `from` and `to` are of the live module (the handle rule), and
    // `from → to` is an edge, so `from` ends in a terminator whose successors are read and
    // set below their count. The new block goes before `to` in `to`'s function; the builder
    // is positioned in it and at `to`'s phis, which are walked while non-null and phis (the
    // next one read before the current one is erased); each rebuilt phi has the old one's
    // type and gets its incoming pairs from live locals, one pair per call; the old phi is
    // erased only once nothing uses it (replaced everywhere by the rebuilt one) and not used
    // afterwards.
    unsafe {
        let middle = c::LLVMInsertBasicBlockInContext(ctx, to, c"knobs.edge".as_ptr());
        let term = c::LLVMGetBasicBlockTerminator(from);
        for k in 0..c::LLVMGetNumSuccessors(term) {
            if c::LLVMGetSuccessor(term, k) == to {
                c::LLVMSetSuccessor(term, k, middle);
            }
        }
        c::LLVMPositionBuilderAtEnd(builder, middle);
        // Positioning before an instruction earlier made its location the builder's current
        // one, possibly in another function: new instructions must not inherit it.
        c::LLVMSetCurrentDebugLocation2(builder, std::ptr::null_mut());
        let br = c::LLVMBuildBr(builder, to);
        let loc = llvm_sys::debuginfo::LLVMInstructionGetDebugLoc(term);
        if !loc.is_null() {
            llvm_sys::debuginfo::LLVMInstructionSetDebugLoc(br, loc);
        }
        // LLVM's C API cannot change a phi's incoming block: rebuild each phi of `to`.
        let mut phi = c::LLVMGetFirstInstruction(to);
        while !phi.is_null() && c::LLVMGetInstructionOpcode(phi) == LLVMOpcode::LLVMPHI {
            let next = c::LLVMGetNextInstruction(phi);
            let ty: LLVMTypeRef = c::LLVMTypeOf(phi);
            c::LLVMPositionBuilderBefore(builder, phi);
            let rebuilt = c::LLVMBuildPhi(builder, ty, c"".as_ptr());
            llvm_sys::debuginfo::LLVMInstructionSetDebugLoc(
                rebuilt,
                llvm_sys::debuginfo::LLVMInstructionGetDebugLoc(phi),
            );
            let mut from_done = false;
            for k in 0..c::LLVMCountIncoming(phi) {
                let mut value = c::LLVMGetIncomingValue(phi, k);
                let mut block = c::LLVMGetIncomingBlock(phi, k);
                if block == from {
                    // One entry per predecessor edge: `middle` has one edge into `to`.
                    if from_done {
                        continue;
                    }
                    from_done = true;
                    block = middle;
                }
                c::LLVMAddIncoming(rebuilt, &mut value, &mut block, 1);
            }
            c::LLVMReplaceAllUsesWith(phi, rebuilt);
            c::LLVMInstructionEraseFromParent(phi);
            phi = next;
        }
        middle
    }
}

/// Links instrumented bitcode with the runtime (static libraries or objects) and any extra
/// flags (e.g. `-lm`) into an executable: `clang-19 -O2 prog.inst.bc runtime… -o output`,
/// or `-O0` without `optimise`: taint-instrumented programs, whose shadow-memory calls make
/// `-O2` take many minutes on a large program (zstd: over 13 minutes at -O2, 283 s at -O1,
/// 27 s at -O0) while they only run on the small analysis workload.
pub fn link_instrumented(
    clang: &Path,
    bitcode: &Path,
    runtime: &[PathBuf],
    extra_flags: &[String],
    output: &Path,
    optimise: bool,
) -> Result<(), Error> {
    let out = Command::new(clang)
        .arg(if optimise { "-O2" } else { "-O0" })
        .arg(bitcode)
        .args(runtime)
        .args(extra_flags)
        .arg("-o")
        .arg(output)
        .output()
        .map_err(|e| Error::ToolMissing {
            tool: clang.display().to_string(),
            message: e.to_string(),
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr
            .lines()
            .find(|l| l.contains("error"))
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|| first_line(&stderr));
        return Err(Error::LinkBinary {
            tool: clang.display().to_string(),
            message: line,
        });
    }
    Ok(())
}
