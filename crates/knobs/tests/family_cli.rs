//! Family-based measurement through the command line, as a user runs it: on the paper's
//! printer driver (`examples/printer`, §3.2) one run with every feature gives a model with
//! the paper's terms, with functions mapped by an annotation, a spec pattern and the static
//! analysis, printed, written as JSON and evaluable against brute force; on ConfigCrusher's
//! running example (Fig. 2, lines 1-21) it runs one configuration (Table 2) and says which
//! options it cannot see. Errors exit with status 2.
//!
//! No check here depends on the machine's speed or load. The terms' values are checked
//! exactly in `crates/family/tests/printer.rs`, on the call-tree runtime's test clock; how
//! well the model predicts real runs (MAPE against brute force) is measured by the benchmark
//! runner (`cargo run --release -p bench`, whose printer subject has family-based rows), not
//! tested.

mod common;

use std::path::Path;

use common::{knobs, succeeds};

/// An example directory copied to a temporary one, with its native build.
fn example(name: &str, files: &[&str], program: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_example(name, files, dir.path());
    common::native_build(dir.path(), program, &[]);
    dir
}

fn family(spec: &Path, store: &Path) -> serde_json::Value {
    succeeds(
        knobs()
            .args(["family", "--json", "--spec"])
            .arg(spec)
            .arg("--store")
            .arg(store),
    )
    .json()
}

/// The model's global terms by label (options sorted, `""` for the intercept).
fn terms(model: &Path) -> Vec<(String, f64)> {
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(model).unwrap()).unwrap();
    file["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut options: Vec<String> = t["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap().to_string())
                .collect();
            options.sort();
            (options.join("·"), t["value"].as_f64().unwrap())
        })
        .collect()
}

/// The command on the printer driver, its JSON report, the model file and `knobs evaluate`
/// of it. Only properties are checked, none of them timing: the terms' values on the real
/// machine depend on its speed and load. That the terms are exactly the paper's is
/// `crates/family/tests/printer.rs` (on the call-tree runtime's test clock), and how well
/// the model predicts brute force on real hardware (MAPE) is the benchmark runner's
/// (`cargo run --release -p bench -- printer`, its family-based rows).
#[test]
fn one_run_gives_the_printer_drivers_model() {
    let dir = example("printer", &["main.c", "knobs.toml"], "printer");
    let spec = dir.path().join("knobs.toml");
    let report = family(&spec, &dir.path().join("family.db"));
    assert_eq!(
        report["configurations"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert_eq!(report["total_configurations"], 8, "{report}");
    assert_eq!(report["unseen"].as_array().unwrap().len(), 0, "{report}");
    let mut mapped: Vec<String> = report["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f["function"].as_str().unwrap(),
                f["feature"].as_str().unwrap(),
                f["source"].as_str().unwrap()
            )
        })
        .collect();
    mapped.sort();
    assert_eq!(
        mapped,
        [
            "print_autoscan AutoScan derived",
            "print_colorscan ColorScan derived",
            "print_logging Logging spec",
            "scan_logging Logging annotation",
        ]
    );
    // The model has the paper's terms (which contexts exist, not how long they took).
    let model = std::path::PathBuf::from(report["model_path"].as_str().unwrap());
    assert_eq!(model, dir.path().join("printer.family.json"));
    let got = terms(&model);
    let mut labels: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
    labels.sort_unstable();
    assert_eq!(
        labels,
        [
            "",
            "AutoScan",
            "AutoScan·Logging",
            "ColorScan",
            "ColorScan·Logging",
            "Logging"
        ],
        "{got:?}"
    );
    assert!(got.iter().all(|(_, v)| v.is_finite()), "{got:?}");

    // Without --json: the model on stdout, naming the options; the rest on stderr. A rerun
    // resumes from the store.
    let ran = succeeds(
        knobs()
            .args(["family", "--spec"])
            .arg(&spec)
            .arg("--store")
            .arg(dir.path().join("family.db")),
    );
    let (stdout, stderr) = (ran.text(), ran.stderr);
    for option in ["Logging", "ColorScan", "AutoScan"] {
        assert!(stdout.contains(option), "{option} not in {stdout}");
    }
    assert!(
        stderr.contains("variant simulator: 1 run configuration(s) of 8"),
        "{stderr}"
    );
    assert!(stderr.contains("model written to"), "{stderr}");
    // Where each feature came from, in words (not the enum's names).
    for mapped in [
        "print_autoscan → AutoScan, by the static analysis: every call is guarded by it",
        "print_logging → Logging, by the spec: matches `print_logging`",
        "scan_logging → Logging, by an annotation: annotated `knobs:feature=Logging`",
    ] {
        assert!(stderr.contains(mapped), "{mapped} not in {stderr}");
    }

    // `knobs evaluate` takes the model against brute force of the native program.
    knobs()
        .args(["measure", "--sample", "all", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    let evaluation = succeeds(
        knobs()
            .args(["evaluate", "--json"])
            .arg(&model)
            .arg(dir.path().join("knobs.db")),
    )
    .json();
    let mape = evaluation["mape_unmeasured_percent"].as_f64();
    assert!(mape.is_some_and(f64::is_finite), "{evaluation}");
}

/// A spec that does not exist: exit status 2, one line of error, nothing on stdout.
#[test]
fn a_missing_spec_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = knobs()
        .args(["family", "--json", "--spec"])
        .arg(dir.path().join("missing.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("knobs: error: "), "{stderr}");
}

#[test]
fn the_running_example_runs_once_and_names_what_it_cannot_see() {
    let dir = example("splat", &["main.c", "knobs.toml"], "fig2");
    let report = family(&dir.path().join("knobs.toml"), &dir.path().join("knobs.db"));
    assert_eq!(
        report["configurations"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    // foo decides on C inside its own code, and line 21 on B: neither is a feature's
    // function, so the model cannot see them, and says so.
    let unseen: Vec<String> = report["unseen"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| u["options"].as_array().unwrap().clone())
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    for o in ["B", "C"] {
        assert!(unseen.iter().any(|u| u == o), "{o} not in {report}");
    }
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("cannot see")),
        "{report}"
    );
}

/// The printer driver with the spec's `metric = "wall"` dropped (so `auto` applies) and,
/// when `spin`, every nanosleep a busy loop on the thread's CPU clock (as
/// bench/region-clock/compare.sh --spin does), rebuilt.
fn printer_under_auto(spin: bool) -> tempfile::TempDir {
    let dir = example("printer", &["main.c", "knobs.toml"], "printer");
    let spec = dir.path().join("knobs.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    assert!(text.contains("metric = \"wall\"\n"));
    std::fs::write(&spec, text.replace("metric = \"wall\"\n", "")).unwrap();
    if spin {
        let main = dir.path().join("main.c");
        let source = std::fs::read_to_string(&main).unwrap().replacen(
            "#include <time.h>\n",
            "#include <time.h>\n#define nanosleep(ts, rem) ({ struct timespec s0_, s1_; \
             double w_ = (double)(ts)->tv_sec * 1e9 + (double)(ts)->tv_nsec; \
             clock_gettime(CLOCK_THREAD_CPUTIME_ID, &s0_); do \
             clock_gettime(CLOCK_THREAD_CPUTIME_ID, &s1_); while ((double)(s1_.tv_sec - \
             s0_.tv_sec) * 1e9 + (double)(s1_.tv_nsec - s0_.tv_nsec) < w_); 0; })\n",
            1,
        );
        assert!(source.contains("define nanosleep"));
        std::fs::write(&main, source).unwrap();
        let status = std::process::Command::new("clang-19")
            .args(["-O2", "-o", "printer", "main.c"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
    dir
}

#[test]
fn under_auto_the_call_trees_are_read_by_the_wall_clock_when_the_program_sleeps_and_the_cpu_clock_when_it_is_busy()
 {
    for (spin, clock) in [(false, "wall"), (true, "cpu")] {
        let dir = printer_under_auto(spin);
        let spec = dir.path().join("knobs.toml");
        let report = family(&spec, &dir.path().join("family.db"));
        assert_eq!(report["call_tree_clock"]["clock"], clock, "{report}");
        assert!(
            report["call_tree_clock"]["why"]
                .as_str()
                .unwrap()
                .contains("(auto: "),
            "{report}"
        );
        let model: serde_json::Value =
            serde_json::from_slice(&std::fs::read(report["model_path"].as_str().unwrap()).unwrap())
                .unwrap();
        assert_eq!(model["provenance"]["region_clock"], clock, "{model}");
    }
}
