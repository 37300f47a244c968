//! Load-time option state (Lotrack's options as load-time constants): `main` parses the
//! command line into globals and struct fields, and the program's work only reads them.
//!
//! A flow-insensitive analysis lets the parser read everything the program ever writes: the
//! loop over `argv` and the `switch` on `getopt`'s result read the argument strings, which
//! later code may write (gzip shortens file names in place), so every store of the parser
//! is control dependent on whatever options that later code runs under, and each option's
//! state carries the others. This module splits the run into two phases:
//!
//! - the *initialisation*: the blocks of `main` from which a write of option state (a
//!   store into an option source's cells, directly or through a function only `main`
//!   calls) can still be reached, and the functions called only from there;
//! - *after* it: the other blocks of `main`, and the functions called only from them.
//!
//! No block after the initialisation reaches a block of it (a block that did would reach
//! the write too), so code of the initialisation runs before any code after it, and reads
//! there see only writes made by code that may run in the initialisation (its own, and that
//! of functions called from both phases or from outside the program); the solver keeps that
//! memory apart (`init_memory`). A location no code after the initialisation writes is a
//! load-time constant: its readers see what the initialisation stored there (for an
//! option's own cell, the option, plus the options of any decision that set it, such as
//! `-s` capping the level), not the control of the parsing loop. A location written again
//! afterwards keeps the ordinary treatment: everything stored there.
//!
//! `main` called by the program, or calling `setjmp` (a `longjmp` could return into the
//! parser), has no initialisation phase.

use ir::{BlockId, DebugLoc, IdVec, InstId, InstKind, Program, ValueId};
use space::OptionId;

use super::call_graph::{CallGraph, address_taken};
use crate::options::FxSet;
use crate::pointsto::{CellId, PointsTo};
use crate::reaching::ModifiedCells;
use crate::wrappers::MemoryCopy;

/// When a block's code may run relative to the initialisation phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Only during the initialisation: reads see only what may be written before its end.
    Initialisation,
    /// In either phase, or outside `main`'s control (callbacks, handlers).
    Any,
    /// Only after the initialisation: writes are not seen by its code.
    After,
}

/// The two phases of a program's run.
pub(super) struct Phases {
    pub block: IdVec<BlockId, Phase>,
    /// The blocks of `main` in the initialisation, and all of its blocks.
    pub main_blocks: (usize, usize),
    /// Functions called only during the initialisation.
    pub init_functions: usize,
    /// The last source line of `main` in the initialisation.
    pub end: Option<DebugLoc>,
}

/// What the analysis treated as load-time constants.
#[derive(Clone, Debug, Default)]
pub struct LoadTime {
    /// The blocks of `main` in the initialisation, of all its blocks (0 of 0: the program has
    /// no initialisation phase, and nothing is a load-time constant).
    pub main_blocks: (usize, usize),
    /// Functions called only during the initialisation.
    pub init_functions: usize,
    /// The last source line of `main` in the initialisation.
    pub end: Option<DebugLoc>,
    /// Options whose cells only the initialisation writes: load-time constants.
    pub constant: Vec<OptionId>,
    /// Options whose cells code after the initialisation may write, with one such write:
    /// ordinary memory.
    pub rewritten: Vec<(OptionId, InstId)>,
}

const SETJMP: &[&str] = &["setjmp", "_setjmp", "__sigsetjmp", "sigsetjmp"];

/// The phases of `program`, with the option sources' cells as the option state.
pub(super) fn phases(
    program: &Program,
    pts: &PointsTo,
    call_graph: &CallGraph,
    source_cells: &FxSet<CellId>,
) -> Phases {
    let mut block = IdVec::from_elem(Phase::Any, program.blocks.len());
    let none = |block| Phases {
        block,
        main_blocks: (0, 0),
        init_functions: 0,
        end: None,
    };
    let Some((main, _)) = program
        .functions
        .iter_enumerated()
        .find(|(_, f)| f.name == "main" && !f.is_declaration)
    else {
        return none(block);
    };
    let taken = address_taken(program);
    let insts: Vec<InstId> = program.instructions_of(main).collect();
    let calls_setjmp = insts.iter().any(|&i| {
        call_graph
            .targets_of(i)
            .iter()
            .any(|&g| SETJMP.contains(&crate::pointsto::libc_name(&program.func(g).name)))
    });
    if !call_graph.callers[main].is_empty() || taken[main] || calls_setjmp {
        return none(block);
    }
    let modified = ModifiedCells::new(program, pts, call_graph, source_cells);
    let cfg = program.cfg(main);
    let n = cfg.len();
    let in_cycle = blocks_in_cycles(&cfg.succs);
    // Writes of option state in main: its stores, what the library writes through the
    // pointers it is given, and calls of set-up functions that write it: called once, from
    // one call site of main outside any loop (`args_parse (&args, argc, argv)`). A function
    // the work calls per file (or anything else calls) does not stretch the initialisation
    // over the work; what it writes is written after it.
    let writes = |i: InstId| match &program.inst(i).kind {
        InstKind::Store { ptr, .. } => pts.of(*ptr).iter().any(|c| source_cells.contains(c)),
        InstKind::Call { args, .. } => call_graph.targets_of(i).iter().any(|&g| {
            if program.func(g).is_declaration {
                args.iter().any(|&a| {
                    pts.of(a)
                        .iter()
                        .any(|&c| pts.object_cells(c).iter().any(|c| source_cells.contains(c)))
                })
            } else {
                !taken[g]
                    && call_graph.callers[g] == [i]
                    && !in_cycle[program.block(program.inst(i).block).local as usize]
                    && !modified.cells[g].is_empty()
            }
        }),
        _ => false,
    };
    let mut init = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    for (k, &b) in cfg.blocks.iter().enumerate() {
        if program.block(b).insts.iter().any(|&i| writes(i)) {
            init[k] = true;
            stack.push(k as u32);
        }
    }
    // Backwards: every block that can reach such a write.
    while let Some(k) = stack.pop() {
        for &p in &cfg.preds[k as usize] {
            if !init[p as usize] {
                init[p as usize] = true;
                stack.push(p);
            }
        }
    }
    for (k, &b) in cfg.blocks.iter().enumerate() {
        block[b] = if init[k] {
            Phase::Initialisation
        } else {
            Phase::After
        };
    }
    // Functions called only from one phase (the largest such sets: a cycle of helpers
    // called only from the initialisation runs only then).
    let mut init_functions = 0;
    for phase in [Phase::Initialisation, Phase::After] {
        let mut only = IdVec::from_elem(false, program.functions.len());
        for (g, func) in program.functions.iter_enumerated() {
            only[g] =
                g != main && !func.is_declaration && !taken[g] && !call_graph.callers[g].is_empty();
        }
        loop {
            let mut changed = false;
            for g in program.functions.keys() {
                if only[g]
                    && !call_graph.callers[g].iter().all(|&site| {
                        let caller = program.func_of(site);
                        if caller == main {
                            block[program.inst(site).block] == phase
                        } else {
                            only[caller]
                        }
                    })
                {
                    only[g] = false;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for (g, func) in program.functions.iter_enumerated() {
            if only[g] {
                for &b in &func.blocks {
                    block[b] = phase;
                }
                if phase == Phase::Initialisation {
                    init_functions += 1;
                }
            }
        }
    }
    let end = cfg
        .blocks
        .iter()
        .zip(&init)
        .filter(|(_, init)| **init)
        .flat_map(|(&b, _)| program.block(b).insts.iter())
        .map(|&i| program.inst(i).loc)
        .filter(|l| l.line > 0)
        .max_by_key(|l| l.line);
    Phases {
        block,
        main_blocks: (init.iter().filter(|&&x| x).count(), n),
        init_functions,
        end,
    }
}

/// Per block (local index): it lies on a cycle of the graph `succs`.
fn blocks_in_cycles(succs: &[Vec<u32>]) -> Vec<bool> {
    let n = succs.len();
    let mut out = vec![false; n];
    let mut seen = vec![usize::MAX; n];
    for start in 0..n {
        // Does a path from `start`'s successors come back to it?
        let mut stack: Vec<u32> = succs[start].clone();
        while let Some(b) = stack.pop() {
            if b as usize == start {
                out[start] = true;
                break;
            }
            if seen[b as usize] == start {
                continue;
            }
            seen[b as usize] = start;
            stack.extend(&succs[b as usize]);
        }
    }
    out
}

/// The first instruction outside the initialisation that may write one of `cells` (in
/// instruction order), as the solver writes: stores, block copies (into the destination's
/// cells and the fields the source has), and the library's copies into their first
/// argument. What makes an option's state not a load-time constant.
pub(super) fn written_after(
    program: &Program,
    pts: &PointsTo,
    call_graph: &CallGraph,
    phase: &IdVec<BlockId, Phase>,
    cells: &[CellId],
) -> Option<InstId> {
    let hits = |c: &CellId| cells.contains(c);
    let copy_hits = |dst: ValueId, src: ValueId| {
        pts.of(dst).iter().any(|&d| {
            hits(&d)
                || (!pts.merged
                    && pts.of(src).iter().any(|&s| {
                        pts.object_cells(s)[1..].iter().any(|&sf| {
                            let (structure, field) = pts.cell(sf).field.expect("a field cell");
                            pts.field_cell(d, structure, field)
                                .is_some_and(|c| hits(&c))
                        })
                    }))
        })
    };
    program.insts.iter_enumerated().find_map(|(i, inst)| {
        if phase[inst.block] == Phase::Initialisation {
            return None;
        }
        let writes = match &inst.kind {
            InstKind::Store { ptr, .. } => pts.of(*ptr).iter().any(hits),
            InstKind::Call { args, .. } => call_graph.targets_of(i).iter().any(|&g| {
                match pts.wrappers.copy_at(program, i, g) {
                    MemoryCopy::Block { dst, src } => copy_hits(dst, src),
                    MemoryCopy::InWrapper => false,
                    MemoryCopy::None => {
                        program.func(g).is_declaration
                            && super::is_copier(&program.func(g).name)
                            && args.first().is_some_and(|&a| pts.of(a).iter().any(hits))
                    }
                }
            }),
            _ => false,
        };
        writes.then_some(i)
    })
}

/// Which options' state is a load-time constant: per option, its cells (those of the
/// sources' seeds that hold it) are written by nothing after the initialisation.
pub(super) fn load_time_constants(
    program: &Program,
    pts: &PointsTo,
    call_graph: &CallGraph,
    phases: &Phases,
    option_cells: &[(OptionId, Vec<CellId>)],
) -> LoadTime {
    let mut out = LoadTime {
        main_blocks: phases.main_blocks,
        init_functions: phases.init_functions,
        end: phases.end,
        ..LoadTime::default()
    };
    if phases.main_blocks.0 == 0 {
        return out;
    }
    for (o, cells) in option_cells {
        match written_after(program, pts, call_graph, &phases.block, cells) {
            Some(i) => out.rewritten.push((*o, i)),
            None => out.constant.push(*o),
        }
    }
    out
}
