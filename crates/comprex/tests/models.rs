//! Models from region times: conversion against hand computation, trivial terms, and the
//! partition-debugging check of §V.D.

mod common;

use std::collections::BTreeMap;
use std::convert::Infallible;

use common::{Tracer, binary_space, fig2, fig2_times};
use comprex::{
    Encoding, ExploreSettings, Granularity, ModelSettings, RegionTimes, build_model, explore,
    influence_form,
};
use space::{ConfigSpace, Configuration, ValidConfigurations};

#[test]
fn a_subspace_that_is_not_a_cube_becomes_disjoint_cubes() {
    // `if (a && b) inner(c)`: inner's decision is reached only with A ∧ B, so its partition
    // is ⟦¬(A ∧ B)⟧, ⟦A ∧ B ∧ C⟧, ⟦A ∧ B ∧ ¬C⟧ — the first is not a cube.
    let space = binary_space(&["A", "B", "C"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let program = |c: &Configuration| {
        let mut t = Tracer::new(&space, c);
        let (a, b, cc) = (t.option("A"), t.option("B"), t.option("C"));
        let ab = t.assign(a.v & b.v, &[&a, &b]);
        if t.decide(1, "main", 1, &ab) {
            t.enter(&ab);
            t.decide(2, "inner", 5, &cc);
            t.exit();
        }
        Ok::<_, Infallible>(t.records)
    };
    let ex = explore(&valid, ExploreSettings::default(), program).unwrap();
    let inner = ex.region(Granularity::Method, "inner").unwrap();
    assert_eq!(inner.texts(), ["A ∧ B ∧ C", "A ∧ B ∧ ¬C", "A ∧ ¬B ∨ ¬A"]);
    // Hand computation with averages ABC = 10, AB¬C = 4, ¬(AB) = 2:
    // 10·ABC + 4·AB(1 − C) + 2·(1 − AB) = 2 + 2·AB + 6·ABC.
    let enc = Encoding::new(&valid);
    let values = [10.0, 4.0, 2.0];
    let parts: Vec<_> = inner
        .subspaces
        .iter()
        .zip(values)
        .map(|(s, v)| (s.subspace.description(), v))
        .collect();
    let m = influence_form(&enc, &parts);
    assert_eq!(m.to_string(), "2.00 + 6.00·A·B·C + 2.00·A·B");
    // The same through build_model, with times measured in every configuration.
    let times: Vec<RegionTimes> = valid
        .iter()
        .map(|c| {
            let on = |i: usize| c.0[i] == 1;
            let t = if on(0) && on(1) {
                if on(2) { 10.0 } else { 4.0 }
            } else {
                2.0
            };
            RegionTimes {
                configuration: c.clone(),
                seconds: [("inner".to_string(), t)].into(),
            }
        })
        .collect();
    let model = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap();
    assert_eq!(model.file.terms.to_string(), "2.00 + 6.00·A·B·C + 2.00·A·B");
    assert!(model.suspects.is_empty());
}

#[test]
fn terms_trivial_in_every_region_add_up_in_the_global_model() {
    // f and g each take 0.8 ms longer with A, below the 1 ms threshold; together 1.6 ms.
    let space = binary_space(&["A", "B"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        let mut t = Tracer::new(&space, c);
        let a = t.option("A");
        t.decide(1, "f", 1, &a);
        t.decide(2, "g", 1, &a);
        Ok::<_, Infallible>(t.records)
    })
    .unwrap();
    let times: Vec<RegionTimes> = valid
        .iter()
        .map(|c| {
            let t = 2.0 + if c.0[0] == 1 { 0.0008 } else { 0.0 };
            RegionTimes {
                configuration: c.clone(),
                seconds: [("f".to_string(), t), ("g".to_string(), t)].into(),
            }
        })
        .collect();
    let m = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap();
    let bound = m.file.bind(&["A", "B"]).unwrap();
    assert!((bound.predict(&[1.0, 0.0]) - 4.0016).abs() < 1e-9);
    assert!((bound.predict(&[0.0, 0.0]) - 4.0).abs() < 1e-9);
    // The local models show what is above the threshold; the small terms are listed.
    assert_eq!(
        m.trivial
            .iter()
            .map(|t| t.region.as_deref().unwrap_or("(global)"))
            .collect::<Vec<_>>(),
        ["f", "g"]
    );
    for r in &m.file.regions {
        assert_eq!(r.terms.to_string(), "2.00", "{}", r.id);
    }
}

#[test]
fn numeric_options_become_value_indicators() {
    let mut space = ConfigSpace::new("numeric");
    space.add_numeric("level", &[1.0, 6.0, 9.0]).unwrap();
    space.add_binary("A", None, false).unwrap();
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        let mut t = Tracer::new(&space, c);
        let level = t.option("level");
        t.decide(1, "f", 1, &level);
        Ok::<_, Infallible>(t.records)
    })
    .unwrap();
    assert_eq!(ex.configurations.len(), 3);
    let cost = |c: &Configuration| [1.0, 2.0, 5.0][c.0[0] as usize];
    let times: Vec<RegionTimes> = ex
        .configurations
        .iter()
        .map(|c| RegionTimes {
            configuration: c.clone(),
            seconds: [("f".to_string(), cost(c))].into(),
        })
        .collect();
    let m = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap();
    // Against the first value: the intercept is level=1's time.
    assert_eq!(
        m.file.terms.to_string(),
        "1.00 + 4.00·level=9 + 1.00·level=6"
    );
    let bound = m.file.bind(&["level", "A"]).unwrap();
    for c in valid.iter() {
        let level = space.options()[0].numeric_value(c.0[0]);
        assert_eq!(bound.predict(&[level, c.0[1] as f64]), cost(&c));
    }
}

#[test]
fn small_terms_are_reported_as_trivial() {
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        Ok::<_, Infallible>(fig2(&space, c))
    })
    .unwrap();
    // foo's branch on B costs 0.5 ms more, below the 1 ms threshold.
    let times: Vec<RegionTimes> = ex
        .configurations
        .iter()
        .map(|c| {
            let mut t = fig2_times(&space, c);
            if let Some(foo) = t.seconds.get_mut("foo") {
                *foo = if c.0[1] == 1 { 1.0005 } else { 1.0 };
            }
            t
        })
        .collect();
    let m = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap();
    // Left out of the global model and of foo's local model alike.
    assert_eq!(m.trivial.len(), 2, "{:?}", m.trivial);
    for (t, region) in m.trivial.iter().zip([None, Some("foo")]) {
        assert_eq!(t.region.as_deref(), region);
        assert_eq!(t.term.label(), "A·B");
        assert!((t.term.value - 0.0005).abs() < 1e-12);
    }
    assert_eq!(
        m.file.terms.to_string(),
        "8.00 + 30.00·A·C + 15.00·A + 10.00·C"
    );
}

#[test]
fn an_incomplete_partition_is_flagged_by_its_coefficient_of_variation() {
    // bar secretly also depends on D (its taint misses it): configurations in one subspace
    // of bar take different times. Measured in all 16 configurations.
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        Ok::<_, Infallible>(fig2(&space, c))
    })
    .unwrap();
    let times: Vec<RegionTimes> = valid
        .iter()
        .map(|c| {
            let mut t = fig2_times(&space, &c);
            if c.0[3] == 1 {
                *t.seconds.get_mut("bar").unwrap() *= 2.0;
            }
            t
        })
        .collect();
    let m = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap();
    assert_eq!(m.suspects.len(), 1, "{:?}", m.suspects);
    let s = &m.suspects[0];
    assert_eq!(s.region, "bar");
    assert_eq!(s.measurements, 4);
    // Times 1,1,2,2 (×k) in each subspace: sd/mean = 0.577…/1.5.
    assert!(
        (s.cv - (1.0f64 / 3.0).sqrt() / 1.5).abs() < 1e-9,
        "{}",
        s.cv
    );
    // With the true behaviour (no D) nothing is flagged, even measured everywhere.
    let honest: Vec<RegionTimes> = valid.iter().map(|c| fig2_times(&space, &c)).collect();
    let m = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &honest,
        &ModelSettings::default(),
    )
    .unwrap();
    assert!(m.suspects.is_empty());
}

#[test]
fn every_subspace_needs_a_measurement() {
    let space = binary_space(&["A", "B", "C", "D"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        Ok::<_, Infallible>(fig2(&space, c))
    })
    .unwrap();
    let times = vec![fig2_times(&space, &ex.configurations[0])];
    let err = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "region `bar`: no measured configuration lies in subspace A ∧ C"
    );
}

#[test]
fn a_region_without_decisions_gets_a_constant_model() {
    let space = binary_space(&["A"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let times: Vec<RegionTimes> = valid
        .iter()
        .map(|c| RegionTimes {
            configuration: c.clone(),
            seconds: BTreeMap::from([("parse".to_string(), 2.0 + c.0[0] as f64 * 0.0)]),
        })
        .collect();
    let m = build_model(&valid, &[], &times, &ModelSettings::default()).unwrap();
    assert_eq!(m.file.regions.len(), 1);
    assert_eq!(m.file.regions[0].terms.to_string(), "2.00");
    assert_eq!(m.file.terms.to_string(), "2.00");
}

#[test]
fn alternatives_are_expressed_against_a_reference_member() {
    // An algorithm chosen from an alternative group, and a trace option that costs more
    // with one of them: every cube of the partition names all members (`ALG_HUFF ∧ ¬ALG_LZ`),
    // yet no printed term may be a product of two members, nor the reference member itself.
    let mut space = ConfigSpace::new("alternatives");
    let algs: Vec<_> = ["ALG_STORE", "ALG_HUFF", "ALG_LZ"]
        .iter()
        .map(|n| space.add_binary(n, None, false).unwrap())
        .collect();
    space
        .add_group(space::GroupKind::Alternative, None, algs)
        .unwrap();
    space.add_binary("TRACE", None, false).unwrap();
    let valid = ValidConfigurations::new(&space).unwrap();
    let ex = explore(&valid, ExploreSettings::default(), |c| {
        let mut t = Tracer::new(&space, c);
        let (huff, lz, trace) = (t.option("ALG_HUFF"), t.option("ALG_LZ"), t.option("TRACE"));
        t.decide(1, "f", 1, &huff);
        t.decide(2, "f", 2, &lz);
        t.decide(3, "f", 3, &trace);
        Ok::<_, Infallible>(t.records)
    })
    .unwrap();
    let cost = |c: &Configuration| {
        let on = |i: usize| c.0[i] == 1;
        let alg = if on(1) {
            3.0
        } else if on(2) {
            7.0
        } else {
            1.0
        };
        alg + if on(3) {
            if on(2) { 4.0 } else { 1.0 }
        } else {
            0.0
        }
    };
    let times: Vec<RegionTimes> = ex
        .configurations
        .iter()
        .map(|c| RegionTimes {
            configuration: c.clone(),
            seconds: [("f".to_string(), cost(c))].into(),
        })
        .collect();
    let m = build_model(
        &valid,
        ex.regions(Granularity::Method),
        &times,
        &ModelSettings::default(),
    )
    .unwrap();
    for t in m.file.terms.terms() {
        let members = t
            .options
            .iter()
            .filter(|f| f.option().starts_with("ALG_"))
            .count();
        assert!(members <= 1, "a product of alternatives: {}", m.file.terms);
        assert!(
            t.options.iter().all(|f| f.option() != "ALG_STORE"),
            "the reference member has a term: {}",
            m.file.terms
        );
    }
    assert_eq!(
        m.file.terms.to_string(),
        "1.00 + 6.00·ALG_LZ + 3.00·ALG_LZ·TRACE + 2.00·ALG_HUFF + 1.00·TRACE"
    );
    let bound = m
        .file
        .bind(&["ALG_STORE", "ALG_HUFF", "ALG_LZ", "TRACE"])
        .unwrap();
    for c in valid.iter() {
        let row: Vec<f64> = c.0.iter().map(|&v| v as f64).collect();
        assert!((bound.predict(&row) - cost(&c)).abs() < 1e-9, "{c:?}");
    }
}

#[test]
fn other_values_beside_a_value_literal_change_nothing() {
    // One-hot cubes name every value (`level≠1 ∧ level=6 ∧ level≠9`); the negations are
    // left out of the expansion and of the text, those of other options are not.
    let mut space = ConfigSpace::new("numeric");
    let level = space.add_numeric("level", &[1.0, 6.0, 9.0]).unwrap();
    let a = space.add_binary("A", None, false).unwrap();
    let b = space.add_binary("B", None, false).unwrap();
    let valid = ValidConfigurations::new(&space).unwrap();
    let enc = Encoding::new(&valid);
    let lit = |o, v| valid.literal((o, v));
    let not_b = lit(b, 0);
    let with_negations = lit(level, 1)
        .and(&lit(level, 0).not())
        .and(&lit(level, 2).not())
        .and(&lit(a, 0))
        .and(&not_b);
    assert_eq!(enc.describe(&with_negations), "level=6 ∧ ¬A ∧ ¬B");
    let plain = lit(level, 1).and(&lit(a, 0)).and(&not_b);
    let expanded = influence_form(&enc, &[(&with_negations, 3.0)]);
    assert_eq!(
        expanded.to_string(),
        influence_form(&enc, &[(&plain, 3.0)]).to_string()
    );
    // 3·[level=6]·(1 − A)·(1 − B): four terms.
    assert_eq!(
        expanded.to_string().matches("level=6").count(),
        4,
        "{expanded}"
    );
}

#[test]
fn a_cheap_regions_unmeasured_subspace_takes_the_mean_of_its_measured_ones() {
    // `inner` decides on C: two subspaces. Measured only with C off (1 s and 3 s of inner),
    // its C subspace has no measured configuration: an error, unless inner is cheap.
    let space = binary_space(&["A", "C"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let program = |c: &Configuration| {
        let mut t = Tracer::new(&space, c);
        let cc = t.option("C");
        t.decide(1, "inner", 5, &cc);
        Ok::<_, Infallible>(t.records)
    };
    let ex = explore(&valid, ExploreSettings::default(), program).unwrap();
    let regions = ex.regions(Granularity::Method);
    let times: Vec<RegionTimes> = [([0, 0], 1.0), ([1, 0], 3.0)]
        .into_iter()
        .map(|(c, t)| RegionTimes {
            configuration: Configuration(c.to_vec()),
            seconds: [("inner".to_string(), t)].into(),
        })
        .collect();
    let strict = build_model(&valid, regions, &times, &ModelSettings::default());
    assert!(strict.unwrap_err().to_string().contains("inner"));
    let settings = ModelSettings {
        approximate: ["inner".to_string()].into(),
        ..ModelSettings::default()
    };
    let model = build_model(&valid, regions, &times, &settings).unwrap();
    assert_eq!(model.approximated, [("inner".to_string(), "C".to_string())]);
    let bound = model.file.bind(&space.names()).unwrap();
    assert_eq!(bound.predict(&[0.0, 1.0]), 2.0);
    assert_eq!(bound.predict(&[1.0, 0.0]), 2.0);
}

#[test]
fn only_the_costly_regions_subspaces_are_covered() {
    // `hot` decides on A (2 subspaces), `cold` on B and C (4): every subspace needs 4
    // configurations, hot's alone 2. `folded` (no region of its own) went into cold, and
    // with its share cold is costly too.
    let space = binary_space(&["A", "B", "C"]);
    let valid = ValidConfigurations::new(&space).unwrap();
    let program = |c: &Configuration| {
        let mut t = Tracer::new(&space, c);
        let (a, b, cc) = (t.option("A"), t.option("B"), t.option("C"));
        t.decide(1, "hot", 1, &a);
        let bc = t.assign(b.v & cc.v, &[&b, &cc]);
        t.decide(2, "cold", 5, &b);
        t.decide(3, "cold", 6, &bc);
        t.decide(4, "cold", 7, &cc);
        Ok::<_, Infallible>(t.records)
    };
    let ex = explore(&valid, ExploreSettings::default(), program).unwrap();
    let regions = ex.regions(Granularity::Method);
    assert_eq!(comprex::cover(&valid, &ex, Granularity::Method).len(), 4);
    let shares = [("hot".to_string(), 0.9), ("cold".to_string(), 0.02)].into();
    let cheap = comprex::pipeline::cheap_cover(&valid, regions, &shares, &[], 0.05);
    assert_eq!(cheap.cover.len(), 2);
    assert_eq!(cheap.costly, [("hot".to_string(), 0.9)]);
    assert_eq!(cheap.cheap, ["cold".to_string()].into());
    // Both configurations of the cover set B and C alike, and cold is partitioned by them.
    let alike = |k: usize| cheap.cover[0].0[k] == cheap.cover[1].0[k];
    let expected: Vec<&str> = ["B", "C"]
        .into_iter()
        .zip([1, 2])
        .filter(|&(_, k)| alike(k))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(cheap.unvaried, expected);
    assert!(!alike(0) && !cheap.unvaried.is_empty(), "{:?}", cheap.cover);
    let shares = [
        ("hot".to_string(), 0.9),
        ("cold".to_string(), 0.02),
        ("folded".to_string(), 0.08),
    ]
    .into();
    let folded = [("folded".to_string(), vec!["cold".to_string()])];
    let both = comprex::pipeline::cheap_cover(&valid, regions, &shares, &folded, 0.05);
    assert_eq!(both.cover.len(), 4);
    assert!(both.cheap.is_empty() && both.unvaried.is_empty());
}
