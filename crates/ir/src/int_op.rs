//! Exact integer semantics ([`IntOp`]) where the frontend knows them, and their evaluation:
//! the one place constant folding computes.

#[cfg(doc)]
use crate::{InstKind, Program};

/// What an integer instruction computes, exactly, where the frontend knows it
/// ([`Program::int_ops`]). Taint treats every [`InstKind::Op`] alike and never looks; constant
/// folding (fixed settings, `analysis::fixed`) needs the arithmetic. Integers are canonical:
/// a `bits`-wide value sign-extended to 64 bits, so an `i1` true is -1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntOp {
    pub kind: IntOpKind,
    /// Width of the operands (of the loaded value, for [`IntOpKind::Load`]), 1 to 64.
    pub bits: u32,
}

/// The operation of an [`IntOp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOpKind {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Shl,
    LShr,
    AShr,
    UDiv,
    SDiv,
    URem,
    SRem,
    /// A comparison; the result is an `i1`.
    Compare(Predicate),
    /// Casts to an integer of `to` bits.
    ZExt {
        to: u32,
    },
    SExt {
        to: u32,
    },
    Trunc {
        to: u32,
    },
    /// A load of an integer.
    Load,
}

/// An integer comparison (LLVM's `icmp` predicates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Predicate {
    Eq,
    Ne,
    Ugt,
    Uge,
    Ult,
    Ule,
    Sgt,
    Sge,
    Slt,
    Sle,
}

/// `v`'s low `bits` bits, sign-extended: the canonical form of a `bits`-wide integer.
pub fn canonical(v: i64, bits: u32) -> i64 {
    if bits == 0 || bits >= 64 {
        v
    } else {
        let shift = 64 - bits;
        (v << shift) >> shift
    }
}

fn unsigned(v: i64, bits: u32) -> u64 {
    if bits >= 64 {
        v as u64
    } else {
        (v as u64) & ((1u64 << bits) - 1)
    }
}

impl IntOp {
    /// The result for canonical operands (two, or one for casts), canonical; `None` where the
    /// operation has no defined result (division by zero, shifts by the width or more) or is
    /// a load.
    pub fn evaluate(&self, args: &[i64]) -> Option<i64> {
        use IntOpKind::*;
        let w = self.bits;
        let (a, b) = (*args.first()?, args.get(1).copied());
        let out = |v: i64| Some(canonical(v, w));
        let shift = |b: i64| (unsigned(b, w) < w as u64).then_some(unsigned(b, w) as u32);
        match self.kind {
            Add => out(a.wrapping_add(b?)),
            Sub => out(a.wrapping_sub(b?)),
            Mul => out(a.wrapping_mul(b?)),
            And => out(a & b?),
            Or => out(a | b?),
            Xor => out(a ^ b?),
            Shl => out(((unsigned(a, w)) << shift(b?)?) as i64),
            LShr => out((unsigned(a, w) >> shift(b?)?) as i64),
            AShr => out(a >> shift(b?)?),
            UDiv => {
                let d = unsigned(b?, w);
                (d != 0).then(|| canonical((unsigned(a, w) / d) as i64, w))
            }
            URem => {
                let d = unsigned(b?, w);
                (d != 0).then(|| canonical((unsigned(a, w) % d) as i64, w))
            }
            SDiv => a.checked_div(b?).map(|v| canonical(v, w)),
            SRem => a.checked_rem(b?).map(|v| canonical(v, w)),
            Compare(p) => {
                let b = b?;
                let (ua, ub) = (unsigned(a, w), unsigned(b, w));
                let holds = match p {
                    Predicate::Eq => a == b,
                    Predicate::Ne => a != b,
                    Predicate::Ugt => ua > ub,
                    Predicate::Uge => ua >= ub,
                    Predicate::Ult => ua < ub,
                    Predicate::Ule => ua <= ub,
                    Predicate::Sgt => a > b,
                    Predicate::Sge => a >= b,
                    Predicate::Slt => a < b,
                    Predicate::Sle => a <= b,
                };
                Some(-(holds as i64))
            }
            ZExt { to } => Some(canonical(unsigned(a, w) as i64, to)),
            SExt { to } => Some(canonical(a, to)),
            Trunc { to } => Some(canonical(a, to)),
            Load => None,
        }
    }
}
