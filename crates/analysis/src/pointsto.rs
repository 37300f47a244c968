//! Where pointers point: inclusion-based (Andersen) points-to analysis over field-sensitive
//! memory cells.
//!
//! Abstract memory is made of *roots*: globals, stack slots, heap allocation sites (calls of
//! `malloc` and friends and of the program's own allocation wrappers, see
//! [`crate::wrappers`]), objects returned by other external functions, functions (the targets
//! of indirect calls) and one object for memory that comes from outside the program (what the
//! parameters of functions nothing in the program calls point to, such as `main`'s `argv`).
//! A root is divided into *cells*: the root cell, which is also field 0 and whatever plain
//! pointers into the object reach (arrays are collapsed), and one cell per (struct type,
//! field) accessed through a field address `&p->f`. Field cells are keyed by the root, not by
//! the enclosing field, so `a.inner.x` is the cell (a, Inner, x) however deep `inner` is:
//! the number of cells stays finite with nested and recursive structs, at the price of
//! merging the same struct type embedded twice in one object. Struct types that share an
//! initial sequence key those fields alike where the solution shows one object viewed as
//! both ([`crate::views`]), which takes a few solves.
//!
//! Each pointer-holding thing — a value, a function's return value, a cell's contents — has a
//! set of cells it may point to, solved as the least fixpoint of inclusion constraints with
//! difference propagation: copies (`p = q`, arguments to parameters), loads (`p = *q`),
//! stores (`*p = q`), field addresses, block copies (`memcpy`, struct assignment: the
//! destination's cells get the source's contents, field by field) and indirect calls, whose
//! targets are found as function cells reach the called pointer.
//!
//! Why inclusion and not unification: C programs pass their state around as `void *` (every
//! coder of liblzma through one `void *coder` parameter of its function-pointer table), and
//! unification then makes all those objects one, so that an option stored in any of them is
//! read from all of them. With inclusion a `void *` may point to many objects without the
//! objects becoming one.

use ir::{Callee, FuncId, GlobalId, IdVec, InstId, InstKind, Program, StructId, ValueDef, ValueId};

use crate::options::{FxMap, FxSet};
use crate::views::Views;
use crate::wrappers::{MemoryCopy, Wrappers};

/// Allocation functions: their result is a fresh heap object per call site.
pub const ALLOCATORS: &[&str] = &["malloc", "calloc", "realloc", "strdup", "strndup"];

/// External functions whose result points into their first argument.
const RETURNS_FIRST_ARGUMENT: &[&str] = &[
    "realloc", "strchr", "strrchr", "strstr", "memchr", "strpbrk", "strcpy", "strncpy", "strcat",
    "strncat", "memcpy", "memmove", "memset", "strtok",
];

/// The C library function a name stands for: glibc's `_FORTIFY_SOURCE` checked variants
/// (`__memcpy_chk`, `__strcpy_chk`, …) behave as the plain ones.
pub(crate) fn libc_name(name: &str) -> &str {
    name.strip_prefix("__")
        .and_then(|n| n.strip_suffix("_chk"))
        .unwrap_or(name)
}

/// Library functions that fill a buffer argument (its position) without reading it: what
/// the buffer held before changes neither their result nor their work (`fread`'s count is
/// the file's and the size asked for).
const FILLS_WITHOUT_READING: &[(&str, usize)] = &[
    ("fread", 0),
    ("fread_unlocked", 0),
    ("read", 1),
    ("pread", 1),
    ("pread64", 1),
    ("recv", 1),
    ("fgets", 0),
];

/// Whether external function `name` only writes through its argument `arg`.
pub(crate) fn fills_without_reading(name: &str, arg: usize) -> bool {
    let name = libc_name(name);
    FILLS_WITHOUT_READING.contains(&(name, arg))
}

/// Library functions that write out a buffer argument (its position) of a length they are
/// given: their work and their result follow the length, whatever the bytes are.
const WRITES_OUT_COUNTED: &[(&str, usize)] = &[
    ("fwrite", 0),
    ("fwrite_unlocked", 0),
    ("write", 1),
    ("pwrite", 1),
    ("pwrite64", 1),
    ("send", 1),
];

/// Whether what external function `name` finds behind its argument `arg` decides neither
/// its work nor its result: it fills the buffer ([`fills_without_reading`]) or writes out a
/// given number of its bytes.
pub(crate) fn ignores_contents(name: &str, arg: usize) -> bool {
    fills_without_reading(name, arg) || WRITES_OUT_COUNTED.contains(&(libc_name(name), arg))
}

/// An external function whose result points into its first argument.
pub(crate) fn returns_first_argument(name: &str) -> bool {
    RETURNS_FIRST_ARGUMENT.contains(&libc_name(name))
}

/// Copies of memory blocks, which keep the source's layout (`memcpy`, struct assignment).
pub(crate) fn is_block_copy(name: &str) -> bool {
    let name = libc_name(name);
    matches!(name, "memcpy" | "memmove")
        || name.starts_with("llvm.memcpy")
        || name.starts_with("llvm.memmove")
}

/// An abstract object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    Global(GlobalId),
    /// A stack slot (`alloca`).
    Stack(InstId),
    /// A heap object allocated at this call (of an allocator or an allocation wrapper).
    Heap(InstId),
    /// What an external function returned at this call (`getenv`, `localtime`, …).
    Returned(InstId),
    Function(FuncId),
    /// Memory from outside the program that a parameter of a function nothing in the program
    /// calls points to (`main`'s `argv`, a callback's argument): self-referencing, one per
    /// parameter so that unused library entry points do not share theirs.
    Outside(FuncId, u32),
    /// Every stack, heap and outside object at once: a program too large for per-object
    /// points-to within the budget (see [`solve`]).
    Merged,
}

ir::id_type!(
    /// A cell: a root, or one of its struct fields.
    pub CellId, "c"
);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub root: u32,
    /// `None` for the root cell.
    pub field: Option<(StructId, u32)>,
}

/// The solved points-to relation.
#[derive(Clone, Debug, Default)]
pub struct PointsTo {
    pub roots: Vec<Root>,
    pub cells: IdVec<CellId, Cell>,
    /// The cells of each root; the first is the root cell.
    root_cells: Vec<Vec<CellId>>,
    field_cells: FxMap<(u32, StructId, u32), CellId>,
    /// Interned points-to sets (sorted); set 0 is the empty set.
    sets: Vec<Vec<CellId>>,
    value_set: IdVec<ValueId, u32>,
    /// The functions each call may call (direct calls: the callee), sorted by instruction.
    pub call_targets: Vec<(InstId, Vec<FuncId>)>,
    /// Whether the stack, heap and outside objects were merged into one (the budget of
    /// per-object points-to was exceeded); then every struct field is one cell per (struct
    /// type, field), whatever object it is in.
    pub merged: bool,
    merged_root: u32,
    /// The program's allocation, deallocation and copy wrappers, as the solver used them.
    pub wrappers: Wrappers,
    /// The struct views the solution contains, which key struct fields in memory.
    views: Views,
}

impl PointsTo {
    /// The cells `v` may point to.
    pub fn of(&self, v: ValueId) -> &[CellId] {
        &self.sets[self.value_set[v] as usize]
    }

    /// An id for the set `v` points to: values with equal sets share it.
    pub fn set_of(&self, v: ValueId) -> u32 {
        self.value_set[v]
    }

    pub fn set(&self, id: u32) -> &[CellId] {
        &self.sets[id as usize]
    }

    pub fn set_count(&self) -> usize {
        self.sets.len()
    }

    pub fn cell(&self, c: CellId) -> Cell {
        self.cells[c]
    }

    /// The cells of the object `c` belongs to (its root cell first).
    pub fn object_cells(&self, c: CellId) -> &[CellId] {
        &self.root_cells[self.cells[c].root as usize]
    }

    /// The key of field `field` of `structure` in memory (see [`crate::views`]).
    pub fn field_key(&self, structure: StructId, field: u32) -> (StructId, u32) {
        self.views.field_key(structure, field)
    }

    /// The cell of field `(structure, field)` of the object `c` belongs to, if it exists; the
    /// field is keyed as [`PointsTo::field_key`] keys it (as cells are).
    pub fn field_cell(&self, c: CellId, structure: StructId, field: u32) -> Option<CellId> {
        let root = if self.merged {
            self.merged_root
        } else {
            self.cells[c].root
        };
        self.field_cells.get(&(root, structure, field)).copied()
    }

    /// The functions a call may call.
    pub fn targets_of(&self, call: InstId) -> &[FuncId] {
        match self.call_targets.binary_search_by_key(&call, |(i, _)| *i) {
            Ok(k) => &self.call_targets[k].1,
            Err(_) => &[],
        }
    }

    /// The object and field of a cell, for people: `@filters`, `heap object (lzma_alloc at
    /// common.c:40).lzma_filter.options`.
    pub fn describe(&self, program: &Program, c: CellId) -> String {
        let cell = self.cells[c];
        let at = |i: InstId| {
            let inst = program.inst(i);
            format!(
                "{} at {}",
                program.func(program.block(inst.block).func).name,
                program.describe_loc(inst.loc)
            )
        };
        let root = match self.roots[cell.root as usize] {
            Root::Global(g) => format!("@{}", program.globals[g].name),
            Root::Stack(i) => format!("stack slot ({})", at(i)),
            Root::Heap(i) => format!("heap object ({})", at(i)),
            Root::Returned(i) => format!("object returned to {}", at(i)),
            Root::Function(f) => format!("function {}", program.func(f).name),
            Root::Merged => "the program's stack and heap objects (merged)".into(),
            Root::Outside(f, k) => format!(
                "what parameter {k} of {} points to from outside the program",
                program.func(f).name
            ),
        };
        match cell.field {
            None => root,
            Some((s, f)) => {
                let st = &program.structs[s];
                let name = st
                    .fields
                    .get(f as usize)
                    .filter(|n| !n.is_empty())
                    .map_or_else(|| f.to_string(), |n| n.clone());
                format!("{root}.{}.{name}", st.name)
            }
        }
    }
}

/// The constraint solver. Nodes: one per value, one per function's return value, one per
/// cell's contents (created with the cell).
struct Solver<'p> {
    program: &'p Program,
    names: IdVec<FuncId, &'p str>,
    wrappers: Wrappers,
    nvalues: usize,
    nfuncs: usize,
    roots: Vec<Root>,
    cells: IdVec<CellId, Cell>,
    root_cells: Vec<Vec<CellId>>,
    field_cells: FxMap<(u32, StructId, u32), CellId>,
    /// Cells every cell of a root holds (the outside points to itself).
    root_refs: Vec<Vec<CellId>>,
    /// The roots each root is block-copied into.
    copied_to: Vec<Vec<u32>>,
    /// The struct types each root is known to be an object of (empty: not known), which
    /// filter field accesses at its start (see [`Solver::field_target`]).
    root_types: Vec<Vec<StructId>>,
    /// Roots that hold no struct: what `main`'s parameters point to (C gives `main` an
    /// argument count and pointers to strings), so no struct field access lands there.
    strings_only: Vec<bool>,
    /// The root cell of each global, function, stack slot and allocation site.
    root_of_value: FxMap<ValueId, CellId>,
    root_of_call: FxMap<InstId, CellId>,

    pts: Vec<CellSet>,
    delta: Vec<Vec<CellId>>,
    succ: Vec<Vec<u32>>,
    edges: FxSet<(u32, u32)>,
    /// Complex constraints on value nodes.
    loads: IdVec<ValueId, Vec<u32>>,
    stores: IdVec<ValueId, Vec<u32>>,
    fields: IdVec<ValueId, Vec<(u32, StructId, u32)>>,
    indirect: IdVec<ValueId, Vec<InstId>>,
    /// Block copies (destination node, source node) and, per value node, those it is part of.
    block_copies: Vec<(u32, u32)>,
    copies_of: IdVec<ValueId, Vec<u32>>,
    copy_pairs: FxSet<(CellId, CellId)>,

    queue: Vec<u32>,
    queued: Vec<bool>,
    connected: FxMap<InstId, Vec<FuncId>>,
    called: IdVec<FuncId, bool>,
    /// Merge every stack, heap and outside object into one root (see [`solve`]).
    merge: bool,
    merged_root: Option<CellId>,
    /// Points-to facts added so far, and how many are allowed (`None`: no limit).
    facts: usize,
    budget: Option<usize>,
    /// The keys of struct fields in memory.
    views: Views,
    /// Each cell and a struct type it is accessed as (or known to be an object of).
    accessed_as: FxSet<(CellId, StructId)>,
}

/// The budget of per-object points-to: facts (a node pointing to a cell) per program value.
/// A program whose heap the analysis cannot tell apart (allocation through function
/// pointers and out-parameters, as in SQLite) makes every pointer point to hundreds of
/// stack slots and fields; beyond this budget the analysis starts again with those objects
/// merged into one, which is fast and keeps globals and struct fields apart. xz needs about
/// 2.5 facts per value.
pub const FACTS_PER_VALUE: usize = 10;

/// Solves the points-to relation of a program: per object while that stays within a budget
/// proportional to the program's size, else with the stack, heap and outside objects merged.
pub fn solve(program: &Program) -> PointsTo {
    solve_within(
        program,
        (FACTS_PER_VALUE * program.values.len()).max(1_000_000),
    )
}

/// [`solve`] with the budget of per-object points-to given as a number of facts.
pub fn solve_within(program: &Program, budget: usize) -> PointsTo {
    // Struct views start apart and join where a solution shows them meet (see
    // [`crate::views`]); a round that solves again has joined two classes, so this ends.
    let mut views = Views::separate(program);
    loop {
        let (pts, groups) = solve_with(program, &views, false, Some(budget)).unwrap_or_else(|| {
            solve_with(program, &views, true, None).expect("no budget, so no early stop")
        });
        if !views.join(program, &groups) {
            return pts;
        }
    }
}

/// The solution with these struct views, and the groups of struct types it saw meet (see
/// [`Views::join`]); `None` when the budget ran out.
fn solve_with(
    program: &Program,
    views: &Views,
    merge: bool,
    budget: Option<usize>,
) -> Option<(PointsTo, Vec<Vec<StructId>>)> {
    let nvalues = program.values.len();
    let nfuncs = program.functions.len();
    let mut s = Solver {
        program,
        names: program.functions.iter().map(|f| f.name.as_str()).collect(),
        wrappers: Wrappers::find(program),
        nvalues,
        nfuncs,
        roots: Vec::new(),
        cells: IdVec::new(),
        root_cells: Vec::new(),
        field_cells: FxMap::default(),
        root_refs: Vec::new(),
        copied_to: Vec::new(),
        root_types: Vec::new(),
        strings_only: Vec::new(),
        root_of_value: FxMap::default(),
        root_of_call: FxMap::default(),
        pts: vec![CellSet::default(); nvalues + nfuncs],
        delta: vec![Vec::new(); nvalues + nfuncs],
        succ: vec![Vec::new(); nvalues + nfuncs],
        edges: Default::default(),
        loads: IdVec::with_default(nvalues),
        stores: IdVec::with_default(nvalues),
        fields: IdVec::with_default(nvalues),
        indirect: IdVec::with_default(nvalues),
        block_copies: Vec::new(),
        copies_of: IdVec::with_default(nvalues),
        copy_pairs: Default::default(),
        queue: Vec::new(),
        queued: vec![false; nvalues + nfuncs],
        connected: FxMap::default(),
        called: IdVec::from_elem(false, nfuncs),
        merge,
        merged_root: None,
        facts: 0,
        budget,
        views: views.clone(),
        accessed_as: FxSet::default(),
    };
    if merge {
        s.new_root(Root::Merged);
    }
    s.generate();
    if !s.run() {
        return None;
    }
    // Functions nothing in the program calls are called from outside (`main`, callbacks
    // handed to libc): their pointer parameters point to the outside. Giving them this only
    // now keeps it out of functions that are called (through pointers) by the program. A
    // function whose address only a global's initializer holds (an entry of a dispatch table)
    // is not handed to anyone: if the program never calls it, nothing does.
    let mut taken = IdVec::from_elem(false, program.functions.len());
    let mut handed = Vec::new();
    for inst in &program.insts {
        inst.kind.for_each_use(|v| {
            if let ValueDef::Function(f) = program.value(v) {
                taken[*f] = true;
            }
        });
        // A table handed to the library directly (`sigaction (SIGINT, &table, …)`).
        if let InstKind::Call {
            callee: Callee::Direct(f),
            args,
        } = &inst.kind
            && program.func(*f).is_declaration
        {
            handed.extend(args.iter().filter_map(|&a| match program.value(a) {
                ValueDef::Global(g) => Some(*g),
                _ => None,
            }));
        }
    }
    let mut seen = IdVec::from_elem(false, program.globals.len());
    while let Some(g) = handed.pop() {
        if std::mem::replace(&mut seen[g], true) {
            continue;
        }
        for r in &program.globals[g].initializer_refs {
            match program.value(r.address) {
                ValueDef::Function(f) => taken[*f] = true,
                ValueDef::Global(h) => handed.push(*h),
                _ => {}
            }
        }
    }
    let main = program.function_named("main");
    for (k, f) in program.functions.iter_enumerated() {
        let outside_may_call = taken[k] || main.is_none_or(|m| m == k);
        if !f.is_declaration && !s.called[k] && outside_may_call {
            for (j, &p) in f.params.iter().enumerate() {
                let outside = s.new_root(Root::Outside(k, j as u32));
                // Not when every object is merged into one: that one holds structs too.
                let root = s.cells[outside].root as usize;
                if main == Some(k) && matches!(s.roots[root], Root::Outside(..)) {
                    s.strings_only[root] = true;
                }
                let refs = &mut s.root_refs[s.cells[outside].root as usize];
                if !refs.contains(&outside) {
                    refs.push(outside);
                }
                let content = s.content(outside);
                s.add_pts(content, &[outside]);
                s.add_pts(p.as_u32(), &[outside]);
            }
        }
    }
    if !s.run() {
        return None;
    }
    let groups = s.views_met();
    Some((s.finish(), groups))
}

impl<'p> Solver<'p> {
    fn content(&self, c: CellId) -> u32 {
        (self.nvalues + self.nfuncs + c.index()) as u32
    }

    fn ret(&self, f: FuncId) -> u32 {
        (self.nvalues + f.index()) as u32
    }

    fn new_cell(&mut self, root: u32, field: Option<(StructId, u32)>) -> CellId {
        let c = self.cells.push(Cell { root, field });
        self.root_cells[root as usize].push(c);
        self.pts.push(CellSet::default());
        self.delta.push(Vec::new());
        self.succ.push(Vec::new());
        self.queued.push(false);
        c
    }

    fn new_root(&mut self, root: Root) -> CellId {
        let root = match root {
            Root::Stack(_)
            | Root::Heap(_)
            | Root::Returned(_)
            | Root::Outside(..)
            | Root::Merged
                if self.merge =>
            {
                if let Some(c) = self.merged_root {
                    return c;
                }
                Root::Merged
            }
            other => other,
        };
        let r = self.roots.len() as u32;
        self.roots.push(root);
        self.root_cells.push(Vec::new());
        self.root_refs.push(Vec::new());
        self.copied_to.push(Vec::new());
        let types = match root {
            Root::Global(g) => self.program.globals[g].structure.into_iter().collect(),
            Root::Stack(i) => match self.program.inst(i).kind {
                InstKind::Alloca { structure } => structure.into_iter().collect(),
                _ => Vec::new(),
            },
            Root::Heap(call) => self.allocated_types(call),
            _ => Vec::new(),
        };
        let c = self.new_cell(r, None);
        for &t in &types {
            self.accessed_as.insert((c, t));
        }
        self.root_types.push(types);
        self.strings_only.push(false);
        if root == Root::Merged {
            self.merged_root = Some(c);
        }
        c
    }

    /// The cell of field (structure, field) of the object `c` belongs to, created on first use
    /// with what every cell of its object holds, and copied on into the objects its object is
    /// block-copied into.
    fn field_cell(&mut self, c: CellId, structure: StructId, field: u32) -> CellId {
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
    fn field_target(&mut self, c: CellId, structure: StructId, field: u32) -> Option<CellId> {
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

    /// The struct types a heap object allocated at `call` is used as in the allocating
    /// function: the field accesses on the call's result (through casts, phis and selects),
    /// provided the call asks for exactly the size of one of them (`malloc (sizeof *p)`):
    /// a larger object may hold data after a header that is viewed as another type,
    /// `(T *)(hdr + 1)`, and arrays are collapsed into one cell. Empty — not known —
    /// otherwise.
    fn allocated_types(&self, call: InstId) -> Vec<StructId> {
        let program = self.program;
        let Some(result) = program.inst(call).result else {
            return Vec::new();
        };
        let func = program.func(program.block(program.inst(call).block).func);
        let mut values: FxSet<ValueId> = FxSet::default();
        values.insert(result);
        let mut types = Vec::new();
        // SSA values defined before use except through phis: two passes reach a fixpoint
        // unless phis chain through loops, which a few more passes cover.
        for _ in 0..4 {
            let before = values.len();
            for &b in &func.blocks {
                for &i in &program.block(b).insts {
                    let inst = program.inst(i);
                    let derived = match &inst.kind {
                        InstKind::Op { op, args } if *op == ir::OpKind::Cast => {
                            args.iter().any(|a| values.contains(a))
                        }
                        InstKind::Phi { incoming } => {
                            incoming.iter().any(|(v, _)| values.contains(v))
                        }
                        InstKind::Select {
                            if_true, if_false, ..
                        } => values.contains(if_true) || values.contains(if_false),
                        InstKind::IndexAddr { base, .. } if values.contains(base) => {
                            return Vec::new();
                        }
                        InstKind::FieldAddr {
                            base, structure, ..
                        } => {
                            if values.contains(base) && !types.contains(structure) {
                                types.push(*structure);
                            }
                            false
                        }
                        _ => false,
                    };
                    if derived && let Some(r) = inst.result {
                        values.insert(r);
                    }
                }
            }
            if values.len() == before {
                break;
            }
        }
        // Exactly one object of a found type: some constant argument is its size (`calloc
        // (1, size)` too).
        let InstKind::Call { args, .. } = &program.inst(call).kind else {
            return Vec::new();
        };
        let sizes: Vec<u64> = args
            .iter()
            .filter_map(|&a| match program.value(a) {
                ValueDef::ConstInt(v) => u64::try_from(*v).ok(),
                _ => None,
            })
            .collect();
        let exact = types.iter().any(|t| {
            program.structs[*t]
                .size
                .is_some_and(|size| sizes.contains(&size))
        });
        if exact { types } else { Vec::new() }
    }

    /// Records that object `to` is a block copy of object `from`: every field cell of `from`
    /// (now and later) flows into the same field cell of `to`.
    fn copy_object(&mut self, from: u32, to: u32) {
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

    fn enqueue(&mut self, n: u32) {
        if !self.queued[n as usize] {
            self.queued[n as usize] = true;
            self.queue.push(n);
        }
    }

    /// Adds `cells` (sorted or not) to what node `n` points to.
    fn add_pts(&mut self, n: u32, cells: &[CellId]) {
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

    fn add_edge(&mut self, from: u32, to: u32) {
        if from == to || !self.edges.insert((from, to)) {
            return;
        }
        self.succ[from as usize].push(to);
        if !self.pts[from as usize].is_empty() {
            let cells = self.pts[from as usize].to_vec();
            self.add_pts(to, &cells);
        }
    }

    fn is_constant(&self, v: ValueId) -> bool {
        matches!(
            self.program.value(v),
            ValueDef::ConstInt(_)
                | ValueDef::ConstFloat(_)
                | ValueDef::ConstStr(_)
                | ValueDef::Undef
        )
    }

    /// `to ⊇ from` for values (constants point nowhere). An integer (a scalar by type) holds
    /// no address of its own; when one is turned into a pointer (`inttoptr` of pointer
    /// arithmetic), the pointers it was computed from flow in.
    fn copy_value(&mut self, from: ValueId, to: u32) {
        if self.is_constant(from) {
            return;
        }
        if !self.program.is_scalar(from) {
            self.add_edge(from.as_u32(), to);
            return;
        }
        let mut leaves = Vec::new();
        self.pointers_behind(from, 8, &mut leaves);
        for p in leaves {
            self.add_edge(p.as_u32(), to);
        }
    }

    /// The pointer-typed values an integer was computed from (`ptrtoint` operands), looking
    /// through at most `depth` arithmetic operations.
    fn pointers_behind(&self, v: ValueId, depth: u32, out: &mut Vec<ValueId>) {
        let program = self.program;
        if self.is_constant(v) || out.contains(&v) {
            return;
        }
        if !program.is_scalar(v) {
            out.push(v);
            return;
        }
        if depth == 0 {
            return;
        }
        if let ValueDef::Inst(i) = program.value(v)
            && let InstKind::Op { op, args } = &program.inst(*i).kind
            && *op != ir::OpKind::Compare
        {
            for &a in args {
                self.pointers_behind(a, depth - 1, out);
            }
        }
    }

    fn call_root(&mut self, call: InstId, kind: Root) -> CellId {
        if let Some(&c) = self.root_of_call.get(&call) {
            return c;
        }
        let c = self.new_root(kind);
        self.root_of_call.insert(call, c);
        c
    }

    fn generate(&mut self) {
        let program = self.program;
        for (k, g) in program.globals.iter_enumerated() {
            let c = self.new_root(Root::Global(k));
            self.root_of_value.insert(g.address, c);
        }
        for (k, f) in program.functions.iter_enumerated() {
            let c = self.new_root(Root::Function(k));
            self.root_of_value.insert(f.address, c);
        }
        // A global's initializer puts each address in the cell of the field it is stored in.
        for g in &program.globals {
            let c = self.root_of_value[&g.address];
            for r in &g.initializer_refs {
                let Some(&target) = self.root_of_value.get(&r.address) else {
                    continue;
                };
                let cell = match r.field {
                    None => c,
                    Some((structure, field)) => self.field_cell(c, structure, field),
                };
                let content = self.content(cell);
                self.add_pts(content, &[target]);
            }
        }
        // Addresses of globals and functions used as operands.
        for v in program.values.keys() {
            if let Some(&c) = self.root_of_value.get(&v) {
                self.add_pts(v.as_u32(), &[c]);
            }
        }
        for (fi, func) in program.functions.iter_enumerated() {
            for &b in &func.blocks {
                for &i in &program.block(b).insts {
                    let inst = program.inst(i);
                    // Integers and floats hold no address.
                    let res = inst.result.filter(|&r| !program.is_scalar(r));
                    match &inst.kind {
                        InstKind::Op { op, args } => {
                            if *op != ir::OpKind::Compare
                                && let Some(r) = res
                            {
                                for &a in args {
                                    self.copy_value(a, r.as_u32());
                                }
                            }
                        }
                        InstKind::Phi { incoming } => {
                            if let Some(r) = res {
                                for &(v, _) in incoming {
                                    self.copy_value(v, r.as_u32());
                                }
                            }
                        }
                        InstKind::Select {
                            if_true, if_false, ..
                        } => {
                            if let Some(r) = res {
                                self.copy_value(*if_true, r.as_u32());
                                self.copy_value(*if_false, r.as_u32());
                            }
                        }
                        InstKind::Alloca { .. } => {
                            if let Some(r) = res {
                                let c = self.new_root(Root::Stack(i));
                                self.add_pts(r.as_u32(), &[c]);
                            }
                        }
                        InstKind::Load { ptr } => {
                            if let Some(r) = res
                                && !self.is_constant(*ptr)
                            {
                                self.loads[*ptr].push(r.as_u32());
                            }
                        }
                        InstKind::Store { value, ptr }
                            if !self.is_constant(*value)
                                && !self.is_constant(*ptr)
                                && !program.is_scalar(*value) =>
                        {
                            self.stores[*ptr].push(value.as_u32());
                        }
                        InstKind::FieldAddr {
                            base,
                            structure,
                            field,
                        } => {
                            if let Some(r) = res
                                && !self.is_constant(*base)
                            {
                                self.fields[*base].push((r.as_u32(), *structure, *field));
                            }
                        }
                        InstKind::IndexAddr { base, .. } => {
                            if let Some(r) = res {
                                self.copy_value(*base, r.as_u32());
                            }
                        }
                        InstKind::Call { callee, .. } => match callee {
                            Callee::Direct(g) => self.connect(i, *g),
                            Callee::Indirect(fp) => {
                                if !self.is_constant(*fp) {
                                    self.indirect[*fp].push(i);
                                }
                            }
                        },
                        InstKind::Return { value: Some(v) } if !program.is_scalar(*v) => {
                            let r = self.ret(fi);
                            self.copy_value(*v, r);
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Connects call `call` to function `g`: arguments to parameters, the return value to the
    /// result; what external functions do to pointers.
    fn connect(&mut self, call: InstId, g: FuncId) {
        let list = self.connected.entry(call).or_default();
        if list.contains(&g) {
            return;
        }
        list.push(g);
        self.called[g] = true;
        let program = self.program;
        let InstKind::Call { args, .. } = &program.inst(call).kind else {
            return;
        };
        let result = program.inst(call).result.filter(|&r| !program.is_scalar(r));
        let callee = program.func(g);
        let copy = self.wrappers.copy_at(program, call, g);
        if let MemoryCopy::Block { dst, src } = copy {
            self.block_copy(dst, src);
        }
        if callee.is_declaration {
            let name = self.names[g];
            let Some(r) = result else {
                return;
            };
            if ALLOCATORS.contains(&name) {
                let c = self.call_root(call, Root::Heap(call));
                self.add_pts(r.as_u32(), &[c]);
            } else if !returns_first_argument(name) {
                let c = self.call_root(call, Root::Returned(call));
                self.add_pts(r.as_u32(), &[c]);
            }
            if returns_first_argument(name)
                && let Some(&a) = args.first()
            {
                self.copy_value(a, r.as_u32());
            }
            return;
        }
        // Pointers a wrapper only frees flow nowhere; a wrapper's call site is an allocation
        // site of its own (`crate::wrappers`).
        for (k, (&p, &a)) in callee.params.iter().zip(args).enumerate() {
            if !self.wrappers.only_frees(g, k) && !program.is_scalar(p) {
                self.copy_value(a, p.as_u32());
            }
        }
        if let Some(r) = result {
            if self.wrappers.allocates(g) {
                let c = self.call_root(call, Root::Heap(call));
                self.add_pts(r.as_u32(), &[c]);
                if let Some(&a) = self.wrappers.resizes(g).and_then(|k| args.get(k)) {
                    self.copy_value(a, r.as_u32());
                }
                // A duplicating allocator's copy is `copy` (`Wrappers::copy_at`), made above.
            } else if let Some(&a) = self.wrappers.returns_argument(g).and_then(|k| args.get(k)) {
                // Into this call's own argument, not every caller's.
                self.copy_value(a, r.as_u32());
            } else {
                let from = self.ret(g);
                self.add_edge(from, r.as_u32());
            }
        }
    }

    fn block_copy(&mut self, d: ValueId, s: ValueId) {
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
    fn copy_cells(&mut self, dst: &[CellId], src: &[CellId]) {
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
    fn run(&mut self) -> bool {
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
    fn views_met(&self) -> Vec<Vec<StructId>> {
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

    fn finish(self) -> PointsTo {
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

/// A set of cells: a sorted vector while small, a bitset once large (a merged program's
/// pointers point to thousands of cells, and adding to a sorted vector copies it).
#[derive(Clone, Debug, Default)]
struct CellSet {
    small: Vec<CellId>,
    bits: Vec<u64>,
    len: usize,
}

impl CellSet {
    const SMALL: usize = 64;

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `incoming` (sorted, no duplicates), appending the cells that were new to `added`.
    fn insert_all(&mut self, incoming: &[CellId], added: &mut Vec<CellId>) {
        if self.bits.is_empty() {
            let old = std::mem::take(&mut self.small);
            let mut merged = Vec::with_capacity(old.len() + incoming.len());
            let (mut i, mut j) = (0, 0);
            while i < old.len() || j < incoming.len() {
                if j == incoming.len() || (i < old.len() && old[i] < incoming[j]) {
                    merged.push(old[i]);
                    i += 1;
                } else if i == old.len() || incoming[j] < old[i] {
                    merged.push(incoming[j]);
                    added.push(incoming[j]);
                    j += 1;
                } else {
                    merged.push(old[i]);
                    i += 1;
                    j += 1;
                }
            }
            self.len = merged.len();
            if merged.len() <= Self::SMALL {
                self.small = merged;
                return;
            }
            for c in merged {
                self.set_bit(c);
            }
            return;
        }
        for &c in incoming {
            if self.set_bit(c) {
                added.push(c);
                self.len += 1;
            }
        }
    }

    /// Sets a cell's bit; true if it was not set.
    fn set_bit(&mut self, c: CellId) -> bool {
        let (w, b) = (c.index() / 64, c.index() % 64);
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        let was = self.bits[w] & (1 << b) != 0;
        self.bits[w] |= 1 << b;
        !was
    }

    /// The cells in increasing order.
    fn to_vec(&self) -> Vec<CellId> {
        if self.bits.is_empty() {
            return self.small.clone();
        }
        let mut out = Vec::with_capacity(self.len);
        for (w, &word) in self.bits.iter().enumerate() {
            let mut x = word;
            while x != 0 {
                let b = x.trailing_zeros() as usize;
                out.push(CellId::new(w * 64 + b));
                x &= x - 1;
            }
        }
        out
    }
}
