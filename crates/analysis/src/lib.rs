//! `analysis`: language-neutral analyses of where options matter in a program.
//!
//! Given an [`ir::Program`] and where it keeps its options ([`sources`]), this crate computes
//! the statement-influence map by static option-taint analysis ([`static_taint`], over
//! Andersen points-to in [`pointsto`], reaching definitions of globals in [`reaching`] and the
//! library-call summaries of [`wrappers`]), the program specialised to fixed settings by
//! constant propagation ([`fixed`]), and why an option reaches a decision ([`explain`]).
//! Sets of options are interned bitsets ([`options`]). Dominance lives in [`ir::dom`].
//!
//! Architecture invariant: knows nothing of LLVM, of processes and of any one approach;
//! everything is computed from the language-neutral `ir` and a `space`, so every algorithm is
//! tested on hand-built programs (and, through a dev-dependency on `llvm`, on compiled C).

pub mod explain;
pub mod explanation;
pub mod fixed;
pub mod options;
pub mod pointsto;
pub mod reaching;
pub mod sources;
pub mod static_taint;
pub mod views;
pub mod wrappers;

pub use fixed::{FixedGlobal, FixedValue, FoldedLoad, Specialised, specialise, specialise_with};
pub use ir::dom::{DomTree, FunctionDominance, ProgramDominance};
pub use options::{OptionSet, SetId, SetInterner};
pub use sources::{FieldRef, OptionSource, ResolvedSources, SourceKind};
pub use static_taint::{DecisionKind, StatementInfluence, TaintedDecision, analyse};

/// Everything that can go wrong in an analysis; each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("option source names global `{0}`, which the program does not define")]
    UnknownGlobal(String),
    #[error("option source names struct type `{0}`, which the program does not define")]
    UnknownStruct(String),
    #[error("option source names field `{field}` of struct `{structure}`, which it does not have")]
    UnknownField { structure: String, field: String },
    #[error("option source names function `{0}`, which the program neither defines nor declares")]
    UnknownFunction(String),
    #[error("unknown option `{name}` in {context}")]
    UnknownOption { name: String, context: String },
    #[error(transparent)]
    Space(#[from] space::Error),
}
