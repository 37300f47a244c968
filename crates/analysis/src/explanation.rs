//! Why a set of options meets in the same decisions: where the options enter functions'
//! calling contexts together, and for a few of the decisions they all reach, the chain of
//! facts that brings each option there ([`crate::explain::Explainer`]). What `knobs crush
//! --explain A,B` prints.

use std::fmt;

use ir::{FuncId, IdVec, InstId, Program};
use serde::Serialize;
use space::OptionId;

use crate::ProgramDominance;
use crate::explain::{Explainer, Fact};
use crate::options::SetId;
use crate::static_taint::{StatementInfluence, TaintedDecision};

/// How many call sites and decisions an explanation shows.
const SHOWN: usize = 3;

/// Why the options `options` influence the same decisions.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub options: Vec<String>,
    /// Tainted decisions influenced by all of the options, and all tainted decisions.
    pub shared_decisions: usize,
    pub tainted_decisions: usize,
    /// Defined functions whose calling context holds all of the options.
    pub context_functions: usize,
    /// Call sites where the options enter a context together, most shared decisions first.
    pub context_entries: Vec<ContextEntry>,
    /// Facts explained option by option: the first context entry's block, then decisions
    /// spread over the program.
    pub facts: Vec<ExplainedFact>,
    /// Decisions on paths that end the program that all of the options would influence, set
    /// aside as cold (`StatementInfluence::set_aside`): how many, and a few of them.
    pub set_aside_decisions: usize,
    pub set_aside: Vec<String>,
}

/// A call whose site brings all the options into its callee's context.
#[derive(Clone, Debug, Serialize)]
pub struct ContextEntry {
    pub callee: String,
    pub caller: String,
    pub location: String,
    /// Shared decisions in the functions the callee reaches through calls.
    pub decisions_reached: usize,
}

/// A fact (a decision, or the control of a call site) and why each option reaches it.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainedFact {
    pub fact: String,
    pub chains: Vec<OptionChain>,
}

/// The chain of facts that brings one option to a fact; `None` when the option arrives
/// through the function's context (its callers' decisions), not in the fact's own block.
#[derive(Clone, Debug, Serialize)]
pub struct OptionChain {
    pub option: String,
    pub links: Option<Vec<ChainLink>>,
}

/// One step back along a chain: how the option got here, through which instruction, from
/// which fact.
#[derive(Clone, Debug, Serialize)]
pub struct ChainLink {
    pub how: String,
    pub at: Option<String>,
    pub from: String,
}

impl Explanation {
    /// Explains `options` (id and name) over one analysis result.
    pub fn new(
        program: &Program,
        influence: &StatementInfluence,
        options: &[(OptionId, String)],
    ) -> Explanation {
        let si = influence;
        let ids: Vec<OptionId> = options.iter().map(|(o, _)| *o).collect();
        let holds_all = |s: SetId| {
            let set = si.sets.get(s);
            ids.iter().all(|o| set.contains(*o))
        };
        let shared: Vec<&TaintedDecision> = si
            .decisions
            .iter()
            .filter(|d| {
                let set = si.of(d.inst);
                ids.iter().all(|o| set.contains(*o))
            })
            .collect();
        let dominance = ProgramDominance::new(program);
        let explainer = Explainer::new(program, &dominance, si);
        let explain_fact = |fact: Fact| ExplainedFact {
            fact: explainer.describe(fact),
            chains: options
                .iter()
                .map(|(o, name)| OptionChain {
                    option: name.clone(),
                    // A link says how its fact got the option from the next one.
                    links: explainer.explain(fact, *o).map(|chain| {
                        chain
                            .windows(2)
                            .map(|pair| ChainLink {
                                how: pair[0].how.to_string(),
                                at: pair[0]
                                    .via
                                    .map(|i| program.describe_loc(program.inst(i).loc)),
                                from: explainer.describe(pair[1].fact),
                            })
                            .collect()
                    }),
                })
                .collect(),
        };

        // A decision's influence includes its function's calling context, so options that
        // meet in the context of a function that calls much of the program meet in all of its
        // decisions. Find where they enter contexts together.
        let mut shared_in: IdVec<FuncId, usize> = IdVec::from_elem(0, program.functions.len());
        for d in &shared {
            shared_in[program.func_of(d.inst)] += 1;
        }
        let mut entries: Vec<(usize, InstId, FuncId)> = Vec::new();
        for (k, f) in program.functions.iter_enumerated() {
            if f.is_declaration || !holds_all(si.context[k]) {
                continue;
            }
            // A call whose own site brings them all: its block's control holds them, or it
            // holds those its caller's context lacks (through recursion the caller's context
            // may hold them too, from this very site).
            let Some(&call) = si.call_graph.callers[k].iter().find(|&&c| {
                let caller_context = si.context[program.func_of(c)];
                let control = si.facts.block_taint[program.inst(c).block];
                let caller = si.sets.get(caller_context);
                let control_set = si.sets.get(control);
                holds_all(control)
                    || (!holds_all(caller_context)
                        && ids
                            .iter()
                            .all(|o| caller.contains(*o) || control_set.contains(*o)))
            }) else {
                continue;
            };
            // The shared decisions in the functions this one reaches through calls.
            let mut seen = IdVec::from_elem(false, program.functions.len());
            let mut stack = vec![k];
            let mut reached = 0;
            while let Some(g) = stack.pop() {
                if std::mem::replace(&mut seen[g], true) {
                    continue;
                }
                reached += shared_in[g];
                for &b in &program.func(g).blocks {
                    for &i in &program.block(b).insts {
                        stack.extend(si.call_graph.targets_of(i).iter().copied());
                    }
                }
            }
            entries.push((reached, call, k));
        }
        entries.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));

        let set_aside: Vec<&TaintedDecision> = si
            .set_aside
            .iter()
            .filter(|d| holds_all(d.options))
            .collect();
        let mut facts = Vec::new();
        if let Some(&(_, call, _)) = entries.first() {
            facts.push(explain_fact(Fact::Control(program.inst(call).block)));
        }
        // Spread over the program rather than the first few (often all in argument parsing).
        let step = shared.len().div_ceil(SHOWN).max(1);
        for d in shared.iter().step_by(step) {
            facts.push(explain_fact(Fact::Decision(program.inst(d.inst).block)));
        }
        Explanation {
            options: options.iter().map(|(_, n)| n.clone()).collect(),
            shared_decisions: shared.len(),
            tainted_decisions: si.decisions.len(),
            context_functions: program
                .functions
                .iter_enumerated()
                .filter(|(k, g)| !g.is_declaration && holds_all(si.context[*k]))
                .count(),
            context_entries: entries
                .iter()
                .take(SHOWN)
                .map(|&(reached, call, f)| ContextEntry {
                    callee: program.func(f).name.clone(),
                    caller: program.func(program.func_of(call)).name.clone(),
                    location: program.describe_loc(program.inst(call).loc),
                    decisions_reached: reached,
                })
                .collect(),
            facts,
            set_aside_decisions: set_aside.len(),
            set_aside: set_aside
                .iter()
                .take(SHOWN)
                .map(|d| {
                    format!(
                        "{} in {}",
                        program.describe_loc(d.loc),
                        program.func(program.func_of(d.inst)).name
                    )
                })
                .collect(),
        }
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.options.join(",");
        writeln!(
            f,
            "{} of {} tainted decisions are influenced by all of {{{names}}}",
            self.shared_decisions, self.tainted_decisions
        )?;
        let mut facts = self.facts.iter();
        if let Some(first) = self.context_entries.first() {
            writeln!(
                f,
                "\nall of {{{names}}} are in the calling context of {} functions; they enter it \
                 together at call sites like these (the callee, and the shared decisions it \
                 reaches):",
                self.context_functions
            )?;
            for e in &self.context_entries {
                writeln!(
                    f,
                    "  {} called at {} in {}: {} of the {} decisions",
                    e.callee, e.location, e.caller, e.decisions_reached, self.shared_decisions
                )?;
            }
            if let Some(fact) = facts.next() {
                writeln!(
                    f,
                    "\n{} (call to {}, reaching {} of the {} decisions)",
                    fact.fact, first.callee, first.decisions_reached, self.shared_decisions
                )?;
                write_chains(f, fact)?;
            }
        }
        for fact in facts {
            writeln!(f, "\n{}", fact.fact)?;
            write_chains(f, fact)?;
        }
        if self.set_aside_decisions > 0 {
            writeln!(
                f,
                "\nset aside as cold (on paths that end the program, where no run spends \
                 measurable time): {} more decisions influenced by all of {{{names}}}, like {}",
                self.set_aside_decisions,
                self.set_aside.join(", ")
            )?;
        }
        Ok(())
    }
}

fn write_chains(f: &mut fmt::Formatter<'_>, fact: &ExplainedFact) -> fmt::Result {
    for chain in &fact.chains {
        writeln!(f, "  why {}:", chain.option)?;
        match &chain.links {
            Some(links) => {
                for link in links {
                    let at = link
                        .at
                        .as_ref()
                        .map_or(String::new(), |a| format!(" at {a}"));
                    writeln!(f, "    <- {}{at}: {}", link.how, link.from)?;
                }
            }
            None => writeln!(
                f,
                "    (through the function's context: its callers' decisions)"
            )?,
        }
    }
    Ok(())
}
