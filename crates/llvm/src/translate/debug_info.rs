//! Debug information: struct field names (walked from compile units, subprograms and
//! variables through types), source files of scopes, and instructions' debug locations.

use std::collections::HashMap;

use ir::{DebugLoc, FileId};
use llvm_sys::core as c;
use llvm_sys::debuginfo as di;
use llvm_sys::debuginfo::LLVMMetadataKind as Mk;
use llvm_sys::prelude::{LLVMContextRef, LLVMMetadataRef, LLVMValueRef};

use super::{PtrSet, Translator, key};

const DW_TAG_MEMBER: u16 = 0x0d;
const DW_TAG_STRUCTURE_TYPE: u16 = 0x13;
const DW_TAG_TYPEDEF: u16 = 0x16;

/// Struct layouts from debug information: source name → members (offset in bits, name).
#[derive(Default)]
pub(super) struct DebugStructs {
    visited: PtrSet,
    pub(super) members: HashMap<String, Vec<(u64, String)>>,
}

/// The operands of a metadata node (`md` must be an `MDNode`: every caller checks its kind
/// first), null ones left out.
fn metadata_operands(context: LLVMContextRef, md: LLVMMetadataRef) -> Vec<LLVMMetadataRef> {
    // SAFETY: `md` is an `MDNode` of the module's context (the handle rule; callers check its
    // metadata kind), so wrapped as a value it has node operands, which fill exactly the `n`
    // slots of `ops`; each non-null operand is a value that `LLVMValueAsMetadata` unwraps.
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

/// The name of a debug-info type (`md` must be a `DIType`), empty if it has none.
fn type_name(md: LLVMMetadataRef) -> String {
    // SAFETY: `md` is a `DIType` of the module (callers check its kind; the handle rule);
    // its name is null or `len` bytes owned by the metadata, copied at once.
    unsafe {
        let mut len = 0usize;
        let p = di::LLVMDITypeGetName(md, &mut len);
        if p.is_null() {
            return String::new();
        }
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    }
}

/// The kind of a piece of metadata (any metadata has one).
fn kind(md: LLVMMetadataRef) -> Mk {
    // SAFETY: `md` is live metadata of the module (the handle rule); any metadata has a kind.
    unsafe { di::LLVMGetMetadataKind(md) }
}

/// The DWARF tag of a debug-info node (`md` must be a `DINode`).
fn tag(md: LLVMMetadataRef) -> u16 {
    // SAFETY: `md` is a `DINode` of the module (callers check its kind; the handle rule).
    unsafe { di::LLVMGetDINodeTag(md) }
}

impl DebugStructs {
    /// Walks debug metadata from `root` (a compile unit, subprogram or variable) through
    /// types, recording every named struct's members. Locations, files and lexical blocks
    /// are not followed: they lead to no types and there are many of them.
    pub(super) fn walk(&mut self, context: LLVMContextRef, root: LLVMMetadataRef) {
        let mut stack = vec![root];
        while let Some(md) = stack.pop() {
            if !self.visited.insert(key(md)) {
                continue;
            }
            match kind(md) {
                Mk::LLVMDICompositeTypeMetadataKind => {
                    let tag = tag(md);
                    let name = type_name(md);
                    if tag == DW_TAG_STRUCTURE_TYPE && !name.is_empty() {
                        self.record(context, &name, md);
                    }
                    stack.extend(metadata_operands(context, md));
                }
                Mk::LLVMDIDerivedTypeMetadataKind => {
                    let ops = metadata_operands(context, md);
                    // `typedef struct { … } name;`: clang names the LLVM type after the typedef.
                    if tag(md) == DW_TAG_TYPEDEF
                        && let Some(&base) = ops.iter().find(|&&o| {
                            matches!(kind(o), Mk::LLVMDICompositeTypeMetadataKind)
                                && tag(o) == DW_TAG_STRUCTURE_TYPE
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
            if !matches!(kind(op), Mk::LLVMMDTupleMetadataKind) {
                continue;
            }
            for m in metadata_operands(context, op) {
                if matches!(kind(m), Mk::LLVMDIDerivedTypeMetadataKind) && tag(m) == DW_TAG_MEMBER {
                    // SAFETY: `m` is a `DIDerivedType` (checked above), a `DIType`, as
                    // `LLVMDITypeGetOffsetInBits` requires.
                    let offset = unsafe { di::LLVMDITypeGetOffsetInBits(m) };
                    members.push((offset, type_name(m)));
                }
            }
            if !members.is_empty() {
                break;
            }
        }
        self.members.insert(name.to_string(), members);
    }
}

impl Translator {
    /// Debug metadata of the compile units: global variables' and retained types.
    pub(super) fn compile_units(&mut self) {
        let name = c"llvm.dbg.cu";
        // SAFETY: the live module (the handle rule) and a NUL-terminated name; `ops` has
        // exactly the `n` slots the named metadata's operands fill.
        let ops = unsafe {
            let n = c::LLVMGetNamedMetadataNumOperands(self.module, name.as_ptr());
            let mut ops = vec![std::ptr::null_mut(); n as usize];
            c::LLVMGetNamedMetadataOperands(self.module, name.as_ptr(), ops.as_mut_ptr());
            ops
        };
        for op in ops {
            // SAFETY: `op` is a metadata node wrapped as a value (the handle rule), which
            // `LLVMValueAsMetadata` unwraps.
            let md = unsafe { c::LLVMValueAsMetadata(op) };
            self.debug_structs.walk(self.context, md);
        }
    }

    /// Field names from debug information, matched by byte offset (a bitfield's storage unit
    /// is named after its first member).
    pub(super) fn name_fields(&mut self) {
        for (k, &ty) in self.struct_types.iter_enumerated() {
            let s = &mut self.program.structs[k];
            let Some(members) = self.debug_structs.members.get(&s.name) else {
                continue;
            };
            // SAFETY: `ty` is a struct type of the module's context (`struct_id` admits only
            // those; the handle rule); whether it is sized has no precondition.
            if !s.fields.is_empty() && unsafe { c::LLVMTypeIsSized(ty) } == 0 {
                continue;
            }
            for (i, field) in s.fields.iter_mut().enumerate() {
                // SAFETY: the module's data layout and a sized struct type (checked above)
                // with more than `i` elements (`fields` has one per element), as
                // `LLVMOffsetOfElement` requires.
                let offset = unsafe {
                    llvm_sys::target::LLVMOffsetOfElement(self.target_data, ty, i as u32)
                } * 8;
                if let Some((_, name)) = members.iter().find(|(bits, _)| *bits / 8 * 8 == offset) {
                    field.clone_from(name);
                }
            }
        }
    }

    /// The source file of a debug scope (`scope` must be null or a `DIScope`).
    pub(super) fn file_of_scope(&mut self, scope: LLVMMetadataRef) -> Option<FileId> {
        if scope.is_null() {
            return None;
        }
        if let Some(&f) = self.files.get(&key(scope)) {
            return f;
        }
        // SAFETY: `scope` is a non-null `DIScope` of the module (a subprogram or a location's
        // scope; the handle rule), as `LLVMDIScopeGetFile` requires.
        let file = unsafe { di::LLVMDIScopeGetFile(scope) };
        let id = (!file.is_null()).then(|| {
            let mut len = 0u32;
            // SAFETY: `file` is a non-null `DIFile`; its name is null or `len` bytes owned by
            // the metadata, copied at once.
            let name = unsafe {
                let p = di::LLVMDIFileGetFilename(file, &mut len);
                if p.is_null() {
                    String::new()
                } else {
                    String::from_utf8_lossy(std::slice::from_raw_parts(
                        p as *const u8,
                        len as usize,
                    ))
                    .into_owned()
                }
            };
            self.program.add_file(&name)
        });
        self.files.insert(key(scope), id);
        id
    }

    /// The debug location of an instruction, its function's file when it has none.
    pub(super) fn debug_loc(
        &mut self,
        inst: LLVMValueRef,
        function_file: Option<FileId>,
    ) -> DebugLoc {
        // SAFETY: `inst` is an instruction of the module (the handle rule), as
        // `LLVMInstructionGetDebugLoc` requires.
        let loc = unsafe { di::LLVMInstructionGetDebugLoc(inst) };
        if loc.is_null() {
            return DebugLoc {
                file: function_file,
                line: 0,
                column: 0,
            };
        }
        // SAFETY: `loc` is a non-null `DILocation`, as these accessors require.
        let (scope, line, column) = unsafe {
            (
                di::LLVMDILocationGetScope(loc),
                di::LLVMDILocationGetLine(loc),
                di::LLVMDILocationGetColumn(loc),
            )
        };
        DebugLoc {
            file: self.file_of_scope(scope).or(function_file),
            line,
            column,
        }
    }
}
