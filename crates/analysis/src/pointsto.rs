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
//!
//! This module holds the result ([`PointsTo`]) and the entry points; the constraints a
//! program gives are in `constraints`, their solution in `solver`, the sets in `cell_set`.

use ir::{Callee, FuncId, GlobalId, IdVec, InstId, InstKind, Program, StructId, ValueDef, ValueId};

use crate::options::{FxMap, FxSet};
use crate::views::Views;
use crate::wrappers::{MemoryCopy, Wrappers};

mod cell_set;
mod constraints;
mod solver;

use cell_set::CellSet;
use solver::Solver;

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

impl<'p> Solver<'p> {}
