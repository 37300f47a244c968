//! Why an option influences an instruction: a shortest chain of facts of the taint fixpoint
//! from the instruction back to an option source.
//!
//! The taint analysis is a monotone fixpoint, so every option in a final fact is justified by
//! some earlier fact that holds it: an operand, the memory class a load reads, the decision a
//! block is control dependent on, the call site that gives a function its context, the store
//! that wrote a memory class, … [`Explainer::explain`] searches these justifications backwards
//! (breadth first, so the chain is a shortest one) until it reaches a source. It is a
//! diagnostic for imprecision: the chain names the memory class, the decision or the call site
//! through which an option arrived (`cargo run --release -p configcrusher --example bench_sqlite
//! -- --explain 20`).

use std::collections::VecDeque;

use ir::{BlockId, Callee, FuncId, InstId, InstKind, Program, ValueDef, ValueId};
use space::OptionId;

use crate::ProgramDominance;
use crate::options::{FxMap, SetId};
use crate::pointsto::{ALLOCATORS, CellId, libc_name};
use crate::static_taint::{StatementInfluence, is_copier};
use crate::wrappers::MemoryCopy;

/// A fact of the fixpoint that can hold options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fact {
    /// The statement influence of an instruction.
    Influence(InstId),
    /// The data taint of a value.
    Value(ValueId),
    /// The local control taint of a block.
    Control(BlockId),
    /// The decision ending a block: its control taint and the decided value's taint.
    Decision(BlockId),
    /// The context taint of a function (the control taint of its call sites).
    Context(FuncId),
    /// The contents of a memory cell (an object, or a struct field of one).
    Memory(CellId),
    /// The return value of a function.
    Return(FuncId),
}

/// One link of an explanation: `fact` holds the option because of the next link, through the
/// instruction `via` (a store, a call site, …) when there is one.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub fact: Fact,
    pub via: Option<InstId>,
    /// How the option got from the next link to this one ("operand", "loads from", …).
    pub how: &'static str,
}

/// Answers "why does option o reach this fact" over one analysis result.
pub struct Explainer<'a> {
    program: &'a Program,
    dominance: &'a ProgramDominance,
    si: &'a StatementInfluence,
    /// Stores and copying external calls, by every cell they write.
    writers: FxMap<CellId, Vec<InstId>>,
    /// Block copies, by every object (root) they copy fields into.
    block_copies: FxMap<u32, Vec<InstId>>,
    seeded_values: FxMap<ValueId, SetId>,
}

impl<'a> Explainer<'a> {
    pub fn new(
        program: &'a Program,
        dominance: &'a ProgramDominance,
        si: &'a StatementInfluence,
    ) -> Self {
        let pts = &si.facts.points_to;
        let mut writers: FxMap<CellId, Vec<InstId>> = FxMap::default();
        let mut block_copies: FxMap<u32, Vec<InstId>> = FxMap::default();
        for (i, inst) in program.insts.iter_enumerated() {
            let external = |pred: fn(&str) -> bool| {
                si.call_graph
                    .targets_of(i)
                    .iter()
                    .any(|&g| program.func(g).is_declaration && pred(&program.func(g).name))
            };
            let copy = block_copy(program, si, i);
            // The copy inside a copy wrapper: its call sites stand for it.
            let in_copy_wrapper = |i: InstId| pts.wrappers.copies(program.func_of(i)).is_some();
            let written = match &inst.kind {
                InstKind::Store { ptr, .. } => Some(*ptr),
                InstKind::Call { .. } if copy.is_some() => {
                    let (dst, _) = copy.expect("a copy");
                    for &c in pts.of(dst) {
                        block_copies.entry(pts.cell(c).root).or_default().push(i);
                    }
                    Some(dst)
                }
                InstKind::Call { args, .. } if external(is_copier) && !in_copy_wrapper(i) => {
                    args.first().copied()
                }
                _ => None,
            };
            for &c in written.map_or(&[][..], |p| pts.of(p)) {
                writers.entry(c).or_default().push(i);
            }
        }
        Explainer {
            program,
            dominance,
            si,
            writers,
            block_copies,
            seeded_values: si.facts.seeded_values.iter().copied().collect(),
        }
    }

    /// The memory facts a load through `ptr` consults (the solver's `read`).
    fn reads(&self, ptr: ValueId) -> Vec<Fact> {
        let pts = &self.si.facts.points_to;
        pts.of(ptr).iter().map(|&c| Fact::Memory(c)).collect()
    }

    /// The memory facts an external call reads through `ptr` (the solver's `read_objects`).
    fn reads_objects(&self, ptr: ValueId) -> Vec<Fact> {
        let pts = &self.si.facts.points_to;
        let mut out: Vec<Fact> = pts
            .of(ptr)
            .iter()
            .flat_map(|&c| pts.object_cells(c).iter().map(|&f| Fact::Memory(f)))
            .collect();
        out.dedup();
        out
    }

    /// The options a fact holds in the final fixpoint.
    pub fn taint(&self, fact: Fact) -> SetId {
        let si = self.si;
        match fact {
            Fact::Influence(i) => si.influence[i],
            Fact::Value(v) => si.value_taint[v],
            Fact::Control(b) => si.facts.block_taint[b],
            Fact::Decision(b) => {
                // Not interned as a union here: checked option by option in `holds`.
                si.facts.block_taint[b]
            }
            Fact::Context(f) => si.context[f],
            Fact::Memory(c) => si.facts.memory[c],
            Fact::Return(f) => si.facts.ret_taint[f],
        }
    }

    fn holds(&self, fact: Fact, o: OptionId) -> bool {
        let has = |s: SetId| self.si.sets.get(s).contains(o);
        match fact {
            Fact::Decision(b) => {
                has(self.taint(fact))
                    || self
                        .program
                        .terminator(b)
                        .and_then(|t| self.program.inst(t).kind.control_decision())
                        .is_some_and(|c| has(self.si.value_taint[c]))
            }
            _ => has(self.taint(fact)),
        }
    }

    /// Whether `fact` holds `o` from an option source directly.
    fn is_source(&self, fact: Fact, o: OptionId) -> bool {
        let has = |s: Option<&SetId>| s.is_some_and(|s| self.si.sets.get(*s).contains(o));
        match fact {
            Fact::Memory(c) => self
                .si
                .facts
                .seed_writes
                .iter()
                .any(|&(p, s)| self.si.facts.points_to.of(p).contains(&c) && has(Some(&s))),
            Fact::Value(v) => has(self.seeded_values.get(&v)),
            _ => false,
        }
    }

    /// The facts that may have given `fact` its options, with the instruction and the kind of
    /// flow through which.
    fn justifications(&self, fact: Fact) -> Vec<Link> {
        let p = self.program;
        let mut out = Vec::new();
        let mut push =
            |fact: Fact, via: Option<InstId>, how: &'static str| out.push(Link { fact, via, how });
        match fact {
            Fact::Influence(i) => {
                let inst = p.inst(i);
                push(Fact::Control(inst.block), None, "executes under");
                push(Fact::Context(p.func_of(i)), None, "function context");
                if let Some(c) = inst.kind.decision() {
                    push(Fact::Value(c), None, "decides on");
                }
            }
            Fact::Value(v) => match p.value(v) {
                ValueDef::Inst(i) => {
                    let inst = p.inst(*i);
                    push(Fact::Control(inst.block), Some(*i), "defined under");
                    match &inst.kind {
                        InstKind::Phi { incoming } => {
                            for &(x, from) in incoming {
                                push(Fact::Value(x), Some(*i), "phi operand");
                                push(Fact::Decision(from), Some(*i), "phi chosen by");
                            }
                        }
                        InstKind::Load { ptr } => {
                            push(Fact::Value(*ptr), Some(*i), "load address");
                            match self.si.facts.local_definitions.of(*i) {
                                // What this function stored there before (the solver's rule).
                                Some(stores) => {
                                    for &st in stores {
                                        if let InstKind::Store { value, ptr } = &p.inst(st).kind {
                                            push(Fact::Value(*value), Some(st), "stored before");
                                            push(Fact::Value(*ptr), Some(st), "store address");
                                            push(
                                                Fact::Control(p.inst(st).block),
                                                Some(st),
                                                "stored before under",
                                            );
                                        }
                                    }
                                }
                                None => {
                                    for m in self.reads(*ptr) {
                                        push(m, Some(*i), "loads from");
                                    }
                                }
                            }
                        }
                        InstKind::Call { args, callee } => {
                            if let Callee::Indirect(fp) = callee {
                                push(Fact::Value(*fp), Some(*i), "function pointer");
                            }
                            for &g in self.si.call_graph.targets_of(*i) {
                                // An allocator's fresh address carries none of its arguments
                                // (the solver's rule).
                                if p.func(g).is_declaration
                                    && !ALLOCATORS.contains(&libc_name(&p.func(g).name))
                                {
                                    for (k, &a) in args.iter().enumerate() {
                                        push(Fact::Value(a), Some(*i), "external call argument");
                                        if crate::pointsto::ignores_contents(&p.func(g).name, k) {
                                            continue;
                                        }
                                        for m in self.reads_objects(a) {
                                            push(m, Some(*i), "external call reads");
                                        }
                                    }
                                } else {
                                    // Return values are context-sensitive: what the callee
                                    // returns of its parameters comes from these arguments.
                                    for &a in args {
                                        push(Fact::Value(a), Some(*i), "argument returned");
                                        // ... and of what they point to (the solver's
                                        // `memory_behind`).
                                        for m in self.reads(a) {
                                            push(
                                                m,
                                                Some(*i),
                                                "read by the callee through argument",
                                            );
                                        }
                                    }
                                    push(Fact::Return(g), Some(*i), "returned by");
                                }
                            }
                        }
                        kind => kind.for_each_use(|u| push(Fact::Value(u), Some(*i), "operand")),
                    }
                }
                ValueDef::Param { func, index } => {
                    for &c in &self.si.call_graph.callers[*func] {
                        if let InstKind::Call { args, .. } = &p.inst(c).kind
                            && let Some(&a) = args.get(*index as usize)
                        {
                            push(Fact::Value(a), Some(c), "argument at call site");
                        }
                    }
                }
                _ => {}
            },
            Fact::Control(b) => {
                let f = p.block(b).func;
                if let Some(dom) = self.dominance.get(f) {
                    let func = p.func(f);
                    for &a in &dom.control_deps[p.block(b).local as usize] {
                        let d = func.blocks[a as usize];
                        push(Fact::Decision(d), p.terminator(d), "control dependent on");
                    }
                }
            }
            Fact::Decision(b) => {
                push(Fact::Control(b), None, "decision under");
                if let Some(t) = p.terminator(b)
                    && let Some(c) = p.inst(t).kind.control_decision()
                {
                    push(Fact::Value(c), Some(t), "decides on");
                }
            }
            Fact::Context(f) => {
                for &c in &self.si.call_graph.callers[f] {
                    push(Fact::Control(p.inst(c).block), Some(c), "called under");
                    push(Fact::Context(p.func_of(c)), Some(c), "called from");
                    if let InstKind::Call {
                        callee: Callee::Indirect(fp),
                        ..
                    } = &p.inst(c).kind
                    {
                        push(Fact::Value(*fp), Some(c), "called through pointer");
                    }
                }
            }
            Fact::Memory(c) => {
                let pts = &self.si.facts.points_to;
                let mut writes: Vec<InstId> = self.writers.get(&c).cloned().unwrap_or_default();
                // A field of an object gets the same field of the objects block-copied into it.
                let field = pts.cell(c).field;
                if field.is_some() {
                    writes.extend(
                        self.block_copies
                            .get(&pts.cell(c).root)
                            .into_iter()
                            .flatten(),
                    );
                }
                for w in writes {
                    let inst = p.inst(w);
                    // A small helper's write through a parameter is made at its call sites,
                    // into what each passes, under its control and context
                    // (`static_taint::call_sites`).
                    if let Some(&(k, src)) = self.si.facts.written_at_call_sites.get(&w) {
                        for &site in &self.si.call_graph.callers[p.func_of(w)] {
                            let InstKind::Call { args, .. } = &p.inst(site).kind else {
                                continue;
                            };
                            let Some(&dst) = args.get(k) else { continue };
                            let writes_cell = pts
                                .of(dst)
                                .iter()
                                .any(|&d| d == c || pts.object_cells(d).contains(&c));
                            if !writes_cell {
                                continue;
                            }
                            let at = Some(site);
                            push(
                                Fact::Control(p.inst(site).block),
                                at,
                                "stored at call site under",
                            );
                            push(
                                Fact::Context(p.func_of(site)),
                                at,
                                "stored in context at call site",
                            );
                            for &a in args {
                                push(Fact::Value(a), at, "argument at call site");
                            }
                            match (&inst.kind, block_copy(p, self.si, w)) {
                                (InstKind::Store { value, .. }, _) => {
                                    push(Fact::Value(*value), Some(w), "stored value");
                                }
                                (_, Some((_, from))) => {
                                    let from =
                                        src.and_then(|j| args.get(j).copied()).unwrap_or(from);
                                    for m in self.reads_objects(from) {
                                        push(m, at, "copied at call site from");
                                    }
                                }
                                (InstKind::Call { args: copied, .. }, None) => {
                                    for &a in &copied[1..] {
                                        push(Fact::Value(a), Some(w), "copied value");
                                    }
                                }
                                _ => {}
                            }
                        }
                        push(Fact::Control(inst.block), Some(w), "stored under");
                        continue;
                    }
                    match &inst.kind {
                        InstKind::Store { value, ptr } => {
                            push(Fact::Value(*value), Some(w), "stored value");
                            push(Fact::Value(*ptr), Some(w), "store address");
                        }
                        InstKind::Call { args, .. } => {
                            for &a in args {
                                push(Fact::Value(a), Some(w), "copied value");
                            }
                            match block_copy(p, self.si, w) {
                                Some((dst, src)) => {
                                    let into_cell = pts.of(dst).contains(&c);
                                    if into_cell {
                                        for m in self.reads(src) {
                                            push(m, Some(w), "copied from");
                                        }
                                    }
                                    if let Some((st, f)) = field {
                                        for &s in pts.of(src) {
                                            if let Some(sf) = pts.field_cell(s, st, f) {
                                                push(Fact::Memory(sf), Some(w), "copied from");
                                            }
                                        }
                                    }
                                }
                                None => {
                                    for &a in args {
                                        for m in self.reads_objects(a) {
                                            if m != fact {
                                                push(m, Some(w), "copied from");
                                            }
                                        }
                                    }
                                }
                            }
                        }
                        _ => {}
                    }
                    push(Fact::Control(inst.block), Some(w), "stored under");
                    let facts = &self.si.facts;
                    // A function on the way out of the program stores without its context
                    // (the solver's rule), and so does a small helper into its own objects.
                    if !facts.dying[p.func_of(w)] && !facts.written_without_context[w] {
                        push(Fact::Context(p.func_of(w)), Some(w), "stored in context");
                    }
                }
            }
            Fact::Return(f) => {
                for &b in &p.func(f).blocks {
                    if let Some(t) = p.terminator(b)
                        && let InstKind::Return { value: Some(v) } = &p.inst(t).kind
                    {
                        push(Fact::Value(*v), Some(t), "returned value");
                        push(Fact::Control(b), Some(t), "returned under");
                    }
                }
            }
        }
        out
    }

    /// A shortest chain from `fact` back to a source of option `o`: the first link is `fact`
    /// itself, the last one a source. `None` if `fact` does not hold `o`.
    pub fn explain(&self, fact: Fact, o: OptionId) -> Option<Vec<Link>> {
        if !self.holds(fact, o) {
            return None;
        }
        let mut parent: FxMap<Fact, Option<(Fact, Link)>> = FxMap::default();
        parent.insert(fact, None);
        let mut queue = VecDeque::from([fact]);
        while let Some(x) = queue.pop_front() {
            if self.is_source(x, o) {
                // Walk back to the query.
                let mut chain = vec![Link {
                    fact: x,
                    via: None,
                    how: "option source",
                }];
                let mut cur = x;
                while let Some(Some((from, link))) = parent.get(&cur) {
                    let mut l = link.clone();
                    l.fact = *from;
                    chain.push(l);
                    cur = *from;
                }
                chain.reverse();
                // Each link's `how` describes how it got the option from the next one.
                return Some(chain);
            }
            for link in self.justifications(x) {
                if !parent.contains_key(&link.fact) && self.holds(link.fact, o) {
                    parent.insert(link.fact, Some((x, link.clone())));
                    queue.push_back(link.fact);
                }
            }
        }
        None
    }

    /// One line describing a fact, with the function and source line where it lives.
    pub fn describe(&self, fact: Fact) -> String {
        let p = self.program;
        let at = |i: InstId| {
            format!(
                "{} in {}",
                p.describe_loc(p.inst(i).loc),
                p.func(p.func_of(i)).name
            )
        };
        match fact {
            Fact::Influence(i) => format!("influence of {i} ({})", at(i)),
            Fact::Value(v) => match p.value(v) {
                ValueDef::Inst(i) => format!("value {v} ({})", at(*i)),
                ValueDef::Param { func, index } => {
                    format!("parameter {index} of {}", p.func(*func).name)
                }
                ValueDef::Global(g) => format!("address of global {}", p.globals[*g].name),
                other => format!("value {v} ({other:?})"),
            },
            Fact::Control(b) => format!("control of block {b} in {}", p.func(p.block(b).func).name),
            Fact::Decision(b) => match p.terminator(b) {
                Some(t) => format!("decision {t} ({})", at(t)),
                None => format!("decision of {b}"),
            },
            Fact::Context(f) => format!("context of {}", p.func(f).name),
            Fact::Memory(c) => format!(
                "memory {}",
                self.si.facts.points_to.describe(self.program, c)
            ),
            Fact::Return(f) => format!("return value of {}", p.func(f).name),
        }
    }
}

/// The (destination, source) of the block copy a call makes, as the solvers see it: `memcpy`
/// and friends, or a copy wrapper's call site (the copy inside the wrapper is not one).
fn block_copy(
    program: &Program,
    si: &StatementInfluence,
    call: InstId,
) -> Option<(ValueId, ValueId)> {
    let wrappers = &si.facts.points_to.wrappers;
    si.call_graph
        .targets_of(call)
        .iter()
        .find_map(|&g| match wrappers.copy_at(program, call, g) {
            MemoryCopy::Block { dst, src } => Some((dst, src)),
            _ => None,
        })
}
