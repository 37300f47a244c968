//! Compression covers every allowed combination of each interaction, returns only valid
//! configurations, and reports the lower bound under constraints.

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
    assert!(out.configurations.len() >= 6 && out.configurations.len() <= 8);
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
