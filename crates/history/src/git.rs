//! The git commands the history needs: where the repository is, its commits, and a clean
//! checkout of one commit. Every command runs with an argv (no shell) and `GIT_*`
//! variables that could point it elsewhere removed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Error, io_error};

/// One commit of the history.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Commit {
    /// The full id.
    pub id: String,
    /// The author date, Unix seconds.
    pub timestamp: i64,
    /// The author date, ISO 8601 (`2024-02-14T19:43:28+02:00`).
    pub date: String,
    /// The subject line of the message.
    pub subject: String,
}

/// A git command with no stray `GIT_*` settings from the environment.
fn git_command() -> Command {
    let mut command = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            command.env_remove(key);
        }
    }
    command.stdin(Stdio::null());
    command
}

/// A git command on a repository.
fn git(git_dir: &Path) -> Command {
    let mut command = git_command();
    command.arg("--git-dir").arg(git_dir);
    command
}

/// Runs a git command; its standard output, or an error with git's own message.
fn output(mut command: Command, what: &str) -> Result<String, Error> {
    let out = command
        .output()
        .map_err(|e| Error::Git(format!("cannot run git ({what}): {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let message = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Error::Git(format!("git {what}: {message}")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether a repository string is a URL (`https://…`, `file://…`, `git@host:path`) rather
/// than a local path: [`repository`] clones it, and the clone may lag behind it.
pub(crate) fn is_url(repository: &str) -> bool {
    repository.contains("://")
        || repository
            .split_once(':')
            .is_some_and(|(host, _)| host.contains('@') && !host.contains('/'))
}

/// Brings a clone made by [`repository`] up to date with its URL: every branch and tag,
/// moved where the URL moved them (the clone is knobs' own, nothing in it is the user's).
pub fn fetch(git_dir: &Path, repository: &str) -> Result<(), Error> {
    let mut command = git(git_dir);
    command.args([
        "fetch",
        "--quiet",
        "--force",
        "--prune",
        "--end-of-options",
        repository,
        "+refs/heads/*:refs/heads/*",
        "+refs/tags/*:refs/tags/*",
    ]);
    output(command, &format!("fetch {repository}")).map(|_| ())
}

/// The git directory of the spec's repository: a local path (relative to the spec's
/// directory), or a URL cloned once, bare, into `builds/repository.git`.
pub fn repository(repository: &str, spec_dir: &Path, builds: &Path) -> Result<PathBuf, Error> {
    if !is_url(repository) {
        let path = spec_dir.join(repository);
        if !path.exists() {
            return Err(Error::Git(format!(
                "repository `{}` does not exist (history.repository, relative to the spec)",
                path.display()
            )));
        }
        let mut command = git_command();
        command
            .arg("-C")
            .arg(&path)
            .args(["rev-parse", "--absolute-git-dir"]);
        let dir = output(command, &format!("repository {}", path.display()))?;
        return Ok(PathBuf::from(dir.trim()));
    }
    let clone = builds.join("repository.git");
    if clone.exists() {
        return Ok(clone);
    }
    std::fs::create_dir_all(builds).map_err(io_error(builds))?;
    // Cloned under a temporary name, so a killed clone is never taken for a repository.
    let partial = builds.join(crate::builds::temporary_name("clone"));
    let _ = std::fs::remove_dir_all(&partial);
    let mut command = git_command();
    command
        .args(["clone", "--bare", "--quiet", "--end-of-options", repository])
        .arg(&partial);
    let cloned = output(command, &format!("clone {repository}"));
    if let Err(e) = cloned {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, &clone).map_err(io_error(&clone))?;
    Ok(clone)
}

/// The commits of a range, oldest first.
pub fn commits(git_dir: &Path, range: &str, first_parent: bool) -> Result<Vec<Commit>, Error> {
    let mut command = git(git_dir);
    command.args(["log", "--reverse", "--format=%H%x1f%at%x1f%aI%x1f%s"]);
    if first_parent {
        command.arg("--first-parent");
    } else {
        command.arg("--topo-order");
    }
    // `--end-of-options`: a range is never taken for an option.
    command.args(["--end-of-options", range, "--"]);
    let text = output(command, &format!("log {range}"))?;
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut fields = line.splitn(4, '\x1f');
            let (Some(id), Some(timestamp), Some(date), Some(subject)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(Error::Git(format!("git log: unexpected line `{line}`")));
            };
            Ok(Commit {
                id: id.to_string(),
                timestamp: timestamp.parse().unwrap_or(0),
                date: date.to_string(),
                subject: subject.to_string(),
            })
        })
        .collect()
}

/// The full id of the commit a revision names.
pub fn resolve(git_dir: &Path, rev: &str) -> Result<String, Error> {
    let mut command = git(git_dir);
    command.args([
        "rev-parse",
        "--verify",
        "--end-of-options",
        &format!("{rev}^{{commit}}"),
    ]);
    output(command, &format!("rev-parse {rev}"))
        .map(|id| id.trim().to_string())
        .map_err(|_| {
            Error::Git(format!(
                "`{rev}` names no commit of the history's repository"
            ))
        })
}

/// Writes every file of `commit` into `dir` (which exists and is empty), as a checkout
/// would, through a temporary index at `index`: the repository's own index, work tree and
/// worktree list are not touched, and nothing is left to unregister.
pub fn checkout(git_dir: &Path, commit: &str, dir: &Path, index: &Path) -> Result<(), Error> {
    let with_index = |args: &[&str]| {
        let mut command = git(git_dir);
        command
            .env("GIT_INDEX_FILE", index)
            .arg("--work-tree")
            .arg(dir)
            .args(args);
        command
    };
    let read = output(
        with_index(&["read-tree", commit]),
        &format!("read-tree {commit}"),
    );
    let written = read.and_then(|_| {
        output(
            with_index(&["checkout-index", "--all", "--force"]),
            &format!("checkout-index {commit}"),
        )
    });
    let _ = std::fs::remove_file(index);
    written.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths() {
        for url in [
            "https://github.com/tukaani-project/xz.git",
            "file:///srv/git/xz",
            "git@github.com:tukaani-project/xz.git",
        ] {
            assert!(is_url(url), "{url}");
        }
        for path in [
            "xz",
            "./xz",
            "../shared/xz",
            "/srv/git/xz",
            "dir/with:colon",
        ] {
            assert!(!is_url(path), "{path}");
        }
    }
}
