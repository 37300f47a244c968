//! Memory taint: per-cell contents, and the groups of cells the program reads at once
//! ([`CellGroups`], with the union of their memory kept up to date), who reads each cell
//! ([`CellReaders`]), and the solver's reads, writes and block copies through pointers.

use ir::{FuncId, IdVec, InstKind, Program, ValueId};

use super::call_graph::CallGraph;
use super::call_sites::SiteWrites;
use super::load_time::Phase;
use super::params::ParameterPointers;
use super::solver::Solver;
use crate::options::{FxMap, SetId};
use crate::pointsto::{CellId, PointsTo};

/// Who reads what: per cell the functions reading it, and per value the group a load through
/// it reads and the one an external call (or copy wrapper) reads through it as an argument.
pub(super) struct CellReaders {
    /// Per cell: the functions that read it (sorted), woken when it changes.
    pub readers: IdVec<CellId, Vec<FuncId>>,
    pub groups: CellGroups,
    pub read_group: IdVec<ValueId, u32>,
    pub object_group: IdVec<ValueId, u32>,
}

/// Who reads each cell: loads, and external calls and copy wrappers reading through their
/// arguments (whole objects, see `Solver::read_objects` and `Solver::copy_block`).
pub(super) fn cell_readers(
    program: &Program,
    pts: &PointsTo,
    call_graph: &CallGraph,
    param_pointer: &ParameterPointers,
    site_writes: &SiteWrites,
) -> CellReaders {
    let ncells = pts.cells.len();
    let mut readers: IdVec<CellId, Vec<FuncId>> = IdVec::with_default(ncells);
    let mut groups = CellGroups::new(ncells);
    let mut read_group = IdVec::from_elem(NO_GROUP, program.values.len());
    let mut object_group = IdVec::from_elem(NO_GROUP, program.values.len());
    // The last function registered as a reader of each group.
    let mut group_reader: Vec<FuncId> = Vec::new();
    for (f, func) in program.functions.iter_enumerated() {
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                let mut read = |g: u32, groups: &CellGroups| {
                    // A function reading one group at many loads registers it once.
                    if group_reader.get(g as usize) == Some(&f) {
                        return;
                    }
                    if group_reader.len() <= g as usize {
                        group_reader.resize(g as usize + 1, FuncId::from_u32(u32::MAX));
                    }
                    group_reader[g as usize] = f;
                    for &c in &groups.cells[g as usize] {
                        let list = &mut readers[c];
                        if list.last() != Some(&f) {
                            list.push(f);
                        }
                    }
                };
                match &program.inst(i).kind {
                    InstKind::Load { ptr } => {
                        let g = groups.group(pts, pts.set_of(*ptr), false);
                        read_group[*ptr] = g;
                        read(g, &groups);
                    }
                    InstKind::Call { args, .. }
                        if call_graph.targets_of(i).iter().any(|&g| {
                            program.func(g).is_declaration || pts.wrappers.copies(g).is_some()
                        }) =>
                    {
                        for &a in args {
                            let g = groups.group(pts, pts.set_of(a), true);
                            object_group[a] = g;
                            read(g, &groups);
                        }
                    }
                    // A function reading through a parameter reads, at this call, what the
                    // argument points to (`Solver::memory_behind`).
                    InstKind::Call { args, .. }
                        if call_graph
                            .targets_of(i)
                            .iter()
                            .any(|&g| param_pointer.loads_through[g] != 0) =>
                    {
                        for &a in args {
                            if !program.is_scalar(a) {
                                let g = groups.group(pts, pts.set_of(a), false);
                                read(g, &groups);
                            }
                        }
                    }
                    _ => {}
                }
                // A call site copying what it passes, for a small helper
                // ([`super::call_sites`]), reads the whole objects.
                if let InstKind::Call { args, .. } = &program.inst(i).kind {
                    for &g in call_graph.targets_of(i) {
                        let Some(&mask) = site_writes.reads_params.get(&g) else {
                            continue;
                        };
                        for (j, &a) in args.iter().enumerate().take(64) {
                            if mask & (1 << j) != 0 {
                                let g = groups.group(pts, pts.set_of(a), true);
                                object_group[a] = g;
                                read(g, &groups);
                            }
                        }
                    }
                }
            }
        }
    }
    for list in &mut readers {
        list.sort_unstable();
        list.dedup();
    }
    CellReaders {
        readers,
        groups,
        read_group,
        object_group,
    }
}

impl Solver<'_> {
    /// A block copy (`memcpy(dst, src, n)`, struct assignment): each destination cell gets
    /// the source cells' memory, and the destination objects' fields the source objects'
    /// fields (the points-to phase created them), plus `scalar` (the taint of the pointers,
    /// the size and the control). With `at_site`, the copy of a small helper made at a call
    /// site (in the function, with these arguments): the helper's own objects' memory is
    /// symbolic in its parameters, replaced by the site's arguments ([`super::call_sites`]).
    pub(super) fn copy_block(
        &mut self,
        dst: ValueId,
        src: ValueId,
        scalar: SetId,
        at_site: Option<(FuncId, &[ValueId])>,
    ) {
        let pts = self.pts;
        let source = |solver: &mut Self, m: SetId| match at_site {
            Some((f, args)) => {
                let m = solver.substitute(m, args);
                solver.concrete(f, m)
            }
            None => m,
        };
        for &d in pts.of(dst) {
            for &s in pts.of(src) {
                let m = source(self, self.cell_memory(s));
                let t = self.sets.union(scalar, m);
                self.store_cell(d, t);
                // Merged objects share their field cells: nothing to copy.
                if pts.merged {
                    continue;
                }
                for &sf in &pts.object_cells(s)[1..] {
                    let (structure, field) = pts.cell(sf).field.expect("a field cell");
                    if let Some(df) = pts.field_cell(d, structure, field) {
                        let m = source(self, self.cell_memory(sf));
                        let t = self.sets.union(scalar, m);
                        self.store_cell(df, t);
                    }
                }
            }
        }
    }

    /// What code of the current phase reads in cell `c`: during the initialisation, only what
    /// may be written before its end ([`super::load_time`]).
    #[inline]
    pub(super) fn cell_memory(&self, c: CellId) -> SetId {
        if self.phase == Phase::Initialisation {
            self.init_memory[c]
        } else {
            self.memory[c]
        }
    }

    #[inline]
    fn group_memory(&self, g: u32) -> SetId {
        if self.phase == Phase::Initialisation {
            self.groups.init_union[g as usize]
        } else {
            self.groups.union[g as usize]
        }
    }

    /// What a load through `ptr` may read.
    #[inline]
    pub(super) fn read(&mut self, ptr: ValueId) -> SetId {
        match self.read_group[ptr] {
            NO_GROUP => {
                let mut t = SetId::EMPTY;
                for &c in self.pts.of(ptr) {
                    t = self.sets.union(t, self.cell_memory(c));
                }
                t
            }
            g => self.group_memory(g),
        }
    }

    /// What an external function may read through `ptr`: the whole objects, fields included.
    #[inline]
    pub(super) fn read_objects(&mut self, ptr: ValueId) -> SetId {
        match self.object_group[ptr] {
            NO_GROUP => {
                let mut t = SetId::EMPTY;
                for &c in self.pts.of(ptr) {
                    for &f in self.pts.object_cells(c) {
                        t = self.sets.union(t, self.cell_memory(f));
                    }
                }
                t
            }
            g => self.group_memory(g),
        }
    }

    /// Records that `s` may be written through `ptr`, waking the functions that read it.
    #[inline]
    pub(super) fn write(&mut self, ptr: ValueId, s: SetId) {
        if s == SetId::EMPTY {
            return;
        }
        let set = self.pts.set_of(ptr);
        let key = (set, self.phase == Phase::After);
        let done = self.written.get(&key).copied().unwrap_or(SetId::EMPTY);
        let all = self.sets.union(done, s);
        if all == done {
            return;
        }
        self.written.insert(key, all);
        for &c in self.pts.set(set) {
            self.store_cell(c, s);
        }
    }

    /// Adds `s` to cell `c` as code of the current phase writes it: code that may run in the
    /// initialisation writes what its reads see too.
    #[inline]
    pub(super) fn store_cell(&mut self, c: CellId, s: SetId) {
        if self.phase != Phase::After {
            let old = self.init_memory[c];
            let new = self.sets.union(old, s);
            if new != old {
                self.init_memory[c] = new;
                for k in 0..self.groups.groups_of[c].len() {
                    let g = self.groups.groups_of[c][k] as usize;
                    self.groups.init_union[g] = self.sets.union(self.groups.init_union[g], new);
                }
                self.wake_readers(c);
            }
        }
        let old = self.memory[c];
        let new = self.sets.union(old, s);
        if new != old {
            self.memory[c] = new;
            for k in 0..self.groups.groups_of[c].len() {
                let g = self.groups.groups_of[c][k] as usize;
                self.groups.union[g] = self.sets.union(self.groups.union[g], new);
            }
            self.wake_readers(c);
        }
    }

    #[inline]
    fn wake_readers(&mut self, c: CellId) {
        for k in 0..self.readers[c].len() {
            self.enqueue(self.readers[c][k]);
        }
    }
}

/// No group: the value's reads go cell by cell.
pub(super) const NO_GROUP: u32 = u32::MAX;

/// Sets of cells the program reads at once (the cells a load's pointer may point to; the
/// objects an external call reads through an argument), each with the union of their
/// memory kept up to date as cells change: a load then costs one look-up however many
/// cells its pointer may point to (hundreds in a large program).
pub(super) struct CellGroups {
    index: FxMap<(u32, bool), u32>,
    pub cells: Vec<Vec<CellId>>,
    pub union: Vec<SetId>,
    /// The union of the cells' memory as the initialisation sees it.
    pub init_union: Vec<SetId>,
    /// For each cell, the groups it is in.
    pub groups_of: IdVec<CellId, Vec<u32>>,
}

impl CellGroups {
    fn new(ncells: usize) -> Self {
        CellGroups {
            index: FxMap::default(),
            cells: Vec::new(),
            union: Vec::new(),
            init_union: Vec::new(),
            groups_of: IdVec::with_default(ncells),
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
            self.groups_of[c].push(g);
        }
        self.cells.push(cells);
        self.union.push(SetId::EMPTY);
        self.init_union.push(SetId::EMPTY);
        self.index.insert((set, objects), g);
        g
    }
}
