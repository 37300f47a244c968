//! Measuring on a Slurm cluster: a campaign's rounds as job arrays.
//!
//! knobs plans each round as it does locally (`campaign.rs`), then writes the round's work
//! into a directory of the spool (a directory every node can read and write, usually on the
//! shared file system): one work file per array task, its share of the round with the
//! reference configuration in every share (a task runs on one node, so every node that
//! measures in a round measures the reference too). `sbatch` submits the array; each task
//! runs `knobs slurm-worker DIR TASK` ([`work`]), which measures its share with the same
//! runner as local runs and writes every run as a file of its own (written to a temporary
//! name and renamed, so a file is whole or absent; the region times an instrumented build
//! wrote are copied beside it first), then a `done` marker. knobs waits, ingesting result
//! files as they appear (region times read with the campaign's reader, as a local run's);
//! only knobs writes the SQLite store, each run once (a run's file name is its `source` in
//! the store). The directory's `submission.json`
//! records the job, so a knobs killed while waiting finds it again, waits for what still
//! runs and ingests what finished. A task that ends without its marker (failed, cancelled,
//! past its time limit) leaves its unmeasured configurations pending for the next round.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::instructions::Counter;
use crate::instructions::counted;
use crate::region_output::{ReadRegions, count_from_regions, read_regions};
use crate::runner::{self, RunResult};
use crate::spec::Invocation;
pub use crate::spec::SlurmSettings;
use crate::store::{self, MeasurementKey, Selection, Store};

/// A campaign's Slurm backend: the settings, the spool directory (absolute) and the program
/// the array tasks run (`knobs`, whose `slurm-worker` subcommand calls [`work`]).
#[derive(Clone, Debug)]
pub struct SlurmBackend {
    pub settings: SlurmSettings,
    pub spool: PathBuf,
    pub worker: PathBuf,
}

/// How long knobs holds its claim on configurations it submitted: the queue may be slow.
/// A resumed knobs releases the claims of the submission it finds again.
pub const CLAIM_SECONDS: f64 = 86_400.0;

/// How often knobs looks at the queue and the spool while it waits.
const POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// One array task's work: its share of a round.
#[derive(Debug, Serialize, Deserialize)]
pub struct TaskWork {
    /// Unstored runs of the whole share before the measured ones (the campaign's first round).
    pub warmup: u32,
    /// The environment variable naming the file an instrumented program writes its region
    /// times to (`None`: whole runs only). The task keeps each measured run's file beside
    /// its result, as it was written; knobs reads it when it stores the run.
    #[serde(default)]
    pub regions_env: Option<String>,
    /// Count each run's instructions with this counter (`metric = "instructions"`), the one
    /// knobs chose on the submit host: every node's counts are then of the same kind.
    #[serde(default)]
    pub counter: Option<Counter>,
    pub runs: Vec<WorkItem>,
}

/// One run to make.
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkItem {
    pub configuration: String,
    /// The `[history]` commit whose build the run is, stored under it (a round may measure
    /// the builds of several commits); `None`: the submission's commit.
    #[serde(default)]
    pub commit: Option<String>,
    pub program: PathBuf,
    /// [`Invocation::arg0`].
    #[serde(default)]
    pub arg0: Option<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// [`Invocation::steady_env`].
    #[serde(default)]
    pub steady_env: bool,
    pub cwd: PathBuf,
    pub stdin: Option<PathBuf>,
    pub timeout_seconds: f64,
}

impl WorkItem {
    pub fn of(configuration: &str, commit: &str, invocation: &Invocation) -> WorkItem {
        WorkItem {
            configuration: configuration.to_string(),
            commit: Some(commit.to_string()),
            program: invocation.program.clone(),
            arg0: invocation.arg0.clone(),
            args: invocation.args.clone(),
            env: invocation.env.clone(),
            steady_env: invocation.steady_env,
            cwd: invocation.cwd.clone(),
            stdin: invocation.stdin.clone(),
            timeout_seconds: invocation.timeout.as_secs_f64(),
        }
    }

    fn invocation(&self) -> Invocation {
        Invocation {
            program: self.program.clone(),
            arg0: self.arg0.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            steady_env: self.steady_env,
            cwd: self.cwd.clone(),
            stdin: self.stdin.clone(),
            timeout: std::time::Duration::from_secs_f64(self.timeout_seconds),
        }
    }
}

/// One run as a task wrote it.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunFile {
    pub configuration: String,
    /// Its work item's commit.
    #[serde(default)]
    pub commit: Option<String>,
    /// A failed warm-up run (successful ones are not written).
    pub warmup: bool,
    pub started: f64,
    pub host: String,
    /// The Slurm node (`SLURMD_NODENAME`; the host name outside Slurm).
    pub node: String,
    pub result: RunResult,
}

/// What `submission.json` records: which store and selection the round belongs to, the
/// round, the claims' owner and the job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Submission {
    /// The directory's name, also the job's name.
    pub name: String,
    pub store: PathBuf,
    pub system: String,
    pub spec_hash: String,
    pub workload: String,
    pub variant: String,
    pub commit: String,
    /// Every commit the round's runs are of, when they are more than `commit` (a round of
    /// several commits' builds: `knobs changepoints detect`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<String>,
    pub inputs: Option<String>,
    pub round: i64,
    pub owner: String,
    pub tasks: u32,
    /// The array's job id, once `sbatch` has answered.
    pub job: Option<String>,
    /// The runs are of a counting build (`Campaign::counted_regions`): each one's
    /// instructions are what its region file adds up to, read in when it is stored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counted_regions: bool,
}

impl Submission {
    /// The store's key of a configuration's runs in this submission, at `commit` (`None`:
    /// the submission's).
    pub fn key(&self, configuration: &str, commit: Option<&str>) -> MeasurementKey {
        MeasurementKey {
            system: self.system.clone(),
            variant: self.variant.clone(),
            spec_hash: self.spec_hash.clone(),
            workload: self.workload.clone(),
            configuration: configuration.to_string(),
            commit: commit.unwrap_or(&self.commit).to_string(),
            inputs: self.inputs.clone(),
        }
    }

    /// Whether the submission measures `selection` into the store at `store`.
    pub fn belongs_to(&self, store: &Path, selection: &Selection) -> bool {
        self.store == store
            && Some(&self.system) == selection.system.as_ref()
            && Some(&self.spec_hash) == selection.spec_hash.as_ref()
            && Some(&self.workload) == selection.workload.as_ref()
            && self.variant == selection.variant
            && (self.commit == selection.commit || self.commits.contains(&selection.commit))
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |cause| Error::Io {
        path: path.display().to_string(),
        cause,
    }
}

/// Writes a file whole or not at all: a temporary name, then a rename.
fn write_atomically(path: &Path, text: &str) -> Result<(), Error> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, Error> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Invalid(format!("{}: not what knobs wrote: {e}", path.display())))
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("spool records serialise")
}

fn work_file(dir: &Path, task: u32) -> PathBuf {
    dir.join(format!("work-{task}.json"))
}

fn results_dir(dir: &Path, task: u32) -> PathBuf {
    dir.join(format!("results-{task}"))
}

fn done_marker(dir: &Path, task: u32) -> PathBuf {
    dir.join(format!("done-{task}"))
}

fn task_log(dir: &Path, task: u32) -> PathBuf {
    dir.join(format!("task-{task}.log"))
}

/// The region times run `index` of a share wrote, kept beside its result file.
fn regions_file(results: &Path, index: usize) -> PathBuf {
    results.join(format!("{index}.regions"))
}

/// The task's own directory on its node's disk, not the shared file system: what a run
/// writes at its exit (region times, the instruction counter's count) then costs what it
/// costs locally. Removed when the task ends; a task killed by `scancel` or its time limit
/// cannot, so a task removes what killed tasks of its host left (`knobs-task-N-PID@HOST`).
struct NodeScratch(PathBuf);

impl NodeScratch {
    fn new(task: u32) -> Result<NodeScratch, Error> {
        let tmp = std::env::temp_dir();
        let host = store::host_name();
        for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = scratch_owner(&name, &host)
                // SAFETY: signal 0 only asks whether the process exists (EPERM: another
                // user's, alive).
                && unsafe { libc::kill(pid, 0) } != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = tmp.join(format!("knobs-task-{task}-{}@{host}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        Ok(NodeScratch(dir))
    }

    fn regions(&self) -> PathBuf {
        self.0.join("regions")
    }

    /// Runs an item as the share asks: under the instruction counter, or with the region
    /// times' variable naming a file of no earlier run.
    fn run(&self, work: &TaskWork, item: &WorkItem) -> RunResult {
        let mut invocation = item.invocation();
        if let Some(counter) = work.counter {
            return counted(&invocation, &self.0, counter);
        }
        if let Some(env) = &work.regions_env {
            let _ = std::fs::remove_file(self.regions());
            invocation
                .env
                .push((env.clone(), self.regions().display().to_string()));
        }
        runner::run(&invocation)
    }

    /// Copies the region times the last run wrote (if any) to `to`. Before the run's result
    /// file, which says the run is whole: a task killed in between leaves no result, and the
    /// run is made again.
    fn keep_regions(&self, to: &Path) -> Result<(), Error> {
        let _ = std::fs::remove_file(to);
        if self.regions().exists() {
            std::fs::copy(self.regions(), to).map_err(io(to))?;
        }
        Ok(())
    }
}

/// The process of a task's scratch directory named `name`, if it is one of `host`'s.
fn scratch_owner(name: &str, host: &str) -> Option<libc::pid_t> {
    let (rest, of) = name.strip_prefix("knobs-task-")?.rsplit_once('@')?;
    (of == host).then_some(())?;
    rest.rsplit_once('-')?.1.parse().ok()
}

impl Drop for NodeScratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Measures task `task` of the round in `dir` (run by `knobs slurm-worker` inside the job):
/// runs already written (a requeued task) are not made again.
pub fn work(dir: &Path, task: u32) -> Result<(), Error> {
    let work: TaskWork = read_json(&work_file(dir, task))?;
    let results = results_dir(dir, task);
    std::fs::create_dir_all(&results).map_err(io(&results))?;
    let host = store::host_name();
    let node = std::env::var("SLURMD_NODENAME").unwrap_or_else(|_| host.clone());
    let written = |i: usize| results.join(format!("{i}.json"));
    let scratch = NodeScratch::new(task)?;
    let mut failed = vec![false; work.runs.len()];
    let remaining: Vec<usize> = (0..work.runs.len())
        .filter(|&i| !written(i).exists())
        .collect();
    for _ in 0..work.warmup {
        for &i in &remaining {
            let item = &work.runs[i];
            if failed[i] {
                continue;
            }
            let started = store::now();
            let result = scratch.run(&work, item);
            stopped_from_outside(item, &result)?;
            if !result.outcome.is_ok() {
                failed[i] = true;
                // Its measured run is not made: the failure stands for it, as in a local
                // warm-up.
                let file = RunFile {
                    configuration: item.configuration.clone(),
                    commit: item.commit.clone(),
                    warmup: true,
                    started,
                    host: host.clone(),
                    node: node.clone(),
                    result,
                };
                write_atomically(&written(i), &to_json(&file))?;
            }
        }
    }
    for i in remaining.into_iter().filter(|&i| !failed[i]) {
        let item = &work.runs[i];
        let started = store::now();
        let result = scratch.run(&work, item);
        stopped_from_outside(item, &result)?;
        if work.regions_env.is_some() {
            scratch.keep_regions(&regions_file(&results, i))?;
        }
        let file = RunFile {
            configuration: item.configuration.clone(),
            commit: item.commit.clone(),
            warmup: false,
            started,
            host: host.clone(),
            node: node.clone(),
            result,
        };
        write_atomically(&written(i), &to_json(&file))?;
    }
    write_atomically(&done_marker(dir, task), "")
}

/// A run killed by the signals Slurm stops a task with (`scancel`, the time limit) was not
/// the configuration's doing: the task ends without storing it, so the configuration is
/// pending again. (This task gets the same signal, but maybe only after the run's end was
/// seen.)
fn stopped_from_outside(item: &WorkItem, result: &RunResult) -> Result<(), Error> {
    match result.outcome {
        runner::Outcome::Signal(signal @ (libc::SIGTERM | libc::SIGKILL | libc::SIGINT)) => {
            Err(Error::Invalid(format!(
                "the run of `{}` was stopped by {} from outside (the task is cancelled or out \
                 of time): not stored, the configuration is measured again",
                item.configuration,
                runner::signal_name(signal)
            )))
        }
        _ => Ok(()),
    }
}

/// Takes Slurm's per-task variables (`SLURM_*`: job and task ids, process ids) out of this
/// process's environment, which the runs inherit: they differ from task to task, and the size
/// of a program's environment moves its stack, its instruction count and its time. The
/// node's name (`SLURMD_NODENAME`) stays.
///
/// # Safety
/// No other thread may read or write the environment meanwhile: call it before any starts.
pub unsafe fn drop_task_variables() {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SLURM_") {
            // SAFETY: the caller guarantees no other thread uses the environment.
            unsafe { std::env::remove_var(&name) };
        }
    }
}

/// Quotes a word for `sh`.
fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Runs a Slurm command; its standard output, or one line saying why it failed.
fn slurm_command(program: &str, args: &[String]) -> Result<String, Error> {
    let output = Command::new(program).args(args).output().map_err(|e| {
        Error::Invalid(format!(
            "cannot run `{program}` ({e}): is this a Slurm submit host? (scripts/slurm-local.sh start brings up a local cluster)"
        ))
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(Error::Invalid(format!(
            "`{program}` failed ({}): {}",
            output.status,
            stderr.trim().lines().last().unwrap_or("")
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

impl SlurmBackend {
    /// Writes a round's work (one share per task) into a new spool directory and submits it
    /// as an array; the submission as recorded.
    pub fn submit(
        &self,
        mut submission: Submission,
        shares: &[TaskWork],
    ) -> Result<(PathBuf, Submission), Error> {
        let dir = self.spool.join(&submission.name);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        for (task, share) in shares.iter().enumerate() {
            write_atomically(&work_file(&dir, task as u32), &to_json(share))?;
        }
        submission.tasks = shares.len() as u32;
        let record = dir.join("submission.json");
        // Recorded before `sbatch`: a knobs killed in between finds the job by its name.
        write_atomically(&record, &to_json(&submission))?;
        let script = dir.join("job.sh");
        write_atomically(
            &script,
            &format!(
                "#!/bin/sh\n# One array task of a knobs round: measures its share, see work-N.json.\nexec {} slurm-worker {} \"$SLURM_ARRAY_TASK_ID\"\n",
                sh_quote(&self.worker.display().to_string()),
                sh_quote(&dir.display().to_string())
            ),
        )?;
        let job = match self.sbatch(&dir, &submission.name, shares.len(), &script) {
            Ok(job) => job,
            Err(e) => {
                // Nothing was submitted: nothing to find again.
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        submission.job = Some(job);
        write_atomically(&record, &to_json(&submission))?;
        Ok((dir, submission))
    }

    /// Submits `script` as an array of `tasks` tasks named `name`, their logs `task-N.log` in
    /// `dir`: the job's id.
    fn sbatch(&self, dir: &Path, name: &str, tasks: usize, script: &Path) -> Result<String, Error> {
        let s = &self.settings;
        let mut args = vec![
            "--parsable".to_string(),
            format!("--array=0-{}", tasks - 1),
            format!("--job-name={name}"),
            format!("--output={}", dir.join("task-%a.log").display()),
        ];
        args.extend(s.partition.iter().map(|p| format!("--partition={p}")));
        args.extend(s.time_limit.iter().map(|t| format!("--time={t}")));
        args.extend(
            s.cpus_per_task
                .iter()
                .map(|c| format!("--cpus-per-task={c}")),
        );
        args.extend(s.sbatch_args.iter().cloned());
        args.push(script.display().to_string());
        let out = slurm_command("sbatch", &args)?;
        // `--parsable`: `id` or `id;cluster`.
        let job = out.trim().split(';').next().unwrap_or("").to_string();
        if job.is_empty() {
            return Err(Error::Invalid(format!("sbatch printed no job id: {out}")));
        }
        Ok(job)
    }

    /// Runs one command line per array task (each an argv whose program the nodes find) as
    /// one job array named `name`, with its directory `name/` in the spool, and waits until
    /// it leaves the queue, telling `on` the job's id and then its state as it changes. What
    /// the tasks made is theirs to leave where it belongs (a build cache): the tasks that did
    /// not exit 0 (failed, cancelled, out of time) are returned with their logs, which stay in
    /// the directory; without them it is removed.
    pub fn run_commands(
        &self,
        name: &str,
        commands: &[Vec<String>],
        on: &mut dyn FnMut(&str),
    ) -> Result<Vec<(u32, PathBuf)>, Error> {
        let dir = self.spool.join(name);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let mut script = String::from(
            "#!/bin/sh\n# One array task: its command line, then its marker when it exits 0.\n\
             case \"$SLURM_ARRAY_TASK_ID\" in\n",
        );
        for (task, command) in commands.iter().enumerate() {
            let words: Vec<String> = command.iter().map(|w| sh_quote(w)).collect();
            script += &format!(
                "{task}) {} && : > {} ;;\n",
                words.join(" "),
                sh_quote(&done_marker(&dir, task as u32).display().to_string())
            );
        }
        script += "esac\n";
        let path = dir.join("job.sh");
        write_atomically(&path, &script)?;
        let job = self.sbatch(&dir, name, commands.len(), &path)?;
        on(&format!(
            "submitted Slurm job {job} ({} tasks)",
            commands.len()
        ));
        let mut shown = String::new();
        let mut failures = 0;
        loop {
            let state = match queue_state(Some(&job), name) {
                Ok(state) => state,
                Err(_) if failures < SQUEUE_RETRIES => {
                    failures += 1;
                    std::thread::sleep(POLL * 4);
                    continue;
                }
                Err(e) => return Err(e),
            };
            failures = 0;
            if state.is_empty() {
                break;
            }
            if state != shown {
                on(&format!("Slurm job {job}: {state}"));
                shown = state;
            }
            std::thread::sleep(POLL);
        }
        let unfinished: Vec<(u32, PathBuf)> = (0..commands.len() as u32)
            .filter(|&task| !done_marker(&dir, task).exists())
            .map(|task| (task, task_log(&dir, task)))
            .collect();
        if unfinished.is_empty() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        Ok(unfinished)
    }

    /// The submissions in the spool that measure `selection` into `store` and were not
    /// finished (a knobs killed while waiting left them), oldest round first.
    pub fn unfinished(
        &self,
        store: &Path,
        selection: &Selection,
    ) -> Result<Vec<(PathBuf, Submission)>, Error> {
        let Ok(entries) = std::fs::read_dir(&self.spool) else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let record = entry.path().join("submission.json");
            if !record.is_file() {
                continue;
            }
            let submission: Submission = read_json(&record)?;
            if submission.belongs_to(store, selection) {
                found.push((entry.path(), submission));
            }
        }
        found.sort_by_key(|(_, s)| s.round);
        Ok(found)
    }
}

/// The array's tasks still queued or running, summed up (`""`: none left): each state
/// with its count, and why pending tasks wait. The array is `job`, or without its id the
/// job named `name`.
fn queue_state(job: Option<&str>, name: &str) -> Result<String, Error> {
    let mut args = vec!["-h".to_string(), "-r".into(), "-o".into(), "%T|%r".into()];
    match job {
        Some(job) => args.extend(["-j".to_string(), job.to_string()]),
        // Killed between `sbatch` and recording its answer: the job goes by its name.
        None => args.push(format!("--name={name}")),
    }
    let out = match slurm_command("squeue", &args) {
        Ok(out) => out,
        // A job that left slurmctld's memory is finished.
        Err(Error::Invalid(why)) if why.contains("Invalid job id") => String::new(),
        Err(e) => return Err(e),
    };
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let (state, reason) = line.split_once('|').unwrap_or((line, ""));
        let state = state.to_lowercase();
        let shown = match reason.trim() {
            "" | "None" => state,
            reason if state == "pending" => format!("{state} ({reason})"),
            _ => state,
        };
        *counts.entry(shown).or_default() += 1;
    }
    Ok(counts
        .iter()
        .map(|(state, n)| format!("{n} {state}"))
        .collect::<Vec<_>>()
        .join(", "))
}

/// What happens while knobs waits for a submission.
pub enum Waiting<'a> {
    /// A run was stored.
    Stored(&'a RunFile),
    /// The array's tasks changed state (`1 running, 3 pending (Resources)`).
    Queue(&'a str),
}

/// How many times in a row `squeue` may fail (slurmctld restarting) before knobs gives up
/// waiting; the submission stays in the spool for the next knobs.
const SQUEUE_RETRIES: u32 = 20;

/// What waiting for a submission did.
#[derive(Debug, Default)]
pub struct Collected {
    /// Runs stored, per configuration.
    pub stored: std::collections::BTreeMap<String, u32>,
    /// Tasks that ended without finishing their share, with their log.
    pub unfinished_tasks: Vec<(u32, PathBuf)>,
}

/// Waits for a submission to leave the queue, storing its runs as their files appear (with
/// the region times each measured run wrote, read with `regions`) and telling `on` about them
/// and about the queue; then the spool directory is removed, or kept with its record renamed
/// `finished.json` when a task did not finish (its log is worth reading).
pub fn collect(
    store: &Store,
    dir: &Path,
    submission: &Submission,
    regions: Option<&ReadRegions>,
    on: &mut dyn FnMut(Waiting),
) -> Result<Collected, Error> {
    let mut collected = Collected::default();
    let mut shown = String::new();
    let mut failures = 0;
    loop {
        // Looked at before ingesting: what a finished job wrote is all there afterwards.
        let state = match queue_state(submission.job.as_deref(), &submission.name) {
            Ok(state) => state,
            Err(_) if failures < SQUEUE_RETRIES => {
                failures += 1;
                std::thread::sleep(POLL * 4);
                continue;
            }
            Err(e) => return Err(e),
        };
        failures = 0;
        ingest(
            store,
            dir,
            submission,
            regions,
            &mut collected,
            &mut |run| on(Waiting::Stored(run)),
        )?;
        if state.is_empty() {
            break;
        }
        if state != shown {
            on(Waiting::Queue(&state));
            shown = state;
        }
        std::thread::sleep(POLL);
    }
    if !dir.join("submission.json").exists() {
        // Another knobs on this store collected it while this one waited too.
        return Ok(collected);
    }
    for task in 0..submission.tasks {
        if !done_marker(dir, task).exists() {
            collected.unfinished_tasks.push((task, task_log(dir, task)));
        }
    }
    if collected.unfinished_tasks.is_empty() {
        std::fs::remove_dir_all(dir).map_err(io(dir))?;
    } else {
        let record = dir.join("submission.json");
        std::fs::rename(&record, dir.join("finished.json")).map_err(io(&record))?;
    }
    Ok(collected)
}

/// Stores the result files not stored yet (each file's path in the spool is its source), a
/// measured run with the region times it wrote when `regions` reads them.
fn ingest(
    store: &Store,
    dir: &Path,
    submission: &Submission,
    regions: Option<&ReadRegions>,
    collected: &mut Collected,
    on_run: &mut dyn FnMut(&RunFile),
) -> Result<(), Error> {
    for task in 0..submission.tasks {
        let results = results_dir(dir, task);
        let Ok(entries) = std::fs::read_dir(&results) else {
            continue;
        };
        let mut files: Vec<(usize, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let index = path
                    .file_name()?
                    .to_str()?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()?;
                Some((index, path))
            })
            .collect();
        files.sort();
        for (index, path) in files {
            let source = format!("slurm:{}:{task}:{index}", submission.name);
            if store.has_source(&source)? {
                continue;
            }
            let mut run: RunFile = read_json(&path)?;
            let times = match regions {
                Some(read) if !run.warmup => {
                    read_regions(read, &mut run.result, &regions_file(&results, index))
                }
                _ => Vec::new(),
            };
            if submission.counted_regions && !run.warmup {
                count_from_regions(&mut run.result, &times);
            }
            let origin = store::Origin {
                host: run.host.clone(),
                node: run.node.clone(),
                source: Some(source),
            };
            let round = (!run.warmup).then_some(submission.round);
            let key = submission.key(&run.configuration, run.commit.as_deref());
            if store.record_from(&key, run.started, &run.result, &times, round, &origin)? {
                *collected
                    .stored
                    .entry(run.configuration.clone())
                    .or_default() += 1;
                on_run(&run);
            }
        }
    }
    Ok(())
}

/// Splits a round's order into `tasks` shares (fewer when there are fewer runs), each with
/// the reference at a place drawn from `seed`.
pub fn shares(order: &[usize], reference: Option<usize>, tasks: u32, seed: u64) -> Vec<Vec<usize>> {
    use rand::{Rng, SeedableRng};
    let others: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| Some(i) != reference)
        .collect();
    let reference = reference.filter(|r| order.contains(r));
    let n = (tasks.max(1) as usize).min(others.len().max(1));
    let mut shares: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, &i) in others.iter().enumerate() {
        shares[k % n].push(i);
    }
    if let Some(r) = reference {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for share in &mut shares {
            let at = rng.gen_range(0..=share.len());
            share.insert(at, r);
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_share_has_the_reference_and_the_others_once() {
        let order = [4, 0, 3, 1, 2];
        let shares = shares(&order, Some(3), 2, 9);
        assert_eq!(shares.len(), 2);
        assert!(
            shares
                .iter()
                .all(|s| s.iter().filter(|&&i| i == 3).count() == 1)
        );
        let mut others: Vec<usize> = shares.concat().into_iter().filter(|&i| i != 3).collect();
        others.sort();
        assert_eq!(others, [0, 1, 2, 4]);
        // More tasks than runs: one share per run; no reference in the round: none added.
        assert_eq!(super::shares(&[1, 2], None, 8, 1).len(), 2);
        assert_eq!(super::shares(&[1, 2], Some(5), 1, 1), vec![vec![1, 2]]);
    }

    fn item(configuration: &str, program: &str, args: &[&str]) -> WorkItem {
        WorkItem {
            configuration: configuration.into(),
            commit: None,
            program: program.into(),
            arg0: None,
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            steady_env: false,
            cwd: "/".into(),
            stdin: None,
            timeout_seconds: 30.0,
        }
    }

    #[test]
    fn a_task_writes_each_run_once_and_a_failed_warm_up_stands_for_its_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let share = TaskWork {
            warmup: 1,
            regions_env: None,
            counter: None,
            runs: vec![item("ok", "true", &[]), item("bad", "false", &[])],
        };
        write_atomically(&work_file(dir.path(), 3), &to_json(&share)).unwrap();
        work(dir.path(), 3).unwrap();
        let read = |i: usize| -> RunFile {
            read_json(&results_dir(dir.path(), 3).join(format!("{i}.json"))).unwrap()
        };
        let (ok, bad) = (read(0), read(1));
        assert!(ok.result.outcome.is_ok() && !ok.warmup);
        assert!(bad.warmup && bad.result.outcome == runner::Outcome::Exit(1));
        assert_eq!(ok.host, store::host_name());
        assert!(done_marker(dir.path(), 3).exists());
        // A requeued task makes no run twice.
        let before = std::fs::read_to_string(results_dir(dir.path(), 3).join("0.json")).unwrap();
        work(dir.path(), 3).unwrap();
        let after = std::fs::read_to_string(results_dir(dir.path(), 3).join("0.json")).unwrap();
        assert_eq!(before, after);
    }

    /// A task's share run (run `a` writes `r1 <value>` to its region file, `b` none) and
    /// stored from its files by a submission of `counted_regions`: the store, and the
    /// selection of its runs.
    fn ingested_share(
        dir: &Path,
        value: &str,
        counted_regions: bool,
    ) -> (Store, Selection, Collected) {
        let writes = "[ -n \"$KNOBS_TEST_REGIONS\" ] && echo \"r1 $0\" > \"$KNOBS_TEST_REGIONS\"";
        let share = TaskWork {
            warmup: 1,
            regions_env: Some("KNOBS_TEST_REGIONS".into()),
            counter: None,
            runs: vec![
                item("a", "sh", &["-c", writes, value]),
                item("b", "true", &[]),
            ],
        };
        write_atomically(&work_file(dir, 0), &to_json(&share)).unwrap();
        work(dir, 0).unwrap();
        let results = results_dir(dir, 0);
        assert_eq!(
            std::fs::read_to_string(regions_file(&results, 0)).unwrap(),
            format!("r1 {value}\n")
        );
        assert!(!regions_file(&results, 1).exists());

        let store = Store::open(&dir.join("r.db")).unwrap();
        let spec = crate::SystemSpec::parse(
            "name = \"t\"\n[run]\nprogram = \"true\"\nargs = [\"{options}\"]\n[[workload]]\nname = \"w\"\n\
             [[option]]\nname = \"a\"\non = [\"x\"]\n",
            &dir.join("knobs.toml"),
        )
        .unwrap();
        store.register_spec(&spec).unwrap();
        let submission = Submission {
            name: "knobs-t-r1-1".into(),
            store: store.path().to_path_buf(),
            system: spec.name.clone(),
            spec_hash: spec.hash.clone(),
            workload: "w".into(),
            variant: "v".into(),
            commit: String::new(),
            commits: Vec::new(),
            inputs: None,
            round: store.begin_round(1, None).unwrap(),
            owner: "o".into(),
            tasks: 1,
            job: None,
            counted_regions,
        };
        let read = |path: &Path| -> Result<Vec<store::RegionMeasurement>, String> {
            let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
            let (region, seconds) = text.trim().split_once(' ').ok_or("no region")?;
            Ok(vec![store::RegionMeasurement {
                region: region.into(),
                seconds: seconds.parse().map_err(|_| "no seconds")?,
                entries: 1,
                cpu_seconds: None,
            }])
        };
        let mut collected = Collected::default();
        ingest(
            &store,
            dir,
            &submission,
            Some(&read),
            &mut collected,
            &mut |_| {},
        )
        .unwrap();
        let selection = Selection {
            variant: "v".into(),
            ..Selection::of(&spec, "w")
        };
        (store, selection, collected)
    }

    /// A share of an instrumented program: the task keeps the file each measured run wrote
    /// beside its result, and storing the run stores the times in it; a successful run that
    /// wrote none is stored failed, as locally.
    #[test]
    fn region_times_travel_with_their_runs_into_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let (store, selection, collected) = ingested_share(dir.path(), "0.25", false);
        assert_eq!(collected.stored.values().sum::<u32>(), 2);
        let times = store.region_times(&selection).unwrap();
        assert_eq!(times.len(), 1, "{times:?}");
        assert_eq!(
            (times[0].0.as_str(), times[0].2.region.as_str()),
            ("a", "r1")
        );
        assert_eq!(times[0].2.seconds, 0.25);
        assert_eq!(
            store.runs_of(&selection, "a").unwrap()[0].instructions,
            None
        );
        let b = &store.runs_of(&selection, "b").unwrap()[0];
        assert!(!b.is_ok(), "{b:?}");
        assert!(
            b.detail
                .as_deref()
                .unwrap_or("")
                .contains("no region times"),
            "{b:?}"
        );
    }

    /// A counting build's runs on Slurm: each stored run's instructions are what its region
    /// file adds up to, as a local campaign reads them.
    #[test]
    fn a_counting_builds_runs_are_stored_with_their_counts() {
        let dir = tempfile::tempdir().unwrap();
        let (store, selection, collected) = ingested_share(dir.path(), "12345", true);
        assert_eq!(collected.stored.values().sum::<u32>(), 2);
        let a = &store.runs_of(&selection, "a").unwrap()[0];
        assert!(a.is_ok(), "{a:?}");
        assert_eq!(a.instructions, Some(12345), "{a:?}");
        let b = &store.runs_of(&selection, "b").unwrap()[0];
        assert!(!b.is_ok() && b.instructions.is_none(), "{b:?}");
    }

    /// A killed task's scratch directory is removed by the next task on its host; a running
    /// task's, and another host's, are left alone.
    #[test]
    fn a_task_removes_the_scratch_killed_tasks_of_its_host_left() {
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        let host = store::host_name();
        let tmp = std::env::temp_dir();
        let killed = tmp.join(format!("knobs-task-7-{}@{host}", gone.id()));
        let elsewhere = tmp.join(format!("knobs-task-7-{}@not-{host}", gone.id()));
        let running = tmp.join(format!("knobs-task-7-{}@{host}", std::process::id()));
        for dir in [&killed, &elsewhere, &running] {
            std::fs::create_dir_all(dir.join("stripped")).unwrap();
        }
        let scratch = NodeScratch::new(8).unwrap();
        assert!(!killed.exists());
        assert!(elsewhere.exists() && running.exists());
        assert_eq!(scratch_owner("knobs-task-3-42@a-b.c", "a-b.c"), Some(42));
        assert_eq!(scratch_owner("knobs-task-3-42@a-b.c", "d"), None);
        drop(scratch);
        for dir in [&elsewhere, &running] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(sh_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
