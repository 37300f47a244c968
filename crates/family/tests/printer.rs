//! Family-based measurement on the paper's printer driver (`examples/printer`, Siegmund et
//! al. 2013, §3.2): one run with every feature gives the paper's final model. The program's
//! sleeps are counted on the call-tree runtime's test clock instead (`Settings::test_clock`,
//! `runtime::call_tree::build_test_clock`): the call tree then holds exactly the work the
//! program does, the enter/exit calls' fixed costs are taken out exactly by the runtime's
//! calibration, and the model's terms are exact whatever the machine is doing.
//!
//! How well the model predicts the real program (a brute force of real runs, MAPE) is the
//! benchmark runner's: `cargo run --release -p bench` has family-based rows. It depends on
//! the machine, so it is no test.

use std::path::{Path, PathBuf};

use family::FeatureSource;
use instrumented::Session;
use model::ModelFile;

/// The printer's unit in milliseconds (`PRINTER_UNIT_MS` in its knobs.toml).
const UNIT_MS: f64 = 5.0;

fn example(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/printer")
        .join(file)
}

/// `examples/printer` copied to `dir`, its `work(units)` counting `units · unit_ms` ms on the
/// test clock instead of sleeping them: the same program, options and functions.
fn printer_with_test_clock(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(example("main.c")).unwrap();
    let head = "static void work(double units) {";
    let start = text.find(head).expect("main.c defines work(units)");
    let end = start + text[start..].find("\n}\n").expect("work ends with `}`") + "\n}\n".len();
    let work = "#include <stdint.h>\n\
                void __knobs_test_work(uint64_t ns);\n\
                static void work(double units) {\n    \
                    __knobs_test_work((uint64_t)(units * unit_ms * 1e6 + 0.5));\n\
                }\n";
    let text = format!("{}{work}{}", &text[..start], &text[end..]);
    assert!(!text.contains("nanosleep("), "main.c sleeps elsewhere too");
    std::fs::write(dir.join("main.c"), text).unwrap();
    let spec = std::fs::read_to_string(example("knobs.toml")).unwrap();
    let unit = format!("PRINTER_UNIT_MS = \"{UNIT_MS}\"");
    assert!(spec.contains(&unit), "knobs.toml sets {unit}");
    let path = dir.join("knobs.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// The model's global terms by label (options sorted, `""` for the intercept), sorted.
fn terms(model: &ModelFile) -> Vec<(String, f64)> {
    let mut terms: Vec<(String, f64)> = model
        .terms
        .terms()
        .iter()
        .filter(|t| t.value.abs() > 1e-12)
        .map(|t| {
            let mut label: Vec<String> = t.label().split('·').map(String::from).collect();
            label.sort();
            (label.join("·"), t.value)
        })
        .collect();
    terms.sort_by(|a, b| a.0.cmp(&b.0));
    terms
}

#[test]
fn one_run_gives_the_printer_drivers_model() {
    let dir = tempfile::tempdir().unwrap();
    let spec = printer_with_test_clock(dir.path());
    let mut session = Session::open(
        &spec,
        None,
        Some(dir.path().join("knobs.db")),
        Some(dir.path().join("work")),
        "family",
    )
    .unwrap();
    session.settings.test_clock = true;
    let report = family::run(
        &session,
        &family::Options::default(),
        &mut instrumented::Silent,
    )
    .unwrap();

    // One run, every feature on; every decision on an option is a feature's function.
    assert_eq!(report.configurations.len(), 1, "{report:#?}");
    assert!(report.unseen.is_empty(), "{report:#?}");
    assert!(report.unmapped_options.is_empty(), "{report:#?}");
    assert!(report.unprobed.is_empty(), "{report:#?}");
    // The three ways of mapping a function to a feature.
    let mut mapped: Vec<(&str, &str, FeatureSource)> = report
        .features
        .iter()
        .map(|f| (f.function.as_str(), f.feature.as_str(), f.source))
        .collect();
    mapped.sort_by_key(|m| m.0);
    assert_eq!(
        mapped,
        [
            ("print_autoscan", "AutoScan", FeatureSource::Derived),
            ("print_colorscan", "ColorScan", FeatureSource::Derived),
            ("print_logging", "Logging", FeatureSource::Spec),
            ("scan_logging", "Logging", FeatureSource::Annotation),
        ]
    );
    // On the test clock the native program is not the yardstick.
    assert!(report.native_measurement.is_none(), "{report:#?}");
    assert!(report.overhead_correction.is_empty(), "{report:#?}");
    // The call tree reads the wall clock, and says so (the spec's metric is wall).
    let clock = report
        .call_tree_clock
        .as_ref()
        .expect("the clock is reported");
    assert_eq!(
        (clock.clock.as_str(), clock.why.as_str()),
        ("wall", "wall (the spec's metric is wall)")
    );

    // The paper's final model in units (its Base terms merged into the others): print takes
    // AutoScan 1, ColorScan 5, Logging 1 and Base 2 units, AutoScan and ColorScan each scan
    // once, and a scan takes Logging 0.5 and Base 1. The intercept is Base's 2 units alone:
    // on the test clock the process's start and exit take no time.
    let output = report.output.as_ref().expect("a model was written");
    let model = ModelFile::load(&output.model_path).unwrap();
    let got = terms(&model);
    let want = [
        ("", 2.0),
        ("AutoScan", 2.0),
        ("AutoScan·Logging", 0.5),
        ("ColorScan", 6.0),
        ("ColorScan·Logging", 0.5),
        ("Logging", 1.0),
    ];
    assert_eq!(
        got.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(),
        want.map(|(l, _)| l),
        "{got:?}"
    );
    for ((label, value), (_, units)) in got.iter().zip(want) {
        let expected = units * UNIT_MS * 1e-3;
        assert!(
            (value - expected).abs() < 1e-9,
            "term `{label}`: {value} s, expected {expected} s; {got:?}"
        );
    }
}
