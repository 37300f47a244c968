//! Implicit flows, nested decisions, constraints and large spaces.

mod common;

use std::convert::Infallible;

use common::{Tracer, binary_space};
use comprex::{Decision, DecisionRecord, ExploreSettings, Granularity, Pick, explore};
use space::{ConfigSpace, Configuration, GroupKind, ValidConfigurations};

fn settings(pick: Pick, start: Option<Configuration>) -> ExploreSettings {
    ExploreSettings {
        pick,
        start,
        ..Default::default()
    }
}

/// `flag = 0; if (A) flag = 1; work(flag)` with `work` branching on its argument: A reaches
/// work's decision only through the flag assigned under main's decision on A.
fn flag_program(space: &ConfigSpace, config: &Configuration) -> Vec<DecisionRecord> {
    let mut t = Tracer::new(space, config);
    let a = t.option("A");
    let mut flag = t.assign(0, &[]);
    if t.decide(1, "main", 3, &a) {
        t.enter(&a);
        flag = t.assign(1, &[]);
        t.exit();
    }
    t.decide(2, "work", 10, &flag);
    t.records
}

#[test]
fn an_option_reaching_a_decision_only_through_a_flag() {
    let space = binary_space(&["A", "B"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    for pick in [Pick::Fewest, Pick::Most, Pick::Random { seed: 3 }] {
        for start in valid.iter() {
            let ex = explore(&valid, settings(pick, Some(start.clone())), |c| {
                Ok::<_, Infallible>(flag_program(&space, c))
            })
            .unwrap();
            // Dynamic taint sees the implicit flow only when A is on (the assignment runs);
            // main's split on A makes sure such a run happens, whatever the start.
            let work = ex.region(Granularity::Method, "work").unwrap();
            assert_eq!(work.texts(), ["A", "¬A"], "start {start:?}");
            assert_eq!(work.options, ["A"]);
            assert_eq!(ex.configurations.len(), 2);
        }
    }
}

/// `if (A) { if (B) … }` in one method.
fn nested(space: &ConfigSpace, config: &Configuration) -> Vec<DecisionRecord> {
    let mut t = Tracer::new(space, config);
    let a = t.option("A");
    let b = t.option("B");
    if t.decide(1, "f", 1, &a) {
        t.enter(&a);
        t.decide(2, "f", 2, &b);
        t.exit();
    }
    t.records
}

#[test]
fn nested_decisions_need_three_subspaces_not_four() {
    let space = binary_space(&["A", "B"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    for start in valid.iter() {
        let ex = explore(&valid, settings(Pick::Fewest, Some(start.clone())), |c| {
            Ok::<_, Infallible>(nested(&space, c))
        })
        .unwrap();
        let f = ex.region(Granularity::Method, "f").unwrap();
        assert_eq!(f.texts(), ["A ∧ B", "A ∧ ¬B", "¬A"]);
        assert_eq!(ex.configurations.len(), 3);
    }
}

#[test]
fn the_same_option_in_both_taints_adds_no_empty_subspace() {
    // `if (A) { if (A && C) … }`: the inner decision has A in both taints.
    let space = binary_space(&["A", "C"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        let mut t = Tracer::new(&space, c);
        let a = t.option("A");
        let cc = t.option("C");
        if t.decide(1, "f", 1, &a) {
            t.enter(&a);
            let both = t.assign(a.v & cc.v, &[&a, &cc]);
            t.decide(2, "f", 2, &both);
            t.exit();
        }
        Ok::<_, Infallible>(t.records)
    })
    .unwrap();
    let f = ex.region(Granularity::Method, "f").unwrap();
    assert_eq!(f.texts(), ["A ∧ C", "A ∧ ¬C", "¬A"]);
}

#[test]
fn every_chosen_configuration_is_valid_under_the_constraints() {
    // A requires B; exactly one of X, Y, Z; C excludes A; a numeric level.
    let mut space = ConfigSpace::new("constrained");
    let a = space.add_binary("A", None, false).unwrap();
    space.add_binary("B", None, false).unwrap();
    space.add_binary("C", None, false).unwrap();
    let x = space.add_binary("X", None, false).unwrap();
    let y = space.add_binary("Y", None, false).unwrap();
    let z = space.add_binary("Z", None, false).unwrap();
    space.add_numeric("level", &[1.0, 6.0, 9.0]).unwrap();
    space
        .add_group(GroupKind::Alternative, None, vec![x, y, z])
        .unwrap();
    space.add_constraint("A => B", "test").unwrap();
    space.add_constraint("C => !A", "test").unwrap();
    let valid = ValidConfigurations::new(&space).unwrap();
    let _ = a;
    let program = |c: &Configuration| {
        let mut t = Tracer::new(&space, c);
        let (a, b, cc) = (t.option("A"), t.option("B"), t.option("C"));
        let (x, y, level) = (t.option("X"), t.option("Y"), t.option("level"));
        t.decide(1, "f", 1, &a);
        let ab = t.assign(a.v | b.v, &[&a, &b]);
        t.decide(2, "g", 1, &ab);
        if t.decide(3, "h", 1, &cc) {
            t.enter(&cc);
            t.decide(4, "h", 2, &a);
            t.exit();
        }
        let xy = t.assign(x.v + y.v, &[&x, &y]);
        t.decide(5, "k", 1, &xy);
        t.decide(6, "lvl", 1, &level);
        Ok::<_, Infallible>(t.records)
    };
    for pick in [Pick::Fewest, Pick::Most, Pick::Random { seed: 11 }] {
        let ex = explore(&valid, settings(pick, None), program).unwrap();
        for c in &ex.configurations {
            assert!(valid.is_valid(c), "{}", space.format_configuration(c));
        }
        // g over {A, B} under A ⇒ B: the combination A ∧ ¬B is invalid, so dropped.
        let g = ex.region(Granularity::Method, "g").unwrap();
        assert_eq!(g.texts(), ["A ∧ B", "¬A ∧ B", "¬A ∧ ¬B"]);
        // h: C excludes A, so inside C the inner decision on A has one value only.
        let h = ex.region(Granularity::Method, "h").unwrap();
        assert_eq!(h.subspaces.len(), 2, "{:?}", h.texts());
        // k over the alternative group: X, Y, or neither (Z).
        assert_eq!(
            ex.region(Granularity::Method, "k").unwrap().subspaces.len(),
            3
        );
        let lvl = ex.region(Granularity::Method, "lvl").unwrap();
        assert_eq!(lvl.texts(), ["level=1", "level=6", "level=9"]);
        assert!(ex.configurations.len() <= 4, "{}", ex.configurations.len());
    }
    // A start that breaks a constraint is refused.
    let bad = space.parse_configuration("A,X,level=1").unwrap();
    let err = explore(&valid, settings(Pick::Fewest, Some(bad)), program).unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration `A,X,level=1` is not valid under the space's constraints"
    );
    // So is recording a run of one: the explorer stays as it was.
    let mut explorer = comprex::Explorer::new(&valid, settings(Pick::Fewest, None));
    let first = explorer.next_configuration().unwrap().unwrap();
    let bad = space.parse_configuration("A,X,level=1").unwrap();
    let records = program(&bad).unwrap();
    let err = explorer.record(bad, records).unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration `A,X,level=1` is not valid under the space's constraints"
    );
    assert_eq!(explorer.next_configuration().unwrap(), Some(first));
}

#[test]
fn seventy_options_with_few_relevant_stay_small_and_fast() {
    let names: Vec<String> = (0..70).map(|i| format!("o{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut space = binary_space(&refs);
    space.add_constraint("o69 => o68", "test").unwrap();
    let valid = ValidConfigurations::new(&space).unwrap();
    // "Fast" in costs that do not depend on the machine: few runs of the program (below) and
    // small subspaces (BDDs of a few hundred nodes), not seconds.
    // 30 methods; method m branches on o(2m) and, nested, on o(2m+1); o60–o69 are read but
    // only o68/o69 reach a decision.
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        let mut t = Tracer::new(&space, c);
        for m in 0..30u32 {
            let method = format!("m{m}");
            let outer = t.option(&names[2 * m as usize]);
            let inner = t.option(&names[2 * m as usize + 1]);
            if t.decide(2 * m, &method, 1, &outer) {
                t.enter(&outer);
                t.decide(2 * m + 1, &method, 2, &inner);
                t.exit();
            }
        }
        let (p, q) = (t.option("o68"), t.option("o69"));
        let pq = t.assign(p.v + q.v, &[&p, &q]);
        t.decide(100, "tail", 1, &pq);
        Ok::<_, Infallible>(t.records)
    })
    .unwrap();
    let regions = ex.regions(Granularity::Method);
    assert_eq!(regions.len(), 31);
    for r in regions.iter().filter(|r| r.id != "tail") {
        assert_eq!(r.subspaces.len(), 3, "{}: {:?}", r.id, r.texts());
    }
    let tail = ex.region(Granularity::Method, "tail").unwrap();
    assert_eq!(tail.texts(), ["o68 ∧ o69", "o68 ∧ ¬o69", "¬o68 ∧ ¬o69"]);
    // Compression: all 30 independent methods are explored together.
    assert!(ex.configurations.len() <= 4, "{}", ex.configurations.len());
    for s in regions.iter().flat_map(|r| &r.subspaces) {
        assert!(s.subspace.bdd().size() < 400, "{}", s.subspace.bdd().size());
    }
}

#[test]
fn unknown_options_and_failing_runs_are_one_line_errors() {
    let space = binary_space(&["A"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let err = explore(&valid, ExploreSettings::default(), |_| {
        Ok::<_, Infallible>(vec![DecisionRecord::new(
            Decision {
                id: 4,
                method: "f".into(),
                file: "x.c".into(),
                line: 9,
                column: 0,
            },
            &["Q"],
            &[],
        )])
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown option `Q` in the data-flow taint of decision 4 (x.c:9)"
    );
    let err = explore(&valid, ExploreSettings::default(), |_| {
        Err::<Vec<DecisionRecord>, _>("the program crashed (signal 11)")
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "taint run 1 (configuration ``) failed: the program crashed (signal 11)"
    );
    let err = explore(
        &valid,
        ExploreSettings {
            max_runs: 1,
            ..Default::default()
        },
        |c| Ok::<_, Infallible>(nested_one(&space, c)),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "gave up after 1 runs with 1 subspaces still unexplored; region `f` alone has 2 \
         subspaces (the cross product of its decisions on 1 options: A)"
    );
}

/// ConfigCrusher's running example's `main` in small: each option read by an `if` of its own
/// (the example itself has nine, 512 subspaces).
fn independent_ifs(space: &ConfigSpace, c: &Configuration) -> Vec<DecisionRecord> {
    let mut t = Tracer::new(space, c);
    for (k, name) in ["A", "B", "C", "D", "E", "F"].iter().enumerate() {
        let v = t.option(name);
        t.decide(k as u32 + 1, "main", 20 + k as u32, &v);
    }
    t.records
}

#[test]
fn a_method_with_independent_decisions_needs_every_combination_and_the_limit_names_it() {
    let space = binary_space(&["A", "B", "C", "D", "E", "F", "J"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let run = |max_runs| {
        explore(
            &valid,
            ExploreSettings {
                max_runs,
                ..Default::default()
            },
            |c| Ok::<_, Infallible>(independent_ifs(&space, c)),
        )
    };
    assert_eq!(
        run(32).unwrap_err().to_string(),
        "gave up after 32 runs with 32 subspaces still unexplored; region `main` alone has 64 \
         subspaces (the cross product of its decisions on 6 options: A, B, C, D, E, F)"
    );
    assert_eq!(run(64).unwrap().configurations.len(), 64);
}

fn nested_one(space: &ConfigSpace, c: &Configuration) -> Vec<DecisionRecord> {
    let mut t = Tracer::new(space, c);
    let a = t.option("A");
    t.decide(1, "f", 1, &a);
    t.records
}
