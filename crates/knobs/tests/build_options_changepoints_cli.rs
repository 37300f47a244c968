//! `knobs changepoints detect` across versions and compile-time variants: a real git history
//! of a tiny C program, each commit built with clang-19 once per set of build-option values.
//! One commit makes the code under `#ifdef HEAVY` twenty times slower; `heavy` is a build
//! option (`-DHEAVY`), beside three run-time options. The detection must find that commit and
//! associate it with `heavy`.
//!
//! The metric is instructions, as in `changepoints_cli.rs`: nothing depends on the machine's
//! speed or load.

use std::path::Path;

mod common;

/// 50,000 rounds, and `heavy` ten thousand more when built with `-DHEAVY`.
fn program(heavy: u32, revision: usize) -> String {
    format!(
        "/* revision {revision} */\nint main(void) {{ volatile long s = 0; long n = 50000L;\n\
         #ifdef HEAVY\n n += {heavy}0000L;\n#endif\n\
         for (long i = 0; i < n; i++) s += i; return 0; }}\n"
    )
}

const CHANGED_AT: usize = 14;
const COMMITS: usize = 24;

const ARGS: [&str; 14] = [
    "changepoints",
    "detect",
    "--threshold",
    "150%",
    "--initial-configurations",
    "12",
    "--commit-share",
    "0.15",
    "--measurements",
    "24",
    "--max-iterations",
    "6",
    "--json",
    "--spec",
];

fn fixture(dir: &Path) -> std::path::PathBuf {
    let repo = common::new_repo(dir);
    for i in 0..COMMITS {
        let text = program(if i < CHANGED_AT { 5 } else { 100 }, i);
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
            r#"[["clang-19", "-O1", "{cppflags}", "-o", "prog", "prog.c"]]"#,
            "[measure]\nrepetitions = 1\nmetric = \"instructions\"\n\n\
             [[workload]]\nname = \"w\"\n\n\
             [[option]]\nname = \"heavy\"\nbuild = { define = \"HEAVY\" }\n\n\
             [[option]]\nname = \"other\"\non = [\"other\"]\n\n\
             [[option]]\nname = \"third\"\non = [\"third\"]\n\n\
             [[option]]\nname = \"fourth\"\non = [\"fourth\"]\n",
        ),
    )
}

#[test]
fn detect_finds_a_change_that_depends_on_a_build_option() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture(dir.path());
    let json = common::succeeds(common::knobs().args(ARGS).arg(&spec)).json();
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
        .map(|c| format!("{} {:?}", c["commit"], options(c)))
        .collect();
    let found = points.iter().any(|c| {
        c["commit"].as_u64().unwrap().abs_diff(CHANGED_AT as u64) <= 3 && options(c) == ["heavy"]
    });
    assert!(
        found && points.len() == 1,
        "not the one change near {CHANGED_AT} with `heavy`: {summary:?}"
    );
    // Each commit was built at most once per value of `heavy`.
    let effort = &json["effort"];
    let builds = effort["builds"].as_u64().unwrap() + effort["cached_builds"].as_u64().unwrap();
    assert!(builds > 0 && builds <= 2 * COMMITS as u64, "{effort}");
    let variants = std::fs::read_dir(dir.path().join(".knobs-builds"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("prog").is_file())
        .count();
    assert_eq!(
        variants as u64,
        effort["builds"].as_u64().unwrap(),
        "{effort}"
    );
    let again = common::succeeds(common::knobs().args(ARGS).arg(&spec)).json();
    assert_eq!(
        again["effort"]["runs"].as_u64(),
        Some(0),
        "{}",
        again["effort"]
    );
    assert_eq!(
        again["effort"]["builds"].as_u64(),
        Some(0),
        "{}",
        again["effort"]
    );
}
