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

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use inkwell::context::Context;
use ir::{
    BlockId, Callee, DebugLoc, FileId, FuncId, InitializerRef, Inst, InstId, InstKind, IntOp,
    IntOpKind, OpKind, Predicate, Program, StructId, ValueDef, ValueId,
};
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::LLVMTypeKind as Ty;
use llvm_sys::LLVMValueKind as Vk;
use llvm_sys::core as c;
use llvm_sys::debuginfo as di;
use llvm_sys::debuginfo::LLVMMetadataKind as Mk;
use llvm_sys::prelude::{
    LLVMBasicBlockRef, LLVMContextRef, LLVMMetadataRef, LLVMModuleRef, LLVMTypeRef, LLVMValueRef,
};
use llvm_sys::target::LLVMTargetDataRef;

use crate::{Error, bitcode};

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
    pub inst_index: Vec<u32>,
    /// Per `FuncId`: the LLVM function's shape (zero blocks for declarations).
    pub shape: Vec<FunctionShape>,
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

fn key<T>(p: *mut T) -> usize {
    p as usize
}

const DW_TAG_MEMBER: u16 = 0x0d;
const DW_TAG_STRUCTURE_TYPE: u16 = 0x13;
const DW_TAG_TYPEDEF: u16 = 0x16;

/// Struct layouts from debug information: source name → members (offset in bits, name).
#[derive(Default)]
struct DebugStructs {
    visited: PtrSet,
    members: HashMap<String, Vec<(u64, String)>>,
}

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
    struct_types: Vec<LLVMTypeRef>,
    /// Debug scope → its file.
    files: PtrMap<Option<FileId>>,
    debug_structs: DebugStructs,
    undef: ValueId,
    // Where instructions are emitted.
    block: BlockId,
    loc: DebugLoc,
    llvm_index: u32,
}

fn metadata_operands(context: LLVMContextRef, md: LLVMMetadataRef) -> Vec<LLVMMetadataRef> {
    unsafe {
        let v = c::LLVMMetadataAsValue(context, md);
        let n = c::LLVMGetMDNodeNumOperands(v) as usize;
        let mut ops = vec![std::ptr::null_mut(); n];
        c::LLVMGetMDNodeOperands(v, ops.as_mut_ptr());
        ops.into_iter()
            .filter(|o| !o.is_null())
            .map(|o| c::LLVMValueAsMetadata(o))
            .collect()
    }
}

fn type_name(md: LLVMMetadataRef) -> String {
    unsafe {
        let mut len = 0usize;
        let p = di::LLVMDITypeGetName(md, &mut len);
        if p.is_null() {
            return String::new();
        }
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    }
}

impl DebugStructs {
    /// Walks debug metadata from `root` (a compile unit, subprogram or variable) through
    /// types, recording every named struct's members. Locations, files and lexical blocks
    /// are not followed: they lead to no types and there are many of them.
    fn walk(&mut self, context: LLVMContextRef, root: LLVMMetadataRef) {
        let mut stack = vec![root];
        while let Some(md) = stack.pop() {
            if !self.visited.insert(key(md)) {
                continue;
            }
            let kind = unsafe { di::LLVMGetMetadataKind(md) };
            match kind {
                Mk::LLVMDICompositeTypeMetadataKind => {
                    let tag = unsafe { di::LLVMGetDINodeTag(md) };
                    let name = type_name(md);
                    if tag == DW_TAG_STRUCTURE_TYPE && !name.is_empty() {
                        self.record(context, &name, md);
                    }
                    stack.extend(metadata_operands(context, md));
                }
                Mk::LLVMDIDerivedTypeMetadataKind => {
                    let ops = metadata_operands(context, md);
                    // `typedef struct { … } name;`: clang names the LLVM type after the typedef.
                    if unsafe { di::LLVMGetDINodeTag(md) } == DW_TAG_TYPEDEF
                        && let Some(&base) = ops.iter().find(|&&o| unsafe {
                            matches!(
                                di::LLVMGetMetadataKind(o),
                                Mk::LLVMDICompositeTypeMetadataKind
                            ) && di::LLVMGetDINodeTag(o) == DW_TAG_STRUCTURE_TYPE
                        })
                        && type_name(base).is_empty()
                    {
                        self.record(context, &type_name(md), base);
                    }
                    stack.extend(ops);
                }
                Mk::LLVMMDTupleMetadataKind
                | Mk::LLVMDISubroutineTypeMetadataKind
                | Mk::LLVMDIGlobalVariableExpressionMetadataKind
                | Mk::LLVMDIGlobalVariableMetadataKind
                | Mk::LLVMDILocalVariableMetadataKind
                | Mk::LLVMDICompileUnitMetadataKind
                | Mk::LLVMDISubprogramMetadataKind => {
                    stack.extend(metadata_operands(context, md));
                }
                _ => {}
            }
        }
    }

    fn record(&mut self, context: LLVMContextRef, name: &str, composite: LLVMMetadataRef) {
        if self.members.get(name).is_some_and(|m| !m.is_empty()) {
            return;
        }
        let mut members = Vec::new();
        for op in metadata_operands(context, composite) {
            if !matches!(
                unsafe { di::LLVMGetMetadataKind(op) },
                Mk::LLVMMDTupleMetadataKind
            ) {
                continue;
            }
            for m in metadata_operands(context, op) {
                unsafe {
                    if matches!(
                        di::LLVMGetMetadataKind(m),
                        Mk::LLVMDIDerivedTypeMetadataKind
                    ) && di::LLVMGetDINodeTag(m) == DW_TAG_MEMBER
                    {
                        members.push((di::LLVMDITypeGetOffsetInBits(m), type_name(m)));
                    }
                }
            }
            if !members.is_empty() {
                break;
            }
        }
        self.members.insert(name.to_string(), members);
    }
}

fn const_int(v: LLVMValueRef) -> Option<i64> {
    unsafe {
        (c::LLVMGetValueKind(v) == Vk::LLVMConstantIntValueKind
            && c::LLVMGetIntTypeWidth(c::LLVMTypeOf(v)) <= 64)
            .then(|| c::LLVMConstIntGetSExtValue(v))
    }
}

/// Width of an integer type of at most 64 bits.
fn int_width(ty: LLVMTypeRef) -> Option<u32> {
    unsafe {
        (c::LLVMGetTypeKind(ty) == Ty::LLVMIntegerTypeKind)
            .then(|| c::LLVMGetIntTypeWidth(ty))
            .filter(|w| (1..=64).contains(w))
    }
}

/// The exact integer semantics of `i` (opcode `opcode`), if it computes on integers.
fn int_op(i: LLVMValueRef, opcode: Op) -> Option<IntOp> {
    use IntOpKind as K;
    let operand = |k| unsafe { c::LLVMTypeOf(c::LLVMGetOperand(i, k)) };
    let result = || int_width(unsafe { c::LLVMTypeOf(i) });
    let kind = match opcode {
        Op::LLVMAdd => K::Add,
        Op::LLVMSub => K::Sub,
        Op::LLVMMul => K::Mul,
        Op::LLVMAnd => K::And,
        Op::LLVMOr => K::Or,
        Op::LLVMXor => K::Xor,
        Op::LLVMShl => K::Shl,
        Op::LLVMLShr => K::LShr,
        Op::LLVMAShr => K::AShr,
        Op::LLVMUDiv => K::UDiv,
        Op::LLVMSDiv => K::SDiv,
        Op::LLVMURem => K::URem,
        Op::LLVMSRem => K::SRem,
        Op::LLVMICmp => {
            use llvm_sys::LLVMIntPredicate as P;
            K::Compare(match unsafe { c::LLVMGetICmpPredicate(i) } {
                P::LLVMIntEQ => Predicate::Eq,
                P::LLVMIntNE => Predicate::Ne,
                P::LLVMIntUGT => Predicate::Ugt,
                P::LLVMIntUGE => Predicate::Uge,
                P::LLVMIntULT => Predicate::Ult,
                P::LLVMIntULE => Predicate::Ule,
                P::LLVMIntSGT => Predicate::Sgt,
                P::LLVMIntSGE => Predicate::Sge,
                P::LLVMIntSLT => Predicate::Slt,
                P::LLVMIntSLE => Predicate::Sle,
            })
        }
        Op::LLVMZExt => K::ZExt { to: result()? },
        Op::LLVMSExt => K::SExt { to: result()? },
        Op::LLVMTrunc => K::Trunc { to: result()? },
        Op::LLVMLoad => {
            return Some(IntOp {
                kind: K::Load,
                bits: result()?,
            });
        }
        _ => return None,
    };
    Some(IntOp {
        kind,
        bits: int_width(operand(0))?,
    })
}

/// The contents of a constant global array of characters, up to its first NUL.
fn c_string(global: LLVMValueRef) -> Option<String> {
    unsafe {
        if c::LLVMGetValueKind(global) != Vk::LLVMGlobalVariableValueKind
            || c::LLVMIsGlobalConstant(global) == 0
        {
            return None;
        }
        let init = c::LLVMGetInitializer(global);
        if init.is_null()
            || c::LLVMIsAConstantDataArray(init).is_null()
            || c::LLVMIsConstantString(init) == 0
        {
            return None;
        }
        let mut len = 0usize;
        let p = c::LLVMGetAsString(init, &mut len);
        let bytes = std::slice::from_raw_parts(p as *const u8, len);
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(len);
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

/// Strips casts (constant expressions that keep the address) off a constant.
fn strip_casts(mut v: LLVMValueRef) -> LLVMValueRef {
    unsafe {
        while c::LLVMGetValueKind(v) == Vk::LLVMConstantExprValueKind
            && matches!(
                c::LLVMGetConstOpcode(v),
                Op::LLVMBitCast | Op::LLVMAddrSpaceCast | Op::LLVMPtrToInt | Op::LLVMIntToPtr
            )
        {
            v = c::LLVMGetOperand(v, 0);
        }
    }
    v
}

impl Translator {
    fn new(context: LLVMContextRef, module: LLVMModuleRef) -> Self {
        let mut program = Program::new();
        let undef = program.undef();
        Translator {
            context,
            module,
            target_data: unsafe { llvm_sys::target::LLVMGetModuleDataLayout(module) },
            program,
            positions: LlvmPositions::default(),
            values: PtrMap::default(),
            locals: PtrMap::default(),
            blocks: PtrMap::default(),
            structs: PtrMap::default(),
            struct_types: Vec::new(),
            files: PtrMap::default(),
            debug_structs: DebugStructs::default(),
            undef,
            block: BlockId(0),
            loc: DebugLoc::default(),
            llvm_index: 0,
        }
    }

    fn run(mut self) -> Result<Translation, Error> {
        let globals = bitcode::globals(self.module);
        let functions = bitcode::functions(self.module);
        let mut added_globals = Vec::new();
        for (k, &g) in globals.iter().enumerate() {
            let name = bitcode::value_name(g);
            let section = unsafe { c::LLVMGetSection(g) };
            let is_metadata = !section.is_null()
                && unsafe { CStr::from_ptr(section) }.to_bytes() == b"llvm.metadata";
            if is_metadata || name.starts_with("llvm.") {
                continue;
            }
            if let Some(s) = c_string(g) {
                let v = self.program.const_str(&s);
                self.values.insert(key(g), v);
                continue;
            }
            let name = if name.is_empty() {
                format!("<unnamed global {k}>")
            } else {
                name
            };
            let id = self.program.add_global(&name)?;
            let ty = unsafe { c::LLVMGlobalGetValueType(g) };
            let structure = (unsafe { c::LLVMGetTypeKind(ty) } == Ty::LLVMStructTypeKind)
                .then(|| self.struct_id(ty));
            let size = (unsafe { c::LLVMTypeIsSized(ty) } != 0)
                .then(|| unsafe { llvm_sys::target::LLVMABISizeOfType(self.target_data, ty) });
            let global = &mut self.program.globals[id.index()];
            global.structure = structure;
            global.size = size;
            global.defined = unsafe { c::LLVMIsDeclaration(g) } == 0;
            self.values.insert(key(g), global.address);
            added_globals.push((g, id));
        }
        let mut defined = Vec::new();
        for (k, &f) in functions.iter().enumerate() {
            let name = bitcode::value_name(f);
            if bitcode::is_ignored_intrinsic(&name) {
                continue;
            }
            let name = if name.is_empty() {
                format!("<unnamed function {k}>")
            } else {
                name
            };
            let params = unsafe { c::LLVMCountParams(f) } as usize;
            let id = self.program.add_function(&name, params)?;
            self.values.insert(key(f), self.program.func(id).address);
            defined.push((f, id));
        }
        // Positions are per FuncId; ignored intrinsics were given no id.
        self.positions.shape = vec![FunctionShape::default(); self.program.functions.len()];
        for (g, id) in added_globals {
            let init = unsafe { c::LLVMGetInitializer(g) };
            if !init.is_null() {
                let refs = self.initializer_refs(init);
                self.program.globals[id.index()].initializer_refs = refs;
            }
        }
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

    /// Every global (not constant string) and function address inside a constant, and the
    /// struct field it is stored in.
    /// Field cells are keyed by (struct, field) however deeply nested, and field 0 is its
    /// enclosing cell, as in points-to analysis.
    fn initializer_refs(&mut self, init: LLVMValueRef) -> Vec<InitializerRef> {
        let mut out = Vec::new();
        // Constants are DAGs whose parts are shared: walk each (constant, field) once.
        let mut seen: HashSet<(usize, Option<(StructId, u32)>)> = HashSet::new();
        let mut stack = vec![(init, None)];
        while let Some((v, at)) = stack.pop() {
            if !seen.insert((key(v), at)) {
                continue;
            }
            match unsafe { c::LLVMGetValueKind(v) } {
                Vk::LLVMGlobalVariableValueKind | Vk::LLVMFunctionValueKind => {
                    if let Some(&id) = self.values.get(&key(v))
                        && !matches!(self.program.value(id), ValueDef::ConstStr(_))
                    {
                        let r = InitializerRef {
                            field: at,
                            address: id,
                        };
                        if !out.contains(&r) {
                            out.push(r);
                        }
                    }
                }
                Vk::LLVMConstantStructValueKind => {
                    let ty = unsafe { c::LLVMTypeOf(v) };
                    let structure = self.struct_id(ty);
                    let n = unsafe { c::LLVMGetNumOperands(v) };
                    for k in 0..n as u32 {
                        let field = if k == 0 { at } else { Some((structure, k)) };
                        stack.push((unsafe { c::LLVMGetOperand(v, k) }, field));
                    }
                }
                Vk::LLVMConstantArrayValueKind
                | Vk::LLVMConstantVectorValueKind
                | Vk::LLVMConstantExprValueKind => {
                    let n = unsafe { c::LLVMGetNumOperands(v) };
                    for k in 0..n as u32 {
                        stack.push((unsafe { c::LLVMGetOperand(v, k) }, at));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// `__attribute__((annotate("…")))` on globals, from `llvm.global.annotations`.
    fn annotations(&mut self) {
        let table =
            unsafe { c::LLVMGetNamedGlobal(self.module, c"llvm.global.annotations".as_ptr()) };
        if table.is_null() {
            return;
        }
        let init = unsafe { c::LLVMGetInitializer(table) };
        if init.is_null() {
            return;
        }
        let n = unsafe { c::LLVMGetNumOperands(init) };
        for k in 0..n as u32 {
            let entry = unsafe { c::LLVMGetOperand(init, k) };
            if unsafe { c::LLVMGetNumOperands(entry) } < 2 {
                continue;
            }
            let target = strip_casts(unsafe { c::LLVMGetOperand(entry, 0) });
            let text = strip_casts(unsafe { c::LLVMGetOperand(entry, 1) });
            let Some(text) = c_string(text) else {
                continue;
            };
            if let Some(ValueDef::Global(g)) = self
                .values
                .get(&key(target))
                .map(|&v| self.program.value(v))
            {
                let g = *g;
                self.program.globals[g.index()].annotations.push(text);
            }
        }
    }

    /// Debug metadata of the compile units: global variables' and retained types.
    fn compile_units(&mut self) {
        unsafe {
            let name = c"llvm.dbg.cu";
            let n = c::LLVMGetNamedMetadataNumOperands(self.module, name.as_ptr());
            let mut ops = vec![std::ptr::null_mut(); n as usize];
            c::LLVMGetNamedMetadataOperands(self.module, name.as_ptr(), ops.as_mut_ptr());
            for op in ops {
                let md = c::LLVMValueAsMetadata(op);
                self.debug_structs.walk(self.context, md);
            }
        }
    }

    fn struct_id(&mut self, ty: LLVMTypeRef) -> StructId {
        if let Some(&s) = self.structs.get(&key(ty)) {
            return s;
        }
        let raw = unsafe { c::LLVMGetStructName(ty) };
        let full = if raw.is_null() {
            None
        } else {
            Some(
                unsafe { CStr::from_ptr(raw) }
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        let source_name = match &full {
            Some(n) => n
                .strip_prefix("struct.")
                .or_else(|| n.strip_prefix("union."))
                .unwrap_or(n)
                .to_string(),
            None => format!("{{literal {}}}", self.program.structs.len()),
        };
        let name = match (&full, self.program.struct_named(&source_name)) {
            (Some(full), Some(_)) => full.clone(),
            _ => source_name,
        };
        let name = if self.program.struct_named(&name).is_some() {
            format!("{name}#{}", self.program.structs.len())
        } else {
            name
        };
        let fields = if unsafe { c::LLVMIsOpaqueStruct(ty) } != 0 {
            0
        } else {
            unsafe { c::LLVMCountStructElementTypes(ty) as usize }
        };
        let id = self
            .program
            .add_struct(&name, &vec![""; fields])
            .expect("struct names were made unique");
        self.structs.insert(key(ty), id);
        self.struct_types.push(ty);
        id
    }

    /// Fills the layout facts of [`ir::StructType`]: `first_field`, `punned`, and `common`:
    /// field k of a struct is keyed by the first struct whose fields 0..=k have the same LLVM
    /// types (and packing), found with a trie over field types (LLVM types are unique per
    /// context, so identity is equality).
    fn struct_layouts(&mut self) {
        // Trie nodes: (parent node, field type) → node, and each node's first struct.
        let mut children: HashMap<(usize, usize), usize> = HashMap::new();
        let mut first: Vec<StructId> = Vec::new();
        // By index: finding a first field's struct type may add struct types to the list.
        let mut k = 0;
        while k < self.struct_types.len() {
            let ty = self.struct_types[k];
            let id = StructId(k as u32);
            let packed = unsafe { c::LLVMIsPackedStruct(ty) } != 0;
            // Node 0 and 1: the roots of unpacked and packed structs.
            let mut node = usize::from(packed);
            let full = unsafe { c::LLVMGetStructName(ty) };
            let full = (!full.is_null()).then(|| unsafe { CStr::from_ptr(full) }.to_bytes());
            // Unions, and literal types (clang's for initializers that do not fit the type).
            self.program.structs[k].punned = full.is_none_or(|n| n.starts_with(b"union."));
            let n = self.program.structs[k].fields.len();
            if unsafe { c::LLVMIsOpaqueStruct(ty) } == 0 {
                self.program.structs[k].size =
                    Some(unsafe { llvm_sys::target::LLVMABISizeOfType(self.target_data, ty) });
            }
            if n > 0 {
                let mut head = unsafe { c::LLVMStructGetTypeAtIndex(ty, 0) };
                while unsafe { c::LLVMGetTypeKind(head) } == Ty::LLVMArrayTypeKind {
                    head = unsafe { c::LLVMGetElementType(head) };
                }
                if unsafe { c::LLVMGetTypeKind(head) } == Ty::LLVMStructTypeKind {
                    self.program.structs[k].first_field = Some(self.struct_id(head));
                }
            }
            for i in 0..n {
                let field_ty = unsafe { c::LLVMStructGetTypeAtIndex(ty, i as u32) };
                let next = children.len() + 2;
                node = *children.entry((node, key(field_ty))).or_insert(next);
                if node == first.len() + 2 {
                    first.push(id);
                }
                self.program.structs[k].common[i] = first[node - 2];
            }
            k += 1;
        }
    }

    /// Field names from debug information, matched by byte offset (a bitfield's storage unit
    /// is named after its first member).
    fn name_fields(&mut self) {
        for (k, &ty) in self.struct_types.iter().enumerate() {
            let s = &mut self.program.structs[k];
            let Some(members) = self.debug_structs.members.get(&s.name) else {
                continue;
            };
            for (i, field) in s.fields.iter_mut().enumerate() {
                let offset = unsafe {
                    llvm_sys::target::LLVMOffsetOfElement(self.target_data, ty, i as u32)
                } * 8;
                if let Some((_, name)) = members.iter().find(|(bits, _)| *bits / 8 * 8 == offset) {
                    field.clone_from(name);
                }
            }
        }
    }

    fn file_of_scope(&mut self, scope: LLVMMetadataRef) -> Option<FileId> {
        if scope.is_null() {
            return None;
        }
        if let Some(&f) = self.files.get(&key(scope)) {
            return f;
        }
        let file = unsafe { di::LLVMDIScopeGetFile(scope) };
        let id = (!file.is_null()).then(|| {
            let mut len = 0u32;
            let p = unsafe { di::LLVMDIFileGetFilename(file, &mut len) };
            let name = if p.is_null() {
                String::new()
            } else {
                String::from_utf8_lossy(unsafe {
                    std::slice::from_raw_parts(p as *const u8, len as usize)
                })
                .into_owned()
            };
            self.program.add_file(&name)
        });
        self.files.insert(key(scope), id);
        id
    }

    fn debug_loc(&mut self, inst: LLVMValueRef, function_file: Option<FileId>) -> DebugLoc {
        let loc = unsafe { di::LLVMInstructionGetDebugLoc(inst) };
        if loc.is_null() {
            return DebugLoc {
                file: function_file,
                line: 0,
                column: 0,
            };
        }
        let scope = unsafe { di::LLVMDILocationGetScope(loc) };
        DebugLoc {
            file: self.file_of_scope(scope).or(function_file),
            line: unsafe { di::LLVMDILocationGetLine(loc) },
            column: unsafe { di::LLVMDILocationGetColumn(loc) },
        }
    }

    fn emit(&mut self, kind: InstKind, result: Option<ValueId>) -> InstId {
        let id = InstId(self.program.insts.len() as u32);
        if let Some(r) = result {
            self.program.values[r.index()] = ValueDef::Inst(id);
        }
        self.program.insts.push(Inst {
            kind,
            result,
            block: self.block,
            loc: self.loc,
        });
        self.program.blocks[self.block.index()].insts.push(id);
        self.positions.inst_index.push(self.llvm_index);
        id
    }

    /// Records the exact integer semantics of the instruction defining `v` (translated from
    /// `i`), when `i` works on integers of at most 64 bits (`Program::int_ops`).
    fn know_int_op(&mut self, v: ValueId, i: LLVMValueRef, opcode: Op) {
        if let (Some(op), ValueDef::Inst(id)) = (int_op(i, opcode), &self.program.values[v.index()])
        {
            self.program.int_ops.insert(*id, op);
        }
    }

    /// Emits an instruction defining `result`, or a fresh value if `None`.
    fn emit_value(&mut self, kind: InstKind, result: Option<ValueId>) -> ValueId {
        let v = result.unwrap_or_else(|| self.program.add_value(ValueDef::Undef));
        self.emit(kind, Some(v));
        v
    }

    /// The ir value of an operand. With `emit`, constant expressions that compute addresses
    /// (a field of a global struct) become instructions before the user; without (phi
    /// operands, which must stay at the block's start), they collapse to their base.
    fn operand_in(&mut self, v: LLVMValueRef, emit: bool) -> ValueId {
        if let Some(&id) = self.locals.get(&key(v)) {
            return id;
        }
        if let Some(&id) = self.values.get(&key(v)) {
            return id;
        }
        let def = match unsafe { c::LLVMGetValueKind(v) } {
            Vk::LLVMConstantIntValueKind => match const_int(v) {
                Some(n) => ValueDef::ConstInt(n),
                None => ValueDef::Undef,
            },
            Vk::LLVMConstantFPValueKind => {
                let mut lost = 0;
                ValueDef::ConstFloat(unsafe { c::LLVMConstRealGetDouble(v, &mut lost) })
            }
            Vk::LLVMConstantExprValueKind => return self.constant_expr(v, emit),
            Vk::LLVMGlobalAliasValueKind => {
                let target = unsafe { c::LLVMAliasGetAliasee(v) };
                let id = self.operand_in(target, false);
                self.values.insert(key(v), id);
                return id;
            }
            _ => return self.undef,
        };
        let id = self.program.add_value(def);
        self.values.insert(key(v), id);
        id
    }

    fn operand(&mut self, v: LLVMValueRef) -> ValueId {
        self.operand_in(v, true)
    }

    fn constant_expr(&mut self, v: LLVMValueRef, emit: bool) -> ValueId {
        let opcode = unsafe { c::LLVMGetConstOpcode(v) };
        match opcode {
            Op::LLVMGetElementPtr => {
                let base = strip_casts(unsafe { c::LLVMGetOperand(v, 0) });
                if let Some(s) = c_string(base) {
                    // `"text" + k`: the rest of the string.
                    let n = unsafe { c::LLVMGetNumOperands(v) };
                    let offset = (1..n as u32)
                        .map(|k| const_int(unsafe { c::LLVMGetOperand(v, k) }).unwrap_or(0))
                        .sum::<i64>()
                        .clamp(0, s.len() as i64) as usize;
                    let id = self.program.const_str(s.get(offset..).unwrap_or(""));
                    self.values.insert(key(v), id);
                    return id;
                }
                if emit {
                    self.gep(v, None)
                } else {
                    self.operand_in(base, false)
                }
            }
            Op::LLVMBitCast | Op::LLVMAddrSpaceCast | Op::LLVMPtrToInt | Op::LLVMIntToPtr => {
                self.operand_in(unsafe { c::LLVMGetOperand(v, 0) }, emit)
            }
            _ if emit => {
                let n = unsafe { c::LLVMGetNumOperands(v) };
                let args = (0..n as u32)
                    .map(|k| self.operand(unsafe { c::LLVMGetOperand(v, k) }))
                    .collect();
                self.emit_value(
                    InstKind::Op {
                        op: OpKind::Other,
                        args,
                    },
                    None,
                )
            }
            _ => self.undef,
        }
    }

    /// `getelementptr` (instruction or constant expression): a `FieldAddr` per struct step, an
    /// `IndexAddr` per non-zero other index, a cast when nothing remains.
    fn gep(&mut self, gep: LLVMValueRef, result: Option<ValueId>) -> ValueId {
        let n = unsafe { c::LLVMGetNumOperands(gep) } as u32;
        let mut current = self.operand(unsafe { c::LLVMGetOperand(gep, 0) });
        let mut ty = unsafe { c::LLVMGetGEPSourceElementType(gep) };
        let mut last_step: Option<InstId> = None;
        for k in 1..n {
            let index = unsafe { c::LLVMGetOperand(gep, k) };
            let constant = const_int(index);
            let type_kind = unsafe { c::LLVMGetTypeKind(ty) };
            let step = if k == 1 {
                // Over the pointer itself: pointer arithmetic unless zero.
                (constant != Some(0)).then(|| InstKind::IndexAddr {
                    base: current,
                    index: self.operand(index),
                })
            } else if type_kind == Ty::LLVMStructTypeKind {
                let field = constant.unwrap_or(0) as u32;
                let structure = self.struct_id(ty);
                ty = unsafe { c::LLVMStructGetTypeAtIndex(ty, field) };
                Some(InstKind::FieldAddr {
                    base: current,
                    structure,
                    field,
                })
            } else {
                if matches!(type_kind, Ty::LLVMArrayTypeKind | Ty::LLVMVectorTypeKind) {
                    ty = unsafe { c::LLVMGetElementType(ty) };
                }
                (constant != Some(0)).then(|| InstKind::IndexAddr {
                    base: current,
                    index: self.operand(index),
                })
            };
            if let Some(step) = step {
                current = self.emit_value(step, None);
                last_step = Some(InstId(self.program.insts.len() as u32 - 1));
            }
        }
        match (last_step, result) {
            // The last step defines the GEP's own (pre-allocated) value.
            (Some(last), Some(r)) => {
                self.program.values[current.index()] = ValueDef::Undef;
                self.program.insts[last.index()].result = Some(r);
                self.program.values[r.index()] = ValueDef::Inst(last);
                r
            }
            (Some(_), None) => current,
            (None, result) => self.emit_value(
                InstKind::Op {
                    op: OpKind::Cast,
                    args: vec![current],
                },
                result,
            ),
        }
    }

    /// The pointer of a load or store. LLVM folds the constant `&global.first_field` to
    /// `@global`, so an access of another type than the global's struct at the global's
    /// address is made a field-0 access again (descending through nested first fields), as
    /// field-sensitive points-to and struct-field option sources expect.
    fn access_pointer(&mut self, ptr: LLVMValueRef, access: LLVMTypeRef) -> ValueId {
        let base = strip_casts(ptr);
        let mut current = self.operand(ptr);
        if unsafe { c::LLVMGetValueKind(base) } != Vk::LLVMGlobalVariableValueKind {
            return current;
        }
        let mut ty = unsafe { c::LLVMGlobalGetValueType(base) };
        while ty != access {
            let kind = unsafe { c::LLVMGetTypeKind(ty) };
            if kind == Ty::LLVMArrayTypeKind {
                // Element 0 of an array is the array (arrays are collapsed to their base).
                ty = unsafe { c::LLVMGetElementType(ty) };
                continue;
            }
            if kind != Ty::LLVMStructTypeKind
                || unsafe { c::LLVMIsOpaqueStruct(ty) } != 0
                || unsafe { c::LLVMCountStructElementTypes(ty) } == 0
            {
                break;
            }
            let structure = self.struct_id(ty);
            current = self.emit_value(
                InstKind::FieldAddr {
                    base: current,
                    structure,
                    field: 0,
                },
                None,
            );
            ty = unsafe { c::LLVMStructGetTypeAtIndex(ty, 0) };
        }
        current
    }

    fn successor(&self, bb: LLVMBasicBlockRef) -> BlockId {
        self.blocks[&key(bb)]
    }

    fn function(&mut self, f: LLVMValueRef, id: FuncId) {
        let llvm_blocks = bitcode::blocks(f);
        self.locals.clear();
        self.blocks.clear();
        for (k, &p) in self.program.func(id).params.clone().iter().enumerate() {
            let param = unsafe { c::LLVMGetParam(f, k as u32) };
            self.locals.insert(key(param), p);
            if is_scalar_type(unsafe { c::LLVMTypeOf(param) }) {
                self.program.set_scalar(p);
            }
        }
        if llvm_blocks.is_empty() {
            return;
        }
        let subprogram = unsafe { di::LLVMGetSubprogram(f) };
        let mut lines: Option<(u32, u32)> = None;
        let file = if subprogram.is_null() {
            None
        } else {
            self.debug_structs.walk(self.context, subprogram);
            let line = unsafe { di::LLVMDISubprogramGetLine(subprogram) };
            if line > 0 {
                lines = Some((line, line));
            }
            self.file_of_scope(subprogram)
        };
        let func = &mut self.program.functions[id.index()];
        func.is_declaration = false;
        func.file = file;
        let mut per_block = Vec::with_capacity(llvm_blocks.len());
        for (local, &bb) in llvm_blocks.iter().enumerate() {
            let b = BlockId(self.program.blocks.len() as u32);
            self.program.blocks.push(ir::Block {
                func: id,
                local: local as u32,
                insts: Vec::new(),
            });
            self.program.functions[id.index()].blocks.push(b);
            self.blocks.insert(key(bb), b);
            let insts = bitcode::instructions(bb);
            for &i in &insts {
                let ty = unsafe { c::LLVMTypeOf(i) };
                if unsafe { c::LLVMGetTypeKind(ty) } != Ty::LLVMVoidTypeKind {
                    let v = self.program.add_value(ValueDef::Undef);
                    self.locals.insert(key(i), v);
                    if is_scalar_type(ty) {
                        self.program.set_scalar(v);
                    }
                }
            }
            per_block.push((b, insts));
        }
        let mut instructions = 0u32;
        for (b, insts) in per_block {
            self.block = b;
            instructions += insts.len() as u32;
            for (k, &i) in insts.iter().enumerate() {
                self.llvm_index = k as u32;
                self.loc = self.debug_loc(i, file);
                if self.loc.line > 0 {
                    lines = Some(match lines {
                        None => (self.loc.line, self.loc.line),
                        Some((a, z)) => (a.min(self.loc.line), z.max(self.loc.line)),
                    });
                }
                self.instruction(i);
            }
            let ends_well = self
                .program
                .terminator(b)
                .is_some_and(|t| self.program.inst(t).kind.is_terminator());
            if !ends_well {
                self.emit(InstKind::Unreachable, None);
            }
        }
        self.program.functions[id.index()].lines = lines;
        self.positions.shape[id.index()] = FunctionShape {
            blocks: llvm_blocks.len() as u32,
            instructions,
        };
    }

    fn operands(&mut self, i: LLVMValueRef, range: std::ops::Range<u32>) -> Vec<ValueId> {
        range
            .map(|k| self.operand(unsafe { c::LLVMGetOperand(i, k) }))
            .collect()
    }

    /// A terminator with successors LLVM does not give a decided value for (indirectbr,
    /// callbr, exception handling): a switch over all successors.
    fn switch_over_successors(&mut self, i: LLVMValueRef, value: ValueId) {
        let n = unsafe { c::LLVMGetNumSuccessors(i) };
        if n == 0 {
            self.emit(InstKind::Unreachable, None);
            return;
        }
        let default = self.successor(unsafe { c::LLVMGetSuccessor(i, 0) });
        let cases = (1..n)
            .map(|k| {
                (
                    k as i64,
                    self.successor(unsafe { c::LLVMGetSuccessor(i, k) }),
                )
            })
            .collect();
        self.emit(
            InstKind::Switch {
                value,
                default,
                cases,
            },
            None,
        );
    }

    fn instruction(&mut self, i: LLVMValueRef) {
        let result = self.locals.get(&key(i)).copied();
        let opcode = unsafe { c::LLVMGetInstructionOpcode(i) };
        let nops = unsafe { c::LLVMGetNumOperands(i) } as u32;
        let op = |k: u32| unsafe { c::LLVMGetOperand(i, k) };
        match opcode {
            Op::LLVMRet => {
                let value = (nops > 0).then(|| self.operand(op(0)));
                self.emit(InstKind::Return { value }, None);
            }
            Op::LLVMBr => {
                if unsafe { c::LLVMIsConditional(i) } != 0 {
                    let cond = self.operand(unsafe { c::LLVMGetCondition(i) });
                    let if_true = self.successor(unsafe { c::LLVMGetSuccessor(i, 0) });
                    let if_false = self.successor(unsafe { c::LLVMGetSuccessor(i, 1) });
                    self.emit(
                        InstKind::Branch {
                            cond,
                            if_true,
                            if_false,
                        },
                        None,
                    );
                } else {
                    let target = self.successor(unsafe { c::LLVMGetSuccessor(i, 0) });
                    self.emit(InstKind::Jump { target }, None);
                }
            }
            Op::LLVMSwitch => {
                let value = self.operand(op(0));
                let default = self.successor(unsafe { c::LLVMGetSwitchDefaultDest(i) });
                let n = unsafe { c::LLVMGetNumSuccessors(i) };
                // Operands: value, default, then (case value, destination) pairs.
                let cases = (1..n)
                    .map(|k| {
                        let case = const_int(op(2 * k)).unwrap_or(k as i64);
                        (case, self.successor(unsafe { c::LLVMGetSuccessor(i, k) }))
                    })
                    .collect();
                self.emit(
                    InstKind::Switch {
                        value,
                        default,
                        cases,
                    },
                    None,
                );
            }
            Op::LLVMIndirectBr => {
                let value = self.operand(op(0));
                self.switch_over_successors(i, value);
            }
            Op::LLVMInvoke | Op::LLVMCallBr => {
                self.call(i, result);
                let value = result.unwrap_or(self.undef);
                self.switch_over_successors(i, value);
            }
            Op::LLVMUnreachable => {
                self.emit(InstKind::Unreachable, None);
            }
            Op::LLVMResume | Op::LLVMCleanupRet | Op::LLVMCatchRet | Op::LLVMCatchSwitch => {
                let undef = self.undef;
                self.switch_over_successors(i, undef);
            }
            Op::LLVMFNeg => {
                let args = self.operands(i, 0..1);
                self.emit_value(
                    InstKind::Op {
                        op: OpKind::Unary,
                        args,
                    },
                    result,
                );
            }
            Op::LLVMAdd
            | Op::LLVMFAdd
            | Op::LLVMSub
            | Op::LLVMFSub
            | Op::LLVMMul
            | Op::LLVMFMul
            | Op::LLVMUDiv
            | Op::LLVMSDiv
            | Op::LLVMFDiv
            | Op::LLVMURem
            | Op::LLVMSRem
            | Op::LLVMFRem
            | Op::LLVMShl
            | Op::LLVMLShr
            | Op::LLVMAShr
            | Op::LLVMAnd
            | Op::LLVMOr
            | Op::LLVMXor => {
                let args = self.operands(i, 0..2);
                let v = self.emit_value(
                    InstKind::Op {
                        op: OpKind::Binary,
                        args,
                    },
                    result,
                );
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMICmp | Op::LLVMFCmp => {
                let args = self.operands(i, 0..2);
                let v = self.emit_value(
                    InstKind::Op {
                        op: OpKind::Compare,
                        args,
                    },
                    result,
                );
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMTrunc
            | Op::LLVMZExt
            | Op::LLVMSExt
            | Op::LLVMFPToUI
            | Op::LLVMFPToSI
            | Op::LLVMUIToFP
            | Op::LLVMSIToFP
            | Op::LLVMFPTrunc
            | Op::LLVMFPExt
            | Op::LLVMPtrToInt
            | Op::LLVMIntToPtr
            | Op::LLVMBitCast
            | Op::LLVMAddrSpaceCast
            | Op::LLVMFreeze => {
                let args = self.operands(i, 0..1);
                let v = self.emit_value(
                    InstKind::Op {
                        op: OpKind::Cast,
                        args,
                    },
                    result,
                );
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMAlloca => {
                let ty = unsafe { c::LLVMGetAllocatedType(i) };
                let structure = (unsafe { c::LLVMGetTypeKind(ty) } == Ty::LLVMStructTypeKind)
                    .then(|| self.struct_id(ty));
                self.emit_value(InstKind::Alloca { structure }, result);
            }
            Op::LLVMLoad => {
                let ptr = self.access_pointer(op(0), unsafe { c::LLVMTypeOf(i) });
                let v = self.emit_value(InstKind::Load { ptr }, result);
                self.know_int_op(v, i, opcode);
            }
            Op::LLVMStore => {
                let value = self.operand(op(0));
                let ptr = self.access_pointer(op(1), unsafe { c::LLVMTypeOf(op(0)) });
                self.emit(InstKind::Store { value, ptr }, None);
            }
            Op::LLVMAtomicRMW | Op::LLVMAtomicCmpXchg => {
                // Reads the old value and writes a new one.
                let ptr = self.operand(op(0));
                let value = self.operand(op(nops - 1));
                self.emit(InstKind::Store { value, ptr }, None);
                self.emit_value(InstKind::Load { ptr }, result);
            }
            Op::LLVMGetElementPtr => {
                self.gep(i, result);
            }
            Op::LLVMPHI => {
                let n = unsafe { c::LLVMCountIncoming(i) };
                let incoming = (0..n)
                    .map(|k| {
                        let v = self.operand_in(unsafe { c::LLVMGetIncomingValue(i, k) }, false);
                        (v, self.successor(unsafe { c::LLVMGetIncomingBlock(i, k) }))
                    })
                    .collect();
                self.emit_value(InstKind::Phi { incoming }, result);
            }
            Op::LLVMSelect => {
                let cond = self.operand(op(0));
                let if_true = self.operand(op(1));
                let if_false = self.operand(op(2));
                self.emit_value(
                    InstKind::Select {
                        cond,
                        if_true,
                        if_false,
                    },
                    result,
                );
            }
            Op::LLVMCall => self.call(i, result),
            Op::LLVMFence => {}
            _ => {
                // extractvalue, insertvalue, vector operations, va_arg, landingpad, …
                let args = self.operands(i, 0..nops);
                if result.is_some() {
                    self.emit_value(
                        InstKind::Op {
                            op: OpKind::Other,
                            args,
                        },
                        result,
                    );
                }
            }
        }
    }

    fn call(&mut self, i: LLVMValueRef, result: Option<ValueId>) {
        let called = strip_casts(unsafe { c::LLVMGetCalledValue(i) });
        let nargs = unsafe { c::LLVMGetNumArgOperands(i) };
        let kind = unsafe { c::LLVMGetValueKind(called) };
        if kind == Vk::LLVMFunctionValueKind {
            let name = bitcode::value_name(called);
            if bitcode::is_ignored_intrinsic(&name) {
                if name.starts_with("llvm.dbg.") && nargs > 1 {
                    // The variable's type may name struct fields.
                    let var = unsafe { c::LLVMValueAsMetadata(c::LLVMGetOperand(i, 1)) };
                    if !var.is_null() {
                        self.debug_structs.walk(self.context, var);
                    }
                }
                return;
            }
        }
        let args = self.operands(i, 0..nargs);
        if kind == Vk::LLVMInlineAsmValueKind {
            if result.is_some() {
                self.emit_value(
                    InstKind::Op {
                        op: OpKind::Other,
                        args,
                    },
                    result,
                );
            }
            return;
        }
        let callee = match self
            .values
            .get(&key(called))
            .map(|&v| self.program.value(v))
        {
            Some(ValueDef::Function(f)) => Callee::Direct(*f),
            _ => Callee::Indirect(self.operand(called)),
        };
        let result = result.unwrap_or_else(|| self.program.add_value(ValueDef::Undef));
        self.emit(InstKind::Call { callee, args }, Some(result));
    }
}

/// Whether values of an LLVM type hold no address: integers, floating point and vectors of
/// them (pointers, vectors of pointers and first-class aggregates may).
fn is_scalar_type(ty: LLVMTypeRef) -> bool {
    match unsafe { c::LLVMGetTypeKind(ty) } {
        Ty::LLVMIntegerTypeKind
        | Ty::LLVMHalfTypeKind
        | Ty::LLVMBFloatTypeKind
        | Ty::LLVMFloatTypeKind
        | Ty::LLVMDoubleTypeKind
        | Ty::LLVMX86_FP80TypeKind
        | Ty::LLVMFP128TypeKind
        | Ty::LLVMPPC_FP128TypeKind => true,
        Ty::LLVMVectorTypeKind | Ty::LLVMScalableVectorTypeKind => {
            is_scalar_type(unsafe { c::LLVMGetElementType(ty) })
        }
        _ => false,
    }
}
