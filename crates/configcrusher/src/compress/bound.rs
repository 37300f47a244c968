//! Lower bounds on the size of any cover of the required tuples, each a set of tuples or
//! options that no fewer rows can serve:
//! - the largest interaction: its tuples pairwise disagree, so each needs its own row;
//! - tuples of different interactions that pairwise conflict (they disagree on a shared
//!   option, or the constraints forbid them together), grown greedily from the largest
//!   interaction: overlapping interactions under constraints;
//! - binary options that all pairwise interact with all four value pairs required: the rows
//!   restricted to them form a binary covering array of strength 2, which needs at least
//!   CAN(2, k, 2) = the least N with C(N−1, ⌈N/2⌉) ≥ k rows (Kleitman–Spencer, Katona).

use space::Literal;

use super::Instance;

/// The largest of the bounds (0 when nothing is required).
pub(super) fn lower_bound(instance: &Instance) -> u128 {
    conflicting_tuples(instance).max(pairwise_binary(instance))
}

/// Whether two tuples can share a row.
fn compatible(instance: &Instance, a: usize, b: usize) -> bool {
    let (ia, va) = &instance.tuples[a];
    let (ib, vb) = &instance.tuples[b];
    let mut literals: Vec<Literal> = Vec::new();
    for (p, v) in instance.interactions[*ia].iter().zip(va) {
        literals.push((instance.options[*p], *v));
    }
    for (p, v) in instance.interactions[*ib].iter().zip(vb) {
        match literals.iter().find(|l| l.0 == instance.options[*p]) {
            Some(l) if l.1 != *v => return false,
            Some(_) => {}
            None => literals.push((instance.options[*p], *v)),
        }
    }
    instance.valid.allows(&literals)
}

/// A set of pairwise conflicting tuples: the largest interaction's, then each other tuple
/// that conflicts with all chosen so far.
fn conflicting_tuples(instance: &Instance) -> u128 {
    let Some(largest) = (0..instance.interactions.len())
        .max_by_key(|&i| instance.tuple_of[i].iter().flatten().count())
    else {
        return 0;
    };
    let mut chosen: Vec<usize> = instance.tuple_of[largest]
        .iter()
        .flatten()
        .copied()
        .collect();
    // Pairs are checked against the constraints: keep it to modest instances.
    if instance.tuples.len() <= 512 {
        for t in 0..instance.tuples.len() {
            if instance.tuples[t].0 != largest
                && chosen.iter().all(|&c| !compatible(instance, t, c))
            {
                chosen.push(t);
            }
        }
    }
    chosen.len() as u128
}

/// CAN(2, k, 2) for the largest set of binary options whose every pair lies in one
/// interaction with all four value pairs required (an exact maximum clique, over at most
/// 64 options).
fn pairwise_binary(instance: &Instance) -> u128 {
    let binary: Vec<usize> = (0..instance.options.len())
        .filter(|&p| instance.arity[p] == 2)
        .collect();
    if binary.len() < 2 || binary.len() > 64 {
        return 0;
    }
    let n = binary.len();
    let mut adjacent = vec![0u64; n];
    for a in 0..n {
        for b in a + 1..n {
            let (pa, pb) = (binary[a], binary[b]);
            let together = instance
                .interactions
                .iter()
                .any(|i| i.contains(&pa) && i.contains(&pb));
            let all_required = together
                && (0..4u32).all(|bits| {
                    instance.valid.allows(&[
                        (instance.options[pa], bits & 1),
                        (instance.options[pb], bits >> 1),
                    ])
                });
            if all_required {
                adjacent[a] |= 1 << b;
                adjacent[b] |= 1 << a;
            }
        }
    }
    let k = max_clique(
        &adjacent,
        0,
        if n == 64 { u64::MAX } else { (1 << n) - 1 },
        0,
    );
    if k < 2 {
        return 0;
    }
    covering_array_number(k as u64)
}

/// The size of a maximum clique among `candidates` (a bit set), given `size` chosen already.
fn max_clique(adjacent: &[u64], size: u32, candidates: u64, best: u32) -> u32 {
    if candidates == 0 {
        return best.max(size);
    }
    let mut best = best;
    let mut rest = candidates;
    while rest != 0 {
        if size + rest.count_ones() <= best {
            break;
        }
        let v = rest.trailing_zeros() as usize;
        rest &= !(1 << v);
        best = max_clique(adjacent, size + 1, rest & adjacent[v], best);
    }
    best.max(size)
}

/// CAN(2, k, 2): the least N with C(N−1, ⌈N/2⌉) ≥ k.
fn covering_array_number(k: u64) -> u128 {
    let choose = |n: u64, r: u64| -> u128 {
        let mut c: u128 = 1;
        for i in 0..r {
            c = c * u128::from(n - i) / u128::from(i + 1);
        }
        c
    };
    let mut n = 2u64;
    while choose(n - 1, n.div_ceil(2)) < u128::from(k) {
        n += 1;
    }
    u128::from(n)
}

#[cfg(test)]
mod tests {
    use super::covering_array_number;

    #[test]
    fn binary_covering_array_numbers() {
        let known = [
            (2, 4),
            (3, 4),
            (4, 5),
            (5, 6),
            (10, 6),
            (11, 7),
            (15, 7),
            (16, 8),
        ];
        for (k, n) in known {
            assert_eq!(covering_array_number(k), n, "CAN(2, {k}, 2)");
        }
    }
}
