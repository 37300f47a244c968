//! Runs the declared approaches on one subject: each step calls the `knobs` binary, reads
//! its `--json` report from stdout (stderr goes to a log file, never parsed), and appends a
//! row to the run's JSON Lines file as soon as the step is done.

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
    /// The metric every measurement takes instead of the spec's (`--metric`); the white-box
    /// approaches do not apply under it.
    pub metric: Option<String>,
    /// A step still running after this long is stopped and recorded as failed.
    pub step_timeout: Option<std::time::Duration>,
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
            commands: Vec::new(),
            logs: 0,
            evaluate_has_all: None,
            errors: Vec::new(),
            predictions: HashMap::new(),
            deadline: None,
            measured: HashMap::new(),
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

    /// The workload measured: the subject's, or its quick one under `--quick`.
    pub(crate) fn workload(&self) -> Option<&str> {
        let quick = self
            .settings
            .quick
            .then_some(self.subject.quick.workload.as_deref());
        quick.flatten().or(self.subject.workload.as_deref())
    }

    fn workload_args(&self) -> Vec<String> {
        self.workload()
            .iter()
            .flat_map(|w| ["--workload".to_string(), w.to_string()])
            .collect()
    }

    /// `--repetitions N` under `--quick`, and 1 for instruction counts (the same in every
    /// run), for every command that measures.
    pub(crate) fn repetition_args(&self) -> Vec<String> {
        if self.settings.metric.as_deref() == Some("instructions") {
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
            _ if self.settings.metric.is_some() && !approach.measures_native_runs() => {
                row.status = Status::NotApplicable;
                row.reason = Some(
                    "--metric applies to the native program's sessions; this approach times \
                     its own build"
                        .into(),
                );
                Ok(())
            }
            Approach::BruteForce => self.brute_force(&mut row),
            Approach::Crush => self.crush(&mut row, step),
            Approach::Comprex => self.comprex(&mut row, step),
            Approach::Granularity => self.granularity(&mut row, step),
            Approach::Blackbox => self.blackbox(&mut row, &step.name),
            Approach::Overhead => crate::overhead::table7(self, &mut row),
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
        row.commands = build_commands
            .iter()
            .cloned()
            .chain(std::mem::take(&mut self.commands))
            .collect();
        rows::append(&self.rows_file, &row)?;
        outcome?;
        if row.status == Status::Ok
            && let Some(c) = row.configurations
        {
            self.measured.insert(name.clone(), c);
        }
        match row.status {
            Status::NotApplicable => self.say(&format!(
                "{name}: does not apply: {}",
                row.reason.as_deref().unwrap_or("")
            )),
            _ if approach == Approach::Granularity => {
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
        Ok(row)
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

    fn truth(&self) -> Result<&GroundTruth> {
        self.truth
            .as_ref()
            .context("the ground truth has not been measured (run brute-force first)")
    }

    fn export(&mut self, store: &Path, variant: Option<&str>, out: &Path) -> Result<Data> {
        let workload = self.workload().map(str::to_string);
        self.export_workload(store, variant, workload.as_deref(), out)
    }

    /// `knobs results export` of one workload's runs (the spec's first without one).
    fn export_workload(
        &mut self,
        store: &Path,
        variant: Option<&str>,
        workload: Option<&str>,
        out: &Path,
    ) -> Result<Data> {
        let mut args = vec![
            "results".into(),
            "export".into(),
            "--store".into(),
            path_arg(store),
        ];
        if let Some(w) = workload {
            args.extend(["--workload".into(), w.into()]);
        }
        if let Some(v) = variant {
            args.extend(["--variant".into(), v.into()]);
        }
        args.extend(["--format".into(), "csv".into(), "-o".into(), path_arg(out)]);
        self.knobs(&args)?;
        Data::read(out)
    }

    /// Whether `knobs evaluate` has `--all` (evaluate on every configuration of the data,
    /// training configurations included).
    fn evaluate_has_all(&mut self) -> bool {
        if let Some(has) = self.evaluate_has_all {
            return has;
        }
        let has = Command::new(&self.settings.knobs)
            .args(["evaluate", "--help"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--all"));
        self.evaluate_has_all = Some(has);
        has
    }

    /// `knobs evaluate MODEL DATA --json`: MAPE (%) on the configurations the model was not
    /// built from (`None` when it was built from all of them) and on all, with how many
    /// configurations each is over. An older knobs that prints one error is asked twice.
    fn evaluate_both(&mut self, model: &Path, data: &Path) -> Result<Evaluation> {
        let args = vec![
            "evaluate".into(),
            path_arg(model),
            path_arg(data),
            "--json".into(),
            "--all".into(),
        ];
        if self.evaluate_has_all()
            && let Ok((r, _)) = self.knobs_json::<EvaluateReport>(&args)
            && let Some(all) = r.mape_all
        {
            let of = r.of.or(r.configurations);
            let unmeasured_count = match (of, r.training_configurations) {
                (Some(of), Some(t)) => Some(of.saturating_sub(t)),
                _ => None,
            };
            return Ok(Evaluation {
                unmeasured: r.mape_unmeasured.map(|m| (m, unmeasured_count)),
                all: (all, of),
            });
        }
        let all = self.evaluate(model, data, true)?;
        let unmeasured = self.evaluate(model, data, false).ok();
        Ok(Evaluation { unmeasured, all })
    }

    /// `knobs evaluate MODEL DATA --json [--all]`: MAPE (%) and the configurations it is over.
    fn evaluate(&mut self, model: &Path, data: &Path, all: bool) -> Result<(f64, Option<u64>)> {
        let mut args = vec![
            "evaluate".into(),
            path_arg(model),
            path_arg(data),
            "--json".into(),
        ];
        if all && self.evaluate_has_all() {
            args.push("--all".into());
        }
        let (r, raw): (EvaluateReport, Value) = self.knobs_json(&args)?;
        let mape = r
            .mape
            .with_context(|| format!("`knobs evaluate --json` printed no MAPE: {raw}"))?;
        Ok((mape, r.configurations))
    }

    /// `knobs measure --sample SAMPLE [--seed N]` of the native program into `store`.
    fn measure_sample(
        &mut self,
        store: &Path,
        sample: &str,
        seed: Option<u64>,
    ) -> Result<(MeasureReport, Value)> {
        // Failed configurations are in the report; the bench reads them from there.
        let mut args = vec!["measure".into(), "--accept-failures".into()];
        args.extend(self.spec_args());
        args.extend([
            "--store".into(),
            path_arg(store),
            "--sample".into(),
            sample.to_string(),
        ]);
        if let Some(seed) = seed {
            args.extend(["--seed".into(), seed.to_string()]);
        }
        if let Some(metric) = &self.settings.metric {
            args.extend(["--metric".into(), metric.clone()]);
        }
        args.push("--json".into());
        args.extend(self.repetition_args());
        self.knobs_json(&args)
    }

    /// The ground truth's sample measured into `NAME.db` and exported to `NAME.csv`; the
    /// space's size is left for the caller to count.
    fn measure_ground_truth_sample(
        &mut self,
        name: &str,
    ) -> Result<(MeasureReport, Value, GroundTruth)> {
        let store = self.work.join(format!("{name}.db"));
        let sample = self.ground_truth.clone();
        let (report, raw) = self.measure_sample(&store, &sample, None)?;
        let csv = self.work.join(format!("{name}.csv"));
        let data = self.export(&store, None, &csv)?;
        let truth = GroundTruth {
            store,
            csv,
            data,
            total: None,
        };
        Ok((report, raw, truth))
    }

    /// The run-to-run noise of a store's native measurements against the options' effect:
    /// the coefficients of variation of the configurations' runs (median and largest, in %)
    /// and the span of their values (fastest, slowest, and their ratio).
    fn noise(&mut self, store: &Path) -> Result<Value> {
        let mut args = vec![
            "results".into(),
            "show".into(),
            "--store".into(),
            path_arg(store),
        ];
        if let Some(w) = self.workload() {
            args.extend(["--workload".into(), w.to_string()]);
        }
        args.push("--json".into());
        let (shown, _): (ResultsShow, Value) = self.knobs_json(&args)?;
        let summaries: Vec<&ShownSummary> = shown
            .configurations
            .iter()
            .filter_map(|c| c.summary.as_ref())
            .collect();
        let cvs: Vec<f64> = summaries
            .iter()
            .filter_map(|s| s.cv.map(|cv| cv * 100.0))
            .collect();
        let values: Vec<f64> = summaries.iter().map(|s| s.value).collect();
        let fastest = values.iter().copied().reduce(f64::min);
        let slowest = values.iter().copied().reduce(f64::max);
        Ok(serde_json::json!({
            "cv_median_percent": stats::median(&cvs),
            "cv_max_percent": cvs.iter().copied().reduce(f64::max),
            "configurations": cvs.len(),
            "runs_per_configuration": stats::median(
                &shown.configurations.iter().map(|c| c.runs as f64).collect::<Vec<_>>()
            ),
            "fastest_seconds": fastest,
            "slowest_seconds": slowest,
            "spread": fastest.zip(slowest).filter(|(f, _)| *f > 0.0).map(|(f, s)| s / f),
        }))
    }

    fn brute_force(&mut self, row: &mut Row) -> Result<()> {
        let (report, raw, mut truth) = self.measure_ground_truth_sample("ground-truth")?;
        let data = &truth.data;
        data.write_configurations(&self.work.join(CONFIGURATIONS_CSV))?;
        let c = report.campaign();
        let (count, _): (SpaceCount, Value) = self.knobs_json(&[
            "space".into(),
            "count".into(),
            path_arg(&self.spec),
            "--json".into(),
        ])?;
        row.total_configurations = count.valid_configurations.parse().ok();
        row.ground_truth = Some(self.ground_truth.clone());
        row.configurations = Some(data.rows.len() as f64);
        row.measurement_seconds = data.seconds();
        row.detail("sample", &self.ground_truth);
        row.detail("metric", &data.metric);
        row.detail("runs", c.runs);
        row.detail("reused_configurations", c.reused);
        row.detail("failed_configurations", c.failed.len());
        row.detail("noisy_configurations", c.noisy.len());
        row.detail("noise", self.noise(&truth.store)?);
        row.detail("campaign_seconds", c.seconds);
        row.detail("report", raw);
        if !c.failed.is_empty() {
            self.say(&format!(
                "warning: {} configurations failed; the ground truth lacks them",
                c.failed.len()
            ));
        }
        if data.rows.is_empty() {
            bail!("the ground truth is empty: no configuration was measured");
        }
        truth.total = row.total_configurations;
        self.truth = Some(truth);
        Ok(())
    }

    /// The measured configurations' Σ values and the model's error against the ground
    /// truth and against the build's own runs; shared by the white-box approaches. With a
    /// profiler `correction` (Comprex's §V.A line), the own runs are compared as the model
    /// sees them, corrected, so that error is the model's alone and not the overhead's.
    fn white_box_numbers(
        &mut self,
        row: &mut Row,
        model: &Path,
        store: &Path,
        variant: Option<&str>,
        name: &str,
        correction: Option<&Correction>,
    ) -> Result<()> {
        let own_csv = self.work.join(format!("{name}.csv"));
        let own = self.export(store, variant, &own_csv)?;
        let own_as_modelled = match correction {
            Some(c) => {
                let path = self.work.join(format!("{name}-corrected.csv"));
                own.map_values(|t| (t - c.intercept) / c.slope)
                    .write(&path)?;
                path
            }
            None => own_csv.clone(),
        };
        row.measurement_seconds = own.seconds();
        let truth_csv = self.truth()?.csv.clone();
        let e = self.evaluate_both(model, &truth_csv)?;
        row.mape_all_percent = Some(e.all.0);
        row.detail("mape_all_configurations", e.all.1);
        let truth_rows = self.truth()?.data.rows.len() as f64;
        if row.configurations.is_some_and(|c| c < truth_rows)
            && let Some((m, n)) = e.unmeasured
        {
            row.mape_percent = Some(m);
            row.detail("mape_configurations", n);
        }
        let (own_mape, _) = self.evaluate(model, &own_as_modelled, true)?;
        row.detail(
            if correction.is_some() {
                "mape_own_runs_corrected"
            } else {
                "mape_own_runs"
            },
            own_mape,
        );
        self.model_numbers(row, std::slice::from_ref(&model.to_path_buf()))?;
        // Instrumented (or profiled) over native medians, measured minutes apart (Table 7's
        // interleaved runs are the `overhead` approach).
        let ratios = data::ratios(&own, &self.truth()?.data);
        row.detail("over_native_geometric_mean", stats::geometric_mean(&ratios));
        row.detail("over_native_configurations", ratios.len());
        Ok(())
    }

    /// A white-box command's arguments for a step: its own store, build directory and model
    /// file, `--json`, then the step's own arguments; with the store and model paths.
    fn white_box_args(&self, command: &str, step: &Step) -> (Vec<String>, PathBuf, PathBuf) {
        let store = self.work.join(format!("{}.db", step.name));
        let model = self.work.join(format!("{}.model.json", step.name));
        let mut args = vec![command.to_string()];
        args.extend(self.spec_args());
        args.extend([
            "--store".into(),
            path_arg(&store),
            "--work-dir".into(),
            path_arg(&self.work.join(&step.name)),
            "-o".into(),
            path_arg(&model),
            "--json".into(),
        ]);
        args.extend(self.repetition_args());
        args.extend(step.args.iter().cloned());
        (args, store, model)
    }

    fn crush(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (args, store, model) = self.white_box_args("crush", step);
        let (r, raw): (CrushReport, Value) = self.knobs_json(&args)?;
        let model = r.model_path.clone().unwrap_or(model);
        let variant = r
            .variant
            .clone()
            .or_else(|| r.instrumentation.as_ref().map(|i| i.variant.clone()))
            .filter(|v| !v.is_empty())
            .context("`knobs crush --json` reported no variant")?;
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.configurations.measured);
        row.total_configurations = Some(r.configurations.total);
        row.lower_bound = Some(r.configurations.lower_bound);
        self.white_box_numbers(row, &model, &store, Some(&variant), &step.name, None)?;
        // Corrected to the native program, the model is of its runs in the same store.
        if let Some(ratio) = raw
            .pointer("/native_correction/ratio")
            .and_then(Value::as_f64)
        {
            row.detail("native_correction_ratio", ratio);
            let native_csv = self.work.join(format!("{}-native.csv", step.name));
            self.export(&store, None, &native_csv)?;
            let (own, _) = self.evaluate(&model, &native_csv, true)?;
            row.detail("mape_own_native_runs", own);
        }
        row.detail("variant", &variant);
        row.detail("regions", r.regions.count);
        row.detail("regions_before_propagation", r.regions.before_propagation);
        row.analysis_seconds = Some(r.analysis.seconds);
        row.detail("analysis", "static taint analysis and region optimisation");
        row.detail("peak_memory_mib", r.analysis.peak_memory_mib);
        row.detail("tainted_decisions", r.analysis.tainted_decisions);
        row.detail("interactions", &r.analysis.interactions);
        row.detail("irrelevant", &r.analysis.irrelevant);
        row.detail("build_seconds", r.build.seconds);
        if let Some(i) = &r.instrumentation {
            row.detail("enter_calls", i.enter_calls);
            row.detail("exit_calls", i.exit_calls);
        }
        if let Some(o) = &r.overhead {
            row.detail("rc_mean", o.region_entries_per_run);
        }
        row.detail("report", raw);
        Ok(())
    }

    fn comprex(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (args, store, model) = self.white_box_args("comprex", step);
        let (r, mut raw): (ComprexReport, Value) = self.knobs_json(&args)?;
        // Each region's partition as formulas is about 200 KB on xz: the row keeps their
        // number (the whole report stays in the work directory, logs/NN-comprex.stdout).
        if let Some(regions) = raw.pointer_mut("/exploration/regions")
            && let Some(n) = regions.as_array().map(Vec::len)
        {
            *regions = Value::from(n);
        }
        let model = r.model_path.clone().unwrap_or(model);
        let variant = r
            .variant
            .clone()
            .filter(|v| !v.is_empty())
            .context("`knobs comprex --json` reported no variant")?;
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.configurations.len() as f64);
        row.total_configurations = Some(r.total_configurations);
        self.white_box_numbers(
            row,
            &model,
            &store,
            Some(&variant),
            &step.name,
            r.overhead_correction.as_ref(),
        )?;
        row.detail("variant", &variant);
        if let Some(e) = &r.exploration {
            row.detail("taint_runs", e.configurations);
            row.detail("taint_seconds", e.seconds);
            row.analysis_seconds = Some(e.seconds);
            row.detail("analysis", "dynamic taint exploration");
            row.detail("decision_sites", e.decision_sites);
        }
        if let Some(p) = &r.probes {
            row.detail("probed_methods", p.probed);
            row.detail("methods", p.methods);
        }
        self.taint_slowdown(row, &raw)?;
        if let Some(c) = &r.overhead_correction {
            row.detail("correction_slope", c.slope);
            row.detail("correction_intercept", c.intercept);
            row.detail("correction_configurations", c.pairs.len());
        }
        row.detail("report", raw);
        Ok(())
    }

    /// Comprex's Table IV: one taint exploration tracking the regions of every granularity,
    /// and per granularity its regions and the fewest configurations covering them.
    fn granularity(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (mut args, _, _) = self.white_box_args("comprex", step);
        args.push("--granularity-table".into());
        let (r, _): (ComprexReport, Value) = self.knobs_json(&args)?;
        let table: Vec<Value> = r
            .granularity_table
            .iter()
            .map(|g| {
                serde_json::json!({
                    "granularity": g.granularity,
                    "regions": g.regions.len(),
                    "configurations": g.cover,
                    "cover_minimal": g.cover_minimal,
                })
            })
            .collect();
        if table.is_empty() {
            bail!("`knobs comprex --granularity-table --json` reported no table");
        }
        let first = &r.granularity_table[0];
        row.total_configurations = Some(r.total_configurations);
        row.analysis_seconds = Some(first.seconds);
        row.detail("analysis", "dynamic taint exploration");
        row.detail("taint_runs", first.configurations);
        row.detail("decision_sites", first.decision_sites);
        row.detail("table", table);
        Ok(())
    }

    /// The taint runs' slowdown, roughly: Comprex's exploration seconds per taint run (taint
    /// recording included) over the native program's median on the same analysis workload,
    /// a distance-based sample of 4 configurations (not the explored ones).
    fn taint_slowdown(&mut self, row: &mut Row, report: &Value) -> Result<()> {
        let (Some(workload), Some(runs), Some(seconds)) = (
            report.get("analysis_workload").and_then(Value::as_str),
            report
                .pointer("/exploration/configurations")
                .and_then(Value::as_f64),
            report
                .pointer("/exploration/seconds")
                .and_then(Value::as_f64),
        ) else {
            return Ok(());
        };
        let store = self.work.join("native-analysis-workload.db");
        let mut args = vec![
            "measure".into(),
            "--accept-failures".into(),
            "--spec".into(),
            path_arg(&self.spec),
            "--workload".into(),
            workload.to_string(),
            "--store".into(),
            path_arg(&store),
            "--sample".into(),
            "distance:4".into(),
            "--json".into(),
        ];
        args.extend(self.repetition_args());
        let _: (MeasureReport, Value) = self.knobs_json(&args)?;
        let csv = self.work.join("native-analysis-workload.csv");
        let native = self.export_workload(&store, None, Some(workload), &csv)?;
        let medians: Vec<f64> = native.rows.iter().map(|(_, v)| *v).collect();
        if let Some(native) = stats::mean(&medians).filter(|m| *m > 0.0)
            && runs > 0.0
        {
            row.detail("native_analysis_workload_seconds", native);
            row.detail("taint_run_seconds", seconds / runs);
            row.detail("taint_slowdown", seconds / runs / native);
        }
        Ok(())
    }

    fn splat(&mut self, row: &mut Row, step: &Step, delayed: bool) -> Result<()> {
        let (mut args, store, model) = self.white_box_args("splat", step);
        if delayed {
            args.push("--delayed".into());
        }
        let (r, raw): (SplatReport, Value) = self.knobs_json(&args)?;
        let model = r.model_path.clone().unwrap_or(model);
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.paths.len() as f64);
        row.total_configurations = Some(r.total_configurations);
        // SPLat measures the program as the spec runs it: the store's unnamed variant.
        self.white_box_numbers(row, &model, &store, None, &step.name, None)?;
        row.detail("exploration_seconds", r.exploration_seconds);
        row.analysis_seconds = Some(r.exploration_seconds);
        row.detail("analysis", "taint runs of the exploration");
        row.detail("complete", r.complete);
        row.detail("reached", &r.reached);
        row.detail("unreached", &r.unreached);
        row.detail("report", raw);
        Ok(())
    }

    fn family(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (args, store, model) = self.white_box_args("family", step);
        let (r, raw): (FamilyReport, Value) = self.knobs_json(&args)?;
        let model = r.model_path.clone().unwrap_or(model);
        let variant = r
            .variant
            .clone()
            .filter(|v| !v.is_empty())
            .context("`knobs family --json` reported no variant")?;
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.configurations.len() as f64);
        row.total_configurations = Some(r.total_configurations);
        self.white_box_numbers(row, &model, &store, Some(&variant), &step.name, None)?;
        row.detail("variant", &variant);
        row.detail("mapped_functions", r.features.len());
        row.detail("unmapped_options", &r.unmapped_options);
        row.detail("unseen_decisions", r.unseen.len());
        row.detail("instrumented_functions", r.instrumented_functions);
        row.detail("report", raw);
        Ok(())
    }

    /// A black-box baseline (`SAMPLE/LEARNER`): for each seed, learn from the sample of
    /// the measured configurations and evaluate on the ground truth's others.
    fn blackbox(&mut self, row: &mut Row, run: &str) -> Result<()> {
        let (sample, learner) = split_run(run).context("a black-box run is SAMPLE/LEARNER")?;
        let learner = learner.to_string();
        row.detail("learner", &learner);
        row.detail("sample", sample);
        let sample = match self.sample_to_measure(sample) {
            Ok(sample) => sample,
            Err(why) => {
                row.status = Status::NotApplicable;
                row.reason = Some(why);
                return Ok(());
            }
        };
        row.detail("measured_sample", &sample);
        // The samples are measured in a session of their own, as every other approach's
        // configurations are: learning from the ground truth's own runs would spare the
        // black-box models the drift between sessions that every other model carries.
        let store = self.work.join("blackbox.db");
        row.detail("store", path_arg(&store));
        let truth_csv = self.truth()?.csv.clone();
        let stem = file_stem(run);
        let mut learned = Vec::new();
        for seed in self.seeds() {
            self.measure_sample(&store, &sample, Some(seed))?;
            let model = self.work.join(format!("{stem}-{seed}.model.json"));
            let t0 = Instant::now();
            let (_, learned_report): (serde::de::IgnoredAny, Value) = self.knobs_json(&[
                "learn".into(),
                path_arg(&store),
                "--learner".into(),
                learner.clone(),
                "--sample".into(),
                sample.clone(),
                "--seed".into(),
                seed.to_string(),
                "-o".into(),
                path_arg(&model),
                "--json".into(),
            ])?;
            let learn_seconds = t0.elapsed().as_secs_f64();
            let e = self.evaluate_both(&model, &truth_csv)?;
            learned.push((seed, model, e, learned_report, learn_seconds));
        }
        // What each model was trained on, from its provenance, and their Σ values.
        let export = self.work.join(format!("{stem}-store.csv"));
        let measured = self.export(&store, None, &export)?;
        let by = measured.by_configuration();
        let mut per_seed = Vec::new();
        let (mut mapes, mut alls, mut counts, mut seconds, mut learning) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut models = Vec::new();
        for (seed, model, e, learned_report, learn_seconds) in learned {
            let (mape, n) = e.unmeasured.unwrap_or(e.all);
            let training = training_configurations(&model, &measured)?;
            let secs: f64 = training.iter().filter_map(|k| by.get(k)).sum();
            per_seed.push(serde_json::json!({
                "seed": seed,
                "configurations": training.len(),
                "measurement_seconds": secs,
                "learning_seconds": learn_seconds,
                "mape_percent": mape,
                "mape_configurations": n,
                "mape_all_percent": e.all.0,
                "learned": learned_report,
            }));
            mapes.push(mape);
            alls.push(e.all.0);
            counts.push(training.len() as f64);
            seconds.push(secs);
            learning.push(learn_seconds);
            models.push(model);
        }
        row.configurations = stats::mean(&counts);
        row.total_configurations = None;
        row.measurement_seconds = stats::mean(&seconds).filter(|_| measured.is_seconds());
        row.mape_percent = stats::mean(&mapes);
        row.mape_all_percent = stats::mean(&alls);
        row.analysis_seconds = stats::mean(&learning);
        row.detail("analysis", "learning (`knobs learn`, wall time)");
        row.detail("mape_sd", stats::sample_sd(&mapes));
        row.detail("seeds", per_seed);
        self.model_numbers(row, &models)
    }

    /// The sample a black-box run measures: `random:as:STEP` becomes `random:N` with the
    /// configurations STEP measured in this run; an error says why the run does not apply
    /// (the step did not run, or a random sample of that size would be the whole space).
    fn sample_to_measure(&self, sample: &str) -> Result<String, String> {
        let total = self.truth.as_ref().and_then(|t| t.total);
        let (n, sample) = match sample.strip_prefix(RANDOM_AS) {
            Some(step) => {
                let Some(&c) = self.measured.get(step) else {
                    return Err(format!(
                        "`{step}` did not measure anything earlier in this run"
                    ));
                };
                let n = c.round().max(1.0) as u64;
                (Some(n), format!("random:{n}"))
            }
            None => (random_size(sample), sample.to_string()),
        };
        match (n, total) {
            (Some(n), Some(total)) if n as f64 >= total => Err(format!(
                "{n} random configurations need a space of more than {} valid ones",
                rows::number(total)
            )),
            _ => Ok(sample),
        }
    }

    /// The ground truth's sample measured again into a store of its own, at this point of
    /// the run: its error against the ground truth is the drift between two measurement
    /// sessions of the same native program, the floor under every approach's error. It is
    /// no model, so it takes no part in the comparison.
    fn repeat(&mut self, row: &mut Row) -> Result<()> {
        let (report, _, again) = self.measure_ground_truth_sample("repeat")?;
        row.detail("noise", self.noise(&again.store)?);
        let again = again.data;
        let ratios = data::ratios(&again, &self.truth()?.data);
        if ratios.is_empty() {
            bail!("the repeated measurement shares no configuration with the ground truth");
        }
        let errors: Vec<f64> = ratios.iter().map(|r| (r - 1.0).abs() * 100.0).collect();
        row.configurations = Some(again.rows.len() as f64);
        row.total_configurations = self.truth()?.total;
        row.measurement_seconds = again.seconds();
        row.mape_all_percent = stats::mean(&errors);
        row.detail("mape_all_configurations", errors.len());
        row.detail("median_ape_percent", stats::median(&errors));
        row.detail(
            "over_ground_truth_geometric_mean",
            stats::geometric_mean(&ratios),
        );
        row.detail("runs", report.campaign().runs);
        row.detail("metric", &again.metric);
        Ok(())
    }

    /// A step run `again`: its model's predictions against those of the `first` run's model,
    /// configuration by configuration — the drift the approach's own measurement carries
    /// from one session to the next (the ground truth's is *brute force again*).
    fn against_first_run(&mut self, row: &mut Row, first: &str) -> Result<()> {
        let (Some(again), Some(before)) = (
            self.predictions.get(&row.approach),
            self.predictions.get(first),
        ) else {
            bail!("`{first}` has no model to compare with (run it in the same run)");
        };
        let errors: Vec<f64> = again
            .iter()
            .zip(before)
            .map(|(a, b)| ((a - b) / b).abs() * 100.0)
            .collect();
        row.detail("again_of", first);
        row.detail("mape_against_first_run_percent", stats::mean(&errors));
        Ok(())
    }

    /// The models' shape (terms, regions, trees; a mean over several) and their absolute
    /// percentage error on every ground-truth configuration (a mean over several models),
    /// kept for the comparison.
    fn model_numbers(&mut self, row: &mut Row, models: &[PathBuf]) -> Result<()> {
        let configurations = self.work.join(CONFIGURATIONS_CSV);
        let actual: Vec<f64> = self.truth()?.data.rows.iter().map(|(_, v)| *v).collect();
        let mut shapes = Vec::new();
        let mut sum = vec![0.0; actual.len()];
        let mut predictions = vec![0.0; actual.len()];
        for model in models {
            shapes.push(ModelShape::read(model)?);
            let out =
                self.knobs(&["predict".into(), path_arg(model), path_arg(&configurations)])?;
            let predicted = data::predictions(&String::from_utf8_lossy(&out))
                .context("reading `knobs predict`'s output")?;
            if predicted.len() != actual.len() {
                bail!(
                    "`knobs predict` gave {} predictions for {} configurations",
                    predicted.len(),
                    actual.len()
                );
            }
            for ((s, p), a) in sum.iter_mut().zip(&predicted).zip(&actual) {
                *s += ((p - a) / a).abs() * 100.0;
            }
            for (mean, p) in predictions.iter_mut().zip(&predicted) {
                *mean += p / models.len() as f64;
            }
        }
        self.predictions.insert(row.approach.clone(), predictions);
        let n = models.len().max(1) as f64;
        let mean = |f: fn(&ModelShape) -> f64| shapes.iter().map(f).sum::<f64>() / n;
        row.terms = Some(mean(|s| s.terms));
        row.regions = Some(mean(|s| s.regions));
        row.detail("trees", mean(|s| s.trees));
        self.errors.push((
            row.approach.clone(),
            sum.into_iter().map(|s| s / n).collect(),
        ));
        Ok(())
    }
}

/// The ground truth's configurations alone (no performance column), for `knobs predict`.
const CONFIGURATIONS_CSV: &str = "ground-truth-configurations.csv";

/// `random:N`'s N.
fn random_size(sample: &str) -> Option<u64> {
    sample.strip_prefix("random:")?.parse().ok()
}

/// A step name as part of a file name.
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// How big a model is: global terms, code regions with local models, trees.
struct ModelShape {
    terms: f64,
    regions: f64,
    trees: f64,
}

impl ModelShape {
    fn read(model: &Path) -> Result<ModelShape> {
        let text = std::fs::read_to_string(model)
            .with_context(|| format!("reading {}", model.display()))?;
        let v: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not JSON", model.display()))?;
        let count = |k: &str| v.get(k).and_then(Value::as_array).map_or(0, Vec::len) as f64;
        Ok(ModelShape {
            terms: count("terms"),
            regions: count("regions"),
            trees: count("trees"),
        })
    }
}

/// The configurations a learned model was trained on (its provenance's `training`), as
/// keys of `data` ([`data::key`]).
pub fn training_configurations(model: &Path, data: &Data) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(model).with_context(|| format!("reading {}", model.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", model.display()))?;
    let training = v
        .get("provenance")
        .and_then(|p| p.get("training"))
        .with_context(|| format!("{}: no provenance.training", model.display()))?;
    let columns: Vec<String> = training
        .get("columns")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let rows = training
        .get("rows")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for r in rows {
        let values: Vec<f64> = r
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let named: HashMap<String, f64> = columns.iter().cloned().zip(values).collect();
        let ordered = data.ordered(&named).with_context(|| {
            format!(
                "{}: a training configuration lacks options of the data",
                model.display()
            )
        })?;
        out.push(data::key(&ordered));
    }
    Ok(out)
}

/// A model's error against the ground truth: on the configurations it was not built from
/// (with how many), and on all of them.
struct Evaluation {
    unmeasured: Option<(f64, Option<u64>)>,
    all: (f64, Option<u64>),
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

    #[test]
    fn training_configurations_are_keyed_like_the_data() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.json");
        std::fs::write(
            &model,
            r#"{"provenance": {"training": {"columns": ["B", "A"], "rows": [[1, 0], [0, 1]]}}}"#,
        )
        .unwrap();
        let data = Data::parse("A,B,wall_s\n0,1,2.0\n1,0,3.0\n1,1,4.0\n").unwrap();
        let keys = training_configurations(&model, &data).unwrap();
        let by = data.by_configuration();
        assert_eq!(keys.iter().map(|k| by[k]).sum::<f64>(), 5.0);
    }
}
