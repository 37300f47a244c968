//! Comprex's probe selection and overhead correction on a tiny real C program (clang-19, real
//! runs): a hot, tiny method gets no profiler probe, its decisions refine its caller's
//! partition and its time lands in its caller; a rarely called one keeps its probe; the §V.A
//! overhead correction is fitted from native and profiled runs, applied to the model and
//! recorded in it.

use std::path::Path;
use std::process::Command;

use comprex::pipeline::{OverheadFit, ProbeSettings};
use comprex::{Granularity, ModelSettings};
use measure::{Store, SystemSpec};

/// `step` and `mix` are called once per element (a few ns each); `step` decides on SHIFT,
/// `mix` on its argument only. `churn` loops over the elements (twice as many with BIG);
/// `slow` is called ten times and runs long each time.
const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static int name
OPTION(BIG);
OPTION(SHIFT);
volatile unsigned sink;

static unsigned step(unsigned x) {
    if (x & (1u << SHIFT))
        return x * 3u + 1u;
    return x >> 1;
}

static unsigned mix(unsigned x) {
    if (x > 1000u)
        return x - 7u;
    return x + 11u;
}

static unsigned churn(unsigned n) {
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++)
        s += mix(step(i ^ s));
    return s;
}

static unsigned slow(unsigned n) {
    unsigned s = 1;
    for (unsigned i = 0; i < n; i++)
        s = s * 2654435761u + i;
    return s;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-BIG")) BIG = 1;
        if (!strcmp(argv[i], "-SHIFT")) SHIFT = 1;
    }
    const char *scale = getenv("SCALE");
    unsigned n = scale ? (unsigned)atoi(scale) : 1000u;
    if (BIG)
        n *= 2u;
    sink = churn(n);
    for (int k = 0; k < 10; k++)
        sink += slow(n / 10u);
    return 0;
}
"#;

const SPEC: &str = r#"
name = "probes"

[build]
sources = ["main.c"]

[run]
program = "./native"
args = ["{options}"]
timeout = 60

# CPU time, sampled and measured: a test must not depend on how busy the machine is.
[measure]
repetitions = 3
warmup = 0
metric = "cpu"

[[workload]]
name = "real"
env = { SCALE = "30000000", KNOBS_PROFILE_CLOCK = "cpu" }

[[workload]]
name = "quick"
purpose = "analysis"
env = { SCALE = "400000" }

[[option]]
name = "BIG"
on = ["-BIG"]

[[option]]
name = "SHIFT"
on = ["-SHIFT"]
"#;

fn setup(dir: &Path) -> SystemSpec {
    std::fs::write(dir.join("main.c"), PROGRAM).unwrap();
    std::fs::write(dir.join("knobs.toml"), SPEC).unwrap();
    let status = Command::new("clang-19")
        .args(["-O2", "-o"])
        .arg(dir.join("native"))
        .arg(dir.join("main.c"))
        .status()
        .unwrap();
    assert!(status.success());
    SystemSpec::load(&dir.join("knobs.toml")).unwrap()
}

fn names(regions: &[comprex::RegionPartition]) -> Vec<&str> {
    regions.iter().map(|r| r.id.as_str()).collect()
}

#[test]
fn hot_tiny_methods_get_no_probe_and_the_overhead_correction_is_applied_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let spec = setup(dir.path());
    let settings = instrumented::Settings::new(dir.path().join("work"));
    let quick = spec.analysis_workload().unwrap();
    let real = spec.workload(None).unwrap();

    let mut explored = comprex::pipeline::explore(
        &spec,
        &settings,
        quick,
        Granularity::Method,
        16,
        &mut |_, _| {},
    )
    .unwrap();
    let regions = explored.exploration.regions(Granularity::Method);
    assert_eq!(names(regions), ["churn", "main", "mix", "slow", "step"]);
    let churn = explored
        .exploration
        .region(Granularity::Method, "churn")
        .unwrap();
    assert_eq!(churn.texts(), ["BIG", "¬BIG"], "churn decides on BIG only");

    // Calibration: step and mix are entered 400 000 times per run for a few ns each; churn
    // once, slow ten times.
    let selection = comprex::pipeline::select_probes(
        &spec,
        &settings,
        quick,
        &explored,
        &ProbeSettings::default(),
    )
    .unwrap();
    assert_eq!(
        selection.calibration_runs,
        explored.exploration.configurations.len()
    );
    let dropped: Vec<(&str, &[String])> = selection
        .dropped
        .iter()
        .map(|d| (d.method.as_str(), d.into.as_slice()))
        .collect();
    assert_eq!(
        dropped,
        [
            ("mix", &["churn".to_string()][..]),
            ("step", &["churn".to_string()][..])
        ],
        "{selection:?}"
    );
    for d in &selection.dropped {
        assert!(d.entries >= 400_000, "{d:?}");
        assert!(d.ns_per_entry < 100.0, "{d:?}");
    }
    assert_eq!(selection.probed, ["churn", "main", "slow"]);
    assert!(selection.kept.is_empty());
    // The calibration is cached: the same build chooses the same probes without running.
    let again = comprex::pipeline::select_probes(
        &spec,
        &settings,
        quick,
        &explored,
        &ProbeSettings::default(),
    )
    .unwrap();
    assert_eq!(again.calibration_runs, 0);
    assert_eq!(again.probed, selection.probed);

    // step's decision on SHIFT now refines churn, whose time includes step's.
    let new_runs = comprex::pipeline::fold(
        &spec,
        quick,
        &mut explored,
        selection.fold(),
        16,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(
        new_runs, 0,
        "the 4 explored configurations cover the finer partition"
    );
    assert_eq!(
        names(explored.exploration.regions(Granularity::Method)),
        ["churn", "main", "slow"]
    );
    let churn = explored
        .exploration
        .region(Granularity::Method, "churn")
        .unwrap();
    assert_eq!(
        churn.texts(),
        [
            "BIG ∧ SHIFT",
            "BIG ∧ ¬SHIFT",
            "¬BIG ∧ SHIFT",
            "¬BIG ∧ ¬SHIFT"
        ]
    );

    let profiled = comprex::pipeline::instrument_methods(&spec, &settings, &explored).unwrap();
    let probed: Vec<&str> = profiled.methods.values().map(String::as_str).collect();
    assert_eq!(probed, ["churn", "main", "slow"], "no probe on step or mix");

    let store = Store::open(&dir.path().join("knobs.db")).unwrap();
    let configurations = explored.exploration.configurations.clone();
    let report = comprex::pipeline::measure_configurations(
        &store,
        &settings,
        &spec,
        real,
        &profiled,
        &configurations,
        &mut |_| {},
    )
    .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);

    // §V.A: two configurations natively and profiled, interleaved; the model corrected by
    // the fit.
    let mut heard = 0;
    let correction = comprex::pipeline::overhead_correction(
        &spec,
        &settings,
        real,
        &profiled,
        &configurations,
        2,
        1,
        OverheadFit::Ratio,
        &mut |_, p, n| {
            assert!(p > 0.0 && n > 0.0);
            heard += 1;
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(heard, 2);
    assert_eq!(correction.pairs.len(), 2);
    assert_eq!(correction.line.intercept, 0.0);
    // The profiled build is the native one plus three probes: same speed within noise.
    assert!(
        (0.5..2.0).contains(&correction.line.slope),
        "{correction:?}"
    );
    let model_settings = ModelSettings {
        trivial_below: 0.0,
        ..ModelSettings::default()
    };
    let plain =
        comprex::pipeline::build_model(&store, &spec, real, &explored, &profiled, &model_settings)
            .unwrap();
    let corrected = comprex::pipeline::build_model_corrected(
        &store,
        &spec,
        real,
        &explored,
        &profiled,
        &model_settings,
        Some(&correction),
    )
    .unwrap();
    let stored = &corrected.file.provenance["overhead_correction"];
    assert_eq!(stored["fit"], "ratio");
    assert_eq!(stored["slope"].as_f64(), Some(correction.line.slope));
    assert_eq!(stored["configurations"].as_array().unwrap().len(), 2);
    assert!(!plain.file.provenance.contains_key("overhead_correction"));
    let unprobed = &corrected.file.provenance["unprobed_methods"];
    assert_eq!(unprobed["step"][0], "churn");

    let options = spec.space.names();
    let plain_bound = plain.file.bind(&options).unwrap();
    let corrected_bound = corrected.file.bind(&options).unwrap();
    let (a, b) = (correction.line.slope, correction.line.intercept);
    for bits in 0..4u32 {
        let c: Vec<f64> = (0..2).map(|k| f64::from(bits >> k & 1)).collect();
        let p = plain_bound.predict(&c);
        let q = corrected_bound.predict(&c);
        assert!(
            (q - (p - b) / a).abs() < 1e-9 * p.max(1.0),
            "{bits:02b}: {p} → {q}"
        );
    }

    // The time of step and mix is charged to churn: churn is nearly all of the run, and
    // doubling the elements (BIG) about doubles it.
    let churn_model = plain.file.regions.iter().find(|r| r.id == "churn").unwrap();
    let churn_bound = model::ModelFile::new(churn_model.terms.clone())
        .bind(&options)
        .unwrap();
    for shift in [0.0, 1.0] {
        let small = churn_bound.predict(&[0.0, shift]);
        let big = churn_bound.predict(&[1.0, shift]);
        let total = plain_bound.predict(&[0.0, shift]);
        assert!(small > 0.5 * total, "churn {small} of {total} s");
        assert!(
            (1.3..3.0).contains(&(big / small)),
            "SHIFT={shift}: churn {small} s, with BIG {big} s"
        );
    }
}
