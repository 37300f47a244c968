//! Runs the declared approaches on one subject: each step calls the `knobs` binary, reads
//! its `--json` report from stdout (stderr goes to a log file, never parsed), and appends a
//! row to the run's JSON Lines file as soon as the step is done.
//!
//! This module holds the subject's run (its build, one step, the comparison) and how a
//! `knobs` command is run; the steps themselves are in `ground_truth` (brute force, its
//! repetition), `white_box`, `black_box`, `overhead` (Table 7), and `evaluation` (a model's error).

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::data::{self, Data};
use crate::reports::{
    ComprexReport, Correction, CrushReport, EvaluateReport, FamilyReport, MeasureReport,
    ResultsShow, ShownSummary, SpaceCount, SplatReport,
};
use crate::rows::Status;
use crate::rows::{self, Row, RunInfo};
use crate::subjects::{
    Approach, Count, OverheadSettings, QUICK_REPETITIONS, RANDOM_AS, Step, Subject, split_run,
};

mod black_box;
mod build_options;
mod counted_truth;
mod evaluation;
mod ground_truth;
pub mod overhead;
mod rounds;
mod white_box;

pub use evaluation::training_configurations;

/// What every subject of one invocation shares.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The workspace root: subjects' paths are relative to it.
    pub root: PathBuf,
    /// The `knobs` binary.
    pub knobs: PathBuf,
    /// Where the rows and `latest.md` go.
    pub results_dir: PathBuf,
    /// Stores, models, builds and logs go to `WORK/SUBJECT/`.
    pub work_dir: PathBuf,
    /// Keep `WORK/SUBJECT/` from an earlier run (stores resume) instead of starting afresh.
    pub resume: bool,
    /// Overrides every subject's ground-truth sample.
    pub ground_truth: Option<String>,
    /// Only these steps (approach or extra names, of those each subject declares).
    pub only: Option<Vec<String>>,
    /// The runner's own command line, recorded in every row.
    pub command_line: String,
    /// Small workloads, fewer repetitions, one seed (`--quick`).
    pub quick: bool,
    /// The metric every measurement takes instead of the spec's (`--metric`); under
    /// `instructions` the white-box approaches build their counting variants and are compared
    /// with the counted ground truth (`run::counted_truth`).
    pub metric: Option<String>,
    /// A step still running after this long is stopped and recorded as failed.
    pub step_timeout: Option<std::time::Duration>,
    /// Each step measures in a session of its own, one after another, instead of in rounds
    /// interleaved with the others' (`rounds`).
    pub sessions: bool,
}

/// What every row of this invocation shares: the commit, the machine, the `knobs` binary
/// (its version, SHA-256 and modification time) and the runner's command line.
pub fn run_info(root: &Path, knobs: &Path, runner: String) -> Result<RunInfo> {
    let version = Command::new(knobs)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run {}", knobs.display()))?;
    let (commit, dirty) = rows::git_commit(root);
    Ok(RunInfo {
        run: String::new(),
        started: rows::now_utc(),
        commit,
        dirty,
        machine: rows::Machine::this(),
        knobs_version: String::from_utf8_lossy(&version.stdout).trim().to_string(),
        knobs: knobs.display().to_string(),
        knobs_sha256: sha256_file(knobs)?,
        knobs_modified: std::fs::metadata(knobs)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(String::new(), |d| rows::format_utc(d.as_secs())),
        runner,
    })
}

/// Runs every subject's plan in turn (a step that needs the ground truth is skipped once the
/// brute force has failed) and returns what failed, `SUBJECT: STEP` each; the errors go to
/// stderr as they happen.
pub fn run_subjects(
    settings: &Settings,
    subjects: &[&Subject],
    info: &RunInfo,
) -> Result<Vec<String>> {
    let mut failed: Vec<String> = Vec::new();
    for &subject in subjects {
        let mut sr = SubjectRun::new(settings, subject, info)?;
        let build = match sr.build() {
            Ok(b) => b,
            Err(e) => {
                eprintln!("knobs-bench: {}: error: {e:#}", subject.name);
                failed.push(format!("{}: build", subject.name));
                continue;
            }
        };
        let plan = subject.plan(settings.only.as_deref());
        match sr.interleaved_rounds() {
            Ok(rounds) => {
                for name in sr.interleave(&plan, rounds) {
                    failed.push(format!("{}: {name} (an earlier round)", subject.name));
                }
            }
            Err(e) => {
                eprintln!("knobs-bench: {}: error: {e:#}", subject.name);
                failed.push(format!("{}: rounds", subject.name));
            }
        }
        let mut truth_failed = false;
        for step in plan {
            let name = &step.name;
            if truth_failed && step.approach.needs_ground_truth() {
                failed.push(format!("{}: {name} (no ground truth)", subject.name));
                continue;
            }
            if let Err(e) = sr.approach(&step, &build) {
                eprintln!("knobs-bench: {}: {name}: error: {e:#}", subject.name);
                failed.push(format!("{}: {name}", subject.name));
                truth_failed |= step.approach == Approach::BruteForce;
            }
        }
        if let Err(e) = sr.compare() {
            eprintln!("knobs-bench: {}: comparison: error: {e:#}", subject.name);
            failed.push(format!("{}: comparison", subject.name));
        }
        if sr.rows_file.exists() {
            eprintln!(
                "knobs-bench: {}: rows in {}",
                subject.name,
                sr.rows_file.display()
            );
        }
    }
    Ok(failed)
}

/// Quotes an argument for a POSIX shell when it needs it.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=,+@%".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// A command line as a shell would run it, with the environment given first.
pub fn command_line(env: &[(String, String)], program: &Path, args: &[String]) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={}", shell_quote(v)))
        .chain(std::iter::once(shell_quote(&program.display().to_string())))
        .chain(args.iter().map(|a| shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

/// The SHA-256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// One subject's run: its work directory, its rows file and the commands of the step in
/// progress.
pub struct SubjectRun<'a> {
    pub settings: &'a Settings,
    pub subject: &'a Subject,
    pub info: RunInfo,
    /// The spec, absolute (knobs resolves an instrumented program relative to the spec).
    pub spec: PathBuf,
    pub work: PathBuf,
    pub rows_file: PathBuf,
    pub ground_truth: String,
    /// The ground truth, once measured.
    pub truth: Option<GroundTruth>,
    /// The white-box rows' ground truth under `--metric instructions`, once measured.
    counted_truth: Option<GroundTruth>,
    /// Commands of the current step.
    commands: Vec<String>,
    logs: usize,
    evaluate_has_all: Option<bool>,
    /// Each model's absolute percentage error per ground-truth configuration (in the
    /// ground truth's order), by step name: what the comparison pairs.
    errors: Vec<(String, Vec<f64>)>,
    /// Each model's predictions of the ground truth's configurations (a mean over several
    /// models), by step name: what a step run `again` is compared with.
    predictions: HashMap<String, Vec<f64>>,
    /// When the current step must end (`Settings::step_timeout`).
    deadline: Option<Instant>,
    /// Configurations each finished step measured, by step name (for `random:as:STEP`).
    measured: HashMap<String, f64>,
    /// The repetitions every measuring command asks for in an interleaved round.
    repetitions: Option<u32>,
    /// Each step's interleaved rounds before its own run, by step name.
    earlier_rounds: HashMap<String, rounds::EarlierRounds>,
}

pub struct GroundTruth {
    pub store: PathBuf,
    pub csv: PathBuf,
    pub data: Data,
    /// Valid configurations of the space.
    pub total: Option<f64>,
}

impl<'a> SubjectRun<'a> {
    pub fn new(settings: &'a Settings, subject: &'a Subject, info: &RunInfo) -> Result<Self> {
        let work = settings.work_dir.join(&subject.name);
        if !settings.resume && work.exists() {
            std::fs::remove_dir_all(&work)
                .with_context(|| format!("removing the old work directory {}", work.display()))?;
        }
        std::fs::create_dir_all(work.join("logs"))
            .with_context(|| format!("creating {}", work.display()))?;
        let rows_file = rows::run_file(
            &settings.results_dir,
            &info.started,
            &info.commit,
            &subject.name,
        );
        let mut info = info.clone();
        info.run = rows_file
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        let spec = settings.root.join(&subject.spec);
        let spec = spec
            .canonicalize()
            .with_context(|| format!("{}: no spec at {}", subject.name, spec.display()))?;
        Ok(SubjectRun {
            settings,
            subject,
            info,
            spec,
            work,
            rows_file,
            ground_truth: settings
                .ground_truth
                .clone()
                .unwrap_or_else(|| subject.ground_truth.clone()),
            truth: None,
            counted_truth: None,
            commands: Vec::new(),
            logs: 0,
            evaluate_has_all: None,
            errors: Vec::new(),
            predictions: HashMap::new(),
            deadline: None,
            measured: HashMap::new(),
            repetitions: None,
            earlier_rounds: HashMap::new(),
        })
    }

    /// An error once the step has run past `--step-timeout`.
    pub(crate) fn check_deadline(&self) -> Result<()> {
        match (self.deadline, self.settings.step_timeout) {
            (Some(d), Some(t)) if Instant::now() >= d => bail!(
                "did not finish within the run's --step-timeout of {} s",
                t.as_secs()
            ),
            _ => Ok(()),
        }
    }

    /// Records a command the runner ran itself (Table 7's program runs).
    pub(crate) fn record(&mut self, line: String) {
        self.commands.push(line);
    }

    fn say(&self, what: &str) {
        eprintln!("knobs-bench: {}: {what}", self.subject.name);
    }

    /// Runs a command in the workspace root; stdout is returned, stderr goes to a log file
    /// (its tail is in the error when the command fails).
    fn run(
        &mut self,
        env: &[(String, String)],
        program: &Path,
        args: &[String],
    ) -> Result<Vec<u8>> {
        let line = command_line(env, program, args);
        self.commands.push(line.clone());
        self.logs += 1;
        let name = args
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .take(2)
            .map(|a| {
                Path::new(a)
                    .file_name()
                    .map_or(a.clone(), |f| f.to_string_lossy().into_owned())
            })
            .collect::<Vec<_>>()
            .join("-");
        let log = self.work.join("logs").join(format!(
            "{:02}-{}.log",
            self.logs,
            if name.is_empty() { "run".into() } else { name }
        ));
        let stderr =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        eprintln!("  $ {line}");
        let kept = log.with_extension("stdout");
        let stdout =
            std::fs::File::create(&kept).with_context(|| format!("creating {}", kept.display()))?;
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.settings.root)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", program.display()))?;
        let status = loop {
            if let Some(status) = child.try_wait().context("waiting for a command")? {
                break status;
            }
            if let Err(e) = self.check_deadline() {
                // The command's whole process group: knobs and the compilers it started.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.wait();
                bail!("{e}: stopped `{line}`");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let stdout = std::fs::read(&kept).with_context(|| format!("reading {}", kept.display()))?;
        if stdout.is_empty() {
            let _ = std::fs::remove_file(&kept);
        }
        if !status.success() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("(no output on stderr)");
            bail!(
                "`{line}` failed ({status}): {last} (log: {})",
                log.display()
            );
        }
        Ok(stdout)
    }

    pub(crate) fn knobs(&mut self, args: &[String]) -> Result<Vec<u8>> {
        let knobs = self.settings.knobs.clone();
        self.run(&[], &knobs, args)
    }

    /// Runs knobs with `--json` (given in `args`) and reads its report, returning it also
    /// as it was printed.
    pub(crate) fn knobs_json<T: DeserializeOwned>(
        &mut self,
        args: &[String],
    ) -> Result<(T, Value)> {
        let out = self.knobs(args)?;
        let value: Value = serde_json::from_slice(&out).with_context(|| {
            format!(
                "`{}` did not print JSON on stdout: {}",
                self.commands.last().expect("a command ran"),
                String::from_utf8_lossy(&out)
                    .lines()
                    .next()
                    .unwrap_or("(nothing)")
            )
        })?;
        let report = serde_json::from_value(value.clone()).with_context(|| {
            format!(
                "reading the report of `{}`",
                self.commands.last().expect("a command ran")
            )
        })?;
        Ok((report, value))
    }

    pub(crate) fn spec_args(&self) -> Vec<String> {
        let mut a = vec!["--spec".into(), path_arg(&self.spec)];
        a.extend(self.workload_args());
        a
    }

    /// The workload measured: the subject's, its quick one under `--quick`, or its counted
    /// one under `--metric instructions`.
    pub(crate) fn workload(&self) -> Option<&str> {
        let quick = self
            .settings
            .quick
            .then_some(self.subject.quick.workload.as_deref());
        let counted = (self.settings.metric.as_deref() == Some("instructions"))
            .then_some(self.subject.counted.workload.as_deref());
        quick
            .flatten()
            .or(counted.flatten())
            .or(self.subject.workload.as_deref())
    }

    fn workload_args(&self) -> Vec<String> {
        self.workload()
            .iter()
            .flat_map(|w| ["--workload".to_string(), w.to_string()])
            .collect()
    }

    /// `--repetitions N` in an interleaved round (`rounds`) and under `--quick`, and 1 for
    /// instruction counts (the same in every run), for every command that measures.
    pub(crate) fn repetition_args(&self) -> Vec<String> {
        if let Some(round) = self.repetitions {
            vec!["--repetitions".into(), round.to_string()]
        } else if self.settings.metric.as_deref() == Some("instructions") {
            vec!["--repetitions".into(), "1".into()]
        } else if self.settings.quick {
            vec!["--repetitions".into(), QUICK_REPETITIONS.to_string()]
        } else {
            Vec::new()
        }
    }

    /// Table 7's settings: at most 4 configurations and 2 rounds under `--quick`.
    pub(crate) fn overhead_settings(&self) -> OverheadSettings {
        let mut o = self.subject.overhead.clone();
        if self.settings.quick {
            o.rounds = o.rounds.min(2);
            o.configurations = match o.configurations {
                Count::Some(n) => Count::Some(n.min(4)),
                Count::All => Count::Some(4),
            };
        }
        o
    }

    /// The black-box seeds: the first alone under `--quick`.
    fn seeds(&self) -> Vec<u64> {
        let seeds = &self.subject.blackbox.seeds;
        if self.settings.quick {
            seeds[..1].to_vec()
        } else {
            seeds.clone()
        }
    }

    /// A new row for `approach`, with the run's and subject's fields.
    fn row(&self, approach: Approach, date: String, load_start: [f64; 3]) -> Row {
        Row {
            schema: rows::SCHEMA,
            info: self.info.clone(),
            subject: self.subject.name.clone(),
            approach: approach.name().into(),
            date,
            load_start,
            spec: self.subject.spec.display().to_string(),
            workload: self.workload().map(str::to_string),
            quick: self.settings.quick,
            source: self.subject.source.clone(),
            ground_truth: approach
                .needs_ground_truth()
                .then(|| self.ground_truth.clone()),
            ..Row::default()
        }
    }

    /// Fetches and builds the subject's program, and checks the pinned source's checksum.
    pub fn build(&mut self) -> Result<Vec<String>> {
        self.commands.clear();
        let s = self.subject;
        if let Some((program, args)) = s.build.split_first() {
            self.say("fetching and building");
            let env: Vec<(String, String)> = s
                .source
                .iter()
                .flat_map(|src| {
                    [
                        ("KNOBS_SOURCE_VERSION".to_string(), src.version.clone()),
                        ("KNOBS_SOURCE_SHA256".to_string(), src.sha256.clone()),
                    ]
                })
                .collect();
            self.run(&env, Path::new(program), args)?;
        }
        if let Some(src) = &s.source {
            let file = self.settings.root.join(&src.file);
            let got = sha256_file(&file).with_context(|| {
                format!(
                    "{}: the pinned source file is missing after the build",
                    s.name
                )
            })?;
            if got != src.sha256 {
                bail!(
                    "{}: checksum mismatch for {}: expected sha256 {}, got {got}",
                    s.name,
                    src.file.display(),
                    src.sha256
                );
            }
        }
        Ok(std::mem::take(&mut self.commands))
    }

    /// Runs one step and appends its row; a step that fails gets a row saying why, and its
    /// error is returned.
    pub fn approach(&mut self, step: &Step, build_commands: &[String]) -> Result<Row> {
        self.commands.clear();
        let approach = step.approach;
        let name = &step.name;
        self.say(name);
        let date = rows::now_utc();
        let load_start = rows::load_average();
        let t0 = Instant::now();
        let mut row = self.row(approach, date, load_start);
        self.deadline = self.settings.step_timeout.map(|t| t0 + t);
        row.approach = name.clone();
        if approach == Approach::Blackbox {
            row.detail("approach_kind", approach.name());
        } else if !step.args.is_empty() || step.again_of.is_some() {
            row.detail("approach_kind", approach.name());
            if !step.args.is_empty() {
                row.detail("extra_args", &step.args);
            }
        }
        let outcome = match approach {
            Approach::Overhead if self.settings.metric.is_some() => {
                row.status = Status::NotApplicable;
                row.reason = Some(
                    "Table 7 compares the instrumented builds' run times with the native \
                     program's; --metric does not apply"
                        .into(),
                );
                Ok(())
            }
            Approach::BruteForce => self.brute_force(&mut row),
            Approach::Crush => self.crush(&mut row, step),
            Approach::Comprex => self.comprex(&mut row, step),
            Approach::Granularity => self.granularity(&mut row, step),
            Approach::Blackbox => self.blackbox(&mut row, &step.name),
            Approach::Overhead => overhead::table7(self, &mut row),
            Approach::Splat => self.splat(&mut row, step, false),
            Approach::SplatDelayed => self.splat(&mut row, step, true),
            Approach::Family => self.family(&mut row, step),
            Approach::Repeat => self.repeat(&mut row),
        }
        .and_then(|()| match &step.again_of {
            Some(first) => self.against_first_run(&mut row, first),
            None => Ok(()),
        });
        self.deadline = None;
        if let Err(e) = &outcome {
            row.status = Status::Failed;
            row.reason = Some(format!("{e:#}"));
        }
        row.elapsed_seconds = t0.elapsed().as_secs_f64();
        row.load_end = rows::load_average();
        let earlier = self.earlier_rounds(step, &mut row);
        row.commands = build_commands
            .iter()
            .cloned()
            .chain(earlier)
            .chain(std::mem::take(&mut self.commands))
            .collect();
        rows::append(&self.rows_file, &row)?;
        outcome?;
        if row.status == Status::Ok
            && let Some(c) = row.configurations
        {
            self.measured.insert(name.clone(), c);
        }
        self.say_done(step, &row);
        Ok(row)
    }

    /// One line on stderr for a step's row: what it measured and its error.
    fn say_done(&self, step: &Step, row: &Row) {
        let name = &step.name;
        match row.status {
            Status::NotApplicable => self.say(&format!(
                "{name}: does not apply: {}",
                row.reason.as_deref().unwrap_or("")
            )),
            _ if step.approach == Approach::Granularity => {
                self.say(&format!("{name}: Table IV in {}", self.rows_file.display()))
            }
            _ => self.say(&format!(
                "{name}: {} configurations, {} s measured, MAPE {} % (row in {})",
                row.configurations.map_or("?".into(), |c| format!("{c}")),
                row.measurement_seconds
                    .map_or("?".into(), |s| format!("{s:.2}")),
                row.mape_percent.map_or("—".into(), |m| format!("{m:.1}")),
                self.rows_file.display()
            )),
        }
    }

    /// Compares every model of this run with the most accurate one on the ground truth's
    /// configurations (Wilcoxon's signed-rank test on the paired absolute percentage
    /// errors, Holm-corrected over the comparisons) and appends the comparison's row.
    pub fn compare(&mut self) -> Result<Option<Row>> {
        if self.errors.len() < 2 {
            return Ok(None);
        }
        let date = rows::now_utc();
        let mut row = self.row(Approach::BruteForce, date, rows::load_average());
        row.approach = rows::COMPARISON.into();
        row.ground_truth = Some(self.ground_truth.clone());
        let comparison = crate::compare::compare(&self.errors);
        row.configurations = self.truth.as_ref().map(|t| t.data.rows.len() as f64);
        row.detail("comparison", &comparison);
        row.load_end = rows::load_average();
        rows::append(&self.rows_file, &row)?;
        self.say(&format!(
            "most accurate on all configurations: {}",
            comparison.best
        ));
        Ok(Some(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("--sample"), "--sample");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(
            command_line(
                &[("X".into(), "1 2".into())],
                Path::new("/bin/knobs"),
                &["crush".into(), "--json".into()]
            ),
            "X='1 2' /bin/knobs crush --json"
        );
    }
}
