//! `knobs changepoints detect --regions` on a real git history of a tiny C program built
//! with debug information: one commit makes `slow_part` run twenty times as many rounds
//! when the `slow` option is set; the detection finds that commit, and the regions name
//! `slow_part` as the function whose instructions moved (in the configurations with `slow`,
//! not in the contrast), and not `steady_part`, whose cost is the same everywhere.
//!
//! The metric is instructions (hardware counters or cachegrind) and the profiles are
//! callgrind's, so nothing depends on the machine's speed or load.

use std::path::Path;

use assert_cmd::Command;

mod common;
use common::git;

/// `slow_part` runs `rounds` thousand more rounds with the `slow` argument; `steady_part`
/// always runs the same.
fn program(rounds: u32, comment: usize) -> String {
    format!(
        "#include <string.h>\n/* revision {comment} */\nstatic volatile long s;\n\
         __attribute__((noinline)) void slow_part(long n) {{ for (long i = 0; i < n; i++) s += i; }}\n\
         __attribute__((noinline)) void steady_part(void) {{ for (long i = 0; i < 300000; i++) s += i; }}\n\
         int main(int c, char **v) {{ long n = 100000; \
         for (int i = 1; i < c; i++) if (!strcmp(v[i], \"slow\")) n += {rounds}000L; \
         slow_part(n); steady_part(); return 0; }}\n"
    )
}

const CHANGED_AT: usize = 6;

/// A history of 12 commits (`CHANGED_AT` makes `slow_part` slower with `slow`) and its spec.
fn fixture(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("prog");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    for i in 0..12 {
        let rounds = if i < CHANGED_AT { 100 } else { 2000 };
        std::fs::write(repo.join("prog.c"), program(rounds, i)).unwrap();
        git(&repo, &["add", "prog.c"]);
        let message = if i == CHANGED_AT {
            "slow_part gets slower".to_string()
        } else {
            format!("revision {i}")
        };
        git(&repo, &["commit", "-q", "-m", &message]);
    }
    let spec = dir.join("knobs.toml");
    // DWARF 4: the valgrind of Debian 12 cannot read all of newer compilers' DWARF 5.
    std::fs::write(
        &spec,
        "name = \"prog\"\n\n[history]\nrepository = \"prog\"\nrange = \"main\"\n\
         build = [[\"cc\", \"-O1\", \"-gdwarf-4\", \"-o\", \"prog\", \"prog.c\"]]\noutput = \"prog\"\n\n\
         [run]\nargs = [\"{options}\"]\n\n[measure]\nrepetitions = 1\nmetric = \"instructions\"\n\n\
         [[workload]]\nname = \"w\"\n\n\
         [[option]]\nname = \"slow\"\non = [\"slow\"]\n\n[[option]]\nname = \"other\"\non = [\"other\"]\n\n\
         [[option]]\nname = \"third\"\non = [\"third\"]\n",
    )
    .unwrap();
    spec
}

fn detect(spec: &Path, json: bool) -> std::process::Output {
    let mut cmd = Command::cargo_bin("knobs").unwrap();
    cmd.args([
        "changepoints",
        "detect",
        "--threshold",
        "50%",
        "--initial-configurations",
        "8",
        "--commit-share",
        "0.3",
        "--measurements",
        "16",
        "--max-iterations",
        "4",
        "--regions",
        "--spec",
    ])
    .arg(spec);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    out
}

#[test]
fn regions_name_the_function_whose_instructions_moved() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixture(dir.path());
    let out = detect(&spec, true);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = json["change_points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{json:#}");
    assert_eq!(
        points[0]["options"],
        serde_json::json!(["slow"]),
        "{json:#}"
    );
    let commit = points[0]["commit"].as_u64().unwrap() as usize;
    assert!(commit.abs_diff(CHANGED_AT) <= 1, "{json:#}");

    let regions = &json["regions"];
    assert!(
        regions["unit"].as_str().unwrap().contains("instructions"),
        "{regions:#}"
    );
    let cp = &regions["change_points"][0];
    // At the commit that changed, its predecessor is compared with it: one commit's code.
    if commit == CHANGED_AT {
        assert_eq!(cp["adjacent"], true, "{cp:#}");
        assert_eq!(cp["before_commit"], CHANGED_AT - 1, "{cp:#}");
    }
    let configurations = cp["configurations"].as_array().unwrap();
    assert!(
        configurations.iter().any(|c| c["associated"] == false),
        "a contrast without `slow` is profiled: {cp:#}"
    );
    let functions = cp["functions"].as_array().unwrap();
    let top = &functions[0];
    assert_eq!(top["function"], "slow_part", "{cp:#}");
    assert_eq!(top["scope"], "associated only", "{cp:#}");
    assert!(top["file"].as_str().unwrap().ends_with("prog.c"), "{top:#}");
    assert_eq!(top["line"], 4, "{top:#}");
    // 200 000 rounds become 2 100 000: the own instructions grow about tenfold.
    let relative = top["relative_change"].as_f64().unwrap();
    assert!(relative > 5.0 && relative < 15.0, "{top:#}");
    assert!(
        functions.iter().all(|f| f["function"] != "steady_part"),
        "steady_part did not move: {cp:#}"
    );

    // The text names it too; the profiles are read back from the cache, not made again.
    let out = detect(&spec, false);
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(text.contains("unit: instructions"), "{text}");
    let regions_text = &text[text.find("regions (").unwrap()..];
    assert!(
        regions_text.contains("slow_part") && !regions_text.contains("steady_part"),
        "{text}"
    );
    assert!(!stderr.contains("under callgrind"), "{stderr}");
}
