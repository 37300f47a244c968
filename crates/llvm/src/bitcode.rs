//! Loading, transforming and writing LLVM modules, and the small safe helpers over llvm-sys
//! that the translation and the instrumentation share (inkwell covers loading and writing;
//! operand-level access goes straight to the C API, which is both complete and fast).
//!
//! # Handles: why the calls into LLVM's C API are sound
//!
//! Every raw LLVM handle this crate passes to the C API — `LLVMModuleRef`, `LLVMValueRef`,
//! `LLVMBasicBlockRef`, `LLVMTypeRef`, `LLVMMetadataRef`, `LLVMBuilderRef` — was returned by the
//! C API itself for one module, which an entry point ([`crate::translate_bitcode`],
//! [`crate::instrument_with_checks`], [`crate::instrument_taint`]) loads into an inkwell
//! `Module` of a `Context` it owns, and drops only when it returns. No handle is stored past
//! that call or leaves the crate (the API speaks in paths, `ir::Program` and ids), and no
//! handle is used after the C API deleted what it names (the instrumenters erase an
//! instruction, a global, only after the last use of its handle). So every handle passed is
//! non-null (the calls that may return null are checked before the result is used) and
//! names a live object of that module. This is the *handle rule* the `// SAFETY:` comments
//! of this crate cite; what each comment adds is the call's own precondition: the kind of
//! object the function expects (an instruction for `LLVMGetInstructionOpcode`, a terminator
//! for `LLVMGetSuccessor`, a struct type for `LLVMStructGetTypeAtIndex`, …, which LLVM only
//! asserts in debug builds), indices within their counts, out-pointers to live locals, and
//! strings that are NUL-terminated or passed with their length.

use std::ffi::{CStr, CString};
use std::path::Path;

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMBasicBlockRef, LLVMModuleRef, LLVMValueRef};

use crate::{Error, first_line};

/// Loads a bitcode file (or textual IR ending in `.ll`) into `context`, in the debug-info
/// format both translation and instrumentation index instructions in.
pub fn load_module<'ctx>(context: &'ctx Context, path: &Path) -> Result<Module<'ctx>, Error> {
    if !path.is_file() {
        return Err(Error::Io {
            path: path.to_path_buf(),
            message: "no such file".into(),
        });
    }
    let bad = |message: String| Error::BadBitcode {
        path: path.to_path_buf(),
        message: first_line(&message),
    };
    let module = if path.extension().is_some_and(|e| e == "ll") {
        let buffer = MemoryBuffer::create_from_file(path).map_err(|e| bad(e.to_string()))?;
        context
            .create_module_from_ir(buffer)
            .map_err(|e| bad(e.to_string()))?
    } else {
        Module::parse_bitcode_from_path(path, context).map_err(|e| bad(e.to_string()))?
    };
    // LLVM 19 loads debug-variable information as "records" attached to instructions; the
    // old format keeps them as `llvm.dbg.*` calls, which the translation reads for variable
    // types and both sides count identically when indexing instructions.
    // SAFETY: `module` was just created in `context`, which the caller keeps alive; the
    // pointer is its live module (the handle rule); converting formats has no precondition.
    unsafe { c::LLVMSetIsNewDbgInfoFormat(module.as_mut_ptr(), 0) };
    Ok(module)
}

/// Runs a new-pass-manager pipeline (e.g. `"mem2reg"`) over the module.
pub fn run_passes(module: &Module<'_>, passes: &str) -> Result<(), Error> {
    let pipeline = CString::new(passes).expect("pass names have no NUL");
    // SAFETY: `module` is a live module (the handle rule) and `pipeline` a NUL-terminated
    // string that outlives the call; a null target machine is allowed (target-independent
    // passes); the options are created here and disposed of once, after their last use; a
    // non-null error is an `LLVMErrorRef` whose message is a NUL-terminated string, read
    // before it is disposed of, and consuming the error with `LLVMGetErrorMessage` frees it.
    unsafe {
        let options = llvm_sys::transforms::pass_builder::LLVMCreatePassBuilderOptions();
        // No target machine: mem2reg and friends are target-independent.
        let err = llvm_sys::transforms::pass_builder::LLVMRunPasses(
            module.as_mut_ptr(),
            pipeline.as_ptr(),
            std::ptr::null_mut(),
            options,
        );
        llvm_sys::transforms::pass_builder::LLVMDisposePassBuilderOptions(options);
        if !err.is_null() {
            let msg = llvm_sys::error::LLVMGetErrorMessage(err);
            let text = CStr::from_ptr(msg).to_string_lossy().into_owned();
            llvm_sys::error::LLVMDisposeErrorMessage(msg);
            return Err(Error::Passes {
                passes: passes.into(),
                message: first_line(&text),
            });
        }
    }
    Ok(())
}

pub fn write_bitcode(module: &Module<'_>, path: &Path) -> Result<(), Error> {
    // Written in the format it was loaded in, so reloading yields the same instruction lists.
    if module.write_bitcode_to_path(path) {
        Ok(())
    } else {
        Err(Error::Io {
            path: path.to_path_buf(),
            message: "cannot write bitcode".into(),
        })
    }
}

/// The name of a value (function, global, struct), empty if it has none.
pub fn value_name(v: LLVMValueRef) -> String {
    // SAFETY: `v` is a live value (the handle rule); `LLVMGetValueName2` returns null or
    // `len` bytes of the value's name, valid until it is renamed, and they are copied at once.
    unsafe {
        let mut len = 0usize;
        let p = c::LLVMGetValueName2(v, &mut len);
        if p.is_null() {
            return String::new();
        }
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    }
}

/// The functions of a module in order.
pub fn functions(module: LLVMModuleRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    // SAFETY: `module` is a live module (the handle rule); the loop walks its function list,
    // calling `LLVMGetNextFunction` only on functions the list returned (never null).
    unsafe {
        let mut f = c::LLVMGetFirstFunction(module);
        while !f.is_null() {
            out.push(f);
            f = c::LLVMGetNextFunction(f);
        }
    }
    out
}

/// The global variables of a module in order.
pub fn globals(module: LLVMModuleRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    // SAFETY: `module` is a live module (the handle rule); the loop walks its global list,
    // calling `LLVMGetNextGlobal` only on globals the list returned (never null).
    unsafe {
        let mut g = c::LLVMGetFirstGlobal(module);
        while !g.is_null() {
            out.push(g);
            g = c::LLVMGetNextGlobal(g);
        }
    }
    out
}

/// The basic blocks of a function in order.
pub fn blocks(func: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    let mut out = Vec::new();
    // SAFETY: `func` is a live function (the handle rule; a declaration has no blocks and
    // yields null at once); `LLVMGetNextBasicBlock` is called only on blocks the list returned.
    unsafe {
        let mut b = c::LLVMGetFirstBasicBlock(func);
        while !b.is_null() {
            out.push(b);
            b = c::LLVMGetNextBasicBlock(b);
        }
    }
    out
}

/// The instructions of a block in order.
pub fn instructions(block: LLVMBasicBlockRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    // SAFETY: `block` is a live basic block (the handle rule); `LLVMGetNextInstruction` is
    // called only on instructions the list returned (never null).
    unsafe {
        let mut i = c::LLVMGetFirstInstruction(block);
        while !i.is_null() {
            out.push(i);
            i = c::LLVMGetNextInstruction(i);
        }
    }
    out
}

/// Whether a call to this function is debug bookkeeping that the program representation
/// leaves out (variable locations, lifetime markers).
pub fn is_ignored_intrinsic(name: &str) -> bool {
    name.starts_with("llvm.dbg.")
        || name.starts_with("llvm.lifetime.")
        || name.starts_with("llvm.experimental.noalias.scope.decl")
        || name == "llvm.assume"
}
