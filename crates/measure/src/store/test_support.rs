//! Runs, specs and keys the store's tests share.

use std::path::Path;

use crate::runner::{Outcome, RunResult};
use crate::spec::SystemSpec;
use crate::store::MeasurementKey;

pub(crate) fn result(wall: f64, outcome: Outcome) -> RunResult {
    RunResult {
        outcome,
        wall,
        user: wall / 2.0,
        system_cpu_s: 0.01,
        cpu_wait: 0.0,
        max_rss_kib: 1000,
        instructions: None,
        stderr_tail: String::new(),
        escaped: Vec::new(),
    }
}

pub(crate) fn spec() -> SystemSpec {
    SystemSpec::parse(
            "name = \"demo\"\n[run]\nprogram = \"true\"\nargs = [\"{options}\"]\n[[option]]\nname = \"a\"\non = [\"-a\"]\n[[option]]\nname = \"n\"\nvalues = [1, 2]\narg = [\"-n{value}\"]\n",
            Path::new("/tmp/demo.toml"),
        )
        .unwrap()
}

pub(crate) fn key(spec: &SystemSpec, configuration: &str) -> MeasurementKey {
    MeasurementKey {
        inputs: None,
        commit: String::new(),
        system: spec.name.clone(),
        variant: String::new(),
        spec_hash: spec.hash.clone(),
        workload: "real".into(),
        configuration: configuration.into(),
    }
}
