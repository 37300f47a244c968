//! Spaces with many values and members compile in linear time or better: an alternative group
//! of 2,000 members is one linear "exactly one" BDD (pairwise exclusions cost cubic time), a
//! numeric option with more than [`ONE_HOT_MAX_VALUES`] values writes its value index in
//! binary (10^6 values take 20 BDD variables), and a space past the BDD library's variable
//! limit is a clear error, not a panic.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use rand::SeedableRng;
use space::{
    ConfigSpace, Configuration, GroupKind, ONE_HOT_MAX_VALUES, OptionId, OptionVars, Strategy,
    ValidConfigurations, sample,
};

fn numeric_space(name: &str, options: &[(&str, usize)]) -> ConfigSpace {
    let mut s = ConfigSpace::new(name);
    for (option, n) in options {
        let values: Vec<f64> = (0..*n).map(|v| v as f64).collect();
        s.add_numeric(option, &values).unwrap();
    }
    s
}

#[test]
fn a_numeric_option_with_20000_values_counts_at_once() {
    let mut s = numeric_space("big", &[("x", 20_000)]);
    s.add_binary("b", None, false).unwrap();
    s.add_constraint("x=7 => b", "test").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    assert_eq!(valid.count().to_string(), "39999");
}

#[test]
fn a_numeric_option_with_100000_values_counts_checks_and_samples() {
    let started = Instant::now();
    let s = numeric_space("huge", &[("x", 100_000)]);
    let valid = ValidConfigurations::new(&s).unwrap();
    let compiled = started.elapsed();
    assert_eq!(valid.count().to_string(), "100000");
    assert!(matches!(
        valid.option_vars(OptionId(0)),
        OptionVars::Log(bits) if bits.len() == 17
    ));
    for v in [0, 1, 54_321, 65_536, 99_999] {
        assert!(valid.is_valid(&Configuration(vec![v])), "{v}");
    }
    // An index past the last value has a valuation of the 17 bits, but no configuration.
    assert!(!valid.is_valid(&Configuration(vec![100_000])));
    assert!(!valid.is_valid(&Configuration(vec![131_071])));
    assert!(!valid.is_valid(&Configuration(vec![131_072 + 5])));

    let first = sample(&valid, &Strategy::Random(200), 7).unwrap();
    let again = sample(&valid, &Strategy::Random(200), 7).unwrap();
    assert_eq!(first.configurations, again.configurations);
    assert_eq!(first.configurations.len(), 200);
    let distinct: BTreeSet<_> = first.configurations.iter().collect();
    assert_eq!(distinct.len(), 200);
    assert!(first.configurations.iter().all(|c| valid.is_valid(c)));
    // Uniform over the values, not over the 2^17 bit patterns: 4,000 draws fall in each
    // quarter of the values about equally (fixed seed, so this cannot flake).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut quarters = [0usize; 4];
    for _ in 0..4_000 {
        let c = valid.sample_uniform(&mut rng);
        assert!(c.0[0] < 100_000);
        quarters[c.0[0] as usize / 25_000] += 1;
    }
    assert!(
        quarters.iter().all(|q| (850..1150).contains(q)),
        "{quarters:?}"
    );
    println!(
        "100,000 values: compiled in {compiled:?}, counted, checked and sampled in {:?}",
        started.elapsed()
    );
}

#[test]
fn two_options_of_100000_values_with_constraints_between_them_count_exactly() {
    let started = Instant::now();
    let mut s = numeric_space("pair", &[("a", 100_000), ("b", 100_000)]);
    s.add_constraint("a=5 => b=7", "test").unwrap();
    s.add_constraint("!(a=0 & b=0)", "test").unwrap();
    s.add_constraint("b=99999 => a=1 | a=99998", "test")
        .unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    // 10^10, minus a=5 with b≠7 (99,999), minus a=0,b=0, minus b=99999 with a not in
    // {1, 99998} (99,998, one of them a=5 already gone).
    let expected = 10u64.pow(10) - 99_999 - 1 - (99_998 - 1);
    assert_eq!(valid.count().to_string(), expected.to_string());
    let config = |a: u32, b: u32| Configuration(vec![a, b]);
    assert!(valid.is_valid(&config(5, 7)));
    assert!(!valid.is_valid(&config(5, 8)));
    assert!(!valid.is_valid(&config(0, 0)));
    assert!(valid.is_valid(&config(0, 1)));
    assert!(valid.is_valid(&config(99_998, 99_999)));
    assert!(!valid.is_valid(&config(2, 99_999)));
    assert!(valid.allows(&[(OptionId(0), 5)]));
    assert!(!valid.allows(&[(OptionId(0), 5), (OptionId(1), 6)]));
    let picked = sample(&valid, &Strategy::Random(50), 3).unwrap();
    assert_eq!(
        picked.configurations,
        sample(&valid, &Strategy::Random(50), 3)
            .unwrap()
            .configurations
    );
    assert!(picked.configurations.iter().all(|c| valid.is_valid(c)));
    println!("two options of 100,000 values: {:?}", started.elapsed());
}

#[test]
fn a_numeric_option_with_a_million_values_counts() {
    let started = Instant::now();
    let mut s = numeric_space("million", &[("x", 1_000_000)]);
    s.add_binary("b", None, false).unwrap();
    s.add_constraint("x=999999 => b", "test").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    assert_eq!(valid.count().to_string(), "1999999");
    assert!(!valid.is_valid(&Configuration(vec![999_999, 0])));
    assert!(valid.is_valid(&Configuration(vec![999_999, 1])));
    println!("1,000,000 values: {:?}", started.elapsed());
}

/// Brute force over every assignment of a space with one log-encoded option: the BDD's
/// count, enumeration, distance distribution, extremes and samplers agree with the rules.
#[test]
fn a_log_encoded_option_agrees_with_brute_force() {
    let n = ONE_HOT_MAX_VALUES + 476; // 1,500 values: 11 index bits, 548 patterns unused
    let mut s = ConfigSpace::new("mixed");
    let a = s.add_binary("a", None, false).unwrap();
    s.add_binary("b", Some(a), false).unwrap();
    s.add_binary("c", None, false).unwrap();
    let values: Vec<f64> = (0..n).map(|v| v as f64 * 0.5).collect();
    s.add_numeric("x", &values).unwrap();
    s.add_numeric("y", &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    s.add_constraint("x=1.5 => a", "test").unwrap();
    s.add_constraint("x=749.5 => !c", "test").unwrap();
    s.add_constraint("b | x=0 | x=350 | c", "test").unwrap();
    s.add_constraint("y=2 => x=2.5", "test").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    assert!(matches!(valid.option_vars(OptionId(3)), OptionVars::Log(bits) if bits.len() == 11));
    assert!(matches!(valid.option_vars(OptionId(4)), OptionVars::OneHot(vs) if vs.len() == 5));

    let mut brute = BTreeSet::new();
    for bits in 0..8u32 {
        for x in 0..n as u32 {
            for y in 0..5 {
                let c = Configuration(vec![bits & 1, bits >> 1 & 1, bits >> 2 & 1, x, y]);
                if s.violations(&c).is_empty() {
                    brute.insert(c);
                }
            }
        }
    }
    assert_eq!(valid.count().to_string(), brute.len().to_string());
    let listed: BTreeSet<Configuration> = valid.iter().collect();
    assert_eq!(listed, brute);

    let selected = |c: &Configuration| c.0[..3].iter().sum::<u32>() as usize;
    let mut by_selected = BTreeMap::new();
    for c in &brute {
        *by_selected.entry(selected(c)).or_insert(0usize) += 1;
    }
    let counted: Vec<String> = valid
        .count_by_selected()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let expected: Vec<String> = (0..counted.len())
        .map(|k| by_selected.get(&k).copied().unwrap_or(0).to_string())
        .collect();
    assert_eq!(counted, expected);
    let fewest = valid.extreme_in(valid.bdd(), false).unwrap();
    let most = valid.extreme_in(valid.bdd(), true).unwrap();
    assert!(brute.contains(&fewest) && brute.contains(&most));
    assert_eq!(selected(&fewest), *by_selected.keys().next().unwrap());
    assert_eq!(selected(&most), *by_selected.keys().last().unwrap());
    let only_x3 = valid.restricted(&valid.literal((OptionId(3), 3)));
    let c = valid.extreme_in(&only_x3, false).unwrap();
    assert_eq!(c.0[3], 3);
    assert!(brute.contains(&c));

    for strategy in [
        Strategy::Random(300),
        Strategy::Distance(300),
        Strategy::FeatureWise,
        Strategy::NegativeFeatureWise,
        Strategy::TWise(1),
    ] {
        let picked = sample(&valid, &strategy, 11).unwrap();
        let again = sample(&valid, &strategy, 11).unwrap();
        assert_eq!(picked.configurations, again.configurations, "{strategy:?}");
        let distinct: BTreeSet<_> = picked.configurations.iter().collect();
        assert_eq!(distinct.len(), picked.configurations.len(), "{strategy:?}");
        assert!(
            picked.configurations.iter().all(|c| brute.contains(c)),
            "{strategy:?}"
        );
        if let Strategy::TWise(1) = strategy {
            let xs: BTreeSet<u32> = picked.configurations.iter().map(|c| c.0[3]).collect();
            assert_eq!(xs.len(), n, "every value of x appears");
        }
    }
}

#[test]
fn many_mid_sized_options_past_the_one_hot_limit_are_log_encoded() {
    // 70 options of 1,000 values: one-hot would take 70,000 variables, past the limit.
    let options: Vec<(String, usize)> = (0..70).map(|i| (format!("x{i}"), 1000)).collect();
    let named: Vec<(&str, usize)> = options.iter().map(|(o, n)| (o.as_str(), *n)).collect();
    let mut s = numeric_space("wide", &named);
    s.add_constraint("x0=0 => x69=999", "test").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    let all = num_bigint::BigUint::from(1000u32).pow(70);
    let broken = num_bigint::BigUint::from(1000u32).pow(68) * 999u32;
    assert_eq!(valid.count(), all - broken);
}

#[test]
fn an_alternative_group_of_2000_members_counts_at_once() {
    let mut s = ConfigSpace::new("alt");
    let root = s.add_binary("root", None, true).unwrap();
    let members: Vec<_> = (0..2000)
        .map(|i| s.add_binary(&format!("m{i}"), Some(root), false).unwrap())
        .collect();
    s.add_group(GroupKind::Alternative, Some(root), members)
        .unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    assert_eq!(valid.count().to_string(), "2000");
    let mut two = valid.iter().next().unwrap();
    two.0[2] = 1;
    two.0[3] = 1;
    assert!(!valid.is_valid(&two));
    let broken = s.violations(&two);
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(
        broken[0].why.contains("exactly one of"),
        "{}",
        broken[0].why
    );
}

#[test]
fn past_the_variable_limit_is_an_error() {
    let mut s = ConfigSpace::new("huge");
    for i in 0..65_534 {
        s.add_binary(&format!("o{i}"), None, false).unwrap();
    }
    let err = ValidConfigurations::new(&s)
        .err()
        .expect("too many variables");
    assert!(err.to_string().contains("at most 65533"), "{err}");
}
