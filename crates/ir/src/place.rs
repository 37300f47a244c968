//! Places in a program that hold values an analysis follows (where options live).

use crate::{FuncId, GlobalId, StructId};

/// Selects the calls of a function whose argument `index` is the constant string `value`,
/// e.g. argument 0 = `"XZ_MODE"` for `getenv("XZ_MODE")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgSelector {
    pub index: u32,
    pub value: String,
}

/// A place in a program that can hold a value a white-box analysis follows: a global, a
/// field of every object of a struct type, or the return value of calls to a function
/// (optionally only those whose argument is a given constant string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Global(GlobalId),
    Field(StructId, u32),
    Return(FuncId, Option<ArgSelector>),
}
