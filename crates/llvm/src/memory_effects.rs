//! Instrumentation gives functions effects they did not have: a C function declared `pure`
//! or `const` (LLVM's `memory(read)`, `memory(none)`) that now calls a probe or adds to the
//! instruction counter writes memory. Left in place, those attributes let `-O2` merge two
//! calls into one, drop a call whose result is unused, or carry the counter's value across
//! the call in a register — so a region loses entries or a count goes backwards.
//! [`drop_stale_memory_effects`] removes them from every function that has the
//! instrumentation's effects (its own or a callee's) and from the calls that reach one.
//!
//! The instrumentation is recognised by name: a call to a `__knobs_…` function or a store to
//! a `__knobs_…` global (the runtimes' prefix).

use std::collections::HashSet;

use llvm_sys::LLVMAttributeFunctionIndex;
use llvm_sys::LLVMOpcode;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMModuleRef, LLVMValueRef};

use crate::bitcode;

/// The function attributes that promise what an instrumented function no longer keeps.
const STALE: &[&str] = &[
    "memory",
    "readnone",
    "readonly",
    "writeonly",
    "argmemonly",
    "inaccessiblememonly",
    "inaccessiblemem_or_argmemonly",
    "speculatable",
];

const PREFIX: &str = "__knobs_";

/// Drops the [`STALE`] attributes of the functions of `m` with the instrumentation's effects
/// and of the calls that may reach them; returns how many functions had effects.
///
/// # Safety
/// `m` must be a live module.
pub(crate) unsafe fn drop_stale_memory_effects(m: LLVMModuleRef) -> usize {
    let defined: Vec<LLVMValueRef> = bitcode::functions(m)
        .into_iter()
        // SAFETY: a function of the live module `m`.
        .filter(|&f| unsafe { c::LLVMCountBasicBlocks(f) } > 0)
        .filter(|&f| !bitcode::value_name(f).starts_with(PREFIX))
        .collect();
    let mut effectful: HashSet<LLVMValueRef> = defined
        .iter()
        .copied()
        // SAFETY: functions of the live module.
        .filter(|&f| unsafe { instrumented(f) })
        .collect();
    // A function has the effects when it calls one that has them, directly or (when one of
    // them has its address taken) through a pointer.
    loop {
        // SAFETY: functions of the live module.
        let through_pointers = effectful.iter().any(|&f| unsafe { address_taken(f) });
        let reached: Vec<LLVMValueRef> = defined
            .iter()
            .copied()
            .filter(|f| !effectful.contains(f))
            .filter(|&f| {
                // SAFETY: a function of the live module.
                unsafe { calls(f) }
                    .into_iter()
                    .any(|callee| reaches(callee, &effectful, through_pointers))
            })
            .collect();
        if reached.is_empty() {
            break;
        }
        effectful.extend(reached);
    }
    // SAFETY: functions of the live module.
    let through_pointers = effectful.iter().any(|&f| unsafe { address_taken(f) });
    let kinds: Vec<u32> = STALE
        .iter()
        // SAFETY: the name is passed with its length; 0 is an unknown name.
        .map(|n| unsafe { c::LLVMGetEnumAttributeKindForName(n.as_ptr().cast(), n.len()) })
        .filter(|&k| k != 0)
        .collect();
    for &f in &effectful {
        for &k in &kinds {
            // SAFETY: `f` is a function of the live module; removing an absent attribute is
            // a no-op.
            unsafe { c::LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, k) };
        }
    }
    for &f in &defined {
        // SAFETY: functions of the live module and their calls.
        for (call, callee) in unsafe { call_sites(f) } {
            if reaches(callee, &effectful, through_pointers) {
                for &k in &kinds {
                    // SAFETY: `call` is a live call instruction.
                    unsafe {
                        c::LLVMRemoveCallSiteEnumAttribute(call, LLVMAttributeFunctionIndex, k)
                    };
                }
            }
        }
    }
    effectful.len()
}

/// Whether a call to `callee` (`None`: through a pointer) may run instrumented code.
fn reaches(
    callee: Option<LLVMValueRef>,
    effectful: &HashSet<LLVMValueRef>,
    through_pointers: bool,
) -> bool {
    match callee {
        Some(f) => effectful.contains(&f),
        None => through_pointers,
    }
}

/// Whether `f` calls a runtime function or stores to a runtime global.
unsafe fn instrumented(f: LLVMValueRef) -> bool {
    // SAFETY: the caller's: `f` is a live function.
    let (calls, stores) = unsafe { (call_sites(f), stores(f)) };
    calls
        .iter()
        .filter_map(|(_, callee)| *callee)
        .chain(stores)
        .any(|v| bitcode::value_name(v).starts_with(PREFIX))
}

/// The functions `f` calls: `None` for a call through a pointer.
unsafe fn calls(f: LLVMValueRef) -> Vec<Option<LLVMValueRef>> {
    // SAFETY: the caller's.
    unsafe { call_sites(f) }
        .into_iter()
        .map(|(_, callee)| callee)
        .collect()
}

/// Every call and invoke of `f`, with its callee when it is a function.
unsafe fn call_sites(f: LLVMValueRef) -> Vec<(LLVMValueRef, Option<LLVMValueRef>)> {
    let mut out = Vec::new();
    for b in bitcode::blocks(f) {
        for i in bitcode::instructions(b) {
            // SAFETY: `i` is a live instruction; the callee is asked of calls only.
            unsafe {
                let op = c::LLVMGetInstructionOpcode(i);
                if !matches!(op, LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke) {
                    continue;
                }
                let callee = c::LLVMGetCalledValue(i);
                let function =
                    (!callee.is_null() && !c::LLVMIsAFunction(callee).is_null()).then_some(callee);
                // Inline assembly is neither a function nor a pointer to one.
                if function.is_none() && !c::LLVMIsAInlineAsm(callee).is_null() {
                    continue;
                }
                out.push((i, function));
            }
        }
    }
    out
}

/// The globals `f` stores to directly.
unsafe fn stores(f: LLVMValueRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    for b in bitcode::blocks(f) {
        for i in bitcode::instructions(b) {
            // SAFETY: `i` is a live instruction; operand 1 of a store is its address.
            unsafe {
                if c::LLVMGetInstructionOpcode(i) == LLVMOpcode::LLVMStore {
                    let address = c::LLVMGetOperand(i, 1);
                    if !c::LLVMIsAGlobalVariable(address).is_null() {
                        out.push(address);
                    }
                }
            }
        }
    }
    out
}

/// Whether `f` is used other than as the callee of a call.
unsafe fn address_taken(f: LLVMValueRef) -> bool {
    // SAFETY: the caller's; uses and users of a live value are live.
    unsafe {
        let mut u = c::LLVMGetFirstUse(f);
        while !u.is_null() {
            let user = c::LLVMGetUser(u);
            let is_call = (!c::LLVMIsACallInst(user).is_null()
                || !c::LLVMIsAInvokeInst(user).is_null())
                && c::LLVMGetCalledValue(user) == f;
            if !is_call {
                return true;
            }
            u = c::LLVMGetNextUse(u);
        }
    }
    false
}
