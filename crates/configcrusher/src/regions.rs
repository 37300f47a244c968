//! Regions (ConfigCrusher Algorithm 2) and their optimisation by propagation (Algorithms 3
//! and 4).
//!
//! A *statement* is a non-phi instruction (phis belong to their block's entry edge). The
//! statement-level immediate dominator of a statement is the previous statement in its block,
//! or the terminator of the block's immediate dominator; its immediate post-dominator is the
//! next statement, or the first statement of the block's immediate post-dominator (or the
//! function's exit).
//!
//! Instrumentation points are [`ProgramPoint`]s: "before instruction X" or "on the CFG edge
//! (A, B)" (the instrumenter splits the edge). A region starting at the first statement of a
//! block starts on the block's incoming edges except back edges (so a region around a loop is
//! entered once, not once per iteration). A region ends on the edges into its end statement's
//! block that come from inside the region, before the end statement when it is mid-block, or
//! before the `return`/`unreachable` of the exits reachable from it when it extends to the end
//! of the function. The runtime must treat an end of a region that is not open as a no-op.

use std::collections::VecDeque;

use ir::{BlockId, FuncId, InstId, InstKind, Program, ProgramPoint, ValueDef};

use analysis::options::{FxMap, SetId, SetInterner};
use analysis::static_taint::CallGraph;
use ir::{FunctionDominance, ProgramDominance};

/// A region: statements influenced by the same options, with the points that start and end
/// it.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    pub function: FuncId,
    pub options: SetId,
    /// The statement whose influence differs from its dominator's: where the region begins.
    pub head: InstId,
    pub start: Vec<ProgramPoint>,
    pub end: Vec<ProgramPoint>,
    /// Source line range of the region's statements, when known.
    pub lines: Option<(u32, u32)>,
}

/// The regions of a program and the functions whose regions were pulled into their callers.
#[derive(Clone, Debug, Default)]
pub struct RegionPlan {
    pub regions: Vec<Region>,
    /// Functions with no regions of their own because every call site's region already
    /// carries all their options (their time counts in the caller's region).
    pub pulled_out: Vec<FuncId>,
}

/// The statements of a block: its non-phi instructions.
fn statements(program: &Program, b: BlockId) -> &[InstId] {
    let insts = &program.block(b).insts;
    let first = insts
        .iter()
        .position(|&i| !matches!(program.inst(i).kind, InstKind::Phi { .. }))
        .unwrap_or(insts.len());
    &insts[first..]
}

/// Algorithm 2: the regions of every defined function under an influence map (the original
/// statement-influence map, or an optimised one), skipping `skip`ped functions.
pub fn identify_regions(
    program: &Program,
    dominance: &ProgramDominance,
    influence: &[SetId],
    skip: &[FuncId],
) -> RegionPlan {
    let mut regions = Vec::new();
    for (fi, func) in program.functions.iter().enumerate() {
        let f = FuncId::new(fi);
        if skip.contains(&f) {
            continue;
        }
        let Some(dom) = dominance.get(f) else {
            continue;
        };
        let mut cfg = None;
        for (local, &b) in func.blocks.iter().enumerate() {
            // Dead code (clang keeps the block after a `return` inside `do { … } while (0)`)
            // has no entry to start a region on, but would end one at every exit.
            if !dom.dom.is_reachable(local as u32) {
                continue;
            }
            let stmts = statements(program, b);
            for (k, &s) in stmts.iter().enumerate() {
                let set = influence[s.index()];
                if set == SetId::EMPTY {
                    continue;
                }
                let idom_set = if k > 0 {
                    influence[stmts[k - 1].index()]
                } else {
                    match dom.dom.idom(local as u32) {
                        Some(d) => program
                            .terminator(func.blocks[d as usize])
                            .map_or(SetId::EMPTY, |t| influence[t.index()]),
                        None => SetId::EMPTY,
                    }
                };
                if set == idom_set {
                    continue;
                }
                let cfg = cfg.get_or_insert_with(|| program.cfg(f));
                regions.push(region_at(
                    program,
                    dom,
                    cfg,
                    influence,
                    local as u32,
                    k,
                    set,
                ));
            }
        }
    }
    RegionPlan {
        regions,
        pulled_out: skip.to_vec(),
    }
}

fn region_at(
    program: &Program,
    dom: &FunctionDominance,
    cfg: &ir::Cfg,
    influence: &[SetId],
    local: u32,
    k: usize,
    set: SetId,
) -> Region {
    let f = cfg.func;
    let func = program.func(f);
    let b = func.blocks[local as usize];
    let stmts = statements(program, b);
    let head = stmts[k];
    let cfg_preds = |block: u32| -> Vec<u32> { cfg.preds[block as usize].clone() };
    let start = if k > 0 || local == 0 {
        vec![ProgramPoint::Before(head)]
    } else {
        cfg_preds(local)
            .into_iter()
            .filter(|&p| !dom.dom.dominates(local, p))
            .map(|p| ProgramPoint::Edge {
                from: func.blocks[p as usize],
                to: b,
            })
            .collect()
    };
    // Walk the post-dominators while they have the same influence. A post-dominator that
    // dominates the head's block is the header of a loop around it: the region ends on the
    // way back to it, else the back edge would be inside the region, which each iteration
    // would enter again and leave only once.
    let mut pos: Option<(u32, usize)> = next_pdom(program, dom, func, local, k);
    while let Some((pb, pk)) = pos {
        let s = statements(program, func.blocks[pb as usize])[pk];
        if influence[s.index()] != set || (pk == 0 && dom.dom.dominates(pb, local)) {
            break;
        }
        pos = next_pdom(program, dom, func, pb, pk);
    }
    // Blocks of the region: reachable from the head's block without passing the end block.
    let stop = pos.filter(|&(_, pk)| pk == 0).map(|(pb, _)| pb);
    let mut inside = vec![false; func.blocks.len()];
    let mut queue = VecDeque::from([local]);
    inside[local as usize] = true;
    let mut lines: Option<(u32, u32)> = None;
    while let Some(x) = queue.pop_front() {
        for &i in &program.block(func.blocks[x as usize]).insts {
            let l = program.inst(i).loc.line;
            if l > 0 && influence[i.index()] == set {
                lines = Some(lines.map_or((l, l), |(a, z)| (a.min(l), z.max(l))));
            }
        }
        if pos.is_some_and(|(pb, pk)| pb == x && pk > 0) {
            continue; // the region ends inside this block
        }
        for s in program.successors(func.blocks[x as usize]) {
            let s = program.block(s).local;
            if Some(s) != stop && !inside[s as usize] {
                inside[s as usize] = true;
                queue.push_back(s);
            }
        }
    }
    let end = match pos {
        Some((pb, 0)) => cfg_preds(pb)
            .into_iter()
            .filter(|&p| inside[p as usize])
            .map(|p| ProgramPoint::Edge {
                from: func.blocks[p as usize],
                to: func.blocks[pb as usize],
            })
            .collect(),
        Some((pb, pk)) => vec![ProgramPoint::Before(
            statements(program, func.blocks[pb as usize])[pk],
        )],
        None => func
            .blocks
            .iter()
            .enumerate()
            .filter(|(x, blk)| inside[*x] && program.successors(**blk).is_empty())
            .filter_map(|(_, blk)| program.terminator(*blk))
            .map(ProgramPoint::Before)
            .collect(),
    };
    // An end the head does not dominate also runs on paths that never entered the region
    // (a `return` or a join shared with a path that bypasses the head): end where the paths
    // from the head leave the blocks it dominates instead.
    let block_of = |p: &ProgramPoint| match p {
        ProgramPoint::Before(i) => program.block(program.inst(*i).block).local,
        ProgramPoint::Edge { from, .. } => program.block(*from).local,
    };
    let end = if end.iter().all(|p| dom.dom.dominates(local, block_of(p))) {
        end
    } else {
        let dominated = |x: u32| inside[x as usize] && dom.dom.dominates(local, x);
        let mut leaving = Vec::new();
        for x in (0..func.blocks.len() as u32).filter(|&x| dominated(x)) {
            let block = func.blocks[x as usize];
            if let Some((pb, pk)) = pos
                && pb == x
                && pk > 0
            {
                leaving.push(ProgramPoint::Before(statements(program, block)[pk]));
                continue;
            }
            let successors = program.successors(block);
            if successors.is_empty() {
                leaving.extend(program.terminator(block).map(ProgramPoint::Before));
            }
            for s in successors {
                let sl = program.block(s).local;
                if !dominated(sl) || Some(sl) == stop {
                    leaving.push(ProgramPoint::Edge { from: block, to: s });
                }
            }
        }
        leaving
    };
    Region {
        function: f,
        options: set,
        head,
        start,
        end,
        lines,
    }
}

/// The statement-level immediate post-dominator of statement `k` of block `local`.
fn next_pdom(
    program: &Program,
    dom: &FunctionDominance,
    func: &ir::Function,
    local: u32,
    k: usize,
) -> Option<(u32, usize)> {
    let stmts = statements(program, func.blocks[local as usize]);
    if k + 1 < stmts.len() {
        return Some((local, k + 1));
    }
    let mut b = dom.ipdom(local)?;
    // A block with only phis and no statements cannot exist (it has a terminator).
    while statements(program, func.blocks[b as usize]).is_empty() {
        b = dom.ipdom(b)?;
    }
    Some((b, 0))
}

/// Algorithms 3 and 4: grows each statement's influence within the program's interactions
/// so that Algorithm 2 finds fewer, larger regions, and finds the functions whose regions can
/// be pulled out into their call sites. Returns the optimised map and those functions.
///
/// Up (Algorithm 4): a predecessor statement (including the call sites of a function's entry)
/// takes the union of its influence and its successor's when that union is an interaction.
/// Down (Algorithm 3): a successor statement whose influence is a strict subset of its
/// predecessor's takes the predecessor's. Both keep invariants 1 and 2: the optimised
/// influence of every statement contains its original one and is an interaction.
///
/// Unlike the paper's Algorithm 3, which widens only the statements between a statement and
/// its immediate post-dominator, the downward step continues past the post-dominator for as
/// long as successors have strict subsets of the influence. The invariants allow that just
/// the same (the widened set is the predecessor's, an interaction that is measured anyway),
/// and it merges a region with the weaker code after it instead of timing both: fewer
/// region entries, the same model (`tests/optimisation.rs` measures both placements).
pub fn optimise_influence(
    program: &Program,
    sets: &mut SetInterner,
    influence: &[SetId],
    call_graph: &CallGraph,
) -> (Vec<SetId>, Vec<FuncId>) {
    let mut interactions = vec![false; sets.len()];
    for &s in influence {
        interactions[s.0 as usize] = true;
    }
    // Sets interned later (new unions) are not interactions.
    let is_interaction = |s: SetId| interactions.get(s.0 as usize).copied().unwrap_or(false);
    let mut opt = influence.to_vec();
    // First statement of every block, previous and next statements, block preds.
    let first_stmt = |b: BlockId| statements(program, b).first().copied();
    let mut block_preds: Vec<Vec<BlockId>> = vec![Vec::new(); program.blocks.len()];
    for (bi, _) in program.blocks.iter().enumerate() {
        for s in program.successors(BlockId::new(bi)) {
            block_preds[s.index()].push(BlockId::new(bi));
        }
    }
    let entry_of: FxMap<InstId, FuncId> = program
        .functions
        .iter()
        .enumerate()
        .filter_map(|(f, func)| Some((first_stmt(func.entry()?)?, FuncId::new(f))))
        .collect();
    let mut stmt_index = vec![0u32; program.insts.len()];
    for b in 0..program.blocks.len() {
        for (k, i) in statements(program, BlockId::new(b)).iter().enumerate() {
            stmt_index[i.index()] = k as u32;
        }
    }
    let position =
        |i: InstId| -> (BlockId, usize) { (program.inst(i).block, stmt_index[i.index()] as usize) };
    // Pull regions out of callees first (Algorithm 4 over call edges, before any statement is
    // merged with its neighbours): a call site takes the union of its influence and
    // everything its callee's statements carry when that union is an interaction. The paper
    // leaves the order of merges open and prioritises pulling regions out (§3.3); doing it as
    // a phase of its own makes the result independent of the worklist order below, where a
    // call site could otherwise first be widened by an unrelated neighbouring region (the
    // call `foo(C)` in Fig. 2 by the {A, B} region after it) and then no longer cover its
    // callee.
    loop {
        let mut changed = false;
        for (fi, func) in program.functions.iter().enumerate() {
            let mut max = SetId::EMPTY;
            for &b in &func.blocks {
                for &i in statements(program, b) {
                    max = sets.union(max, opt[i.index()]);
                }
            }
            if max == SetId::EMPTY {
                continue;
            }
            for &c in &call_graph.callers[FuncId::new(fi)] {
                if program.func_of(c).index() == fi {
                    continue;
                }
                let u = sets.union(opt[c.index()], max);
                if u != opt[c.index()] && is_interaction(u) {
                    opt[c.index()] = u;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut queue: VecDeque<InstId> = VecDeque::new();
    let mut queued = vec![false; program.insts.len()];
    for (i, s) in opt.iter().enumerate() {
        if *s != SetId::EMPTY && !matches!(program.insts[InstId::new(i)].kind, InstKind::Phi { .. })
        {
            queue.push_back(InstId::new(i));
            queued[i] = true;
        }
    }
    while let Some(s) = queue.pop_front() {
        queued[s.index()] = false;
        let here = opt[s.index()];
        let (b, k) = position(s);
        let stmts = statements(program, b);
        // Predecessor statements.
        let mut preds: Vec<InstId> = Vec::new();
        if k > 0 {
            preds.push(stmts[k - 1]);
        } else {
            preds.extend(
                block_preds[b.index()]
                    .iter()
                    .filter_map(|p| program.terminator(*p)),
            );
            if let Some(f) = entry_of.get(&s) {
                preds.extend(call_graph.callers[*f].iter().copied());
            }
        }
        for p in preds {
            let u = sets.union(opt[p.index()], here);
            if u != opt[p.index()] && is_interaction(u) {
                opt[p.index()] = u;
                if !queued[p.index()] {
                    queued[p.index()] = true;
                    queue.push_back(p);
                }
            }
        }
        // Successor statements.
        let succs: Vec<InstId> = if k + 1 < stmts.len() {
            vec![stmts[k + 1]]
        } else {
            program
                .successors(b)
                .into_iter()
                .filter_map(first_stmt)
                .collect()
        };
        for t in succs {
            let old = opt[t.index()];
            if old != here && sets.is_subset(old, here) {
                opt[t.index()] = here;
                if !queued[t.index()] {
                    queued[t.index()] = true;
                    queue.push_back(t);
                }
            }
        }
    }
    // Phis take their block's first statement's influence.
    for (i, inst) in program.insts.iter().enumerate() {
        if matches!(inst.kind, InstKind::Phi { .. })
            && let Some(s) = first_stmt(inst.block)
        {
            opt[i] = opt[s.index()];
        }
    }
    // Pull out callees whose every statement's influence is covered at every call site.
    let mut address_taken = vec![false; program.functions.len()];
    let mut mark = |v: ir::ValueId| {
        if let ValueDef::Function(f) = program.value(v) {
            address_taken[f.index()] = true;
        }
    };
    for inst in &program.insts {
        inst.kind.for_each_use(&mut mark);
    }
    for g in &program.globals {
        g.initializer_refs.iter().for_each(|r| mark(r.address));
    }
    let mut pulled = Vec::new();
    for (fi, func) in program.functions.iter().enumerate() {
        let callers = &call_graph.callers[FuncId::new(fi)];
        if func.is_declaration || address_taken[fi] || callers.is_empty() {
            continue;
        }
        let mut max = SetId::EMPTY;
        for &b in &func.blocks {
            for &i in &program.block(b).insts {
                max = sets.union(max, opt[i.index()]);
            }
        }
        if max != SetId::EMPTY
            && callers
                .iter()
                .all(|c| program.func_of(*c).index() != fi && sets.is_subset(max, opt[c.index()]))
        {
            pulled.push(FuncId::new(fi));
        }
    }
    (opt, pulled)
}
