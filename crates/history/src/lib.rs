//! `history`: a program's version history as a dimension of measurement.
//!
//! A system spec's `[history]` section names a git repository, a revision range and a build
//! recipe. [`History::commits`] lists the range's commits, oldest first; [`History::build`]
//! builds one in a fresh checkout of exactly that commit (read through a temporary index:
//! the repository itself is never touched) by running the recipe's argv lists, and keeps
//! the result in a cache beside the spec, `.knobs-builds/<commit>-<recipe hash>/`. A commit
//! that does not build is recorded with how it failed and the tail of its log, and not
//! retried unless asked; [`History::closest_built`] gives the build to use instead (the
//! closest earlier commit that built). [`History::prune`] removes builds.
//!
//! Builds are atomic: a build runs in a temporary directory renamed into place only when
//! the program exists, so a killed build never leaves a directory that looks built (what
//! it leaves is removed by the next build or prune). The program measured at a commit is
//! the built `output`; measuring it is `measure::Campaign::at_commit`.
//!
//! Architecture invariant: knows nothing of the results store or of models; what leaves
//! this crate is commits and paths of built programs. Build steps never go through a shell
//! (a recipe may call `sh -c` itself), and run in their own process group like measured runs.

mod builds;
mod git;
mod variants;

use std::path::{Path, PathBuf};

pub use builds::{Build, BuildFailure, Built, Prune, Pruned};
pub use git::Commit;
use measure::{HistorySpec, SystemSpec};
pub use variants::{VariantBuild, Variants, VariantsReport};

/// Everything that can go wrong; each message is one line for the user. A commit that does
/// not build is not an error (it is a [`Build::Failed`]), except where a program is
/// required ([`History::program`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec has no `[history]` section.
    #[error("{0}: no [history] section: the spec does not say where the program's history is")]
    NoHistory(String),
    /// A git command failed (its message).
    #[error("{0}")]
    Git(String),
    /// A commit did not build; `log` is its whole build log.
    #[error("commit {commit} does not build ({why}); its log: {}", log.display())]
    BuildFailed {
        commit: String,
        why: String,
        log: PathBuf,
    },
    #[error("{path}: {cause}")]
    Io { path: String, cause: std::io::Error },
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |cause| Error::Io {
        path: path.display().to_string(),
        cause,
    }
}

/// The directory builds are cached in, beside the spec.
pub const BUILDS_DIR: &str = ".knobs-builds";

/// A spec's history: its repository, commits and builds.
#[derive(Clone, Debug)]
pub struct History {
    spec: HistorySpec,
    /// The repository's git directory.
    git_dir: PathBuf,
    /// The build cache.
    builds: PathBuf,
    /// Identifies the recipe (steps and output): builds under another recipe are not used.
    recipe: String,
}

impl History {
    /// The history of a spec with `[history]`. A repository given as a URL is cloned (bare)
    /// into the build cache the first time.
    pub fn open(spec: &SystemSpec) -> Result<History, Error> {
        let history = spec
            .history
            .clone()
            .ok_or_else(|| Error::NoHistory(spec.path.display().to_string()))?;
        let builds = spec.dir.join(BUILDS_DIR);
        let git_dir = git::repository(&history.repository, &spec.dir, &builds)?;
        let recipe = builds::recipe_hash(&history);
        Ok(History {
            spec: history,
            git_dir,
            builds,
            recipe,
        })
    }

    /// The `[history]` section.
    pub fn spec(&self) -> &HistorySpec {
        &self.spec
    }

    /// Where builds are cached (`.knobs-builds` beside the spec).
    pub fn builds_dir(&self) -> &Path {
        &self.builds
    }

    /// The repository's git directory.
    pub(crate) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The recipe's hash (12 hex digits), part of every build's directory name.
    pub fn recipe_hash(&self) -> &str {
        &self.recipe
    }

    /// The commits of the range, oldest first: its first-parent line, or (`first_parent =
    /// false`) every commit in topological order.
    pub fn commits(&self) -> Result<Vec<Commit>, Error> {
        self.fetching_when_missing(|| {
            git::commits(&self.git_dir, &self.spec.range, self.spec.first_parent)
        })
    }

    /// The full id of a revision (`v5.2.0`, `HEAD~3`, an abbreviated id).
    pub fn resolve(&self, rev: &str) -> Result<String, Error> {
        self.fetching_when_missing(|| git::resolve(&self.git_dir, rev))
    }

    /// Brings knobs' clone of a URL repository up to date; an error for a local repository,
    /// which is the user's and never changed by knobs.
    pub fn fetch(&self) -> Result<(), Error> {
        if !git::is_url(&self.spec.repository) {
            return Err(Error::Git(format!(
                "`{}` is a local repository: knobs reads it as it is (fetch in it yourself)",
                self.spec.repository
            )));
        }
        git::fetch(&self.git_dir, &self.spec.repository)
    }

    /// `look_up` in the repository; when it fails and the repository is knobs' clone of a
    /// URL, the clone may predate what is asked for (a new tag, a branch that moved): it is
    /// fetched and `look_up` tried once more.
    fn fetching_when_missing<T>(&self, look_up: impl Fn() -> Result<T, Error>) -> Result<T, Error> {
        match look_up() {
            Err(missing) if git::is_url(&self.spec.repository) => {
                git::fetch(&self.git_dir, &self.spec.repository)
                    .map_err(|e| Error::Git(format!("{missing}; fetching it failed: {e}")))?;
                look_up()
            }
            found => found,
        }
    }

    /// What the cache holds for a commit (a full id): its build, its recorded failure, or
    /// `None` when it was not built under this recipe.
    pub fn status(&self, commit: &str) -> Option<Build> {
        builds::status(&self.builds, commit, &self.recipe, &self.spec.output)
    }

    /// Builds a commit (a full id), or returns what the cache holds for it: its build, or
    /// its recorded failure unless `retry_failed`. `Err` only when the build could not be
    /// attempted (git, the disk); a recipe that fails is a [`Build::Failed`].
    pub fn build(&self, commit: &str, retry_failed: bool) -> Result<Build, Error> {
        if let Some(known) = self.status(commit)
            && (known.is_built() || !retry_failed)
        {
            return Ok(known);
        }
        builds::build(
            &self.git_dir,
            &self.builds,
            commit,
            &self.recipe,
            &self.spec,
        )
    }

    /// The built program of a revision, building it when needed; a commit that does not
    /// build is an error naming its log.
    pub fn program(&self, rev: &str) -> Result<Built, Error> {
        let commit = self.resolve(rev)?;
        match self.build(&commit, false)? {
            Build::Built(built) => Ok(built),
            Build::Failed(failure) => Err(Error::BuildFailed {
                commit: failure.commit,
                why: failure.why,
                log: failure.log,
            }),
        }
    }

    /// The build to use for `commit` (a full id) among `commits` (oldest first, as
    /// [`History::commits`] lists them): its own when it built, else that of the closest
    /// earlier commit that built, as a failed build is treated as no change. Looks only at
    /// the cache (builds nothing); `None` when neither it nor any earlier commit is built,
    /// or `commit` is not in the list.
    pub fn closest_built(&self, commits: &[Commit], commit: &str) -> Option<Built> {
        let at = commits.iter().position(|c| c.id == commit)?;
        commits[..=at]
            .iter()
            .rev()
            .find_map(|c| match self.status(&c.id) {
                Some(Build::Built(built)) => Some(built),
                _ => None,
            })
    }

    /// The command lines of Slurm array tasks that build `commits` (full ids) into this cache,
    /// dealt out to `tasks` shares (default: one per commit): each runs `knobs` (`worker`)
    /// `history build SPEC --commits …` on its share. Builds in the cache are atomic and carry
    /// their host, so tasks on several nodes may build into it side by side.
    pub fn slurm_commands(
        &self,
        worker: &Path,
        spec: &Path,
        commits: &[String],
        tasks: Option<u32>,
        retry_failed: bool,
    ) -> Vec<Vec<String>> {
        let n = tasks
            .map_or(commits.len(), |t| t.max(1) as usize)
            .min(commits.len());
        (0..n)
            .map(|task| {
                let share: Vec<&str> = commits
                    .iter()
                    .skip(task)
                    .step_by(n)
                    .map(String::as_str)
                    .collect();
                let mut command = vec![
                    worker.display().to_string(),
                    "history".into(),
                    "build".into(),
                    spec.display().to_string(),
                    "--commits".into(),
                    share.join(","),
                ];
                if retry_failed {
                    command.push("--retry-failed".into());
                }
                command
            })
            .collect()
    }

    /// Removes builds (and recorded failures) from the cache, except what `prune` keeps;
    /// leftovers of killed builds always go. Builds under other recipes count as removable.
    pub fn prune(&self, prune: &Prune) -> Result<Pruned, Error> {
        builds::prune(&self.builds, &self.recipe, prune)
    }
}
