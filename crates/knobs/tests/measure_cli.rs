//! `knobs init`, `knobs measure` and `knobs results` on real programs (`sleep`, `sh`):
//! resuming after SIGKILL, timeouts, crashes and bad input.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use common::{knobs, knobs_ok, succeeds};

/// `sleep` with binary options that each add a known duration: a real program whose
/// performance model is known (0.02 + 0.03·a + 0.06·b + 0.01·c seconds).
const SLEEP_SPEC: &str = r#"
name = "sleeper"

[run]
program = "sleep"
args = ["0.02", "{options}"]
timeout = 10

[measure]
repetitions = 2

[[workload]]
name = "none"

[[option]]
name = "a"
on = ["0.03"]

[[option]]
name = "b"
on = ["0.06"]

[[option]]
name = "c"
on = ["0.01"]

[[option]]
name = "d"
on = ["0.02"]
"#;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The store's runs as `knobs results export --format json EXTRA` gives them.
fn exported_runs(store: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let runs = succeeds(
        knobs()
            .args(["results", "export", "--format", "json"])
            .args(extra)
            .arg("--store")
            .arg(store),
    )
    .json();
    serde_json::from_value(runs).unwrap()
}

/// `knobs measure --sample all` of each spec at once, all into `store`; each one's stderr,
/// once it succeeded.
fn measure_at_once(specs: &[&Path], store: &Path) -> Vec<String> {
    let bin = assert_cmd::cargo::cargo_bin("knobs");
    let children: Vec<_> = specs
        .iter()
        .map(|spec| {
            StdCommand::new(&bin)
                .args(["measure", "--sample", "all", "--spec"])
                .arg(spec)
                .arg("--store")
                .arg(store)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| common::finish(child).stderr)
        .collect()
}

/// The store's reference configuration: measured in every round, so it may have more runs
/// than the others.
fn reference(store: &Path) -> String {
    measure::Store::open_existing(store)
        .unwrap()
        .reference(&measure::Selection::default())
        .unwrap()
        .expect("a reference")
}

/// Per configuration, its runs, the reference's left out.
fn measured_but_the_reference(store: &Path) -> BTreeMap<String, usize> {
    let mut by = measured(store);
    by.remove(&reference(store));
    by
}

/// Configuration → number of successful runs, read back through `knobs results export`.
fn measured(store: &Path) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for r in exported_runs(store, &[]) {
        assert_eq!(r["status"], "ok", "{r}");
        *by.entry(r["configuration"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    by
}

#[test]
fn sigkill_mid_run_then_rerun_equals_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "knobs.toml", SLEEP_SPEC);
    let whole = dir.path().join("whole.db");
    let killed = dir.path().join("killed.db");

    knobs()
        .args(["measure", "--sample", "all", "--spec"])
        .arg(&spec)
        .arg("--store")
        .arg(&whole)
        .assert()
        .success();
    let expected = measured_but_the_reference(&whole);
    assert_eq!(expected.len(), 15);
    assert!(expected.values().all(|&n| n == 2));

    // Kill it once some, but not all, runs are stored (16 × 2 runs take over 1.5 s).
    let bin = assert_cmd::cargo::cargo_bin("knobs");
    let mut child = StdCommand::new(&bin)
        .args(["measure", "--sample", "all", "--spec"])
        .arg(&spec)
        .arg("--store")
        .arg(&killed)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let stored = if killed.exists() {
            knobs()
                .args(["results", "export", "--format", "json", "--store"])
                .arg(&killed)
                .output()
                .ok()
                .and_then(|o| serde_json::from_slice::<Vec<serde_json::Value>>(&o.stdout).ok())
                .map_or(0, |v| v.len())
        } else {
            0
        };
        if stored >= 6 || start.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let partial = measured(&killed);
    assert!(
        partial.values().sum::<usize>() < 32,
        "the kill came too late to test anything: {partial:?}"
    );

    knobs()
        .args(["measure", "--sample", "all", "--spec"])
        .arg(&spec)
        .arg("--store")
        .arg(&killed)
        .assert()
        .success()
        .stderr(predicates::str::contains("already in the store"));
    assert_eq!(
        reference(&killed),
        reference(&whole),
        "one reference per spec"
    );
    assert_eq!(measured_but_the_reference(&killed), expected);
    assert!(measured(&killed)[&reference(&killed)] >= 2);

    // A third run measures nothing new.
    let out = knobs()
        .args(["measure", "--sample", "all", "--spec"])
        .arg(&spec)
        .arg("--store")
        .arg(&killed)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("16 already in the store), 0 new runs"));
}

#[test]
fn results_export_csv_is_a_dataset_with_medians() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "knobs.toml", SLEEP_SPEC);
    knobs()
        .args(["measure", "--sample", "twise:1", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    // The default store sits beside the spec.
    let store = dir.path().join("knobs.db");
    let out = knobs()
        .args(["results", "export", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("a,b,c,d,wall_s"));
    for line in lines {
        let cells: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
        let expected = 0.02 + 0.03 * cells[0] + 0.06 * cells[1] + 0.01 * cells[2] + 0.02 * cells[3];
        // Process start-up adds a little; a shared machine adds noise.
        assert!(
            cells[4] >= expected && cells[4] < expected + 0.25,
            "{line}: expected about {expected}"
        );
    }
    let exported = dir.path().join("data.csv");
    knobs()
        .args(["results", "export", "-o"])
        .arg(&exported)
        .arg("--store")
        .arg(&store)
        .assert()
        .success();
    // The export reads back as a dataset and as a space.
    knobs()
        .args(["space", "count"])
        .arg(&exported)
        .assert()
        .success()
        .stdout("16\n");
    knobs()
        .args(["results", "show", "--store"])
        .arg(&store)
        .assert()
        .success()
        .stdout(predicates::str::contains("sleeper (spec "))
        .stdout(predicates::str::contains("median"));
}

#[test]
fn timeouts_and_crashes_are_recorded_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "knobs.toml",
        r#"
name = "fragile"
[run]
program = "sh"
args = ["-c", "{options}"]
timeout = 0.5
[measure]
repetitions = 2
[[workload]]
name = "none"
[[option]]
name = "mode"
values = [0, 1, 2]
arg = ["case {value} in 0) exit 0;; 1) echo 'assertion failed: x > 0' >&2; kill -SEGV $$;; 2) sleep 30;; esac"]
"#,
    );
    let start = Instant::now();
    // Everything is stored, and the failures end it with exit 3, saying how many and where.
    let store = dir.path().join("knobs.db");
    knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "failed: `mode=1`: killed by signal 11 (SIGSEGV): assertion failed: x > 0",
        ))
        .stderr(predicates::str::contains("failed: `mode=2`: timed out"))
        .stderr(predicates::str::contains("1 of 3 configurations measured"))
        .stderr(predicates::str::contains(format!(
            "2 of 3 configurations failed; their runs and the tails of their stderr are in {}",
            store.display()
        )));
    assert!(start.elapsed() < Duration::from_secs(15));
    let runs = exported_runs(&store, &[]);
    let mut status: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| {
            (
                r["configuration"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    status.sort();
    assert_eq!(
        status,
        [
            ("mode=0", "ok"),
            ("mode=0", "ok"),
            ("mode=1", "failed"),
            ("mode=2", "timeout")
        ]
    );
    // Failed configurations are not retried unless asked; --accept-failures exits 0.
    knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .assert()
        .code(3);
    knobs()
        .args(["measure", "--accept-failures", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "3 already in the store), 0 new runs",
        ));
    // Only the successful configuration becomes data (read in CPU or wall time, as `auto`
    // decides for a 2 ms run on this machine).
    knobs()
        .args(["results", "export", "--store"])
        .arg(&store)
        .assert()
        .success()
        .stdout(predicates::str::is_match("^mode,(cpu|wall)_s\n0,[0-9.e-]+\n$").unwrap());
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "name = \"x\"\n[run\nprogram = \"sleep\"\n",
            "knobs.toml:2:5: ",
        ),
        (
            "[run]\nprogram = \"sleep\"\ntimeout = \"soon\"\n",
            "knobs.toml:3:11: ",
        ),
        (
            "[run]\nprogram = \"sleep\"\n[[option]]\nname = \"a\"\nonn = [\"1\"]\n",
            "knobs.toml:5:1: unknown field `onn`",
        ),
        (
            "constraints = [\"a => zz\"]\n[run]\nprogram = \"sleep\"\n[[option]]\nname = \"a\"\n",
            "unknown option `zz`",
        ),
        (
            "constraints = [\"a\", \"!a\"]\n[run]\nprogram = \"sleep\"\n[[workload]]\nname = \"w\"\n[[option]]\nname = \"a\"\n",
            "unsatisfiable",
        ),
        (
            "[run]\nprogram = \"no-such-program-knobs\"\n[[workload]]\nname = \"w\"\n",
            "program `no-such-program-knobs` is not on PATH",
        ),
        (
            "[run]\nprogram = \"sleep\"\nargs = [\"{workload}\"]\n[[workload]]\nname = \"w\"\nargs = [\"in.txt\"]\nfiles = [\"in.txt\"]\n",
            "in.txt` is missing",
        ),
        ("name = \"only a space\"\n", "no [run] section"),
    ];
    for (text, message) in cases {
        let spec = write(dir.path(), "knobs.toml", text);
        let out = knobs()
            .args(["measure", "--spec"])
            .arg(&spec)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains(message),
            "{text}: expected `{message}` in {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            !dir.path().join("knobs.db").exists(),
            "{text}: a store was created"
        );
    }
    // A file that is not a store.
    let junk = write(
        dir.path(),
        "junk.db",
        "not a database, just some words in a file.........",
    );
    knobs()
        .args(["results", "show", "--store"])
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a knobs results store"));
}

#[test]
fn init_writes_a_spec_that_measures() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "input.txt", "hello\n");
    let spec = dir.path().join("knobs.toml");
    knobs()
        .current_dir(dir.path())
        .args(["init", "--", "cat", "input.txt"])
        .assert()
        .success();
    let text = std::fs::read_to_string(&spec).unwrap();
    assert!(
        text.contains("args = [\"{options}\", \"{workload}\"]"),
        "{text}"
    );
    assert!(text.contains("args = [\"input.txt\"]"), "{text}");
    knobs()
        .current_dir(dir.path())
        .args(["init", "--", "cat", "input.txt"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--force"));
    knobs()
        .current_dir(dir.path())
        .args(["measure", "--repetitions", "1"])
        .assert()
        .success()
        .stderr(predicates::str::contains("1 of 1 configurations measured"));

    // Arguments with newlines, quotes and control characters make a spec it can read back.
    let odd = tempfile::tempdir().unwrap();
    knobs()
        .current_dir(odd.path())
        .args(["init", "--", "true", "a\nb", "say \"hi\"\t\u{7}"])
        .assert()
        .success();
    let out = knobs()
        .current_dir(odd.path())
        .args(["space", "show", "knobs.toml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(odd.path().join("knobs.toml")).unwrap();
    assert!(text.contains(r#""a\nb""#), "{text}");
}

#[test]
fn two_processes_write_one_store_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fast = SLEEP_SPEC
        .replace("\"0.02\", ", "\"0.001\", ")
        .replace("repetitions = 2", "repetitions = 3");
    let one = write(dir.path(), "one.toml", &fast);
    let two = write(dir.path(), "two.toml", &fast.replace("sleeper", "other"));
    let store = dir.path().join("shared.db");
    measure_at_once(&[&one, &two], &store);
    for system in ["sleeper", "other"] {
        let runs = exported_runs(&store, &["--system", system]);
        assert_eq!(runs.len(), 16 * 3, "{system}");
    }
    // Without --system the store has two specs, and says so.
    knobs()
        .args(["results", "show", "--store"])
        .arg(&store)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("choose one with --system"));
}

/// The bundled xz example end to end on its small workload: brute force into a store,
/// learn from a pair-wise sample, and evaluate against the ground truth.
#[test]
fn xz_example_end_to_end_on_the_small_workload() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xz/knobs.toml");
    // A copy, so the generated inputs and the store stay in the temporary directory.
    let spec = write(
        dir.path(),
        "knobs.toml",
        &std::fs::read_to_string(example).unwrap(),
    );
    knobs()
        .args([
            "measure",
            "--sample",
            "all",
            "--workload",
            "small",
            "--repetitions",
            "1",
            "--spec",
        ])
        .arg(&spec)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "48 of 48 configurations measured",
        ));
    assert!(
        dir.path().join("small.txt").exists(),
        "the workload was prepared"
    );
    let store = dir.path().join("knobs.db");
    let model = dir.path().join("model.json");
    knobs()
        .arg("learn")
        .arg(&store)
        .args(["--learner", "stepwise:log", "--sample", "pairwise", "-o"])
        .arg(&model)
        .assert()
        .success();
    let out = knobs()
        .arg("evaluate")
        .arg(&model)
        .arg(&store)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Pair-wise picks at least 4 × 3 (level × check) configurations; the rest are tested.
    let tested: usize = stdout
        .split(" on ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout}"));
    assert!((20..=36).contains(&tested), "{stdout}");
    knobs()
        .args(["experiment", "compare"])
        .arg(&store)
        .args([
            "--sample",
            "pairwise,random:12",
            "--learners",
            "stepwise;rf",
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains("twise:2"))
        .stdout(predicates::str::contains("random:12"));
}

/// The sleeper with a shorter base time, measured once per configuration. The base still
/// sleeps several times what starting `sleep` costs in CPU time, so that `auto` reads even
/// the configuration without options by wall time on a loaded machine.
fn fast_sleeper(dir: &Path) -> std::path::PathBuf {
    write(
        dir,
        "knobs.toml",
        &SLEEP_SPEC
            .replace("\"0.02\", ", "\"0.01\", ")
            .replace("repetitions = 2", "repetitions = 1"),
    )
}

#[test]
fn measure_and_results_show_print_json() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fast_sleeper(dir.path());
    let store = dir.path().join("knobs.db");
    let report = succeeds(
        knobs()
            .args(["measure", "--sample", "all", "--json", "--spec"])
            .arg(&spec),
    )
    .json();
    assert_eq!(report["system"], "sleeper", "{report}");
    assert_eq!(report["workload"], "none", "{report}");
    assert_eq!(report["store"], store.to_str().unwrap(), "{report}");
    assert_eq!(report["sample"], "all", "{report}");
    assert_eq!(report["seed"], 1, "{report}");
    assert_eq!(report["sampled"], 16, "{report}");
    assert_eq!(report["configurations"], 16, "{report}");
    assert_eq!(report["reused"], 0, "{report}");
    assert_eq!(report["runs"], 16, "{report}");
    assert_eq!(report["failed"].as_array().unwrap().len(), 0, "{report}");
    assert!(report["seconds"].as_f64().unwrap() > 0.0, "{report}");
    // Again: everything is in the store already.
    let again = succeeds(
        knobs()
            .args(["measure", "--sample", "twise:1", "--json", "--spec"])
            .arg(&spec),
    )
    .json();
    assert_eq!(again["sample"], "twise:1", "{again}");
    assert_eq!(again["runs"], 0, "{again}");
    assert_eq!(again["reused"], again["configurations"], "{again}");

    // The summaries, with medians of the known model.
    let shown = succeeds(
        knobs()
            .args(["results", "show", "--json", "--spec"])
            .arg(&spec),
    )
    .json();
    assert_eq!(shown["system"], "sleeper", "{shown}");
    assert_eq!(shown["metric"], "wall", "{shown}");
    assert_eq!(shown["unit"], "wall_s", "{shown}");
    assert_eq!(shown["store"], store.to_str().unwrap(), "{shown}");
    let configurations = shown["configurations"].as_array().unwrap();
    assert_eq!(configurations.len(), 16, "{shown}");
    for c in configurations {
        assert_eq!(c["runs"], 1, "{c}");
        assert_eq!(c["failed"], 0, "{c}");
        let on = |o: &str| {
            c["configuration"]
                .as_str()
                .unwrap()
                .split(',')
                .any(|s| s == o) as u8 as f64
        };
        let expected = 0.01 + 0.03 * on("a") + 0.06 * on("b") + 0.01 * on("c") + 0.02 * on("d");
        let median = c["summary"]["median"].as_f64().unwrap();
        assert!(
            median >= expected && median < expected + 0.25,
            "{c}: expected about {expected}"
        );
        assert_eq!(c["summary"]["n"], 1, "{c}");
        // One run: it is the value models learn, whatever the statistic.
        assert_eq!(c["summary"]["value"].as_f64(), Some(median), "{c}");
    }
    // The text table says the same.
    let out = knobs()
        .args(["results", "show", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "sleeper (spec {}), metric wall_s: 16 configurations",
            shown["spec_hash"].as_str().unwrap()
        )),
        "{text}"
    );
    // Another metric, by name.
    let rss = succeeds(
        knobs()
            .args(["results", "show", "--json", "--metric", "max_rss", "--spec"])
            .arg(&spec),
    )
    .json();
    assert_eq!(rss["metric"], "max_rss", "{rss}");
    assert_eq!(rss["unit"], "max_rss_kib", "{rss}");
    assert!(
        rss["configurations"][0]["summary"]["median"]
            .as_f64()
            .unwrap()
            > 100.0,
        "{rss}"
    );
}

#[test]
fn results_find_the_store_beside_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let spec = fast_sleeper(dir.path());
    knobs()
        .args(["measure", "--sample", "featurewise", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    // From another working directory: --spec finds knobs.db beside it.
    knobs()
        .current_dir(elsewhere.path())
        .args(["results", "show", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stdout(predicates::str::contains("sleeper (spec "));
    knobs()
        .current_dir(elsewhere.path())
        .args(["results", "export", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stdout(predicates::str::starts_with("a,b,c,d,wall_s\n"));
    // In the spec's directory, the defaults (knobs.toml, knobs.db beside it) are enough.
    knobs()
        .current_dir(dir.path())
        .args(["results", "show"])
        .assert()
        .success()
        .stdout(predicates::str::contains("sleeper (spec "));
    // Elsewhere, no store: one line that names where it looked and what to give.
    let out = knobs()
        .current_dir(elsewhere.path())
        .args(["results", "show"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("knobs: error: ./knobs.db: no such results store"),
        "{stderr}"
    );
    assert!(stderr.contains("give --store or --spec"), "{stderr}");
    assert!(
        !elsewhere.path().join("knobs.db").exists(),
        "no store created"
    );
    // --store given: no spec file needed.
    knobs()
        .current_dir(elsewhere.path())
        .args(["results", "show", "--spec", "no/such/knobs.toml", "--store"])
        .arg(dir.path().join("knobs.db"))
        .assert()
        .success()
        .stdout(predicates::str::contains("sleeper (spec "));
}

#[test]
fn enumerations_are_checked_by_the_parser() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none.db");
    // A bad --metric: clap's error (naming the possible values), exit status 2, before the
    // store is looked at.
    for (args, flag, values) in [
        (
            &["results", "show", "--metric", "wallclock"][..],
            "'wallclock' for '--metric <METRIC>'",
            "[possible values: auto, wall, user, system, cpu, max_rss, instructions]",
        ),
        (
            &["results", "export", "--metric", "max-rss"][..],
            "'max-rss' for '--metric <METRIC>'",
            "[possible values: auto, wall, user, system, cpu, max_rss, instructions]",
        ),
        (
            &["results", "export", "--format", "xml"][..],
            "'xml' for '--format <FORMAT>'",
            "[possible values: csv, json]",
        ),
    ] {
        let out = knobs()
            .args(args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(
            stderr.lines().next(),
            Some(format!("error: invalid value {flag}").as_str()),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(values), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!store.exists());
}

/// A program without the execute bit is named before anything runs; when every
/// configuration fails, `measure` says so and exits non-zero; a failed configuration's rerun
/// needs --retry-failed, and the output says how.
#[test]
fn a_program_that_cannot_run_is_an_error_and_failures_say_how_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "prog.sh", "#!/bin/sh\nexit 0\n");
    let spec = write(
        dir.path(),
        "knobs.toml",
        "name = \"x\"\n[run]\nprogram = \"./prog.sh\"\nargs = [\"{options}\"]\n[measure]\nrepetitions = 1\n[[workload]]\nname = \"w\"\n[[option]]\nname = \"a\"\non = [\"-a\"]\n",
    );
    let out = knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not executable"), "{stderr}");
    assert!(!dir.path().join("knobs.db").exists(), "nothing measured");

    // Executable, but every run fails: non-zero, and the way to retry is named.
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(&script, "#!/bin/sh\nexit 3\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("every configuration failed"), "{stderr}");
    assert!(stderr.contains("--retry-failed"), "{stderr}");

    // Fixed: a plain rerun keeps the failures, --retry-failed measures.
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    let out = knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    knobs()
        .args(["measure", "--retry-failed", "--spec"])
        .arg(&spec)
        .assert()
        .success();
}

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}

/// Waits up to `secs` for `done` to hold.
fn eventually(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

fn shell_spec(dir: &Path, script: &str, timeout: f64) -> std::path::PathBuf {
    write(
        dir,
        "knobs.toml",
        &format!(
            "name = \"x\"\n[run]\nprogram = \"sh\"\nargs = [\"-c\", \"{script}\", \"{{options}}\"]\ntimeout = {timeout}\n[measure]\nrepetitions = 1\nwarmup = 0\n[[workload]]\nname = \"w\"\n[[option]]\nname = \"a\"\non = [\"x\"]\n"
        ),
    )
}

/// A process that leaves the run's group (`setsid`) and holds its output does not hold up
/// the timeout: the run ends when the timeout says, the escaped process is named and killed.
#[test]
fn a_timeout_bounds_the_run_whatever_it_leaves_behind() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "15.7311";
    let spec = shell_spec(
        dir.path(),
        &format!("setsid sleep {marker} & exec sleep {marker}"),
        2.0,
    );
    let started = Instant::now();
    let out = knobs()
        .args(["measure", "--sample", "featurewise", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Two configurations, each timing out at 2 s; a daemon would have kept it for 15 s each.
    assert!(took < Duration::from_secs(12), "took {took:?}: {stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    assert!(
        stderr.contains("left the run's process group") && stderr.contains(marker),
        "{stderr}"
    );
    assert!(
        eventually(5, || processes_with(&format!("sleep {marker}")).is_empty()),
        "escaped processes still running"
    );
}

/// `kill -9` of knobs leaves nothing of the run behind: the watchdog kills the run's whole
/// process group, children of the program included.
#[test]
fn nothing_of_a_run_survives_kill_9_of_knobs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "21.4242";
    let spec = shell_spec(dir.path(), &format!("sleep {marker} & wait"), 60.0);
    let mut knobs_process = std::process::Command::new(assert_cmd::cargo::cargo_bin("knobs"))
        .args(["measure", "--spec"])
        .arg(&spec)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let needle = format!("sleep {marker}");
    assert!(
        eventually(20, || !processes_with(&needle).is_empty()),
        "the run never started"
    );
    knobs_process.kill().unwrap(); // SIGKILL
    knobs_process.wait().unwrap();
    assert!(
        eventually(10, || processes_with(&needle).is_empty()),
        "{:?} survived kill -9 of knobs",
        processes_with(&needle)
    );
}

/// A `knobs measure` killed mid-run (SIGKILL, or Ctrl-C's SIGINT) leaves claims on the
/// configurations of its round; its process is gone, so the same command frees them at once
/// and measures them, rather than waiting out a lease as long as the spec's timeout (a day
/// here). The rerun is given ten minutes: a wait for the lease would take a day.
#[test]
fn a_rerun_after_a_kill_measures_the_claimed_configurations_at_once() {
    for signal in [libc::SIGKILL, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let marker = "1.3717";
        let spec = shell_spec(dir.path(), &format!("sleep {marker}"), 86_400.0);
        let bin = assert_cmd::cargo::cargo_bin("knobs");
        let mut first = StdCommand::new(&bin)
            .args(["measure", "--sample", "featurewise", "--spec"])
            .arg(&spec)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let needle = format!("sleep {marker}");
        assert!(
            eventually(60, || !processes_with(&needle).is_empty()),
            "the first run never started"
        );
        // SAFETY: signalling a child of this test.
        assert_eq!(unsafe { libc::kill(first.id() as i32, signal) }, 0);
        first.wait().unwrap();
        assert!(
            eventually(10, || processes_with(&needle).is_empty()),
            "the killed knobs left its run behind"
        );
        let mut rerun = StdCommand::new(&bin)
            .args(["measure", "--sample", "featurewise", "--spec"])
            .arg(&spec)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let finished = eventually(600, || rerun.try_wait().unwrap().is_some());
        if !finished {
            rerun.kill().unwrap();
        }
        let out = rerun.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            finished,
            "signal {signal}: the rerun waited on the killed process's claims: {stderr}"
        );
        assert!(out.status.success(), "signal {signal}: {stderr}");
        assert!(!stderr.contains("waiting for"), "signal {signal}: {stderr}");
        // The configuration the killed process held, measured by the rerun.
        let runs = measured(&dir.path().join("knobs.db"));
        assert_eq!(
            runs,
            BTreeMap::from([("a".to_string(), 1)]),
            "signal {signal}"
        );
    }
}

/// Two `knobs measure` of one spec into one store share the plan: each configuration is
/// claimed before it is measured, so the store ends with exactly the planned runs, not
/// twice as many, and both processes report every configuration measured.
#[test]
fn concurrent_writers_of_one_spec_do_not_repeat_work() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "knobs.toml",
        &SLEEP_SPEC
            .replace("\"0.02\", ", "\"0.05\", ")
            .replace("repetitions = 2", "repetitions = 3"),
    );
    let store = dir.path().join("shared.db");
    for stderr in measure_at_once(&[&spec, &spec], &store) {
        assert!(
            stderr.contains("16 of 16 configurations measured"),
            "{stderr}"
        );
    }
    let runs = exported_runs(&store, &[]);
    assert!(runs.len() >= 16 * 3, "{}", runs.len());
    // Exactly the planned runs; the reference, measured in every round, may have more.
    let others = measured_but_the_reference(&store);
    assert_eq!(others.len(), 15);
    assert!(others.values().all(|&n| n == 3), "{others:?}");
}

/// Each run records a digest of the workload's files; runs of files that changed since are
/// still used, and the output says so.
#[test]
fn a_changed_workload_file_is_noticed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "input.txt", "one\n");
    let spec = write(
        dir.path(),
        "knobs.toml",
        "name = \"x\"\n[run]\nprogram = \"cat\"\nargs = [\"{options}\", \"{workload}\"]\n[measure]\nrepetitions = 1\nwarmup = 0\n[[workload]]\nname = \"w\"\nargs = [\"input.txt\"]\nfiles = [\"input.txt\"]\n[[option]]\nname = \"a\"\non = [\"-n\"]\n",
    );
    let measure = |reps: &str| {
        knobs()
            .args(["measure", "--repetitions", reps, "--spec"])
            .arg(&spec)
            .output()
            .unwrap()
    };
    let out = measure("1");
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("files were different"));
    std::fs::write(dir.path().join("input.txt"), "two\n").unwrap();
    let out = measure("2");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 stored runs measured workload `w` when its files were different"),
        "{stderr}"
    );
    let runs = exported_runs(&dir.path().join("knobs.db"), &[]);
    let digests: std::collections::BTreeSet<&str> =
        runs.iter().map(|r| r["inputs"].as_str().unwrap()).collect();
    assert_eq!(digests.len(), 2, "{runs:?}");
}

/// `--budget` stops starting rounds once its seconds are spent: each run sleeps 1.5 s, so the
/// first round (two configurations, the reference among them) outlasts a 2 s budget whatever
/// the machine's speed, and the second round never starts; a rerun without it completes.
#[test]
fn a_budget_ends_the_rounds_and_a_rerun_completes_them() {
    let dir = tempfile::tempdir().unwrap();
    let spec = shell_spec(dir.path(), "sleep 1.5", 30.0).to_path_buf();
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("repetitions = 1", "repetitions = 2");
    std::fs::write(&spec, text).unwrap();
    let store = dir.path().join("knobs.db");
    let out = knobs()
        .args(["measure", "--budget", "2", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("the budget of 2 s is spent"), "{stderr}");
    assert!(measured(&store).values().all(|&n| n == 1), "{stderr}");
    knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    let runs = measured(&store);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.values().all(|&n| n >= 2), "{runs:?}");
    for bad in ["0", "-1", "inf"] {
        let out = knobs()
            .arg("measure")
            .arg(format!("--budget={bad}"))
            .arg("--spec")
            .arg(&spec)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--budget {bad}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

/// `--warmup N` runs N unrecorded rounds before the recorded ones, whatever the spec says.
#[test]
fn warmup_flag_runs_unrecorded_rounds_first() {
    let dir = tempfile::tempdir().unwrap();
    let spec = shell_spec(dir.path(), "echo run >> ran.log", 30.0).to_path_buf();
    let store = dir.path().join("knobs.db");
    knobs()
        .args(["measure", "--warmup", "2", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    let ran = std::fs::read_to_string(dir.path().join("ran.log")).unwrap();
    assert_eq!(
        ran.lines().count(),
        2 * 3,
        "2 configurations, 2 warm-up rounds and 1 recorded"
    );
    assert!(
        measured(&store).values().all(|&n| n == 1),
        "{:?}",
        measured(&store)
    );
}

/// `--metric instructions` counts instead of timing: the same count in every run, kept apart
/// from the spec's timed runs, and what the store's export reads by default.
#[test]
fn metric_flag_counts_instructions_apart_from_the_timed_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = shell_spec(
        dir.path(),
        "i=0; while [ $i -lt 300 ]; do i=$((i+1)); done",
        30.0,
    );
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("repetitions = 1", "repetitions = 2");
    std::fs::write(&spec, text).unwrap();
    knobs()
        .args(["measure", "--metric", "instructions", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    let counted = exported(&spec, "csv");
    assert!(counted.starts_with("a,instructions\n"), "{counted}");
    let runs: Vec<serde_json::Value> = serde_json::from_str(&exported(&spec, "json")).unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    for config in ["", "a"] {
        let counts: Vec<i64> = runs
            .iter()
            .filter(|r| r["configuration"] == config)
            .map(|r| r["instructions"].as_i64().expect("counted"))
            .collect();
        assert_eq!(counts.len(), 2, "{runs:?}");
        assert_eq!(counts[0], counts[1], "{config}: {counts:?}");
    }
    // The spec's own, timed measurement is a session of its own, not a resumption.
    let out = knobs()
        .args(["measure", "--json", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["reused"], 0, "{report}");
}

/// `knobs results export --format FORMAT` of the spec's store.
fn exported(spec: &Path, format: &str) -> String {
    knobs_ok(&["results", "export", "--format", format, "--spec"], spec).text()
}

/// Under `metric = "auto"`, `results show` says per configuration which time it reads: CPU
/// time for a loop that keeps a CPU busy, wall time for a sleep.
#[test]
fn results_show_says_which_time_each_configuration_reads() {
    let dir = tempfile::tempdir().unwrap();
    let spec = shell_spec(
        dir.path(),
        "if [ \\\"$0\\\" = x ]; then sleep 0.2; else i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; fi",
        30.0,
    );
    knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .assert()
        .success();
    let out = knobs()
        .args(["results", "show", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(" reads  configuration"), "{stdout}");
    let reads = |config: &str| -> String {
        let suffix = format!("  {config}");
        let line = stdout
            .lines()
            .find(|l| l.ends_with(&suffix))
            .unwrap_or_else(|| panic!("no {config} in {stdout}"));
        let columns = line.strip_suffix(&suffix).unwrap();
        columns.split_whitespace().last().unwrap().to_string()
    };
    assert_eq!(reads("a"), "wall", "{stdout}");
    assert_eq!(reads("(no option selected)"), "cpu", "{stdout}");
    assert!(stderr.contains("sleeps or waits"), "{stderr}");
}
