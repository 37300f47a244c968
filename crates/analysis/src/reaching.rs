//! Local definitions of globals and address-taken locals: which loads of such an object (or
//! of a field of a struct object) read only what their own function stored there before them.
//!
//! The taint analysis keeps one taint per memory cell for the whole run (flow-insensitive),
//! so a global that a program resets at the start of each unit of work (`ifd = open (…)` for
//! each file) carries everything any later code stored there, and the decisions taken right
//! after the reset look as if the previous file's processing had influenced them. Within one
//! function this is a classic reaching-definitions problem with strong updates: a global's
//! address (or a field address of it, without array indexing) names one location, so a
//! store through it replaces what was there. A load whose every path from the function's
//! entry passes such a store, and after it no call or other store that may write the
//! location, reads exactly the values of those stores.
//!
//! What may write a location: a store through any other pointer that may point to its cell,
//! a call of a function that may (transitively, `ModifiedCells`), and any call of an
//! external function that can reach it (through a pointer argument, or because the global is
//! the library's own, like `optind`).

use ir::{FuncId, GlobalId, IdVec, InstId, InstKind, Program, StructId, ValueDef, ValueId};

use crate::options::{FxMap, FxSet};
use crate::pointsto::{CellId, PointsTo};
use crate::static_taint::CallGraph;

/// For each load that reads only local definitions, the stores it reads.
#[derive(Clone, Debug, Default)]
pub struct LocalDefinitions {
    defs: FxMap<InstId, Vec<InstId>>,
}

impl LocalDefinitions {
    /// The stores a load reads, if they are all earlier in its own function.
    pub fn of(&self, load: InstId) -> Option<&[InstId]> {
        self.defs.get(&load).map(Vec::as_slice)
    }
}

/// An object whose address is a constant within a function: a global, or a local variable
/// whose address is taken (an alloca that `mem2reg` left, like a `struct timespec` passed to
/// `nanosleep`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Object {
    Global(GlobalId),
    Local(ValueId),
}

/// A location named by a constant address: an object, or one field of a struct object.
type Location = (Object, Option<(StructId, u32)>);

fn object(program: &Program, ptr: ValueId) -> Option<Object> {
    match program.value(ptr) {
        ValueDef::Global(g) => Some(Object::Global(*g)),
        ValueDef::Inst(i) if matches!(program.inst(*i).kind, InstKind::Alloca { .. }) => {
            Some(Object::Local(ptr))
        }
        _ => None,
    }
}

fn location(program: &Program, pts: &PointsTo, ptr: ValueId) -> Option<Location> {
    if let Some(o) = object(program, ptr) {
        return Some((o, None));
    }
    match program.value(ptr) {
        ValueDef::Inst(i) => match &program.inst(*i).kind {
            InstKind::FieldAddr {
                base,
                structure,
                field,
            } => {
                let o = object(program, *base)?;
                if *field == 0 {
                    Some((o, None))
                } else {
                    Some((o, Some(pts.field_key(*structure, *field))))
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// The cells each function may write, itself or through the functions it calls; calls of
/// external functions write what their pointer arguments reach (whole objects).
pub(crate) struct ModifiedCells {
    pub cells: IdVec<FuncId, FxSet<CellId>>,
    /// Calls an external function (which may write the library's own globals).
    pub calls_external: IdVec<FuncId, bool>,
}

impl ModifiedCells {
    /// Only the cells in `tracked` are recorded (the locations loads ask about).
    pub(crate) fn new(
        program: &Program,
        pts: &PointsTo,
        call_graph: &CallGraph,
        tracked: &FxSet<CellId>,
    ) -> Self {
        let n = program.functions.len();
        let mut cells: IdVec<FuncId, FxSet<CellId>> = IdVec::from_elem(FxSet::default(), n);
        let mut calls_external = IdVec::from_elem(false, n);
        let mut callees: IdVec<FuncId, Vec<FuncId>> = IdVec::with_default(n);
        for (fi, func) in program.functions.iter_enumerated() {
            for &b in &func.blocks {
                for &i in &program.block(b).insts {
                    match &program.inst(i).kind {
                        InstKind::Store { ptr, .. } => {
                            cells[fi].extend(pts.of(*ptr).iter().filter(|c| tracked.contains(*c)))
                        }
                        InstKind::Call { args, .. } => {
                            for &g in call_graph.targets_of(i) {
                                if program.func(g).is_declaration {
                                    calls_external[fi] = true;
                                    for &a in args {
                                        for &c in pts.of(a) {
                                            cells[fi].extend(
                                                pts.object_cells(c)
                                                    .iter()
                                                    .filter(|c| tracked.contains(*c)),
                                            );
                                        }
                                    }
                                } else {
                                    callees[fi].push(g);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        // Through calls, to a fixpoint.
        loop {
            let mut changed = false;
            for f in program.functions.keys() {
                for &g in &callees[f] {
                    if g == f {
                        continue;
                    }
                    if calls_external[g] && !calls_external[f] {
                        calls_external[f] = true;
                        changed = true;
                    }
                    let add: Vec<CellId> = cells[g]
                        .iter()
                        .filter(|c| !cells[f].contains(*c))
                        .copied()
                        .collect();
                    if !add.is_empty() {
                        cells[f].extend(add);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        ModifiedCells {
            cells,
            calls_external,
        }
    }
}

/// What reaches a program point for one location.
#[derive(Clone, Debug, PartialEq)]
enum Reaching {
    /// Not yet computed (a block not reached by the iteration).
    Unknown,
    /// Whatever was there when the function was entered, or written by something else.
    Outside,
    /// Exactly the values of these stores of this function.
    Stores(Vec<InstId>),
}

fn join(a: &Reaching, b: &Reaching) -> Reaching {
    match (a, b) {
        (Reaching::Unknown, x) | (x, Reaching::Unknown) => x.clone(),
        (Reaching::Outside, _) | (_, Reaching::Outside) => Reaching::Outside,
        (Reaching::Stores(x), Reaching::Stores(y)) => {
            let mut all = x.clone();
            for s in y {
                if !all.contains(s) {
                    all.push(*s);
                }
            }
            all.sort_unstable();
            Reaching::Stores(all)
        }
    }
}

/// The local definitions of every function's loads of globals and address-taken locals.
pub fn local_definitions(
    program: &Program,
    pts: &PointsTo,
    call_graph: &CallGraph,
    dominance: &crate::ProgramDominance,
) -> LocalDefinitions {
    let mut tracked: FxSet<CellId> = FxSet::default();
    for inst in &program.insts {
        if let InstKind::Load { ptr } = &inst.kind
            && let Some(loc) = location(program, pts, *ptr)
        {
            tracked.extend(location_cells(pts, program, loc));
        }
    }
    let modified = ModifiedCells::new(program, pts, call_graph, &tracked);
    let mut defs = FxMap::default();
    for (fi, func) in program.functions.iter_enumerated() {
        let Some(dom) = dominance.get(fi) else {
            continue;
        };
        // The locations this function loads directly.
        let mut locations: Vec<Location> = Vec::new();
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                if let InstKind::Load { ptr } = &program.inst(i).kind
                    && let Some(l) = location(program, pts, *ptr)
                    && !locations.contains(&l)
                {
                    locations.push(l);
                }
            }
        }
        for loc in locations {
            // What a store through another pointer or a call must reach to overwrite it.
            let cells = location_cells(pts, program, loc);
            if cells.is_empty() {
                continue;
            }
            let library = match loc.0 {
                Object::Global(g) => !program.globals[g].defined,
                Object::Local(_) => false,
            };
            let clobbers = |i: InstId| -> bool {
                match &program.inst(i).kind {
                    InstKind::Store { ptr, .. } => pts.of(*ptr).iter().any(|c| cells.contains(c)),
                    InstKind::Call { .. } => {
                        let targets = call_graph.targets_of(i);
                        // A call through a pointer nothing was found for may do anything.
                        targets.is_empty()
                            || targets.iter().any(|&h| {
                                if program.func(h).is_declaration {
                                    library || external_reaches(program, pts, i, &cells)
                                } else {
                                    (library && modified.calls_external[h])
                                        || cells.iter().any(|c| modified.cells[h].contains(c))
                                }
                            })
                    }
                    _ => false,
                }
            };
            // The state after instruction `i`.
            let step = |i: InstId, state: &mut Reaching| match &program.inst(i).kind {
                InstKind::Store { ptr, .. } if location(program, pts, *ptr) == Some(loc) => {
                    *state = Reaching::Stores(vec![i]);
                }
                _ if clobbers(i) => *state = Reaching::Outside,
                _ => {}
            };
            let transfer = |b: ir::BlockId, mut state: Reaching| -> Reaching {
                for &i in &program.block(b).insts {
                    step(i, &mut state);
                }
                state
            };
            // Forward over reverse post-order to a fixpoint; the entry starts Outside.
            let order = dom.dom.reverse_post_order();
            let mut at_end: Vec<Reaching> = vec![Reaching::Unknown; func.blocks.len()];
            let cfg = program.cfg(fi);
            // What reaches the start of a block: the function's entry brings what was there.
            let at_start = |local: u32, at_end: &[Reaching]| {
                let entry = if local == 0 {
                    Reaching::Outside
                } else {
                    Reaching::Unknown
                };
                cfg.preds[local as usize]
                    .iter()
                    .fold(entry, |state, &p| join(&state, &at_end[p as usize]))
            };
            loop {
                let mut changed = false;
                for &local in order {
                    let state = at_start(local, &at_end);
                    let out = transfer(func.blocks[local as usize], state);
                    if out != at_end[local as usize] {
                        at_end[local as usize] = out;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
            // Each load of the location, with the state just before it.
            for &local in order {
                let b = func.blocks[local as usize];
                let mut state = at_start(local, &at_end);
                for &i in &program.block(b).insts {
                    if let InstKind::Load { ptr } = &program.inst(i).kind
                        && location(program, pts, *ptr) == Some(loc)
                        && let Reaching::Stores(stores) = &state
                    {
                        defs.insert(i, stores.clone());
                    }
                    step(i, &mut state);
                }
            }
        }
    }
    LocalDefinitions { defs }
}

/// The cells of a location.
fn location_cells(pts: &PointsTo, program: &Program, (object, field): Location) -> Vec<CellId> {
    let address = match object {
        Object::Global(g) => program.globals[g].address,
        Object::Local(v) => v,
    };
    match field {
        None => pts.of(address).to_vec(),
        Some((s, f)) => pts
            .of(address)
            .iter()
            .filter_map(|&c| pts.field_cell(c, s, f))
            .collect(),
    }
}

/// Whether an external call can reach one of `cells` through its pointer arguments.
fn external_reaches(program: &Program, pts: &PointsTo, call: InstId, cells: &[CellId]) -> bool {
    let InstKind::Call { args, .. } = &program.inst(call).kind else {
        return false;
    };
    args.iter().any(|&a| {
        pts.of(a)
            .iter()
            .any(|&c| pts.object_cells(c).iter().any(|o| cells.contains(o)))
    })
}
