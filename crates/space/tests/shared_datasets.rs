//! Checks against the measured configuration spaces in `../shared/datasets` (beside the
//! repository; CI provides it). Missing data is a failure, not a skip.

use std::collections::HashSet;
use std::path::PathBuf;

use space::formats::{load_dataset, splconqueror};
use space::sampling::tuple_coverage;
use space::{Strategy, ValidConfigurations, load_space, sample};

fn shared(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/datasets")
        .join(rel);
    assert!(
        p.exists(),
        "{} is missing: clone the repository next to `shared/`",
        p.display()
    );
    p
}

#[test]
fn splconqueror_models_count_as_published() {
    for (system, expected) in [("x264", 1152u32), ("LLVM", 1024)] {
        let space =
            load_space(&shared(&format!("splconqueror/{system}/FeatureModel.xml"))).unwrap();
        let valid = ValidConfigurations::new(&space).unwrap();
        assert_eq!(valid.count(), expected.into(), "{system}");
        assert_eq!(
            valid.iter().count(),
            expected as usize,
            "{system}: enumeration"
        );
    }
}

#[test]
fn every_measured_configuration_is_valid() {
    for (system, rows) in [("x264", 1152usize), ("LLVM", 1024)] {
        let space =
            load_space(&shared(&format!("splconqueror/{system}/FeatureModel.xml"))).unwrap();
        let valid = ValidConfigurations::new(&space).unwrap();
        let data = load_dataset(
            &shared(&format!("splconqueror/{system}/measurements.xml")),
            Some(&space),
        )
        .unwrap();
        assert_eq!(data.configurations.len(), rows, "{system}");
        for c in &data.configurations {
            assert!(
                valid.is_valid(c),
                "{system}: {}",
                space.format_configuration(c)
            );
            assert!(space.violations(c).is_empty());
        }
        let distinct: HashSet<_> = data.configurations.iter().collect();
        assert_eq!(
            distinct.len(),
            rows,
            "{system}: the measurements cover the whole space"
        );
        assert!(data.performance.iter().all(|p| *p > 0.0));
    }
}

#[test]
fn pairwise_sample_covers_every_valid_pair_of_x264() {
    let space = load_space(&shared("splconqueror/x264/FeatureModel.xml")).unwrap();
    let valid = ValidConfigurations::new(&space).unwrap();
    // Ground truth by enumeration: the value pairs that occur in some valid configuration.
    let n = space.len();
    let mut valid_pairs = HashSet::new();
    for c in valid.iter() {
        for i in 0..n {
            for j in i + 1..n {
                valid_pairs.insert((i, c.0[i], j, c.0[j]));
            }
        }
    }
    for seed in [1, 2, 3] {
        let s = sample(&valid, &Strategy::TWise(2), seed).unwrap();
        let mut covered = HashSet::new();
        for c in &s.configurations {
            assert!(valid.is_valid(c));
            for i in 0..n {
                for j in i + 1..n {
                    covered.insert((i, c.0[i], j, c.0[j]));
                }
            }
        }
        let missing: Vec<_> = valid_pairs.difference(&covered).collect();
        assert!(
            missing.is_empty(),
            "seed {seed}: uncovered pairs {missing:?}"
        );
        let cov = s.coverage.unwrap();
        assert_eq!(cov.valid_tuples as usize, valid_pairs.len());
        assert_eq!(tuple_coverage(&valid, &s.configurations, 2).unwrap(), cov);
        // Far below the 1152 configurations of the space.
        assert!(
            s.configurations.len() < 30,
            "seed {seed}: {} configurations",
            s.configurations.len()
        );
    }
}

#[test]
fn deepperf_csvs_load_as_datasets() {
    for (system, rows, columns) in [
        ("Apache", 192, 8),
        ("BDBC", 2560, 16),
        ("BDBJ", 180, 17),
        ("LLVM", 1024, 10),
        ("x264", 1152, 13),
        ("Dune", 2304, 11),
    ] {
        let d = load_dataset(&shared(&format!("deepperf/{system}.csv")), None).unwrap();
        assert_eq!(d.configurations.len(), rows, "{system}");
        assert_eq!(d.space.len(), columns, "{system}");
        assert_eq!(d.performance.len(), rows);
    }
    let dune = load_dataset(&shared("deepperf/Dune.csv"), None).unwrap();
    let cells = dune.space.find("cells").unwrap();
    assert!(
        !dune.space.option(cells).is_binary(),
        "Dune's `cells` is numeric"
    );
}

#[test]
fn measurements_need_the_model() {
    let e = load_space(&shared("splconqueror/x264/measurements.xml")).unwrap_err();
    assert!(
        e.to_string()
            .contains("measurements file, not a variability model"),
        "{e}"
    );
    let _ = splconqueror::parse_measurements;
}
