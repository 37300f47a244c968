//! `knobs history` and `knobs measure --commit` on a real git repository of a tiny C program
//! built with the system's C compiler: one commit does not compile, a later one is slower.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use assert_cmd::Command;

mod common;
use common::knobs;

/// The program spins `n` million rounds (`n` its argument, else 1); the slower commit spins
/// 30 times as many. The spec measures CPU time: a millisecond's wall time on a loaded
/// machine is mostly waiting.
const FAST: &str = "#include <stdlib.h>\nint main(int c, char **v) { volatile long s = 0; long n = (c > 1 ? atol(v[1]) : 1) * 1000000L; for (long i = 0; i < n; i++) s += i; return 0; }\n";
const BROKEN: &str = "int main(void) { return undeclared_variable; }\n";
const SLOW: &str = "#include <stdlib.h>\nint main(int c, char **v) { volatile long s = 0; long n = (c > 1 ? atol(v[1]) : 1) * 30000000L; for (long i = 0; i < n; i++) s += i; return 0; }\n";

fn spec_text(build: &str) -> String {
    common::history_spec(
        build,
        "[measure]\nrepetitions = 3\nmetric = \"cpu\"\n\n[[workload]]\nname = \"w\"\n\n[[option]]\nname = \"twice\"\non = [\"2\"]\n",
    )
}

/// The repository (commits fast, broken, fixed, slower) and `knobs.toml` beside it.
fn fixture(dir: &Path) -> PathBuf {
    let repo = common::new_repo(dir);
    for (text, message) in [
        (FAST, "fast"),
        (BROKEN, "broken"),
        (FAST, "fixed"),
        (SLOW, "slower"),
    ] {
        common::commit_file(&repo, "prog.c", text, message);
    }
    common::write_spec(dir, &spec_text(common::CC_BUILD))
}

fn stdout(cmd: &mut Command) -> String {
    common::succeeds(cmd).text()
}

fn stderr(cmd: &mut Command) -> String {
    common::succeeds(cmd).stderr
}

fn status_of(spec: &Path, subject: &str) -> String {
    let list = stdout(knobs().args(["history", "list"]).arg(spec));
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" {subject}")))
        .unwrap_or_else(|| panic!("{subject} in {list}"));
    ["not built", "built", "failed"]
        .into_iter()
        .find(|w| line.contains(&format!("  {w} ")))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string()
}

/// A commit's full id.
fn id(dir: &Path, rev: &str) -> String {
    common::git(&dir.join("prog"), &["rev-parse", rev])
        .trim()
        .to_string()
}

/// Per configuration, the median wall time stored for a commit (`knobs results show --json`).
fn medians(spec: &Path, commit: &str) -> Vec<(String, f64)> {
    let out = stdout(
        knobs()
            .args(["results", "show", "--json", "--commit", commit, "--spec"])
            .arg(spec),
    );
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    json["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["configuration"].as_str().unwrap().to_string(),
                c["summary"]["median"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn list_build_measure_at_commits_and_prune() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture(dir.path());
    let list = stdout(knobs().args(["history", "list"]).arg(&spec));
    assert!(list.starts_with("prog: 4 commits in `main`"), "{list}");
    assert_eq!(list.matches("not built").count(), 4, "{list}");

    // Every commit built; the broken one is reported with its log, and not fatal.
    let out = knobs()
        .args(["history", "build", "--all"])
        .arg(&spec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("FAILED: step 1 `cc -O1 -o prog prog.c`"),
        "{err}"
    );
    assert!(err.contains("undeclared_variable"), "the log's tail: {err}");
    assert!(
        err.contains(&format!(
            "closest earlier build: {}",
            &id(dir.path(), "main~3")[..12]
        )),
        "{err}"
    );
    assert!(
        err.contains("3 built (0 from the cache), 1 failed"),
        "{err}"
    );
    assert_eq!(status_of(&spec, "broken"), "failed");
    assert_eq!(status_of(&spec, "slower"), "built");
    // Again: all from the cache, the failure not retried.
    let err = stderr(
        knobs()
            .args(["history", "build", "--commits", "main,main~2"])
            .arg(&spec),
    );
    assert!(
        err.contains("built (cached)") && err.contains("FAILED (earlier)"),
        "{err}"
    );
    assert!(!err.contains("building"), "nothing rebuilt: {err}");

    // Measured at two commits: runs stored under each, the slower commit slower.
    for rev in ["main~3", "main"] {
        let err = stderr(
            knobs()
                .args(["measure", "--sample", "all", "--commit", rev, "--spec"])
                .arg(&spec),
        );
        assert!(err.contains("at commit"), "{err}");
    }
    let (fast, slow) = (id(dir.path(), "main~3"), id(dir.path(), "main"));
    let at_fast = medians(&spec, &fast[..8]);
    let at_slow = medians(&spec, &slow);
    assert_eq!(at_fast.len(), 2);
    for ((config, f), (_, s)) in at_fast.iter().zip(&at_slow) {
        assert!(s > &(3.0 * f), "{config}: {s} vs {f}");
    }
    let runs = stdout(
        knobs()
            .args([
                "results", "export", "--format", "json", "--commit", &slow, "--spec",
            ])
            .arg(&spec),
    );
    let runs: Vec<serde_json::Value> = serde_json::from_str(&runs).unwrap();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|r| r["commit"] == slow.as_str()));
    // Without --commit: the runs without history, of which there are none.
    let plain = stdout(
        knobs()
            .args(["results", "export", "--format", "json", "--spec"])
            .arg(&spec),
    );
    assert_eq!(plain.trim(), "[]");
    // Measuring again resumes: nothing new.
    let err = stderr(
        knobs()
            .args(["measure", "--commit", "main", "--spec"])
            .arg(&spec),
    );
    assert!(
        err.contains("(2 already in the store), 0 new runs"),
        "{err}"
    );

    // The commit that does not build: one line naming its log.
    let out = knobs()
        .args(["measure", "--commit", "main~2", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("knobs: error: commit ")
            && last.contains("does not build")
            && last.ends_with(".log"),
        "{err}"
    );
    assert!(
        !last.contains("undeclared"),
        "the log is named, not printed: {last}"
    );
    let out = knobs()
        .args(["measure", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--commit"), "{err}");

    // Pruned: failures kept on request, then everything.
    let err = stderr(
        knobs()
            .args(["history", "prune", "--keep-failures"])
            .arg(&spec),
    );
    assert!(err.contains("removed 3 builds, 0 failure records"), "{err}");
    assert_eq!(status_of(&spec, "broken"), "failed");
    assert_eq!(status_of(&spec, "slower"), "not built");
    let err = stderr(knobs().args(["history", "prune"]).arg(&spec));
    assert!(err.contains("removed 0 builds, 1 failure records"), "{err}");
    assert_eq!(status_of(&spec, "broken"), "not built");
}

#[test]
fn a_killed_build_leaves_nothing_that_looks_built() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    // A build that takes long enough to be killed half-way.
    let spec = dir.path().join("slow-build.toml");
    std::fs::write(
        &spec,
        spec_text(r#"[["cc", "-O1", "-o", "prog", "prog.c"], ["sleep", "30"]]"#),
    )
    .unwrap();
    let builds = dir.path().join(".knobs-builds");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("knobs"))
        .args(["history", "build", "--commits", "main"])
        .arg(&spec)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the program exists in the temporary checkout (the build is in `sleep`).
    let started = Instant::now();
    let half_built = loop {
        let found = std::fs::read_dir(&builds).ok().and_then(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .find(|p| p.is_dir() && p.join("prog").is_file())
        });
        if let Some(path) = found {
            break path;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the build never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    let name = half_built
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with(".tmp-"), "{name}");
    assert_eq!(status_of(&spec, "slower"), "not built");
    let looks_built: Vec<String> = std::fs::read_dir(&builds)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert!(looks_built.is_empty(), "{looks_built:?}");
    // The leftovers go with the next prune.
    let err = stderr(knobs().args(["history", "prune"]).arg(&spec));
    assert!(
        err.contains("removed 0 builds, 0 failure records and 2 leftovers"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&builds).unwrap().count(), 0);
}

/// `history fetch` follows a URL repository's branch; a local repository is left alone, with
/// a one-line error.
#[test]
fn fetch_follows_a_url_repository_and_refuses_a_local_one() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture(dir.path());
    let out = knobs()
        .args(["history", "fetch"])
        .arg(&spec)
        .output()
        .unwrap();
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success() && e.lines().count() == 1, "{e}");
    assert!(e.contains("local repository"), "{e}");

    let url = format!("file://{}", dir.path().join("prog").display());
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("repository = \"prog\"", &format!("repository = \"{url}\""));
    std::fs::write(&spec, text).unwrap();
    assert_eq!(
        stdout(knobs().args(["history", "list", "--json"]).arg(&spec))
            .matches("\"id\"")
            .count(),
        4
    );
    common::git(
        &dir.path().join("prog"),
        &["commit", "-q", "--allow-empty", "-m", "later"],
    );
    let fetched = stdout(knobs().args(["history", "fetch"]).arg(&spec));
    assert!(fetched.contains("the range has 5 commit(s)"), "{fetched}");
}
