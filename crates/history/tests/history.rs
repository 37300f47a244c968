//! The history on a real git repository of a tiny C program, built with the system's C
//! compiler: commits listed, built once and cached, a commit that does not compile recorded
//! with its log and replaced by the closest earlier build, pruning.

use std::path::Path;
use std::process::Command;

use history::{Build, History, Prune};
use measure::SystemSpec;

/// The program at each commit: it spins `WORK` rounds; one commit does not compile.
const FAST: &str = "#include <stdlib.h>\nint main(int c, char **v) { volatile long s = 0; long n = (c > 1 ? atol(v[1]) : 1) * 1000000L; for (long i = 0; i < n; i++) s += i; return 0; }\n";
const BROKEN: &str = "int main(void) { return undeclared_variable; }\n";
const SLOW: &str = "#include <stdlib.h>\nint main(int c, char **v) { volatile long s = 0; long n = (c > 1 ? atol(v[1]) : 1) * 30000000L; for (long i = 0; i < n; i++) s += i; return 0; }\n";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=knobs",
            "-c",
            "user.email=knobs@example.org",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with the commits fast, broken, fixed, slow (oldest first) and a spec
/// beside it; returns the spec's path.
fn fixture(dir: &Path, recipe: &str) -> std::path::PathBuf {
    let repo = dir.join("prog");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    for (text, message) in [
        (FAST, "fast"),
        (BROKEN, "broken"),
        (FAST, "fixed"),
        (SLOW, "slower"),
    ] {
        std::fs::write(repo.join("prog.c"), text).unwrap();
        git(&repo, &["add", "prog.c"]);
        git(&repo, &["commit", "-q", "-m", message]);
    }
    let spec = dir.join("knobs.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"prog\"\n\n[history]\nrepository = \"prog\"\nrange = \"main\"\nbuild = {recipe}\noutput = \"prog\"\n\n[run]\nargs = [\"{{options}}\"]\n\n[[workload]]\nname = \"w\"\n\n[[option]]\nname = \"twice\"\non = [\"2\"]\n"
        ),
    )
    .unwrap();
    spec
}

const RECIPE: &str = r#"[["cc", "-O1", "-o", "prog", "prog.c"]]"#;

#[test]
fn commits_build_once_and_failures_fall_back_to_the_closest_earlier_build() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SystemSpec::load(&fixture(dir.path(), RECIPE)).unwrap();
    let history = History::open(&spec).unwrap();
    let commits = history.commits().unwrap();
    let subjects: Vec<&str> = commits.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(subjects, ["fast", "broken", "fixed", "slower"]);
    assert_eq!(commits[0].id.len(), 40);
    assert_eq!(commits[0].timestamp, 1_704_067_200);
    assert_eq!(history.resolve("main~3").unwrap(), commits[0].id);
    assert!(history.resolve("no-such-rev").is_err());
    assert!(history.status(&commits[0].id).is_none());
    // A local repository is the user's: knobs never fetches into it.
    let e = history.fetch().unwrap_err().to_string();
    assert!(e.contains("local repository"), "{e}");

    // Built, then found in the cache without building again.
    let Build::Built(first) = history.build(&commits[0].id, false).unwrap() else {
        panic!("the first commit builds")
    };
    assert!(!first.cached && first.program.is_file());
    assert!(first.dir.starts_with(dir.path().join(".knobs-builds")));
    let stamp = first.dir.join("left-by-the-test");
    std::fs::write(&stamp, "").unwrap();
    let Build::Built(again) = history.build(&commits[0].id, false).unwrap() else {
        panic!("still built")
    };
    assert!(again.cached && stamp.exists(), "not rebuilt");
    assert_eq!(again.program, first.program);
    assert!(Command::new(&first.program).status().unwrap().success());

    // The broken commit: recorded with the compiler's message, not retried, and replaced
    // by the closest earlier build.
    let Build::Failed(failure) = history.build(&commits[1].id, false).unwrap() else {
        panic!("the broken commit fails")
    };
    assert!(
        failure.why.contains("step 1 `cc -O1 -o prog prog.c`"),
        "{}",
        failure.why
    );
    assert!(
        failure.log_tail.contains("undeclared_variable"),
        "{}",
        failure.log_tail
    );
    assert!(failure.log.is_file());
    assert!(!failure.cached);
    let Some(Build::Failed(recorded)) = history.status(&commits[1].id) else {
        panic!("the failure is recorded")
    };
    assert!(recorded.cached && recorded.log_tail == failure.log_tail);
    assert!(matches!(history.build(&commits[1].id, false).unwrap(), Build::Failed(f) if f.cached));
    let e = history.program(&commits[1].id).unwrap_err().to_string();
    assert!(e.contains("does not build") && e.contains(".log"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    let closest = history.closest_built(&commits, &commits[1].id).unwrap();
    assert_eq!(closest.commit, commits[0].id);
    assert_eq!(
        history
            .closest_built(&commits, &commits[0].id)
            .unwrap()
            .commit,
        commits[0].id
    );
    // Asked to, it is retried (and fails again).
    assert!(matches!(history.build(&commits[1].id, true).unwrap(), Build::Failed(f) if !f.cached));

    let slow = history.program("main").unwrap();
    assert_eq!(slow.commit, commits[3].id);
    assert_eq!(
        history
            .closest_built(&commits, &commits[3].id)
            .unwrap()
            .commit,
        commits[3].id
    );

    // Pruning all but one commit, then failures kept, then everything.
    let keep = [commits[3].id.clone()].into_iter().collect();
    let pruned = history
        .prune(&Prune {
            keep,
            keep_failures: true,
            ..Prune::default()
        })
        .unwrap();
    assert_eq!((pruned.builds, pruned.failures), (1, 0));
    assert!(history.status(&commits[0].id).is_none());
    assert!(history.status(&commits[1].id).is_some());
    assert!(history.status(&commits[3].id).unwrap().is_built());
    let pruned = history.prune(&Prune::default()).unwrap();
    assert_eq!((pruned.builds, pruned.failures), (1, 1));
    let left: Vec<_> = std::fs::read_dir(history.builds_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_changed_recipe_is_another_build_and_a_missing_output_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), RECIPE);
    let spec = SystemSpec::load(&path).unwrap();
    let history = History::open(&spec).unwrap();
    let head = history.resolve("main").unwrap();
    assert!(history.build(&head, false).unwrap().is_built());
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"-O1\"", "\"-O0\"");
    std::fs::write(&path, &text).unwrap();
    let other = History::open(&SystemSpec::load(&path).unwrap()).unwrap();
    assert_ne!(other.recipe_hash(), history.recipe_hash());
    assert!(
        other.status(&head).is_none(),
        "another recipe, another build"
    );
    std::fs::write(
        &path,
        text.replace("output = \"prog\"", "output = \"bin/prog\""),
    )
    .unwrap();
    let wrong = History::open(&SystemSpec::load(&path).unwrap()).unwrap();
    let Build::Failed(f) = wrong.build(&head, false).unwrap() else {
        panic!("no output, no build")
    };
    assert!(f.why.contains("`bin/prog` was not built"), "{}", f.why);
    let names: Vec<String> = std::fs::read_dir(wrong.builds_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(
            |n| n.starts_with(&format!("{head}-{}", wrong.recipe_hash()))
                && !n.ends_with(".log")
                && !n.ends_with(".failed")
        ),
        "nothing that looks built: {names:?}"
    );
}

#[test]
fn spec_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), RECIPE);
    let text = std::fs::read_to_string(&path).unwrap();
    for (from, to, says) in [
        (RECIPE, "[]", "no steps"),
        (RECIPE, "[[]]", "step 1 is an empty command"),
        (
            "output = \"prog\"",
            "output = \"../prog\"",
            "inside the checkout",
        ),
        (
            "range = \"main\"",
            "range = \"main\"\nbranch = \"x\"",
            "unknown field `branch`",
        ),
    ] {
        let e = SystemSpec::parse(&text.replace(from, to), &path)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{e}");
    }
    let gone = text.replace("repository = \"prog\"", "repository = \"elsewhere\"");
    let e = History::open(&SystemSpec::parse(&gone, &path).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not exist"), "{e}");
    let bad_range = text.replace("range = \"main\"", "range = \"v9..v10\"");
    let history = History::open(&SystemSpec::parse(&bad_range, &path).unwrap()).unwrap();
    let e = history.commits().unwrap_err().to_string();
    assert!(
        e.starts_with("git log v9..v10:") && !e.contains('\n'),
        "{e}"
    );
    let plain = SystemSpec::parse(&text, &path).unwrap();
    let e = plain.program().unwrap_err().to_string();
    assert!(e.contains("--commit"), "{e}");
}

#[test]
fn a_url_is_cloned_once_into_the_cache_and_the_repository_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), RECIPE);
    let url = format!("file://{}", dir.path().join("prog").display());
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("repository = \"prog\"", &format!("repository = \"{url}\""));
    std::fs::write(&path, text).unwrap();
    let history = History::open(&SystemSpec::load(&path).unwrap()).unwrap();
    let clone = dir.path().join(".knobs-builds/repository.git");
    assert!(clone.is_dir());
    assert_eq!(history.commits().unwrap().len(), 4);
    assert!(history.program("main").unwrap().program.is_file());
    assert!(history.prune(&Prune::default()).unwrap().builds == 1 && clone.is_dir());
    // The user's repository: no new worktree, index or file.
    let repo = dir.path().join("prog");
    assert_eq!(git(&repo, &["status", "--porcelain", "--ignored"]), "");
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);

    // New upstream: a commit and a tag the clone lacks. Naming them fetches; the branch the
    // range follows moves only when fetched.
    std::fs::write(repo.join("prog.c"), FAST).unwrap();
    git(&repo, &["commit", "-q", "-am", "faster again"]);
    git(&repo, &["tag", "v2"]);
    let newest = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    let history = History::open(&SystemSpec::load(&path).unwrap()).unwrap();
    assert_eq!(history.commits().unwrap().len(), 4);
    assert_eq!(history.resolve("v2").unwrap(), newest);
    assert_eq!(history.commits().unwrap().len(), 5);
    assert!(history.resolve("no-such-tag").is_err());
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "later"]);
    assert_eq!(history.commits().unwrap().len(), 5);
    history.fetch().unwrap();
    assert_eq!(history.commits().unwrap().len(), 6);
}

/// Builds of build options share the cache with commit builds: a commit with no build option
/// set is the build `History::build` made (found, not built again), each set of values is a
/// build of its own with the values in the recipe's environment and `{cppflags}` element,
/// and prune removes them as it does commit builds.
#[test]
fn build_option_variants_share_the_commit_cache() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = r#"[["sh", "-c", "cc -O1 $CPPFLAGS \"$@\" -o prog prog.c && echo \"$CPPFLAGS\" > defines", "sh", "{cppflags}"]]"#;
    let path = fixture(dir.path(), recipe);
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "on = [\"2\"]\n",
        "on = [\"2\"]\n\n[[option]]\nname = \"heavy\"\nbuild = { define = \"HEAVY\" }\n",
    );
    std::fs::write(&path, text).unwrap();
    let spec = SystemSpec::load(&path).unwrap();
    let history = History::open(&spec).unwrap();
    let commit = history.commits().unwrap()[0].id.clone();
    let Build::Built(plain) = history.build(&commit, false).unwrap() else {
        panic!("the first commit builds")
    };
    let variants = history::Variants::at_commit(&history, &commit);
    let config = |text: &str| spec.space.parse_configuration(text).unwrap();
    let Build::Built(same) = variants
        .build(&spec.build_values(&config("twice")), false)
        .unwrap()
    else {
        panic!("built")
    };
    assert!(same.cached && same.program == plain.program, "{same:?}");
    let Build::Built(heavy) = variants
        .build(&spec.build_values(&config("heavy")), false)
        .unwrap()
    else {
        panic!("built")
    };
    assert!(!heavy.cached && heavy.dir != plain.dir);
    assert!(
        heavy
            .dir
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&format!("{commit}-"))
    );
    // -DHEAVY reached both the environment and the argv.
    assert_eq!(
        std::fs::read_to_string(heavy.dir.join("defines")).unwrap(),
        "-DHEAVY\n"
    );
    let pruned = history.prune(&Prune::default()).unwrap();
    assert_eq!(pruned.builds, 2, "{pruned:?}");
}
