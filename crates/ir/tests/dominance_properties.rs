//! Dominators, post-dominators and control dependence against their definitions, on random
//! CFGs.

#![allow(clippy::needless_range_loop)] // node indices are the point here

use ir::FunctionDominance;
use proptest::prelude::*;

fn adjacency(n: usize, edges: &[(usize, usize)]) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut s = vec![Vec::new(); n];
    let mut p = vec![Vec::new(); n];
    for &(a, b) in edges {
        let (a, b) = (a % n, b % n);
        if !s[a].contains(&(b as u32)) {
            s[a].push(b as u32);
            p[b].push(a as u32);
        }
    }
    (s, p)
}

/// Nodes reachable from `from` without passing `removed`.
fn reach(succs: &[Vec<u32>], from: usize, removed: Option<usize>) -> Vec<bool> {
    let mut seen = vec![false; succs.len()];
    if Some(from) == removed {
        return seen;
    }
    let mut stack = vec![from];
    seen[from] = true;
    while let Some(x) = stack.pop() {
        for &y in &succs[x] {
            let y = y as usize;
            if !seen[y] && Some(y) != removed {
                seen[y] = true;
                stack.push(y);
            }
        }
    }
    seen
}

proptest! {
    #[test]
    fn dominators_match_the_definition(
        n in 1usize..12,
        edges in prop::collection::vec((0usize..12, 0usize..12), 0..30),
    ) {
        let (s, p) = adjacency(n, &edges);
        let d = FunctionDominance::from_graph(&s, &p);
        let reachable = reach(&s, 0, None);
        for b in 0..n {
            prop_assert_eq!(d.dom.is_reachable(b as u32), reachable[b]);
            if !reachable[b] {
                continue;
            }
            for a in 0..n {
                // a dominates b iff b is unreachable from the entry without a.
                let expected = reachable[a] && (a == b || !reach(&s, 0, Some(a))[b]);
                prop_assert_eq!(d.dom.dominates(a as u32, b as u32), expected, "{} dom {}", a, b);
            }
            // The immediate dominator is the strict dominator closest to b.
            if let Some(i) = d.dom.idom(b as u32) {
                prop_assert!(d.dom.dominates(i, b as u32) && i as usize != b);
                for a in 0..n {
                    if a != b && d.dom.dominates(a as u32, b as u32) {
                        prop_assert!(d.dom.dominates(a as u32, i));
                    }
                }
            } else {
                prop_assert_eq!(b, 0);
            }
        }
    }

    #[test]
    fn post_dominators_and_control_dependence_match_the_definition(
        n in 1usize..12,
        edges in prop::collection::vec((0usize..12, 0usize..12), 0..30),
    ) {
        let (s, p) = adjacency(n, &edges);
        let exits: Vec<usize> = (0..n).filter(|&b| s[b].is_empty()).collect();
        // Only graphs where every node reaches an exit (no fake edges involved).
        let reaches_exit = |b: usize, removed: Option<usize>| {
            let r = reach(&s, b, removed);
            exits.iter().any(|&e| r[e])
        };
        prop_assume!((0..n).all(|b| reaches_exit(b, None)));
        let d = FunctionDominance::from_graph(&s, &p);
        let pdom = |a: usize, b: usize| a == b || !reaches_exit(b, Some(a));
        for b in 0..n {
            for a in 0..n {
                prop_assert_eq!(d.post_dominates(a as u32, b as u32), pdom(a, b), "{} pdom {}", a, b);
            }
            match d.ipdom(b as u32) {
                Some(i) => {
                    let i = i as usize;
                    prop_assert!(i != b && pdom(i, b));
                    for a in 0..n {
                        if a != b && pdom(a, b) {
                            prop_assert!(pdom(a, i));
                        }
                    }
                }
                None => prop_assert!((0..n).all(|a| a == b || !pdom(a, b))),
            }
        }
        // Ferrante et al.: b is control dependent on a iff a has a successor that b
        // post-dominates and b does not strictly post-dominate a.
        for b in 0..n {
            for a in 0..n {
                let expected = s[a].iter().any(|&x| pdom(b, x as usize)) && !(a != b && pdom(b, a));
                prop_assert_eq!(
                    d.control_deps[b].contains(&(a as u32)),
                    expected,
                    "{} cd on {}", b, a
                );
            }
        }
    }
}
