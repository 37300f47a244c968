//! Cold code: what runs only on the way to ending the program. LLVM's branch probabilities
//! weigh an edge into such code at 1 : 2^20 − 1; a run spends no measurable time there, so
//! its decisions are not performance interactions (an error printer that reads `-q`, reached
//! under every option's decisions, would otherwise make `-q` interact with all of them).
//!
//! A block is cold when no path from it returns and some path from it reaches `unreachable`
//! (what follows `exit`, `abort` or a `noreturn` error reporter): `if (err) { fprintf (…);
//! exit (1); }`, and all of an error function that exits. `main` keeps its code when it
//! cannot return at all (it may end with `exit (status)`), and so does an endless loop
//! (it reaches no `unreachable`).

use ir::{BlockId, IdVec, InstKind, Program};

/// Per block: it runs only on the way to ending the program.
pub(super) fn cold_blocks(program: &Program) -> IdVec<BlockId, bool> {
    let mut cold = IdVec::from_elem(false, program.blocks.len());
    for (f, func) in program.functions.iter_enumerated() {
        if func.is_declaration || (func.name == "main" && !program.can_return(f)) {
            continue;
        }
        let cfg = program.cfg(f);
        // Backwards from the blocks that end in a return (or in `unreachable`).
        let reaching = |returns: bool| {
            let mut mark: Vec<bool> = cfg
                .blocks
                .iter()
                .map(|&b| {
                    program.terminator(b).is_some_and(|t| {
                        matches!(
                            (&program.inst(t).kind, returns),
                            (InstKind::Return { .. }, true) | (InstKind::Unreachable, false)
                        )
                    })
                })
                .collect();
            let mut work: Vec<u32> = (0..mark.len() as u32).filter(|&k| mark[k as usize]).collect();
            while let Some(k) = work.pop() {
                for &p in &cfg.preds[k as usize] {
                    if !mark[p as usize] {
                        mark[p as usize] = true;
                        work.push(p);
                    }
                }
            }
            mark
        };
        let returns = reaching(true);
        let ends = reaching(false);
        for (k, &b) in cfg.blocks.iter().enumerate() {
            cold[b] = !returns[k] && ends[k];
        }
    }
    cold
}
