//! Static option-taint analysis: which options may influence whether and how each
//! instruction executes (the statement-influence map SI of ConfigCrusher §3.1).
//!
//! Two phases:
//! 1. Points-to ([`crate::pointsto`]): inclusion-based, over field-sensitive memory cells
//!    (globals, stack slots, allocation sites and their struct fields); it also resolves
//!    indirect calls.
//! 2. Taint, a monotone fixpoint with a function-level worklist: value taints (SSA, phi,
//!    select, loads from cells, arguments → parameters, returns → call results), memory
//!    taints per cell (stores), local control taint per block (the decisions it is control
//!    dependent on, transitively, with their data taint), and a context taint per function
//!    (the union over call sites of the control taint there). Implicit flows: values defined
//!    and stores made under a tainted decision carry its taint; a phi at a join carries the
//!    taint of the decisions choosing its incoming edge. Return values are context-sensitive:
//!    values are symbolic in their function's parameters (parameter k is a label option past
//!    the real ones), and a call site substitutes its own arguments into the callee's return
//!    taint (`lzma_check_is_supported(check)` no longer hands `check`'s option to every
//!    caller); memory, contexts and influence see concrete taints.
//!
//! SI(instruction) = its local influence (the control taint of its block, plus the data taint
//! of the decided value for a conditional terminator) ∪ its function's context taint — but
//! only when the local influence is non-empty. A statement no decision of its own function
//! influences runs whenever the function runs, so its time belongs to the region open at the
//! call site (§3.3: a callee only influenced through its context counts in its caller's
//! region); without this rule every statement of a helper called under any tainted decision
//! would carry that decision's options. Return values do not carry the callee's context
//! (each call site adds its own control taint), stores do.
//!
//! Precision choices (see `analysis::explain` and the sqlite benchmark's `--explain`):
//! - Memory taint is kept per cell: a load reads the cells its pointer may point to, a store
//!   writes them all (weak updates). A load through a plain pointer into a struct reads its
//!   root cell (field 0), not the other fields: not seen is a field read as bytes through a
//!   `char *` into the struct (type punning). External functions that read through their
//!   arguments (`write`, `strcmp`, …) read the whole objects, fields included; block copies
//!   (`memcpy`, struct assignment) copy field by field.
//! - Indirect calls reach the functions whose addresses flow to the called pointer and that
//!   take at most as many parameters as the call passes (variadic functions take fewer).

use std::collections::VecDeque;

use ir::{Callee, FuncId, InstId, InstKind, Program, ValueDef, ValueId};
use space::OptionId;

use crate::ProgramDominance;
use crate::options::{FxMap, SetId, SetInterner};
use crate::pointsto::{ALLOCATORS, CellId, PointsTo};
use crate::reaching::LocalDefinitions;
use crate::sources::ResolvedSources;
use crate::wrappers::MemoryCopy;
use ir::Place;

/// External functions that copy data from their other arguments into the first one's object.
const COPIERS: &[&str] = &[
    "memcpy", "memmove", "strcpy", "strncpy", "strcat", "strncat", "sprintf", "snprintf", "sscanf",
    "memset",
];

pub(crate) fn is_copier(name: &str) -> bool {
    COPIERS.contains(&crate::pointsto::libc_name(name))
        || name.starts_with("llvm.memcpy")
        || name.starts_with("llvm.memmove")
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
    /// Number of memory cells and worklist steps, for benchmarks.
    pub cells: usize,
    pub function_visits: usize,
    /// The solver's final facts, kept so that [`crate::explain`] can say why an option
    /// reaches an instruction.
    pub facts: TaintFacts,
}

/// The fixpoint's intermediate facts: enough to rebuild a justification for every option in
/// the statement-influence map (see [`crate::explain`]).
#[derive(Clone, Debug, Default)]
pub struct TaintFacts {
    /// Where each pointer points.
    pub points_to: PointsTo,
    /// Taint of the contents of each memory cell.
    pub memory: Vec<SetId>,
    /// Local control taint of each block (the decisions it is control dependent on).
    pub block_taint: Vec<SetId>,
    /// Taint of each function's return value.
    pub ret_taint: Vec<SetId>,
    /// The option sources' memory: addresses written with the options they hold.
    pub seed_writes: Vec<(ValueId, SetId)>,
    /// Values seeded directly (results of option-returning calls).
    pub seeded_values: Vec<(ValueId, SetId)>,
    /// Loads of globals that read only their own function's earlier stores.
    pub local_definitions: LocalDefinitions,
    /// Per function: it runs only on the way out of the program ([`dying_functions`]).
    pub dying: Vec<bool>,
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
    analyse_with(program, dominance, sources, crate::pointsto::solve(program))
}

/// [`analyse`] over a given points-to relation (e.g. one solved with a smaller budget).
pub fn analyse_with(
    program: &Program,
    dominance: &ProgramDominance,
    sources: &ResolvedSources,
    pts: PointsTo,
) -> StatementInfluence {
    let func_names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
    let mut call_graph = CallGraph {
        targets: pts.call_targets.clone(),
        callers: vec![Vec::new(); program.functions.len()],
    };
    for (i, targets) in &call_graph.targets {
        for g in targets {
            call_graph.callers[g.index()].push(*i);
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
            Place::Global(g) => {
                seed_writes.push((program.globals[g.index()].address, s));
            }
            Place::Field(st, field) => {
                for inst in &program.insts {
                    if let InstKind::FieldAddr {
                        structure,
                        field: f,
                        ..
                    } = &inst.kind
                        && structure == st
                        && f == field
                        && let Some(r) = inst.result
                    {
                        seed_writes.push((r, s));
                    }
                }
            }
            Place::Return(f, selector) => {
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
            seed_writes.push((r, s));
        }
    }
    seed_writes.sort_unstable();
    let param_pointer = parameter_pointers(program);
    let dying = dying_functions(program, &call_graph);
    let local_definitions =
        crate::reaching::local_definitions(program, &pts, &call_graph, dominance);
    let ncells = pts.cells.len();
    // Who reads each cell: loads, and external calls and copy wrappers reading through their
    // arguments (whole objects, see `Solver::read_objects` and `Solver::copy_block`).
    let mut readers: Vec<Vec<FuncId>> = vec![Vec::new(); ncells];
    let mut groups = CellGroups::new(ncells);
    let mut read_group = vec![NO_GROUP; program.values.len()];
    let mut object_group = vec![NO_GROUP; program.values.len()];
    // The last function registered as a reader of each group.
    let mut group_reader: Vec<FuncId> = Vec::new();
    for (fi, func) in program.functions.iter().enumerate() {
        let f = FuncId(fi as u32);
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                let mut read = |g: u32, groups: &CellGroups| {
                    // A function reading one group at many loads registers it once.
                    if group_reader.get(g as usize) == Some(&f) {
                        return;
                    }
                    if group_reader.len() <= g as usize {
                        group_reader.resize(g as usize + 1, FuncId(u32::MAX));
                    }
                    group_reader[g as usize] = f;
                    for &c in &groups.cells[g as usize] {
                        let list = &mut readers[c.index()];
                        if list.last() != Some(&f) {
                            list.push(f);
                        }
                    }
                };
                match &program.inst(i).kind {
                    InstKind::Load { ptr } => {
                        let g = groups.group(&pts, pts.set_of(*ptr), false);
                        read_group[ptr.index()] = g;
                        read(g, &groups);
                    }
                    InstKind::Call { args, .. }
                        if call_graph.targets_of(i).iter().any(|&g| {
                            program.func(g).is_declaration || pts.wrappers.copies(g).is_some()
                        }) =>
                    {
                        for &a in args {
                            let g = groups.group(&pts, pts.set_of(a), true);
                            object_group[a.index()] = g;
                            read(g, &groups);
                        }
                    }
                    // A function reading through a parameter reads, at this call, what the
                    // argument points to (`Solver::memory_behind`).
                    InstKind::Call { args, .. }
                        if call_graph
                            .targets_of(i)
                            .iter()
                            .any(|&g| param_pointer.loads_through[g.index()] != 0) =>
                    {
                        for &a in args {
                            if !program.is_scalar(a) {
                                let g = groups.group(&pts, pts.set_of(a), false);
                                read(g, &groups);
                            }
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
    let label_base = sources
        .sources
        .iter()
        .map(|(o, _)| o.0 + 1)
        .max()
        .unwrap_or(0);
    let mut solver = Solver {
        program,
        dominance,
        pts: &pts,
        call_graph: &call_graph,
        sets,
        memory: vec![SetId::EMPTY; ncells],
        pinned: vec![false; ncells],
        ends_program: dying.clone(),
        groups,
        read_group,
        object_group,
        written: FxMap::default(),
        value_taint,
        block_taint: vec![SetId::EMPTY; program.blocks.len()],
        context: vec![SetId::EMPTY; nfuncs],
        ret_taint: vec![SetId::EMPTY; nfuncs],
        param_taint: vec![SetId::EMPTY; program.values.len()],
        param_memory: vec![SetId::EMPTY; program.values.len()],
        param_pointer: &param_pointer,
        local_definitions: &local_definitions,
        label_base,
        split: FxMap::default(),
        readers: &readers,
        queue: VecDeque::new(),
        queued: vec![false; nfuncs],
        visits: 0,
        func_names: &func_names,
    };
    // A cell the spec names as where an option lives holds that option and nothing else:
    // what the program stores there (argument parsing, under decisions on argv and on
    // strings that a flow-insensitive analysis mixes with everything) is how the option gets
    // there, not an influence of its own. Without this, every option global of a program
    // that parses its arguments in one loop carries every option.
    for &(ptr, s) in &seed_writes {
        solver.write(ptr, s);
    }
    for &(ptr, _) in &seed_writes {
        for &c in pts.of(ptr) {
            solver.pinned[c.index()] = true;
        }
    }
    let seeded_values: Vec<(ValueId, SetId)> = solver
        .value_taint
        .iter()
        .enumerate()
        .filter(|(_, s)| **s != SetId::EMPTY)
        .map(|(v, s)| (ValueId(v as u32), *s))
        .collect();
    // Parameters hold their own labels; call sites fill in the concrete taints.
    for func in &program.functions {
        for (k, &p) in func.params.iter().enumerate() {
            let label = solver.sets.singleton(OptionId(label_base + k as u32));
            solver.value_taint[p.index()] = label;
        }
    }
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
    // Everything outside the solver sees concrete taints: parameter labels replaced by the
    // parameters' taints (a call result keeps its call site's substitution).
    for v in 0..program.values.len() {
        let f = match program.value(ValueId(v as u32)) {
            ValueDef::Inst(i) => program.func_of(*i),
            ValueDef::Param { func, .. } => *func,
            _ => continue,
        };
        let t = solver.value_taint[v];
        solver.value_taint[v] = solver.concrete(f, t);
    }
    for (b, block) in program.blocks.iter().enumerate() {
        let t = solver.block_taint[b];
        solver.block_taint[b] = solver.concrete(block.func, t);
    }
    for g in 0..nfuncs {
        let t = solver.ret_taint[g];
        solver.ret_taint[g] = solver.concrete(FuncId(g as u32), t);
    }
    let Solver {
        mut sets,
        value_taint,
        block_taint,
        context,
        visits,
        memory,
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
        cells: ncells,
        function_visits: visits,
        facts: TaintFacts {
            points_to: pts,
            memory,
            block_taint,
            ret_taint,
            seed_writes,
            seeded_values,
            local_definitions,
            dying,
        },
    }
}

struct Solver<'a> {
    program: &'a Program,
    dominance: &'a ProgramDominance,
    pts: &'a PointsTo,
    call_graph: &'a CallGraph,
    sets: SetInterner,
    /// Taint of the contents of each cell.
    memory: Vec<SetId>,
    /// The cells an option source names (a global, a struct field, what a source call
    /// returns): they hold exactly their options (see [`analyse_with`]).
    pinned: Vec<bool>,
    /// Per function: it runs only on the way out of the program ([`dying_functions`]).
    ends_program: Vec<bool>,
    groups: CellGroups,
    /// The group a load through each pointer reads, and the one an external call reads
    /// through each argument (`NO_GROUP`: none).
    read_group: Vec<u32>,
    object_group: Vec<u32>,
    /// What was written through each points-to set already (every cell of it holds it).
    written: FxMap<u32, SetId>,
    /// Data taint per value, symbolic in the parameters of the value's function: parameter
    /// `k` is the label option `label_base + k` (see [`Solver::concrete`]).
    value_taint: Vec<SetId>,
    block_taint: Vec<SetId>,
    context: Vec<SetId>,
    /// Taint of each function's return value, symbolic in its parameters: a call site
    /// substitutes its own arguments (return values are context-sensitive, the rest is not).
    ret_taint: Vec<SetId>,
    /// The concrete taint of each parameter: the union over its call sites' arguments.
    param_taint: Vec<SetId>,
    /// The concrete taint of what each parameter points to, as loads through it read it:
    /// the union over its call sites of the memory behind the argument.
    param_memory: Vec<SetId>,
    param_pointer: &'a ParameterPointers,
    local_definitions: &'a LocalDefinitions,
    label_base: u32,
    /// Per set: its real options and the parameter labels in it.
    split: FxMap<SetId, (SetId, Vec<u32>)>,
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

    /// A set's real options and the parameter labels in it.
    fn split(&mut self, s: SetId) -> (SetId, Vec<u32>) {
        if let Some(x) = self.split.get(&s) {
            return x.clone();
        }
        let base = self.label_base;
        let set = self.sets.get(s);
        let real = crate::OptionSet::from_ids(set.iter().filter(|o| o.0 < base));
        let labels: Vec<u32> = set
            .iter()
            .filter(|o| o.0 >= base)
            .map(|o| o.0 - base)
            .collect();
        let real = self.sets.intern(real);
        self.split.insert(s, (real, labels.clone()));
        (real, labels)
    }

    /// `s` (symbolic in `f`'s parameters) with each parameter label replaced by the
    /// parameter's concrete taint.
    fn concrete(&mut self, f: FuncId, s: SetId) -> SetId {
        let (mut out, labels) = self.split(s);
        let max = self.param_pointer.max_params;
        for l in labels {
            let (k, behind) = if l < max { (l, false) } else { (l - max, true) };
            if let Some(&p) = self.program.func(f).params.get(k as usize) {
                let t = if behind {
                    self.param_memory[p.index()]
                } else {
                    self.param_taint[p.index()]
                };
                out = self.sets.union(out, t);
            }
        }
        out
    }

    /// What a load through `a` (an argument of a call in `f`) reads, symbolic in `f`'s
    /// parameters when `a` points where one of them does.
    fn memory_behind(&mut self, a: ValueId) -> SetId {
        match self.param_pointer.of(a) {
            Some(j) => self.sets.singleton(OptionId(
                self.label_base + self.param_pointer.max_params + j,
            )),
            None => self.read(a),
        }
    }

    /// A callee's return taint at a call site: each parameter label replaced by the
    /// argument's taint (symbolic in the caller's parameters).
    fn substitute(&mut self, ret: SetId, args: &[ValueId]) -> SetId {
        let (mut out, labels) = self.split(ret);
        let max = self.param_pointer.max_params;
        for l in labels {
            let (k, behind) = if l < max { (l, false) } else { (l - max, true) };
            if let Some(&a) = args.get(k as usize) {
                let t = if behind {
                    self.memory_behind(a)
                } else {
                    self.taint(a)
                };
                out = self.sets.union(out, t);
            }
        }
        out
    }

    /// A block copy (`memcpy(dst, src, n)`, struct assignment): each destination cell gets
    /// the source cells' memory, and the destination objects' fields the source objects'
    /// fields (the points-to phase created them), plus `scalar` (the taint of the pointers,
    /// the size and the control).
    fn copy_block(&mut self, dst: ValueId, src: ValueId, scalar: SetId) {
        let pts = self.pts;
        for &d in pts.of(dst) {
            for &s in pts.of(src) {
                let t = self.sets.union(scalar, self.memory[s.index()]);
                self.add_to_cell(d, t);
                // Merged objects share their field cells: nothing to copy.
                if pts.merged {
                    continue;
                }
                for &sf in &pts.object_cells(s)[1..] {
                    let (structure, field) = pts.cell(sf).field.expect("a field cell");
                    if let Some(df) = pts.field_cell(d, structure, field) {
                        let t = self.sets.union(scalar, self.memory[sf.index()]);
                        self.add_to_cell(df, t);
                    }
                }
            }
        }
    }

    /// What a load through `ptr` may read.
    fn read(&mut self, ptr: ValueId) -> SetId {
        match self.read_group[ptr.index()] {
            NO_GROUP => {
                let mut t = SetId::EMPTY;
                for &c in self.pts.of(ptr) {
                    t = self.sets.union(t, self.memory[c.index()]);
                }
                t
            }
            g => self.groups.union[g as usize],
        }
    }

    /// What an external function may read through `ptr`: the whole objects, fields included.
    fn read_objects(&mut self, ptr: ValueId) -> SetId {
        match self.object_group[ptr.index()] {
            NO_GROUP => {
                let mut t = SetId::EMPTY;
                for &c in self.pts.of(ptr) {
                    for &f in self.pts.object_cells(c) {
                        t = self.sets.union(t, self.memory[f.index()]);
                    }
                }
                t
            }
            g => self.groups.union[g as usize],
        }
    }

    /// Records that `s` may be written through `ptr`, waking the functions that read it.
    fn write(&mut self, ptr: ValueId, s: SetId) {
        if s == SetId::EMPTY {
            return;
        }
        let set = self.pts.set_of(ptr);
        let done = self.written.get(&set).copied().unwrap_or(SetId::EMPTY);
        let all = self.sets.union(done, s);
        if all == done {
            return;
        }
        self.written.insert(set, all);
        for &c in self.pts.set(set) {
            self.add_to_cell(c, s);
        }
    }

    fn add_to_cell(&mut self, c: CellId, s: SetId) {
        if self.pinned[c.index()] {
            return;
        }
        let old = self.memory[c.index()];
        let new = self.sets.union(old, s);
        if new != old {
            self.memory[c.index()] = new;
            for k in 0..self.groups.groups_of[c.index()].len() {
                let g = self.groups.groups_of[c.index()][k] as usize;
                self.groups.union[g] = self.sets.union(self.groups.union[g], new);
            }
            self.wake_readers(c);
        }
    }

    fn wake_readers(&mut self, c: CellId) {
        for k in 0..self.readers[c.index()].len() {
            self.enqueue(self.readers[c.index()][k]);
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
                // What a function on the way out of the program writes is read only by code
                // that runs before the exit, already under its context: the context does not
                // go into memory, or gzip's `do_exit` (`env = NULL`, called under any option)
                // would reach the start of `main` (see [`dying_functions`]).
                let store_context = if self.ends_program[f.index()] {
                    lct
                } else {
                    full
                };
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
                        InstKind::Load { ptr } if self.local_definitions.of(i).is_some() => {
                            // A global this function set before (`ifd = open (…)`): what
                            // those stores stored, under their control, and nothing else.
                            t = self.sets.union(t, self.taint(*ptr));
                            for &st in self.local_definitions.of(i).expect("checked") {
                                if let InstKind::Store { value, ptr } = &program.inst(st).kind {
                                    t = self.sets.union(t, self.taint(*value));
                                    t = self.sets.union(t, self.taint(*ptr));
                                    let control = self.block_taint[program.inst(st).block.index()];
                                    t = self.sets.union(t, control);
                                }
                            }
                        }
                        InstKind::Load { ptr } => {
                            t = self.sets.union(t, self.taint(*ptr));
                            // Through a parameter (`*s` of `last_component (s)`): what the
                            // call site passes, substituted there like the parameter itself.
                            let m = match self.param_pointer.of(*ptr) {
                                Some(k) => self.sets.singleton(OptionId(
                                    self.label_base + self.param_pointer.max_params + k,
                                )),
                                None => self.read(*ptr),
                            };
                            t = self.sets.union(t, m);
                        }
                        InstKind::Store { value, ptr } => {
                            let mut s = self.sets.union(store_context, self.taint(*value));
                            s = self.sets.union(s, self.taint(*ptr));
                            let s = self.concrete(f, s);
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
                                match self.pts.wrappers.copy_at(program, i, g) {
                                    // A copy wrapper's call sites copy instead.
                                    MemoryCopy::InWrapper => continue,
                                    MemoryCopy::Block { dst, src } => {
                                        // The copied bytes also depend on the sizes and
                                        // positions, by value or (a wrapper's) through pointers.
                                        let mut scalar = store_context;
                                        for &a in args {
                                            scalar = self.sets.union(scalar, self.taint(a));
                                            if !callee.is_declaration && a != dst && a != src {
                                                let m = self.read(a);
                                                scalar = self.sets.union(scalar, m);
                                            }
                                        }
                                        let concrete = self.concrete(f, scalar);
                                        self.copy_block(dst, src, concrete);
                                        if callee.is_declaration {
                                            t = self.sets.union(t, scalar);
                                            continue;
                                        }
                                    }
                                    MemoryCopy::None => {}
                                }
                                if callee.is_declaration {
                                    let mut input = SetId::EMPTY;
                                    for &a in args {
                                        input = self.sets.union(input, self.taint(a));
                                        let m = self.read_objects(a);
                                        input = self.sets.union(input, m);
                                    }
                                    // A fresh address does not depend on the options that chose
                                    // the object's size (the size itself and the contents do).
                                    let name =
                                        crate::pointsto::libc_name(self.func_names[g.index()]);
                                    if !ALLOCATORS.contains(&name) {
                                        t = self.sets.union(t, input);
                                    }
                                    if is_copier(self.func_names[g.index()])
                                        && let Some(&dst) = args.first()
                                    {
                                        let s = self.sets.union(input, store_context);
                                        let s = self.concrete(f, s);
                                        self.write(dst, s);
                                    }
                                    continue;
                                }
                                let loads_through = self.param_pointer.loads_through[g.index()];
                                for (k, (&p, &a)) in
                                    callee.params.iter().zip(args.iter()).enumerate()
                                {
                                    let old = self.param_taint[p.index()];
                                    let arg = self.concrete(f, self.taint(a));
                                    let new = self.sets.union(old, arg);
                                    if new != old {
                                        self.param_taint[p.index()] = new;
                                        self.enqueue(g);
                                    }
                                    if k < 64 && loads_through & (1 << k) != 0 {
                                        let old = self.param_memory[p.index()];
                                        let m = self.memory_behind(a);
                                        let m = self.concrete(f, m);
                                        let new = self.sets.union(old, m);
                                        if new != old {
                                            self.param_memory[p.index()] = new;
                                            self.enqueue(g);
                                        }
                                    }
                                }
                                let old = self.context[g.index()];
                                let site = self.concrete(f, site);
                                let new = self.sets.union(old, site);
                                if new != old {
                                    self.context[g.index()] = new;
                                    self.enqueue(g);
                                }
                                let r = self.substitute(self.ret_taint[g.index()], args);
                                t = self.sets.union(t, r);
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

const NO_GROUP: u32 = u32::MAX;

/// Sets of cells the program reads at once (the cells a load's pointer may point to; the
/// objects an external call reads through an argument), each with the union of their
/// memory kept up to date as cells change: a load then costs one look-up however many
/// cells its pointer may point to (hundreds in a large program).
struct CellGroups {
    index: FxMap<(u32, bool), u32>,
    cells: Vec<Vec<CellId>>,
    union: Vec<SetId>,
    /// For each cell, the groups it is in.
    groups_of: Vec<Vec<u32>>,
}

impl CellGroups {
    fn new(ncells: usize) -> Self {
        CellGroups {
            index: FxMap::default(),
            cells: Vec::new(),
            union: Vec::new(),
            groups_of: vec![Vec::new(); ncells],
        }
    }

    /// The group of a points-to set's cells, or with `objects` of every cell of the objects
    /// they belong to.
    fn group(&mut self, pts: &PointsTo, set: u32, objects: bool) -> u32 {
        if let Some(&g) = self.index.get(&(set, objects)) {
            return g;
        }
        let g = self.cells.len() as u32;
        let mut cells: Vec<CellId> = if objects {
            pts.set(set)
                .iter()
                .flat_map(|&c| pts.object_cells(c).iter().copied())
                .collect()
        } else {
            pts.set(set).to_vec()
        };
        cells.sort_unstable();
        cells.dedup();
        for &c in &cells {
            self.groups_of[c.index()].push(g);
        }
        self.cells.push(cells);
        self.union.push(SetId::EMPTY);
        self.index.insert((set, objects), g);
        g
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

/// Which values point where a parameter of their function points, by pointer arithmetic and
/// casts alone (`s`, `s + 1`, `(char *) s` in a loop over a string; not `&s->field`, whose
/// cells points-to keeps apart). A load through such a value reads what the call site
/// passes: its taint is a label substituted per call site, like a parameter's.
pub(crate) struct ParameterPointers {
    /// Per value: the parameter index, or `u32::MAX`.
    param: Vec<u32>,
    /// Per function: bit k set if a load reads through parameter k (k < 64).
    pub loads_through: Vec<u64>,
    /// The most parameters any function has: memory labels follow the parameter labels.
    pub max_params: u32,
}

impl ParameterPointers {
    fn of(&self, v: ValueId) -> Option<u32> {
        let k = self.param[v.index()];
        (k != u32::MAX).then_some(k)
    }
}

fn parameter_pointers(program: &Program) -> ParameterPointers {
    // A lattice per value: unknown (not yet reached) > parameter k > none.
    const UNKNOWN: u32 = u32::MAX - 1;
    const NONE: u32 = u32::MAX;
    let mut param = vec![NONE; program.values.len()];
    let max_params = program
        .functions
        .iter()
        .map(|f| f.params.len() as u32)
        .max()
        .unwrap_or(0);
    let mut loads_through = vec![0u64; program.functions.len()];
    for (fi, func) in program.functions.iter().enumerate() {
        if func.is_declaration {
            continue;
        }
        for (k, &p) in func.params.iter().enumerate() {
            if !program.is_scalar(p) {
                param[p.index()] = k as u32;
            }
        }
        let insts: Vec<ir::InstId> = func
            .blocks
            .iter()
            .flat_map(|&b| program.block(b).insts.iter().copied())
            .collect();
        let derived = |kind: &InstKind| match kind {
            InstKind::IndexAddr { .. } => true,
            InstKind::Op { op, args } => *op == ir::OpKind::Cast && args.len() == 1,
            InstKind::Phi { .. } | InstKind::Select { .. } => true,
            _ => false,
        };
        for &i in &insts {
            if let Some(r) = program.inst(i).result
                && derived(&program.inst(i).kind)
                && !program.is_scalar(r)
            {
                param[r.index()] = UNKNOWN;
            }
        }
        // Meet over the sources until stable (phis of a loop over a string start unknown).
        let meet = |a: u32, b: u32| match (a, b) {
            (UNKNOWN, x) | (x, UNKNOWN) => x,
            (x, y) if x == y => x,
            _ => NONE,
        };
        loop {
            let mut changed = false;
            for &i in &insts {
                let inst = program.inst(i);
                let Some(r) = inst.result else { continue };
                if param[r.index()] == NONE || !derived(&inst.kind) || program.is_scalar(r) {
                    continue;
                }
                let get = |v: ValueId| match program.value(v) {
                    ValueDef::Inst(_) | ValueDef::Param { .. } => param[v.index()],
                    // A null or undefined incoming value points nowhere.
                    ValueDef::ConstInt(0) | ValueDef::Undef => UNKNOWN,
                    _ => NONE,
                };
                let new = match &inst.kind {
                    InstKind::IndexAddr { base, .. } => get(*base),
                    InstKind::Op { args, .. } => get(args[0]),
                    InstKind::Phi { incoming } => incoming
                        .iter()
                        .fold(UNKNOWN, |acc, (v, _)| meet(acc, get(*v))),
                    InstKind::Select {
                        if_true, if_false, ..
                    } => meet(get(*if_true), get(*if_false)),
                    _ => NONE,
                };
                let new = meet(param[r.index()], new);
                if new != param[r.index()] {
                    param[r.index()] = new;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for &i in &insts {
            if let Some(r) = program.inst(i).result
                && param[r.index()] == UNKNOWN
            {
                param[r.index()] = NONE;
            }
        }
        for &i in &insts {
            if let InstKind::Load { ptr } = &program.inst(i).kind
                && let k = param[ptr.index()]
                && k < 64
            {
                loads_through[fi] |= 1 << k;
            }
        }
    }
    ParameterPointers {
        param,
        loads_through,
        max_params,
    }
}

/// The functions that run only on the way out of the program: those that never return
/// ([`Program::can_return`]: `do_exit`, `abort_gzip`) and those called only from such
/// functions (`remove_output_file` in gzip's error exit). What they store is read only by
/// code that runs before the exit.
pub(crate) fn dying_functions(program: &Program, call_graph: &CallGraph) -> Vec<bool> {
    let mut dying: Vec<bool> = (0..program.functions.len())
        .map(|f| {
            let f = FuncId(f as u32);
            !program.func(f).is_declaration && !program.can_return(f)
        })
        .collect();
    loop {
        let mut changed = false;
        for f in 0..dying.len() {
            let callers = &call_graph.callers[f];
            if !dying[f]
                && !program.functions[f].is_declaration
                && !callers.is_empty()
                && callers.iter().all(|&c| dying[program.func_of(c).index()])
            {
                dying[f] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    dying
}
