//! The build cache: one directory per built commit and recipe, a record per failed one.
//!
//! In `.knobs-builds/`:
//! - `<commit>-<recipe>/`: the checkout, built; `.knobs-build.json` in it says so. It gets
//!   this name only by a rename once the build succeeded and the program exists.
//! - `<commit>-<recipe>.log`: the whole build log, of a build or a failure.
//! - `<commit>-<recipe>.failed`: a failed build (JSON: how it failed, the log's tail).
//! - `.tmp-…-<pid>@<host>`: a build, record or removal in progress by process `pid` of
//!   `host`; removed once that process is gone, by a knobs on the same host (machines that
//!   share the cache, a cluster's nodes, leave each other's alone).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use measure::{HistorySpec, Invocation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, git, io_error};

/// How many lines of a failed build's log are kept in its record.
pub const LOG_TAIL_LINES: usize = 40;
/// The file in a built directory that says it is complete.
const MARKER: &str = ".knobs-build.json";
const TEMPORARY: &str = ".tmp-";

/// A commit's build, or its failure.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Build {
    Built(Built),
    Failed(BuildFailure),
}

impl Build {
    pub fn is_built(&self) -> bool {
        matches!(self, Build::Built(_))
    }

    pub fn commit(&self) -> &str {
        match self {
            Build::Built(b) => &b.commit,
            Build::Failed(f) => &f.commit,
        }
    }
}

/// A built commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Built {
    /// The full id.
    pub commit: String,
    /// The built checkout.
    pub dir: PathBuf,
    /// The program to run: the recipe's `output` in `dir`.
    pub program: PathBuf,
    /// How long the build took.
    pub seconds: f64,
    /// Whether it came from the cache (built earlier) rather than by this call.
    pub cached: bool,
}

/// A commit that did not build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildFailure {
    /// The full id.
    pub commit: String,
    /// Which step failed and how: "step 2 `./configure`: exit status 1".
    pub why: String,
    /// The last lines of the build log.
    pub log_tail: String,
    /// The whole build log.
    pub log: PathBuf,
    pub seconds: f64,
    /// Whether it came from the cache (recorded earlier) rather than by this call.
    pub cached: bool,
}

/// What [`crate::History::prune`] keeps; the default keeps nothing.
#[derive(Clone, Debug, Default)]
pub struct Prune {
    /// Commits (full ids) whose builds and failures under the current recipe stay.
    pub keep: BTreeSet<String>,
    /// Only remove what was built or recorded before this time.
    pub older_than: Option<SystemTime>,
    /// Keep recorded failures (so they are still not retried).
    pub keep_failures: bool,
}

/// What a prune removed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Pruned {
    pub builds: usize,
    pub failures: usize,
    /// Leftovers of killed builds.
    pub leftovers: usize,
}

/// The recipe's identity: the steps and the output, hashed (12 hex digits).
pub fn recipe_hash(spec: &HistorySpec) -> String {
    hash_of(&(&spec.build, &spec.output))
}

/// A value's identity: its JSON hashed (12 hex digits).
pub(crate) fn hash_of(value: &impl Serialize) -> String {
    let json = serde_json::to_string(value).expect("strings serialise");
    Sha256::digest(json.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn entry_name(commit: &str, recipe: &str) -> String {
    format!("{commit}-{recipe}")
}

/// What the cache holds for a commit under a recipe.
pub fn status(builds: &Path, commit: &str, recipe: &str, output: &str) -> Option<Build> {
    status_of(builds, &entry_name(commit, recipe), commit, output)
}

/// What the cache holds under an entry name.
pub(crate) fn status_of(builds: &Path, name: &str, commit: &str, output: &str) -> Option<Build> {
    let dir = builds.join(name);
    if let Ok(text) = std::fs::read_to_string(dir.join(MARKER))
        && let Ok(record) = serde_json::from_str::<BuiltRecord>(&text)
        && dir.join(output).is_file()
    {
        return Some(Build::Built(Built {
            commit: commit.to_string(),
            program: dir.join(output),
            dir,
            seconds: record.seconds,
            cached: true,
        }));
    }
    let text = std::fs::read_to_string(builds.join(format!("{name}.failed"))).ok()?;
    let mut failure: BuildFailure = serde_json::from_str(&text).ok()?;
    failure.cached = true;
    Some(Build::Failed(failure))
}

/// What a built directory's marker records.
#[derive(Serialize, Deserialize)]
struct BuiltRecord {
    commit: String,
    recipe: String,
    output: String,
    seconds: f64,
}

/// Where a build's files come from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// A checkout of the job's commit from this git directory.
    Commit(PathBuf),
    /// A copy of this directory.
    Dir(PathBuf),
}

/// One build: what to build, how, and its name in the cache.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    /// The cache entry's name.
    pub name: String,
    /// The commit (or the source directory's digest) built.
    pub commit: String,
    /// The recipe's key, as its marker records it.
    pub recipe: String,
    pub source: Source,
    /// Argv lists, run in order in the fresh tree.
    pub steps: Vec<Vec<String>>,
    pub output: String,
    pub timeout: Duration,
    /// Environment of every step (a configuration's `CFLAGS`…).
    pub env: Vec<(String, String)>,
}

/// Builds a job: its tree made fresh in a temporary directory, every step in it in order
/// (their output appended to the log), then the rename into place.
pub(crate) fn build_job(builds: &Path, job: &Job) -> Result<Build, Error> {
    let (commit, recipe) = (job.commit.as_str(), job.recipe.as_str());
    std::fs::create_dir_all(builds).map_err(io_error(builds))?;
    remove_leftovers(builds);
    let name = job.name.clone();
    let temporary = temporary_name(&name);
    let work = builds.join(&temporary);
    let work_log = builds.join(format!("{temporary}.log"));
    let final_dir = builds.join(&name);
    let final_log = builds.join(format!("{name}.log"));
    let failed_record = builds.join(format!("{name}.failed"));
    let _ = remove_tree(&work);
    std::fs::create_dir(&work).map_err(io_error(&work))?;
    let started = Instant::now();
    let index = builds.join(format!("{temporary}.index"));
    let filled = match &job.source {
        Source::Commit(git_dir) => git::checkout(git_dir, commit, &work, &index),
        Source::Dir(dir) => copy_tree(dir, &work).map_err(io_error(dir)),
    };
    if let Err(e) = filled {
        let _ = remove_tree(&work);
        return Err(e);
    }
    let mut log = std::fs::File::create(&work_log).map_err(io_error(&work_log))?;
    let failure = run_recipe(job, &work, &mut log, started);
    let seconds = started.elapsed().as_secs_f64();
    drop(log);
    match failure {
        None => {
            let record = BuiltRecord {
                commit: commit.to_string(),
                recipe: recipe.to_string(),
                output: job.output.clone(),
                seconds,
            };
            let marker = work.join(MARKER);
            let json = serde_json::to_string_pretty(&record).expect("a record serialises");
            std::fs::write(&marker, json).map_err(io_error(&marker))?;
            // An earlier failure of this commit is superseded.
            let _ = std::fs::remove_file(&failed_record);
            std::fs::rename(&work_log, &final_log).map_err(io_error(&final_log))?;
            if let Err(e) = std::fs::rename(&work, &final_dir) {
                // Another process built it meanwhile: use that build.
                let _ = remove_tree(&work);
                if let Some(built @ Build::Built(_)) = status_of(builds, &name, commit, &job.output)
                {
                    return Ok(built);
                }
                return Err(io_error(&final_dir)(e));
            }
            Ok(Build::Built(Built {
                commit: commit.to_string(),
                program: final_dir.join(&job.output),
                dir: final_dir,
                seconds,
                cached: false,
            }))
        }
        Some(why) => {
            let _ = remove_tree(&work);
            std::fs::rename(&work_log, &final_log).map_err(io_error(&final_log))?;
            let failure = BuildFailure {
                commit: commit.to_string(),
                why,
                log_tail: log_tail(&final_log, LOG_TAIL_LINES),
                log: final_log,
                seconds,
                cached: false,
            };
            // Written under a temporary name and renamed: a record is whole or absent.
            let partial = builds.join(format!("{temporary}.failed"));
            let json = serde_json::to_string_pretty(&failure).expect("a record serialises");
            std::fs::write(&partial, json).map_err(io_error(&partial))?;
            std::fs::rename(&partial, &failed_record).map_err(io_error(&failed_record))?;
            Ok(Build::Failed(failure))
        }
    }
}

/// Runs the steps in `dir`; how the build failed, or `None` when the program was built.
fn run_recipe(job: &Job, dir: &Path, log: &mut std::fs::File, started: Instant) -> Option<String> {
    let deadline = job.timeout;
    if !job.env.is_empty() {
        let shown: Vec<String> = job.env.iter().map(|(k, v)| format!("{k}='{v}'")).collect();
        let _ = writeln!(log, "# {}", shown.join(" "));
    }
    for (i, step) in job.steps.iter().enumerate() {
        // Arguments with spaces quoted, so the log's line reads as the command it was.
        let shown = step
            .iter()
            .map(|a| {
                if a.contains(char::is_whitespace) || a.is_empty() {
                    format!("'{a}'")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(log, "$ {shown}");
        let Some(left) = deadline.checked_sub(started.elapsed()) else {
            return Some(format!("timed out after {} s", deadline.as_secs()));
        };
        // A relative path names a file of the checkout (`./configure`), not one where knobs
        // was started.
        let program = if step[0].contains('/') {
            dir.join(&step[0])
        } else {
            PathBuf::from(&step[0])
        };
        let invocation = Invocation {
            program,
            arg0: None,
            args: step[1..].to_vec(),
            env: job.env.clone(),
            steady_env: false,
            cwd: dir.to_path_buf(),
            stdin: None,
            timeout: left.max(Duration::from_millis(1)),
        };
        let result = measure::runner::run_logged(&invocation, log);
        match result.outcome {
            measure::runner::Outcome::Ok => {}
            measure::runner::Outcome::Timeout => {
                let _ = writeln!(log, "knobs: the build timed out");
                return Some(format!(
                    "step {} `{shown}`: timed out after {} s in all",
                    i + 1,
                    deadline.as_secs()
                ));
            }
            outcome => {
                let why = outcome.describe();
                let _ = writeln!(log, "knobs: {why}");
                return Some(format!("step {} `{shown}`: {why}", i + 1));
            }
        }
    }
    if !dir.join(&job.output).is_file() {
        let _ = writeln!(log, "knobs: no `{}` after the build", job.output);
        return Some(format!(
            "every step succeeded but `{}` was not built",
            job.output
        ));
    }
    None
}

/// The names a source directory's copy leaves out: knobs' own files beside a spec (its build
/// cache, stores, marker directories) and version control.
fn left_out(name: &str) -> bool {
    name.starts_with(".knobs") || name == ".git" || name.starts_with("knobs.db")
}

/// Copies a directory tree (files, directories, symbolic links as links), but what
/// [`left_out`] names.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if left_out(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// The SHA-256 of a directory tree as [`copy_tree`] copies it (paths, kinds, contents), in
/// 64 hex digits: a build of a source directory is keyed by it.
pub(crate) fn tree_digest(dir: &Path) -> std::io::Result<String> {
    fn walk(dir: &Path, relative: &Path, hasher: &mut Sha256) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name();
            if left_out(&name.to_string_lossy()) {
                continue;
            }
            let path = relative.join(&name);
            let kind = entry.file_type()?;
            hasher.update(path.to_string_lossy().as_bytes());
            if kind.is_dir() {
                hasher.update(b"/\0");
                walk(&entry.path(), &path, hasher)?;
            } else if kind.is_symlink() {
                hasher.update(b"@\0");
                hasher.update(
                    std::fs::read_link(entry.path())?
                        .to_string_lossy()
                        .as_bytes(),
                );
            } else {
                let bytes = std::fs::read(entry.path())?;
                hasher.update(format!("\0{}\0", bytes.len()).as_bytes());
                hasher.update(&bytes);
            }
        }
        Ok(())
    }
    let mut hasher = Sha256::new();
    walk(dir, Path::new(""), &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The last `lines` lines of a file (from at most its last 64 KiB).
fn log_tail(path: &Path, lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The temporary name of `stem` made by this process: `.tmp-<stem>-<pid>@<host>`. The host
/// tells a killed build from one running on another machine that shares the cache (a
/// cluster's nodes).
pub(crate) fn temporary_name(stem: &str) -> String {
    format!(
        "{TEMPORARY}{stem}-{}@{}",
        std::process::id(),
        measure::store::host_name()
    )
}

/// Whether a process of this machine is running.
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The process a temporary name ends with (`.tmp-…-<pid>[@<host>][.log|.index|.failed]`)
/// and its host (`None`: names made before they had one, on this machine).
fn owner(name: &str) -> Option<(u32, Option<&str>)> {
    let stem = name.strip_prefix(TEMPORARY)?;
    let stem = [".log", ".index", ".failed"]
        .iter()
        .find_map(|ext| stem.strip_suffix(ext))
        .unwrap_or(stem);
    let (stem, host) = match stem.rsplit_once('@') {
        Some((stem, host)) => (stem, Some(host)),
        None => (stem, None),
    };
    Some((stem.rsplit('-').next()?.parse().ok()?, host))
}

/// Removes what builds of this machine's processes that are gone left behind; returns how
/// many entries. Another machine's are left to it: their process may be running there.
fn remove_leftovers(builds: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(builds) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some((pid, host)) = owner(&name)
            && host.is_none_or(|h| h == measure::store::host_name())
            && !alive(pid)
            && remove_tree(&entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Removes a file or a directory tree. A tree is first renamed to a temporary name, so a
/// removal cut short never leaves a half-removed build under its built name; files made
/// read-only by a build are made writable and removal retried.
fn remove_tree(path: &Path) -> std::io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return std::fs::remove_file(path);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let doomed = match (&name, path.parent()) {
        (Some(n), Some(parent)) if !n.starts_with(TEMPORARY) => {
            let to = parent.join(temporary_name(&format!("remove-{n}")));
            std::fs::rename(path, &to)?;
            to
        }
        _ => path.to_path_buf(),
    };
    if std::fs::remove_dir_all(&doomed).is_ok() {
        return Ok(());
    }
    make_writable(&doomed);
    std::fs::remove_dir_all(&doomed)
}

fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mode = meta.permissions().mode();
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}

/// A cache entry's commit and recipe, its kind, when it was made.
struct Entry {
    path: PathBuf,
    commit: String,
    recipe: String,
    kind: Kind,
    made: SystemTime,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Built,
    Log,
    Failed,
}

/// `<40 or 64 hex digits>-<12 hex digits>`, as entry names are made, or with
/// `-<12 hex digits>` more (the build options' values): the recipe is the first 12.
fn parse_entry(name: &str) -> Option<(String, String, Kind)> {
    let (stem, kind) = if let Some(s) = name.strip_suffix(".log") {
        (s, Kind::Log)
    } else if let Some(s) = name.strip_suffix(".failed") {
        (s, Kind::Failed)
    } else {
        (name, Kind::Built)
    };
    let (commit, recipe) = stem.split_once('-')?;
    let hex = |s: &str, lens: &[usize]| {
        lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let (recipe, values) = recipe.split_once('-').unwrap_or((recipe, "0123456789ab"));
    (hex(commit, &[40, 64]) && hex(recipe, &[12]) && hex(values, &[12]))
        .then(|| (commit.into(), recipe.into(), kind))
}

/// Removes cache entries but those `prune` keeps, and every leftover of a killed build.
pub fn prune(builds: &Path, recipe: &str, prune: &Prune) -> Result<Pruned, Error> {
    let mut pruned = Pruned {
        leftovers: remove_leftovers(builds),
        ..Pruned::default()
    };
    let Ok(listing) = std::fs::read_dir(builds) else {
        return Ok(pruned);
    };
    let mut entries = Vec::new();
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((commit, entry_recipe, kind)) = parse_entry(&name) else {
            continue;
        };
        let made = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        entries.push(Entry {
            path: entry.path(),
            commit,
            recipe: entry_recipe,
            kind,
            made,
        });
    }
    // A log goes with its build or failure: kept when either is.
    let kept = |e: &Entry, kind: Kind| {
        let current = e.recipe == recipe;
        (current && prune.keep.contains(&e.commit))
            || prune.older_than.is_some_and(|t| e.made >= t)
            || (kind == Kind::Failed && prune.keep_failures)
    };
    let mut keep_logs = BTreeSet::new();
    for e in entries.iter().filter(|e| e.kind != Kind::Log) {
        if kept(e, e.kind) {
            keep_logs.insert((e.commit.clone(), e.recipe.clone()));
            continue;
        }
        remove_tree(&e.path).map_err(io_error(&e.path))?;
        match e.kind {
            Kind::Built => pruned.builds += 1,
            _ => pruned.failures += 1,
        }
    }
    for e in entries.iter().filter(|e| e.kind == Kind::Log) {
        if !keep_logs.contains(&(e.commit.clone(), e.recipe.clone())) && !kept(e, Kind::Log) {
            remove_tree(&e.path).map_err(io_error(&e.path))?;
        }
    }
    Ok(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_carry_their_owner() {
        let id = "a".repeat(40);
        assert_eq!(
            owner(&format!(".tmp-{id}-0123456789ab-4242@node-1.example.org")),
            Some((4242, Some("node-1.example.org")))
        );
        assert_eq!(
            owner(&format!(".tmp-{id}-0123456789ab-17@n1.log")),
            Some((17, Some("n1")))
        );
        assert_eq!(owner(".tmp-clone-99"), Some((99, None)));
        assert_eq!(owner(&format!("{id}-0123456789ab")), None);
        let made = temporary_name(&format!("{id}-0123456789ab"));
        assert_eq!(
            owner(&format!("{made}.index")),
            Some((
                std::process::id(),
                Some(measure::store::host_name().as_str())
            ))
        );
        assert!(parse_entry(&format!("{id}-0123456789ab")).is_some());
        assert!(parse_entry(&format!("{id}-0123456789ab.failed")).is_some());
        assert!(parse_entry("repository.git").is_none());
        assert!(parse_entry(&format!(".tmp-{id}-0123456789ab-4")).is_none());
    }

    #[test]
    fn the_log_tail_is_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let tail = log_tail(&path, 40);
        assert_eq!(tail.lines().count(), 40);
        assert!(tail.starts_with("line 61\n") && tail.ends_with("line 100"));
    }
}
