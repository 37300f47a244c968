//! Spaces with many values and members compile in linear time: an option with 20,000 values
//! and an alternative group of 2,000 members (each "exactly one" is one linear BDD, where
//! pairwise exclusions cost cubic time: 1,001 values took 22 s), and a space past the BDD
//! library's variable limit is a clear error, not a panic.

use space::{ConfigSpace, GroupKind, ValidConfigurations};

#[test]
fn a_numeric_option_with_20000_values_counts_at_once() {
    let mut s = ConfigSpace::new("big");
    let values: Vec<f64> = (0..20_000).map(f64::from).collect();
    s.add_numeric("x", &values).unwrap();
    s.add_binary("b", None, false).unwrap();
    s.add_constraint("x=7 => b", "test").unwrap();
    let started = std::time::Instant::now();
    let valid = ValidConfigurations::new(&s).unwrap();
    assert_eq!(valid.count().to_string(), "39999");
    // Linear work is far below a minute even in a debug build on a busy machine; the
    // pairwise construction took hours at this size.
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
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
    let values: Vec<f64> = (0..70_000).map(f64::from).collect();
    s.add_numeric("x", &values).unwrap();
    let err = ValidConfigurations::new(&s)
        .err()
        .expect("too many variables");
    assert!(err.to_string().contains("at most 65533"), "{err}");
}
