//! The taint fixpoint: a function-level worklist over value, block, context and return
//! taints, with values symbolic in their function's parameters (parameter labels) that each
//! call site makes concrete ([`Solver::concrete`], [`Solver::substitute`]).

use std::collections::VecDeque;

use ir::{BlockId, Callee, FuncId, IdVec, InstId, InstKind, Program, ValueId};
use space::OptionId;

use super::call_graph::CallGraph;
use super::call_sites::SiteWrites;
use super::is_copier;
use super::library::{LibraryInput, LibraryParameters, LocalObjects};
use super::load_time::Phase;
use super::memory::CellGroups;
use super::params::ParameterPointers;
use super::selectors::SelectorStores;
use crate::ProgramDominance;
use crate::options::{FxMap, SetId, SetInterner};
use crate::pointsto::{ALLOCATORS, CellId, PointsTo};
use crate::reaching::LocalDefinitions;
use crate::wrappers::MemoryCopy;

/// The state of the taint fixpoint (see the module documentation of [`super`]).
pub(super) struct Solver<'a> {
    pub(super) program: &'a Program,
    pub(super) dominance: &'a ProgramDominance,
    pub(super) pts: &'a PointsTo,
    pub(super) call_graph: &'a CallGraph,
    pub(super) sets: SetInterner,
    /// Taint of the contents of each cell.
    pub(super) memory: IdVec<CellId, SetId>,
    /// The cells an option source names (a global, a struct field, what a source call
    /// returns), seeded with their options (see [`super::analyse_with`]).
    pub(super) source_cell: IdVec<CellId, bool>,
    /// Addresses of an option's struct field that points-to found no object for: a load
    /// through one reads the option all the same (the spec says it lives there).
    pub(super) unplaced_sources: FxMap<ValueId, SetId>,
    /// Taint of each cell as code of the initialisation reads it: only what code that may
    /// run then writes ([`super::load_time`]).
    pub(super) init_memory: IdVec<CellId, SetId>,
    /// Per block: when it runs relative to the initialisation.
    pub(super) phases: &'a IdVec<BlockId, Phase>,
    /// The phase of the code being visited: which memory it reads and writes.
    pub(super) phase: Phase,
    /// Per function: it runs only on the way out of the program
    /// ([`super::call_graph::dying_functions`]).
    pub(super) ends_program: IdVec<FuncId, bool>,
    pub(super) groups: CellGroups,
    /// The group a load through each pointer reads, and the one an external call reads
    /// through each argument (`NO_GROUP`: none).
    pub(super) read_group: IdVec<ValueId, u32>,
    pub(super) object_group: IdVec<ValueId, u32>,
    /// What was written through each points-to set already (every cell of it holds it), by
    /// code of the initialisation or either phase (`false`) and by code after it (`true`).
    pub(super) written: FxMap<(u32, bool), SetId>,
    /// Data taint per value, symbolic in the parameters of the value's function: parameter
    /// `k` is the label option `label_base + k` (see [`Solver::concrete`]).
    pub(super) value_taint: IdVec<ValueId, SetId>,
    pub(super) block_taint: IdVec<BlockId, SetId>,
    pub(super) context: IdVec<FuncId, SetId>,
    /// Taint of each function's return value, symbolic in its parameters: a call site
    /// substitutes its own arguments (return values are context-sensitive, the rest is not).
    pub(super) ret_taint: IdVec<FuncId, SetId>,
    /// The concrete taint of each parameter: the union over its call sites' arguments.
    pub(super) param_taint: IdVec<ValueId, SetId>,
    /// The concrete taint of what each parameter points to, as loads through it read it:
    /// the union over its call sites of the memory behind the argument.
    pub(super) param_memory: IdVec<ValueId, SetId>,
    pub(super) param_pointer: &'a ParameterPointers,
    pub(super) local_definitions: &'a LocalDefinitions,
    pub(super) label_base: u32,
    /// Per set: its real options and the parameter labels in it.
    pub(super) split: FxMap<SetId, (SetId, Vec<u32>)>,
    pub(super) readers: &'a IdVec<CellId, Vec<FuncId>>,
    pub(super) queue: VecDeque<FuncId>,
    pub(super) queued: IdVec<FuncId, bool>,
    pub(super) visits: usize,
    pub(super) func_names: &'a IdVec<FuncId, &'a str>,
    /// Per call: what it gives the library, which decides from it how much work it does
    /// (`nanosleep`, `memset`, `write`; see [`super::library`]).
    pub(super) library_input: FxMap<InstId, LibraryInput>,
    pub(super) library_params: LibraryParameters,
    pub(super) local_objects: &'a LocalObjects,
    /// Stores of setters with a constant selector, made at their call sites
    /// ([`super::selectors`]).
    pub(super) selectors: &'a SelectorStores,
    /// Per selector function: the taint of each of its deferred stores as its call sites last
    /// saw it (symbolic in its parameters); a change sends its callers round again.
    pub(super) selector_taints: FxMap<FuncId, Vec<SetId>>,
    /// Per block: it runs only on the way to ending the program ([`super::cold`]); a call
    /// from there does not put its control into the callee's context.
    pub(super) cold: &'a IdVec<BlockId, bool>,
    /// Writes of small helpers made at their call sites ([`super::call_sites`]).
    pub(super) site_writes: &'a SiteWrites,
    /// Per such helper: the taint of each of its deferred writes as its call sites last saw
    /// it (symbolic in its parameters); a change sends its callers round again.
    pub(super) site_write_taints: FxMap<FuncId, Vec<SetId>>,
    /// Per call site and block copy of a small helper made there: what it copied last.
    pub(super) site_copies: FxMap<(InstId, InstId), Vec<SetId>>,
}

impl Solver<'_> {
    /// Visits the queued functions until nothing changes.
    pub(super) fn run(&mut self) {
        while let Some(f) = self.queue.pop_front() {
            self.queued[f] = false;
            self.visit(f);
        }
    }

    #[inline]
    pub(super) fn enqueue(&mut self, f: FuncId) {
        if !self.queued[f] && !self.program.func(f).is_declaration {
            self.queued[f] = true;
            self.queue.push_back(f);
        }
    }

    fn taint(&self, v: ValueId) -> SetId {
        self.value_taint[v]
    }

    /// A set's real options and the parameter labels in it.
    pub(super) fn split(&mut self, s: SetId) -> (SetId, Vec<u32>) {
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
    pub(super) fn concrete(&mut self, f: FuncId, s: SetId) -> SetId {
        let (mut out, labels) = self.split(s);
        let max = self.param_pointer.max_params;
        for l in labels {
            let (k, behind) = if l < max { (l, false) } else { (l - max, true) };
            if let Some(&p) = self.program.func(f).params.get(k as usize) {
                let t = if behind {
                    self.param_memory[p]
                } else {
                    self.param_taint[p]
                };
                out = self.sets.union(out, t);
            }
        }
        out
    }

    /// What a load through `a` (an argument of a call in `f`) reads, symbolic in `f`'s
    /// parameters when `a` points where one of them does.
    pub(super) fn memory_behind(&mut self, a: ValueId) -> SetId {
        match self.param_pointer.of(a) {
            Some(j) => self.sets.singleton(OptionId(
                self.label_base + self.param_pointer.max_params + j,
            )),
            None => self.read(a),
        }
    }

    /// A callee's return taint at a call site: each parameter label replaced by the
    /// argument's taint (symbolic in the caller's parameters).
    pub(super) fn substitute(&mut self, ret: SetId, args: &[ValueId]) -> SetId {
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

    /// Adds `given` to what call `i` (in `f`, under control taint `control`) gives the
    /// library; the parameters of `f` in it become library parameters of `f`, so `f`'s
    /// callers pass them on — unless a decision of `f` on them controls the call already
    /// (its region in `f` times the call).
    fn add_library_input(&mut self, f: FuncId, i: InstId, given: LibraryInput, control: SetId) {
        let old = self.library_input.get(&i).copied().unwrap_or_default();
        let new = LibraryInput {
            values: self.sets.union(old.values, given.values),
            objects: self.sets.union(old.objects, given.objects),
        };
        self.library_input.insert(i, new);
        let (_, mut labels) = self.split(given.values);
        let (_, decided) = self.split(control);
        labels.retain(|l| !decided.contains(l));
        if labels.is_empty() {
            return;
        }
        let base = self.label_base;
        let labels = self.sets.intern(crate::OptionSet::from_ids(
            labels.iter().map(|l| OptionId(base + l)),
        ));
        let old = self.library_params[f];
        let new = self.sets.union(old, labels);
        if new != old {
            self.library_params[f] = new;
            for k in 0..self.call_graph.callers[f].len() {
                let call = self.call_graph.callers[f][k];
                self.enqueue(self.program.func_of(call));
            }
        }
    }

    /// Taint of the decision ending block `b` (local index) of `f`, or its control taint if it
    /// does not decide anything.
    fn decision_taint(&mut self, b: BlockId) -> SetId {
        let lct = self.block_taint[b];
        match self.program.terminator(b) {
            Some(t) => match self.program.inst(t).kind.control_decision() {
                Some(cond) => {
                    let ct = self.taint(cond);
                    self.sets.union(lct, ct)
                }
                None => lct,
            },
            None => lct,
        }
    }

    pub(super) fn visit(&mut self, f: FuncId) {
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
                self.phase = self.phases[b];
                let mut lct = self.block_taint[b];
                for &a in &dom.control_deps[local as usize] {
                    let d = self.decision_taint(func.blocks[a as usize]);
                    lct = self.sets.union(lct, d);
                }
                if lct != self.block_taint[b] {
                    self.block_taint[b] = lct;
                    changed = true;
                }
                let full = self.sets.union(lct, self.context[f]);
                // What a function on the way out of the program writes is read only by code
                // that runs before the exit, already under its context: the context does not
                // go into memory, or gzip's `do_exit` (`env = NULL`, called under any option)
                // would reach the start of `main` (see [`dying_functions`]).
                let store_context = if self.ends_program[f] { lct } else { full };
                for &i in &program.block(b).insts {
                    let inst = program.inst(i);
                    let mut t = lct;
                    // A small helper's own stack objects are read only by the helper: what it
                    // hands on gets a context where it goes ([`super::call_sites`]).
                    let store_context = if self.site_writes.local[i] {
                        lct
                    } else {
                        store_context
                    };
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
                        InstKind::Load { ptr } if self.unplaced_sources.contains_key(ptr) => {
                            t = self.sets.union(t, self.taint(*ptr));
                            t = self.sets.union(t, self.unplaced_sources[ptr]);
                        }
                        InstKind::Load { ptr }
                            if self.local_definitions.of(i).is_some()
                                && !self.pts.of(*ptr).iter().any(|&c| self.source_cell[c]) =>
                        {
                            // A global this function set before (`ifd = open (…)`): what
                            // those stores stored, under their control, and nothing else. Not
                            // an option's own cell: what argument parsing stores there is the
                            // option (`if (small && level > 2)` right after the parsing loop).
                            t = self.sets.union(t, self.taint(*ptr));
                            for &st in self.local_definitions.of(i).expect("checked") {
                                if let InstKind::Store { value, ptr } = &program.inst(st).kind {
                                    t = self.sets.union(t, self.taint(*value));
                                    t = self.sets.union(t, self.taint(*ptr));
                                    let control = self.block_taint[program.inst(st).block];
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
                        // A selector's store: its call sites make it ([`super::selectors`]).
                        InstKind::Store { .. } if self.selectors.deferred[i] => {}
                        // A small helper's store through a parameter: its call sites make it.
                        InstKind::Store { .. } if self.site_writes.deferred[i] => {}
                        InstKind::Store { value, ptr } => {
                            let mut s = self.sets.union(store_context, self.taint(*value));
                            s = self.sets.union(s, self.taint(*ptr));
                            let s = self.written_taint(f, i, s);
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
                            // Which function ran decides the result too.
                            t = self.sets.union(t, pointer_taint);
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
                                        if !self.site_writes.deferred[i] {
                                            let scalar = self.written_taint(f, i, scalar);
                                            self.copy_block(dst, src, scalar, None);
                                        }
                                        if callee.is_declaration {
                                            t = self.sets.union(t, scalar);
                                            // How many bytes are copied.
                                            let mut values = SetId::EMPTY;
                                            for &a in args {
                                                values = self.sets.union(values, self.taint(a));
                                            }
                                            let given = LibraryInput {
                                                values,
                                                objects: SetId::EMPTY,
                                            };
                                            self.add_library_input(f, i, given, lct);
                                            continue;
                                        }
                                    }
                                    MemoryCopy::None => {}
                                }
                                if callee.is_declaration {
                                    let mut input = SetId::EMPTY;
                                    let mut given = LibraryInput::default();
                                    let contents_ignored = |k: usize| {
                                        crate::pointsto::ignores_contents(self.func_names[g], k)
                                    };
                                    for (k, &a) in args.iter().enumerate() {
                                        let v = self.taint(a);
                                        input = self.sets.union(input, v);
                                        given.values = self.sets.union(given.values, v);
                                        if contents_ignored(k) {
                                            continue;
                                        }
                                        let m = self.read_objects(a);
                                        input = self.sets.union(input, m);
                                        match self.local_objects.stores_into(program, a) {
                                            Some(stores) => {
                                                for &st in stores {
                                                    let st = program.inst(st);
                                                    if let InstKind::Store { value, .. } = st.kind {
                                                        let s = self.sets.union(
                                                            self.taint(value),
                                                            self.block_taint[st.block],
                                                        );
                                                        given.values =
                                                            self.sets.union(given.values, s);
                                                    }
                                                }
                                            }
                                            None => {
                                                given.objects = self.sets.union(given.objects, m)
                                            }
                                        }
                                    }
                                    // A fresh address does not depend on the options that chose
                                    // the object's size (the size itself and the contents do).
                                    let name = crate::pointsto::libc_name(self.func_names[g]);
                                    if !ALLOCATORS.contains(&name) {
                                        t = self.sets.union(t, input);
                                    }
                                    if !ir::library::is_negligible_work(name) {
                                        self.add_library_input(f, i, given, lct);
                                    }
                                    if is_copier(self.func_names[g])
                                        && !self.site_writes.deferred[i]
                                        && let Some(&dst) = args.first()
                                    {
                                        let s = self.sets.union(input, store_context);
                                        let s = self.written_taint(f, i, s);
                                        self.write(dst, s);
                                    }
                                    continue;
                                }
                                let loads_through = self.param_pointer.loads_through[g];
                                for (k, (&p, &a)) in
                                    callee.params.iter().zip(args.iter()).enumerate()
                                {
                                    let old = self.param_taint[p];
                                    let arg = self.concrete(f, self.taint(a));
                                    let new = self.sets.union(old, arg);
                                    if new != old {
                                        self.param_taint[p] = new;
                                        self.enqueue(g);
                                    }
                                    if k < 64 && loads_through & (1 << k) != 0 {
                                        let old = self.param_memory[p];
                                        let m = self.memory_behind(a);
                                        let m = self.concrete(f, m);
                                        let new = self.sets.union(old, m);
                                        if new != old {
                                            self.param_memory[p] = new;
                                            self.enqueue(g);
                                        }
                                    }
                                }
                                let selectors = self.selectors;
                                if let Some(stores) = selectors.at_site.get(&(i, g)) {
                                    for &st in stores {
                                        let InstKind::Store { value, ptr } = &program.inst(st).kind
                                        else {
                                            continue;
                                        };
                                        let block = program.inst(st).block;
                                        let mut s = self
                                            .sets
                                            .union(self.block_taint[block], self.taint(*value));
                                        s = self.sets.union(s, self.taint(*ptr));
                                        let s = self.substitute(s, args);
                                        let s = self.sets.union(s, site);
                                        let s = self.concrete(f, s);
                                        self.write(*ptr, s);
                                    }
                                }
                                let old = self.context[g];
                                let site = if self.cold[b] {
                                    SetId::EMPTY
                                } else {
                                    self.concrete(f, site)
                                };
                                self.write_at_site(f, i, g, args, site);
                                let new = self.sets.union(old, site);
                                if new != old {
                                    self.context[g] = new;
                                    self.enqueue(g);
                                }
                                let r = self.substitute(self.ret_taint[g], args);
                                t = self.sets.union(t, r);
                                // What this site passes to the callee's library calls.
                                if self.library_params[g] != SetId::EMPTY {
                                    let values = self.substitute(self.library_params[g], args);
                                    let given = LibraryInput {
                                        values,
                                        objects: SetId::EMPTY,
                                    };
                                    self.add_library_input(f, i, given, lct);
                                }
                            }
                        }
                        InstKind::Return { value: Some(v) } => {
                            let r = self.sets.union(lct, self.taint(*v));
                            let old = self.ret_taint[f];
                            let new = self.sets.union(old, r);
                            if new != old {
                                self.ret_taint[f] = new;
                                for k in 0..self.call_graph.callers[f].len() {
                                    let call = self.call_graph.callers[f][k];
                                    self.enqueue(program.func_of(call));
                                }
                            }
                        }
                        _ => {}
                    }
                    if let Some(r) = inst.result {
                        let old = self.value_taint[r];
                        let new = self.sets.union(old, t);
                        if new != old {
                            self.value_taint[r] = new;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        // Functions other than main run in one phase.
        self.phase = func.blocks.first().map_or(Phase::Any, |&b| self.phases[b]);
        self.site_writes_changed(f);
        let selectors = self.selectors;
        if let Some(stores) = selectors.stores.get(&f) {
            let taints: Vec<SetId> = stores
                .iter()
                .map(|&st| match &program.inst(st).kind {
                    InstKind::Store { value, ptr } => {
                        let block = program.inst(st).block;
                        let s = self.sets.union(self.block_taint[block], self.taint(*value));
                        self.sets.union(s, self.taint(*ptr))
                    }
                    _ => SetId::EMPTY,
                })
                .collect();
            if self.selector_taints.get(&f) != Some(&taints) {
                self.selector_taints.insert(f, taints);
                for k in 0..self.call_graph.callers[f].len() {
                    let call = self.call_graph.callers[f][k];
                    self.enqueue(program.func_of(call));
                }
            }
        }
    }
}
