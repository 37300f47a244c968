//! Sets of options as compact bitsets, and their interning: the analyses store one 4-byte
//! [`SetId`] per instruction and compute unions through a cache.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use space::OptionId;

/// A set of options (bit `i` = option `OptionId(i)`). Up to 64 options live inline; more
/// spill to the heap. Trailing zero words are never stored, so equal sets compare equal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OptionSet {
    words: Vec<u64>,
}

impl OptionSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_ids(ids: impl IntoIterator<Item = OptionId>) -> Self {
        let mut s = Self::new();
        for id in ids {
            s.insert(id);
        }
        s
    }

    pub fn insert(&mut self, id: OptionId) {
        let (w, b) = (id.index() / 64, id.index() % 64);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << b;
    }

    pub fn contains(&self, id: OptionId) -> bool {
        let (w, b) = (id.index() / 64, id.index() % 64);
        self.words.get(w).is_some_and(|x| x & (1 << b) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn union(&self, other: &OptionSet) -> OptionSet {
        let (long, short) = if self.words.len() >= other.words.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut words = long.words.clone();
        for (w, o) in words.iter_mut().zip(&short.words) {
            *w |= o;
        }
        OptionSet { words }
    }

    pub fn intersection(&self, other: &OptionSet) -> OptionSet {
        let mut words: Vec<u64> = self
            .words
            .iter()
            .zip(&other.words)
            .map(|(a, b)| a & b)
            .collect();
        while words.last() == Some(&0) {
            words.pop();
        }
        OptionSet { words }
    }

    pub fn is_subset(&self, other: &OptionSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The options in increasing id order.
    pub fn iter(&self) -> impl Iterator<Item = OptionId> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| OptionId((i * 64 + b) as u32))
        })
    }
}

/// An interned [`OptionSet`]; [`SetId::EMPTY`] is the empty set in every interner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SetId(pub u32);

impl SetId {
    pub const EMPTY: SetId = SetId(0);
}

/// FxHash: the sets and pairs hashed here are small integers; SipHash would dominate.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
pub type FxSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;

/// Interns option sets; unions are cached, so propagating taint is mostly table look-ups.
#[derive(Clone, Debug)]
pub struct SetInterner {
    sets: Vec<OptionSet>,
    ids: FxMap<OptionSet, SetId>,
    unions: FxMap<(SetId, SetId), SetId>,
}

impl Default for SetInterner {
    fn default() -> Self {
        Self::new()
    }
}

impl SetInterner {
    pub fn new() -> Self {
        let mut this = SetInterner {
            sets: Vec::new(),
            ids: FxMap::default(),
            unions: FxMap::default(),
        };
        this.intern(OptionSet::new());
        this
    }

    pub fn intern(&mut self, set: OptionSet) -> SetId {
        if let Some(&id) = self.ids.get(&set) {
            return id;
        }
        let id = SetId(self.sets.len() as u32);
        self.sets.push(set.clone());
        self.ids.insert(set, id);
        id
    }

    pub fn singleton(&mut self, option: OptionId) -> SetId {
        self.intern(OptionSet::from_ids([option]))
    }

    pub fn get(&self, id: SetId) -> &OptionSet {
        &self.sets[id.0 as usize]
    }

    /// The id of a set if it was interned.
    pub fn find(&self, set: &OptionSet) -> Option<SetId> {
        self.ids.get(set).copied()
    }

    pub fn union(&mut self, a: SetId, b: SetId) -> SetId {
        if a == b || b == SetId::EMPTY {
            return a;
        }
        if a == SetId::EMPTY {
            return b;
        }
        let key = if a < b { (a, b) } else { (b, a) };
        if let Some(&u) = self.unions.get(&key) {
            return u;
        }
        let u = self.get(a).union(self.get(b));
        let u = self.intern(u);
        self.unions.insert(key, u);
        u
    }

    pub fn is_subset(&self, a: SetId, b: SetId) -> bool {
        a == SetId::EMPTY || a == b || self.get(a).is_subset(self.get(b))
    }

    /// Number of distinct sets interned.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_beyond_64_options_union_and_intern() {
        let mut i = SetInterner::new();
        let a = i.intern(OptionSet::from_ids([OptionId(3), OptionId(130)]));
        let b = i.singleton(OptionId(70));
        let u = i.union(a, b);
        assert_eq!(
            i.get(u).iter().collect::<Vec<_>>(),
            vec![OptionId(3), OptionId(70), OptionId(130)]
        );
        assert_eq!(i.union(b, a), u);
        assert!(i.is_subset(b, u) && !i.is_subset(u, b));
        assert_eq!(i.union(SetId::EMPTY, a), a);
        let back = i.get(u).intersection(&OptionSet::from_ids([OptionId(70)]));
        assert_eq!(i.find(&back), Some(b));
        assert_eq!(i.get(u).len(), 3);
    }
}
