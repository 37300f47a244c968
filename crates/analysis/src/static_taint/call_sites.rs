//! Small helpers whose writes through their parameters are made at each call site: a
//! `reset (state)` that fills a local struct and copies it into `*state`, called once under
//! option A on one object and once under option B on another.
//!
//! Analysed once for all call sites, such a helper's stores carry its context, the union of
//! every site's control, and they go into every object any site passes (points-to is not
//! context-sensitive): A and B would meet in both objects and in every loop that reads them.
//! Instead, as if the helper were inlined at each call site, its stores and block copies
//! through a parameter are made by the call site, into what that site passes, with the
//! callee's taint there (its parameter labels replaced by the site's arguments) and the
//! site's own control and context. Its writes into its own stack objects carry no context:
//! only the helper reads them, and what it hands on from them (the copy into `*state`, a
//! return value, a store elsewhere, a call) gets a context where it goes. The statements of
//! the helper keep the union context as before.
//!
//! Bounded: functions of at most [`MAX_INSTRUCTIONS`] instructions that do not call
//! themselves and whose address is not taken (only direct calls of the program call them),
//! one level deep (a site inside another such helper writes through that
//! helper's parameter, whose points-to set is the union over its own sites).

use ir::{FuncId, IdVec, InstId, InstKind, Program, ValueDef, ValueId};

use super::call_graph::{CallGraph, address_taken};
use super::is_copier;
use super::library::local_object;
use super::params::ParameterPointers;
use super::selectors::SelectorStores;
use super::solver::Solver;
use crate::options::{FxMap, FxSet, SetId};
use crate::pointsto::{CellId, PointsTo, fills_without_reading};
use crate::wrappers::MemoryCopy;

/// The largest function whose writes through its parameters its call sites make.
pub(super) const MAX_INSTRUCTIONS: usize = 200;

/// The writes of small helpers that their call sites make ([`per_call_site_writes`]).
pub(super) struct SiteWrites {
    /// Per instruction: a store or block copy through a parameter of a small helper, made at
    /// the helper's call sites instead.
    pub(super) deferred: IdVec<InstId, bool>,
    /// Per instruction: a write of such a helper into its own stack object, made without the
    /// helper's context.
    pub(super) local: IdVec<InstId, bool>,
    /// Per helper: its deferred writes, each with the parameter it writes through.
    pub(super) writes: FxMap<FuncId, Vec<(InstId, usize)>>,
    /// Per helper: bit j set if a deferred copy reads through parameter j (its call sites
    /// read what they pass there).
    pub(super) reads_params: FxMap<FuncId, u64>,
}

/// Finds the small helpers whose writes through their parameters each call site makes.
pub(super) fn per_call_site_writes(
    program: &Program,
    pts: &PointsTo,
    call_graph: &CallGraph,
    param_pointer: &ParameterPointers,
    selectors: &SelectorStores,
    dying: &IdVec<FuncId, bool>,
) -> SiteWrites {
    let mut out = SiteWrites {
        deferred: IdVec::from_elem(false, program.insts.len()),
        local: IdVec::from_elem(false, program.insts.len()),
        writes: FxMap::default(),
        reads_params: FxMap::default(),
    };
    // A function whose address is taken may be called from outside the program (a callback
    // handed to the library), where no call site would make its writes.
    let taken = address_taken(program);
    // Helpers whose writes into their own stack objects may skip the context.
    let mut candidates: Vec<(FuncId, Vec<InstId>)> = Vec::new();
    for (f, func) in program.functions.iter_enumerated() {
        if func.is_declaration
            || func.name == "main"
            || call_graph.callers[f].is_empty()
            || taken[f]
            || selectors.stores.contains_key(&f)
            || dying[f]
            || pts.wrappers.copies(f).is_some()
        {
            continue;
        }
        let insts: Vec<InstId> = program.instructions_of(f).collect();
        if insts.len() > MAX_INSTRUCTIONS
            || insts.iter().any(|&i| call_graph.targets_of(i).contains(&f))
        {
            continue;
        }
        // The one external copier a call reaches, if it is one.
        let copier = |i: InstId| match call_graph.targets_of(i) {
            [g] if program.func(*g).is_declaration && is_copier(&program.func(*g).name) => Some(*g),
            _ => None,
        };
        let mut writes = Vec::new();
        let mut reads_params = 0u64;
        let mut local = Vec::new();
        // Whether the address of a stack object of `f` leaves it other than into the library.
        let mut escapes = false;
        for &i in &insts {
            match &program.inst(i).kind {
                InstKind::Store { value, ptr } => {
                    escapes |= local_object(program, *value).is_some();
                    if let Some(k) = param_pointer.of(*ptr) {
                        writes.push((i, k as usize));
                    } else if local_object(program, *ptr).is_some() {
                        local.push(i);
                    }
                }
                InstKind::Return { value: Some(v) } => {
                    escapes |= local_object(program, *v).is_some();
                }
                InstKind::Call { args, .. } => match (copier(i), args.first()) {
                    (Some(_), Some(&dst)) => {
                        if let Some(k) = param_pointer.of(dst) {
                            writes.push((i, k as usize));
                            for &a in &args[1..] {
                                if let Some(j) = param_pointer.of(a).filter(|&j| j < 64) {
                                    reads_params |= 1 << j;
                                }
                            }
                        } else if local_object(program, dst).is_some() {
                            local.push(i);
                        }
                    }
                    _ => {
                        let into_library = call_graph
                            .targets_of(i)
                            .iter()
                            .all(|&g| program.func(g).is_declaration);
                        escapes |= !into_library
                            && args.iter().any(|&a| local_object(program, a).is_some());
                    }
                },
                _ => {}
            }
        }
        if writes.is_empty() {
            continue;
        }
        for &(i, _) in &writes {
            out.deferred[i] = true;
        }
        if !escapes {
            candidates.push((f, local));
        }
        out.writes.insert(f, writes);
        if reads_params != 0 {
            out.reads_params.insert(f, reads_params);
        }
    }
    for f in own_stack_objects(program, pts, &candidates) {
        let (_, local) = candidates
            .iter()
            .find(|(g, _)| *g == f)
            .expect("a candidate");
        for &i in local {
            out.local[i] = true;
        }
    }
    out
}

/// Of the helpers with their writes into their own stack objects, those whose objects no
/// other function may point to (points-to may merge objects beyond its budget, and an
/// address may leave by ways the syntactic check does not see): only there may memory hold
/// taint symbolic in the helper's parameters.
fn own_stack_objects(
    program: &Program,
    pts: &PointsTo,
    candidates: &[(FuncId, Vec<InstId>)],
) -> Vec<FuncId> {
    let mut owner: FxMap<CellId, FuncId> = FxMap::default();
    let mut shared: FxSet<FuncId> = FxSet::default();
    for (f, local) in candidates {
        for &i in local {
            let ptr = match &program.inst(i).kind {
                InstKind::Store { ptr, .. } => *ptr,
                InstKind::Call { args, .. } => args[0],
                _ => continue,
            };
            for &c in pts.of(ptr) {
                for &cell in pts.object_cells(c) {
                    if let Some(g) = owner.insert(cell, *f)
                        && g != *f
                    {
                        shared.insert(g);
                        shared.insert(*f);
                    }
                }
            }
        }
    }
    if owner.is_empty() {
        return Vec::new();
    }
    let mut seen: FxSet<(u32, FuncId)> = FxSet::default();
    for (v, def) in program.values.iter_enumerated() {
        let f = match def {
            ValueDef::Inst(i) => program.func_of(*i),
            ValueDef::Param { func, .. } => *func,
            _ => continue,
        };
        if !seen.insert((pts.set_of(v), f)) {
            continue;
        }
        for c in pts.of(v) {
            if let Some(&g) = owner.get(c)
                && g != f
            {
                shared.insert(g);
            }
        }
    }
    candidates
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| !shared.contains(f))
        .collect()
}

impl SiteWrites {
    /// Per deferred write: the parameter it writes through, and for a block copy the one it
    /// copies from, if any (what `analysis::explain` needs to follow it to its call sites).
    pub(super) fn parameters(
        &self,
        program: &Program,
        pts: &PointsTo,
        call_graph: &CallGraph,
        param_pointer: &ParameterPointers,
    ) -> FxMap<InstId, (usize, Option<usize>)> {
        let mut out = FxMap::default();
        for writes in self.writes.values() {
            for &(w, k) in writes {
                let src = match call_graph.targets_of(w) {
                    [h] => match pts.wrappers.copy_at(program, w, *h) {
                        MemoryCopy::Block { src, .. } => param_pointer.of(src).map(|j| j as usize),
                        _ => None,
                    },
                    _ => None,
                };
                out.insert(w, (k, src));
            }
        }
        out
    }

    /// The value at a call site (with arguments `args`) that a helper's `v` stands for: the
    /// argument when `v` points where a parameter does.
    pub(super) fn at_site(
        param_pointer: &ParameterPointers,
        v: ValueId,
        args: &[ValueId],
    ) -> ValueId {
        param_pointer
            .of(v)
            .and_then(|j| args.get(j as usize).copied())
            .unwrap_or(v)
    }
}

impl Solver<'_> {
    /// Makes the deferred writes of helper `g` at call `call` (in `f`, with arguments `args`),
    /// under `site`: the control and context this site gives the helper.
    pub(super) fn write_at_site(
        &mut self,
        f: FuncId,
        call: InstId,
        g: FuncId,
        args: &[ValueId],
        site: SetId,
    ) {
        let site_writes = self.site_writes;
        let Some(writes) = site_writes.writes.get(&g) else {
            return;
        };
        let program = self.program;
        for &(w, k) in writes {
            let Some(&dst) = args.get(k) else { continue };
            let inst = program.inst(w);
            let mut scalar = self.block_taint[inst.block];
            match &inst.kind {
                InstKind::Store { value, ptr } => {
                    scalar = self.sets.union(scalar, self.value_taint[*value]);
                    scalar = self.sets.union(scalar, self.value_taint[*ptr]);
                    let s = self.substitute(scalar, args);
                    let s = self.sets.union(s, site);
                    let s = self.concrete(f, s);
                    self.write(dst, s);
                }
                InstKind::Call { args: copied, .. } => {
                    for &a in copied {
                        scalar = self.sets.union(scalar, self.value_taint[a]);
                    }
                    let s = self.substitute(scalar, args);
                    let s = self.sets.union(s, site);
                    let scalar = self.concrete(f, s);
                    let h = self.call_graph.targets_of(w)[0];
                    match self.pts.wrappers.copy_at(program, w, h) {
                        MemoryCopy::Block { src, .. } => {
                            let src = SiteWrites::at_site(self.param_pointer, src, args);
                            // A caller is visited often: copy again only what changed.
                            let key = self.site_copy_key(scalar, src, args);
                            if self.site_copies.get(&(call, w)) != Some(&key) {
                                self.site_copies.insert((call, w), key);
                                self.copy_block(dst, src, scalar, Some((f, args)));
                            }
                        }
                        _ => {
                            let mut s = scalar;
                            for (j, &a) in copied.iter().enumerate() {
                                if !fills_without_reading(self.func_names[h], j) {
                                    let a = SiteWrites::at_site(self.param_pointer, a, args);
                                    let m = self.read_objects(a);
                                    let m = self.substitute(m, args);
                                    let m = self.concrete(f, m);
                                    s = self.sets.union(s, m);
                                }
                            }
                            self.write(dst, s);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Everything a block copy at a call site copies from: its scalar taint, the memory of
    /// the source objects' cells, and when that memory holds parameter labels, what the
    /// site's arguments substitute for them.
    fn site_copy_key(&mut self, scalar: SetId, src: ValueId, args: &[ValueId]) -> Vec<SetId> {
        let pts = self.pts;
        let mut key = vec![scalar];
        let mut labels = false;
        for &c in pts.of(src) {
            for &cell in pts.object_cells(c) {
                let m = self.cell_memory(cell);
                labels |= !self.split(m).1.is_empty();
                key.push(m);
            }
        }
        if labels {
            for &a in args {
                key.push(self.value_taint[a]);
                if !self.program.is_scalar(a) {
                    let m = self.memory_behind(a);
                    key.push(m);
                }
            }
        }
        key
    }

    /// What a write `i` of `f` writes, given its taint `s` symbolic in `f`'s parameters: the
    /// concrete taint, but for a small helper's own stack objects, which keep the symbolic
    /// one for its call sites' copies to substitute.
    pub(super) fn written_taint(&mut self, f: FuncId, i: InstId, s: SetId) -> SetId {
        if self.site_writes.local[i] {
            s
        } else {
            self.concrete(f, s)
        }
    }

    /// Everything outside the solver sees concrete taints: the memory of small helpers'
    /// own stack objects with the parameter labels replaced by the parameters' taints.
    pub(super) fn concrete_local_memory(&mut self) {
        let program = self.program;
        for (i, &local) in self.site_writes.local.iter_enumerated() {
            if !local {
                continue;
            }
            let ptr = match &program.inst(i).kind {
                InstKind::Store { ptr, .. } => *ptr,
                InstKind::Call { args, .. } if !args.is_empty() => args[0],
                _ => continue,
            };
            let f = program.func_of(i);
            for &c in self.pts.of(ptr) {
                for &cell in self.pts.object_cells(c) {
                    let m = self.memory[cell];
                    self.memory[cell] = self.concrete(f, m);
                }
            }
        }
    }

    /// After a visit of helper `g`: what its deferred writes would write (symbolic in its
    /// parameters, and the memory of its own objects they copy); a change sends its callers
    /// round again to make them.
    pub(super) fn site_writes_changed(&mut self, g: FuncId) {
        let site_writes = self.site_writes;
        let Some(writes) = site_writes.writes.get(&g) else {
            return;
        };
        let program = self.program;
        let mut taints = Vec::with_capacity(writes.len());
        for &(w, _) in writes {
            let inst = program.inst(w);
            let mut t = self.block_taint[inst.block];
            let mut used = Vec::new();
            inst.kind.for_each_use(|v| used.push(v));
            let is_call = matches!(inst.kind, InstKind::Call { .. });
            for v in used {
                t = self.sets.union(t, self.value_taint[v]);
                // What a copy reads from the helper's own objects.
                if is_call && self.param_pointer.of(v).is_none() && !program.is_scalar(v) {
                    let m = self.read_objects(v);
                    t = self.sets.union(t, m);
                }
            }
            taints.push(t);
        }
        if self.site_write_taints.get(&g) != Some(&taints) {
            self.site_write_taints.insert(g, taints);
            for k in 0..self.call_graph.callers[g].len() {
                let call = self.call_graph.callers[g][k];
                self.enqueue(program.func_of(call));
            }
        }
    }
}
