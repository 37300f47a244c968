//! The spec the spec's tests share.

use std::path::Path;

use crate::Error;
use crate::spec::SystemSpec;

pub(crate) const SPEC: &str = r#"
name = "demo"
constraints = ["fast => !level=9"]

[run]
program = "/bin/echo"
args = ["-n", "{options}", "--", "{workload}"]
env = { LC_ALL = "C" }
timeout = 5

[measure]
repetitions = 2
warmup = 1

[[workload]]
name = "real"
args = ["big.txt"]

[[workload]]
name = "small"
purpose = "analysis"
args = ["small.txt"]

[[option]]
name = "fast"
on = ["--fast"]
off = ["--best"]

[[option]]
name = "level"
values = [1, 5, 9]
arg = ["-{value}"]
env = { LEVEL = "{value}" }
"#;

pub(crate) fn parse(text: &str) -> Result<SystemSpec, Error> {
    SystemSpec::parse(text, Path::new("/tmp/knobs.toml"))
}
