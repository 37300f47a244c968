//! The paper's running example (Fig. 2, §III.A–C, Table IV's shape).

mod common;

use std::convert::Infallible;

use common::{binary_space, fig2, fig2_times};
use comprex::{
    ExploreSettings, Granularity, ModelSettings, Pick, TaintRun, build_model, cover, explore,
};
use space::{Configuration, ValidConfigurations};

fn run_fig2(valid: &ValidConfigurations, settings: ExploreSettings) -> comprex::Exploration {
    let space = valid.space();
    explore(valid, settings, |c| Ok::<_, Infallible>(fig2(space, c))).unwrap()
}

#[test]
fn partitions_per_method_and_four_configurations() {
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = run_fig2(&valid, ExploreSettings::default());
    let regions = ex.regions(Granularity::Method);
    let ids: Vec<&str> = regions.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["bar", "foo", "main"]);
    // The paper: ⟦A⟧,⟦¬A⟧ | ⟦A∧B⟧,⟦A∧¬B⟧,⟦¬A⟧ | ⟦¬A∧C⟧,⟦¬A∧¬C⟧,⟦A∧C⟧,⟦A∧¬C⟧.
    let main = ex.region(Granularity::Method, "main").unwrap();
    assert_eq!(main.texts(), ["A", "¬A"]);
    assert_eq!(main.options, ["A"]);
    let foo = ex.region(Granularity::Method, "foo").unwrap();
    assert_eq!(foo.texts(), ["A ∧ B", "A ∧ ¬B", "¬A"]);
    assert_eq!(foo.options, ["A", "B"]);
    let bar = ex.region(Granularity::Method, "bar").unwrap();
    assert_eq!(bar.texts(), ["A ∧ C", "A ∧ ¬C", "¬A ∧ C", "¬A ∧ ¬C"]);
    // "After executing only 4 out of 16 configurations … the iterative analysis terminates."
    assert_eq!(ex.configurations.len(), 4);
    // D is never explored for its own sake: every run leaves it off.
    assert!(ex.configurations.iter().all(|c| c.0[3] == 0));
    // Every subspace was run, and the runs recorded for it do lie in it.
    let enc = comprex::Encoding::new(&valid);
    for r in regions {
        for s in &r.subspaces {
            assert!(!s.explored_by.is_empty(), "{} {}", r.id, s.text);
            for &run in &s.explored_by {
                assert!(enc.contains(s.subspace.bdd(), &ex.configurations[run]));
            }
        }
    }
}

#[test]
fn the_papers_first_run_gives_its_six_subspaces() {
    // §III.A: running {A, D} first yields ⟦A⟧,⟦¬A⟧ | ⟦A∧B⟧,⟦A∧¬B⟧,⟦¬A⟧ | ⟦A∧C⟧,⟦A∧¬C⟧,⟦¬A⟧.
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let start = space.parse_configuration("A,D").unwrap();
    let mut explorer = comprex::Explorer::new(
        &valid,
        ExploreSettings {
            start: Some(start.clone()),
            ..Default::default()
        },
    );
    assert_eq!(explorer.next_configuration().unwrap(), Some(start.clone()));
    explorer
        .record(start.clone(), fig2(&space, &start))
        .unwrap();
    let ex = explorer.finish();
    let texts = |id| ex.region(Granularity::Method, id).unwrap().texts();
    assert_eq!(texts("main"), ["A", "¬A"]);
    assert_eq!(texts("foo"), ["A ∧ B", "A ∧ ¬B", "¬A"]);
    assert_eq!(texts("bar"), ["A ∧ C", "A ∧ ¬C", "¬A"]);
    // Explored by {A, D}: ⟦A⟧, ⟦A∧¬B⟧, ⟦A∧¬C⟧.
    let explored: Vec<&str> = ex
        .regions(Granularity::Method)
        .iter()
        .flat_map(|r| r.subspaces.iter())
        .filter(|s| !s.explored_by.is_empty())
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(explored, ["A ∧ ¬C", "A ∧ ¬B", "A"]);
}

#[test]
fn regions_and_configurations_per_granularity() {
    // Table IV's columns for the running example: regions and configurations to measure.
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let mut table = Vec::new();
    for g in Granularity::ALL {
        let ex = run_fig2(
            &valid,
            ExploreSettings {
                granularities: vec![g],
                ..Default::default()
            },
        );
        table.push((g, ex.regions(g).len(), ex.configurations.len()));
    }
    assert_eq!(
        table,
        [
            (Granularity::Statement, 4, 4),
            (Granularity::Method, 3, 4),
            (Granularity::Program, 1, 6),
        ]
    );
    // One exploration tracking all three, then the minimum cover per granularity (§V.C).
    let ex = run_fig2(
        &valid,
        ExploreSettings {
            granularities: Granularity::ALL.to_vec(),
            ..Default::default()
        },
    );
    let covers: Vec<usize> = Granularity::ALL
        .iter()
        .map(|g| cover(&valid, &ex, *g).len())
        .collect();
    assert_eq!(covers, [4, 4, 6]);
    // And proven the fewest: every subspace of a partition needs its own configuration, and
    // the program region alone has six.
    for (g, expected) in Granularity::ALL.iter().zip([4, 4, 6]) {
        let (minimum, proven) = comprex::minimum_cover(&valid, &ex, *g);
        assert_eq!((minimum.len(), proven), (expected, true), "{g:?}");
        for region in ex.regions(*g) {
            for s in &region.subspaces {
                let enc = comprex::Encoding::new(&valid);
                assert!(
                    minimum.iter().any(|c| enc.contains(s.subspace.bdd(), c)),
                    "{} uncovered",
                    s.text
                );
            }
        }
    }
    let program = ex.region(Granularity::Program, "program").unwrap();
    assert_eq!(
        program.texts(),
        [
            "A ∧ B ∧ C",
            "A ∧ B ∧ ¬C",
            "A ∧ ¬B ∧ C",
            "A ∧ ¬B ∧ ¬C",
            "¬A ∧ C",
            "¬A ∧ ¬C"
        ]
    );
    let statements: Vec<(&str, usize)> = ex
        .regions(Granularity::Statement)
        .iter()
        .map(|r| (r.id.as_str(), r.subspaces.len()))
        .collect();
    assert_eq!(
        statements,
        [("bar#20", 4), ("foo#17", 3), ("main#13", 2), ("main#6", 2)]
    );
}

#[test]
fn partitions_do_not_depend_on_the_order_of_configurations() {
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let reference = run_fig2(&valid, ExploreSettings::default());
    let all: Vec<Configuration> = valid.iter().collect();
    assert_eq!(all.len(), 16);
    let picks = [
        Pick::Fewest,
        Pick::Most,
        Pick::Random { seed: 1 },
        Pick::Random { seed: 7 },
    ];
    for start in &all {
        for pick in picks {
            let ex = run_fig2(
                &valid,
                ExploreSettings {
                    granularities: Granularity::ALL.to_vec(),
                    start: Some(start.clone()),
                    pick,
                    ..Default::default()
                },
            );
            for g in [Granularity::Method] {
                let a = reference.regions(g);
                let b = ex.regions(g);
                assert_eq!(a.len(), b.len());
                for (ra, rb) in a.iter().zip(b) {
                    assert_eq!(ra.id, rb.id);
                    assert_eq!(ra.texts(), rb.texts(), "start {start:?}, {pick:?}");
                    for (sa, sb) in ra.subspaces.iter().zip(&rb.subspaces) {
                        assert!(sa.subspace.same_as(&sb.subspace));
                    }
                }
            }
            assert_eq!(ex.regions(Granularity::Program)[0].subspaces.len(), 6);
            assert_eq!(ex.regions(Granularity::Statement).len(), 4);
        }
    }
}

#[test]
fn local_and_global_models_match_the_paper() {
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = run_fig2(&valid, ExploreSettings::default());
    let times: Vec<_> = ex
        .configurations
        .iter()
        .map(|c| fig2_times(&space, c))
        .collect();
    let m = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap();
    let local = |id: &str| {
        m.file
            .regions
            .iter()
            .find(|r| r.id == id)
            .unwrap()
            .terms
            .to_string()
    };
    // M_main = 3 − 1A, M_foo = 1A + 3AB, M_bar = 5 + 15A + 10C + 30AC (per-region averages
    // of Fig. 2's times), composed into 8 + 15A + 10C + 3AB + 30AC.
    assert_eq!(local("main"), "3.00 - 1.00·A");
    assert_eq!(local("foo"), "3.00·A·B + 1.00·A");
    assert_eq!(local("bar"), "5.00 + 30.00·A·C + 15.00·A + 10.00·C");
    assert_eq!(
        m.file.terms.to_string(),
        "8.00 + 30.00·A·C + 15.00·A + 10.00·C + 3.00·A·B"
    );
    assert!(
        m.trivial.iter().all(|t| t.region.is_none()),
        "{:?}",
        m.trivial
    );
    assert!(m.suspects.is_empty());
    // The model predicts every configuration's total exactly, not only the measured ones.
    let bound = m.file.bind(&["A", "B", "C", "D"]).unwrap();
    for c in valid.iter() {
        let truth: f64 = fig2_times(&space, &c).seconds.values().sum();
        let row: Vec<f64> = c.0.iter().map(|v| *v as f64).collect();
        assert!((bound.predict(&row) - truth).abs() < 1e-9);
    }
    let main = m.file.regions.iter().find(|r| r.id == "main").unwrap();
    let loc = main.location.as_ref().unwrap();
    assert_eq!((loc.file.as_str(), loc.lines), ("prog.c", [6, 13]));
    assert_eq!(loc.function.as_deref(), Some("main"));
}

#[test]
fn taint_runs_round_trip_through_json() {
    let space = binary_space(&["A", "B", "C", "D"]);
    let config = space.parse_configuration("A,C").unwrap();
    let run = TaintRun::new(&space, &config, fig2(&space, &config));
    let json = serde_json::to_string_pretty(&run).unwrap();
    let back: TaintRun = serde_json::from_str(&json).unwrap();
    assert_eq!(back, run);
    assert_eq!(back.configuration(&space).unwrap(), config);
    assert!(json.contains("\"data_flow\""), "{json}");
    let mut bad = back.clone();
    bad.configuration.insert("Z".into(), 1.0);
    assert_eq!(
        bad.configuration(&space).unwrap_err().to_string(),
        "unknown option `Z` in the taint run's configuration"
    );
}
