//! `ir`: knobs' language-neutral program representation.
//!
//! A [`Program`] is what the white-box analyses read: globals, struct types, functions made of
//! basic blocks, and instructions with their defined value, used values and debug location.
//! Everything is addressed by our own dense ids ([`FuncId`], [`BlockId`], [`InstId`],
//! [`ValueId`], …), newtype indices into the program's arenas ([`IdVec`]s), so analyses keep
//! their facts in dense side tables indexed by id, `IdVec<InstId, _>` and the like (a few bytes
//! per instruction, which is what lets a whole-program analysis of a large C code base fit in
//! memory).
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
mod cfg;
pub mod dom;
mod dump;
mod id;
mod id_vec;
mod inst;
mod int_op;
pub mod library;
mod place;
mod point;
mod program;

pub use builder::FunctionBuilder;
pub use cfg::Cfg;
pub use dom::{DomTree, FunctionDominance, ProgramDominance};
pub use id::{BlockId, FileId, FuncId, GlobalId, Id, InstId, StructId, ValueId};
pub use id_vec::IdVec;
pub use inst::{Callee, DebugLoc, Inst, InstKind, OpKind, ValueDef};
pub use int_op::{IntOp, IntOpKind, Predicate, canonical};
pub use place::{ArgSelector, Place};
pub use point::ProgramPoint;
pub use program::{Block, Function, Global, InitializerRef, Program, StructType};

/// Everything that can be wrong with a program; each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("function `{function}`: {message}")]
    Malformed { function: String, message: String },
    #[error("duplicate {kind} `{name}`")]
    Duplicate { kind: &'static str, name: String },
}
