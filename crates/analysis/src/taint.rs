//! Static option-taint analysis: which options may influence whether and how each
//! instruction executes (the statement-influence map SI of ConfigCrusher §3.1).
//!
//! Two phases, both linear-ish in program size:
//! 1. Points-to, Steensgaard-style (unification, almost linear): every pointer value points
//!    into one *class* of abstract objects (allocation sites, globals, heap calls); a class has
//!    one class for its pointed-to contents and one per struct field (field sensitivity), and
//!    the functions whose addresses it holds (indirect calls). Arrays collapse to their base.
//! 2. Taint, a monotone fixpoint with a function-level worklist: value taints (SSA, phi,
//!    select, loads from classes, arguments → parameters, returns → call results), memory
//!    taints per class (stores), local control taint per block (the decisions it is control
//!    dependent on, transitively, with their data taint), and a context taint per function
//!    (the union over call sites of the control taint there). Implicit flows: values defined
//!    and stores made under a tainted decision carry its taint; a phi at a join carries the
//!    taint of the decisions choosing its incoming edge.
//!
//! SI(instruction) = its local influence (the control taint of its block, plus the data taint
//! of the decided value for a conditional terminator) ∪ its function's context taint — but
//! only when the local influence is non-empty. A statement no decision of its own function
//! influences runs whenever the function runs, so its time belongs to the region open at the
//! call site (§3.3: a callee only influenced through its context counts in its caller's
//! region); without this rule every statement of a helper called under any tainted decision
//! would carry that decision's options. Context-insensitive data flow: return values do not
//! carry the callee's context (each call site adds its own control taint), stores do.
//!
//! Precision choices (see `analysis::explain` and the sqlite benchmark's `--explain`):
//! - Memory taint is kept per points-to class *and* per (struct type, field) for accesses
//!   through a field address ([`Access`]): unification collapses a struct with its fields as
//!   soon as one pointer variable may hold both, and on real programs one class then holds
//!   most of the heap. Whole-object accesses (other pointers, external calls such as memcpy)
//!   read everything written to the class and write the whole class. Field 0 shares its
//!   struct's address and counts as the whole object. Not seen: a field written through one
//!   struct type and read through another at the same offset (type punning), and a struct
//!   copied as a whole into a field then read through a pointer that no longer shows the
//!   enclosing field address.
//! - Indirect calls reach only the class's functions of the call's arity (or, when none has
//!   it, those with fewer parameters: variadic functions).

use std::collections::VecDeque;

use ir::{Callee, FuncId, InstId, InstKind, Program, StructId, ValueDef, ValueId};
use space::OptionId;

use crate::ProgramDominance;
use crate::options::{FxMap, SetId, SetInterner};
use crate::sources::{ResolvedSource, ResolvedSources};

const NONE: u32 = u32::MAX;

/// Allocation functions: their result is a fresh heap object per call site.
pub const ALLOCATORS: &[&str] = &["malloc", "calloc", "realloc", "strdup", "strndup"];
/// External functions that copy data from their other arguments into the first one's object.
const COPIERS: &[&str] = &[
    "memcpy", "memmove", "strcpy", "strncpy", "strcat", "strncat", "sprintf", "snprintf", "sscanf",
    "memset",
];

/// Copies of memory blocks, which keep the source's layout (`memcpy`, struct assignment).
pub(crate) fn is_block_copy(name: &str) -> bool {
    matches!(name, "memcpy" | "memmove")
        || name.starts_with("llvm.memcpy")
        || name.starts_with("llvm.memmove")
}

pub(crate) fn is_copier(name: &str) -> bool {
    COPIERS.contains(&name) || name.starts_with("llvm.memcpy") || name.starts_with("llvm.memmove")
}

/// Unification-based points-to classes.
struct PointsTo {
    parent: Vec<u32>,
    size: Vec<u32>,
    content: Vec<u32>,
    fields: Vec<Vec<(u32, u32)>>,
    funcs: Vec<Vec<FuncId>>,
    val_class: Vec<u32>,
    ret_class: Vec<u32>,
    /// (destination, source) classes of block copies (`memcpy`, struct assignment).
    copies: Vec<(u32, u32)>,
}

impl PointsTo {
    /// Makes each copy's destination hold what its source holds: the contents are unified,
    /// and so are the two objects' fields (their sub-objects: a struct nested in a copied
    /// struct is one class for both sides), until nothing changes — unifying may add fields
    /// an earlier copy must pair too. The copied objects themselves stay apart.
    fn settle_copies(&mut self) {
        // Classes are only created and merged, so (classes, merged classes) grows until
        // a pass changes nothing.
        let state = |pts: &PointsTo| {
            let merged = pts
                .parent
                .iter()
                .enumerate()
                .filter(|&(c, &p)| c as u32 != p)
                .count();
            (pts.parent.len(), merged)
        };
        loop {
            let before = state(self);
            for k in 0..self.copies.len() {
                let (a, b) = self.copies[k];
                let (a, b) = (self.find(a), self.find(b));
                if a == b {
                    continue;
                }
                let (ca, cb) = (self.content(a), self.content(b));
                self.unify(ca, cb);
                let (a, b) = (self.find(a), self.find(b));
                let mut indices: Vec<u32> = self.fields[a as usize]
                    .iter()
                    .chain(&self.fields[b as usize])
                    .map(|(i, _)| *i)
                    .collect();
                indices.sort_unstable();
                indices.dedup();
                for i in indices {
                    let (fa, fb) = (self.field(a, i), self.field(b, i));
                    self.unify(fa, fb);
                }
            }
            if state(self) == before {
                break;
            }
        }
    }

    fn fresh(&mut self) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(id);
        self.size.push(1);
        self.content.push(NONE);
        self.fields.push(Vec::new());
        self.funcs.push(Vec::new());
        id
    }

    fn find(&mut self, mut c: u32) -> u32 {
        while self.parent[c as usize] != c {
            let p = self.parent[c as usize];
            self.parent[c as usize] = self.parent[p as usize];
            c = p;
        }
        c
    }

    fn find_const(&self, mut c: u32) -> u32 {
        while self.parent[c as usize] != c {
            c = self.parent[c as usize];
        }
        c
    }

    fn class_of(&mut self, program: &Program, v: ValueId) -> u32 {
        let c = self.val_class[v.index()];
        if c != NONE {
            return self.find(c);
        }
        let c = self.fresh();
        if let ValueDef::Function(f) = program.value(v) {
            self.funcs[c as usize].push(*f);
        }
        self.val_class[v.index()] = c;
        c
    }

    /// The class of a value if it has one, without creating it.
    fn existing_class(&self, v: ValueId) -> Option<u32> {
        let c = self.val_class[v.index()];
        (c != NONE).then(|| self.find_const(c))
    }

    fn content(&mut self, c: u32) -> u32 {
        let c = self.find(c);
        let x = self.content[c as usize];
        if x != NONE {
            return self.find(x);
        }
        let x = self.fresh();
        self.content[c as usize] = x;
        x
    }

    fn field(&mut self, c: u32, index: u32) -> u32 {
        let c = self.find(c);
        if let Some(&(_, f)) = self.fields[c as usize].iter().find(|(i, _)| *i == index) {
            return self.find(f);
        }
        let f = self.fresh();
        self.fields[c as usize].push((index, f));
        f
    }

    fn unify(&mut self, a: u32, b: u32) {
        let mut pending = vec![(a, b)];
        while let Some((a, b)) = pending.pop() {
            let (mut a, mut b) = (self.find(a), self.find(b));
            if a == b {
                continue;
            }
            if self.size[a as usize] < self.size[b as usize] {
                std::mem::swap(&mut a, &mut b);
            }
            self.parent[b as usize] = a;
            self.size[a as usize] += self.size[b as usize];
            let bc = self.content[b as usize];
            if bc != NONE {
                let ac = self.content[a as usize];
                if ac == NONE {
                    self.content[a as usize] = bc;
                } else {
                    pending.push((ac, bc));
                }
            }
            for (i, bf) in std::mem::take(&mut self.fields[b as usize]) {
                match self.fields[a as usize].iter().find(|(j, _)| *j == i) {
                    Some(&(_, af)) => pending.push((af, bf)),
                    None => self.fields[a as usize].push((i, bf)),
                }
            }
            for f in std::mem::take(&mut self.funcs[b as usize]) {
                if !self.funcs[a as usize].contains(&f) {
                    self.funcs[a as usize].push(f);
                }
            }
        }
    }

    /// Unifies the classes of two values unless one is a constant (a shared constant such as
    /// `0` would otherwise glue the whole program together).
    fn unify_values(&mut self, program: &Program, a: ValueId, b: ValueId) {
        if is_constant(program, a) || is_constant(program, b) {
            return;
        }
        let (ca, cb) = (self.class_of(program, a), self.class_of(program, b));
        self.unify(ca, cb);
    }
}

fn is_constant(program: &Program, v: ValueId) -> bool {
    matches!(
        program.value(v),
        ValueDef::ConstInt(_) | ValueDef::ConstFloat(_) | ValueDef::ConstStr(_) | ValueDef::Undef
    )
}

/// How a pointer reaches memory, for field-sensitive memory taint on top of the points-to
/// classes. Unification collapses a struct object with its fields whenever one pointer
/// variable may hold both (a `void *` helper parameter, a cast), and then one class holds most
/// of a program's heap; keying memory taint by the struct type and field an access goes
/// through keeps `cfg->szLookaside` apart from `cfg->mutex` even inside such a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Through a pointer that is not a field address: the whole object (of this class).
    Whole(u32),
    /// Through `&base->field` (possibly indexed further: an array field), where `base`
    /// points into `class` and the field itself is `field_class`.
    Field {
        class: u32,
        structure: StructId,
        field: u32,
        field_class: u32,
        base: ValueId,
    },
}

/// The access a pointer makes: a field address (looking through array indexing into the
/// field), or the whole object of its class. `None` for values without a class (constants).
fn access_of(program: &Program, pts: &PointsTo, ptr: ValueId) -> Option<Access> {
    access_through(program, |v| pts.existing_class(v), ptr)
}

/// [`access_of`] with the root class of each value given by `class` (also used by
/// [`crate::explain`] on the solver's final classes).
pub(crate) fn access_through(
    program: &Program,
    class: impl Fn(ValueId) -> Option<u32>,
    ptr: ValueId,
) -> Option<Access> {
    let own = class(ptr)?;
    let mut p = ptr;
    // Bounded: index chains are short at -O0.
    for _ in 0..8 {
        let ValueDef::Inst(i) = program.value(p) else {
            break;
        };
        match &program.inst(*i).kind {
            InstKind::IndexAddr { base, .. } => p = *base,
            // Field 0 shares its struct's address, and the frontend turns an all-zero `getelementptr`
            // into a plain pointer: it is accessed both ways, so it is not a field of its own.
            InstKind::FieldAddr { field: 0, .. } => break,
            InstKind::FieldAddr {
                base,
                structure,
                field,
            } => {
                return Some(match class(*base) {
                    Some(class) => Access::Field {
                        class,
                        structure: *structure,
                        field: *field,
                        field_class: own,
                        base: *base,
                    },
                    None => Access::Whole(own),
                });
            }
            _ => break,
        }
    }
    Some(Access::Whole(own))
}

/// Every class a read through `ptr` consults (so that its function is revisited when one of
/// them changes).
fn touched_classes(program: &Program, pts: &PointsTo, ptr: ValueId, out: &mut Vec<u32>) {
    let mut p = ptr;
    while let Some(access) = access_of(program, pts, p) {
        match access {
            Access::Whole(c) => {
                out.push(c);
                break;
            }
            Access::Field {
                class,
                field_class,
                base,
                ..
            } => {
                out.push(class);
                out.push(field_class);
                p = base;
            }
        }
    }
}

/// The resolved targets of every call instruction (direct, and indirect through points-to).
#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    /// Sorted by instruction.
    pub targets: Vec<(InstId, Vec<FuncId>)>,
    /// For each function, the call instructions that may call it.
    pub callers: Vec<Vec<InstId>>,
}

impl CallGraph {
    pub fn targets_of(&self, call: InstId) -> &[FuncId] {
        match self.targets.binary_search_by_key(&call, |(i, _)| *i) {
            Ok(k) => &self.targets[k].1,
            Err(_) => &[],
        }
    }
}

/// A conditional branch or switch whose decided value carries option taint.
#[derive(Clone, Debug, PartialEq)]
pub struct TaintedDecision {
    pub inst: InstId,
    /// Data taint of the decided value.
    pub options: SetId,
    pub loc: ir::DebugLoc,
}

/// The statement-influence map and what it was computed from.
#[derive(Clone, Debug)]
pub struct StatementInfluence {
    pub sets: SetInterner,
    /// SI per instruction (indexed by `InstId`).
    pub influence: Vec<SetId>,
    /// Data taint per value.
    pub value_taint: Vec<SetId>,
    /// Context taint per function.
    pub context: Vec<SetId>,
    pub decisions: Vec<TaintedDecision>,
    pub call_graph: CallGraph,
    /// Number of points-to classes and worklist steps, for benchmarks.
    pub classes: usize,
    pub function_visits: usize,
    /// The solver's final facts, kept so that [`crate::explain`] can say why an option
    /// reaches an instruction.
    pub facts: TaintFacts,
}

/// The fixpoint's intermediate facts: enough to rebuild a justification for every option in
/// the statement-influence map (see [`crate::explain`]).
#[derive(Clone, Debug, Default)]
pub struct TaintFacts {
    /// Root points-to class of each value (`u32::MAX`: none).
    pub value_class: Vec<u32>,
    /// Taint of the contents of each points-to class (indexed by root class), however written.
    pub memory: Vec<SetId>,
    /// Taint written to each class through whole-object accesses (not field addresses).
    pub whole: Vec<SetId>,
    /// Taint written through field addresses, by (class of the base, struct, field).
    pub fields: FxMap<(u32, StructId, u32), SetId>,
    /// Local control taint of each block (the decisions it is control dependent on).
    pub block_taint: Vec<SetId>,
    /// Taint of each function's return value.
    pub ret_taint: Vec<SetId>,
    /// The option sources' memory: addresses written with the options they hold.
    pub seed_writes: Vec<(ValueId, SetId)>,
    /// Values seeded directly (results of option-returning calls).
    pub seeded_values: Vec<(ValueId, SetId)>,
}

impl StatementInfluence {
    pub fn of(&self, inst: InstId) -> &crate::OptionSet {
        self.sets.get(self.influence[inst.index()])
    }

    /// Options that influence at least one instruction.
    pub fn relevant_options(&self) -> crate::OptionSet {
        let mut seen = vec![false; self.sets.len()];
        let mut out = crate::OptionSet::new();
        for s in &self.influence {
            if !seen[s.0 as usize] {
                seen[s.0 as usize] = true;
                out = out.union(self.sets.get(*s));
            }
        }
        out
    }

    /// The distinct non-empty influence sets (the interactions GI), in first-seen order.
    pub fn interactions(&self) -> Vec<SetId> {
        let mut seen = vec![false; self.sets.len()];
        let mut out = Vec::new();
        for s in &self.influence {
            if *s != SetId::EMPTY && !seen[s.0 as usize] {
                seen[s.0 as usize] = true;
                out.push(*s);
            }
        }
        out
    }
}

/// Computes the statement-influence map of a program from its option sources.
pub fn analyse(
    program: &Program,
    dominance: &ProgramDominance,
    sources: &ResolvedSources,
) -> StatementInfluence {
    let mut pts = PointsTo {
        parent: Vec::new(),
        size: Vec::new(),
        content: Vec::new(),
        fields: Vec::new(),
        funcs: Vec::new(),
        val_class: vec![NONE; program.values.len()],
        ret_class: Vec::new(),
        copies: Vec::new(),
    };
    for _ in &program.functions {
        let c = pts.fresh();
        pts.ret_class.push(c);
    }
    let func_names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
    let wrappers = crate::wrappers::Wrappers::find(program);

    // Phase 1: points-to.
    for g in &program.globals {
        for &r in &g.initializer_refs {
            let gc = pts.class_of(program, g.address);
            let content = pts.content(gc);
            let rc = pts.class_of(program, r);
            pts.unify(content, rc);
        }
    }
    let mut indirect = Vec::new();
    for (fi, func) in program.functions.iter().enumerate() {
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                let inst = program.inst(i);
                let res = inst.result;
                match &inst.kind {
                    InstKind::Op { op, args } => {
                        if *op != ir::OpKind::Compare
                            && let Some(r) = res
                        {
                            for &a in args {
                                pts.unify_values(program, r, a);
                            }
                        }
                    }
                    InstKind::Phi { incoming } => {
                        for &(v, _) in incoming {
                            pts.unify_values(program, res.unwrap_or(v), v);
                        }
                    }
                    InstKind::Select {
                        if_true, if_false, ..
                    } => {
                        if let Some(r) = res {
                            pts.unify_values(program, r, *if_true);
                            pts.unify_values(program, r, *if_false);
                        }
                    }
                    InstKind::Load { ptr } => {
                        if let Some(r) = res {
                            let pc = pts.class_of(program, *ptr);
                            let content = pts.content(pc);
                            let rc = pts.class_of(program, r);
                            pts.unify(rc, content);
                        }
                    }
                    InstKind::Store { value, ptr } if !is_constant(program, *value) => {
                        let pc = pts.class_of(program, *ptr);
                        let content = pts.content(pc);
                        let vc = pts.class_of(program, *value);
                        pts.unify(content, vc);
                    }
                    InstKind::FieldAddr { base, field, .. } => {
                        if let Some(r) = res {
                            let bc = pts.class_of(program, *base);
                            let fc = pts.field(bc, *field);
                            let rc = pts.class_of(program, r);
                            pts.unify(rc, fc);
                        }
                    }
                    InstKind::IndexAddr { base, .. } => {
                        if let Some(r) = res {
                            pts.unify_values(program, r, *base);
                        }
                    }
                    InstKind::Call { callee, args } => match callee {
                        Callee::Direct(g) => {
                            connect_call(program, &mut pts, &func_names, &wrappers, *g, res, args);
                        }
                        Callee::Indirect(_) => indirect.push(i),
                    },
                    InstKind::Return { value: Some(v) } if !is_constant(program, *v) => {
                        let rc = pts.ret_class[fi];
                        let vc = pts.class_of(program, *v);
                        pts.unify(rc, vc);
                    }
                    _ => {}
                }
            }
        }
    }
    // Indirect calls: connect targets until no new ones appear (connecting may unify more
    // classes and reveal more targets).
    let mut connected: FxMap<InstId, Vec<FuncId>> = FxMap::default();
    loop {
        pts.settle_copies();
        let mut grew = false;
        for &i in &indirect {
            let InstKind::Call {
                callee: Callee::Indirect(fp),
                args,
            } = &program.inst(i).kind
            else {
                continue;
            };
            let c = pts.class_of(program, *fp);
            let targets = arity_compatible(program, &pts.funcs[c as usize], args.len());
            for g in targets {
                let list = connected.entry(i).or_default();
                if !list.contains(&g) {
                    list.push(g);
                    grew = true;
                    connect_call(
                        program,
                        &mut pts,
                        &func_names,
                        &wrappers,
                        g,
                        program.inst(i).result,
                        args,
                    );
                }
            }
        }
        if !grew {
            break;
        }
    }
    let mut call_graph = CallGraph {
        targets: Vec::new(),
        callers: vec![Vec::new(); program.functions.len()],
    };
    for (k, inst) in program.insts.iter().enumerate() {
        if let InstKind::Call { callee, .. } = &inst.kind {
            let i = InstId(k as u32);
            let targets = match callee {
                Callee::Direct(g) => vec![*g],
                Callee::Indirect(_) => connected.remove(&i).unwrap_or_default(),
            };
            for g in &targets {
                call_graph.callers[g.index()].push(i);
            }
            call_graph.targets.push((i, targets));
        }
    }

    // Phase 2: taint.
    let mut sets = SetInterner::new();
    let mut value_taint = vec![SetId::EMPTY; program.values.len()];
    let mut returns: FxMap<(FuncId, InstId), SetId> = FxMap::default();
    // Memory written by option sources: (address, options), applied once the solver exists.
    let mut seed_writes: Vec<(ValueId, SetId)> = Vec::new();
    for (option, source) in &sources.sources {
        let s = sets.singleton(*option);
        match source {
            ResolvedSource::Global(g) => {
                let address = program.globals[g.index()].address;
                pts.class_of(program, address);
                seed_writes.push((address, s));
            }
            ResolvedSource::Field(st, field) => {
                for inst in &program.insts {
                    if let InstKind::FieldAddr {
                        structure,
                        field: f,
                        base,
                    } = &inst.kind
                        && structure == st
                        && f == field
                        && let Some(r) = inst.result
                    {
                        pts.class_of(program, *base);
                        pts.class_of(program, r);
                        seed_writes.push((r, s));
                    }
                }
            }
            ResolvedSource::Return(f, selector) => {
                for &call in &call_graph.callers[f.index()] {
                    let InstKind::Call { args, .. } = &program.inst(call).kind else {
                        continue;
                    };
                    let selected = match selector {
                        None => true,
                        Some(sel) => args.get(sel.index as usize).is_some_and(|a| {
                            matches!(program.value(*a), ValueDef::ConstStr(t) if *t == sel.value)
                        }),
                    };
                    if selected {
                        let key = (*f, call);
                        let old = returns.get(&key).copied().unwrap_or(SetId::EMPTY);
                        returns.insert(key, sets.union(old, s));
                    }
                }
            }
        }
    }
    // Seed call results (and what they point to) of selected source calls.
    for (&(_, call), &s) in &returns {
        if let Some(r) = program.inst(call).result {
            value_taint[r.index()] = sets.union(value_taint[r.index()], s);
            pts.class_of(program, r);
            seed_writes.push((r, s));
        }
    }
    seed_writes.sort_unstable();
    let nclasses = pts.parent.len();
    // Who reads each class: loads, and external calls reading through their arguments
    // (every class an access touches, see `Solver::read`).
    let mut readers: Vec<Vec<FuncId>> = vec![Vec::new(); nclasses];
    let mut touched = Vec::new();
    for (fi, func) in program.functions.iter().enumerate() {
        let f = FuncId(fi as u32);
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                let mut read = |v: ValueId, pts: &PointsTo| {
                    touched.clear();
                    touched_classes(program, pts, v, &mut touched);
                    for &c in &touched {
                        let list = &mut readers[c as usize];
                        if list.last() != Some(&f) {
                            list.push(f);
                        }
                    }
                };
                match &program.inst(i).kind {
                    InstKind::Load { ptr } => read(*ptr, &pts),
                    InstKind::Call { args, .. } => {
                        for &a in args {
                            read(a, &pts);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    for list in &mut readers {
        list.sort_unstable();
        list.dedup();
    }

    let nfuncs = program.functions.len();
    let mut solver = Solver {
        program,
        dominance,
        pts: &pts,
        call_graph: &call_graph,
        sets,
        whole: vec![SetId::EMPTY; nclasses],
        all: vec![SetId::EMPTY; nclasses],
        field_memory: FxMap::default(),
        class_fields: FxMap::default(),
        value_taint,
        block_taint: vec![SetId::EMPTY; program.blocks.len()],
        context: vec![SetId::EMPTY; nfuncs],
        ret_taint: vec![SetId::EMPTY; nfuncs],
        readers: &readers,
        queue: VecDeque::new(),
        queued: vec![false; nfuncs],
        visits: 0,
        func_names: &func_names,
    };
    for &(ptr, s) in &seed_writes {
        solver.write(ptr, s);
    }
    let seeded_values: Vec<(ValueId, SetId)> = solver
        .value_taint
        .iter()
        .enumerate()
        .filter(|(_, s)| **s != SetId::EMPTY)
        .map(|(v, s)| (ValueId(v as u32), *s))
        .collect();
    for f in 0..nfuncs {
        if !program.functions[f].is_declaration {
            solver.enqueue(FuncId(f as u32));
        }
    }
    while let Some(f) = solver.queue.pop_front() {
        solver.queued[f.index()] = false;
        solver.visit(f);
    }

    // The statement-influence map.
    let Solver {
        mut sets,
        value_taint,
        block_taint,
        context,
        visits,
        all,
        whole,
        field_memory,
        ret_taint,
        ..
    } = solver;
    let mut influence = vec![SetId::EMPTY; program.insts.len()];
    let mut decisions = Vec::new();
    for (fi, func) in program.functions.iter().enumerate() {
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                let inst = program.inst(i);
                let mut local = block_taint[b.index()];
                if let Some(cond) = inst.kind.decision() {
                    let t = value_taint[cond.index()];
                    if t != SetId::EMPTY {
                        decisions.push(TaintedDecision {
                            inst: i,
                            options: t,
                            loc: inst.loc,
                        });
                        local = sets.union(local, t);
                    }
                }
                // A statement that no decision of its own function influences runs whenever
                // its function runs: its time belongs to the region open at the call site,
                // which carries the call's context already (§3.3: a callee's time counts in
                // its caller's region). Only statements under a local tainted decision form
                // regions of their own, and those also depend on whether the function runs at
                // all, so they carry the context too (Fig. 2: foo's lines 3-4 are {A, C}).
                influence[i.index()] = if local == SetId::EMPTY {
                    SetId::EMPTY
                } else {
                    sets.union(local, context[fi])
                };
            }
        }
    }
    StatementInfluence {
        sets,
        influence,
        value_taint,
        context,
        decisions,
        call_graph,
        classes: nclasses,
        function_visits: visits,
        facts: TaintFacts {
            value_class: (0..program.values.len())
                .map(|v| pts.existing_class(ValueId(v as u32)).unwrap_or(NONE))
                .collect(),
            memory: all,
            whole,
            fields: field_memory,
            block_taint,
            ret_taint,
            seed_writes,
            seeded_values,
        },
    }
}

/// The functions of a points-to class an indirect call with `arity` arguments may call:
/// those with exactly that many parameters, or, when none has, those with fewer (variadic
/// functions). A collapsed class holds every address-taken function of a program; without
/// this filter every call through a pointer would call all of them.
fn arity_compatible(program: &Program, funcs: &[FuncId], arity: usize) -> Vec<FuncId> {
    let exact: Vec<FuncId> = funcs
        .iter()
        .copied()
        .filter(|g| program.func(*g).params.len() == arity)
        .collect();
    if !exact.is_empty() {
        return exact;
    }
    funcs
        .iter()
        .copied()
        .filter(|g| program.func(*g).params.len() < arity)
        .collect()
}

fn connect_call(
    program: &Program,
    pts: &mut PointsTo,
    names: &[&str],
    wrappers: &crate::wrappers::Wrappers,
    g: FuncId,
    result: Option<ValueId>,
    args: &[ValueId],
) {
    let callee = program.func(g);
    if callee.is_declaration {
        let name = names[g.index()];
        // Allocators and other externals return a fresh object (its class is created
        // lazily); realloc returns its argument's object.
        if name == "realloc"
            && let (Some(r), Some(&a)) = (result, args.first())
        {
            pts.unify_values(program, r, a);
        }
        if (name.starts_with("llvm.memcpy")
            || name.starts_with("llvm.memmove")
            || name == "memcpy"
            || name == "memmove")
            && args.len() >= 2
            && !is_constant(program, args[0])
            && !is_constant(program, args[1])
        {
            // A copy makes the destination's contents (field by field) those of the source;
            // the two objects stay apart (unifying them glued every struct copied anywhere
            // into one class). Fields may appear later, so the copy is settled at the end.
            let (d, s) = (
                pts.class_of(program, args[0]),
                pts.class_of(program, args[1]),
            );
            pts.copies.push((d, s));
        }
        return;
    }
    // Pointers a wrapper only frees flow nowhere; a wrapper's call site is an allocation
    // site of its own (`crate::wrappers`).
    for (k, (&p, &a)) in callee.params.iter().zip(args).enumerate() {
        if !wrappers.only_frees(g, k) {
            pts.unify_values(program, p, a);
        }
    }
    if let Some(r) = result
        && !wrappers.allocates(g)
    {
        let rc = pts.class_of(program, r);
        let fc = pts.ret_class[g.index()];
        pts.unify(rc, fc);
    }
}

struct Solver<'a> {
    program: &'a Program,
    dominance: &'a ProgramDominance,
    pts: &'a PointsTo,
    call_graph: &'a CallGraph,
    sets: SetInterner,
    /// Taint written to a class through pointers that are not field addresses.
    whole: Vec<SetId>,
    /// Everything written to a class: what an access to the whole object reads.
    all: Vec<SetId>,
    /// Taint written to field `field` of struct type `structure` in objects of a class.
    field_memory: FxMap<(u32, StructId, u32), SetId>,
    /// The (struct, field) keys of `field_memory` per class, for block copies.
    class_fields: FxMap<u32, Vec<(StructId, u32)>>,
    value_taint: Vec<SetId>,
    block_taint: Vec<SetId>,
    context: Vec<SetId>,
    ret_taint: Vec<SetId>,
    readers: &'a [Vec<FuncId>],
    queue: VecDeque<FuncId>,
    queued: Vec<bool>,
    visits: usize,
    func_names: &'a [&'a str],
}

impl Solver<'_> {
    fn enqueue(&mut self, f: FuncId) {
        if !self.queued[f.index()] && !self.program.func(f).is_declaration {
            self.queued[f.index()] = true;
            self.queue.push_back(f);
        }
    }

    fn taint(&self, v: ValueId) -> SetId {
        self.value_taint[v.index()]
    }

    fn field_taint(&self, class: u32, structure: StructId, field: u32) -> SetId {
        self.field_memory
            .get(&(class, structure, field))
            .copied()
            .unwrap_or(SetId::EMPTY)
    }

    fn set_field(&mut self, class: u32, structure: StructId, field: u32, new: SetId) {
        if self
            .field_memory
            .insert((class, structure, field), new)
            .is_none()
        {
            self.class_fields
                .entry(class)
                .or_default()
                .push((structure, field));
        }
        self.wake_readers(class);
    }

    /// A block copy (`memcpy(dst, src, n)`, struct assignment) between whole objects: the
    /// destination gets the source's memory field by field, plus `scalar` (the taint of the
    /// pointers, the size and the control) as a whole. Returns false when either side is not
    /// a whole object (then the caller copies everything as a whole).
    fn copy_block(&mut self, dst: ValueId, src: ValueId, scalar: SetId) -> bool {
        let (Some(Access::Whole(d)), Some(Access::Whole(s))) = (
            access_of(self.program, self.pts, dst),
            access_of(self.program, self.pts, src),
        ) else {
            return false;
        };
        let whole = self.sets.union(scalar, self.whole[s as usize]);
        self.whole[d as usize] = self.sets.union(self.whole[d as usize], whole);
        let all = self.sets.union(scalar, self.all[s as usize]);
        self.add_to_class(d, all);
        if d != s {
            let keys = self.class_fields.get(&s).cloned().unwrap_or_default();
            for (structure, field) in keys {
                let from = self.field_taint(s, structure, field);
                let old = self.field_taint(d, structure, field);
                let new = self.sets.union(old, from);
                if new != old {
                    self.set_field(d, structure, field, new);
                }
            }
        }
        true
    }

    /// What a load through `ptr` may read (see [`Access`]).
    fn read(&mut self, ptr: ValueId) -> SetId {
        let Some(access) = access_of(self.program, self.pts, ptr) else {
            return SetId::EMPTY;
        };
        match access {
            Access::Whole(c) => self.all[c as usize],
            Access::Field {
                class,
                structure,
                field,
                field_class,
                base,
            } => {
                let mut t = self.field_taint(class, structure, field);
                t = self.sets.union(t, self.whole[class as usize]);
                if field_class != class {
                    t = self.sets.union(t, self.all[field_class as usize]);
                }
                // Enclosing fields written as a whole (`p->inner = …` by a struct copy) hold
                // `p->inner.x` too.
                let mut outer = base;
                while let Some(Access::Field {
                    class,
                    structure,
                    field,
                    base,
                    ..
                }) = access_of(self.program, self.pts, outer)
                {
                    let f = self.field_taint(class, structure, field);
                    t = self.sets.union(t, f);
                    t = self.sets.union(t, self.whole[class as usize]);
                    outer = base;
                }
                t
            }
        }
    }

    /// Records that `s` may be written through `ptr`, waking the functions that read it.
    fn write(&mut self, ptr: ValueId, s: SetId) {
        if s == SetId::EMPTY {
            return;
        }
        let Some(access) = access_of(self.program, self.pts, ptr) else {
            return;
        };
        match access {
            Access::Whole(c) => {
                self.whole[c as usize] = self.sets.union(self.whole[c as usize], s);
                self.add_to_class(c, s);
            }
            Access::Field {
                class,
                structure,
                field,
                field_class,
                ..
            } => {
                let old = self.field_taint(class, structure, field);
                let new = self.sets.union(old, s);
                if new != old {
                    self.set_field(class, structure, field, new);
                }
                self.add_to_class(class, s);
                if field_class != class {
                    let c = field_class as usize;
                    self.whole[c] = self.sets.union(self.whole[c], s);
                    self.add_to_class(field_class, s);
                }
            }
        }
    }

    fn add_to_class(&mut self, c: u32, s: SetId) {
        let old = self.all[c as usize];
        let new = self.sets.union(old, s);
        if new != old {
            self.all[c as usize] = new;
            self.wake_readers(c);
        }
    }

    fn wake_readers(&mut self, c: u32) {
        for k in 0..self.readers[c as usize].len() {
            self.enqueue(self.readers[c as usize][k]);
        }
    }

    /// Taint of the decision ending block `b` (local index) of `f`, or its control taint if it
    /// does not decide anything.
    fn decision_taint(&mut self, b: ir::BlockId) -> SetId {
        let lct = self.block_taint[b.index()];
        match self.program.terminator(b) {
            Some(t) => match self.program.inst(t).kind.decision() {
                Some(cond) => {
                    let ct = self.taint(cond);
                    self.sets.union(lct, ct)
                }
                None => lct,
            },
            None => lct,
        }
    }

    fn visit(&mut self, f: FuncId) {
        self.visits += 1;
        let program = self.program;
        let func = program.func(f);
        let Some(dom) = self.dominance.get(f) else {
            return;
        };
        loop {
            let mut changed = false;
            for &local in dom.dom.reverse_post_order() {
                let b = func.blocks[local as usize];
                let mut lct = self.block_taint[b.index()];
                for &a in &dom.control_deps[local as usize] {
                    let d = self.decision_taint(func.blocks[a as usize]);
                    lct = self.sets.union(lct, d);
                }
                if lct != self.block_taint[b.index()] {
                    self.block_taint[b.index()] = lct;
                    changed = true;
                }
                let full = self.sets.union(lct, self.context[f.index()]);
                for &i in &program.block(b).insts {
                    let inst = program.inst(i);
                    let mut t = lct;
                    match &inst.kind {
                        InstKind::Op { args, .. } => {
                            for &a in args {
                                t = self.sets.union(t, self.taint(a));
                            }
                        }
                        InstKind::Select {
                            cond,
                            if_true,
                            if_false,
                        } => {
                            for a in [*cond, *if_true, *if_false] {
                                t = self.sets.union(t, self.taint(a));
                            }
                        }
                        InstKind::Phi { incoming } => {
                            for &(v, from) in incoming {
                                t = self.sets.union(t, self.taint(v));
                                let d = self.decision_taint(from);
                                t = self.sets.union(t, d);
                            }
                        }
                        InstKind::Load { ptr } => {
                            t = self.sets.union(t, self.taint(*ptr));
                            let m = self.read(*ptr);
                            t = self.sets.union(t, m);
                        }
                        InstKind::Store { value, ptr } => {
                            let mut s = self.sets.union(full, self.taint(*value));
                            s = self.sets.union(s, self.taint(*ptr));
                            self.write(*ptr, s);
                        }
                        InstKind::FieldAddr { base, .. } => {
                            t = self.sets.union(t, self.taint(*base));
                        }
                        InstKind::IndexAddr { base, index } => {
                            t = self.sets.union(t, self.taint(*base));
                            t = self.sets.union(t, self.taint(*index));
                        }
                        InstKind::Call { callee, args } => {
                            let pointer_taint = match callee {
                                Callee::Indirect(v) => self.taint(*v),
                                Callee::Direct(_) => SetId::EMPTY,
                            };
                            let site = self.sets.union(full, pointer_taint);
                            for &g in self.call_graph.targets_of(i) {
                                let callee = program.func(g);
                                if callee.is_declaration {
                                    if is_block_copy(self.func_names[g.index()]) && args.len() >= 2
                                    {
                                        let mut scalar = full;
                                        for &a in args {
                                            scalar = self.sets.union(scalar, self.taint(a));
                                        }
                                        if self.copy_block(args[0], args[1], scalar) {
                                            t = self.sets.union(t, scalar);
                                            continue;
                                        }
                                    }
                                    let mut input = SetId::EMPTY;
                                    for &a in args {
                                        input = self.sets.union(input, self.taint(a));
                                        let m = self.read(a);
                                        input = self.sets.union(input, m);
                                    }
                                    t = self.sets.union(t, input);
                                    if is_copier(self.func_names[g.index()])
                                        && let Some(&dst) = args.first()
                                    {
                                        let s = self.sets.union(input, full);
                                        self.write(dst, s);
                                    }
                                    continue;
                                }
                                for (&p, &a) in callee.params.iter().zip(args.iter()) {
                                    let old = self.taint(p);
                                    let new = self.sets.union(old, self.taint(a));
                                    if new != old {
                                        self.value_taint[p.index()] = new;
                                        self.enqueue(g);
                                    }
                                }
                                let old = self.context[g.index()];
                                let new = self.sets.union(old, site);
                                if new != old {
                                    self.context[g.index()] = new;
                                    self.enqueue(g);
                                }
                                t = self.sets.union(t, self.ret_taint[g.index()]);
                            }
                        }
                        InstKind::Return { value: Some(v) } => {
                            let r = self.sets.union(lct, self.taint(*v));
                            let old = self.ret_taint[f.index()];
                            let new = self.sets.union(old, r);
                            if new != old {
                                self.ret_taint[f.index()] = new;
                                for k in 0..self.call_graph.callers[f.index()].len() {
                                    let call = self.call_graph.callers[f.index()][k];
                                    self.enqueue(program.func_of(call));
                                }
                            }
                        }
                        _ => {}
                    }
                    if let Some(r) = inst.result {
                        let old = self.value_taint[r.index()];
                        let new = self.sets.union(old, t);
                        if new != old {
                            self.value_taint[r.index()] = new;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }
}

/// Options relevant to a program: those in some instruction's influence.
pub fn irrelevant_options(
    si: &StatementInfluence,
    all: impl Iterator<Item = OptionId>,
) -> Vec<OptionId> {
    let relevant = si.relevant_options();
    all.filter(|o| !relevant.contains(*o)).collect()
}
