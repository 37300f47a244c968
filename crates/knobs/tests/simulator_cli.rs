//! `knobs simulator`: the bundled `#ifdef` scanner (examples/ifdef) turned into its variant
//! simulator and run-time spec, measured like any run-time spec; an undisciplined feature is
//! named with its line, and it and a build option that sets no single macro stay build
//! options of the simulator's spec.

mod common;

use std::path::{Path, PathBuf};

use common::{knobs, s};
use predicates::prelude::*;
use predicates::str::contains;

/// A copy of examples/ifdef in a fresh directory, with a small workload.
fn scanner(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ifdef");
    std::fs::copy(example.join("scanner.c"), dir.join("scanner.c")).unwrap();
    let spec = std::fs::read_to_string(example.join("knobs.toml")).unwrap();
    std::fs::write(dir.join("knobs.toml"), spec.replace("\"20000\"", "\"50\"")).unwrap();
    dir
}

/// `knobs simulator` on the spec in `dir`, into `out`; it must succeed.
fn simulate(dir: &Path, out: &Path) -> assert_cmd::assert::Assert {
    knobs()
        .args([
            "simulator",
            "--spec",
            s(&dir.join("knobs.toml")),
            "--out",
            s(out),
        ])
        .assert()
        .success()
}

#[test]
fn the_scanners_simulator_is_a_runtime_spec_every_command_reads() {
    let dir = scanner("simulator-scanner");
    let out = dir.join("sim");
    simulate(&dir, &out)
        .stdout(contains("encoded: logging, color_scan, auto_scan"))
        .stdout(contains("log_page (scanner.c:39) exists only with logging"))
        .stdout(contains("a block at scanner.c:52 is auto_scan's code"));
    let spec = std::fs::read_to_string(out.join("knobs.toml")).unwrap();
    assert!(
        spec.contains("KNOBS_FEATURE_COLOR_SCAN = \"{value}\""),
        "{spec}"
    );
    assert!(
        !spec.contains("recipe"),
        "the simulator is built once: {spec}"
    );
    // Measured as any run-time spec: every configuration, no build per configuration.
    knobs()
        .args([
            "measure",
            "--spec",
            s(&out.join("knobs.toml")),
            "--sample",
            "all",
        ])
        .args(["--store", s(&dir.join("sim.db"))])
        .assert()
        .success()
        .stderr(contains("8 of 8 configurations measured"));
}

#[test]
fn the_check_counts_real_builds_beside_the_simulator_per_option() {
    let dir = scanner("simulator-check");
    let out = knobs()
        .args([
            "simulator",
            "--spec",
            s(&dir.join("knobs.toml")),
            "--check",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = &report["check"];
    // Every feature off, each alone, all: five real builds, each beside the simulator.
    assert_eq!(check["configurations"].as_array().unwrap().len(), 5);
    let real_builds = std::fs::read_dir(dir.join(".knobs-simulator/real")).unwrap();
    let binaries = real_builds
        .flatten()
        .filter(|e| e.path().extension().is_none())
        .count();
    assert_eq!(binaries, 5);
    // The scanner's features are whole functions: the simulator's effects are the real ones
    // within a fraction of a percent of the program (work loops compiled alike).
    for effect in check["effects"].as_array().unwrap() {
        let real = effect["real"].as_i64().unwrap();
        assert!(real > 0, "{effect}");
        assert!(
            effect["difference_percent"].as_f64().unwrap().abs() < 1.0,
            "{effect}"
        );
    }
}

/// The family-based paper's method on compile-time features: one run of the simulator with
/// every feature, in counted instructions, gives the exact model of all eight real
/// configurations' simulator, against its counted brute force: the `#ifdef` blocks inside
/// `main` and `log_page` are traced as their features' code (the calls they make cost their
/// features, not `main`), a nested one as the interaction.
#[test]
fn family_on_the_simulator_gives_the_scanners_model_from_one_run() {
    let dir = scanner("simulator-family");
    let spec = std::fs::read_to_string(dir.join("knobs.toml")).unwrap();
    let spec = spec.replace("[measure]\n", "[measure]\nmetric = \"instructions\"\n");
    std::fs::write(dir.join("knobs.toml"), spec).unwrap();
    let out = dir.join("sim");
    simulate(&dir, &out);
    let sim_spec = out.join("knobs.toml");
    let model = dir.join("family.json");
    let run = knobs()
        .args([
            "family",
            "--json",
            "--constant-cost",
            "assume",
            "--spec",
            s(&sim_spec),
            "-o",
            s(&model),
        ])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        report["configurations"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    let truth = common::counted_truth(&sim_spec, &dir.join("truth"));
    assert_eq!(truth.len(), 8);
    let (mape, worst) = common::model_errors(&sim_spec, &model, &truth);
    eprintln!("the scanner's simulator, family in counts: MAPE {mape:.5} %, worst {worst:.5} %");
    assert!(worst < 1e-9, "MAPE {mape} %, worst {worst} %");
    // Its terms are the features and Logging#AutoScan, as the paper's example has them; the
    // blocks are mapped to their features, the one in log_page to both.
    let mapped: Vec<String> = report["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["function"], f["feature"]))
        .collect();
    for block in [
        "\"main:52#auto_scan\" \"auto_scan\"",
        "\"main:56#color_scan\" \"color_scan\"",
        "\"main:59#logging\" \"logging\"",
        "\"log_page:41#auto_scan\" \"auto_scan\"",
    ] {
        assert!(mapped.contains(&block.to_string()), "{mapped:?}");
    }
    let file = model::ModelFile::load(&model).unwrap();
    let interaction = file
        .regions
        .iter()
        .find(|r| r.id == "log_page:41#auto_scan")
        .unwrap();
    assert_eq!(
        interaction.options,
        ["auto_scan", "logging"],
        "{interaction:?}"
    );
}

/// A copy of the scanner with `file` rewritten by `edit`, and `knobs simulator` on it.
fn edited(
    name: &str,
    file: &str,
    edit: impl Fn(String) -> String,
) -> (PathBuf, assert_cmd::assert::Assert) {
    let dir = scanner(name);
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    std::fs::write(dir.join(file), edit(text)).unwrap();
    let assert = knobs()
        .args(["simulator", "--spec", s(&dir.join("knobs.toml"))])
        .assert();
    (dir, assert)
}

/// A struct member under LOGGING: the annotation is named with its line, LOGGING stays a build
/// option of the simulator's spec, and the other features are read at run time.
#[test]
fn an_undisciplined_feature_stays_a_build_option_with_its_line() {
    let member = "struct page {\n    int number;\n#ifdef LOGGING\n    int logged;\n#endif\n};\n\n";
    let (dir, assert) = edited("simulator-refused", "scanner.c", |text| {
        text.replace(
            "static unsigned long work(",
            &format!("{member}static unsigned long work("),
        )
    });
    assert
        .success()
        .stdout(contains("encoded: color_scan, auto_scan"))
        .stdout(contains(
            "scanner.c:13: LOGGING stays build-only: a struct, union or enum member",
        ))
        .stdout(contains(
            "build options of the simulator (a simulator per set of their values): logging",
        ));
    let spec = std::fs::read_to_string(dir.join(".knobs-simulator/knobs.toml")).unwrap();
    assert!(spec.contains("define = \"LOGGING\""), "{spec}");
    assert!(!spec.contains("KNOBS_FEATURE_LOGGING"), "{spec}");
}

/// `-O3` beside the features stays a build option of the simulator's spec: `knobs measure`
/// builds one simulator per value of it (two for the 16 configurations), and a second
/// `knobs measure` builds nothing.
#[test]
fn a_build_option_that_sets_no_macro_stays_one_of_the_simulator() {
    let o3 = "[[option]]\nname = \"o3\"\nbuild = { flags = [\"-O3\"] }\n\n";
    let (dir, assert) = edited("simulator-flags", "knobs.toml", |text| {
        text.replace(
            "[[option]]\nname = \"logging\"",
            &format!("{o3}[[option]]\nname = \"logging\""),
        )
    });
    assert
        .success()
        .stdout(contains("encoded: logging, color_scan, auto_scan"))
        .stdout(contains(
            "build options of the simulator (a simulator per set of their values): o3",
        ));
    let spec = dir.join(".knobs-simulator/knobs.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    assert!(text.contains("\"{cflags}\""), "{text}");
    let measure = |store: &str| {
        knobs()
            .args(["measure", "--sample", "all", "--spec", s(&spec)])
            .args(["--store", s(&dir.join(store))])
            .assert()
            .success()
    };
    measure("first.db")
        .stderr(contains("16 of 16 configurations measured"))
        .stderr(contains(
            "2 builds for 2 sets of build-option values: 2 built",
        ));
    // Another store runs every configuration again, from the same two builds.
    measure("second.db").stderr(contains(
        "2 builds for 2 sets of build-option values: 0 built in 0.0 s, 2 from the cache",
    ));
    // The real builds' check needs one build of the simulator.
    knobs()
        .args(["simulator", "--check", "--spec", s(&dir.join("knobs.toml"))])
        .assert()
        .code(2)
        .stderr(contains("options o3 stay build options of the simulator"));
    // A white-box approach on the simulator's spec does not send the user back to it.
    knobs()
        .args(["crush", "--spec", s(&spec)])
        .assert()
        .failure()
        .stderr(contains("options `o3` act on the build"))
        .stderr(contains(
            "the variant simulator keeps them as build options",
        ))
        .stderr(contains("`knobs simulator` writes").not());
}

/// An option that acts through `configure` cannot be built by the simulator's clang command.
#[test]
fn a_configure_option_is_named() {
    let configured = "[[option]]\nname = \"shared\"\nbuild = { configure = [\"--shared\"] }\n\n";
    let (_, assert) = edited("simulator-configure", "knobs.toml", |text| {
        text.replace(
            "[[option]]\nname = \"logging\"",
            &format!("{configured}[[option]]\nname = \"logging\""),
        )
    });
    assert.code(2).stderr(contains(
        "option `shared` acts on the build through `configure`",
    ));
}

/// A program whose blocks run where a feature is *not* selected: `#else` (grey scanning
/// without COLOR_SCAN) and an `#elif` chain over an alternative group (fast, best, normal);
/// LOGGING's block leaves a loop of its own by `break`.
const ELSE_AND_ALTERNATIVES: &str = r#"#include <stdio.h>
#include <stdlib.h>
static unsigned long work(unsigned long n, unsigned long seed) {
    unsigned long x = seed;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}
int main(int argc, char **argv) {
    int pages = argc > 1 ? atoi(argv[1]) : 8;
    unsigned long digest = work(5000, 1);
    for (int page = 0; page < pages; page++) {
#if defined(FAST)
        digest ^= work(100, page);
#elif defined(BEST)
        digest ^= work(900, page);
#else
        digest ^= work(400, page);
#endif
#ifdef COLOR_SCAN
        digest ^= work(3000, page);
#else
        digest ^= work(1000, page);
#endif
#ifdef LOGGING
        for (int line = 0;; line++) {
            if (line == 3)
                break;
            digest ^= work(100, page + line);
        }
#ifdef COLOR_SCAN
        digest ^= work(50, page);
#endif
#endif
    }
    printf("%lu\n", digest);
    return 0;
}
"#;

const ELSE_AND_ALTERNATIVES_SPEC: &str = r#"name = "grey"

[[option]]
name = "logging"
build = { define = "LOGGING" }

[[option]]
name = "color_scan"
build = { define = "COLOR_SCAN" }

[[option]]
name = "speed"
mandatory = true

[[option]]
name = "fast"
parent = "speed"
build = { define = "FAST" }

[[option]]
name = "best"
parent = "speed"
build = { define = "BEST" }

[[option]]
name = "normal"
parent = "speed"

[[group]]
kind = "alternative"
parent = "speed"
members = ["fast", "best", "normal"]

[run]
args = ["{workload}"]

[measure]
repetitions = 1
metric = "instructions"

[[workload]]
name = "pages"
args = ["50"]

[build]
recipe = [["clang-19", "-O2", "{cppflags}", "-o", "grey", "grey.c"]]
output = "grey"
sources = ["grey.c"]
"#;

/// What one run with every feature cannot see on the simulator: a block that runs where a
/// feature is deselected. The `#elif` chain over alternatives is exact from one run per
/// member (each run's cost is its member's); the `#else` of COLOR_SCAN never runs with every
/// feature, so the paper's model is off exactly where COLOR_SCAN is deselected, and says so
/// (`unseen`); the constant-cost check (its runs with options deselected) makes it exact.
#[test]
fn blocks_of_a_deselected_feature_are_seen_by_the_constant_cost_check() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("simulator-else");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("grey.c"), ELSE_AND_ALTERNATIVES).unwrap();
    std::fs::write(dir.join("knobs.toml"), ELSE_AND_ALTERNATIVES_SPEC).unwrap();
    let out = dir.join("sim");
    simulate(&dir, &out);
    let sim_spec = out.join("knobs.toml");
    let truth = common::counted_truth(&sim_spec, &dir.join("truth"));
    assert_eq!(truth.len(), 12);
    let color = 1; // the option's index in the space
    let family = |mode: &str| {
        let model = dir.join(format!("{mode}.json"));
        let run = knobs()
            .args(["family", "--json", "--constant-cost", mode, "--spec"])
            .args([s(&sim_spec), "-o", s(&model)])
            .output()
            .unwrap();
        assert!(run.status.success(), "{run:?}");
        let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        (model, report)
    };

    let (paper, report) = family("assume");
    assert_eq!(report["configurations"].as_array().unwrap().len(), 3);
    let mapped = report["features"].to_string();
    assert!(mapped.contains("main:25#logging"), "{mapped}");
    let unseen = report["unseen"].to_string();
    assert!(
        unseen.contains(
            "a block the variant simulator does not trace: an #elif or #else branch: it runs where an earlier condition fails"
        ) && unseen.contains("color_scan"),
        "{unseen}"
    );
    let (with_color, without): (Vec<_>, Vec<_>) =
        truth.iter().cloned().partition(|(c, _)| c.0[color] == 1);
    let (_, worst) = common::model_errors(&sim_spec, &paper, &with_color);
    assert!(worst < 1e-9, "with color_scan: worst {worst} %");
    let (mape, _) = common::model_errors(&sim_spec, &paper, &without);
    eprintln!("the paper's model without color_scan: MAPE {mape:.3} %");
    assert!(mape > 10.0, "without color_scan: MAPE {mape} %");

    let (checked, _) = family("check");
    let (mape, worst) = common::model_errors(&sim_spec, &checked, &truth);
    eprintln!("checked: MAPE {mape} %, worst {worst} %");
    assert!(worst < 1e-9, "MAPE {mape} %, worst {worst} %");
}
