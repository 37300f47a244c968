//! Property tests on random constrained spaces: the BDD agrees with brute force over every
//! assignment, and every sampler returns only valid configurations with its promised coverage.

use std::collections::{BTreeMap, HashSet};

use proptest::prelude::*;
use rand::SeedableRng;
use space::{
    ConfigSpace, Configuration, GroupKind, OptionId, Strategy as Sampling, ValidConfigurations,
    sample,
};

/// A random space: up to 7 binary options with random parents, an optional group, one
/// optional numeric option, and random 2- or 3-literal clauses.
fn arb_space() -> impl Strategy<Value = ConfigSpace> {
    (
        2usize..7,
        prop::collection::vec((any::<bool>(), any::<bool>(), 0usize..8), 7),
        prop::option::of((any::<bool>(), 2usize..4)),
        prop::option::of(1usize..4),
        prop::collection::vec(
            prop::collection::vec((0usize..7, any::<bool>()), 2..4),
            0..4,
        ),
    )
        .prop_map(|(n, shape, group, numeric, clauses)| {
            let mut s = ConfigSpace::new("random");
            for (i, &(has_parent, mandatory, p)) in shape.iter().enumerate().take(n) {
                let parent = (has_parent && i > 0).then(|| OptionId((p % i) as u32));
                s.add_binary(&format!("o{i}"), parent, mandatory).unwrap();
            }
            if let Some((alternative, size)) = group {
                let members: Vec<OptionId> = (0..size.min(n))
                    .map(|i| OptionId((n - 1 - i) as u32))
                    .collect();
                let kind = if alternative {
                    GroupKind::Alternative
                } else {
                    GroupKind::Or
                };
                s.add_group(kind, None, members).unwrap();
            }
            if let Some(k) = numeric {
                let values: Vec<f64> = (0..k).map(|v| v as f64 * 2.0).collect();
                s.add_numeric("num", &values).unwrap();
            }
            for clause in clauses {
                let text = clause
                    .iter()
                    .map(|(o, neg)| format!("{}o{}", if *neg { "!" } else { "" }, o % n))
                    .collect::<Vec<_>>()
                    .join(" | ");
                s.add_constraint(&text, "generated").unwrap();
            }
            s
        })
}

/// Every assignment of the space, valid or not.
fn all_assignments(space: &ConfigSpace) -> Vec<Configuration> {
    let mut out = vec![Configuration(vec![])];
    for o in space.options() {
        out = out
            .into_iter()
            .flat_map(|c| {
                (0..o.arity() as u32).map(move |v| {
                    let mut c = c.clone();
                    c.0.push(v);
                    c
                })
            })
            .collect();
    }
    out
}

fn brute_force(space: &ConfigSpace) -> Vec<Configuration> {
    all_assignments(space)
        .into_iter()
        .filter(|c| space.violations(c).is_empty())
        .collect()
}

fn tuples(c: &Configuration, t: usize) -> Vec<Vec<(usize, u32)>> {
    let n = c.0.len();
    let mut out = Vec::new();
    let mut idx: Vec<usize> = (0..t).collect();
    if t > n {
        return out;
    }
    loop {
        out.push(idx.iter().map(|&i| (i, c.0[i])).collect());
        let mut k = t;
        while k > 0 && idx[k - 1] == n - t + k - 1 {
            k -= 1;
        }
        if k == 0 {
            return out;
        }
        idx[k - 1] += 1;
        for j in k..t {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bdd_agrees_with_brute_force(space in arb_space()) {
        let truth = brute_force(&space);
        match ValidConfigurations::new(&space) {
            Err(_) => prop_assert!(truth.is_empty()),
            Ok(valid) => {
                prop_assert_eq!(valid.count(), (truth.len() as u64).into());
                let mut listed: Vec<Configuration> = valid.iter().collect();
                listed.sort();
                let mut expected = truth.clone();
                expected.sort();
                prop_assert_eq!(listed, expected);
                for c in all_assignments(&space) {
                    prop_assert_eq!(valid.is_valid(&c), space.violations(&c).is_empty());
                }
                // Counts by number of selected options agree too.
                let mut hist: BTreeMap<usize, u64> = BTreeMap::new();
                for c in &truth { *hist.entry(space.selected_count(c)).or_default() += 1; }
                for (k, n) in valid.count_by_selected().iter().enumerate() {
                    prop_assert_eq!(n.clone(), hist.get(&k).copied().unwrap_or(0).into());
                }
            }
        }
    }

    #[test]
    fn samplers_return_valid_configurations_with_full_coverage(space in arb_space(), seed in 0u64..1000) {
        let Ok(valid) = ValidConfigurations::new(&space) else { return Ok(()) };
        let truth = brute_force(&space);
        for t in 1..=3usize.min(space.len()) {
            let s = sample(&valid, &Sampling::TWise(t), seed).unwrap();
            let mut want: HashSet<Vec<(usize, u32)>> = HashSet::new();
            for c in &truth { want.extend(tuples(c, t)); }
            let mut got = HashSet::new();
            for c in &s.configurations {
                prop_assert!(valid.is_valid(c));
                got.extend(tuples(c, t));
            }
            prop_assert_eq!(&got, &want, "t = {}", t);
            prop_assert_eq!(s.coverage.unwrap().valid_tuples as usize, want.len());
        }
        for strategy in [Sampling::All, Sampling::FeatureWise, Sampling::NegativeFeatureWise, Sampling::Random(5), Sampling::Distance(5)] {
            let s = sample(&valid, &strategy, seed).unwrap();
            let distinct: HashSet<_> = s.configurations.iter().collect();
            prop_assert_eq!(distinct.len(), s.configurations.len(), "{} has duplicates", strategy);
            for c in &s.configurations { prop_assert!(valid.is_valid(c), "{} gave an invalid configuration", strategy); }
            match strategy {
                Sampling::All => prop_assert_eq!(s.configurations.len(), truth.len()),
                Sampling::Random(n) | Sampling::Distance(n) => prop_assert_eq!(s.configurations.len(), n.min(truth.len())),
                _ => {}
            }
        }
        // Feature-wise: each binary option that can be selected is, with the fewest others.
        let fw = sample(&valid, &Sampling::FeatureWise, seed).unwrap();
        for id in space.ids().filter(|id| space.option(*id).is_binary()) {
            let fewest = truth.iter().filter(|c| c.0[id.index()] == 1).map(|c| space.selected_count(c)).min();
            if let Some(fewest) = fewest {
                prop_assert!(fw.configurations.iter().any(|c| c.0[id.index()] == 1 && space.selected_count(c) == fewest));
            }
        }
        // Same seed, same sample.
        let again = sample(&valid, &Sampling::TWise(2.min(space.len())), seed).unwrap();
        prop_assert_eq!(again.configurations, sample(&valid, &Sampling::TWise(2.min(space.len())), seed).unwrap().configurations);
    }
}

#[test]
fn uniform_sampling_is_uniform() {
    // a => b and !(b & c) leave 4 of the 8 (a, b, c); d in {1, 2}: 8 valid configurations.
    let mut s = ConfigSpace::new("u");
    for n in ["a", "b", "c"] {
        s.add_binary(n, None, false).unwrap();
    }
    s.add_numeric("d", &[1.0, 2.0]).unwrap();
    s.add_constraint("a => b", "t").unwrap();
    s.add_constraint("!(b & c)", "t").unwrap();
    let valid = ValidConfigurations::new(&s).unwrap();
    assert_eq!(valid.count(), 8u32.into());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut freq: BTreeMap<Configuration, u32> = BTreeMap::new();
    let draws = 50_000;
    for _ in 0..draws {
        *freq.entry(valid.sample_uniform(&mut rng)).or_default() += 1;
    }
    assert_eq!(freq.len(), 8);
    // Chi-square with 7 degrees of freedom; 24.3 is the 0.999 quantile.
    let expected = draws as f64 / 8.0;
    let chi2: f64 = freq
        .values()
        .map(|&o| (o as f64 - expected).powi(2) / expected)
        .sum();
    assert!(chi2 < 24.3, "chi2 = {chi2}: {freq:?}");
}

#[test]
fn unsatisfiable_space_is_an_error() {
    let mut s = ConfigSpace::new("u");
    s.add_binary("a", None, true).unwrap();
    s.add_constraint("!a", "test").unwrap();
    let err = ValidConfigurations::new(&s).err().expect("unsatisfiable");
    assert!(
        err.to_string()
            .starts_with("unsatisfiable: no configuration satisfies constraint `!a`"),
        "{err}"
    );
}
