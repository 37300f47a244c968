//! Compression covers every allowed combination of each interaction, returns only valid
//! configurations, reaches the known optimum on instances with one, and reports its lower
//! bound under constraints.

use analysis::OptionSet;
use configcrusher::compress;
use space::{ConfigSpace, OptionId, ValidConfigurations};

fn covers(configs: &[space::Configuration], literals: &[(OptionId, u32)]) -> bool {
    configs
        .iter()
        .any(|c| literals.iter().all(|(o, v)| c.0[o.index()] == *v))
}

#[test]
fn constraints_are_respected_and_forbidden_combinations_not_required() {
    let mut s = ConfigSpace::new("c");
    let a = s.add_binary("A", None, false).unwrap();
    let b = s.add_binary("B", None, false).unwrap();
    let c = s.add_binary("C", None, false).unwrap();
    let level = s.add_numeric("LEVEL", &[1.0, 5.0, 9.0]).unwrap();
    s.add_constraint("A => !B", "test").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    let interactions = vec![
        OptionSet::from_ids([a, b]),
        OptionSet::from_ids([b, c]),
        OptionSet::from_ids([a, level]),
        OptionSet::from_ids([c]),
    ];
    let out = compress(&valid, &interactions, 1000).unwrap();
    assert_eq!(out.maximal.len(), 3);
    // {A, B}: A∧B is forbidden, 3 combinations; {A, LEVEL}: 6; {B, C}: 4.
    assert_eq!(out.lower_bound, 6);
    assert_eq!(out.configurations.len(), 6, "{:?}", out.configurations);
    assert!(out.optimal);
    for cfg in &out.configurations {
        assert!(valid.is_valid(cfg), "{cfg:?}");
    }
    for (x, y) in [(0, 0), (0, 1), (1, 0)] {
        assert!(covers(&out.configurations, &[(a, x), (b, y)]));
    }
    for (x, y) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        assert!(covers(&out.configurations, &[(b, x), (c, y)]));
    }
    for x in 0..2 {
        for v in 0..3 {
            assert!(covers(&out.configurations, &[(a, x), (level, v)]));
        }
    }
}

#[test]
fn no_interactions_means_one_default_configuration_and_limits_are_enforced() {
    let mut s = ConfigSpace::new("c");
    let ids: Vec<OptionId> = (0..20)
        .map(|i| s.add_binary(&format!("O{i}"), None, false).unwrap())
        .collect();
    let valid = ValidConfigurations::new(&s).unwrap();
    let out = compress(&valid, &[], 10).unwrap();
    assert_eq!(out.configurations.len(), 1);
    assert_eq!(out.lower_bound, 1);
    let err = compress(&valid, &[OptionSet::from_ids(ids)], 1 << 10)
        .unwrap_err()
        .to_string();
    assert!(err.contains("1048576"), "{err}");
}

/// Checks that `out` covers every allowed combination of each interaction and returns only
/// valid, distinct configurations.
fn assert_covers(
    valid: &ValidConfigurations,
    interactions: &[OptionSet],
    out: &compress::Compression,
) {
    let space = valid.space();
    for c in &out.configurations {
        assert!(valid.is_valid(c), "{c:?}");
    }
    let mut seen = out.configurations.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), out.configurations.len(), "duplicates");
    for i in interactions {
        let options: Vec<OptionId> = i.iter().collect();
        let arities: Vec<u32> = options
            .iter()
            .map(|o| space.option(*o).arity() as u32)
            .collect();
        let total: u32 = arities.iter().product();
        for code in 0..total {
            let mut rest = code;
            let literals: Vec<(OptionId, u32)> = options
                .iter()
                .zip(&arities)
                .map(|(o, a)| {
                    let v = rest % a;
                    rest /= a;
                    (*o, v)
                })
                .collect();
            if valid.allows(&literals) {
                assert!(
                    covers(&out.configurations, &literals),
                    "{literals:?} uncovered"
                );
            }
        }
    }
}

fn binary(n: usize) -> (ConfigSpace, Vec<OptionId>) {
    let mut s = ConfigSpace::new("binary");
    let ids = (0..n)
        .map(|i| s.add_binary(&format!("O{i}"), None, false).unwrap())
        .collect();
    (s, ids)
}

fn all_pairs(ids: &[OptionId]) -> Vec<OptionSet> {
    let mut out = Vec::new();
    for a in 0..ids.len() {
        for b in a + 1..ids.len() {
            out.push(OptionSet::from_ids([ids[a], ids[b]]));
        }
    }
    out
}

#[test]
fn three_overlapping_pairs_need_four_configurations_not_six() {
    let (s, ids) = binary(3);
    let valid = ValidConfigurations::new(&s).unwrap();
    let interactions = all_pairs(&ids);
    let out = compress(&valid, &interactions, 1000).unwrap();
    assert_covers(&valid, &interactions, &out);
    assert_eq!(out.configurations.len(), 4);
    assert_eq!(out.lower_bound, 4);
    assert!(out.optimal);
}

#[test]
fn all_pairs_of_binary_options_reach_the_covering_array_number() {
    // CAN(2, k, 2): the least N with C(N-1, ceil(N/2)) >= k.
    for (n, optimum) in [(4, 5), (5, 6), (6, 6), (10, 6), (11, 7)] {
        let (s, ids) = binary(n);
        let valid = ValidConfigurations::new(&s).unwrap();
        let interactions = all_pairs(&ids);
        let out = compress(&valid, &interactions, 1000).unwrap();
        assert_covers(&valid, &interactions, &out);
        assert_eq!(
            out.configurations.len(),
            optimum,
            "all pairs of {n} binary options"
        );
        assert_eq!(out.lower_bound, optimum as u128, "{n} options");
        assert!(out.optimal);
    }
}

#[test]
fn mixed_arities_and_constraints_reach_their_optimum() {
    // LEVEL (3 values) with A and with B, A with B forbidden together: {A, LEVEL} and
    // {B, LEVEL} each need 6 combinations, and 6 rows carry both (A and B never both 1).
    let mut s = ConfigSpace::new("mixed");
    let a = s.add_binary("A", None, false).unwrap();
    let b = s.add_binary("B", None, false).unwrap();
    let level = s.add_numeric("LEVEL", &[1.0, 5.0, 9.0]).unwrap();
    s.add_constraint("!(A && B)", "test").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    let interactions = vec![
        OptionSet::from_ids([a, level]),
        OptionSet::from_ids([b, level]),
    ];
    let out = compress(&valid, &interactions, 1000).unwrap();
    assert_covers(&valid, &interactions, &out);
    assert_eq!(out.configurations.len(), 6);
    assert_eq!(out.lower_bound, 6);
    assert!(out.optimal);

    // An alternative group {X, Y, Z} with C: every member with both values of C, 6 rows,
    // and the first-fit merge's answer would be no smaller.
    let mut s = ConfigSpace::new("group");
    let members: Vec<OptionId> = ["X", "Y", "Z"]
        .iter()
        .map(|n| s.add_binary(n, None, false).unwrap())
        .collect();
    s.add_group(space::GroupKind::Alternative, None, members.clone())
        .unwrap();
    let c = s.add_binary("C", None, false).unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    let mut with_c = members.clone();
    with_c.push(c);
    let interactions = vec![OptionSet::from_ids(with_c)];
    let out = compress(&valid, &interactions, 1000).unwrap();
    assert_covers(&valid, &interactions, &out);
    assert_eq!(out.configurations.len(), 6);
    assert!(out.optimal);
}

#[test]
fn the_exhaustive_search_proves_an_optimum_above_every_bound() {
    // All pairs of A, B, C with A => B: each pair needs at most 4 rows, yet the two rows
    // with B = 0 must both have A = 0 and cover B·C's 00 and 01 while A·C needs its 10 and
    // 11 with B = 1: 5 rows, which only the search can show.
    let (mut s, ids) = binary(3);
    s.add_constraint("O0 => O1", "test").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    let interactions = all_pairs(&ids);
    let out = compress(&valid, &interactions, 1000).unwrap();
    assert_covers(&valid, &interactions, &out);
    assert_eq!(out.configurations.len(), 5);
    assert_eq!(out.lower_bound, 5, "proven by the search");
    assert!(out.optimal);
}

#[test]
fn a_large_instance_compresses_in_seconds_with_its_bound_stated() {
    // All pairs of 30 binary options: CAN(2, 30, 2) = 8 (C(7, 4) = 35 >= 30).
    let (s, ids) = binary(30);
    let valid = ValidConfigurations::new(&s).unwrap();
    let interactions = all_pairs(&ids);
    let started = std::time::Instant::now();
    let out = compress(&valid, &interactions, 1000).unwrap();
    assert_covers(&valid, &interactions, &out);
    assert_eq!(out.lower_bound, 8);
    assert_eq!(out.configurations.len(), 8, "the covering array number");
    assert!(out.optimal);
    eprintln!(
        "30 options pairwise: {} configurations (lower bound 8) in {:?}",
        out.configurations.len(),
        started.elapsed()
    );
    assert!(
        started.elapsed().as_secs() < 60,
        "compression took {:?}",
        started.elapsed()
    );
}
