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
//!   in LLVM IR, `helpers::helpers_ir`, linked in and always inlined): the page table lookup, a vector
//!   load or store of the labels, and a call to the runtime only for accesses that cross a
//!   shadow page or meet an interned label.
//! - Calls: the caller writes argument labels to the thread-local `__knobs_taint_args` (64
//!   slots; further arguments are unlabelled) and reads the result's label from
//!   `__knobs_taint_ret`, which the callee's `ret` writes (a struct passed by value is a copy
//!   the code generator makes, without shadow, so its pointer's label also carries the union of
//!   the object's shadow). Calls to external (uninstrumented)
//!   functions follow summaries: `memcpy`/`memmove` (and the intrinsics) copy shadow (a copy
//!   out of an option's place, a source like a load, adds the option to every byte copied),
//!   `memset` writes the value's label, `strcpy`/`strdup` copy the string's shadow, allocation
//!   functions return label 0, everything else returns the union of its arguments' labels.
//!   Indirect calls set both: the argument slots and a default result (the union), which an
//!   instrumented callee overwrites.
//! - Control taint (implicit flows): a conditional branch or switch opens an entry with its
//!   condition's label, closed at the start of the branch's immediate post-dominator; executing
//!   again (a loop header) replaces its own entry. The entries live in the function: one stack
//!   slot per decision (its open entry's label, 0 when closed), which the optimiser turns into
//!   SSA values, and a static data-flow pass (`control::open_decisions`) says which decisions may be
//!   open at each block, so only those are read. The thread-local `__knobs_taint_ctrl` is the
//!   control taint of the running code: a function reads its caller's at entry (its base),
//!   sets it to base ∪ its open entries at every decision and pop, and restores the base at
//!   `ret`; so callees inherit it and stores union it. A phi's incoming value is unioned with
//!   the function's open entries at the end of the incoming block (the SSA form of "a variable
//!   assigned under a tainted branch"), and so is a returned value. Values that stay inside the
//!   controlled code keep only their data taint, so a decision under a tainted branch reports
//!   the branch in its control taint, not its data taint.
//! - Sources (places in the translated program, each with its option's index): a load from an option
//!   global (any address inside it) or from an option struct field (any member inside it: a load
//!   of `a.b.c` reads field `b` too), and the result of a selected call (e.g. `getenv("X")`),
//!   get the option's label added.
//! - Decisions: ids number the conditional branches and switches in module order (stable for one
//!   build), each function's followed by its decisions inside blocks: selects (their
//!   condition), indirect calls (the called pointer; the callee runs with it added to the
//!   control taint, and its result carries it) and calls into the C library other than
//!   printing and `free` (what they are given: the arguments' labels and the contents of the
//!   small local and global objects they point to). Each reports its function, file, line and
//!   column. A decision records its (data, control) taint pair through the runtime only when
//!   it differs from the site's last recorded pair (`__knobs_taint_last`, one key per site,
//!   checked inline), so a decision executed again with the same taints costs a compare.
//!   Untainted branches and switches are reported too, with empty taints (they make their
//!   region known to Comprex); decisions inside blocks only when their data is tainted.
//!
//! The runtime is initialised at the start of `main` (a program without `main` records nothing).//!
//! The parts: `sources` (which loads and calls read an option), `helpers` (the LLVM IR
//! helpers linked in), `shadow` (labels, unions and shadow memory accesses as built code),
//! `control` (decisions, frames and the open-decision analysis), `function` (instrumenting a
//! function and its instructions) and `calls` (call sites and library summaries). Every call
//! into LLVM's C API follows the handle rule of `crate::bitcode`.

mod calls;
mod control;
mod function;
mod helpers;
mod shadow;
mod sources;

use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;

use inkwell::context::Context;
use ir::{Place, Program};
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMBuilderRef, LLVMContextRef, LLVMModuleRef, LLVMTypeRef, LLVMValueRef};

use crate::translate::LlvmPositions;
use crate::{Error, bitcode};
use helpers::{INLINE_ACCESS, link_helpers};
use sources::source_sites;

/// Number of argument label slots (the runtime's `KT_MAX_ARGS`).
const MAX_ARGS: u32 = 64;

/// What the taint instrumentation did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaintStats {
    /// Functions instrumented (with bodies).
    pub functions: usize,
    /// Decision sites (conditional branches, switches, and decisions inside blocks), numbered
    /// `0..decisions`.
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
    // SAFETY: `m` is the module loaded above, alive until this function returns, after the
    // pass is finished; the sources' keys are instructions of it (`source_sites`).
    let mut pass = unsafe { Pass::new(m, source_sites) };
    let funcs: Vec<LLVMValueRef> = bitcode::functions(m)
        .into_iter()
        .filter(|&f| {
            // SAFETY: `f` is a function of the live module `m` (the handle rule).
            let blocks = unsafe { c::LLVMCountBasicBlocks(f) };
            blocks > 0 && !bitcode::value_name(f).starts_with("__knobs_")
        })
        .collect();
    for &f in &funcs {
        pass.function(f);
        stats.functions += 1;
    }
    stats.decisions = pass.sites.len();
    pass.finish(options);
    // The sites have their locations; the binary needs no debug information, and without
    // it clang compiles the (larger) instrumented module faster.
    // SAFETY: `m` is the live module loaded above.
    unsafe { llvm_sys::debuginfo::LLVMStripModuleDebugInfo(m) };
    if let Err(e) = module.verify() {
        return Err(Error::Verify(crate::first_line(e.to_str().unwrap_or("?"))));
    }
    bitcode::write_bitcode(&module, output)?;
    Ok(stats)
}

/// Runtime declarations and the state of the pass.
///
/// Invariant (what [`Pass::new`]'s caller promises): `m` is a live module, `ctx` its context,
/// and they outlive the pass; every handle in the pass and every handle given to its methods
/// is of `m` (the handle rule of [`crate::bitcode`]). `b` is the pass's own builder, disposed
/// of by [`Pass::finish`]; methods that build code build it where the caller positioned `b`,
/// inside a function of `m`.
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
    /// Per decision id: a byte of the ways its conditional branch went (bit 0: false, bit 1:
    /// true) and, set by the runtime, bit 7 for a one-way site (a placeholder like `last`).
    ways: LLVMValueRef,
    union: (LLVMTypeRef, LLVMValueRef),
    union_slow: (LLVMTypeRef, LLVMValueRef),
    union_all: (LLVMTypeRef, LLVMValueRef),
    /// `__knobs_taint_union_<n>` by `n` ([`Pass::union_n`]).
    unions: std::cell::RefCell<HashMap<usize, (LLVMTypeRef, LLVMValueRef)>>,
    decide: (LLVMTypeRef, LLVMValueRef),
    /// [`Pass::decide`] only when the data label is not 0 (decisions inside blocks).
    decide_tainted: (LLVMTypeRef, LLVMValueRef),
    branch: (LLVMTypeRef, LLVMValueRef),
    /// `__knobs_taint_load_<n>` and `__knobs_taint_store_<n>` by `n`.
    inline_loads: HashMap<u64, (LLVMTypeRef, LLVMValueRef)>,
    inline_stores: HashMap<u64, (LLVMTypeRef, LLVMValueRef)>,
    load: (LLVMTypeRef, LLVMValueRef),
    store: (LLVMTypeRef, LLVMValueRef),
    copy: (LLVMTypeRef, LLVMValueRef),
    strcopy: (LLVMTypeRef, LLVMValueRef),
    init: (LLVMTypeRef, LLVMValueRef),
    read: (LLVMTypeRef, LLVMValueRef),
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

impl Pass {
    /// Declares the runtime's thread-locals and functions in `m`, links the helpers in, and
    /// makes the builder.
    ///
    /// # Safety
    ///
    /// `m` must be a live module that outlives the returned pass, and the keys of `sources`
    /// instructions of `m`: the invariant of [`Pass`].
    unsafe fn new(m: LLVMModuleRef, sources: HashMap<LLVMValueRef, Vec<u32>>) -> Pass {
        // SAFETY: `m` is live (this function's contract), so is its context; the types are
        // the context's; each global and function is added to `m` under a NUL-terminated name
        // with a type of the context, `params` slices are live locals whose length is passed,
        // and a function is added only when `m` has none of that name.
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
            let i8t = c::LLVMInt8TypeInContext(ctx);
            let ways = c::LLVMAddGlobal(m, c::LLVMArrayType2(i8t, 0), c"".as_ptr());
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
                ways,
                union: declare(c"__knobs_taint_union", i32t, &[i32t, i32t]),
                union_slow: declare(c"__knobs_taint_union_slow", i32t, &[i32t, i32t]),
                union_all: declare(c"__knobs_taint_union_all", i32t, &[ptrt, i64t]),
                unions: Default::default(),
                decide: declare(c"__knobs_taint_decide", voidt, &[ptrt, i32t, i32t, i32t]),
                decide_tainted: declare(
                    c"__knobs_taint_decide_tainted",
                    voidt,
                    &[ptrt, i32t, i32t, i32t],
                ),
                inline_loads,
                inline_stores,
                load: declare(c"__knobs_taint_load", i32t, &[ptrt, i64t]),
                store: declare(c"__knobs_taint_store", voidt, &[ptrt, i64t, i32t]),
                copy: declare(c"__knobs_taint_copy", voidt, &[ptrt, ptrt, i64t, i32t]),
                strcopy: declare(c"__knobs_taint_strcopy", voidt, &[ptrt, ptrt, i32t]),
                branch: declare(
                    c"__knobs_taint_branch",
                    i32t,
                    &[ptrt, c::LLVMInt1TypeInContext(ctx), i32t],
                ),
                init: declare(
                    c"__knobs_taint_init",
                    voidt,
                    &[i32t, ptrt, i32t, ptrt, ptrt, ptrt],
                ),
                read: declare(c"__knobs_taint_read", voidt, &[i32t]),
                sources,
                sites: Vec::new(),
            }
        }
    }

    /// Defines the per-site arrays of last recorded keys and of branch ways (replacing the
    /// placeholders the decisions index), calls `__knobs_taint_init` first thing in `main`, and disposes of the
    /// builder (the placeholder is deleted: the pass is used up).
    fn finish(self, options: &[String]) {
        self.init_in_main(options);
        // SAFETY: `b` is the pass's own builder (the invariant of [`Pass`]), disposed of once,
        // here, as `self` is consumed.
        unsafe { c::LLVMDisposeBuilder(self.b) };
    }

    fn init_in_main(&self, options: &[String]) {
        // SAFETY: `m` is live (the invariant of [`Pass`]); the array type is of its context;
        // the new global gets a constant of its own type; every use of the placeholder
        // `last` is replaced by the new global (of the same pointer type) before the
        // placeholder, now unused, is deleted, and it is not used afterwards (`finish`
        // consumes the pass).
        let per_site = |placeholder: LLVMValueRef, element: LLVMTypeRef, name: &std::ffi::CStr| unsafe {
            let ty = c::LLVMArrayType2(element, self.sites.len() as u64);
            let array = c::LLVMAddGlobal(self.m, ty, name.as_ptr());
            c::LLVMSetInitializer(array, c::LLVMConstNull(ty));
            c::LLVMSetLinkage(array, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            c::LLVMReplaceAllUsesWith(placeholder, array);
            c::LLVMDeleteGlobal(placeholder);
            array
        };
        let last = per_site(self.last, self.i64t, c"__knobs_taint_last");
        // SAFETY: the context is live (the invariant of [`Pass`]).
        let i8t = unsafe { c::LLVMInt8TypeInContext(self.ctx) };
        let ways = per_site(self.ways, i8t, c"__knobs_taint_ways");
        // SAFETY: `m` is live and the name NUL-terminated; the entry block is asked of a
        // non-null function with blocks, and a well-formed block ends in a terminator, so it
        // has a first instruction (asserted) to position the builder before.
        unsafe {
            let main = c::LLVMGetNamedFunction(self.m, c"main".as_ptr());
            if main.is_null() || c::LLVMCountBasicBlocks(main) == 0 {
                return;
            }
            let first = c::LLVMGetFirstInstruction(c::LLVMGetEntryBasicBlock(main));
            assert!(!first.is_null(), "`main` starts with an empty block");
            c::LLVMPositionBuilderBefore(self.b, first);
        }
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
                ways,
            ],
        );
    }

    /// A private constant global holding `text` (NULs made spaces) and a terminating NUL.
    fn cstring_global(&self, text: &str, name: &std::ffi::CStr) -> LLVMValueRef {
        let bytes = text.replace('\0', " ");
        // SAFETY: `ctx` and `m` are live (the invariant of [`Pass`]); the string constant
        // copies `bytes` (pointer and length of a live `String`); the global gets the
        // constant's own type, a NUL-terminated name, and the constant as initializer.
        unsafe {
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
