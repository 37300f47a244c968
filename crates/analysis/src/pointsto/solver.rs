//! The constraint solver: its nodes, the propagation of points-to facts along inclusion
//! edges to a fixpoint, block copies, and the solution it hands back.

use super::*;

/// The constraint solver. Nodes: one per value, one per function's return value, one per
/// cell's contents (created with the cell).
pub(super) struct Solver<'p> {
    pub(super) program: &'p Program,
    pub(super) names: IdVec<FuncId, &'p str>,
    pub(super) wrappers: Wrappers,
    pub(super) nvalues: usize,
    pub(super) nfuncs: usize,
    pub(super) roots: Vec<Root>,
    pub(super) cells: IdVec<CellId, Cell>,
    pub(super) root_cells: Vec<Vec<CellId>>,
    pub(super) field_cells: FxMap<(u32, StructId, u32), CellId>,
    /// Cells every cell of a root holds (the outside points to itself).
    pub(super) root_refs: Vec<Vec<CellId>>,
    /// The roots each root is block-copied into.
    pub(super) copied_to: Vec<Vec<u32>>,
    /// The struct types each root is known to be an object of (empty: not known), which
    /// filter field accesses at its start (see [`Solver::field_target`]).
    pub(super) root_types: Vec<Vec<StructId>>,
    /// Roots that hold no struct: what `main`'s parameters point to (C gives `main` an
    /// argument count and pointers to strings), so no struct field access lands there.
    pub(super) strings_only: Vec<bool>,
    /// The root cell of each global, function, stack slot and allocation site.
    pub(super) root_of_value: FxMap<ValueId, CellId>,
    pub(super) root_of_call: FxMap<InstId, CellId>,

    pub(super) pts: Vec<CellSet>,
    pub(super) delta: Vec<Vec<CellId>>,
    pub(super) succ: Vec<Vec<u32>>,
    pub(super) edges: FxSet<(u32, u32)>,
    /// Complex constraints on value nodes.
    pub(super) loads: IdVec<ValueId, Vec<u32>>,
    pub(super) stores: IdVec<ValueId, Vec<u32>>,
    pub(super) fields: IdVec<ValueId, Vec<(u32, StructId, u32)>>,
    pub(super) indirect: IdVec<ValueId, Vec<InstId>>,
    /// Block copies (destination node, source node) and, per value node, those it is part of.
    pub(super) block_copies: Vec<(u32, u32)>,
    pub(super) copies_of: IdVec<ValueId, Vec<u32>>,
    pub(super) copy_pairs: FxSet<(CellId, CellId)>,

    pub(super) queue: Vec<u32>,
    pub(super) queued: Vec<bool>,
    pub(super) connected: FxMap<InstId, Vec<FuncId>>,
    pub(super) called: IdVec<FuncId, bool>,
    /// Merge every stack, heap and outside object into one root (see [`solve`]).
    pub(super) merge: bool,
    pub(super) merged_root: Option<CellId>,
    /// Points-to facts added so far, and how many are allowed (`None`: no limit).
    pub(super) facts: usize,
    pub(super) budget: Option<usize>,
    /// The keys of struct fields in memory.
    pub(super) views: Views,
    /// Each cell and a struct type it is accessed as (or known to be an object of).
    pub(super) accessed_as: FxSet<(CellId, StructId)>,
}

impl<'p> Solver<'p> {
    pub(super) fn content(&self, c: CellId) -> u32 {
        (self.nvalues + self.nfuncs + c.index()) as u32
    }

    pub(super) fn ret(&self, f: FuncId) -> u32 {
        (self.nvalues + f.index()) as u32
    }

    pub(super) fn new_cell(&mut self, root: u32, field: Option<(StructId, u32)>) -> CellId {
        let c = self.cells.push(Cell { root, field });
        self.root_cells[root as usize].push(c);
        self.pts.push(CellSet::default());
        self.delta.push(Vec::new());
        self.succ.push(Vec::new());
        self.queued.push(false);
        c
    }

    /// The cell of field (structure, field) of the object `c` belongs to, created on first use
    /// with what every cell of its object holds, and copied on into the objects its object is
    /// block-copied into.
    pub(super) fn field_cell(&mut self, c: CellId, structure: StructId, field: u32) -> CellId {
        let (structure, field) = self.views.field_key(structure, field);
        let root = match self.merged_root {
            Some(m) => self.cells[m].root,
            None => self.cells[c].root,
        };
        if let Some(&f) = self.field_cells.get(&(root, structure, field)) {
            return f;
        }
        let f = self.new_cell(root, Some((structure, field)));
        self.field_cells.insert((root, structure, field), f);
        let refs = self.root_refs[root as usize].clone();
        let content = self.content(f);
        self.add_pts(content, &refs);
        for k in 0..self.copied_to[root as usize].len() {
            let to = self.copied_to[root as usize][k];
            let target = self.field_cell(self.root_cells[to as usize][0], structure, field);
            let b = self.content(target);
            self.add_edge(content, b);
        }
        f
    }

    /// The cell `&p->field` points to when `p` points to `c`, for `p` of type `structure *`.
    /// Field 0 shares its struct's address, and the frontend turns an all-zero
    /// `getelementptr` into a plain pointer: it is `c` itself (the root cell, or the
    /// enclosing field's cell). None when `c` starts an object of a type that cannot be
    /// viewed as `structure` (see [`Program::may_access_as`]): C passes every object of a
    /// family (liblzma's coders) through one `void *` beside the function pointer that
    /// knows its type, and the type of the access tells the objects apart again.
    pub(super) fn field_target(
        &mut self,
        c: CellId,
        structure: StructId,
        field: u32,
    ) -> Option<CellId> {
        let cell = self.cells[c];
        if self.strings_only[cell.root as usize] {
            return None;
        }
        if cell.field.is_none() {
            let types = &self.root_types[cell.root as usize];
            if !types.is_empty()
                && !types
                    .iter()
                    .any(|&t| self.program.may_access_as(t, structure, field))
            {
                return None;
            }
        }
        self.accessed_as.insert((c, structure));
        Some(if field == 0 {
            c
        } else {
            self.field_cell(c, structure, field)
        })
    }

    /// Records that object `to` is a block copy of object `from`: every field cell of `from`
    /// (now and later) flows into the same field cell of `to`.
    pub(super) fn copy_object(&mut self, from: u32, to: u32) {
        // Merged, every object's field is the same cell already.
        if self.merge || from == to || self.copied_to[from as usize].contains(&to) {
            return;
        }
        self.copied_to[from as usize].push(to);
        let cells: Vec<CellId> = self.root_cells[from as usize][1..].to_vec();
        for c in cells {
            let (structure, field) = self.cells[c].field.expect("a field cell");
            let target = self.field_cell(self.root_cells[to as usize][0], structure, field);
            let (a, b) = (self.content(c), self.content(target));
            self.add_edge(a, b);
        }
    }

    pub(super) fn enqueue(&mut self, n: u32) {
        if !self.queued[n as usize] {
            self.queued[n as usize] = true;
            self.queue.push(n);
        }
    }

    /// Adds `cells` (sorted or not) to what node `n` points to.
    pub(super) fn add_pts(&mut self, n: u32, cells: &[CellId]) {
        let mut incoming: Vec<CellId> = cells.to_vec();
        incoming.sort_unstable();
        incoming.dedup();
        let mut added = Vec::new();
        self.pts[n as usize].insert_all(&incoming, &mut added);
        if !added.is_empty() {
            self.facts += added.len();
            self.delta[n as usize].extend(added);
            self.enqueue(n);
        }
    }

    pub(super) fn add_edge(&mut self, from: u32, to: u32) {
        if from == to || !self.edges.insert((from, to)) {
            return;
        }
        self.succ[from as usize].push(to);
        if !self.pts[from as usize].is_empty() {
            let cells = self.pts[from as usize].to_vec();
            self.add_pts(to, &cells);
        }
    }

    pub(super) fn block_copy(&mut self, d: ValueId, s: ValueId) {
        if self.is_constant(d) || self.is_constant(s) {
            return;
        }
        let k = self.block_copies.len() as u32;
        self.block_copies.push((d.as_u32(), s.as_u32()));
        self.copies_of[d].push(k);
        if s != d {
            self.copies_of[s].push(k);
        }
        let (dc, sc) = (self.pts[d.index()].to_vec(), self.pts[s.index()].to_vec());
        self.copy_cells(&dc, &sc);
    }

    /// Every destination cell holds what every source cell holds, and the destination objects
    /// get the source objects' fields.
    pub(super) fn copy_cells(&mut self, dst: &[CellId], src: &[CellId]) {
        let is_code =
            |s: &Self, c: CellId| matches!(s.roots[s.cells[c].root as usize], Root::Function(_));
        for &d in dst {
            if is_code(self, d) {
                continue;
            }
            for &s in src {
                if is_code(self, s) {
                    continue;
                }
                if !self.copy_pairs.insert((d, s)) {
                    continue;
                }
                let (a, b) = (self.content(s), self.content(d));
                self.add_edge(a, b);
                let (from, to) = (self.cells[s].root, self.cells[d].root);
                self.copy_object(from, to);
            }
        }
    }

    /// Solves until nothing changes (true) or the budget is spent (false).
    pub(super) fn run(&mut self) -> bool {
        while let Some(n) = self.queue.pop() {
            if self.budget.is_some_and(|b| self.facts > b) {
                return false;
            }
            self.queued[n as usize] = false;
            let mut d = std::mem::take(&mut self.delta[n as usize]);
            if d.is_empty() {
                continue;
            }
            d.sort_unstable();
            let n = n as usize;
            // Functions are cells only to be called: code has no fields and holds no pointers.
            let data: Vec<CellId> = if n < self.nvalues {
                d.iter()
                    .copied()
                    .filter(|c| {
                        !matches!(self.roots[self.cells[*c].root as usize], Root::Function(_))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            if n < self.nvalues {
                let v = ValueId::new(n);
                for k in 0..self.loads[v].len() {
                    let dst = self.loads[v][k];
                    for &c in &data {
                        let content = self.content(c);
                        self.add_edge(content, dst);
                    }
                }
                for k in 0..self.stores[v].len() {
                    let src = self.stores[v][k];
                    for &c in &data {
                        let content = self.content(c);
                        self.add_edge(src, content);
                    }
                }
                for k in 0..self.fields[v].len() {
                    let (dst, structure, field) = self.fields[v][k];
                    let cells: Vec<CellId> = data
                        .iter()
                        .filter_map(|&c| self.field_target(c, structure, field))
                        .collect();
                    self.add_pts(dst, &cells);
                }
                for k in 0..self.indirect[v].len() {
                    let call = self.indirect[v][k];
                    let arity = match &self.program.inst(call).kind {
                        InstKind::Call { args, .. } => args.len(),
                        _ => 0,
                    };
                    for &c in &d {
                        if let Root::Function(g) = self.roots[self.cells[c].root as usize]
                            && self.program.func(g).params.len() <= arity
                        {
                            self.connect(call, g);
                        }
                    }
                }
                for k in 0..self.copies_of[v].len() {
                    let (dn, sn) = self.block_copies[self.copies_of[v][k] as usize];
                    if dn as usize == n {
                        let src = self.pts[sn as usize].to_vec();
                        self.copy_cells(&data, &src);
                    }
                    if sn as usize == n {
                        let dst = self.pts[dn as usize].to_vec();
                        self.copy_cells(&dst, &data);
                    }
                }
            }
            for k in 0..self.succ[n].len() {
                let to = self.succ[n][k];
                self.add_pts(to, &d);
            }
        }
        true
    }

    /// The groups of struct types seen at one place: those a cell is accessed as, and those
    /// of both ends of each block copy (the copy moves fields between their views).
    pub(super) fn views_met(&self) -> Vec<Vec<StructId>> {
        let mut at: FxMap<CellId, Vec<StructId>> = FxMap::default();
        for &(c, t) in &self.accessed_as {
            at.entry(c).or_default().push(t);
        }
        let mut groups: Vec<Vec<StructId>> = Vec::new();
        // A global's initializer stores addresses in fields of nested structs whose cells are
        // not known here: every struct type of those and every one it is accessed as, at any
        // of its cells, is one group (a dispatch table read through another view).
        for (r, root) in self.roots.iter().enumerate() {
            let Root::Global(g) = *root else { continue };
            let refs = &self.program.globals[g].initializer_refs;
            if refs.iter().all(|i| i.field.is_none()) {
                continue;
            }
            let mut g: Vec<StructId> = refs.iter().filter_map(|i| i.field.map(|f| f.0)).collect();
            for c in &self.root_cells[r] {
                g.extend(at.get(c).into_iter().flatten().copied());
            }
            groups.push(g);
        }
        for &(d, s) in &self.copy_pairs {
            let mut g: Vec<StructId> = at.get(&d).into_iter().flatten().copied().collect();
            g.extend(at.get(&s).into_iter().flatten().copied());
            if g.len() > 1 {
                groups.push(g);
            }
        }
        groups.extend(at.into_values().filter(|g| g.len() > 1));
        for g in &mut groups {
            g.sort_unstable();
            g.dedup();
        }
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    pub(super) fn finish(self) -> PointsTo {
        let merged_root = self.merged_root.map_or(u32::MAX, |c| self.cells[c].root);
        let mut sets: Vec<Vec<CellId>> = vec![Vec::new()];
        let mut ids: FxMap<Vec<CellId>, u32> = FxMap::default();
        ids.insert(Vec::new(), 0);
        let mut value_set = IdVec::with_capacity(self.nvalues);
        for v in 0..self.nvalues {
            let p = &self.pts[v].to_vec();
            let id = match ids.get(p) {
                Some(&id) => id,
                None => {
                    let id = sets.len() as u32;
                    sets.push(p.clone());
                    ids.insert(p.clone(), id);
                    id
                }
            };
            value_set.push(id);
        }
        let program = self.program;
        let mut call_targets = Vec::new();
        let mut connected = self.connected;
        for (i, inst) in program.insts.iter_enumerated() {
            if let InstKind::Call { callee, .. } = &inst.kind {
                let mut targets = match callee {
                    Callee::Direct(g) => vec![*g],
                    Callee::Indirect(_) => connected.remove(&i).unwrap_or_default(),
                };
                targets.sort_unstable();
                call_targets.push((i, targets));
            }
        }
        PointsTo {
            roots: self.roots,
            cells: self.cells,
            root_cells: self.root_cells,
            field_cells: self.field_cells,
            sets,
            value_set,
            call_targets,
            merged: self.merge,
            merged_root,
            wrappers: self.wrappers,
            views: self.views,
        }
    }
}
