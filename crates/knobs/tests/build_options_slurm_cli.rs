//! `knobs measure --backend slurm` of a spec with build options, on the real one-node Slurm
//! cluster of `scripts/slurm-local.sh`: knobs builds each set of build-option values here,
//! into `.knobs-builds/` beside the spec, before anything is submitted, and the array tasks
//! run those builds. The built program appends the path it was started as and the defines
//! it was built with to a file: each stored run is one line naming its own build.

mod common;

use std::path::Path;

use common::knobs_ok;

#[test]
fn the_nodes_run_the_builds_of_the_build_options_made_on_the_submit_host() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let ran_by = dir.path().join("ran-by");
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/run.sh"),
        format!("#!/bin/sh\necho \"$0 DEFINES\" >> '{}'\n", ran_by.display()),
    )
    .unwrap();
    let spec = common::write_spec(
        dir.path(),
        r#"name = "variants"
[build]
dir = "src"
recipe = [["sh", "-c", "sed \"s/DEFINES/$CPPFLAGS/\" run.sh > prog && chmod +x prog"]]
output = "prog"
[run]
args = ["{options}"]
[measure]
repetitions = 1
warmup = 0
[slurm]
spool = "spool"
[[workload]]
name = "w"
[[option]]
name = "fast"
build = { define = "FAST" }
[[option]]
name = "a"
on = ["-a"]
"#,
    );
    let stderr = knobs_ok(&["measure", "--backend", "slurm", "--spec"], &spec).stderr;
    let built = stderr.find("build of -DFAST: built").expect("built here");
    let submitted = stderr.find("submitted Slurm job").expect("submitted");
    assert!(built < submitted, "{stderr}");
    let runs = common::stored_runs(&dir.path().join("knobs.db"), &measure::Selection::default());
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(
        runs.iter().all(|r| r.is_ok() && r.source.is_some()),
        "{runs:?}"
    );
    let builds = dir.path().join(".knobs-builds").canonicalize().unwrap();
    let lines: Vec<String> = std::fs::read_to_string(&ran_by)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    for line in &lines {
        let (program, defines) = line.split_once(' ').unwrap();
        let program = Path::new(program).canonicalize().unwrap();
        assert!(program.starts_with(&builds), "{line}");
        assert!(defines.is_empty() || defines == "-DFAST", "{line}");
    }
    assert_eq!(lines.iter().filter(|l| l.ends_with(" -DFAST")).count(), 2);
}
