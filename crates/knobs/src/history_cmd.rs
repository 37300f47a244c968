//! `knobs history …`: the commits of a spec's `[history]`, their builds, and pruning the
//! build cache. Measuring at a commit is `knobs measure --commit`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Subcommand;
use history::{Build, Commit, History, Prune};
use measure::SystemSpec;
use serde::Serialize;

use crate::Outcome;
use measure::campaign::Backend;
use measure::slurm::SlurmBackend;

#[derive(Subcommand)]
pub enum HistoryCommand {
    /// The commits of the spec's range, oldest first, each built, failed or not built.
    #[command(after_help = "Example:\n  knobs history list examples/xz-history/knobs.toml")]
    List {
        /// The system spec (with a [history] section).
        #[arg(default_value = "knobs.toml")]
        spec: PathBuf,
        /// Print the commits as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Build commits (those not built yet); a commit that does not build is reported with the
    /// tail of its log, and not retried unless --retry-failed.
    #[command(after_help = "Example:\n  \
        knobs history build examples/xz-history/knobs.toml --commits v5.0.0,v5.4.0\n  \
        knobs history build examples/xz-history/knobs.toml --all")]
    Build {
        /// The system spec (with a [history] section).
        #[arg(default_value = "knobs.toml")]
        spec: PathBuf,
        /// The commits to build: revisions, comma-separated (ids, tags, `main~3`).
        #[arg(
            long,
            value_delimiter = ',',
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        commits: Vec<String>,
        /// Every commit of the range.
        #[arg(long)]
        all: bool,
        /// Build commits whose earlier build failed again.
        #[arg(long)]
        retry_failed: bool,
        /// Print the builds as JSON on stdout.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        backend: crate::backend_args::BackendArgs,
    },
    /// Bring knobs' clone of a repository given as a URL up to date (its branches and tags
    /// where the URL has them now). knobs also fetches by itself when the range or a
    /// revision names commits the clone lacks, but a branch that moved is only followed here.
    #[command(after_help = "Example:\n  knobs history fetch knobs.toml")]
    Fetch {
        /// The system spec (with a [history] section whose repository is a URL).
        #[arg(default_value = "knobs.toml")]
        spec: PathBuf,
    },
    /// Remove builds from the cache (`.knobs-builds` beside the spec), and what killed builds
    /// left behind.
    #[command(after_help = "Example:\n  \
        knobs history prune examples/xz-history/knobs.toml --keep-failures")]
    Prune {
        /// The system spec (with a [history] section).
        #[arg(default_value = "knobs.toml")]
        spec: PathBuf,
        /// Keep the records of failed builds (so they are still not retried).
        #[arg(long)]
        keep_failures: bool,
        /// Keep the builds of these revisions, comma-separated.
        #[arg(long, value_delimiter = ',')]
        keep: Vec<String>,
    },
}

pub fn run(cmd: HistoryCommand) -> Result<Outcome> {
    match cmd {
        HistoryCommand::List { spec, json } => list(&spec, json),
        HistoryCommand::Build {
            spec,
            commits,
            all,
            retry_failed,
            json,
            backend,
        } => build(&spec, &commits, all, retry_failed, json, &backend),
        HistoryCommand::Fetch { spec } => {
            let (_, history) = open(&spec)?;
            history.fetch()?;
            let commits = history.commits()?;
            println!(
                "fetched {}; the range has {} commit(s)",
                history.spec().repository,
                commits.len()
            );
            Ok(Outcome::Done)
        }
        HistoryCommand::Prune {
            spec,
            keep_failures,
            keep,
        } => prune(&spec, &keep, keep_failures),
    }
}

fn open(spec: &Path) -> Result<(SystemSpec, History)> {
    let spec = SystemSpec::load(spec)?;
    let history = History::open(&spec)?;
    Ok((spec, history))
}

/// A commit as `list` and `build` report it.
#[derive(Serialize)]
struct CommitStatus<'a> {
    #[serde(flatten)]
    commit: &'a Commit,
    /// `built`, `failed` or `not built`.
    status: &'static str,
    build: Option<Build>,
}

fn status_word(build: &Option<Build>) -> &'static str {
    match build {
        Some(Build::Built(_)) => "built",
        Some(Build::Failed(_)) => "failed",
        None => "not built",
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// The day of an ISO 8601 date.
fn day(date: &str) -> &str {
    &date[..date.len().min(10)]
}

fn list(spec_path: &Path, json: bool) -> Result<Outcome> {
    let (spec, history) = open(spec_path)?;
    let commits = history.commits()?;
    let rows: Vec<CommitStatus> = commits
        .iter()
        .map(|commit| {
            let build = history.status(&commit.id);
            CommitStatus {
                commit,
                status: status_word(&build),
                build,
            }
        })
        .collect();
    if json {
        crate::print_json(&rows)?;
        return Ok(Outcome::Done);
    }
    let count = |word: &str| rows.iter().filter(|r| r.status == word).count();
    println!(
        "{}: {} commits in `{}` ({}); {} built, {} failed, builds in {} (recipe {})",
        spec.name,
        rows.len(),
        history.spec().range,
        if history.spec().first_parent {
            "first-parent line"
        } else {
            "all commits"
        },
        count("built"),
        count("failed"),
        history.builds_dir().display(),
        history.recipe_hash()
    );
    for row in &rows {
        let why = match &row.build {
            Some(Build::Failed(f)) => format!("  ({})", f.why),
            _ => String::new(),
        };
        println!(
            "{}  {}  {:<9}  {}{why}",
            short(&row.commit.id),
            day(&row.commit.date),
            row.status,
            row.commit.subject
        );
    }
    Ok(Outcome::Done)
}

fn build(
    spec_path: &Path,
    revisions: &[String],
    all: bool,
    retry_failed: bool,
    json: bool,
    backend: &crate::backend_args::BackendArgs,
) -> Result<Outcome> {
    let (spec, history) = open(spec_path)?;
    let commits = history.commits()?;
    let targets = if all {
        commits.clone()
    } else {
        resolve_targets(&history, &commits, revisions)?
    };
    measure::runner::kill_runs_on_interrupt();
    let on_slurm = match backend.backend(&spec, spec_path)? {
        Backend::Slurm(slurm) => Some(build_on_slurm(
            &history,
            &slurm,
            spec_path,
            &targets,
            retry_failed,
            backend.tasks_flag(),
        )?),
        Backend::Local => None,
    };
    let mut rows = Vec::new();
    for (i, commit) in targets.iter().enumerate() {
        if let Some(submitted) = &on_slurm {
            rows.push(built_on_slurm(&history, &commits, commit, submitted));
            continue;
        }
        if history.status(&commit.id).is_none() || retry_failed {
            eprintln!(
                "[{}/{}] building {} {}",
                i + 1,
                targets.len(),
                short(&commit.id),
                commit.subject
            );
        }
        let build = history.build(&commit.id, retry_failed)?;
        report_build(&history, &commits, commit, &build);
        rows.push(CommitStatus {
            commit,
            status: status_word(&Some(build.clone())),
            build: Some(build),
        });
    }
    let failed = rows.iter().filter(|r| r.status == "failed").count();
    let missing = rows.iter().filter(|r| r.build.is_none()).count();
    let cached = rows
        .iter()
        .filter(|r| matches!(&r.build, Some(Build::Built(b)) if b.cached))
        .count();
    eprintln!(
        "{} built ({} from the cache), {} failed{}",
        rows.len() - failed - missing,
        cached,
        failed,
        if missing > 0 {
            format!(", {missing} not built")
        } else {
            String::new()
        }
    );
    if json {
        crate::print_json(&rows)?;
    }
    Ok(Outcome::Done)
}

/// What the cluster built of `commit`, or did not (nothing is built here), reported; one the
/// cluster was given (`submitted`) counts as built now, not cached.
fn built_on_slurm<'a>(
    history: &History,
    commits: &[Commit],
    commit: &'a Commit,
    submitted: &[String],
) -> CommitStatus<'a> {
    let mut build = history.status(&commit.id);
    if submitted.contains(&commit.id) {
        match &mut build {
            Some(Build::Built(b)) => b.cached = false,
            Some(Build::Failed(f)) => f.cached = false,
            None => {}
        }
    }
    match &build {
        Some(build) => report_build(history, commits, commit, build),
        None => eprintln!("{}  not built", short(&commit.id)),
    }
    CommitStatus {
        commit,
        status: status_word(&build),
        build,
    }
}

/// Builds the targets that need it as Slurm array tasks (`tasks` of them, default one per
/// commit), each running `knobs history build` on its share into the cache on the shared
/// file system, and waits for them: the commits submitted. A task that did not finish is
/// reported with its log.
fn build_on_slurm(
    history: &History,
    slurm: &SlurmBackend,
    spec_path: &Path,
    targets: &[Commit],
    retry_failed: bool,
    tasks: Option<u32>,
) -> Result<Vec<String>> {
    let pending: Vec<String> = targets
        .iter()
        .filter(|c| retry_failed || history.status(&c.id).is_none())
        .map(|c| c.id.clone())
        .collect();
    if pending.is_empty() {
        return Ok(pending);
    }
    let spec = std::path::absolute(spec_path)?;
    let commands = history.slurm_commands(&slurm.worker, &spec, &pending, tasks, retry_failed);
    eprintln!(
        "building {} commits as {} Slurm array tasks",
        pending.len(),
        commands.len()
    );
    let name = format!("knobs-build-{}", std::process::id());
    let unfinished = slurm.run_commands(&name, &commands, &mut |line| eprintln!("{line}"))?;
    for (task, log) in unfinished {
        eprintln!(
            "task {task} of the builds ended without finishing (failed, cancelled or out of \
             time); its log: {}",
            log.display()
        );
    }
    Ok(pending)
}

/// The commits `revisions` name; one outside the range is built all the same, with a subject
/// that says so.
fn resolve_targets(
    history: &History,
    commits: &[Commit],
    revisions: &[String],
) -> Result<Vec<Commit>> {
    let mut targets = Vec::new();
    for rev in revisions {
        let id = history.resolve(rev)?;
        let commit = match commits.iter().find(|c| c.id == id) {
            Some(c) => c.clone(),
            None => Commit {
                subject: format!("({rev}, outside the range)"),
                id,
                timestamp: 0,
                date: String::new(),
            },
        };
        targets.push(commit);
    }
    Ok(targets)
}

/// A build's outcome on stderr; a failure with the tail of its log and the closest earlier
/// build of the range, which can stand in for it.
fn report_build(history: &History, commits: &[Commit], commit: &Commit, build: &Build) {
    match build {
        Build::Built(b) => eprintln!(
            "{}  built{}  {}",
            short(&commit.id),
            if b.cached {
                " (cached)".to_string()
            } else {
                format!(" in {:.1} s", b.seconds)
            },
            b.program.display()
        ),
        Build::Failed(f) => {
            eprintln!(
                "{}  FAILED{}: {}; log: {}",
                short(&commit.id),
                if f.cached { " (earlier)" } else { "" },
                f.why,
                f.log.display()
            );
            for line in f.log_tail.lines() {
                eprintln!("    {line}");
            }
            if let Some(instead) = history.closest_built(commits, &commit.id) {
                eprintln!("    closest earlier build: {}", short(&instead.commit));
            }
        }
    }
}

fn prune(spec_path: &Path, keep: &[String], keep_failures: bool) -> Result<Outcome> {
    let (_, history) = open(spec_path)?;
    let keep: BTreeSet<String> = keep
        .iter()
        .map(|rev| history.resolve(rev))
        .collect::<Result<_, _>>()?;
    let pruned = history.prune(&Prune {
        keep,
        keep_failures,
        ..Prune::default()
    })?;
    eprintln!(
        "removed {} builds, {} failure records and {} leftovers of killed builds from {}",
        pruned.builds,
        pruned.failures,
        pruned.leftovers,
        history.builds_dir().display()
    );
    Ok(Outcome::Done)
}

/// The full id of a revision of the spec's `[history]` (`knobs measure --commit` of a spec
/// with build options: each configuration's build is its own, made later).
pub fn resolve_commit(spec: &SystemSpec, rev: &str) -> Result<String> {
    Ok(History::open(spec)?.resolve(rev)?)
}

/// The program of a commit for `knobs measure --commit`: built when needed (with a note),
/// a commit that does not build a one-line error naming its log.
pub fn program_at(spec: &SystemSpec, rev: &str) -> Result<history::Built> {
    let history = History::open(spec)?;
    let commit = history.resolve(rev)?;
    if history.status(&commit).is_none() {
        eprintln!("building commit {} …", short(&commit));
    }
    let built = history.program(&commit)?;
    if !built.cached {
        eprintln!("built {} in {:.1} s", short(&commit), built.seconds);
    }
    if !built.program.is_file() {
        bail!("{}: the build has no program", built.program.display());
    }
    Ok(built)
}
