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
//! of the decided value for a decision: a conditional terminator's condition, a `select`'s
//! condition, an indirect call's callee, or what a call into the C library is given, from
//! which the library decides how much work it does) ∪ its function's context taint — but
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
//!   arguments (`strcmp`, `strlen`, …) read the whole objects, fields included; those that
//!   write out a counted buffer (`fwrite`, `write`) decide by the count, not the bytes;
//!   block copies (`memcpy`, struct assignment) copy field by field.
//! - Indirect calls reach the functions whose addresses flow to the called pointer and that
//!   take at most as many parameters as the call passes (variadic functions take fewer).
//!
//! - A small helper's stores and block copies through its parameters are made at each call
//!   site, into what that site passes, with its control and arguments (`call_sites`): a
//!   `reset (state)` called under A on one object and under B on another does not put A and B
//!   into both.
//!
//! - The run has an initialisation phase (`load_time`: `main` up to its last write of an
//!   option's state, and what only that part calls), whose reads see only what may be written
//!   before its end: the argument parser's decisions on argv do not carry the options of code
//!   that later writes argv's strings, and an option's cell only the initialisation writes is
//!   a load-time constant. A cell written after it holds everything stored there.
//!
//! The solver's parts: `call_graph` (who calls whom, and the functions on the way out),
//! `params` (values that point where a parameter does), `seeds` (what option sources put
//! into the fixpoint), `memory` (cells, their groups and readers, reads and writes through
//! pointers, the initialisation's memory apart), `call_sites` (small helpers' writes made
//! per call site), `load_time` (the phases) and `solver` (the fixpoint itself).

mod bounded;
mod call_graph;
mod call_sites;
mod cold;
mod library;
mod load_time;
mod memory;
mod params;
mod seeds;
mod selectors;
mod solver;

use std::collections::VecDeque;

use ir::{BlockId, FuncId, IdVec, InstId, Program, ValueDef, ValueId};
use space::OptionId;

use crate::ProgramDominance;
use crate::options::{FxMap, SetId, SetInterner};
use crate::pointsto::{CellId, PointsTo};
use crate::reaching::LocalDefinitions;
use crate::sources::ResolvedSources;

use bounded::parameter_bounded;
pub use call_graph::CallGraph;
use call_graph::dying_functions;
use call_sites::per_call_site_writes;
use cold::cold_blocks;
use library::{LibraryInput, LocalObjects};
pub use load_time::LoadTime;
use load_time::{load_time_constants, phases};
use memory::{CellReaders, cell_readers};
use params::parameter_pointers;
use seeds::seed_sources;
use selectors::selector_stores;
use solver::Solver;

/// External functions that copy data from their other arguments into the first one's object.
const COPIERS: &[&str] = &[
    "memcpy", "memmove", "strcpy", "strncpy", "strcat", "strncat", "sprintf", "snprintf", "sscanf",
    "memset",
];

#[inline]
pub(crate) fn is_copier(name: &str) -> bool {
    COPIERS.contains(&crate::pointsto::libc_name(name))
        || name.starts_with("llvm.memcpy")
        || name.starts_with("llvm.memmove")
}

/// A decision whose decided value carries option taint.
#[derive(Clone, Debug, PartialEq)]
pub struct TaintedDecision {
    pub inst: InstId,
    pub kind: DecisionKind,
    /// Data taint of the decided value (for a library call: of what it is given).
    pub options: SetId,
    pub loc: ir::DebugLoc,
}

/// What a decision decides (see [`ir::InstKind::decision`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionKind {
    /// A conditional branch or switch: which code runs next.
    Branch,
    /// A `select`: which value flows on.
    Select,
    /// A call through a pointer: which function runs.
    IndirectCall,
    /// A call of a function outside the program (the C library), or of one that passes
    /// what it is given on to the library: how much work the library does, from what it is
    /// given (`nanosleep`, `memset`, `write`). Its time is the library's, so only the call
    /// can be timed.
    LibraryCall,
}

impl DecisionKind {
    fn of(kind: &ir::InstKind) -> DecisionKind {
        match kind {
            ir::InstKind::Select { .. } => DecisionKind::Select,
            ir::InstKind::Call {
                callee: ir::Callee::Indirect(_),
                ..
            } => DecisionKind::IndirectCall,
            ir::InstKind::Call { .. } => DecisionKind::LibraryCall,
            _ => DecisionKind::Branch,
        }
    }
}

/// The statement-influence map and what it was computed from.
#[derive(Clone, Debug)]
pub struct StatementInfluence {
    pub sets: SetInterner,
    /// SI per instruction.
    pub influence: IdVec<InstId, SetId>,
    /// Data taint per value.
    pub value_taint: IdVec<ValueId, SetId>,
    /// Context taint per function.
    pub context: IdVec<FuncId, SetId>,
    pub decisions: Vec<TaintedDecision>,
    /// Tainted decisions in cold code (`static_taint::cold`: no path from them returns, one
    /// ends the program), which the map leaves out: a run spends no measurable time there.
    /// Their options are the influence they would have had.
    pub set_aside: Vec<TaintedDecision>,
    pub call_graph: CallGraph,
    /// Number of memory cells and worklist steps, for benchmarks.
    pub cells: usize,
    pub function_visits: usize,
    /// The initialisation phase and the options whose state it alone writes
    /// (`static_taint::load_time`).
    pub load_time: LoadTime,
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
    pub memory: IdVec<CellId, SetId>,
    /// Local control taint of each block (the decisions it is control dependent on).
    pub block_taint: IdVec<BlockId, SetId>,
    /// Taint of each function's return value.
    pub ret_taint: IdVec<FuncId, SetId>,
    /// The option sources' memory: addresses written with the options they hold.
    pub seed_writes: Vec<(ValueId, SetId)>,
    /// Values seeded directly (results of option-returning calls).
    pub seeded_values: Vec<(ValueId, SetId)>,
    /// Loads of globals that read only their own function's earlier stores.
    pub local_definitions: LocalDefinitions,
    /// Per function: it runs only on the way out of the program (that never returns, or is
    /// called only from such functions).
    pub dying: IdVec<FuncId, bool>,
    /// Per function: its decisions depend on its parameters alone, so its call sites decide
    /// instead (`burn (n)`; see `static_taint::bounded`).
    pub bounded: IdVec<FuncId, bool>,
    /// Small helpers' writes through a parameter, made at each of their call sites with that
    /// site's control and context instead (`static_taint::call_sites`): the parameter written
    /// through, and for a block copy the parameter it copies from, if any.
    pub written_at_call_sites: FxMap<InstId, (usize, Option<usize>)>,
    /// Per instruction: a small helper's write into its own stack object, made without its
    /// context.
    pub written_without_context: IdVec<InstId, bool>,
}

impl StatementInfluence {
    pub fn of(&self, inst: InstId) -> &crate::OptionSet {
        self.sets.get(self.influence[inst])
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
    let func_names: IdVec<FuncId, &str> =
        program.functions.iter().map(|f| f.name.as_str()).collect();
    let call_graph = CallGraph::new(program, &pts);

    // Phase 2: taint.
    let mut sets = SetInterner::new();
    let mut value_taint = IdVec::from_elem(SetId::EMPTY, program.values.len());
    // Memory written by option sources: (address, options), applied once the solver exists.
    let seed_writes = seed_sources(program, sources, &call_graph, &mut sets, &mut value_taint);
    let param_pointer = parameter_pointers(program);
    let dying = dying_functions(program, &call_graph);
    let local_definitions =
        crate::reaching::local_definitions(program, &pts, &call_graph, dominance);
    let selectors = selector_stores(program, &call_graph);
    let site_writes = per_call_site_writes(
        program,
        &pts,
        &call_graph,
        &param_pointer,
        &selectors,
        &dying,
    );
    let ncells = pts.cells.len();
    // Each option's cells: where its sources' seeds write it.
    let mut option_cells: Vec<(OptionId, Vec<CellId>)> = Vec::new();
    for &(ptr, s) in &seed_writes {
        for o in sets.get(s).iter() {
            let k = match option_cells.iter().position(|(x, _)| *x == o) {
                Some(k) => k,
                None => {
                    option_cells.push((o, Vec::new()));
                    option_cells.len() - 1
                }
            };
            option_cells[k].1.extend(pts.of(ptr).iter().copied());
        }
    }
    for (_, cells) in &mut option_cells {
        cells.sort_unstable();
        cells.dedup();
    }
    option_cells.sort_by_key(|(o, _)| *o);
    let source_cells: crate::options::FxSet<CellId> = option_cells
        .iter()
        .flat_map(|(_, cells)| cells.iter().copied())
        .collect();
    let phases = phases(program, &pts, &call_graph, &source_cells);
    let load_time = load_time_constants(program, &pts, &call_graph, &phases, &option_cells);
    let CellReaders {
        readers,
        groups,
        read_group,
        object_group,
    } = cell_readers(program, &pts, &call_graph, &param_pointer, &site_writes);

    let nfuncs = program.functions.len();
    let local_objects = LocalObjects::new(program);
    let cold = cold_blocks(program, &program.ends_program());
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
        memory: IdVec::from_elem(SetId::EMPTY, ncells),
        source_cell: IdVec::from_elem(false, ncells),
        unplaced_sources: FxMap::default(),
        init_memory: IdVec::from_elem(SetId::EMPTY, ncells),
        phases: &phases.block,
        phase: load_time::Phase::Any,
        ends_program: dying.clone(),
        groups,
        read_group,
        object_group,
        written: FxMap::default(),
        value_taint,
        block_taint: IdVec::from_elem(SetId::EMPTY, program.blocks.len()),
        context: IdVec::from_elem(SetId::EMPTY, nfuncs),
        ret_taint: IdVec::from_elem(SetId::EMPTY, nfuncs),
        param_taint: IdVec::from_elem(SetId::EMPTY, program.values.len()),
        param_memory: IdVec::from_elem(SetId::EMPTY, program.values.len()),
        param_pointer: &param_pointer,
        local_definitions: &local_definitions,
        label_base,
        split: FxMap::default(),
        readers: &readers,
        queue: VecDeque::new(),
        queued: IdVec::from_elem(false, nfuncs),
        visits: 0,
        func_names: &func_names,
        library_input: FxMap::default(),
        library_params: IdVec::from_elem(SetId::EMPTY, nfuncs),
        local_objects: &local_objects,
        selectors: &selectors,
        selector_taints: FxMap::default(),
        cold: &cold,
        site_writes: &site_writes,
        site_write_taints: FxMap::default(),
        site_copies: FxMap::default(),
    };
    // A cell the spec names as where an option lives holds that option, and what the
    // program stores there: argument parsing stores under decisions on argv alone, which the
    // initialisation reads before anything else writes it (`load_time`), so those stores
    // add nothing, and a store after it under another option adds that option.
    for &(ptr, s) in &seed_writes {
        solver.write(ptr, s);
    }
    for &c in &source_cells {
        solver.source_cell[c] = true;
    }
    for &(ptr, s) in seed_writes
        .iter()
        .filter(|(ptr, _)| pts.of(*ptr).is_empty())
    {
        let old = solver
            .unplaced_sources
            .get(&ptr)
            .copied()
            .unwrap_or(SetId::EMPTY);
        let new = solver.sets.union(old, s);
        solver.unplaced_sources.insert(ptr, new);
    }
    let seeded_values: Vec<(ValueId, SetId)> = solver
        .value_taint
        .iter_enumerated()
        .filter(|(_, s)| **s != SetId::EMPTY)
        .map(|(v, s)| (v, *s))
        .collect();
    // Parameters hold their own labels; call sites fill in the concrete taints.
    for func in &program.functions {
        for (k, &p) in func.params.iter().enumerate() {
            let label = solver.sets.singleton(OptionId(label_base + k as u32));
            solver.value_taint[p] = label;
        }
    }
    for (f, func) in program.functions.iter_enumerated() {
        if !func.is_declaration {
            solver.enqueue(f);
        }
    }
    solver.run();
    // Helpers whose decisions depend on their parameters alone are decisions at their call
    // sites instead (`bounded`); the second run passes their arguments on.
    let bounded = parameter_bounded(&mut solver);
    solver.run();

    // The statement-influence map.
    // Everything outside the solver sees concrete taints: parameter labels replaced by the
    // parameters' taints (a call result keeps its call site's substitution).
    for (v, def) in program.values.iter_enumerated() {
        let f = match def {
            ValueDef::Inst(i) => program.func_of(*i),
            ValueDef::Param { func, .. } => *func,
            _ => continue,
        };
        let t = solver.value_taint[v];
        solver.value_taint[v] = solver.concrete(f, t);
    }
    for (b, block) in program.blocks.iter_enumerated() {
        let t = solver.block_taint[b];
        solver.block_taint[b] = solver.concrete(block.func, t);
    }
    for g in program.functions.keys() {
        let t = solver.ret_taint[g];
        solver.ret_taint[g] = solver.concrete(g, t);
    }
    // What each call gives the library, as a decision of its own: the options found in its
    // function (parameters are passed on to the call sites, see `library`). Objects that are
    // not the caller's own were written under their writers' contexts (stores carry the
    // context); taint that is only the calling function's context says whether the call
    // runs, which the caller's region times already, so it does not make the call a decision.
    let library_input: FxMap<InstId, SetId> = std::mem::take(&mut solver.library_input)
        .into_iter()
        .map(|(call, input)| {
            let f = program.func_of(call);
            let (own, _) = solver.split(input.values);
            // A small helper's own objects hold taint symbolic in its parameters.
            let objects = solver.concrete(f, input.objects);
            let input = LibraryInput { objects, ..input };
            let t = if solver.sets.is_subset(input.objects, solver.context[f]) {
                own
            } else {
                solver.sets.union(own, input.objects)
            };
            (call, t)
        })
        .collect();
    solver.concrete_local_memory();
    let written_at_call_sites = site_writes.parameters(program, &pts, &call_graph, &param_pointer);
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
    let mut influence = IdVec::from_elem(SetId::EMPTY, program.insts.len());
    let mut decisions = Vec::new();
    let mut set_aside = Vec::new();
    for (fi, func) in program.functions.iter_enumerated() {
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                let inst = program.inst(i);
                // A parameter-bounded helper decides only on what its call sites give it,
                // which are the decisions (`bounded`).
                let (mut local, mut decided) = if bounded[fi] {
                    (SetId::EMPTY, SetId::EMPTY)
                } else {
                    let decided = inst
                        .kind
                        .decision()
                        .map_or(SetId::EMPTY, |c| value_taint[c]);
                    (block_taint[b], decided)
                };
                if let Some(&input) = library_input.get(&i) {
                    decided = sets.union(decided, input);
                }
                if cold[b] {
                    // On the way to ending the program (`cold`): set aside, not timed apart.
                    if decided != SetId::EMPTY {
                        let local = sets.union(decided, local);
                        set_aside.push(TaintedDecision {
                            inst: i,
                            kind: DecisionKind::of(&inst.kind),
                            options: sets.union(local, context[fi]),
                            loc: inst.loc,
                        });
                    }
                    continue;
                }
                if decided != SetId::EMPTY {
                    decisions.push(TaintedDecision {
                        inst: i,
                        kind: DecisionKind::of(&inst.kind),
                        options: decided,
                        loc: inst.loc,
                    });
                    local = sets.union(local, decided);
                }
                // A statement that no decision of its own function influences runs whenever
                // its function runs: its time belongs to the region open at the call site,
                // which carries the call's context already (§3.3: a callee's time counts in
                // its caller's region). Only statements under a local tainted decision form
                // regions of their own, and those also depend on whether the function runs at
                // all, so they carry the context too (Fig. 2: foo's lines 3-4 are {A, C}).
                influence[i] = if local == SetId::EMPTY {
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
        set_aside,
        call_graph,
        cells: ncells,
        function_visits: visits,
        load_time,
        facts: TaintFacts {
            points_to: pts,
            memory,
            block_taint,
            ret_taint,
            seed_writes,
            seeded_values,
            local_definitions,
            dying,
            bounded,
            written_at_call_sites,
            written_without_context: site_writes.local,
        },
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
