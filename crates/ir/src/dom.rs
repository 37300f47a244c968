//! Dominators, post-dominators and control dependence of one function's CFG.
//!
//! Dominators: Cooper, Harvey and Kennedy's iterative algorithm ("A Simple, Fast Dominance
//! Algorithm") over reverse post-order. Post-dominators: the same on the reversed CFG with a
//! virtual exit that every block without successors (return, unreachable) flows into. A block
//! that cannot reach any exit (an infinite loop) gets a fake edge to the virtual exit from the
//! deepest such block in reverse post-order (its latch, for a `while (1)` loop), so every
//! block has a post-dominator and loops without exits still behave like loops.
//!
//! Paths that end the program are not exits (like the unexceptional control-flow graph of the
//! ConfigCrusher paper's FlowDroid set-up): in a function that can return, a block ending in
//! `unreachable` (after `exit`, `abort` or a `noreturn` error function such as xz's
//! `message_fatal`, or a call of a function that ends the program without saying so, such as
//! bzip2's `panic`: `ir::Program::ends_program`) and the blocks that lead only there have no
//! post-dominator, so
//! `if (bad) fatal(); rest();` does not make `rest` control dependent on `bad` — the
//! configurations that take the fatal path measure nothing. A function that never returns
//! (`main` ending in `exit(0)`) keeps all its sinks as exits.
//! Control dependence follows Ferrante, Ottenstein and Warren: for a CFG edge `a → b` where
//! `b` does not post-dominate `a`, every block on the post-dominator tree path from `b` up to
//! (excluding) `ipdom(a)` is control dependent on `a`.

const NONE: u32 = u32::MAX;

/// A dominator tree over nodes `0..n` with one root; nodes not reachable from the root have
/// no immediate dominator and dominate nothing.
#[derive(Clone, Debug)]
pub struct DomTree {
    root: u32,
    idom: Vec<u32>,
    /// Pre- and post-order numbers in the tree, for O(1) dominance queries.
    pre: Vec<u32>,
    post: Vec<u32>,
    /// Reverse post-order of the graph from the root (reachable nodes only).
    rpo: Vec<u32>,
}

impl DomTree {
    /// Dominators of the graph `succs`/`preds` (adjacency lists over `0..n`) from `root`.
    pub fn compute(succs: &[Vec<u32>], preds: &[Vec<u32>], root: u32) -> DomTree {
        let n = succs.len();
        let rpo = reverse_post_order(succs, root);
        let mut order = vec![NONE; n];
        for (i, &b) in rpo.iter().enumerate() {
            order[b as usize] = i as u32;
        }
        let mut idom = vec![NONE; n];
        idom[root as usize] = root;
        let mut changed = true;
        while changed {
            changed = false;
            for &b in rpo.iter().skip(1) {
                let mut new = NONE;
                for &p in &preds[b as usize] {
                    if idom[p as usize] == NONE {
                        continue;
                    }
                    new = if new == NONE {
                        p
                    } else {
                        intersect(&idom, &order, p, new)
                    };
                }
                if new != NONE && idom[b as usize] != new {
                    idom[b as usize] = new;
                    changed = true;
                }
            }
        }
        idom[root as usize] = NONE;
        // Tree numbering.
        let mut children = vec![Vec::new(); n];
        for (b, &d) in idom.iter().enumerate() {
            if d != NONE {
                children[d as usize].push(b as u32);
            }
        }
        let mut pre = vec![NONE; n];
        let mut post = vec![NONE; n];
        let (mut pc, mut qc) = (0u32, 0u32);
        let mut stack = vec![(root, 0usize)];
        pre[root as usize] = pc;
        pc += 1;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            if let Some(&c) = children[node as usize].get(*next) {
                *next += 1;
                pre[c as usize] = pc;
                pc += 1;
                stack.push((c, 0));
            } else {
                post[node as usize] = qc;
                qc += 1;
                stack.pop();
            }
        }
        DomTree {
            root,
            idom,
            pre,
            post,
            rpo,
        }
    }

    pub fn root(&self) -> u32 {
        self.root
    }

    /// The immediate dominator; `None` for the root and unreachable nodes.
    pub fn idom(&self, node: u32) -> Option<u32> {
        let d = self.idom[node as usize];
        (d != NONE).then_some(d)
    }

    pub fn is_reachable(&self, node: u32) -> bool {
        self.pre[node as usize] != NONE
    }

    /// Whether `a` dominates `b` (reflexive).
    pub fn dominates(&self, a: u32, b: u32) -> bool {
        let (a, b) = (a as usize, b as usize);
        self.pre[a] != NONE
            && self.pre[b] != NONE
            && self.pre[a] <= self.pre[b]
            && self.post[b] <= self.post[a]
    }

    /// Reachable nodes in reverse post-order of the graph.
    pub fn reverse_post_order(&self) -> &[u32] {
        &self.rpo
    }
}

fn intersect(idom: &[u32], order: &[u32], mut a: u32, mut b: u32) -> u32 {
    while a != b {
        while order[a as usize] > order[b as usize] {
            a = idom[a as usize];
        }
        while order[b as usize] > order[a as usize] {
            b = idom[b as usize];
        }
    }
    a
}

fn reverse_post_order(succs: &[Vec<u32>], root: u32) -> Vec<u32> {
    let mut seen = vec![false; succs.len()];
    let mut out = Vec::new();
    let mut stack = vec![(root, 0usize)];
    seen[root as usize] = true;
    while let Some((node, next)) = stack.last_mut() {
        let node = *node;
        if let Some(&s) = succs[node as usize].get(*next) {
            *next += 1;
            if !seen[s as usize] {
                seen[s as usize] = true;
                stack.push((s, 0));
            }
        } else {
            out.push(node);
            stack.pop();
        }
    }
    out.reverse();
    out
}

/// Dominators, post-dominators and control dependence of one function, by local block
/// index (see [`crate::Cfg`]).
#[derive(Clone, Debug)]
pub struct FunctionDominance {
    pub dom: DomTree,
    /// Over `0..=n`, where node `n` is the virtual exit (the root).
    pub postdom: DomTree,
    /// For each block, the blocks whose decision it is control dependent on.
    pub control_deps: Vec<Vec<u32>>,
}

impl FunctionDominance {
    /// Of a function of a program, with the blocks ending in `unreachable` where the program
    /// ends ([`crate::Program::unreachable_ends_program`]) and those calling a function that
    /// ends the program (`ends`, from [`crate::Program::ends_program`]) as
    /// program ends: such a call does not come back, so its block has no successors here.
    pub fn of_function(
        program: &crate::Program,
        f: crate::FuncId,
        ends: &crate::IdVec<crate::FuncId, bool>,
    ) -> FunctionDominance {
        let mut cfg = program.cfg(f);
        let ends_program: Vec<bool> = cfg
            .blocks
            .iter()
            .map(|&b| program.unreachable_ends_program(b) || program.calls_program_end(b, ends))
            .collect();
        for (b, &end) in ends_program.iter().enumerate() {
            if end {
                for s in std::mem::take(&mut cfg.succs[b]) {
                    cfg.preds[s as usize].retain(|&p| p as usize != b);
                }
            }
        }
        Self::with_program_ends(&cfg.succs, &cfg.preds, &ends_program)
    }

    /// From adjacency lists; node 0 is the entry.
    pub fn from_graph(succs: &[Vec<u32>], preds: &[Vec<u32>]) -> FunctionDominance {
        Self::with_program_ends(succs, preds, &[])
    }

    /// From adjacency lists, with the sinks that end the program marked (see the module
    /// documentation).
    pub fn with_program_ends(
        succs: &[Vec<u32>],
        preds: &[Vec<u32>],
        ends_program: &[bool],
    ) -> FunctionDominance {
        let n = succs.len();
        let ends = |b: usize| ends_program.get(b).copied().unwrap_or(false);
        // Only a function that can also return treats program ends as non-exits.
        let returns = (0..n).any(|b| succs[b].is_empty() && !ends(b));
        let dom = DomTree::compute(succs, preds, 0);
        let exit = n as u32;
        // Reversed graph: successors are the original predecessors.
        let mut rsuccs: Vec<Vec<u32>> = preds.to_vec();
        let mut rpreds: Vec<Vec<u32>> = succs.to_vec();
        rsuccs.push(Vec::new());
        rpreds.push(Vec::new());
        let mut program_end = vec![false; n + 1];
        for b in 0..n {
            if !succs[b].is_empty() {
                continue;
            }
            if returns && ends(b) {
                // Everything that reaches it, unless it also reaches an exit (below).
                mark_from(&rsuccs, b as u32, &mut program_end);
            } else {
                rsuccs[n].push(b as u32);
                rpreds[b].push(exit);
            }
        }
        // Blocks that reach no exit: connect the deepest (in forward RPO) to the exit, then
        // everything reaching it is covered; repeat. Blocks that lead only to program ends
        // stay without a post-dominator.
        let mut reaches = vec![false; n + 1];
        mark_from(&rsuccs, exit, &mut reaches);
        for b in 0..n {
            reaches[b] |= program_end[b];
        }
        if reaches.iter().any(|r| !r) {
            let mut candidates: Vec<u32> = dom.reverse_post_order().to_vec();
            candidates.extend((0..n as u32).filter(|&b| !dom.is_reachable(b)));
            for &b in candidates.iter().rev() {
                if !reaches[b as usize] {
                    rsuccs[n].push(b);
                    rpreds[b as usize].push(exit);
                    mark_from(&rsuccs, b, &mut reaches);
                }
            }
        }
        let postdom = DomTree::compute(&rsuccs, &rpreds, exit);
        let mut control_deps = vec![Vec::new(); n];
        for a in 0..n as u32 {
            let stop = postdom.idom(a);
            for &b in &succs[a as usize] {
                let mut runner = Some(b);
                while let Some(r) = runner {
                    if Some(r) == stop || r == exit {
                        break;
                    }
                    let deps: &mut Vec<u32> = &mut control_deps[r as usize];
                    if deps.last() != Some(&a) {
                        deps.push(a);
                    }
                    runner = postdom.idom(r);
                }
            }
        }
        FunctionDominance {
            dom,
            postdom,
            control_deps,
        }
    }

    /// The immediate post-dominator of a block; `None` when it is the virtual exit, or when
    /// the block leads only to program ends.
    pub fn ipdom(&self, block: u32) -> Option<u32> {
        let exit = self.control_deps.len() as u32;
        self.postdom.idom(block).filter(|&p| p != exit)
    }

    pub fn post_dominates(&self, a: u32, b: u32) -> bool {
        self.postdom.dominates(a, b)
    }
}

fn mark_from(succs: &[Vec<u32>], start: u32, seen: &mut [bool]) {
    if seen[start as usize] {
        return;
    }
    seen[start as usize] = true;
    let mut stack = vec![start];
    while let Some(b) = stack.pop() {
        for &s in &succs[b as usize] {
            if !seen[s as usize] {
                seen[s as usize] = true;
                stack.push(s);
            }
        }
    }
}

/// Dominance facts of every defined function, computed once and shared by the taint
/// analysis and region identification.
#[derive(Clone, Debug)]
pub struct ProgramDominance {
    per_function: crate::IdVec<crate::FuncId, Option<FunctionDominance>>,
}

impl ProgramDominance {
    pub fn new(program: &crate::Program) -> Self {
        let ends = program.ends_program();
        let per_function = program
            .functions
            .iter_enumerated()
            .map(|(f, func)| {
                (!func.is_declaration).then(|| FunctionDominance::of_function(program, f, &ends))
            })
            .collect();
        ProgramDominance { per_function }
    }

    /// `None` for declarations.
    pub fn get(&self, f: crate::FuncId) -> Option<&FunctionDominance> {
        self.per_function[f].as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(u32, u32)]) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let mut s = vec![Vec::new(); n];
        let mut p = vec![Vec::new(); n];
        for &(a, b) in edges {
            s[a as usize].push(b);
            p[b as usize].push(a);
        }
        (s, p)
    }

    #[test]
    fn diamond_and_loop() {
        // 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 1 (loop), 3 -> 4 exit
        let (s, p) = graph(5, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 1), (3, 4)]);
        let d = FunctionDominance::from_graph(&s, &p);
        assert_eq!(d.dom.idom(3), Some(0));
        assert_eq!(d.dom.idom(1), Some(0));
        assert_eq!(d.ipdom(0), Some(3));
        assert_eq!(d.ipdom(3), Some(4));
        assert_eq!(d.ipdom(4), None);
        // 1 and 2 depend on 0; 1 also on 3 (the loop), and 3 on itself.
        assert_eq!(d.control_deps[2], vec![0]);
        assert!(d.control_deps[1].contains(&0) && d.control_deps[1].contains(&3));
        assert_eq!(d.control_deps[3], vec![3]);
        assert!(d.control_deps[4].is_empty());
    }

    #[test]
    fn infinite_loop_gets_post_dominators() {
        // 0 -> 1, 1 -> 2, 2 -> 1 (no exit at all), 1 -> 3 exit? no: 0 -> 3 exit.
        let (s, p) = graph(4, &[(0, 1), (0, 3), (1, 2), (2, 1)]);
        let d = FunctionDominance::from_graph(&s, &p);
        for b in 0..4 {
            assert!(d.postdom.is_reachable(b), "block {b}");
        }
        assert_eq!(d.ipdom(1), Some(2));
        // The latch got the fake exit edge, so the loop header depends on it like on a
        // loop condition, and on the entry's branch.
        assert_eq!(d.control_deps[1], vec![0, 2]);
        assert_eq!(d.ipdom(0), None);
    }
}
