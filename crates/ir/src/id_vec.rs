//! [`IdVec`]: a `Vec` indexed by a typed id, for the program's arenas and the analyses' side
//! tables (one fact per id).
//!
//! Shaped like cranelift-entity's `PrimaryMap` (an arena: [`IdVec::push`] hands out the next
//! id) and `SecondaryMap` (a side table sized like an arena: [`IdVec::from_elem`],
//! [`IdVec::with_default`]), and like rustc's `IndexVec`: iterating gives the elements as a
//! `Vec` would, [`IdVec::iter_enumerated`] pairs them with their ids, [`IdVec::keys`] gives the
//! ids. Only the id type indexes it (`table[id]`); the plain slice is there for code that
//! works on positions ([`IdVec::as_slice`]).

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use crate::Id;

/// A vector of `T` indexed by the id `I`.
pub struct IdVec<I, T> {
    raw: Vec<T>,
    _id: PhantomData<fn(I) -> I>,
}

impl<I: Id, T> IdVec<I, T> {
    /// An empty table.
    #[inline]
    pub const fn new() -> Self {
        IdVec {
            raw: Vec::new(),
            _id: PhantomData,
        }
    }

    /// An empty table with room for `capacity` elements.
    #[inline]
    pub fn with_capacity(capacity: usize) -> Self {
        Self::from_vec(Vec::with_capacity(capacity))
    }

    /// A table of `len` copies of `elem` (ids `0..len`).
    #[inline]
    pub fn from_elem(elem: T, len: usize) -> Self
    where
        T: Clone,
    {
        Self::from_vec(vec![elem; len])
    }

    /// A table of `len` default elements (ids `0..len`).
    #[inline]
    pub fn with_default(len: usize) -> Self
    where
        T: Default,
    {
        Self::from_vec(std::iter::repeat_with(T::default).take(len).collect())
    }

    /// The table whose element `I::new(k)` is `raw[k]`.
    #[inline]
    pub const fn from_vec(raw: Vec<T>) -> Self {
        IdVec {
            raw,
            _id: PhantomData,
        }
    }

    /// Appends `value` and returns its id.
    #[inline]
    pub fn push(&mut self, value: T) -> I {
        let id = self.next_id();
        self.raw.push(value);
        id
    }

    /// The id the next [`IdVec::push`] returns.
    #[inline]
    pub fn next_id(&self) -> I {
        I::new(self.raw.len())
    }

    /// The id of the last element.
    #[inline]
    pub fn last_id(&self) -> Option<I> {
        self.raw.len().checked_sub(1).map(I::new)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Whether `id` has an element.
    #[inline]
    pub fn contains_id(&self, id: I) -> bool {
        id.index() < self.raw.len()
    }

    #[inline]
    pub fn get(&self, id: I) -> Option<&T> {
        self.raw.get(id.index())
    }

    #[inline]
    pub fn get_mut(&mut self, id: I) -> Option<&mut T> {
        self.raw.get_mut(id.index())
    }

    /// The elements in id order.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.raw.iter()
    }

    #[inline]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.raw.iter_mut()
    }

    /// The elements with their ids, in id order.
    #[inline]
    pub fn iter_enumerated(
        &self,
    ) -> impl DoubleEndedIterator<Item = (I, &T)> + ExactSizeIterator + Clone + '_ {
        self.raw.iter().enumerate().map(|(k, t)| (I::new(k), t))
    }

    #[inline]
    pub fn iter_enumerated_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = (I, &mut T)> + ExactSizeIterator + '_ {
        self.raw.iter_mut().enumerate().map(|(k, t)| (I::new(k), t))
    }

    /// The ids of the elements, in order (the table is not borrowed).
    #[inline]
    pub fn keys(
        &self,
    ) -> impl DoubleEndedIterator<Item = I> + ExactSizeIterator + Clone + use<I, T> {
        (0..self.raw.len()).map(I::new)
    }

    /// Resizes to `len` elements, filling with copies of `value`.
    #[inline]
    pub fn resize(&mut self, len: usize, value: T)
    where
        T: Clone,
    {
        self.raw.resize(len, value);
    }

    /// The elements as a plain slice (position `k` is id `I::new(k)`).
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.raw
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.raw
    }

    /// The elements as a plain vector.
    #[inline]
    pub fn into_vec(self) -> Vec<T> {
        self.raw
    }
}

impl<I: Id, T> Index<I> for IdVec<I, T> {
    type Output = T;

    #[inline]
    fn index(&self, id: I) -> &T {
        &self.raw[id.index()]
    }
}

impl<I: Id, T> IndexMut<I> for IdVec<I, T> {
    #[inline]
    fn index_mut(&mut self, id: I) -> &mut T {
        &mut self.raw[id.index()]
    }
}

impl<I, T: Clone> Clone for IdVec<I, T> {
    fn clone(&self) -> Self {
        IdVec {
            raw: self.raw.clone(),
            _id: PhantomData,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.raw.clone_from(&source.raw);
    }
}

impl<I, T> Default for IdVec<I, T> {
    fn default() -> Self {
        IdVec {
            raw: Vec::new(),
            _id: PhantomData,
        }
    }
}

impl<I, T: fmt::Debug> fmt::Debug for IdVec<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}

impl<I, T: PartialEq> PartialEq for IdVec<I, T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<I, T: Eq> Eq for IdVec<I, T> {}

impl<I, T: std::hash::Hash> std::hash::Hash for IdVec<I, T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}

impl<I: Id, T> From<Vec<T>> for IdVec<I, T> {
    fn from(raw: Vec<T>) -> Self {
        Self::from_vec(raw)
    }
}

impl<I: Id, T> FromIterator<T> for IdVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        Self::from_vec(iter.into_iter().collect())
    }
}

impl<I: Id, T> Extend<T> for IdVec<I, T> {
    fn extend<It: IntoIterator<Item = T>>(&mut self, iter: It) {
        self.raw.extend(iter);
    }
}

impl<I, T> IntoIterator for IdVec<I, T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.raw.into_iter()
    }
}

impl<'a, I, T> IntoIterator for &'a IdVec<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter()
    }
}

impl<'a, I, T> IntoIterator for &'a mut IdVec<I, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockId, FuncId};

    #[test]
    fn push_index_and_enumerate() {
        let mut t: IdVec<FuncId, &str> = IdVec::new();
        assert_eq!(t.next_id(), FuncId::new(0));
        let a = t.push("a");
        let b = t.push("b");
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(t[b], "b");
        t[a] = "z";
        assert_eq!(t.iter().copied().collect::<Vec<_>>(), ["z", "b"]);
        assert_eq!(t.keys().collect::<Vec<_>>(), [a, b]);
        assert_eq!(
            t.iter_enumerated()
                .map(|(k, v)| (k, *v))
                .collect::<Vec<_>>(),
            [(a, "z"), (b, "b")]
        );
        assert_eq!(t.last_id(), Some(b));
        assert_eq!(t.get(FuncId::new(2)), None);
    }

    #[test]
    fn side_tables() {
        let t: IdVec<BlockId, u32> = IdVec::from_elem(7, 3);
        assert_eq!(t.as_slice(), &[7, 7, 7]);
        let d: IdVec<BlockId, Vec<u32>> = IdVec::with_default(2);
        assert_eq!(d.len(), 2);
        assert!(d[BlockId::new(1)].is_empty());
        let mut s: IdVec<BlockId, bool> = IdVec::new();
        s.resize(4, false);
        s[BlockId::from_u32(3)] = true;
        assert_eq!(s.iter().filter(|b| **b).count(), 1);
    }
}
