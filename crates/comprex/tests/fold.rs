//! Folding an untimed method's decisions into the regions its time goes to
//! (`Explorer::fold_methods`, `Explorer::replay`).

mod common;

use std::collections::BTreeMap;

use common::{Tracer, binary_space};
use comprex::{DecisionRecord, ExploreSettings, Explorer, Granularity};
use space::{ConfigSpace, Configuration, ValidConfigurations};

/// `caller` loops `A ? 2 : 1` times over `leaf`, whose decision is on B.
fn program(space: &ConfigSpace, config: &Configuration) -> Vec<DecisionRecord> {
    let mut t = Tracer::new(space, config);
    let a = t.option("A");
    let b = t.option("B");
    let n = if t.decide(1, "caller", 2, &a) { 2 } else { 1 };
    let n = t.assign(n, &[&a]);
    for _ in 0..n.v {
        t.enter(&n);
        t.decide(2, "leaf", 10, &b);
        t.exit();
    }
    t.records
}

fn run_all(explorer: &mut Explorer, space: &ConfigSpace) -> usize {
    let mut runs = 0;
    while let Some(c) = explorer.next_configuration().unwrap() {
        let records = program(space, &c);
        explorer.record(c, records).unwrap();
        runs += 1;
    }
    runs
}

#[test]
fn a_folded_methods_decisions_refine_its_callers_partition() {
    let space = binary_space(&["A", "B", "C"]);
    let valid = ValidConfigurations::new(&space).unwrap();

    let mut plain = Explorer::new(&valid, ExploreSettings::default());
    run_all(&mut plain, &space);
    let plain = plain.finish();
    let caller = plain.region(Granularity::Method, "caller").unwrap();
    assert_eq!(caller.texts(), ["A", "¬A"]);
    let leaf = plain.region(Granularity::Method, "leaf").unwrap();
    assert_eq!(leaf.texts().len(), 4, "{:?}", leaf.texts());

    // `leaf` untimed, its time charged to `caller`: caller distinguishes B as well, and leaf
    // is no region of its own.
    let fold = BTreeMap::from([("leaf".to_string(), vec!["caller".to_string()])]);
    let mut folded = Explorer::new(&valid, ExploreSettings::default());
    folded.fold_methods(fold.clone());
    run_all(&mut folded, &space);
    let folded = folded.finish();
    assert!(folded.region(Granularity::Method, "leaf").is_none());
    let caller = folded.region(Granularity::Method, "caller").unwrap();
    assert_eq!(caller.texts(), ["A ∧ B", "A ∧ ¬B", "¬A ∧ B", "¬A ∧ ¬B"]);
    assert_eq!(caller.options, ["A", "B"]);
    assert!(caller.decisions.iter().any(|d| d.method == "leaf"));
    for s in &caller.subspaces {
        assert!(!s.explored_by.is_empty(), "{} unexplored", s.text);
    }

    // Replaying the unfolded exploration under the mapping needs no new run here (every
    // subspace of the finer partition was already run) and gives the same partition.
    let mut replayed = Explorer::new(&valid, ExploreSettings::default());
    replayed.fold_methods(fold);
    replayed.replay(&plain).unwrap();
    assert_eq!(run_all(&mut replayed, &space), 0);
    let replayed = replayed.finish();
    assert_eq!(
        replayed
            .region(Granularity::Method, "caller")
            .unwrap()
            .texts(),
        ["A ∧ B", "A ∧ ¬B", "¬A ∧ B", "¬A ∧ ¬B"]
    );
    assert_eq!(replayed.configurations, plain.configurations);
}

#[test]
fn replay_runs_more_when_the_finer_partition_has_unexplored_parts() {
    // Only A and ¬A run (B and C off): folding leaf into caller leaves the B subspaces
    // unexplored, so the explorer asks for more runs.
    let space = binary_space(&["A", "B", "C"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let mut partial = Explorer::new(&valid, ExploreSettings::default());
    for bits in [[0u8, 0, 0], [1, 0, 0]] {
        let c = Configuration(bits.iter().map(|&b| u32::from(b)).collect());
        let records = program(&space, &c);
        partial.record(c, records).unwrap();
    }
    let partial = partial.finish();
    let mut folded = Explorer::new(&valid, ExploreSettings::default());
    folded.fold_methods(BTreeMap::from([(
        "leaf".to_string(),
        vec!["caller".to_string()],
    )]));
    folded.replay(&partial).unwrap();
    let more = run_all(&mut folded, &space);
    assert!(more >= 1, "{more}");
    let done = folded.finish();
    let caller = done.region(Granularity::Method, "caller").unwrap();
    assert_eq!(caller.subspaces.len(), 4);
    assert!(caller.subspaces.iter().all(|s| !s.explored_by.is_empty()));
}
