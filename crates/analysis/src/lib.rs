//! `analysis`: white-box reasoning about where options matter in a program.
//!
//! Given a [`ir::Program`] and where it keeps its options ([`sources`]), this crate computes
//! dominators, post-dominators and control dependence ([`dom`]), the statement-influence map
//! by static option-taint analysis ([`taint`]), ConfigCrusher's regions (Algorithm 2) and
//! their optimisation by propagation (Algorithms 3 and 4, [`regions`]), and the compressed
//! set of configurations that covers every interaction (Algorithm 1, [`compress`]).
//! Sets of options are interned bitsets ([`options`]).
//!
//! Architecture invariant: knows nothing of LLVM and nothing of processes; everything is
//! computed from the language-neutral `ir` and a `space`, so every algorithm is tested on
//! hand-built programs.
//!
//! Architecture invariant: optimising regions never changes the model that measuring them
//! yields: an instruction's optimised influence contains its original influence and is
//! itself an interaction of the program (invariants 1 and 2 of the paper).

pub mod compress;
pub mod dom;
pub mod explain;
pub mod fixed;
pub mod options;
pub mod pointsto;
pub mod reaching;
pub mod regions;
pub mod sources;
pub mod taint;
pub mod wrappers;

use ir::{FuncId, Program};

pub use compress::{Compression, compress};
pub use dom::{DomTree, FunctionDominance};
pub use fixed::{FixedGlobal, FoldedLoad, Specialised, specialise};
pub use options::{OptionSet, SetId, SetInterner};
pub use regions::{ProgramPoint, Region, RegionPlan, identify_regions, optimise_influence};
pub use sources::{
    ArgSelector, FieldRef, OptionSource, ResolvedSource, ResolvedSources, SourceKind,
};
pub use taint::{StatementInfluence, TaintedDecision, analyse};

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
    #[error("interaction needs {needed} configurations, more than the limit of {limit}")]
    TooManyCombinations { needed: u128, limit: u128 },
    #[error(transparent)]
    Space(#[from] space::Error),
}

/// Dominance facts of every defined function, computed once and shared by the taint
/// analysis and region identification.
#[derive(Clone, Debug)]
pub struct ProgramDominance {
    per_function: Vec<Option<FunctionDominance>>,
}

impl ProgramDominance {
    pub fn new(program: &Program) -> Self {
        let per_function = (0..program.functions.len())
            .map(|f| {
                let f = FuncId(f as u32);
                (!program.func(f).is_declaration)
                    .then(|| FunctionDominance::of_function(program, f))
            })
            .collect();
        ProgramDominance { per_function }
    }

    /// `None` for declarations.
    pub fn get(&self, f: FuncId) -> Option<&FunctionDominance> {
        self.per_function[f.index()].as_ref()
    }
}
