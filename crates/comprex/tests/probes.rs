//! Comprex's probe selection and overhead correction on a tiny real C program (clang-19, real
//! runs): a hot, tiny method gets no profiler probe, its decisions refine its caller's
//! partition and its time lands in its caller; a rarely called one keeps its probe; the §V.A
//! overhead correction is applied to the model and recorded in it.
//!
//! Every build links the profiler's test clock, and the program's work is counted
//! (`knobs_spend(ns)`, `test_clock::SPEND_ON_THE_TEST_CLOCK`), not done: the calibration's
//! times per call and the models are exact, however fast or busy the machine is. So there is
//! no overhead to measure (`overhead_correction` says so); how the probe selection and the
//! correction do with the real clocks on real hardware is the benchmark runner's business
//! (`cargo run --release -p bench`: its `comprex`, `comprex-uncorrected` and
//! `comprex-all-probes` rows).

mod test_clock;

use std::path::Path;
use std::process::Command;

use comprex::pipeline::{OverheadCorrection, OverheadFit, ProbeSettings};
use comprex::{Granularity, ModelSettings};
use measure::{Store, SystemSpec};

/// `step` and `mix` are called once per element and cost a few ns each (step 8, or 16 with
/// SHIFT; mix 12); `step` decides on SHIFT, `mix` on its argument only. `churn` loops over
/// the elements (twice as many with BIG) and costs nothing itself; `slow` is called ten
/// times and costs 10 ns per iteration, n/10 iterations a call.
const PROGRAM: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static int name
OPTION(BIG);
OPTION(SHIFT);
volatile unsigned sink;

void knobs_spend(uint64_t ns);

static unsigned step(unsigned x) {
    knobs_spend(8u + 8u * (unsigned)SHIFT);
    if (x & (1u << SHIFT))
        return x * 3u + 1u;
    return x >> 1;
}

static unsigned mix(unsigned x) {
    knobs_spend(12);
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
    for (unsigned i = 0; i < n; i++) {
        knobs_spend(10);
        s = s * 2654435761u + i;
    }
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

# The CPU clock for the measurements (the calibration samples the wall clock); on the test
# clock both count the program's `knobs_spend` calls.
[measure]
repetitions = 3
warmup = 0
metric = "cpu"

[[workload]]
name = "real"
env = { SCALE = "1000000", KNOBS_PROFILE_CLOCK = "cpu" }

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
    let spend = test_clock::object(dir, "spend", test_clock::SPEND_ON_THE_TEST_CLOCK);
    std::fs::write(dir.join("knobs.toml"), test_clock::link_into(SPEC, &spend)).unwrap();
    // The program as the spec runs it: no profiler, so `knobs_spend` does nothing.
    let status = Command::new("clang-19")
        .args(["-O2", "-o"])
        .arg(dir.join("native"))
        .arg(dir.join("main.c"))
        .arg(&spend)
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
    let settings = test_clock::test_clock_settings(dir.path().join("work"));
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

    // Calibration: step and mix are entered 400 000 times per run for a few ns each (at most
    // 28 ns between them per element, however the test clock's samples fall); churn once,
    // slow ten times.
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
    // Exactly the counted cost: in the four configurations, 400 000 elements (800 000 with
    // BIG) at 20 ns (28 with SHIFT) are whole 20 µs periods, all charged to step or mix,
    // which are entered once per element each: 24 ns per element on average between them.
    assert_eq!(explored.exploration.configurations.len(), 4);
    let per_element: f64 = selection.dropped.iter().map(|d| d.ns_per_entry).sum();
    assert!((per_element - 24.0).abs() < 1e-6, "{selection:?}");
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

    // §V.A: on the test clock nothing runs and there is no correction (a probe costs the
    // counted work nothing; real time would bring the machine's speed and load back).
    let mut heard = 0;
    let none = comprex::pipeline::overhead_correction(
        &spec,
        &settings,
        real,
        &profiled,
        &configurations,
        2,
        1,
        OverheadFit::Ratio,
        &mut |_, _, _| heard += 1,
    )
    .unwrap();
    let why = none.unwrap_err();
    assert!(why.contains("test clock"), "{why}");
    assert_eq!(heard, 0);
    // A correction (as `overhead_correction` fits one on real hardware) is applied to the
    // model and recorded in it.
    let chosen = comprex::pipeline::choose(&configurations, 2, 1);
    assert_eq!(chosen.len(), 2);
    assert!(chosen.iter().all(|c| configurations.contains(c)));
    let correction = OverheadCorrection {
        fit: OverheadFit::Line,
        line: runtime::profiler::Linear {
            slope: 1.25,
            intercept: 0.002,
        },
        pairs: chosen
            .iter()
            .map(|c| (spec.space.format_configuration(c), 0.1, 0.078))
            .collect(),
        per_configuration: Default::default(),
    };
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
    assert_eq!(stored["fit"], "line");
    assert_eq!(stored["slope"].as_f64(), Some(1.25));
    assert_eq!(stored["intercept"].as_f64(), Some(0.002));
    assert_eq!(stored["configurations"].as_array().unwrap().len(), 2);
    assert!(!plain.file.provenance.contains_key("overhead_correction"));
    assert!(
        !plain
            .file
            .provenance
            .contains_key("base_includes_time_outside_the_profile")
    );
    let unprobed = &corrected.file.provenance["unprobed_methods"];
    assert_eq!(unprobed["step"][0], "churn");

    // Exactly the counted work (1 ms samples): churn costs nothing itself, so all of its
    // time is step's and mix's, 20 ns per element (28 with SHIFT), 10⁶ elements (2·10⁶ with
    // BIG); slow's 10 calls cost n/10 · 10 ns each; main and the base took no sample.
    let options = spec.space.names();
    let plain_bound = plain.file.bind(&options).unwrap();
    let corrected_bound = corrected.file.bind(&options).unwrap();
    let region = |id: &str| {
        let r = plain.file.regions.iter().find(|r| r.id == id).unwrap();
        model::ModelFile::new(r.terms.clone())
            .bind(&options)
            .unwrap()
    };
    let (churn, slow, main) = (region("churn"), region("slow"), region("main"));
    let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
    for bits in 0..4u32 {
        let c: Vec<f64> = (0..2).map(|k| f64::from(bits >> k & 1)).collect();
        let (big, shift) = (c[0], c[1]);
        let elements = 1e6 * (1.0 + big);
        let churn_s = elements * (20.0 + 8.0 * shift) * 1e-9;
        let slow_s = elements * 10.0 * 1e-9;
        assert!(close(churn.predict(&c), churn_s), "{bits:02b}: churn");
        assert!(close(slow.predict(&c), slow_s), "{bits:02b}: slow");
        assert!(close(main.predict(&c), 0.0), "{bits:02b}: main");
        let p = plain_bound.predict(&c);
        assert!(close(p, churn_s + slow_s), "{bits:02b}: {p} s");
        let q = corrected_bound.predict(&c);
        assert!(close(q, (p - 0.002) / 1.25), "{bits:02b}: {p} → {q}");
    }
}
