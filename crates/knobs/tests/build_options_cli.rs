//! `knobs measure` of a spec whose options act on the build: a C program compiled with
//! clang-19 in the test, once per distinct set of build-option values, from the build cache
//! the second time; a configuration whose build fails is stored as failed with its log.

use std::path::Path;

mod common;
use common::{knobs, knobs_ok, s};

/// Spins `ROUNDS` thousand rounds (a numeric build option) of work, more of it with
/// `HEAVY`; a run-time `twice` doubles it. `BROKEN` does not compile.
const PROGRAM: &str = r#"#include <stdlib.h>
#ifndef ROUNDS
#error ROUNDS must be defined
#endif
#ifdef BROKEN
#error this variant does not build
#endif
int main(int argc, char **argv) {
    volatile long s = 0;
    long n = ROUNDS * 1000L * (argc > 1 ? 2 : 1);
#ifdef HEAVY
    n *= 3;
#endif
    for (long i = 0; i < n; i++) s += i;
    return 0;
}
"#;

/// The spec: two build options (`heavy`: `-DHEAVY`, `rounds`: `-DROUNDS={value}`), an
/// optimisation level as compiler flags, and a run-time option; `extra` follows.
fn spec(extra: &str) -> String {
    format!(
        r#"name = "variants"

[build]
dir = "src"
recipe = [["clang-19", "{{cppflags}}", "{{cflags}}", "-o", "prog", "prog.c", "{{ldflags}}"]]
output = "prog"

[run]
args = ["{{options}}"]

[measure]
repetitions = 2

[[workload]]
name = "w"

[[option]]
name = "heavy"
build = {{ define = "HEAVY" }}

[[option]]
name = "rounds"
values = [1, 2]
build = {{ define = "ROUNDS" }}

[[option]]
name = "o2"
build = {{ flags = ["-O2"], off_flags = ["-O0"] }}

[[option]]
name = "twice"
on = ["2"]
{extra}"#
    )
}

fn subject(dir: &Path, extra: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/prog.c"), PROGRAM).unwrap();
    common::write_spec(dir, &spec(extra))
}

/// Built program directories in the cache.
fn built_dirs(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(".knobs-builds"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("prog").is_file())
        .count()
}

#[test]
fn one_build_per_set_of_build_values_and_none_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    let spec = subject(dir.path(), "");
    let first = knobs_ok(&["measure", "--json", "--spec"], &spec);
    let json = first.json();
    // 2 (heavy) × 2 (rounds) × 2 (o2) sets of build values, 16 configurations with `twice`.
    assert_eq!(json["configurations"], 16, "{}", first.stderr);
    assert_eq!(json["builds"]["variants"], 8, "{json}");
    assert_eq!(json["builds"]["built"], 8, "{json}");
    assert_eq!(json["builds"]["cached"], 0, "{json}");
    assert_eq!(json["runs"], 32, "{json}");
    assert!(json["builds"]["build_seconds"].as_f64().unwrap() > 0.0);
    assert!(
        first
            .stderr
            .contains("8 builds for 8 sets of build-option values: 8 built in"),
        "{}",
        first.stderr
    );
    assert_eq!(built_dirs(dir.path()), 8);

    // The second measure builds nothing and runs nothing.
    let second = knobs_ok(&["measure", "--json", "--spec"], &spec).json();
    assert_eq!(second["builds"]["built"], 0, "{second}");
    assert_eq!(second["builds"]["cached"], 8, "{second}");
    assert_eq!(second["runs"], 0, "{second}");
    assert_eq!(built_dirs(dir.path()), 8);

    // The build options are options: the stored configurations name them. The builds'
    // time is stored apart from the runs'.
    let shown = knobs_ok(&["results", "show", "--json", "--spec"], &spec).json();
    let configurations = shown["configurations"].as_array().unwrap();
    assert_eq!(configurations.len(), 16);
    assert!(
        configurations
            .iter()
            .any(|c| c["configuration"].as_str().unwrap().contains("heavy")),
        "{shown}"
    );
    assert_eq!(shown["builds"]["builds"], 8, "{shown}");
    assert_eq!(shown["builds"]["failed"], 0, "{shown}");
    assert!(
        shown["builds"]["seconds"].as_f64().unwrap() > 0.0,
        "{shown}"
    );
    let table = knobs_ok(&["results", "show", "--spec"], &spec).text();
    assert!(
        table.contains(
            "builds (apart from the runs' times): 8 sets of build-option values, 0 failed, "
        ),
        "{table}"
    );
    // So does the HTML report.
    let page = dir.path().join("report.html");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_knobs"))
        .args(["report", "--spec"])
        .arg(&spec)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("8 builds of the build options' values (0 failed), "),
        "the report shows no build time"
    );

    // An edited source builds again, each set once more.
    std::fs::write(dir.path().join("src/prog.c"), format!("{PROGRAM}\n")).unwrap();
    let third = knobs_ok(
        &["measure", "--json", "--sample", "random:3", "--spec"],
        &spec,
    )
    .json();
    assert!(third["builds"]["built"].as_u64().unwrap() >= 1, "{third}");
    assert_eq!(third["builds"]["cached"], 0, "{third}");
}

#[test]
fn a_configuration_that_does_not_build_is_stored_as_failed_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let spec = subject(
        dir.path(),
        "\n[[option]]\nname = \"broken\"\nbuild = { define = \"BROKEN\" }\n",
    );
    let store = dir.path().join("knobs.db");
    let out = knobs()
        .args(["measure", "--json", "--sample", "all", "--spec", s(&spec)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "some failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["builds"]["variants"], 16, "{json}");
    assert_eq!(json["builds"]["failed"], 8, "{json}");
    assert_eq!(json["failed"].as_array().unwrap().len(), 16, "{json}");
    let runs = common::stored_runs(&store, &measure::Selection::default());
    let failed: Vec<_> = runs.iter().filter(|r| !r.is_ok()).collect();
    assert_eq!(failed.len(), 16);
    for run in &failed {
        assert!(
            run.configuration.contains("broken"),
            "{}",
            run.configuration
        );
        let detail = run.detail.as_deref().unwrap();
        assert!(
            detail.starts_with("build failed: step 1 `clang-19")
                && detail.contains("-DBROKEN")
                && detail.contains(".log"),
            "{detail}"
        );
        let tail = run.stderr_tail.as_deref().unwrap();
        assert!(tail.contains("this variant does not build"), "{tail}");
    }
    assert!(runs.iter().filter(|r| r.is_ok()).count() == 32);
    // Again: the failures come from the cache and the store, nothing is built or run.
    let again = knobs()
        .args(["measure", "--json", "--accept-failures", "--spec", s(&spec)])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        (json["builds"]["built"].as_u64(), json["runs"].as_u64()),
        (Some(0), Some(0)),
        "{json}"
    );
    assert_eq!(
        common::stored_runs(&store, &measure::Selection::default()).len(),
        48
    );
}

#[test]
fn bad_build_keys_are_one_line_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let spec = subject(dir.path(), "");
    let text = std::fs::read_to_string(&spec).unwrap();
    for (from, to, says) in [
        (
            "build = { define = \"HEAVY\" }",
            "build = { defines = \"HEAVY\" }",
            "unknown field `defines`",
        ),
        (
            "build = { define = \"HEAVY\" }",
            "build = { define = \"HEAVY=2\" }",
            "option `heavy`: build: define `HEAVY=2` is not a macro name",
        ),
        (
            "build = { define = \"ROUNDS\" }",
            "build = { define = \"ROUNDS\", off_flags = [\"-g\"] }",
            "option `rounds`: build: `off_flags`/`off_link`/`off_configure` are for binary options",
        ),
        ("recipe = [[", "recipes = [[", "unknown field `recipes`"),
        (
            "output = \"prog\"",
            "output = \"../prog\"",
            "build: `output` must be a path inside the checkout",
        ),
        (
            "[run]\n",
            "[run]\nprogram = \"./prog\"\n",
            "run.program: with build options the program is each configuration's build",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        std::fs::write(&spec, text.replacen(from, to, 1)).unwrap();
        let line = common::error_in(&["measure", "--spec", s(&spec)], None);
        assert!(line.contains(says), "{to}: {line}");
    }
    // Without a recipe, the build options are named.
    let no_recipe = text
        .replace("[build]\n", "")
        .replace("dir = \"src\"\n", "")
        .lines()
        .filter(|l| !l.starts_with("recipe") && !l.starts_with("output"))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&spec, no_recipe).unwrap();
    let line = common::error_in(&["measure", "--spec", s(&spec)], None);
    assert!(
        line.contains(
            "options `heavy`, `rounds`, `o2` act on the build, but the spec has no build recipe"
        ),
        "{line}"
    );
}

/// The white-box approaches analyse one build: on a spec with build options each says so in
/// one line, naming them.
#[test]
fn white_box_approaches_name_the_build_options_they_cannot_take() {
    let dir = tempfile::tempdir().unwrap();
    let spec = subject(dir.path(), "");
    let line = common::error_in(&["crush", "--spec", s(&spec)], None);
    assert!(
        line.contains(
            "ConfigCrusher needs one build, but options `heavy`, `rounds`, `o2` act on the build"
        ),
        "{line}"
    );
    assert!(
        line.contains("`knobs simulator` writes a run-time spec ConfigCrusher reads"),
        "{line}"
    );
}

/// `knobs measure --commit` of a spec with build options and `[history]`: the commit is
/// built once per set of values with the history's recipe, the runs are stored under the
/// commit, and the build without any value is the commit's build `knobs history` knows.
#[test]
fn a_commit_is_built_once_per_set_of_values_and_shares_its_plain_build() {
    let dir = tempfile::tempdir().unwrap();
    let repo = common::new_repo(dir.path());
    common::commit_file(&repo, "prog.c", "int main(void) { return 0; }\n", "first");
    common::commit_file(&repo, "prog.c", PROGRAM, "second");
    let spec = common::write_spec(
        dir.path(),
        &common::history_spec(
            r#"[["clang-19", "-O1", "-DROUNDS=1", "{cppflags}", "-o", "prog", "prog.c"]]"#,
            "[measure]\nrepetitions = 1\n\n[[workload]]\nname = \"w\"\n\n\
             [[option]]\nname = \"heavy\"\nbuild = { define = \"HEAVY\" }\n\n\
             [[option]]\nname = \"twice\"\non = [\"2\"]\n",
        ),
    );
    let json = knobs_ok(&["measure", "--commit", "main", "--json", "--spec"], &spec).json();
    assert_eq!(json["builds"]["variants"], 2, "{json}");
    assert_eq!(json["builds"]["built"], 2, "{json}");
    assert_eq!(json["runs"], 4, "{json}");
    let commit = common::git(&repo, &["rev-parse", "main"])
        .trim()
        .to_string();
    assert_eq!(json["commit"], commit.as_str());
    let at_commit = measure::Selection {
        commit: commit.clone(),
        ..measure::Selection::default()
    };
    let runs = common::stored_runs(&dir.path().join("knobs.db"), &at_commit);
    assert_eq!(runs.len(), 4);
    // The build of no values is the commit's own build: `knobs history` lists it as built.
    let list = knobs_ok(&["history", "list"], &spec).text();
    let line = list.lines().find(|l| l.contains(" second")).unwrap();
    assert!(line.contains("  built "), "{list}");
}
