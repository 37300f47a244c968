//! Globals and types: the module's global variables (constant C strings become `ConstStr`
//! values), the addresses in their initializers, their annotations, and struct types with
//! their layouts (`common`, `first_field`, `punned`, sizes).

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;

use ir::{GlobalId, InitializerRef, StructId, ValueDef};
use llvm_sys::LLVMTypeKind as Ty;
use llvm_sys::LLVMValueKind as Vk;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMTypeRef, LLVMValueRef};

use super::constants::{c_string, strip_casts};
use super::{Translator, key};
use crate::{Error, bitcode};

impl Translator {
    /// Adds the module's global variables (but constant C strings, which become values, and
    /// LLVM's own), returning each added one with its id.
    pub(super) fn globals(&mut self) -> Result<Vec<(LLVMValueRef, GlobalId)>, Error> {
        let mut added_globals = Vec::new();
        for (k, g) in bitcode::globals(self.module).into_iter().enumerate() {
            let name = bitcode::value_name(g);
            // SAFETY: `g` is a global variable of the module (the handle rule); its section
            // is null or a NUL-terminated string owned by the global, read at once.
            let is_metadata = unsafe {
                let section = c::LLVMGetSection(g);
                !section.is_null() && CStr::from_ptr(section).to_bytes() == b"llvm.metadata"
            };
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
            // SAFETY: `g` is a global variable of the module (the handle rule), so it has a
            // value type; asking a type its kind and whether it is sized has no precondition.
            let (ty, kind, sized, declaration) = unsafe {
                let ty = c::LLVMGlobalGetValueType(g);
                (
                    ty,
                    c::LLVMGetTypeKind(ty),
                    c::LLVMTypeIsSized(ty) != 0,
                    c::LLVMIsDeclaration(g) != 0,
                )
            };
            let structure = (kind == Ty::LLVMStructTypeKind).then(|| self.struct_id(ty));
            // SAFETY: the module's data layout and a type of its context (the handle rule);
            // the ABI size is asked only of a sized type, as `LLVMABISizeOfType` requires.
            let size =
                sized.then(|| unsafe { llvm_sys::target::LLVMABISizeOfType(self.target_data, ty) });
            let global = &mut self.program.globals[id];
            global.structure = structure;
            global.size = size;
            global.defined = !declaration;
            self.values.insert(key(g), global.address);
            added_globals.push((g, id));
        }
        Ok(added_globals)
    }

    /// The addresses in the added globals' initializers ([`ir::Global::initializer_refs`]).
    pub(super) fn initializers(&mut self, added_globals: Vec<(LLVMValueRef, GlobalId)>) {
        for (g, id) in added_globals {
            // SAFETY: `g` is a global variable of the module (the handle rule); its
            // initializer is null (a declaration) or a constant, checked below.
            let init = unsafe { c::LLVMGetInitializer(g) };
            if !init.is_null() {
                let refs = self.initializer_refs(init);
                self.program.globals[id].initializer_refs = refs;
            }
        }
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
            // SAFETY: `v` is a constant of the module (the initializer or an operand of one,
            // the handle rule); any value has a kind.
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
                    // SAFETY: `v` is a live constant struct (the handle rule), whose type is a
                    // struct type, as `struct_id` requires.
                    let ty = unsafe { c::LLVMTypeOf(v) };
                    let structure = self.struct_id(ty);
                    // SAFETY: a constant is a user; operands are read below their count.
                    let n = unsafe { c::LLVMGetNumOperands(v) };
                    for k in 0..n as u32 {
                        let field = if k == 0 { at } else { Some((structure, k)) };
                        // SAFETY: as above, `k` is below the operand count.
                        stack.push((unsafe { c::LLVMGetOperand(v, k) }, field));
                    }
                }
                Vk::LLVMConstantArrayValueKind
                | Vk::LLVMConstantVectorValueKind
                | Vk::LLVMConstantExprValueKind => {
                    // SAFETY: `v` is a live constant, hence a user (the handle rule); operands
                    // are read below their count.
                    unsafe {
                        let n = c::LLVMGetNumOperands(v);
                        for k in 0..n as u32 {
                            stack.push((c::LLVMGetOperand(v, k), at));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// `__attribute__((annotate("…")))` on globals and functions, from
    /// `llvm.global.annotations`.
    pub(super) fn annotations(&mut self) {
        // SAFETY: the live module (the handle rule) and a NUL-terminated name.
        let table =
            unsafe { c::LLVMGetNamedGlobal(self.module, c"llvm.global.annotations".as_ptr()) };
        if table.is_null() {
            return;
        }
        // SAFETY: `table` is a non-null global variable of the module (the handle rule).
        let init = unsafe { c::LLVMGetInitializer(table) };
        if init.is_null() {
            return;
        }
        // SAFETY: `init` is a constant (a user) of the module (the handle rule); operands are
        // read below their count.
        let n = unsafe { c::LLVMGetNumOperands(init) };
        for k in 0..n as u32 {
            // SAFETY: as above; the entry is a constant, hence a user, whose operands 0 and 1
            // are read only when it has at least two.
            let (target, text) = unsafe {
                let entry = c::LLVMGetOperand(init, k);
                if c::LLVMGetNumOperands(entry) < 2 {
                    continue;
                }
                (c::LLVMGetOperand(entry, 0), c::LLVMGetOperand(entry, 1))
            };
            let target = strip_casts(target);
            let Some(text) = c_string(strip_casts(text)) else {
                continue;
            };
            match self
                .values
                .get(&key(target))
                .map(|&v| self.program.value(v))
            {
                Some(ValueDef::Global(g)) => {
                    let g = *g;
                    self.program.globals[g].annotations.push(text);
                }
                Some(ValueDef::Function(f)) => {
                    let f = *f;
                    self.program.functions[f].annotations.push(text);
                }
                _ => {}
            }
        }
    }

    /// The id of a struct type, adding it on first sight. `ty` must be a struct type (checked).
    pub(super) fn struct_id(&mut self, ty: LLVMTypeRef) -> StructId {
        if let Some(&s) = self.structs.get(&key(ty)) {
            return s;
        }
        // SAFETY: `ty` is a type of the module's context (the handle rule); any type has a
        // kind.
        let kind = unsafe { c::LLVMGetTypeKind(ty) };
        assert_eq!(
            kind,
            Ty::LLVMStructTypeKind,
            "struct_id of a non-struct type"
        );
        // SAFETY: `ty` is a struct type (asserted above), as these calls require; its name is
        // null (a literal struct) or a NUL-terminated string owned by the type, copied at once.
        let (full, opaque, count) = unsafe {
            let raw = c::LLVMGetStructName(ty);
            let full = (!raw.is_null()).then(|| CStr::from_ptr(raw).to_string_lossy().into_owned());
            let opaque = c::LLVMIsOpaqueStruct(ty) != 0;
            (full, opaque, c::LLVMCountStructElementTypes(ty) as usize)
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
        let fields = if opaque { 0 } else { count };
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
    pub(super) fn struct_layouts(&mut self) {
        // Trie nodes: (parent node, field type) → node, and each node's first struct.
        let mut children: HashMap<(usize, usize), usize> = HashMap::new();
        let mut first: Vec<StructId> = Vec::new();
        // By index: finding a first field's struct type may add struct types to the list.
        let mut k = 0;
        while k < self.struct_types.len() {
            let id = StructId::new(k);
            let ty = self.struct_types[id];
            // SAFETY: `ty` is a struct type (`struct_id` admits only those) of the module's
            // context (the handle rule); its name is null or a NUL-terminated string owned by
            // the type, which lives as long as the context (and so outlives this loop body).
            let (packed, full, opaque, sized) = unsafe {
                let full = c::LLVMGetStructName(ty);
                (
                    c::LLVMIsPackedStruct(ty) != 0,
                    (!full.is_null()).then(|| CStr::from_ptr(full).to_bytes()),
                    c::LLVMIsOpaqueStruct(ty) != 0,
                    c::LLVMTypeIsSized(ty) != 0,
                )
            };
            // Node 0 and 1: the roots of unpacked and packed structs.
            let mut node = usize::from(packed);
            // Unions, and literal types (clang's for initializers that do not fit the type).
            self.program.structs[id].punned = full.is_none_or(|n| n.starts_with(b"union."));
            let n = self.program.structs[id].fields.len();
            if !opaque && sized {
                // SAFETY: the module's data layout and a sized type of its context (the handle
                // rule; C gives a struct no member of incomplete type, so every non-opaque one
                // is sized, but the size is only asked of a sized type).
                self.program.structs[id].size =
                    Some(unsafe { llvm_sys::target::LLVMABISizeOfType(self.target_data, ty) });
            }
            if n > 0 {
                // SAFETY: `ty` is a struct type with `n > 0` elements (`fields` has one per
                // element of a non-opaque struct), so index 0 is valid; the element type is
                // asked its kind, and its element type only while it is an array type.
                let head = unsafe {
                    let mut head = c::LLVMStructGetTypeAtIndex(ty, 0);
                    while c::LLVMGetTypeKind(head) == Ty::LLVMArrayTypeKind {
                        head = c::LLVMGetElementType(head);
                    }
                    head
                };
                // SAFETY: `head` is a type of the module's context; any type has a kind.
                if unsafe { c::LLVMGetTypeKind(head) } == Ty::LLVMStructTypeKind {
                    self.program.structs[id].first_field = Some(self.struct_id(head));
                }
            }
            for i in 0..n {
                // SAFETY: `ty` is a struct type and `i` is below its element count `n`.
                let field_ty = unsafe { c::LLVMStructGetTypeAtIndex(ty, i as u32) };
                let next = children.len() + 2;
                node = *children.entry((node, key(field_ty))).or_insert(next);
                if node == first.len() + 2 {
                    first.push(id);
                }
                self.program.structs[id].common[i] = first[node - 2];
            }
            k += 1;
        }
    }
}

/// Whether values of an LLVM type hold no address: integers, floating point and vectors of
/// them (pointers, vectors of pointers and first-class aggregates may).
pub(super) fn is_scalar_type(ty: LLVMTypeRef) -> bool {
    // SAFETY: `ty` is a type of the module's context (the handle rule); any type has a kind.
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
            // SAFETY: `ty` is a vector type, whose element type `LLVMGetElementType` gives.
            is_scalar_type(unsafe { c::LLVMGetElementType(ty) })
        }
        _ => false,
    }
}
