//! `ir`: knobs' language-neutral program representation.
//!
//! A [`Program`] is what the white-box analyses read: globals, struct types, functions made of
//! basic blocks, and instructions with their defined value, used values and debug location.
//! Everything is addressed by our own dense ids ([`FuncId`], [`BlockId`], [`InstId`],
//! [`ValueId`], …), newtype indices into the program's arenas, so analyses keep their facts in
//! plain `Vec`s indexed by id (a few bytes per instruction, which is what lets a whole-program
//! analysis of a large C code base fit in memory).
//!
//! The instruction set is just rich enough for option-taint analysis of C compiled at `-O0`
//! plus `mem2reg`: SSA operations are one generic [`InstKind::Op`], memory is allocation sites
//! ([`InstKind::Alloca`], calls to malloc-like functions), loads, stores, field addresses and
//! collapsed pointer arithmetic, and control flow is a terminator per block. Programs are built
//! with [`Program`]'s `add_*` methods and [`FunctionBuilder`] (tests build them by hand; the
//! LLVM frontend fills them from bitcode), printed with `Display`, and checked with
//! [`Program::verify`].
//!
//! Architecture invariant: knows nothing of LLVM (or any source language) and nothing of
//! options; a frontend translates into this crate, never the other way round.

mod builder;
pub mod dom;
mod dump;
mod place;
mod point;

use std::collections::HashMap;

pub use builder::FunctionBuilder;
pub use dom::{DomTree, FunctionDominance, ProgramDominance};
pub use place::{ArgSelector, Place};
pub use point::ProgramPoint;

/// Everything that can be wrong with a program; each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("function `{function}`: {message}")]
    Malformed { function: String, message: String },
    #[error("duplicate {kind} `{name}`")]
    Duplicate { kind: &'static str, name: String },
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// A function of the program (defined or only declared).
    FuncId, "f"
);
id_type!(
    /// A basic block; ids are program-wide, each block belongs to one function.
    BlockId, "b"
);
id_type!(
    /// An instruction; ids are program-wide.
    InstId, "i"
);
id_type!(
    /// A value: an instruction result, a parameter, a global's address, a constant…
    ValueId, "v"
);
id_type!(
    /// A global variable.
    GlobalId, "g"
);
id_type!(
    /// A struct type.
    StructId, "s"
);
id_type!(
    /// A source file named in debug locations.
    FileId, "file"
);

/// A source position; `line == 0` means unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DebugLoc {
    pub file: Option<FileId>,
    pub line: u32,
    pub column: u32,
}

/// A struct type: its name (as the source spells it, e.g. `lzma_options_lzma`) and fields.
#[derive(Clone, Debug, PartialEq)]
pub struct StructType {
    pub name: String,
    /// Field names where debug information gives them; empty strings otherwise.
    pub fields: Vec<String>,
    /// Per field, the struct whose same field this one is: C code views one object through
    /// several struct types that share a common initial sequence (liblzma's generic
    /// `lzma_filter_coder` over its `lzma_filter_encoder` tables), so memory analyses key a
    /// field by the first struct with the same field types up to it. Itself by default.
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

/// Where a value comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueDef {
    /// The result of an instruction.
    Inst(InstId),
    /// The `index`th parameter of a function.
    Param {
        func: FuncId,
        index: u32,
    },
    /// The address of a global variable.
    Global(GlobalId),
    /// The address of a function (for indirect calls).
    Function(FuncId),
    ConstInt(i64),
    ConstFloat(f64),
    /// A constant string, e.g. the `"XZ_MODE"` of `getenv("XZ_MODE")` (the address of a
    /// constant array of characters in C).
    ConstStr(String),
    /// Null pointers, undef, aggregate constants: no information.
    Undef,
}

/// The broad class of a generic operation; taint treats all alike, the dump shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Binary,
    Unary,
    Cast,
    Compare,
    Other,
}

/// What an integer instruction computes, exactly, where the frontend knows it
/// ([`Program::int_ops`]). Taint treats every [`InstKind::Op`] alike and never looks; constant
/// folding (fixed settings, `analysis::fixed`) needs the arithmetic. Integers are canonical:
/// a `bits`-wide value sign-extended to 64 bits, so an `i1` true is -1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntOp {
    pub kind: IntOpKind,
    /// Width of the operands (of the loaded value, for [`IntOpKind::Load`]), 1 to 64.
    pub bits: u32,
}

/// The operation of an [`IntOp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOpKind {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Shl,
    LShr,
    AShr,
    UDiv,
    SDiv,
    URem,
    SRem,
    /// A comparison; the result is an `i1`.
    Compare(Predicate),
    /// Casts to an integer of `to` bits.
    ZExt {
        to: u32,
    },
    SExt {
        to: u32,
    },
    Trunc {
        to: u32,
    },
    /// A load of an integer.
    Load,
}

/// An integer comparison (LLVM's `icmp` predicates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Predicate {
    Eq,
    Ne,
    Ugt,
    Uge,
    Ult,
    Ule,
    Sgt,
    Sge,
    Slt,
    Sle,
}

/// `v`'s low `bits` bits, sign-extended: the canonical form of a `bits`-wide integer.
pub fn canonical(v: i64, bits: u32) -> i64 {
    if bits == 0 || bits >= 64 {
        v
    } else {
        let shift = 64 - bits;
        (v << shift) >> shift
    }
}

fn unsigned(v: i64, bits: u32) -> u64 {
    if bits >= 64 {
        v as u64
    } else {
        (v as u64) & ((1u64 << bits) - 1)
    }
}

impl IntOp {
    /// The result for canonical operands (two, or one for casts), canonical; `None` where the
    /// operation has no defined result (division by zero, shifts by the width or more) or is
    /// a load.
    pub fn evaluate(&self, args: &[i64]) -> Option<i64> {
        use IntOpKind::*;
        let w = self.bits;
        let (a, b) = (*args.first()?, args.get(1).copied());
        let out = |v: i64| Some(canonical(v, w));
        let shift = |b: i64| (unsigned(b, w) < w as u64).then_some(unsigned(b, w) as u32);
        match self.kind {
            Add => out(a.wrapping_add(b?)),
            Sub => out(a.wrapping_sub(b?)),
            Mul => out(a.wrapping_mul(b?)),
            And => out(a & b?),
            Or => out(a | b?),
            Xor => out(a ^ b?),
            Shl => out(((unsigned(a, w)) << shift(b?)?) as i64),
            LShr => out((unsigned(a, w) >> shift(b?)?) as i64),
            AShr => out(a >> shift(b?)?),
            UDiv => {
                let d = unsigned(b?, w);
                (d != 0).then(|| canonical((unsigned(a, w) / d) as i64, w))
            }
            URem => {
                let d = unsigned(b?, w);
                (d != 0).then(|| canonical((unsigned(a, w) % d) as i64, w))
            }
            SDiv => a.checked_div(b?).map(|v| canonical(v, w)),
            SRem => a.checked_rem(b?).map(|v| canonical(v, w)),
            Compare(p) => {
                let b = b?;
                let (ua, ub) = (unsigned(a, w), unsigned(b, w));
                let holds = match p {
                    Predicate::Eq => a == b,
                    Predicate::Ne => a != b,
                    Predicate::Ugt => ua > ub,
                    Predicate::Uge => ua >= ub,
                    Predicate::Ult => ua < ub,
                    Predicate::Ule => ua <= ub,
                    Predicate::Sgt => a > b,
                    Predicate::Sge => a >= b,
                    Predicate::Slt => a < b,
                    Predicate::Sle => a <= b,
                };
                Some(-(holds as i64))
            }
            ZExt { to } => Some(canonical(unsigned(a, w) as i64, to)),
            SExt { to } => Some(canonical(a, to)),
            Trunc { to } => Some(canonical(a, to)),
            Load => None,
        }
    }
}

/// The callee of a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Callee {
    Direct(FuncId),
    /// Through a function pointer.
    Indirect(ValueId),
}

/// What an instruction does. The last instruction of every block is a terminator
/// ([`InstKind::is_terminator`]) and no other is.
#[derive(Clone, Debug, PartialEq)]
pub enum InstKind {
    /// Arithmetic, comparison, cast, …: the result depends on the operands.
    Op {
        op: OpKind,
        args: Vec<ValueId>,
    },
    /// SSA phi: the value coming from the predecessor block that was taken.
    Phi {
        incoming: Vec<(ValueId, BlockId)>,
    },
    Select {
        cond: ValueId,
        if_true: ValueId,
        if_false: ValueId,
    },
    /// A stack allocation site; the result is its address.
    Alloca {
        structure: Option<StructId>,
    },
    Load {
        ptr: ValueId,
    },
    Store {
        value: ValueId,
        ptr: ValueId,
    },
    /// The address of field `field` of the struct of type `structure` at `base`.
    FieldAddr {
        base: ValueId,
        structure: StructId,
        field: u32,
    },
    /// Pointer arithmetic with a non-constant (or array) index: the result points into the
    /// same object as `base` (arrays are collapsed to their base).
    IndexAddr {
        base: ValueId,
        index: ValueId,
    },
    Call {
        callee: Callee,
        args: Vec<ValueId>,
    },
    Return {
        value: Option<ValueId>,
    },
    Jump {
        target: BlockId,
    },
    Branch {
        cond: ValueId,
        if_true: BlockId,
        if_false: BlockId,
    },
    Switch {
        value: ValueId,
        default: BlockId,
        cases: Vec<(i64, BlockId)>,
    },
    Unreachable,
}

impl InstKind {
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            InstKind::Return { .. }
                | InstKind::Jump { .. }
                | InstKind::Branch { .. }
                | InstKind::Switch { .. }
                | InstKind::Unreachable
        )
    }

    /// The values this instruction reads, in operand order.
    pub fn uses(&self) -> Vec<ValueId> {
        let mut out = Vec::new();
        self.for_each_use(|v| out.push(v));
        out
    }

    /// Calls `f` on every value this instruction reads (no allocation).
    pub fn for_each_use(&self, mut f: impl FnMut(ValueId)) {
        match self {
            InstKind::Op { args, .. } => args.iter().copied().for_each(f),
            InstKind::Phi { incoming } => incoming.iter().for_each(|(v, _)| f(*v)),
            InstKind::Select {
                cond,
                if_true,
                if_false,
            } => {
                f(*cond);
                f(*if_true);
                f(*if_false);
            }
            InstKind::Alloca { .. } | InstKind::Jump { .. } | InstKind::Unreachable => {}
            InstKind::Load { ptr } => f(*ptr),
            InstKind::Store { value, ptr } => {
                f(*value);
                f(*ptr);
            }
            InstKind::FieldAddr { base, .. } => f(*base),
            InstKind::IndexAddr { base, index } => {
                f(*base);
                f(*index);
            }
            InstKind::Call { callee, args } => {
                if let Callee::Indirect(v) = callee {
                    f(*v);
                }
                args.iter().copied().for_each(f);
            }
            InstKind::Return { value } => {
                if let Some(v) = value {
                    f(*v)
                }
            }
            InstKind::Branch { cond, .. } => f(*cond),
            InstKind::Switch { value, .. } => f(*value),
        }
    }

    /// Successor blocks of a terminator (empty for other instructions), duplicates removed.
    pub fn successors(&self) -> Vec<BlockId> {
        let mut out = Vec::new();
        let mut push = |b: BlockId| {
            if !out.contains(&b) {
                out.push(b)
            }
        };
        match self {
            InstKind::Jump { target } => push(*target),
            InstKind::Branch {
                if_true, if_false, ..
            } => {
                push(*if_true);
                push(*if_false);
            }
            InstKind::Switch { default, cases, .. } => {
                push(*default);
                for (_, b) in cases {
                    push(*b);
                }
            }
            _ => {}
        }
        out
    }

    /// The value a conditional terminator decides on, if this is one with two or more
    /// distinct successors.
    pub fn decision(&self) -> Option<ValueId> {
        match self {
            InstKind::Branch {
                cond,
                if_true,
                if_false,
            } if if_true != if_false => Some(*cond),
            InstKind::Switch { value, .. } if self.successors().len() > 1 => Some(*value),
            _ => None,
        }
    }
}

/// An instruction: what it does, the value it defines, where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub kind: InstKind,
    pub result: Option<ValueId>,
    pub block: BlockId,
    pub loc: DebugLoc,
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
}

impl Function {
    pub fn entry(&self) -> Option<BlockId> {
        self.blocks.first().copied()
    }
}

/// A whole program (usually one linked module).
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub files: Vec<String>,
    pub structs: Vec<StructType>,
    pub globals: Vec<Global>,
    pub functions: Vec<Function>,
    pub blocks: Vec<Block>,
    pub insts: Vec<Inst>,
    pub values: Vec<ValueDef>,
    /// Values whose type says they hold no address (integers, floats), indexed by `ValueId`.
    /// A frontend with types fills it; where it is shorter than `values` (hand-built
    /// programs), a value may hold an address. Integers made from pointers (`ptrtoint`) are
    /// scalars too: points-to follows addresses through them only into `inttoptr`.
    pub scalars: Vec<bool>,
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
        if let Some(i) = self.files.iter().position(|f| f == name) {
            return FileId(i as u32);
        }
        self.files.push(name.to_string());
        FileId(self.files.len() as u32 - 1)
    }

    /// Whether `v`'s type says it holds no address (see [`Program::scalars`]).
    pub fn is_scalar(&self, v: ValueId) -> bool {
        self.scalars.get(v.index()).copied().unwrap_or(false)
    }

    /// Marks `v` as holding no address by its type.
    pub fn set_scalar(&mut self, v: ValueId) {
        if self.scalars.len() <= v.index() {
            self.scalars.resize(v.index() + 1, false);
        }
        self.scalars[v.index()] = true;
    }

    pub fn add_value(&mut self, def: ValueDef) -> ValueId {
        self.values.push(def);
        ValueId(self.values.len() as u32 - 1)
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

    /// The key of field `field` of `structure` in memory: the same field of the first struct
    /// with the same initial sequence of field types (see [`StructType::common`]).
    pub fn field_key(&self, structure: StructId, field: u32) -> (StructId, u32) {
        let common = self.structs[structure.index()]
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
                let st = &self.structs[s.index()];
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
        let id = StructId(self.structs.len() as u32);
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
        let id = GlobalId(self.globals.len() as u32);
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
        let id = FuncId(self.functions.len() as u32);
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
        &self.functions[f.index()]
    }

    pub fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b.index()]
    }

    pub fn inst(&self, i: InstId) -> &Inst {
        &self.insts[i.index()]
    }

    pub fn value(&self, v: ValueId) -> &ValueDef {
        &self.values[v.index()]
    }

    /// The function an instruction belongs to.
    pub fn func_of(&self, i: InstId) -> FuncId {
        self.blocks[self.insts[i.index()].block.index()].func
    }

    /// The terminator of a block (its last instruction).
    pub fn terminator(&self, b: BlockId) -> Option<InstId> {
        self.blocks[b.index()].insts.last().copied()
    }

    /// Whether a defined function has a `return` (one that does not may only end the
    /// program: `exit`, a `noreturn` error function, an endless loop).
    pub fn can_return(&self, f: FuncId) -> bool {
        self.func(f).blocks.iter().any(|&b| {
            self.terminator(b)
                .is_some_and(|t| matches!(self.inst(t).kind, InstKind::Return { .. }))
        })
    }

    /// Successors of a block, from its terminator.
    pub fn successors(&self, b: BlockId) -> Vec<BlockId> {
        match self.terminator(b) {
            Some(t) => self.insts[t.index()].kind.successors(),
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
            .and_then(|f| self.files.get(f.index()))
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

/// The CFG of one function with dense local block indices (`0` is the entry), successors
/// and predecessors; what dominator and region algorithms walk.
#[derive(Clone, Debug)]
pub struct Cfg {
    pub func: FuncId,
    /// Local index → block id.
    pub blocks: Vec<BlockId>,
    pub succs: Vec<Vec<u32>>,
    pub preds: Vec<Vec<u32>>,
}

impl Cfg {
    pub fn new(program: &Program, func: FuncId) -> Cfg {
        let blocks = program.func(func).blocks.clone();
        let mut succs = vec![Vec::new(); blocks.len()];
        let mut preds = vec![Vec::new(); blocks.len()];
        for (i, &b) in blocks.iter().enumerate() {
            for s in program.successors(b) {
                let s = program.block(s).local;
                succs[i].push(s);
                preds[s as usize].push(i as u32);
            }
        }
        Cfg {
            func,
            blocks,
            succs,
            preds,
        }
    }

    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Local indices of blocks with no successors (return, unreachable).
    pub fn exits(&self) -> Vec<u32> {
        (0..self.len() as u32)
            .filter(|&b| self.succs[b as usize].is_empty())
            .collect()
    }
}
