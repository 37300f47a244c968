//! The [`Program`] and its entities — struct types, globals, functions, blocks — with the
//! `add_*` methods that build it, the queries analyses ask of it, and [`Program::verify`].

use std::collections::HashMap;

use crate::{
    BlockId, Cfg, DebugLoc, Error, FileId, FuncId, FunctionBuilder, GlobalId, IdVec, Inst, InstId,
    InstKind, IntOp, StructId, ValueDef, ValueId,
};

/// A struct type: its name (as the source spells it, e.g. `lzma_options_lzma`) and fields.
#[derive(Clone, Debug, PartialEq)]
pub struct StructType {
    pub name: String,
    /// Field names where debug information gives them; empty strings otherwise.
    pub fields: Vec<String>,
    /// Per field, the first struct with the same field types up to it (itself by default):
    /// C code views one object through several struct types that share a common initial
    /// sequence (liblzma's generic `lzma_filter_coder` over its `lzma_filter_encoder`
    /// tables), and such views may access the field as one. Points-to keys a field by it
    /// only among the types it finds one object viewed as (`analysis::views`).
    pub common: Vec<StructId>,
    /// The struct type of its first field (through arrays), which is at the same address.
    pub first_field: Option<StructId>,
    /// Objects of this type are routinely accessed as other struct types: a union, or a
    /// literal struct type the compiler made up for one initializer.
    pub punned: bool,
    /// Size in bytes, if known.
    pub size: Option<u64>,
}

/// A global variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    pub name: String,
    /// Its struct type if it is a struct.
    pub structure: Option<StructId>,
    /// Size in bytes if known.
    pub size: Option<u64>,
    /// Defined in the program, not only declared (`extern int optind;` is the C library's,
    /// which may change it behind the program's back).
    pub defined: bool,
    /// Source annotations, e.g. `knobs:option=LEVEL` from `__attribute__((annotate(…)))`.
    pub annotations: Vec<String>,
    /// Addresses (globals, functions) stored in its initializer, and where: a table of
    /// function pointers is how C programs dispatch, so points-to analysis must see them.
    pub initializer_refs: Vec<InitializerRef>,
    /// Value of the value `&global`.
    pub address: ValueId,
}

/// An address in a global's initializer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitializerRef {
    /// The struct field it is stored in, keyed like a field address: (struct, field) of the
    /// innermost struct whose field other than the first holds it, however deeply nested;
    /// `None` at the global's start (a first field, an array element of a plain array).
    /// A table's `.init` column then holds only the init functions.
    pub field: Option<(StructId, u32)>,
    pub address: ValueId,
}

/// A basic block: its instructions in order, the last being the terminator.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub func: FuncId,
    /// Position of this block in its function's `blocks` (dense local index for CFG work).
    pub local: u32,
    pub insts: Vec<InstId>,
}

/// A function: defined (with blocks, the first being the entry) or an external declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub params: Vec<ValueId>,
    pub blocks: Vec<BlockId>,
    /// External declaration (libc, a library): no blocks.
    pub is_declaration: bool,
    pub file: Option<FileId>,
    /// First and last source line, when known.
    pub lines: Option<(u32, u32)>,
    /// Value of `&function`.
    pub address: ValueId,
    /// Source annotations, e.g. `knobs:feature=NAME` from `__attribute__((annotate(…)))`.
    pub annotations: Vec<String>,
}

impl Function {
    pub fn entry(&self) -> Option<BlockId> {
        self.blocks.first().copied()
    }
}

/// A whole program (usually one linked module).
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub files: IdVec<FileId, String>,
    pub structs: IdVec<StructId, StructType>,
    pub globals: IdVec<GlobalId, Global>,
    pub functions: IdVec<FuncId, Function>,
    pub blocks: IdVec<BlockId, Block>,
    pub insts: IdVec<InstId, Inst>,
    pub values: IdVec<ValueId, ValueDef>,
    /// Values whose type says they hold no address (integers, floats), indexed by `ValueId`.
    /// A frontend with types fills it; where it is shorter than `values` (hand-built
    /// programs), a value may hold an address. Integers made from pointers (`ptrtoint`) are
    /// scalars too: points-to follows addresses through them only into `inttoptr`.
    pub scalars: IdVec<ValueId, bool>,
    /// The exact integer semantics of `Op` and `Load` instructions, where the frontend knows
    /// them (see [`IntOp`]); absent means unknown.
    pub int_ops: HashMap<InstId, IntOp>,
    func_by_name: HashMap<String, FuncId>,
    global_by_name: HashMap<String, GlobalId>,
    struct_by_name: HashMap<String, StructId>,
}

impl Program {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add_file(&mut self, name: &str) -> FileId {
        if let Some((id, _)) = self.files.iter_enumerated().find(|(_, f)| *f == name) {
            return id;
        }
        self.files.push(name.to_string())
    }

    /// Whether `v`'s type says it holds no address (see [`Program::scalars`]).
    pub fn is_scalar(&self, v: ValueId) -> bool {
        self.scalars.get(v).copied().unwrap_or(false)
    }

    /// Marks `v` as holding no address by its type.
    pub fn set_scalar(&mut self, v: ValueId) {
        if !self.scalars.contains_id(v) {
            self.scalars.resize(v.index() + 1, false);
        }
        self.scalars[v] = true;
    }

    pub fn add_value(&mut self, def: ValueDef) -> ValueId {
        self.values.push(def)
    }

    pub fn const_int(&mut self, v: i64) -> ValueId {
        self.add_value(ValueDef::ConstInt(v))
    }

    pub fn const_str(&mut self, s: &str) -> ValueId {
        self.add_value(ValueDef::ConstStr(s.to_string()))
    }

    pub fn undef(&mut self) -> ValueId {
        self.add_value(ValueDef::Undef)
    }

    /// The same field of the first struct with the same initial sequence of field types (see
    /// [`StructType::common`]): where any view of an object may find this field.
    pub fn field_key(&self, structure: StructId, field: u32) -> (StructId, u32) {
        let common = self.structs[structure]
            .common
            .get(field as usize)
            .copied()
            .unwrap_or(structure);
        (common, field)
    }

    /// Whether field `field` of a `structure` may be accessed in an object of type `object`:
    /// the same struct, one embedded at the start of the other, or one sharing a common
    /// initial sequence up to the field with it. An object whose type is punned (a union)
    /// may be accessed as anything.
    pub fn may_access_as(&self, object: StructId, structure: StructId, field: u32) -> bool {
        if self.field_key(object, field) == self.field_key(structure, field) {
            return true;
        }
        let starts_with = |outer: StructId, inner: StructId| {
            let mut t = Some(outer);
            // First fields nest finitely, but guard against a malformed program anyway.
            for _ in 0..64 {
                let Some(s) = t else { return false };
                let st = &self.structs[s];
                if s == inner || st.punned {
                    return true;
                }
                t = st.first_field;
            }
            true
        };
        starts_with(object, structure) || starts_with(structure, object)
    }

    pub fn add_struct(&mut self, name: &str, fields: &[&str]) -> Result<StructId, Error> {
        if self.struct_by_name.contains_key(name) {
            return Err(Error::Duplicate {
                kind: "struct",
                name: name.into(),
            });
        }
        let id = self.structs.next_id();
        self.structs.push(StructType {
            name: name.into(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            common: vec![id; fields.len()],
            first_field: None,
            punned: false,
            size: None,
        });
        self.struct_by_name.insert(name.into(), id);
        Ok(id)
    }

    /// Adds a global; set `structure`, `annotations`, … on the returned id's entry.
    pub fn add_global(&mut self, name: &str) -> Result<GlobalId, Error> {
        if self.global_by_name.contains_key(name) {
            return Err(Error::Duplicate {
                kind: "global",
                name: name.into(),
            });
        }
        let id = self.globals.next_id();
        let address = self.add_value(ValueDef::Global(id));
        self.globals.push(Global {
            name: name.into(),
            structure: None,
            size: None,
            defined: true,
            annotations: Vec::new(),
            initializer_refs: Vec::new(),
            address,
        });
        self.global_by_name.insert(name.into(), id);
        Ok(id)
    }

    /// Declares a function with `params` parameters; it stays a declaration (external)
    /// until a [`FunctionBuilder`] gives it blocks.
    pub fn add_function(&mut self, name: &str, params: usize) -> Result<FuncId, Error> {
        if self.func_by_name.contains_key(name) {
            return Err(Error::Duplicate {
                kind: "function",
                name: name.into(),
            });
        }
        let id = self.functions.next_id();
        let params = (0..params)
            .map(|index| {
                self.add_value(ValueDef::Param {
                    func: id,
                    index: index as u32,
                })
            })
            .collect();
        let address = self.add_value(ValueDef::Function(id));
        self.functions.push(Function {
            name: name.into(),
            params,
            blocks: Vec::new(),
            is_declaration: true,
            file: None,
            lines: None,
            address,
            annotations: Vec::new(),
        });
        self.func_by_name.insert(name.into(), id);
        Ok(id)
    }

    /// The function called `name`, declaring it (external, `params` parameters) if absent.
    pub fn function_named_or_declare(&mut self, name: &str, params: usize) -> FuncId {
        match self.func_by_name.get(name) {
            Some(&f) => f,
            None => self.add_function(name, params).expect("absent name"),
        }
    }

    /// Starts (or continues) building the body of a function.
    pub fn build(&mut self, func: FuncId) -> FunctionBuilder<'_> {
        FunctionBuilder::new(self, func)
    }

    pub fn function_named(&self, name: &str) -> Option<FuncId> {
        self.func_by_name.get(name).copied()
    }

    pub fn global_named(&self, name: &str) -> Option<GlobalId> {
        self.global_by_name.get(name).copied()
    }

    pub fn struct_named(&self, name: &str) -> Option<StructId> {
        self.struct_by_name.get(name).copied()
    }

    pub fn func(&self, f: FuncId) -> &Function {
        &self.functions[f]
    }

    pub fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b]
    }

    /// A function's instructions, block by block in the function's order.
    pub fn instructions_of(&self, f: FuncId) -> impl Iterator<Item = InstId> + '_ {
        self.func(f)
            .blocks
            .iter()
            .flat_map(|&b| self.block(b).insts.iter().copied())
    }

    pub fn inst(&self, i: InstId) -> &Inst {
        &self.insts[i]
    }

    pub fn value(&self, v: ValueId) -> &ValueDef {
        &self.values[v]
    }

    /// The function an instruction belongs to.
    pub fn func_of(&self, i: InstId) -> FuncId {
        self.blocks[self.insts[i].block].func
    }

    /// The terminator of a block (its last instruction).
    pub fn terminator(&self, b: BlockId) -> Option<InstId> {
        self.blocks[b].insts.last().copied()
    }

    /// Whether a defined function has a `return` (one that does not may only end the
    /// program: `exit`, a `noreturn` error function, an endless loop).
    pub fn can_return(&self, f: FuncId) -> bool {
        self.func(f).blocks.iter().any(|&b| {
            self.terminator(b)
                .is_some_and(|t| matches!(self.inst(t).kind, InstKind::Return { .. }))
        })
    }

    /// Per function: a call of it never comes back because it ends the program: every path
    /// from its entry reaches `unreachable` (after `exit`, `abort`) or a call of such a
    /// function before any `return` (bzip2's `panic` → `cleanUpAndFail` → `exit`, none of
    /// them declared `noreturn`). An endless loop without such an end is not one.
    pub fn ends_program(&self) -> IdVec<FuncId, bool> {
        let mut ends = IdVec::from_elem(false, self.functions.len());
        loop {
            let mut changed = false;
            for (f, func) in self.functions.iter_enumerated() {
                if ends[f] || func.is_declaration {
                    continue;
                }
                // Forward from the entry, not past calls that end the program.
                let mut seen = vec![false; func.blocks.len()];
                let mut work = vec![0usize];
                let (mut returns, mut exits) = (false, false);
                if func.blocks.is_empty() {
                    continue;
                }
                seen[0] = true;
                while let Some(k) = work.pop() {
                    let b = func.blocks[k];
                    if self.calls_program_end(b, &ends) {
                        exits = true;
                        continue;
                    }
                    if self.unreachable_ends_program(b) {
                        exits = true;
                    } else if self
                        .terminator(b)
                        .is_some_and(|t| matches!(self.inst(t).kind, InstKind::Return { .. }))
                    {
                        returns = true;
                    }
                    for s in self.successors(b) {
                        let l = self.block(s).local as usize;
                        if !seen[l] {
                            seen[l] = true;
                            work.push(l);
                        }
                    }
                }
                if !returns && exits {
                    ends[f] = true;
                    changed = true;
                }
            }
            if !changed {
                return ends;
            }
        }
    }

    /// Whether block `b` ends in `unreachable` because the program ends there (after `exit`,
    /// `abort` or a `noreturn` error function), not because it goes on elsewhere (after
    /// `longjmp` or `pthread_exit`: [`Program::resumes_elsewhere`]).
    pub fn unreachable_ends_program(&self, b: BlockId) -> bool {
        self.terminator(b)
            .is_some_and(|t| matches!(self.inst(t).kind, InstKind::Unreachable))
            && !self.resumes_elsewhere(b)
    }

    /// Whether block `b` calls a function after which the program goes on elsewhere:
    /// `longjmp` back to its `setjmp`, `pthread_exit` ending only the thread.
    pub fn resumes_elsewhere(&self, b: BlockId) -> bool {
        self.block(b).insts.iter().any(|&i| {
            matches!(&self.inst(i).kind,
                InstKind::Call { callee: crate::Callee::Direct(g), .. }
                    if self.func(*g).name.contains("longjmp")
                        || self.func(*g).name == "pthread_exit")
        })
    }

    /// Whether block `b` calls, directly, a function that ends the program (`ends` from
    /// [`Program::ends_program`]): what follows the call in the block never runs.
    pub fn calls_program_end(&self, b: BlockId, ends: &IdVec<FuncId, bool>) -> bool {
        self.block(b).insts.iter().any(|&i| {
            matches!(&self.inst(i).kind,
                InstKind::Call { callee: crate::Callee::Direct(g), .. } if ends[*g])
        })
    }

    /// Successors of a block, from its terminator.
    pub fn successors(&self, b: BlockId) -> Vec<BlockId> {
        match self.terminator(b) {
            Some(t) => self.insts[t].kind.successors(),
            None => Vec::new(),
        }
    }

    /// The control-flow graph of a defined function, with local block indices.
    pub fn cfg(&self, f: FuncId) -> Cfg {
        Cfg::new(self, f)
    }

    /// `file:line` of an instruction for messages, `?` when unknown.
    pub fn describe_loc(&self, loc: DebugLoc) -> String {
        let file = loc
            .file
            .and_then(|f| self.files.get(f))
            .map(String::as_str)
            .unwrap_or("?");
        format!("{file}:{}", loc.line)
    }

    /// Checks the structural rules every analysis relies on: each block of a defined function
    /// ends in exactly one terminator, branch targets and phi blocks belong to the same
    /// function, instructions point back at their block.
    pub fn verify(&self) -> Result<(), Error> {
        for func in &self.functions {
            let bad = |message: String| Error::Malformed {
                function: func.name.clone(),
                message,
            };
            if func.is_declaration {
                if !func.blocks.is_empty() {
                    return Err(bad("a declaration has blocks".into()));
                }
                continue;
            }
            if func.blocks.is_empty() {
                return Err(bad("a defined function has no blocks".into()));
            }
            for &b in &func.blocks {
                let block = self.block(b);
                let Some((&last, rest)) = block.insts.split_last() else {
                    return Err(bad(format!("block {b} is empty")));
                };
                if !self.inst(last).kind.is_terminator() {
                    return Err(bad(format!("block {b} does not end in a terminator")));
                }
                for &i in rest {
                    if self.inst(i).kind.is_terminator() {
                        return Err(bad(format!("terminator {i} in the middle of block {b}")));
                    }
                }
                for &i in &block.insts {
                    let inst = self.inst(i);
                    if inst.block != b {
                        return Err(bad(format!("instruction {i} claims another block")));
                    }
                    let mut targets = inst.kind.successors();
                    if let InstKind::Phi { incoming } = &inst.kind {
                        targets.extend(incoming.iter().map(|(_, b)| *b));
                    }
                    if let Some(t) = targets.iter().find(|t| self.block(**t).func != block.func) {
                        return Err(bad(format!(
                            "instruction {i} names block {t} of another function"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}
