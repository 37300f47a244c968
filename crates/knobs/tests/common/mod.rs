//! What several CLI tests share.
#![allow(dead_code)] // each test uses its own part

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use measure::store::StoredRun;
use measure::{Selection, Store};

/// The knobs binary this package builds.
pub fn knobs() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("knobs").unwrap()
}

/// The shared datasets (`../shared/datasets` beside the workspace).
pub fn datasets() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets");
    assert!(
        dir.exists(),
        "shared datasets not found at {}",
        dir.display()
    );
    dir
}

/// A path as an argument of [`ok`] or [`error`].
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Runs `knobs ARGS`, in `dir` if given.
pub fn run_knobs(args: &[&str], dir: Option<&Path>) -> Output {
    let mut cmd = knobs();
    cmd.args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    cmd.output().expect("knobs runs")
}

/// A run of `knobs ARGS` for an assertion's message.
pub fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "knobs {}\nstatus: {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs knobs in `dir`, asserting exit status 0 and no panic; returns (stdout, stderr).
pub fn ok_in(args: &[&str], dir: Option<&Path>) -> (String, String) {
    let out = run_knobs(args, dir);
    assert_eq!(out.status.code(), Some(0), "{}", describe(args, &out));
    let stderr = String::from_utf8(out.stderr.clone()).expect("UTF-8 output");
    assert!(!stderr.contains("panicked"), "{}", describe(args, &out));
    (String::from_utf8(out.stdout).expect("UTF-8 output"), stderr)
}

/// [`ok_in`] in the current directory.
pub fn ok(args: &[&str]) -> (String, String) {
    ok_in(args, None)
}

/// Runs knobs in `dir` expecting a bad-input error: exit status 2, exactly one line on
/// stderr that starts with `knobs: error:`, no panic. Returns that line without the newline.
pub fn error_in(args: &[&str], dir: Option<&Path>) -> String {
    let out = run_knobs(args, dir);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{}", describe(args, &out));
    assert_eq!(out.status.code(), Some(2), "{}", describe(args, &out));
    assert_eq!(
        stderr.lines().count(),
        1,
        "expected one line on stderr\n{}",
        describe(args, &out)
    );
    assert!(stderr.ends_with('\n'), "{}", describe(args, &out));
    assert!(
        stderr.starts_with("knobs: error: "),
        "{}",
        describe(args, &out)
    );
    stderr.trim_end().to_string()
}

/// [`error_in`] in the current directory.
pub fn error(args: &[&str]) -> String {
    error_in(args, None)
}

/// What a knobs that succeeded wrote.
pub struct Ran {
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Ran {
    /// Stdout as the one JSON document `--json` prints.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document: {e}: {}",
                String::from_utf8_lossy(&self.stdout)
            )
        })
    }

    /// Stdout as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("UTF-8 output")
    }
}

/// What a knobs that ended wrote, asserting it succeeded (its stderr says why not).
fn succeeded(out: Output) -> Ran {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    Ran {
        stdout: out.stdout,
        stderr,
    }
}

/// Runs a knobs command, asserting it succeeds.
pub fn succeeds(command: &mut assert_cmd::Command) -> Ran {
    succeeded(command.output().unwrap())
}

/// Runs `knobs ARGS SPEC`, asserting it succeeds.
pub fn knobs_ok(args: &[&str], spec: &Path) -> Ran {
    succeeds(knobs().args(args).arg(spec))
}

/// Starts `knobs ARGS SPEC` in the background, its output piped, for a test to kill or
/// [`finish`].
pub fn spawn_knobs(args: &[&str], spec: &Path) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("knobs"))
        .args(args)
        .arg(spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a knobs from [`spawn_knobs`], asserting it succeeds.
pub fn finish(child: Child) -> Ran {
    succeeded(child.wait_with_output().unwrap())
}

/// Writes `knobs.toml` in `dir`; its path.
pub fn write_spec(dir: &Path, spec: &str) -> PathBuf {
    let path = dir.join("knobs.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// A C program (`main.c`) and its spec (`knobs.toml`) in `dir`; the spec's path.
pub fn write_c_subject(dir: &Path, main_c: &str, spec: &str) -> PathBuf {
    std::fs::write(dir.join("main.c"), main_c).unwrap();
    write_spec(dir, spec)
}

/// A C program and its spec in a fresh temporary directory.
pub fn c_subject(main_c: &str, spec: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_c_subject(dir.path(), main_c, spec);
    (dir, path)
}

/// Copies `files` of `examples/NAME` into `to`.
pub fn copy_example(name: &str, files: &[&str], to: &Path) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    for f in files {
        std::fs::copy(example.join(f), to.join(f)).unwrap();
    }
}

/// Builds `main.c` in `dir` natively as `output` (`clang-19 -O2`, then `extra`), as the
/// approaches that correct for their overhead run it.
pub fn native_build(dir: &Path, output: &str, extra: &[&str]) {
    let status = Command::new("clang-19")
        .args(["-O2", "-o", output, "main.c"])
        .args(extra)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// The runs a store holds under `selection`.
pub fn stored_runs(store: &Path, selection: &Selection) -> Vec<StoredRun> {
    Store::open_existing(store)
        .unwrap()
        .runs(selection)
        .unwrap()
}

/// Polls until `done` says so; a test that waits two minutes is stuck (a guard against
/// hanging, not a timing assertion).
pub fn wait_until<T>(what: &str, mut done: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(t) = done() {
            return t;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "stuck waiting: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Slurm spool directory's submissions: (directory, job id) of each that has one.
pub fn submitted(spool: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join("submission.json")).ok()?;
            let record: serde_json::Value = serde_json::from_str(&text).ok()?;
            Some((e.path(), record["job"].as_str()?.to_string()))
        })
        .collect()
}

/// Runs git in `dir` with a fixed author, asserting it succeeds; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=knobs",
            "-c",
            "user.email=knobs@example.org",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A new git repository `dir/prog` on branch `main`.
pub fn new_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("prog");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    repo
}

/// Writes `file` in `repo` and commits it.
pub fn commit_file(repo: &Path, file: &str, text: &str, message: &str) {
    std::fs::write(repo.join(file), text).unwrap();
    git(repo, &["add", file]);
    git(repo, &["commit", "-q", "-m", message]);
}

/// The build of `prog` from `prog.c` with the system's C compiler, for [`history_spec`].
pub const CC_BUILD: &str = r#"[["cc", "-O1", "-o", "prog", "prog.c"]]"#;

/// A spec of the history of [`new_repo`]'s `main`: each commit built by the commands `build`
/// into `prog`, run with the options' arguments; `rest` follows (the measuring, the
/// workloads and the options).
pub fn history_spec(build: &str, rest: &str) -> String {
    format!(
        r#"name = "prog"
[history]
repository = "prog"
range = "main"
build = {build}
output = "prog"
[run]
args = ["{{options}}"]
{rest}"#
    )
}

/// A model file's terms as labels (`PACKED·MODE=2`; the intercept is ``).
pub fn term_labels(file: &serde_json::Value) -> Vec<String> {
    file["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("·")
        })
        .collect()
}

/// Starts the local Slurm cluster (`scripts/slurm-local.sh start`) once, and lets one test
/// at a time use it (the tests count jobs and cancel tasks; their jobs would also wait on
/// each other's on two CPUs).
pub fn slurm_cluster() -> MutexGuard<'static, ()> {
    static STARTED: OnceLock<()> = OnceLock::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    STARTED.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-local.sh");
        let out = Command::new("bash")
            .arg(script)
            .arg("start")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "slurm-local.sh start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
    guard
}

/// Every valid configuration's count of the whole program by the counting build with no
/// probe (`instrumented::counting::plain_counting_build`): the ground truth in a counted
/// white-box model's unit.
pub fn counted_truth(spec_path: &Path, work: &Path) -> Vec<(space::Configuration, f64)> {
    let spec = measure::SystemSpec::load(spec_path).unwrap();
    let settings = instrumented::Settings::new(work.to_path_buf());
    let (binary, _) = instrumented::counting::plain_counting_build(&spec, &settings).unwrap();
    let workload = spec.workload(None).unwrap();
    let valid = space::ValidConfigurations::new(&spec.space).unwrap();
    valid
        .iter()
        .map(|c| {
            let file = work.join("truth.tsv");
            let mut invocation = spec.invocation_of(binary.clone(), &c, workload).unwrap();
            invocation
                .env
                .push(("KNOBS_REGION_TIMES".into(), file.display().to_string()));
            let result = measure::runner::run(&invocation);
            assert!(result.outcome.is_ok(), "{}", result.stderr_tail);
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(text.contains("\nunit\tinstructions\n"), "{text}");
            let total = text
                .lines()
                .find_map(|l| l.strip_prefix("total\t"))
                .unwrap()
                .parse()
                .unwrap();
            (c, total)
        })
        .collect()
}

/// A model's mean absolute percentage error over `truth`, and the worst configuration's.
pub fn model_errors(
    spec_path: &Path,
    model: &Path,
    truth: &[(space::Configuration, f64)],
) -> (f64, f64) {
    let spec = measure::SystemSpec::load(spec_path).unwrap();
    let names: Vec<String> = spec
        .space
        .ids()
        .map(|o| spec.space.option(o).name.clone())
        .collect();
    let bound = model::ModelFile::load(model).unwrap().bind(&names).unwrap();
    let percent: Vec<f64> = truth
        .iter()
        .map(|(c, t)| {
            let row: Vec<f64> = c.0.iter().map(|v| f64::from(*v)).collect();
            100.0 * (bound.predict(&row) - t).abs() / t
        })
        .collect();
    let worst = percent.iter().copied().fold(0.0, f64::max);
    (percent.iter().sum::<f64>() / percent.len() as f64, worst)
}
