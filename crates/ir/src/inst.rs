//! Instructions and values: what each instruction does ([`InstKind`]), the value it defines
//! and where it is ([`Inst`], [`DebugLoc`]), where a value comes from ([`ValueDef`]), and the
//! callee of a call ([`Callee`]).

use crate::{BlockId, FileId, FuncId, GlobalId, InstId, StructId, ValueId};

/// A source position; `line == 0` means unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DebugLoc {
    pub file: Option<FileId>,
    pub line: u32,
    pub column: u32,
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

    /// The value this instruction decides on, if it is a decision: what code runs, or which
    /// value flows on, depends on it. A conditional terminator with two or more distinct
    /// successors decides which block runs next; an indirect call decides which function
    /// runs (`handlers[mode]()`, `codec->encode()`); a `select` decides which value flows on
    /// (the optimiser's form of a small `if`). Only terminators decide control flow
    /// ([`InstKind::control_decision`]).
    pub fn decision(&self) -> Option<ValueId> {
        match self {
            InstKind::Select { cond, .. } => Some(*cond),
            InstKind::Call {
                callee: Callee::Indirect(pointer),
                ..
            } => Some(*pointer),
            _ => self.control_decision(),
        }
    }

    /// The value a conditional terminator decides on, if this is one with two or more
    /// distinct successors: the decisions that blocks are control dependent on.
    pub fn control_decision(&self) -> Option<ValueId> {
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
