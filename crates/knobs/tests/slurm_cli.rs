//! `knobs measure --backend slurm` against a real one-node Slurm cluster on this machine
//! (`scripts/slurm-local.sh start`, which these tests run first): measuring end to end, a task
//! cancelled with `scancel` mid-run, a knobs killed while it waits, instructions counted on
//! the nodes, a commit's build made here and run there, and `knobs changepoints detect` across
//! a history. The white-box approaches on the cluster are `slurm_approaches.rs`.
//!
//! The measured program waits for a gate file before it ends, so each test decides when the
//! runs finish: no test depends on how fast the machine is.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use common::{knobs, knobs_ok, submitted, wait_until};
use measure::store::StoredRun;
use measure::{Selection, Store};

/// `knobs measure` on the cluster, the spec's path to follow.
const MEASURE_ON_SLURM: &[&str] = &["measure", "--backend", "slurm", "--spec"];
/// `knobs measure` of the `main` commit's build on the cluster, the spec's path to follow.
const MEASURE_COMMIT_ON_SLURM: &[&str] = &[
    "measure",
    "--commit",
    "main",
    "--backend",
    "slurm",
    "--spec",
];

/// Four configurations of `sh`, each run waiting for `gate` to exist; one run each, no
/// reference, two array tasks a round.
fn gated_spec(dir: &Path, gate: &Path) -> PathBuf {
    common::write_spec(
        dir,
        &format!(
            r#"name = "gated"
[run]
program = "sh"
args = ["-c", "while [ ! -e {gate} ]; do sleep 0.02; done", "{{options}}"]
timeout = 120
[measure]
repetitions = 1
warmup = 0
reference = "none"
[slurm]
tasks = 2
spool = "spool"
[[workload]]
name = "w"
[[option]]
name = "a"
on = ["A"]
[[option]]
name = "b"
on = ["B"]
"#,
            gate = gate.display()
        ),
    )
}

fn squeue_state(job: &str) -> String {
    let out = StdCommand::new("squeue")
        .args(["-h", "-j", job, "-o", "%T"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The configurations an array task was given (`work-N.json`).
fn share(dir: &Path, task: u32) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(format!("work-{task}.json"))).unwrap();
    let work: serde_json::Value = serde_json::from_str(&text).unwrap();
    work["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["configuration"].as_str().unwrap().to_string())
        .collect()
}

fn runs(store: &Path) -> Vec<StoredRun> {
    common::stored_runs(store, &Selection::default())
}

fn by_configuration(runs: &[StoredRun]) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for r in runs {
        assert!(r.is_ok(), "{r:?}");
        *by.entry(r.configuration.clone()).or_default() += 1;
    }
    by
}

fn every_configuration(n: usize) -> BTreeMap<String, usize> {
    ["", "a", "a,b", "b"]
        .iter()
        .map(|c| (c.to_string(), n))
        .collect()
}

#[test]
fn a_task_cancelled_mid_run_leaves_its_configurations_pending_and_they_are_measured_again() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let spec = gated_spec(dir.path(), &gate);
    let spool = dir.path().join("spool");
    let child = common::spawn_knobs(MEASURE_ON_SLURM, &spec);
    let (round_dir, job) = wait_until("the first round submitted", || submitted(&spool).pop());
    // Both tasks are running, their first runs waiting at the gate: cancel task 0.
    wait_until("the tasks running", || {
        (squeue_state(&format!("{job}_0")) == "RUNNING"
            && squeue_state(&format!("{job}_1")) == "RUNNING")
            .then_some(())
    });
    let cancelled = share(&round_dir, 0);
    let kept = share(&round_dir, 1);
    let scancel = StdCommand::new("scancel")
        .arg(format!("{job}_0"))
        .status()
        .unwrap();
    assert!(scancel.success());
    wait_until("task 0 gone", || {
        squeue_state(&format!("{job}_0")).is_empty().then_some(())
    });
    std::fs::write(&gate, "").unwrap();
    let stderr = common::finish(child).stderr;
    assert!(
        stderr.contains("task 0 of Slurm job") && stderr.contains("pending again"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("submitted Slurm job").count(),
        2,
        "a second round for the cancelled share: {stderr}"
    );
    // Every configuration once: the cancelled ones in the second round, the others in the first.
    let runs = runs(&dir.path().join("knobs.db"));
    assert_eq!(by_configuration(&runs), every_configuration(1));
    let first_round = runs.iter().map(|r| r.round.unwrap()).min().unwrap();
    for r in &runs {
        let expected = if kept.contains(&r.configuration) {
            first_round
        } else {
            assert!(cancelled.contains(&r.configuration), "{r:?}");
            first_round + 1
        };
        assert_eq!(r.round, Some(expected), "{r:?}");
        assert!(!r.node.is_empty() && r.source.is_some(), "{r:?}");
    }
    // The cancelled task's directory stays for its log; the finished round's is gone.
    assert!(round_dir.join("finished.json").is_file());
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 1);
}

#[test]
fn a_knobs_killed_while_waiting_resumes_its_job_without_submitting_it_again() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let spec = gated_spec(dir.path(), &gate);
    let spool = dir.path().join("spool");
    let store = dir.path().join("knobs.db");
    let mut first = common::spawn_knobs(MEASURE_ON_SLURM, &spec);
    let (_, job) = wait_until("the first round submitted", || submitted(&spool).pop());
    first.kill().unwrap(); // SIGKILL, while it waits
    first.wait().unwrap();
    assert!(
        runs(&store).is_empty(),
        "nothing ran yet: the runs wait at the gate"
    );
    // Started again, knobs finds the job; the runs end when the gate opens.
    let second = common::spawn_knobs(MEASURE_ON_SLURM, &spec);
    std::fs::write(&gate, "").unwrap();
    let stderr = common::finish(second).stderr;
    assert!(
        stderr.contains(&format!("found round 1 again (Slurm job {job}")),
        "{stderr}"
    );
    assert!(!stderr.contains("submitted Slurm job"), "{stderr}");
    let after = runs(&store);
    assert_eq!(by_configuration(&after), every_configuration(1));
    assert!(after.iter().all(|r| r.round == Some(1)), "{after:?}");
    // Nothing left to do: a third run submits nothing; more repetitions submit one round,
    // which the claims of the killed knobs do not block.
    let third = knobs_ok(MEASURE_ON_SLURM, &spec).stderr;
    assert!(!third.contains("submitted"), "{third}");
    assert!(
        third.contains("(4 already in the store), 0 new runs"),
        "{third}"
    );
    let fourth = knobs_ok(
        &[
            "measure",
            "--backend",
            "slurm",
            "--repetitions",
            "2",
            "--spec",
        ],
        &spec,
    )
    .stderr;
    assert_eq!(fourth.matches("submitted Slurm job").count(), 1, "{fourth}");
    assert_eq!(by_configuration(&runs(&store)), every_configuration(2));
}

#[test]
fn bad_slurm_settings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let spec = gated_spec(dir.path(), &dir.path().join("gate"));
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text.replace("tasks = 2", "tasks = 2\nnodes = 3")).unwrap();
    let out = knobs().args(MEASURE_ON_SLURM).arg(&spec).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unknown field `nodes`"), "{stderr}");
    std::fs::write(&spec, text).unwrap();
    let out = knobs()
        .args(["measure", "--backend", "slurm", "--tasks", "0", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("at least 1"), "{stderr}");
}

#[test]
fn a_refused_submission_is_one_line_and_holds_nothing_back() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    std::fs::write(&gate, "").unwrap();
    let spec = gated_spec(dir.path(), &gate);
    let out = knobs()
        .args([
            "measure",
            "--backend",
            "slurm",
            "--partition",
            "nosuch",
            "--spec",
        ])
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("knobs: error: `sbatch` failed") && last.contains("partition"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("spool")).unwrap().count(),
        0
    );
    // The configurations it claimed are free again: the next attempt measures them all.
    knobs_ok(MEASURE_ON_SLURM, &spec);
    assert_eq!(
        by_configuration(&runs(&dir.path().join("knobs.db"))),
        every_configuration(1)
    );
}

/// `metric = "instructions"` on the cluster: each task counts its runs with the counter knobs
/// chose here, on its node; a count is the same in every run, and more work counts more.
#[test]
fn instructions_are_counted_on_the_nodes() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let spec = common::write_spec(
        dir.path(),
        r#"name = "counted"
[run]
program = "sh"
args = ["-c", "i=0; while [ $i -lt $0 ]; do i=$((i+1)); done", "{options}"]
[measure]
repetitions = 2
warmup = 0
metric = "instructions"
[slurm]
tasks = 2
spool = "spool"
[[workload]]
name = "w"
[[option]]
name = "long"
on = ["3000"]
off = ["1000"]
"#,
    );
    let stderr = knobs_ok(MEASURE_ON_SLURM, &spec).stderr;
    assert!(stderr.contains("submitted Slurm job"), "{stderr}");
    let runs = runs(&dir.path().join("knobs.db"));
    assert_eq!(
        by_configuration(&runs).values().sum::<usize>(),
        4,
        "{runs:?}"
    );
    let count = |config: &str| -> Vec<i64> {
        runs.iter()
            .filter(|r| r.configuration == config)
            .inspect(|r| assert!(r.source.is_some(), "{r:?}"))
            .map(|r| r.instructions.expect("counted"))
            .collect()
    };
    let (short, long) = (count(""), count("long"));
    assert_eq!((short[0], long[0]), (short[1], long[1]));
    assert!(long[0] > 2 * short[0], "{long:?} against {short:?}");
}

/// `knobs measure --commit` on the cluster: knobs builds the commit here, into `.knobs-builds/`
/// beside the spec (before anything is submitted), and the array tasks run that build. The
/// built program appends the path it was started as to a file: every stored run is one line
/// naming the build in `.knobs-builds/`.
#[test]
fn the_nodes_run_the_build_of_a_commit_made_on_the_submit_host() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let ran_by = dir.path().join("ran-by");
    let repo = common::new_repo(dir.path());
    common::commit_file(
        &repo,
        "run.sh",
        &format!("#!/bin/sh\necho \"$0\" >> '{}'\n", ran_by.display()),
        "the program",
    );
    let spec = common::write_spec(
        dir.path(),
        &common::history_spec(
            r#"[["sh", "-c", "cp run.sh prog && chmod +x prog"]]"#,
            r#"[measure]
repetitions = 1
warmup = 0
[slurm]
spool = "spool"
[[workload]]
name = "w"
[[option]]
name = "a"
on = ["-a"]
"#,
        ),
    );
    let stderr = knobs_ok(MEASURE_COMMIT_ON_SLURM, &spec).stderr;
    let building = stderr.find("building commit").expect("built here");
    assert!(
        building < stderr.find("submitted Slurm job").unwrap(),
        "{stderr}"
    );
    let commit = common::git(&repo, &["rev-parse", "main"]);
    let at_commit = Selection {
        commit: commit.trim().to_string(),
        ..Selection::default()
    };
    let runs = common::stored_runs(&dir.path().join("knobs.db"), &at_commit);
    assert_eq!(runs.len(), 2, "{runs:?}");
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
    assert_eq!(lines.len(), runs.len(), "{lines:?}");
    for line in &lines {
        let program = Path::new(line).canonicalize().unwrap();
        assert!(
            program.starts_with(&builds) && program.ends_with("prog"),
            "{line} is not the build in {}",
            builds.display()
        );
    }
    // The cache's build is found again: measuring more builds nothing.
    let again = knobs_ok(
        &[
            "measure",
            "--commit",
            "main",
            "--backend",
            "slurm",
            "--repetitions",
            "2",
            "--spec",
        ],
        &spec,
    )
    .stderr;
    assert!(!again.contains("building commit"), "{again}");
    assert_eq!(std::fs::read_to_string(&ran_by).unwrap().lines().count(), 4);
}

/// `knobs history build --backend slurm`: the commits are built by array tasks into the
/// cache beside the spec, a commit that does not compile recorded failed with its log as
/// locally; a second command submits nothing, and `knobs measure --commit` uses the builds.
#[test]
fn history_builds_are_array_tasks_into_the_shared_cache() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let repo = common::new_repo(dir.path());
    for (text, message) in [
        ("int main(void) { return 0; }\n", "builds"),
        ("int main(void) { return undeclared; }\n", "broken"),
        ("int main(void) { return 0; } /* again */\n", "fixed"),
    ] {
        common::commit_file(&repo, "prog.c", text, message);
    }
    let spec = common::write_spec(
        dir.path(),
        &common::history_spec(
            common::CC_BUILD,
            r#"[measure]
repetitions = 1
warmup = 0
[[workload]]
name = "w"
[[option]]
name = "a"
on = ["1"]
"#,
        ),
    );
    let build = || {
        knobs_ok(
            &[
                "history",
                "build",
                "--all",
                "--backend",
                "slurm",
                "--tasks",
                "2",
            ],
            &spec,
        )
        .stderr
    };
    let first = build();
    assert!(
        first.contains("building 3 commits as 2 Slurm array tasks"),
        "{first}"
    );
    assert!(first.contains("submitted Slurm job"), "{first}");
    assert!(
        first.contains("2 built (0 from the cache), 1 failed"),
        "{first}"
    );
    assert!(
        first.contains("undeclared"),
        "the failure's log tail: {first}"
    );
    let list = String::from_utf8(
        knobs()
            .args(["history", "list"])
            .arg(&spec)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for (subject, status) in [
        ("builds", "built"),
        ("broken", "failed"),
        ("fixed", "built"),
    ] {
        let line = list
            .lines()
            .skip(1)
            .find(|l| l.contains(&format!(" {subject}")))
            .unwrap_or_else(|| panic!("{subject} in {list}"));
        assert!(line.contains(&format!("  {status} ")), "{list}");
    }
    // The array's directory is gone from the spool once every task finished.
    let spool = dir.path().join(".knobs-slurm");
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0);
    let second = build();
    assert!(!second.contains("submitted"), "{second}");
    assert!(
        second.contains("2 built (2 from the cache), 1 failed"),
        "{second}"
    );
    let measured = knobs_ok(MEASURE_COMMIT_ON_SLURM, &spec).stderr;
    assert!(!measured.contains("building commit"), "{measured}");
}

/// The commit of the history below from which `heavy` costs twenty times more.
const HEAVY_FROM: usize = 6;

/// A history of twelve commits of a C program, built here with the system's C compiler: it
/// counts to 100 000, and with `heavy` 200 000 more, 4 000 000 more from `HEAVY_FROM` on.
/// Measured by instructions, so the change is the same on any machine and load.
fn counting_history(dir: &Path) -> PathBuf {
    let repo = common::new_repo(dir);
    for i in 0..12 {
        let heavy = if i < HEAVY_FROM { 2 } else { 40 };
        common::commit_file(
            &repo,
            "prog.c",
            &format!(
                "#include <string.h>\n/* revision {i} */\nint main(int c, char **v) {{ \
                 volatile long s = 0; long n = 100000L; for (int i = 1; i < c; i++) \
                 if (!strcmp(v[i], \"heavy\")) n += {heavy}00000L; \
                 for (long i = 0; i < n; i++) s += i; return 0; }}\n"
            ),
            &format!("revision {i}"),
        );
    }
    common::write_spec(
        dir,
        &common::history_spec(
            common::CC_BUILD,
            r#"[measure]
repetitions = 1
warmup = 0
metric = "instructions"
[slurm]
spool = "spool"
[[workload]]
name = "w"
[[option]]
name = "heavy"
on = ["heavy"]
[[option]]
name = "other"
on = ["other"]
[[option]]
name = "third"
on = ["third"]
"#,
        ),
    )
}

/// The runs stored at each commit of the history in `dir`.
fn runs_of_history(dir: &Path) -> Vec<StoredRun> {
    let store = Store::open_existing(&dir.join("knobs.db")).unwrap();
    common::git(&dir.join("prog"), &["rev-list", "main"])
        .lines()
        .flat_map(|commit| {
            let at = Selection {
                commit: commit.to_string(),
                ..Selection::default()
            };
            store.runs(&at).unwrap()
        })
        .collect()
}

/// The measuring rounds knobs submitted, as its progress says (`round 3: submitted Slurm job
/// 12 …`; an array of builds says `submitted Slurm job 11 (4 tasks)`).
fn rounds_submitted(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.starts_with("round ") && l.contains(": submitted Slurm job"))
        .count()
}

/// `knobs changepoints detect` on the cluster for the history above, the spec's path to follow.
const DETECT_ON_SLURM: &[&str] = &[
    "changepoints",
    "detect",
    "--backend",
    "slurm",
    "--threshold",
    "50%",
    "--initial-configurations",
    "6",
    "--commit-share",
    "0.25",
    "--measurements",
    "12",
    "--max-iterations",
    "4",
    "--json",
    "--spec",
];

fn detect_on_slurm(spec: &Path) -> (serde_json::Value, String) {
    let ran = knobs_ok(DETECT_ON_SLURM, spec);
    (ran.json(), ran.stderr)
}

/// `knobs changepoints detect --backend slurm`: each batch of the search (the initial
/// sample, each acquisition round, the change points' sizes) is one job array whatever its
/// commits, each run stored under its own commit; the change is found, and the same
/// detection again reads everything back and submits nothing.
#[test]
fn changepoints_detect_submits_a_job_array_per_batch_of_the_search() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let spec = counting_history(dir.path());
    let (json, stderr) = detect_on_slurm(&spec);
    let points = json["change_points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{points:#?}");
    assert!(
        points[0]["commit"]
            .as_u64()
            .unwrap()
            .abs_diff(HEAVY_FROM as u64)
            <= 1,
        "{points:#?}"
    );
    assert_eq!(points[0]["options"], serde_json::json!(["heavy"]));
    assert!(points[0]["relative_change"].as_f64().unwrap() > 2.0);
    let batches = json["batches"].as_u64().unwrap() as usize;
    let iterations = json["iterations"].as_array().unwrap().len();
    assert!(
        batches <= iterations + 1,
        "{batches} batches, {iterations} iterations"
    );
    assert_eq!(json["effort"]["campaigns"].as_u64(), Some(batches as u64));
    // Every run came from the spool; one job array per batch (one round each: one
    // repetition, no task failed), each of several commits' builds.
    let stored = runs_of_history(dir.path());
    assert_eq!(
        stored.len() as u64,
        json["effort"]["runs"].as_u64().unwrap(),
        "{}",
        json["effort"]
    );
    let mut commits_by_array: BTreeMap<String, std::collections::BTreeSet<String>> =
        BTreeMap::new();
    for r in &stored {
        assert!(r.is_ok(), "{r:?}");
        let source = r.source.as_deref().expect("ingested from the spool");
        let array = source.split(':').nth(1).unwrap().to_string();
        commits_by_array
            .entry(array)
            .or_default()
            .insert(r.commit.clone());
    }
    assert_eq!(
        commits_by_array.len(),
        batches,
        "{commits_by_array:?}\n{stderr}"
    );
    assert_eq!(rounds_submitted(&stderr), batches, "{stderr}");
    // The commits were built by array tasks, into the cache beside the spec.
    assert!(stderr.contains("Slurm array tasks"), "{stderr}");
    assert_eq!(
        json["effort"]["builds"].as_u64(),
        Some(
            stored
                .iter()
                .map(|r| &r.commit)
                .collect::<std::collections::BTreeSet<_>>()
                .len() as u64
        ),
        "{}",
        json["effort"]
    );
    let first = commits_by_array.values().map(|c| c.len()).max().unwrap();
    assert!(first >= 4, "{commits_by_array:?}");
    // The same detection again: nothing is built, measured or submitted.
    let (again, stderr) = detect_on_slurm(&spec);
    assert!(!stderr.contains("submitted Slurm job"), "{stderr}");
    assert_eq!(again["effort"]["runs"].as_u64(), Some(0));
    assert_eq!(again["effort"]["builds"].as_u64(), Some(0));
    assert_eq!(runs_of_history(dir.path()).len(), stored.len());
    assert_eq!(again["change_points"], json["change_points"]);
}

/// A detection killed while it waits for its first job array: the same command finds the
/// array again, stores what it measured, and submits no batch twice.
#[test]
fn a_killed_changepoints_detect_finds_its_job_array_again() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let spec = counting_history(dir.path());
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("knobs"))
        .args(DETECT_ON_SLURM)
        .arg(&spec)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let spool = dir.path().join("spool");
    let (_, job) = wait_until("the first job array", || {
        submitted(&spool).into_iter().next()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let (json, stderr) = detect_on_slurm(&spec);
    assert!(
        stderr.contains(&format!("(Slurm job {job}")) && stderr.contains("found round"),
        "{stderr}"
    );
    let points = json["change_points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{points:#?}");
    assert_eq!(points[0]["options"], serde_json::json!(["heavy"]));
    // The killed knobs's array and the resumed one's: one per batch, none twice.
    let arrays: std::collections::BTreeSet<String> = runs_of_history(dir.path())
        .iter()
        .map(|r| {
            r.source
                .as_deref()
                .unwrap()
                .split(':')
                .nth(1)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        arrays.len() as u64,
        json["batches"].as_u64().unwrap(),
        "{arrays:?}\n{stderr}"
    );
    assert_eq!(rounds_submitted(&stderr) + 1, arrays.len(), "{stderr}");
}
