//! Dense typed ids: the [`Id`] trait, the `id_type!` macro that makes them, and the program's
//! ids ([`FuncId`], [`BlockId`], [`InstId`], [`ValueId`], [`GlobalId`], [`StructId`],
//! [`FileId`]).
//!
//! An id is a `u32` index into one arena ([`crate::IdVec`]) that only its own type can index,
//! so a block id never reads a value table. The number inside is private: ids are made by the
//! arena that owns them (`IdVec::push`, `Program::add_*`) or, where code really counts, by
//! [`Id::new`] / `from_u32`, and read back with `index()` / `as_u32()`.

use std::fmt::Debug;
use std::hash::Hash;

/// A dense id: a newtype around a `u32` index, usable as the key of an [`crate::IdVec`].
pub trait Id: Copy + Eq + Ord + Hash + Debug {
    /// The id of index `index` (which must fit in a `u32`).
    fn new(index: usize) -> Self;
    /// The index this id stands for.
    fn index(self) -> usize;
}

/// Defines a dense id type: `pub struct Name(u32)` with a private field, `new(usize)`,
/// `from_u32`, `index()`, `as_u32()`, the [`Id`] trait and `Display` as `prefix` + number.
///
/// ```
/// ir::id_type!(
///     /// A memory cell.
///     pub CellId, "c"
/// );
/// let c = CellId::new(3);
/// assert_eq!((c.index(), c.to_string()), (3, "c3".to_string()));
/// ```
#[macro_export]
macro_rules! id_type {
    ($(#[$doc:meta])* $vis:vis $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis struct $name(u32);

        impl $name {
            /// The id of index `index`.
            #[inline]
            pub const fn new(index: usize) -> Self {
                debug_assert!(index <= u32::MAX as usize, "id index overflows u32");
                $name(index as u32)
            }

            /// The id of raw number `n`.
            #[inline]
            pub const fn from_u32(n: u32) -> Self {
                $name(n)
            }

            /// The index this id stands for.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }

            /// The raw number of this id.
            #[inline]
            pub const fn as_u32(self) -> u32 {
                self.0
            }
        }

        impl $crate::Id for $name {
            #[inline]
            fn new(index: usize) -> Self {
                $name::new(index)
            }

            #[inline]
            fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// A function of the program (defined or only declared).
    pub FuncId, "f"
);
id_type!(
    /// A basic block; ids are program-wide, each block belongs to one function.
    pub BlockId, "b"
);
id_type!(
    /// An instruction; ids are program-wide.
    pub InstId, "i"
);
id_type!(
    /// A value: an instruction result, a parameter, a global's address, a constant…
    pub ValueId, "v"
);
id_type!(
    /// A global variable.
    pub GlobalId, "g"
);
id_type!(
    /// A struct type.
    pub StructId, "s"
);
id_type!(
    /// A source file named in debug locations.
    pub FileId, "file"
);
