//! `IntOp::evaluate` on canonical integers (a `bits`-wide value sign-extended to 64 bits).

use ir::{IntOp, IntOpKind as K, Predicate as P, canonical};

fn eval(kind: K, bits: u32, args: &[i64]) -> Option<i64> {
    IntOp { kind, bits }.evaluate(args)
}

#[test]
fn booleans_and_casts_follow_llvm() {
    // `!x` at -O0: icmp ne x, 0 → xor with true → zext to int.
    let ne = eval(K::Compare(P::Ne), 32, &[0, 0]).unwrap();
    assert_eq!(ne, 0);
    let not = eval(K::Xor, 1, &[ne, -1]).unwrap();
    assert_eq!(not, -1, "i1 true is -1");
    assert_eq!(eval(K::ZExt { to: 32 }, 1, &[not]), Some(1));
    assert_eq!(eval(K::SExt { to: 32 }, 1, &[not]), Some(-1));
    assert_eq!(eval(K::Trunc { to: 8 }, 32, &[0x1ff]), Some(-1));
    assert_eq!(eval(K::ZExt { to: 32 }, 8, &[-1]), Some(255));
    assert_eq!(canonical(255, 8), -1);
}

#[test]
fn signedness_overflow_and_undefined_results() {
    assert_eq!(
        eval(K::Compare(P::Ult), 8, &[-1, 1]),
        Some(0),
        "0xff is not below 1"
    );
    assert_eq!(eval(K::Compare(P::Slt), 8, &[-1, 1]), Some(-1));
    assert_eq!(eval(K::Add, 8, &[127, 1]), Some(-128));
    assert_eq!(eval(K::LShr, 8, &[-128, 7]), Some(1));
    assert_eq!(eval(K::AShr, 8, &[-128, 7]), Some(-1));
    assert_eq!(eval(K::UDiv, 32, &[7, 0]), None);
    assert_eq!(eval(K::Shl, 32, &[1, 32]), None);
    assert_eq!(eval(K::SDiv, 64, &[i64::MIN, -1]), None);
    assert_eq!(eval(K::Load, 32, &[1]), None);
}
