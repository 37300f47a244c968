//! `knobs comprex` as a new user meets it: a spec with no analysis workload, a run limit too
//! small for the space, and the partitions it prints. Nothing here depends on the
//! machine's speed: only the output's wording and structure are checked.

mod common;

use std::path::Path;

use common::{c_subject, knobs, succeeds};

/// HEAVY and ITER meet in the loop: the region's partition has a subspace per pair.
const MAIN: &str = r#"
#include <stdlib.h>
#include <string.h>
__attribute__((annotate("knobs:option=HEAVY"))) int HEAVY;
__attribute__((annotate("knobs:option=ITER"))) int ITER = 1;
volatile long sink;
static void work(long n) {
    for (long i = 0; i < n; i++) sink += i;
}
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--heavy")) HEAVY = 1;
        if (!strncmp(argv[k], "--iter=", 7)) ITER = atoi(argv[k] + 7);
    }
    if (HEAVY && ITER == 4) work(50000);
    for (int i = 0; i < ITER; i++) work(HEAVY ? 20000 : 10000);
    return 0;
}
"#;

/// One workload, of no purpose: the taint runs use it.
const SPEC: &str = r#"
name = "loops"
[build]
sources = ["main.c"]
[run]
program = "./loops"
args = ["{options}"]
timeout = 60
[measure]
repetitions = 1
[[workload]]
name = "real"
[[option]]
name = "HEAVY"
on = ["--heavy"]
[[option]]
name = "ITER"
values = [1, 2, 4, 8]
arg = ["--iter={value}"]
"#;

fn comprex(spec: &Path, extra: &[&str]) -> std::process::Output {
    knobs()
        .args(["comprex", "--overhead-correction", "0", "--spec"])
        .arg(spec)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn comprex_says_what_it_taints_with_names_its_limit_and_prints_short_partitions() {
    let (_dir, spec) = c_subject(MAIN, SPEC);
    // Too few runs: the error names the flag and its value, in one line.
    let out = comprex(&spec, &["--max-runs", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("knobs: error: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(error.contains("gave up after 2 taint runs"), "{error}");
    assert!(error.contains("--max-runs 2"), "{error}");

    let ran = succeeds(
        knobs()
            .args(["comprex", "--overhead-correction", "0", "--spec"])
            .arg(&spec),
    );
    let stderr = ran.stderr;
    // Which workload the taint runs use, and how to give a smaller one.
    assert!(
        stderr.contains("the taint runs use the measured workload `real`"),
        "{stderr}"
    );
    assert!(stderr.contains("purpose = \"analysis\""), "{stderr}");
    assert!(stderr.contains("--analysis-workload"), "{stderr}");
    // Progress is a start line and a summary, not a line per taint run.
    assert!(
        !stderr.lines().any(|l| l.starts_with("taint run")),
        "{stderr}"
    );
    assert!(stderr.contains("(at most 256, --max-runs)"), "{stderr}");
    // A value indicator is not followed by the values it excludes.
    let partitions: Vec<&str> = stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("region "))
        .collect();
    assert!(
        partitions.iter().any(|l| l.contains("HEAVY ∧ ITER=4")),
        "{partitions:?}"
    );
    for line in &partitions {
        for cube in line.split(['|', '∨']) {
            let valued = cube.contains("ITER=");
            assert!(!(valued && cube.contains("ITER≠")), "{line}");
        }
    }
}
