//! Counted instructions inside an instrumented build: the program keeps a per-thread count of
//! its own IR instructions (`__knobs_instructions`, defined by the region timers' counting
//! build, `runtime::build_counting`), which the runtime reads instead of a clock.
//!
//! What is counted: every instruction of the program's bitcode as the translation wrote it,
//! before any instrumentation, but phis and the bookkeeping calls the translation leaves out
//! too (`bitcode::is_ignored_intrinsic`: debug intrinsics, lifetime markers, `llvm.assume`).
//! Each is counted once per execution of its block's straight-line *segment*: a block is cut
//! at every region enter/exit call, and each segment's count is added where it starts (after
//! the probe that opens it), so a region is charged exactly the instructions run inside it. A
//! call counts as one instruction: the callee's instructions are counted in the callee when
//! it is part of the program, and not at all when it is not (libc, the kernel). A segment
//! left early (`exit`, `longjmp`, a signal) is counted whole.
//!
//! The instrumentation's own instructions (probe calls, value checks, their casts, the phis
//! and branches of split edges, and the counting itself) are never counted: the original
//! instructions are tagged with metadata ([`ORIGINAL`]) before the regions are inserted, and
//! only tagged ones count. So a build with regions and one without count the same
//! instructions, which is what makes a model and its ground truth comparable. Nor are
//! *markers*, functions the source defines for an instrumenter to find ([`MARKER_PREFIX`]:
//! the variant simulator's feature blocks): neither their calls nor their bodies count, as a
//! real build inlines them away.

use std::path::Path;

use inkwell::context::Context;
use llvm_sys::LLVMOpcode;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMContextRef, LLVMModuleRef, LLVMValueRef};

use crate::instrument::{ENTER, EXIT};
use crate::translate::LlvmPositions;
use crate::{Error, InstrumentStats, RegionProbe, ValueCheck, bitcode, first_line};

/// The metadata kind that marks an instruction of the original program.
pub const ORIGINAL: &str = "knobs.original";

/// Functions whose name starts with this are markers: not counted, nor are calls of them.
pub const MARKER_PREFIX: &str = "__knobs_marker_";

/// The thread-local counter the counting runtime defines (`runtime::INSTRUCTION_COUNTER`).
pub const COUNTER: &str = "__knobs_instructions";

/// What the counting pass inserted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterStats {
    /// Segments that got an add to the counter (segments with nothing to count get none).
    pub segments: usize,
    /// Original instructions counted, statically (each once).
    pub instructions: usize,
}

/// [`crate::instrument_with_checks`] for the counting build: the original instructions are
/// tagged, the regions and checks inserted, then the counters ([`add_instruction_counters`]).
/// Link the result with `runtime::build_counting`'s library.
pub fn instrument_counting(
    ssa_bitcode: &Path,
    program: &ir::Program,
    positions: &LlvmPositions,
    probes: &[RegionProbe],
    checks: &[ValueCheck],
    output: &Path,
) -> Result<(InstrumentStats, CounterStats), Error> {
    let tagged = output.with_extension("original.bc");
    tag_original(ssa_bitcode, &tagged)?;
    let stats = crate::instrument_with_checks(&tagged, program, positions, probes, checks, output);
    let _ = std::fs::remove_file(&tagged);
    let counters = add_instruction_counters(output, output)?;
    Ok((stats?, counters))
}

/// Writes `input` to `output` with every instruction tagged [`ORIGINAL`] (metadata only: the
/// module's shape, and so the translation's positions, are unchanged).
pub fn tag_original(input: &Path, output: &Path) -> Result<(), Error> {
    let context = Context::create();
    let module = bitcode::load_module(&context, input)?;
    let (m, ctx) = (module.as_mut_ptr(), context.raw());
    let kind = original_kind(ctx);
    // SAFETY: `ctx` is the live context of `m` (the handle rule); an empty metadata node of
    // it is attached, as a value, to instructions of `m` listed just before.
    unsafe {
        let node = c::LLVMMDNodeInContext2(ctx, std::ptr::null_mut(), 0);
        let value = c::LLVMMetadataAsValue(ctx, node);
        for f in bitcode::functions(m) {
            if bitcode::value_name(f).starts_with(MARKER_PREFIX) {
                continue;
            }
            for b in bitcode::blocks(f) {
                for i in bitcode::instructions(b) {
                    c::LLVMSetMetadata(i, kind, value);
                }
            }
        }
    }
    bitcode::write_bitcode(&module, output)
}

/// Adds to every segment of original code (a block cut at region enter/exit calls) a `load`,
/// `add` and `store` of the thread's counter, of the number of [`ORIGINAL`] instructions in
/// it that count (the module header). `input` and `output` may be the same file.
pub fn add_instruction_counters(input: &Path, output: &Path) -> Result<CounterStats, Error> {
    let context = Context::create();
    let module = bitcode::load_module(&context, input)?;
    let (m, ctx) = (module.as_mut_ptr(), context.raw());
    let kind = original_kind(ctx);
    let counter = counter_global(m, ctx);
    let mut stats = CounterStats::default();
    // SAFETY: `ctx`, `m` and the builder are live (the handle rule) and the builder is
    // disposed of once, after its last use.
    let builder = unsafe { c::LLVMCreateBuilderInContext(ctx) };
    for f in bitcode::functions(m) {
        for b in bitcode::blocks(f) {
            let mut start: Option<LLVMValueRef> = None;
            let mut counted = 0u64;
            for i in bitcode::instructions(b) {
                match classify(i, kind) {
                    Kind::Lead => continue,
                    Kind::Probe => {
                        add_count(builder, ctx, counter, start, counted, &mut stats);
                        (start, counted) = (None, 0);
                        continue;
                    }
                    Kind::Counted => counted += 1,
                    Kind::Other => {}
                }
                start.get_or_insert(i);
            }
            add_count(builder, ctx, counter, start, counted, &mut stats);
        }
    }
    // SAFETY: the builder made above, not used after this; `m` is live.
    unsafe {
        c::LLVMDisposeBuilder(builder);
        crate::memory_effects::drop_stale_memory_effects(m);
    }
    module
        .verify()
        .map_err(|e| Error::Verify(first_line(&e.to_string())))?;
    bitcode::write_bitcode(&module, output)?;
    Ok(stats)
}

/// How the counting pass sees an instruction.
enum Kind {
    /// A phi or landing pad: nothing may be inserted before it, and it is not counted.
    Lead,
    /// A region enter or exit call: a segment ends here.
    Probe,
    /// An original instruction that counts.
    Counted,
    /// Anything else (the instrumentation's own code, ignored intrinsics).
    Other,
}

fn classify(i: LLVMValueRef, kind: u32) -> Kind {
    // SAFETY: `i` is a live instruction (the handle rule); the callee is asked of a call only,
    // and its name only when it is a function.
    unsafe {
        let opcode = c::LLVMGetInstructionOpcode(i);
        if matches!(opcode, LLVMOpcode::LLVMPHI | LLVMOpcode::LLVMLandingPad) {
            return Kind::Lead;
        }
        if opcode == LLVMOpcode::LLVMCall {
            let callee = c::LLVMGetCalledValue(i);
            if !callee.is_null() && !c::LLVMIsAFunction(callee).is_null() {
                let name = bitcode::value_name(callee);
                if name == ENTER || name == EXIT {
                    return Kind::Probe;
                }
                if bitcode::is_ignored_intrinsic(&name) || name.starts_with(MARKER_PREFIX) {
                    return Kind::Other;
                }
            }
        }
        if c::LLVMGetMetadata(i, kind).is_null() {
            Kind::Other
        } else {
            Kind::Counted
        }
    }
}

/// `counter += counted` before `start` (nothing when the segment counts nothing).
fn add_count(
    builder: llvm_sys::prelude::LLVMBuilderRef,
    ctx: LLVMContextRef,
    counter: LLVMValueRef,
    start: Option<LLVMValueRef>,
    counted: u64,
    stats: &mut CounterStats,
) {
    let Some(start) = start else { return };
    if counted == 0 {
        return;
    }
    stats.segments += 1;
    stats.instructions += counted as usize;
    // SAFETY: `start` is a live instruction that is neither a phi nor a landing pad, so code
    // may go before it; the load, add and store are of `i64` on the module's `i64` counter.
    unsafe {
        let i64t = c::LLVMInt64TypeInContext(ctx);
        c::LLVMPositionBuilderBefore(builder, start);
        let old = c::LLVMBuildLoad2(builder, i64t, counter, c"".as_ptr());
        let new = c::LLVMBuildAdd(
            builder,
            old,
            c::LLVMConstInt(i64t, counted, 0),
            c"".as_ptr(),
        );
        c::LLVMBuildStore(builder, new, counter);
    }
}

/// The [`ORIGINAL`] metadata kind's id in `ctx`.
fn original_kind(ctx: LLVMContextRef) -> u32 {
    // SAFETY: `ctx` is live; the name is passed with its length.
    unsafe { c::LLVMGetMDKindIDInContext(ctx, ORIGINAL.as_ptr().cast(), ORIGINAL.len() as u32) }
}

/// The module's declaration of the runtime's counter: an external `i64`, thread-local with
/// the initial-exec model (the runtime is linked into the executable).
fn counter_global(m: LLVMModuleRef, ctx: LLVMContextRef) -> LLVMValueRef {
    let name = std::ffi::CString::new(COUNTER).expect("no NUL in the name");
    // SAFETY: `m` and `ctx` are live; the global is looked up, or added, by a NUL-terminated
    // name that outlives the calls.
    unsafe {
        let existing = c::LLVMGetNamedGlobal(m, name.as_ptr());
        if !existing.is_null() {
            return existing;
        }
        let g = c::LLVMAddGlobal(m, c::LLVMInt64TypeInContext(ctx), name.as_ptr());
        c::LLVMSetThreadLocal(g, 1);
        c::LLVMSetThreadLocalMode(g, llvm_sys::LLVMThreadLocalMode::LLVMInitialExecTLSModel);
        g
    }
}
