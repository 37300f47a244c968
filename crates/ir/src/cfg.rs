//! The control-flow graph of one function over dense local block indices ([`Cfg`]).

use crate::{BlockId, FuncId, Program};

/// The CFG of one function with dense local block indices (`0` is the entry), successors
/// and predecessors; what dominator and region algorithms walk.
#[derive(Clone, Debug)]
pub struct Cfg {
    pub func: FuncId,
    /// Local index → block id.
    pub blocks: Vec<BlockId>,
    pub succs: Vec<Vec<u32>>,
    pub preds: Vec<Vec<u32>>,
}

impl Cfg {
    pub fn new(program: &Program, func: FuncId) -> Cfg {
        let blocks = program.func(func).blocks.clone();
        let mut succs = vec![Vec::new(); blocks.len()];
        let mut preds = vec![Vec::new(); blocks.len()];
        for (i, &b) in blocks.iter().enumerate() {
            for s in program.successors(b) {
                let s = program.block(s).local;
                succs[i].push(s);
                preds[s as usize].push(i as u32);
            }
        }
        Cfg {
            func,
            blocks,
            succs,
            preds,
        }
    }

    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Local indices of blocks with no successors (return, unreachable).
    pub fn exits(&self) -> Vec<u32> {
        (0..self.len() as u32)
            .filter(|&b| self.succs[b as usize].is_empty())
            .collect()
    }
}
