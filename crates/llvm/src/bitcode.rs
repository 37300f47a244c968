//! Loading, transforming and writing LLVM modules, and the small safe helpers over llvm-sys
//! that the translation and the instrumentation share (inkwell covers loading and writing;
//! operand-level access goes straight to the C API, which is both complete and fast).

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
    unsafe { c::LLVMSetIsNewDbgInfoFormat(module.as_mut_ptr(), 0) };
    Ok(module)
}

/// Runs a new-pass-manager pipeline (e.g. `"mem2reg"`) over the module.
pub fn run_passes(module: &Module<'_>, passes: &str) -> Result<(), Error> {
    let pipeline = CString::new(passes).expect("pass names have no NUL");
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
