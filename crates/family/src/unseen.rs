//! What a family-based model cannot see. One run with every feature shows how long each
//! feature's functions take, not how an option changes the time of code that is not a
//! feature's function: a loop whose trip count an option sets, a value or callee an option
//! picks (`select`, a call through a pointer), a C library call given an option's value, or a
//! branch on an option inside a function's own code. The static taint analysis finds those
//! decisions; each is reported, so a user knows which options the model may get wrong
//! (the paper's §5.1: data-flow interactions are outside the approach).

use analysis::{DecisionKind, ProgramDominance, StatementInfluence};
use std::collections::BTreeSet;

use ir::{BlockId, Callee, InstKind, Program};
use serde::Serialize;
use space::ConfigSpace;

use crate::FeatureMap;

/// A decision on options whose effect on time the model cannot see.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnseenInfluence {
    pub function: String,
    pub file: String,
    pub line: u32,
    pub options: Vec<String>,
    pub why: String,
}

/// The decisions of the program whose options the family-based model cannot see. `traced`:
/// the basic blocks inside feature blocks (`crate::blocks::inside`), whose cost the model sees
/// as their features'.
pub fn unseen_influences(
    program: &Program,
    dominance: &ProgramDominance,
    influence: &StatementInfluence,
    (features, traced): (&FeatureMap, &BTreeSet<BlockId>),
    space: &ConfigSpace,
) -> Vec<UnseenInfluence> {
    let mut out = Vec::new();
    for d in &influence.decisions {
        let options = influence.sets.get(d.options);
        if options.is_empty() {
            continue;
        }
        let f = program.func_of(d.inst);
        let names: Vec<String> = options
            .iter()
            .map(|o| space.option(o).name.clone())
            .collect();
        let why = match d.kind {
            DecisionKind::Select => Some("a `select` picks a value by it".to_string()),
            DecisionKind::IndirectCall => {
                Some("it chooses the function a pointer calls".to_string())
            }
            DecisionKind::LibraryCall => {
                Some("a C library call is given a value it set".to_string())
            }
            DecisionKind::Branch => {
                branch_unseen(program, dominance, (features, traced), d.inst, options)
            }
        };
        if let Some(why) = why {
            let unseen = UnseenInfluence {
                function: program.func(f).name.clone(),
                file: d
                    .loc
                    .file
                    .map(|file| program.files[file].clone())
                    .unwrap_or_default(),
                line: d.loc.line,
                options: names,
                why,
            };
            if !out.contains(&unseen) {
                out.push(unseen);
            }
        }
    }
    out
}

/// Why a branch's effect is unseen, if it is: it is a loop's condition, or the code it
/// controls, outside feature blocks, does more than call functions of its options' features.
fn branch_unseen(
    program: &Program,
    dominance: &ProgramDominance,
    (features, traced): (&FeatureMap, &BTreeSet<BlockId>),
    inst: ir::InstId,
    options: &analysis::OptionSet,
) -> Option<String> {
    let f = program.func_of(inst);
    let dom = dominance.get(f)?;
    let cfg = program.cfg(f);
    let at = program.block(program.inst(inst).block).local;
    let is_loop_header = |b: u32| {
        cfg.preds[b as usize]
            .iter()
            .any(|p| dom.dom.dominates(b, *p))
    };
    let in_loop_condition = is_loop_header(at)
        || cfg.succs[at as usize]
            .iter()
            .any(|s| dom.dom.dominates(*s, at) && is_loop_header(*s));
    if in_loop_condition {
        return Some("a loop's trip count depends on it".into());
    }
    for (b, deps) in dom.control_deps.iter().enumerate() {
        if !deps.contains(&at) || b >= cfg.blocks.len() || traced.contains(&cfg.blocks[b]) {
            continue;
        }
        if is_loop_header(b as u32) {
            return Some("a loop runs under it, outside any function of its feature".into());
        }
        for &i in &program.block(cfg.blocks[b]).insts {
            let InstKind::Call { callee, .. } = &program.inst(i).kind else {
                continue;
            };
            match callee {
                Callee::Direct(g) if program.func(*g).is_declaration => {
                    let name = &program.func(*g).name;
                    if !name.starts_with("llvm.") && !ir::library::is_negligible_work(name) {
                        return Some(format!(
                            "code under it calls the C library (`{name}`) outside any function of its feature"
                        ));
                    }
                }
                Callee::Direct(g) if crate::blocks::is_marker(program, *g) => {}
                Callee::Direct(g) => {
                    if !features
                        .by_function
                        .get(g)
                        .is_some_and(|o| options.contains(*o))
                    {
                        return Some(format!(
                            "code under it calls `{}`, which is not a function of its feature",
                            program.func(*g).name
                        ));
                    }
                }
                Callee::Indirect(_) => {
                    return Some("code under it calls through a pointer".into());
                }
            }
        }
    }
    None
}
