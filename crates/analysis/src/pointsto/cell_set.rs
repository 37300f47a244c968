//! A set of cells, as the solver grows it.

use super::*;

/// A set of cells: a sorted vector while small, a bitset once large (a merged program's
/// pointers point to thousands of cells, and adding to a sorted vector copies it).
#[derive(Clone, Debug, Default)]
pub(super) struct CellSet {
    small: Vec<CellId>,
    bits: Vec<u64>,
    len: usize,
}

impl CellSet {
    pub(super) const SMALL: usize = 64;

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `incoming` (sorted, no duplicates), appending the cells that were new to `added`.
    pub(super) fn insert_all(&mut self, incoming: &[CellId], added: &mut Vec<CellId>) {
        if self.bits.is_empty() {
            let old = std::mem::take(&mut self.small);
            let mut merged = Vec::with_capacity(old.len() + incoming.len());
            let (mut i, mut j) = (0, 0);
            while i < old.len() || j < incoming.len() {
                if j == incoming.len() || (i < old.len() && old[i] < incoming[j]) {
                    merged.push(old[i]);
                    i += 1;
                } else if i == old.len() || incoming[j] < old[i] {
                    merged.push(incoming[j]);
                    added.push(incoming[j]);
                    j += 1;
                } else {
                    merged.push(old[i]);
                    i += 1;
                    j += 1;
                }
            }
            self.len = merged.len();
            if merged.len() <= Self::SMALL {
                self.small = merged;
                return;
            }
            for c in merged {
                self.set_bit(c);
            }
            return;
        }
        for &c in incoming {
            if self.set_bit(c) {
                added.push(c);
                self.len += 1;
            }
        }
    }

    /// Sets a cell's bit; true if it was not set.
    pub(super) fn set_bit(&mut self, c: CellId) -> bool {
        let (w, b) = (c.index() / 64, c.index() % 64);
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        let was = self.bits[w] & (1 << b) != 0;
        self.bits[w] |= 1 << b;
        !was
    }

    /// The cells in increasing order.
    pub(super) fn to_vec(&self) -> Vec<CellId> {
        if self.bits.is_empty() {
            return self.small.clone();
        }
        let mut out = Vec::with_capacity(self.len);
        for (w, &word) in self.bits.iter().enumerate() {
            let mut x = word;
            while x != 0 {
                let b = x.trailing_zeros() as usize;
                out.push(CellId::new(w * 64 + b));
                x &= x - 1;
            }
        }
        out
    }
}
