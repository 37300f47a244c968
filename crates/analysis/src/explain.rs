//! Why an option influences an instruction: a shortest chain of facts of the taint fixpoint
//! from the instruction back to an option source.
//!
//! The taint analysis is a monotone fixpoint, so every option in a final fact is justified by
//! some earlier fact that holds it: an operand, the memory class a load reads, the decision a
//! block is control dependent on, the call site that gives a function its context, the store
//! that wrote a memory class, … [`Explainer::explain`] searches these justifications backwards
//! (breadth first, so the chain is a shortest one) until it reaches a source. It is a
//! diagnostic for imprecision: the chain names the memory class, the decision or the call site
//! through which an option arrived (`cargo run --release -p frontend --example bench_sqlite
//! -- --explain 20`).

use std::collections::VecDeque;

use ir::{BlockId, Callee, FuncId, InstId, InstKind, Program, ValueDef, ValueId};
use space::OptionId;

use crate::ProgramDominance;
use crate::options::{FxMap, SetId};
use crate::taint::{Access, StatementInfluence, access_through, is_block_copy, is_copier};

const NONE: u32 = u32::MAX;

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
    /// The contents of a points-to class, however written.
    Memory(u32),
    /// What was written to a points-to class through whole-object accesses.
    WholeMemory(u32),
    /// What was written to a struct field of the objects of a class (`p->field` with `p`
    /// pointing into the class).
    FieldMemory(u32, ir::StructId, u32),
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
    /// Stores and copying external calls with the access they write through, by every class
    /// that access writes (see [`Explainer::writes`]).
    writers: FxMap<u32, Vec<(InstId, Access)>>,
    /// The option sources' memory, as accesses.
    seeds: Vec<(Access, SetId)>,
    seeded_values: FxMap<ValueId, SetId>,
}

impl<'a> Explainer<'a> {
    pub fn new(
        program: &'a Program,
        dominance: &'a ProgramDominance,
        si: &'a StatementInfluence,
    ) -> Self {
        let class = |v: ValueId| {
            let c = si.facts.value_class[v.index()];
            (c != NONE).then_some(c)
        };
        let mut writers: FxMap<u32, Vec<(InstId, Access)>> = FxMap::default();
        for (k, inst) in program.insts.iter().enumerate() {
            let i = InstId(k as u32);
            let written = match &inst.kind {
                InstKind::Store { ptr, .. } => Some(*ptr),
                InstKind::Call { args, .. }
                    if si.call_graph.targets_of(i).iter().any(|&g| {
                        program.func(g).is_declaration && is_copier(&program.func(g).name)
                    }) =>
                {
                    args.first().copied()
                }
                _ => None,
            };
            if let Some(access) = written.and_then(|p| access_through(program, class, p)) {
                let (a, b) = match access {
                    Access::Whole(c) => (c, c),
                    Access::Field {
                        class, field_class, ..
                    } => (class, field_class),
                };
                writers.entry(a).or_default().push((i, access));
                if b != a {
                    writers.entry(b).or_default().push((i, access));
                }
            }
        }
        let seeds = si
            .facts
            .seed_writes
            .iter()
            .filter_map(|&(p, s)| Some((access_through(program, class, p)?, s)))
            .collect();
        Explainer {
            program,
            dominance,
            si,
            writers,
            seeds,
            seeded_values: si.facts.seeded_values.iter().copied().collect(),
        }
    }

    /// Whether a write through `access` adds to the memory `fact` (the solver's `write`).
    fn writes(access: Access, fact: Fact) -> bool {
        match (access, fact) {
            (Access::Whole(c), Fact::Memory(m) | Fact::WholeMemory(m)) => c == m,
            (
                Access::Field {
                    class, field_class, ..
                },
                Fact::Memory(m),
            ) => class == m || field_class == m,
            (
                Access::Field {
                    class, field_class, ..
                },
                Fact::WholeMemory(m),
            ) => field_class == m && field_class != class,
            (
                Access::Field {
                    class,
                    structure,
                    field,
                    ..
                },
                Fact::FieldMemory(c, s, f),
            ) => class == c && structure == s && field == f,
            _ => false,
        }
    }

    /// Whether `w`, writing through `access`, is a block copy between whole objects that
    /// copies the source's field `fact` (the solver's `copy_block`).
    fn copies_fields(&self, w: InstId, access: Access, fact: Fact) -> bool {
        let (Access::Whole(d), Fact::FieldMemory(c, ..)) = (access, fact) else {
            return false;
        };
        let p = self.program;
        d == c
            && matches!(&p.inst(w).kind, InstKind::Call { args, .. }
            if args.len() >= 2
                && matches!(access_through(p, |v| self.class(v), args[1]), Some(Access::Whole(_)))
                && self.si.call_graph.targets_of(w).iter().any(|&g| {
                    p.func(g).is_declaration && is_block_copy(&p.func(g).name)
                }))
    }

    /// The memory facts a read through `ptr` consults (the solver's `read`).
    fn reads(&self, ptr: ValueId) -> Vec<Fact> {
        let class = |v: ValueId| self.class(v);
        let mut out = Vec::new();
        match access_through(self.program, class, ptr) {
            None => {}
            Some(Access::Whole(c)) => out.push(Fact::Memory(c)),
            Some(Access::Field {
                class: c,
                structure,
                field,
                field_class,
                base,
            }) => {
                out.push(Fact::FieldMemory(c, structure, field));
                out.push(Fact::WholeMemory(c));
                if field_class != c {
                    out.push(Fact::Memory(field_class));
                }
                let mut outer = base;
                while let Some(Access::Field {
                    class: c,
                    structure,
                    field,
                    base,
                    ..
                }) = access_through(self.program, class, outer)
                {
                    out.push(Fact::FieldMemory(c, structure, field));
                    out.push(Fact::WholeMemory(c));
                    outer = base;
                }
            }
        }
        out
    }

    /// The options a fact holds in the final fixpoint.
    pub fn taint(&self, fact: Fact) -> SetId {
        let si = self.si;
        match fact {
            Fact::Influence(i) => si.influence[i.index()],
            Fact::Value(v) => si.value_taint[v.index()],
            Fact::Control(b) => si.facts.block_taint[b.index()],
            Fact::Decision(b) => {
                // Not interned as a union here: checked option by option in `holds`.
                si.facts.block_taint[b.index()]
            }
            Fact::Context(f) => si.context[f.index()],
            Fact::Memory(c) => si.facts.memory.get(c as usize).copied().unwrap_or_default(),
            Fact::WholeMemory(c) => si.facts.whole.get(c as usize).copied().unwrap_or_default(),
            Fact::FieldMemory(c, st, f) => si
                .facts
                .fields
                .get(&(c, st, f))
                .copied()
                .unwrap_or_default(),
            Fact::Return(f) => si.facts.ret_taint[f.index()],
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
                        .and_then(|t| self.program.inst(t).kind.decision())
                        .is_some_and(|c| has(self.si.value_taint[c.index()]))
            }
            _ => has(self.taint(fact)),
        }
    }

    /// Whether `fact` holds `o` from an option source directly.
    fn is_source(&self, fact: Fact, o: OptionId) -> bool {
        let has = |s: Option<&SetId>| s.is_some_and(|s| self.si.sets.get(*s).contains(o));
        match fact {
            Fact::Memory(_) | Fact::WholeMemory(_) | Fact::FieldMemory(..) => self
                .seeds
                .iter()
                .any(|&(a, s)| Self::writes(a, fact) && has(Some(&s))),
            Fact::Value(v) => has(self.seeded_values.get(&v)),
            _ => false,
        }
    }

    fn class(&self, v: ValueId) -> Option<u32> {
        let c = self.si.facts.value_class[v.index()];
        (c != NONE).then_some(c)
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
                            for m in self.reads(*ptr) {
                                push(m, Some(*i), "loads from");
                            }
                        }
                        InstKind::Call { args, callee } => {
                            if let Callee::Indirect(fp) = callee {
                                push(Fact::Value(*fp), Some(*i), "function pointer");
                            }
                            for &g in self.si.call_graph.targets_of(*i) {
                                if p.func(g).is_declaration {
                                    for &a in args {
                                        push(Fact::Value(a), Some(*i), "external call argument");
                                        for m in self.reads(a) {
                                            push(m, Some(*i), "external call reads");
                                        }
                                    }
                                } else {
                                    push(Fact::Return(g), Some(*i), "returned by");
                                }
                            }
                        }
                        kind => kind.for_each_use(|u| push(Fact::Value(u), Some(*i), "operand")),
                    }
                }
                ValueDef::Param { func, index } => {
                    for &c in &self.si.call_graph.callers[func.index()] {
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
                    && let Some(c) = p.inst(t).kind.decision()
                {
                    push(Fact::Value(c), Some(t), "decides on");
                }
            }
            Fact::Context(f) => {
                for &c in &self.si.call_graph.callers[f.index()] {
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
            Fact::Memory(c) | Fact::WholeMemory(c) | Fact::FieldMemory(c, ..) => {
                let writers = self.writers.get(&c).map_or(&[][..], |v| &v[..]);
                for &(w, access) in writers {
                    if !Self::writes(access, fact) && !self.copies_fields(w, access, fact) {
                        continue;
                    }
                    let inst = p.inst(w);
                    match &inst.kind {
                        InstKind::Store { value, ptr } => {
                            push(Fact::Value(*value), Some(w), "stored value");
                            push(Fact::Value(*ptr), Some(w), "store address");
                        }
                        InstKind::Call { args, .. } if self.copies_fields(w, access, fact) => {
                            // Field by field from the source object.
                            if let (Fact::FieldMemory(_, st, f), Some(src)) =
                                (fact, args.get(1).and_then(|&a| self.class(a)))
                            {
                                push(Fact::FieldMemory(src, st, f), Some(w), "copied from");
                            }
                        }
                        InstKind::Call { args, .. } => {
                            for &a in args {
                                push(Fact::Value(a), Some(w), "copied value");
                                for m in self.reads(a) {
                                    if m != fact {
                                        push(m, Some(w), "copied from");
                                    }
                                }
                            }
                        }
                        _ => {}
                    }
                    push(Fact::Control(inst.block), Some(w), "stored under");
                    push(Fact::Context(p.func_of(w)), Some(w), "stored in context");
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
                ValueDef::Global(g) => format!("address of global {}", p.globals[g.index()].name),
                other => format!("value {v} ({other:?})"),
            },
            Fact::Control(b) => format!("control of block {b} in {}", p.func(p.block(b).func).name),
            Fact::Decision(b) => match p.terminator(b) {
                Some(t) => format!("decision {t} ({})", at(t)),
                None => format!("decision of {b}"),
            },
            Fact::Context(f) => format!("context of {}", p.func(f).name),
            Fact::Memory(c) => format!("memory class #{c} ({})", self.describe_class(c)),
            Fact::WholeMemory(c) => format!(
                "memory class #{c} written as a whole ({})",
                self.describe_class(c)
            ),
            Fact::FieldMemory(c, st, f) => {
                let st = &p.structs[st.index()];
                let field = st
                    .fields
                    .get(f as usize)
                    .filter(|n| !n.is_empty())
                    .map_or_else(|| f.to_string(), |n| n.clone());
                format!(
                    "field {}.{field} of memory class #{c} ({})",
                    st.name,
                    self.describe_class(c)
                )
            }
            Fact::Return(f) => format!("return value of {}", p.func(f).name),
        }
    }

    /// Up to three objects of a points-to class (globals, allocation sites) and how many more.
    pub fn describe_class(&self, class: u32) -> String {
        let p = self.program;
        let mut names = Vec::new();
        let mut count = 0;
        for g in &p.globals {
            if self.class(g.address) == Some(class) {
                count += 1;
                if names.len() < 3 {
                    names.push(format!("@{}", g.name));
                }
            }
        }
        for inst in &p.insts {
            let is_site = matches!(inst.kind, InstKind::Alloca { .. })
                || matches!(&inst.kind, InstKind::Call { callee: Callee::Direct(g), .. }
                    if crate::taint::ALLOCATORS.contains(&p.func(*g).name.as_str()));
            if is_site
                && let Some(r) = inst.result
                && self.class(r) == Some(class)
            {
                count += 1;
                if names.len() < 3 {
                    names.push(format!(
                        "alloc in {} {}",
                        p.func(p.block(inst.block).func).name,
                        p.describe_loc(inst.loc)
                    ));
                }
            }
        }
        if count > names.len() {
            names.push(format!("… {} objects", count));
        }
        if names.is_empty() {
            "no named object; a field or pointee".into()
        } else {
            names.join(", ")
        }
    }
}
