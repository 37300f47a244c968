//! Fixed settings: globals that hold one known integer in every run of the workload — the
//! part of the command line no option changes (gzip is always run with `--stdout`, never with
//! `-d` or `-r`, so `to_stdout` is 1 and `decompress` and `recursive` are 0).
//!
//! Loads of those globals are constants. Sparse conditional constant propagation
//! (Wegman–Zadeck; interprocedural through return values, so `input_eof()` returning 1 on
//! every path that can run is a constant at its call sites) then finds the branches they
//! decide and the code no run reaches: the decompressors, `treat_dir`'s recursion. Without
//! this, a sound taint analysis lets state flow from code that never runs into the code that
//! does, and every option seems to interact with every other.
//!
//! [`specialise`] gives the program the analyses should read: the same ids, with decided
//! branches turned into jumps, every instruction of an unreachable block made inert (the
//! terminator `unreachable`, the rest definitions of nothing), phis keeping only the edges
//! that can be taken, and folded values defined by nothing. Instrumentation keeps using the
//! original program: both have the same blocks, and the edges that remain are edges of both.
//! The assumption is checked where it is made: [`Specialised::folded_loads`] lists each load
//! the analysis read as a constant, for the instrumented program to compare at run time.

use std::collections::{HashMap, HashSet};

use ir::{
    BlockId, Callee, FuncId, GlobalId, IdVec, InstId, InstKind, IntOpKind, OpKind, Program,
    ValueDef, ValueId,
};

/// A global the spec fixes: in every run, every load of it reads `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedGlobal {
    pub global: GlobalId,
    pub value: i64,
}

/// An instruction that gives one value in every run of the workload (a branch's condition
/// observed so: `configcrusher`'s dynamic confirmation), or that never runs (`None`: the
/// branches on it take no edge). Not checked at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedValue {
    pub inst: InstId,
    /// Canonical for the instruction's width (sign-extended: an `i1` true is -1).
    pub value: Option<i64>,
}

/// A load the specialised program reads as a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoldedLoad {
    pub inst: InstId,
    pub global: GlobalId,
    /// The value assumed, canonical for the load's width (see `ir::IntOp`).
    pub expected: i64,
}

/// The program as the fixed settings leave it, and what changed.
pub struct Specialised {
    pub program: Program,
    pub folded_loads: Vec<FoldedLoad>,
    /// Conditional branches and switches the settings decide.
    pub decided: usize,
    /// Blocks of reachable functions that no run reaches.
    pub dead_blocks: usize,
    /// Defined functions no run reaches.
    pub dead_functions: usize,
}

/// The constant-propagation lattice: not yet known, one constant, or more than one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lattice {
    Unknown,
    Constant(i64),
    Varying,
}

impl Lattice {
    fn meet(self, other: Lattice) -> Lattice {
        match (self, other) {
            (Lattice::Unknown, x) | (x, Lattice::Unknown) => x,
            (Lattice::Constant(a), Lattice::Constant(b)) if a == b => self,
            _ => Lattice::Varying,
        }
    }
}

/// Sparse conditional constant propagation over the whole program.
struct Propagation<'p> {
    program: &'p Program,
    fixed: HashMap<GlobalId, i64>,
    fixed_values: HashMap<InstId, Option<i64>>,
    /// Functions no run entered, and the instructions that never run because of them: a call
    /// of one and the rest of its block.
    never_entered: HashSet<FuncId>,
    never_run: HashSet<InstId>,
    values: IdVec<ValueId, Lattice>,
    returns: IdVec<FuncId, Lattice>,
    reachable_blocks: IdVec<BlockId, bool>,
    reachable_functions: IdVec<FuncId, bool>,
    reachable_globals: IdVec<GlobalId, bool>,
    edges: HashSet<(BlockId, BlockId)>,
    users: IdVec<ValueId, Vec<InstId>>,
    callers: IdVec<FuncId, Vec<InstId>>,
    blocks: Vec<BlockId>,
    insts: Vec<InstId>,
}

impl<'p> Propagation<'p> {
    fn new(
        program: &'p Program,
        fixed: &[FixedGlobal],
        fixed_values: &[FixedValue],
        never_entered: &[FuncId],
    ) -> Self {
        let never_entered: HashSet<FuncId> = never_entered.iter().copied().collect();
        let mut never_run = HashSet::new();
        if !never_entered.is_empty() {
            for block in program.blocks.iter() {
                let stop = block.insts.iter().position(|&i| {
                    matches!(
                        program.inst(i).kind,
                        InstKind::Call { callee: Callee::Direct(f), .. } if never_entered.contains(&f)
                    )
                });
                if let Some(k) = stop {
                    never_run.extend(block.insts[k..].iter().copied());
                }
            }
        }
        let mut users: IdVec<ValueId, Vec<InstId>> = IdVec::with_default(program.values.len());
        let mut callers: IdVec<FuncId, Vec<InstId>> = IdVec::with_default(program.functions.len());
        for (id, inst) in program.insts.iter_enumerated() {
            inst.kind.for_each_use(|v| users[v].push(id));
            if let InstKind::Call {
                callee: Callee::Direct(f),
                ..
            } = inst.kind
            {
                callers[f].push(id);
            }
        }
        let values = program
            .values
            .iter()
            .map(|d| match d {
                ValueDef::Inst(_) => Lattice::Unknown,
                ValueDef::ConstInt(n) => Lattice::Constant(*n),
                _ => Lattice::Varying,
            })
            .collect();
        Propagation {
            program,
            fixed: fixed.iter().map(|f| (f.global, f.value)).collect(),
            fixed_values: fixed_values.iter().map(|f| (f.inst, f.value)).collect(),
            never_entered,
            never_run,
            values,
            returns: IdVec::from_elem(Lattice::Unknown, program.functions.len()),
            reachable_blocks: IdVec::from_elem(false, program.blocks.len()),
            reachable_functions: IdVec::from_elem(false, program.functions.len()),
            reachable_globals: IdVec::from_elem(false, program.globals.len()),
            edges: HashSet::new(),
            users,
            callers,
            blocks: Vec::new(),
            insts: Vec::new(),
        }
    }

    fn run(&mut self) {
        let program = self.program;
        // Where runs start: `main`, or every function of a program without one. Functions
        // whose address reachable code takes, directly or through a global whose initializer
        // holds it (a table of function pointers), are reached as that code is.
        match program.function_named("main") {
            Some(main) if !program.func(main).is_declaration => self.reach_function(main),
            _ => program
                .functions
                .keys()
                .for_each(|k| self.reach_function(k)),
        }
        loop {
            if let Some(b) = self.blocks.pop() {
                for &i in &program.block(b).insts {
                    self.visit(i);
                }
            } else if let Some(i) = self.insts.pop() {
                if self.reachable_blocks[program.inst(i).block] {
                    self.visit(i);
                }
            } else {
                break;
            }
        }
    }

    fn reach_function(&mut self, f: FuncId) {
        if self.never_entered.contains(&f) {
            return;
        }
        if std::mem::replace(&mut self.reachable_functions[f], true) {
            return;
        }
        if let Some(entry) = self.program.func(f).entry() {
            self.reach_block(entry);
        }
    }

    /// Reachable code takes the address `v`: a function it may call, or a global whose
    /// initializer's addresses it may load.
    fn take_address(&mut self, v: ValueId) {
        match *self.program.value(v) {
            ValueDef::Function(f) => self.reach_function(f),
            ValueDef::Global(g) if !std::mem::replace(&mut self.reachable_globals[g], true) => {
                for r in &self.program.globals[g].initializer_refs {
                    self.take_address(r.address);
                }
            }
            _ => {}
        }
    }

    fn reach_block(&mut self, b: BlockId) {
        if !std::mem::replace(&mut self.reachable_blocks[b], true) {
            self.blocks.push(b);
        }
    }

    fn reach_edge(&mut self, from: BlockId, to: BlockId) {
        if !self.edges.insert((from, to)) {
            return;
        }
        if self.reachable_blocks[to] {
            // A new way in: its phis may change.
            for &i in &self.program.block(to).insts {
                if matches!(self.program.inst(i).kind, InstKind::Phi { .. }) {
                    self.insts.push(i);
                }
            }
        } else {
            self.reach_block(to);
        }
    }

    fn set(&mut self, v: ValueId, value: Lattice) {
        let old = self.values[v];
        let new = old.meet(value);
        if new != old {
            self.values[v] = new;
            self.insts.extend_from_slice(&self.users[v]);
        }
    }

    fn get(&self, v: ValueId) -> Lattice {
        self.values[v]
    }

    /// What a load of `ptr` reads, if it is a fixed global's integer.
    fn fixed_load(&self, inst: InstId, ptr: ValueId) -> Option<(GlobalId, i64)> {
        let ValueDef::Global(g) = self.program.value(ptr) else {
            return None;
        };
        let value = *self.fixed.get(g)?;
        let op = self.program.int_ops.get(&inst)?;
        (op.kind == IntOpKind::Load).then(|| (*g, ir::canonical(value, op.bits)))
    }

    fn visit(&mut self, i: InstId) {
        if self.never_run.contains(&i) {
            // Defines nothing and takes no edge.
            return;
        }
        let program = self.program;
        let inst = program.inst(i);
        let block = inst.block;
        // Functions whose address reachable code takes may be called from anywhere.
        // Addresses this instruction passes on, as far as it is known to: a select whose
        // condition is decided passes one operand, a phi those of edges that can be taken.
        let mut taken = Vec::new();
        let mut take = |v: ValueId| {
            if matches!(
                program.value(v),
                ValueDef::Function(_) | ValueDef::Global(_)
            ) {
                taken.push(v);
            }
        };
        match &inst.kind {
            InstKind::Select {
                cond,
                if_true,
                if_false,
            } => match self.get(*cond) {
                Lattice::Unknown => {}
                Lattice::Constant(c) => take(if c != 0 { *if_true } else { *if_false }),
                Lattice::Varying => {
                    take(*if_true);
                    take(*if_false);
                }
            },
            InstKind::Phi { incoming } => incoming
                .iter()
                .filter(|(_, from)| self.edges.contains(&(*from, block)))
                .for_each(|(v, _)| take(*v)),
            kind => kind.for_each_use(take),
        }
        for v in taken {
            self.take_address(v);
        }
        let result = match &inst.kind {
            InstKind::Op { args, .. } => match program.int_ops.get(&i) {
                Some(op) if op.kind != IntOpKind::Load => {
                    let mut known = Vec::with_capacity(args.len());
                    let mut outcome = None;
                    for a in args {
                        match self.get(*a) {
                            Lattice::Constant(n) => known.push(n),
                            Lattice::Varying => outcome = Some(Lattice::Varying),
                            Lattice::Unknown => {
                                outcome.get_or_insert(Lattice::Unknown);
                            }
                        }
                    }
                    outcome.unwrap_or_else(|| {
                        op.evaluate(&known)
                            .map_or(Lattice::Varying, Lattice::Constant)
                    })
                }
                _ => Lattice::Varying,
            },
            InstKind::Load { ptr } => match self.fixed_load(i, *ptr) {
                Some((_, value)) => Lattice::Constant(value),
                None => Lattice::Varying,
            },
            InstKind::Phi { incoming } => incoming
                .iter()
                .filter(|(_, from)| self.edges.contains(&(*from, block)))
                .fold(Lattice::Unknown, |acc, (v, _)| acc.meet(self.get(*v))),
            InstKind::Select {
                cond,
                if_true,
                if_false,
            } => match self.get(*cond) {
                Lattice::Unknown => Lattice::Unknown,
                Lattice::Constant(c) => self.get(if c != 0 { *if_true } else { *if_false }),
                Lattice::Varying => self.get(*if_true).meet(self.get(*if_false)),
            },
            InstKind::Call { callee, .. } => match callee {
                Callee::Direct(f) if !program.func(*f).is_declaration => {
                    self.reach_function(*f);
                    self.returns[*f]
                }
                _ => Lattice::Varying,
            },
            InstKind::Return { value } => {
                let f = program.block(block).func;
                let returned = value.map_or(Lattice::Varying, |v| self.get(v));
                let old = self.returns[f];
                let new = old.meet(returned);
                if new != old {
                    self.returns[f] = new;
                    self.insts.extend_from_slice(&self.callers[f]);
                }
                Lattice::Varying
            }
            InstKind::Jump { target } => {
                self.reach_edge(block, *target);
                Lattice::Varying
            }
            InstKind::Branch {
                cond,
                if_true,
                if_false,
            } => {
                match self.get(*cond) {
                    Lattice::Unknown => {}
                    Lattice::Constant(c) => {
                        self.reach_edge(block, if c != 0 { *if_true } else { *if_false })
                    }
                    Lattice::Varying => {
                        self.reach_edge(block, *if_true);
                        self.reach_edge(block, *if_false);
                    }
                }
                Lattice::Varying
            }
            InstKind::Switch {
                value,
                default,
                cases,
            } => {
                match self.get(*value) {
                    Lattice::Unknown => {}
                    Lattice::Constant(c) => {
                        let to = cases
                            .iter()
                            .find(|(k, _)| *k == c)
                            .map_or(*default, |(_, b)| *b);
                        self.reach_edge(block, to);
                    }
                    Lattice::Varying => {
                        for to in inst.kind.successors() {
                            self.reach_edge(block, to);
                        }
                    }
                }
                Lattice::Varying
            }
            _ => Lattice::Varying,
        };
        let result = match self.fixed_values.get(&i) {
            Some(&Some(value)) => Lattice::Constant(value),
            Some(None) => Lattice::Unknown,
            None => result,
        };
        if let Some(r) = inst.result {
            self.set(r, result);
        }
    }
}

/// The program as `fixed` leaves it (see the module documentation). With no fixed globals,
/// nothing is decided and nothing is unreachable that was reachable before.
pub fn specialise(program: &Program, fixed: &[FixedGlobal]) -> Specialised {
    specialise_with(program, fixed, &[], &[])
}

/// [`specialise`] with instructions known to give one value too (`fixed_values`), and
/// functions no run entered (`never_entered`: a call of one never returns, so the rest of its
/// block never runs either). Neither is checked at run time.
pub fn specialise_with(
    program: &Program,
    fixed: &[FixedGlobal],
    fixed_values: &[FixedValue],
    never_entered: &[FuncId],
) -> Specialised {
    let mut propagation = Propagation::new(program, fixed, fixed_values, never_entered);
    propagation.run();
    let p = &propagation;
    let mut out = program.clone();
    let mut folded_loads = Vec::new();
    let (mut decided, mut dead_blocks, mut dead_functions) = (0, 0, 0);
    let inert = || InstKind::Op {
        op: OpKind::Other,
        args: Vec::new(),
    };
    for (k, function) in program.functions.iter_enumerated() {
        if function.is_declaration {
            continue;
        }
        let alive = p.reachable_functions[k];
        dead_functions += usize::from(!alive);
        for &b in &function.blocks {
            let insts = &program.block(b).insts;
            if !p.reachable_blocks[b] {
                dead_blocks += usize::from(alive);
                for &i in insts {
                    out.insts[i].kind = if program.inst(i).kind.is_terminator() {
                        InstKind::Unreachable
                    } else {
                        inert()
                    };
                }
                continue;
            }
            for &i in insts {
                if p.never_run.contains(&i) {
                    out.insts[i].kind = if program.inst(i).kind.is_terminator() {
                        InstKind::Unreachable
                    } else {
                        inert()
                    };
                    continue;
                }
                let inst = program.inst(i);
                let constant = inst
                    .result
                    .is_some_and(|r| matches!(p.get(r), Lattice::Constant(_)));
                let kind = &mut out.insts[i].kind;
                match &inst.kind {
                    InstKind::Branch { .. } | InstKind::Switch { .. } => {
                        let taken: Vec<BlockId> = inst
                            .kind
                            .successors()
                            .into_iter()
                            .filter(|to| p.edges.contains(&(b, *to)))
                            .collect();
                        if taken.len() == 1 && inst.kind.control_decision().is_some() {
                            decided += 1;
                            *kind = InstKind::Jump { target: taken[0] };
                        }
                    }
                    InstKind::Phi { incoming } if !constant => {
                        *kind = InstKind::Phi {
                            incoming: incoming
                                .iter()
                                .filter(|(_, from)| p.edges.contains(&(*from, b)))
                                .copied()
                                .collect(),
                        };
                    }
                    InstKind::Load { ptr } => {
                        if let Some((global, expected)) = p.fixed_load(i, *ptr) {
                            folded_loads.push(FoldedLoad {
                                inst: i,
                                global,
                                expected,
                            });
                            *kind = inert();
                        }
                    }
                    // A value that is the same in every run depends on no option.
                    InstKind::Op { .. } | InstKind::Phi { .. } | InstKind::Select { .. }
                        if constant =>
                    {
                        *kind = inert()
                    }
                    _ => {}
                }
            }
        }
    }
    Specialised {
        program: out,
        folded_loads,
        decided,
        dead_blocks,
        dead_functions,
    }
}
