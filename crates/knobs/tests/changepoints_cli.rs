//! `knobs changepoints detect` on a real git history of a tiny C program built with the
//! system's C compiler: one commit does not build, one makes the `heavy` option ten times
//! slower; the detection finds that commit and that option, reports the failed build, and
//! a second run resumes from the store without running anything again.

use assert_cmd::Command;

mod common;
use common::git;

/// The program spins `base` million rounds, and `heavy` million more with the `heavy`
/// argument.
fn program(heavy: u32, comment: usize) -> String {
    format!(
        "#include <string.h>\n/* revision {comment} */\nint main(int c, char **v) {{ volatile long s = 0; long n = 4000000L; \
         for (int i = 1; i < c; i++) if (!strcmp(v[i], \"heavy\")) n += {heavy}000000L; \
         for (long i = 0; i < n; i++) s += i; return 0; }}\n"
    )
}

#[test]
fn detect_finds_the_commit_and_option_that_changed_performance() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("prog");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let changed_at = 24;
    for i in 0..40 {
        let text = if i == 9 {
            "int main(void) { return undeclared; }\n".to_string()
        } else {
            program(if i < changed_at { 4 } else { 60 }, i)
        };
        std::fs::write(repo.join("prog.c"), text).unwrap();
        git(&repo, &["add", "prog.c"]);
        let message = if i == changed_at {
            "heavy gets slower".to_string()
        } else {
            format!("revision {i}")
        };
        git(&repo, &["commit", "-q", "-m", &message]);
    }
    let spec = dir.path().join("knobs.toml");
    std::fs::write(
        &spec,
        "name = \"prog\"\n\n[history]\nrepository = \"prog\"\nrange = \"main\"\n\
         build = [[\"cc\", \"-O1\", \"-o\", \"prog\", \"prog.c\"]]\noutput = \"prog\"\n\n\
         [run]\nargs = [\"{options}\"]\n\n[measure]\nrepetitions = 3\n\n[[workload]]\nname = \"w\"\n\n\
         [[option]]\nname = \"heavy\"\non = [\"heavy\"]\n\n[[option]]\nname = \"other\"\non = [\"other\"]\n",
    )
    .unwrap();
    let args = [
        "changepoints",
        "detect",
        "--threshold",
        "50%",
        "--initial-configurations",
        "4",
        "--commit-share",
        "0.1",
        "--measurements",
        "24",
        "--max-iterations",
        "8",
        "--json",
        "--spec",
    ];
    let out = Command::cargo_bin("knobs")
        .unwrap()
        .args(args)
        .arg(&spec)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = json["change_points"].as_array().unwrap();
    let found = points.iter().find(|c| {
        c["commit"].as_u64().unwrap().abs_diff(changed_at as u64) <= 5
            && c["options"]
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o == "heavy")
    });
    let found = found
        .unwrap_or_else(|| panic!("no change point near {changed_at} with `heavy`: {points:#?}"));
    assert!(
        found["relative_change"].as_f64().unwrap() > 1.0,
        "{found:#?}"
    );
    assert!(
        points.iter().all(|c| c["options"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o != "other")),
        "`other` changes nothing: {points:#?}"
    );
    let failed = json["effort"]["failed_builds"].as_array().unwrap();
    assert!(
        failed.len() <= 1
            && failed
                .iter()
                .all(|f| f["log"].as_str().unwrap().ends_with(".log")),
        "{failed:?}"
    );
    let runs = json["effort"]["runs"].as_u64().unwrap();
    assert!(runs > 0);
    // The same detection again: everything is read back from the store.
    let again = Command::cargo_bin("knobs")
        .unwrap()
        .args(args)
        .arg(&spec)
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    let json2: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        json2["effort"]["runs"].as_u64(),
        Some(0),
        "{}",
        json2["effort"]
    );
    assert_eq!(json2["change_points"], json["change_points"]);
    // Text output names the commit's subject.
    let text = Command::cargo_bin("knobs")
        .unwrap()
        .args(&args[..args.len() - 2])
        .arg("--spec")
        .arg(&spec)
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("heavy"), "{text}");
    assert!(text.contains("effort:"), "{text}");
}
