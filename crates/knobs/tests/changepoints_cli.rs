//! `knobs changepoints detect` on a real git history of a tiny C program built with the
//! system's C compiler: one commit does not build, one makes the `heavy` option ten times
//! slower; the detection finds that commit and that option, reports the failed build, and
//! a second run resumes from the store without running anything again.
//!
//! The metric is instructions (hardware counters or cachegrind), so what the detection finds
//! does not depend on the machine's speed or load.

use std::path::Path;

mod common;

/// The program spins 50,000 rounds, and `heavy` ten thousand more with the `heavy` argument.
fn program(heavy: u32, comment: usize) -> String {
    format!(
        "#include <string.h>\n/* revision {comment} */\nint main(int c, char **v) {{ volatile long s = 0; long n = 50000L; \
         for (int i = 1; i < c; i++) if (!strcmp(v[i], \"heavy\")) n += {heavy}0000L; \
         for (long i = 0; i < n; i++) s += i; return 0; }}\n"
    )
}

const CHANGED_AT: usize = 24;

const ARGS: [&str; 13] = [
    "changepoints",
    "detect",
    "--threshold",
    "150%",
    "--initial-configurations",
    "12",
    "--commit-share",
    "0.1",
    "--measurements",
    "24",
    "--max-iterations",
    "6",
    "--spec",
];

/// A history of 40 commits (9 does not compile, `CHANGED_AT` makes `heavy` slower) and its
/// spec; returns the spec's path.
fn fixture(dir: &Path) -> std::path::PathBuf {
    let repo = common::new_repo(dir);
    for i in 0..40 {
        let text = if i == 9 {
            "int main(void) { return undeclared; }\n".to_string()
        } else {
            program(if i < CHANGED_AT { 5 } else { 100 }, i)
        };
        let message = if i == CHANGED_AT {
            "heavy gets slower".to_string()
        } else {
            format!("revision {i}")
        };
        common::commit_file(&repo, "prog.c", &text, &message);
    }
    common::write_spec(
        dir,
        &common::history_spec(
            common::CC_BUILD,
            "[measure]\nrepetitions = 1\nmetric = \"instructions\"\n\n\
             [[workload]]\nname = \"w\"\n\n\
             [[option]]\nname = \"heavy\"\non = [\"heavy\"]\n\n[[option]]\nname = \"other\"\non = [\"other\"]\n\n\
             [[option]]\nname = \"third\"\non = [\"third\"]\n\n[[option]]\nname = \"fourth\"\non = [\"fourth\"]\n",
        ),
    )
}

fn detect(spec: &Path, json: bool) -> common::Ran {
    let mut cmd = common::knobs();
    cmd.args(ARGS).arg(spec);
    if json {
        cmd.arg("--json");
    }
    common::succeeds(&mut cmd)
}

#[test]
fn detect_finds_the_commit_and_option_that_changed_performance() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture(dir.path());
    let json = detect(&spec, true).json();
    let points = json["change_points"].as_array().unwrap().clone();
    let options = |c: &serde_json::Value| -> Vec<String> {
        c["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap().to_string())
            .collect()
    };
    let summary: Vec<String> = points
        .iter()
        .map(|c| {
            format!(
                "{} {:?} all={}",
                c["commit"],
                options(c),
                c["all_configurations"]
            )
        })
        .collect();
    let found = points.iter().find(|c| {
        c["commit"].as_u64().unwrap().abs_diff(CHANGED_AT as u64) <= 5 && options(c) == ["heavy"]
    });
    let Some(found) = found else {
        panic!("no change point near {CHANGED_AT} with `heavy`: {summary:?}");
    };
    assert_eq!(points.len(), 1, "only the one change: {summary:?}");
    assert!(
        found["relative_change"].as_f64().unwrap() > 2.0,
        "{found:#?}"
    );
    let subject = found["info"]["subject"].as_str().unwrap().to_string();
    assert!(subject.starts_with("revision") || subject == "heavy gets slower");
    let failed = json["effort"]["failed_builds"].as_array().unwrap();
    assert!(
        failed.len() <= 1
            && failed
                .iter()
                .all(|f| f["log"].as_str().unwrap().ends_with(".log")),
        "{failed:?}"
    );
    assert!(json["effort"]["runs"].as_u64().unwrap() > 0);
    // The same detection again: everything is read back from the store.
    let again = detect(&spec, true).json();
    assert_eq!(
        again["effort"]["runs"].as_u64(),
        Some(0),
        "{}",
        again["effort"]
    );
    assert_eq!(again["change_points"], json["change_points"]);
    // The text names the option, the commit's subject and the effort.
    let text = detect(&spec, false).text();
    assert!(
        text.contains(": heavy;") && text.contains(&subject),
        "{text}"
    );
    assert!(text.contains("effort:"), "{text}");
}

/// `--repetitions` overrides the spec's one run per configuration and commit; 0 is an
/// error.
#[test]
fn detect_takes_the_repetitions_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture(dir.path());
    let json = common::succeeds(common::knobs().args(ARGS).arg(&spec).args([
        "--repetitions",
        "2",
        "--json",
    ]))
    .json();
    let runs = json["effort"]["runs"].as_u64().unwrap();
    let measurements = json["measurements"].as_u64().unwrap();
    // Only the commit that does not build has no runs.
    assert!(
        runs > measurements && runs <= 2 * measurements,
        "{runs} runs for {measurements} measurements"
    );
    let out = common::knobs()
        .args(ARGS)
        .arg(&spec)
        .args(["--repetitions", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.trim().lines().count() == 1,
        "{err}"
    );
}

/// `knobs learn --commit` learns from the runs a detection measured at one commit of the
/// history; without it a history store has no runs to learn from, and a prefix that is no
/// measured commit is an error.
#[test]
fn learn_selects_a_commit_of_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture(dir.path());
    let json = detect(&spec, true).json();
    // The last commit is measured in every configuration of the sample.
    let head = common::git(&dir.path().join("prog"), &["rev-parse", "HEAD"]);
    let store = dir.path().join("knobs.db");
    let model = dir.path().join("m.json");
    let learn = |extra: &[&str]| {
        common::knobs()
            .arg("learn")
            .arg(&store)
            .args(["--learner", "stepwise", "-o"])
            .arg(&model)
            .args(extra)
            .arg("--json")
            .output()
            .unwrap()
    };
    let out = learn(&["--commit", &head[..10]]);
    assert!(out.status.success(), "{out:?}");
    let learned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        learned["configurations"].as_u64().unwrap() >= 4,
        "{learned} ({} configurations sampled)",
        json["configurations"]
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    // After the change, `heavy` is what matters.
    assert!(
        common::term_labels(&file).iter().any(|t| t == "heavy"),
        "{file}"
    );
    let out = learn(&["--commit", "ffffffffff"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no measurements at a commit"),
        "{err}"
    );
}

/// Cut off by `--max-measurements` before its cache settles, a synthetic search's text
/// names the associations it left out unconfirmed, and its JSON lists them apart from the
/// associations it reports.
#[test]
fn a_search_cut_off_by_the_measurement_limit_names_what_it_left_out() {
    let args = [
        "changepoints",
        "synthetic",
        "--options",
        "16",
        "--commits",
        "1000",
        "--change-points",
        "2",
        "--p-interaction",
        "0.7",
        "--system-seed",
        "2",
        "--seed",
        "2",
        "--measurements",
        "100",
        "--initial-configurations",
        "32",
        "--commit-share",
        "0.03",
        "--threshold",
        "1%",
        "--max-measurements",
        "1337",
    ];
    let json = common::succeeds(common::knobs().args(args).arg("--json")).json();
    assert!(
        json["stopped"]
            .as_str()
            .unwrap()
            .contains("measurement limit"),
        "{}",
        json["stopped"]
    );
    let unconfirmed = json["unconfirmed"].as_array().unwrap();
    assert!(!unconfirmed.is_empty(), "nothing left out: {json}");
    let reported = json["associations"].as_array().unwrap();
    assert!(unconfirmed.iter().all(|u| !reported.contains(u)));
    let (text, _) = common::ok(&args);
    let line = text
        .lines()
        .find(|l| l.contains("left out, not confirmed"))
        .unwrap_or_else(|| panic!("no left-out line in {text}"));
    for u in unconfirmed {
        let commit = u["commit"].as_u64().unwrap().to_string();
        assert!(line.contains(&commit), "{commit} not in {line}");
    }
}
