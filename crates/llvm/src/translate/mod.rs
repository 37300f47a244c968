//! Translating an LLVM module (C at `-O0` plus `mem2reg`) into an [`ir::Program`], following
//! `docs/ir.md`, and the side table ([`LlvmPositions`]) from ir ids back to the module.
//!
//! One pass over the module: globals (constant C strings become `ConstStr` values instead),
//! function declarations, annotations, initializer references, then each function body. An
//! LLVM block becomes one ir block (same order, so `Block::local` is the LLVM block index);
//! an LLVM instruction becomes zero ir instructions (debug and lifetime intrinsics, fences),
//! one, or several (a `getelementptr` with several struct steps, constant-expression operands
//! materialised before their user). Instruction results get their `ValueId` before the body is
//! translated, because a use can come before its definition in block layout order.
//!
//! The parts: `globals` (globals, initializers, annotations, struct types and layouts),
//! `function` (functions, blocks, and emitting ir instructions), `instruction` (each LLVM
//! instruction, calls, `getelementptr`), `constants` (operands: constants, constant
//! expressions, C strings) and `debug_info` (files, locations, struct field names). Every
//! call into LLVM's C API follows the handle rule of `crate::bitcode`: the module is the
//! one [`translate_bitcode`] loaded and keeps alive while the `Translator` runs.

mod constants;
mod debug_info;
mod function;
mod globals;
mod instruction;

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use inkwell::context::Context;
use ir::{BlockId, DebugLoc, FileId, FuncId, IdVec, InstId, Program, StructId, ValueId};
use llvm_sys::prelude::{LLVMContextRef, LLVMModuleRef, LLVMTypeRef};
use llvm_sys::target::LLVMTargetDataRef;

use crate::{Error, bitcode};
use debug_info::DebugStructs;

/// Where each ir id sits in the LLVM module it was translated from: what an instrumenter
/// needs to turn `ir::ProgramPoint`s back into LLVM positions.
///
/// The mapping is positional and stable for a given module file:
/// - function `f` is the LLVM function named `program.func(f).name`;
/// - block `b` is basic block number `program.block(b).local` (in layout order) of its
///   function (blocks are translated one to one, never split or merged);
/// - instruction `i` comes from instruction number `inst_index[i]` (in order, counting every
///   instruction, debug intrinsics included, with the module in the old debug-info format
///   that [`translate_bitcode`] and the instrumenter both load it in) of its block. Several
///   ir instructions can share one LLVM instruction; "before `i`" means before that LLVM
///   instruction.
///
/// `shape` records each function's LLVM block and instruction counts, so a module that
/// changed since translation is detected instead of instrumented at the wrong places.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LlvmPositions {
    /// Per `InstId`: index of its LLVM instruction within the LLVM block.
    pub inst_index: IdVec<InstId, u32>,
    /// Per `FuncId`: the LLVM function's shape (zero blocks for declarations).
    pub shape: IdVec<FuncId, FunctionShape>,
}

/// Block and instruction counts of one LLVM function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionShape {
    pub blocks: u32,
    pub instructions: u32,
}

/// A translated module: the program and where its ids are in the module.
#[derive(Clone, Debug)]
pub struct Translation {
    pub program: Program,
    pub positions: LlvmPositions,
}

/// Loads bitcode (or textual IR ending in `.ll`), runs `mem2reg`, optionally writes the SSA
/// module to `ssa_output` (the file [`crate::instrument()`] must be given later), and translates
/// it.
pub fn translate_bitcode(input: &Path, ssa_output: Option<&Path>) -> Result<Translation, Error> {
    let context = Context::create();
    let module = bitcode::load_module(&context, input)?;
    bitcode::run_passes(&module, "mem2reg")?;
    if let Some(out) = ssa_output {
        bitcode::write_bitcode(&module, out)?;
    }
    // The translator borrows the raw handles only while `context` and `module` live: it is
    // consumed by `run` here.
    let translation = Translator::new(context.raw(), module.as_mut_ptr()).run()?;
    translation.program.verify()?;
    Ok(translation)
}

/// Hashing for pointer keys: the map lookups per operand are the translation's hot path.
#[derive(Default)]
struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

type PtrMap<V> = HashMap<usize, V, BuildHasherDefault<PtrHasher>>;
type PtrSet = HashSet<usize, BuildHasherDefault<PtrHasher>>;

/// A handle as a map key (its address; the handle is never made from it again).
fn key<T>(p: *mut T) -> usize {
    p as usize
}

/// The translation of one module: the program being built and the maps from LLVM handles
/// (by address) to the ids given to them.
struct Translator {
    context: LLVMContextRef,
    module: LLVMModuleRef,
    target_data: LLVMTargetDataRef,
    program: Program,
    positions: LlvmPositions,
    /// Module-wide values: globals, functions, constants.
    values: PtrMap<ValueId>,
    /// The current function's parameters and instruction results.
    locals: PtrMap<ValueId>,
    /// The current function's blocks.
    blocks: PtrMap<BlockId>,
    structs: PtrMap<StructId>,
    struct_types: IdVec<StructId, LLVMTypeRef>,
    /// Debug scope → its file.
    files: PtrMap<Option<FileId>>,
    debug_structs: DebugStructs,
    undef: ValueId,
    // Where instructions are emitted.
    block: BlockId,
    loc: DebugLoc,
    llvm_index: u32,
}

impl Translator {
    /// A translator of `module` (of `context`), which must stay alive until [`Self::run`]
    /// returns.
    fn new(context: LLVMContextRef, module: LLVMModuleRef) -> Self {
        let mut program = Program::new();
        let undef = program.undef();
        Translator {
            context,
            module,
            // SAFETY: `module` is the live module `translate_bitcode` loaded (the handle
            // rule); its data layout lives as long as the module.
            target_data: unsafe { llvm_sys::target::LLVMGetModuleDataLayout(module) },
            program,
            positions: LlvmPositions::default(),
            values: PtrMap::default(),
            locals: PtrMap::default(),
            blocks: PtrMap::default(),
            structs: PtrMap::default(),
            struct_types: IdVec::new(),
            files: PtrMap::default(),
            debug_structs: DebugStructs::default(),
            undef,
            block: BlockId::new(0),
            loc: DebugLoc::default(),
            llvm_index: 0,
        }
    }

    fn run(mut self) -> Result<Translation, Error> {
        let added_globals = self.globals()?;
        let defined = self.declare_functions()?;
        // Positions are per FuncId; ignored intrinsics were given no id.
        self.positions.shape =
            IdVec::from_elem(FunctionShape::default(), self.program.functions.len());
        self.initializers(added_globals);
        self.annotations();
        self.compile_units();
        for (f, id) in defined {
            self.function(f, id);
        }
        self.struct_layouts();
        self.name_fields();
        Ok(Translation {
            program: self.program,
            positions: self.positions,
        })
    }
}
