//! Cold code: what runs only on the way to ending the program. LLVM's branch probabilities
//! weigh an edge into such code at 1 : 2^20 − 1; a run spends no measurable time there, so
//! its decisions are not performance interactions (an error printer that reads `-q`, reached
//! under every option's decisions, would otherwise make `-q` interact with all of them).
//!
//! A block is cold when no path from it returns and some path from it ends the program:
//! reaches `unreachable` (after `exit`, `abort`, a `noreturn` error reporter) or calls a
//! function that ends it ([`ir::Program::ends_program`]: bzip2's `panic`, `ioError`). So is
//! all of such a function: `if (err) { fprintf (…); exit (1); }` and `fail (msg)` alike.
//! `main` keeps its code when it cannot return at all (it may end with `exit (status)`), and
//! so do an endless loop (it ends nothing) and a `longjmp` (the program goes on).

use ir::{BlockId, FuncId, IdVec, InstKind, Program};

/// Per block: it runs only on the way to ending the program.
pub(super) fn cold_blocks(program: &Program, ends: &IdVec<FuncId, bool>) -> IdVec<BlockId, bool> {
    let mut cold = IdVec::from_elem(false, program.blocks.len());
    for (f, func) in program.functions.iter_enumerated() {
        if func.is_declaration || (func.name == "main" && (ends[f] || !program.can_return(f))) {
            continue;
        }
        let cfg = program.cfg(f);
        let stops: Vec<bool> = cfg
            .blocks
            .iter()
            .map(|&b| program.calls_program_end(b, ends))
            .collect();
        // Backwards from the blocks that return (or end the program), not through a call
        // that ends it.
        let reaching = |returns: bool| {
            let mut mark: Vec<bool> = cfg
                .blocks
                .iter()
                .enumerate()
                .map(|(k, &b)| {
                    if stops[k] {
                        return !returns;
                    }
                    program
                        .terminator(b)
                        .is_some_and(|t| match (&program.inst(t).kind, returns) {
                            (InstKind::Return { .. }, true) => true,
                            (InstKind::Unreachable, false) => program.unreachable_ends_program(b),
                            _ => false,
                        })
                })
                .collect();
            let mut work: Vec<u32> = (0..mark.len() as u32)
                .filter(|&k| mark[k as usize])
                .collect();
            while let Some(k) = work.pop() {
                for &p in &cfg.preds[k as usize] {
                    if !mark[p as usize] && !stops[p as usize] {
                        mark[p as usize] = true;
                        work.push(p);
                    }
                }
            }
            mark
        };
        let returns = reaching(true);
        let ends_here = reaching(false);
        for (k, &b) in cfg.blocks.iter().enumerate() {
            cold[b] = !returns[k] && ends_here[k];
        }
    }
    cold
}
