//! Struct views: which struct types the program accesses one piece of memory as, and the
//! memory keys of struct fields that follow from them.
//!
//! C views one object through several struct types that share a common initial sequence
//! (liblzma's generic `lzma_filter_coder` over its `lzma_filter_encoder` tables), so such a
//! field must be one memory cell under every view. Keying every field by the first struct
//! with the same initial field types ([`ir::StructType::common`]) does that, but it also
//! makes one cell of unrelated structs that merely start alike and sit in one object: LZ4's
//! frame context holds an `LZ4F_frameInfo_t` and an `XXH32_state_t`, both starting with four
//! `unsigned`s, and the checksum's running state would be read as the frame's block mode.
//!
//! So points-to ([`crate::pointsto::solve`]) starts with every struct type its own key,
//! records the struct types it sees accessing each cell and the cells each block copy joins,
//! and joins the keys of the types that meet there when they share an initial sequence; then
//! it solves again, until a solution shows no new pair. The keys merge exactly the views the
//! final solution contains, so every access of a field through any of them reaches one cell.

use ir::{Program, StructId};

use crate::options::FxMap;

/// The classes of struct types viewed as one another, and the memory key of each field.
#[derive(Clone, Debug, Default)]
pub struct Views {
    /// Union-find parent of each struct type.
    parent: Vec<u32>,
    /// Per struct type and field: the struct whose same field is the same memory.
    keys: Vec<Vec<StructId>>,
}

impl Views {
    /// Every struct type its own view: no two types share a field's key.
    pub fn separate(program: &Program) -> Views {
        let n = program.structs.len();
        Views {
            parent: (0..n as u32).collect(),
            keys: program
                .structs
                .iter_enumerated()
                .map(|(s, st)| vec![s; st.fields.len()])
                .collect(),
        }
    }

    /// The key of field `field` of `structure` in memory: the same field of the first struct
    /// viewed as it with the same initial sequence of field types up to there.
    pub fn field_key(&self, structure: StructId, field: u32) -> (StructId, u32) {
        let key = self
            .keys
            .get(structure.index())
            .and_then(|k| k.get(field as usize))
            .copied()
            .unwrap_or(structure);
        (key, field)
    }

    fn find(&mut self, s: u32) -> u32 {
        let mut r = s;
        while self.parent[r as usize] != r {
            r = self.parent[r as usize];
        }
        let mut s = s;
        while self.parent[s as usize] != r {
            let next = self.parent[s as usize];
            self.parent[s as usize] = r;
            s = next;
        }
        r
    }

    /// Joins the views of each group of struct types seen at one place (a cell, or the two
    /// ends of a block copy) that share an initial sequence; true if any two classes joined,
    /// and then the keys are recomputed.
    pub fn join(&mut self, program: &Program, groups: &[Vec<StructId>]) -> bool {
        let mut joined = false;
        for group in groups {
            for (k, &a) in group.iter().enumerate() {
                for &b in &group[k + 1..] {
                    let (ca, cb) = (
                        program.structs[a].common.first(),
                        program.structs[b].common.first(),
                    );
                    if a == b || ca.is_none() || ca != cb {
                        continue;
                    }
                    let (ra, rb) = (self.find(a.as_u32()), self.find(b.as_u32()));
                    if ra != rb {
                        self.parent[ra.max(rb) as usize] = ra.min(rb);
                        joined = true;
                    }
                }
            }
        }
        if joined {
            self.recompute_keys(program);
        }
        joined
    }

    /// Field k of a struct is keyed by the first struct of its class with the same common
    /// initial sequence up to k (the same layout key).
    fn recompute_keys(&mut self, program: &Program) {
        let mut first: FxMap<(u32, StructId, usize), StructId> = FxMap::default();
        for (s, st) in program.structs.iter_enumerated() {
            let class = self.find(s.as_u32());
            for (k, &layout) in st.common.iter().enumerate() {
                let key = *first.entry((class, layout, k)).or_insert(s);
                self.keys[s.index()][k] = key;
            }
        }
    }
}
