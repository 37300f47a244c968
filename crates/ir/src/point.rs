//! Where instrumentation goes: before an instruction or on a control-flow edge.

use crate::{BlockId, InstId};

/// Where an instrumenter inserts a region start or end call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProgramPoint {
    /// Immediately before this instruction (never a phi).
    Before(InstId),
    /// On the control-flow edge from `from` to `to` (split it to insert).
    Edge { from: BlockId, to: BlockId },
}
