//! A configuration's region times are read from its fastest half of runs, whole runs, so
//! that the regions still add up to what those runs took: runs recorded into a real store
//! with region times chosen here, nothing measured.

use measure::runner::{Outcome, RunResult};
use measure::spec::SystemSpec;
use measure::store::{MeasurementKey, RegionMeasurement, Store};

const SPEC: &str = r#"
name = "regions"
[run]
program = "./p"
[[workload]]
name = "w"
"#;

fn region(name: &str, seconds: f64) -> RegionMeasurement {
    RegionMeasurement {
        region: name.into(),
        seconds,
        entries: 1,
        cpu_seconds: None,
    }
}

#[test]
fn region_times_are_the_fastest_half_of_whole_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SystemSpec::parse(SPEC, &dir.path().join("knobs.toml")).unwrap();
    let workload = spec.workloads[0].clone();
    let store = Store::open(&dir.path().join("knobs.db")).unwrap();
    store.register_spec(&spec).unwrap();
    let key = MeasurementKey {
        system: spec.name.clone(),
        variant: "test".into(),
        spec_hash: spec.hash.clone(),
        workload: workload.name.clone(),
        configuration: String::new(),
        commit: String::new(),
        inputs: None,
    };
    // Four runs (base, r0) whose slow region differs. Read region by region, the fastest
    // half would be base 1.05 and r0 1.05: 2.1 s, faster than any run was. By whole runs
    // (totals 4.0, 3.0, 4.6, 4.1): the runs of 3.0 and 4.0 s, base 1.5 and r0 2.0.
    let runs = [(1.0, 3.0), (2.0, 1.0), (1.1, 3.5), (3.0, 1.1)];
    for (i, (base, r0)) in runs.into_iter().enumerate() {
        let result = RunResult {
            outcome: Outcome::Ok,
            wall: base + r0,
            user: base + r0,
            system_cpu_s: 0.0,
            cpu_wait: 0.0,
            max_rss_kib: 1,
            instructions: None,
            stderr_tail: String::new(),
            escaped: Vec::new(),
        };
        store
            .record(
                &key,
                i as f64,
                &result,
                &[region("base", base), region("r0", r0)],
            )
            .unwrap();
    }
    let times =
        instrumented::region_times_per_configuration(&store, &spec, &workload, "test").unwrap();
    let read = &times[""];
    assert!((read["base"] - 1.5).abs() < 1e-9, "{read:?}");
    assert!((read["r0"] - 2.0).abs() < 1e-9, "{read:?}");
}
