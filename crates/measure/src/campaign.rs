//! A measurement campaign: runs a list of configurations with repetitions, storing every
//! run as it finishes and skipping what the store already holds, so an interrupted
//! campaign resumes where it stopped.

use std::path::{Path, PathBuf};

use space::Configuration;

use crate::Error;
use crate::runner::{self, Outcome, RunResult};
use crate::spec::{Invocation, MeasureSettings, SystemSpec, Workload};
use crate::stats::Summary;
use crate::store::{self, MeasurementKey, RegionMeasurement, Selection, Store};

/// What happens during a campaign, for progress display.
pub enum Event<'a> {
    /// The number of runs still to do, as far as known now (adaptive mode may add more:
    /// then another `Planned` arrives with the new total).
    Planned { runs: u64 },
    /// A configuration is about to be run.
    Starting { configuration: &'a str },
    /// A run finished (warm-up runs included; they are not stored).
    Ran {
        configuration: &'a str,
        result: &'a RunResult,
        warmup: bool,
    },
    /// A configuration has all its runs (or failed).
    Done {
        configuration: &'a str,
        status: &'a ConfigurationStatus,
    },
}

/// Where a configuration stands after the campaign.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigurationStatus {
    /// Measured (now or earlier); `noisy` when its coefficient of variation exceeds the
    /// spec's `max_cv`.
    Measured {
        summary: Summary,
        noisy: bool,
        new_runs: u32,
    },
    /// A run failed (crash, non-zero exit, timeout); the configuration is not repeated.
    Failed { why: String, stderr_tail: String },
}

/// What a campaign did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CampaignReport {
    pub configurations: usize,
    /// Configurations that needed no new runs.
    pub reused: usize,
    /// Runs made (stored) in this campaign.
    pub runs: u64,
    pub failed: Vec<(String, String)>,
    /// Configurations flagged as noisy, with their coefficient of variation.
    pub noisy: Vec<(String, f64)>,
    pub seconds: f64,
    /// What the user should know about the stored runs (changed workload files).
    pub notes: Vec<String>,
}

impl CampaignReport {
    /// The campaign in one line; `max_cv` is the noise threshold it flagged by.
    pub fn summary(&self, max_cv: f64) -> String {
        format!(
            "{} of {} configurations measured ({} already in the store), {} new runs in {:.1} s; {} failed, {} noisy (cv > {:.0} %)",
            self.configurations - self.failed.len(),
            self.configurations,
            self.reused,
            self.runs,
            self.seconds,
            self.failed.len(),
            self.noisy.len(),
            max_cv * 100.0
        )
    }
}

/// Options of one campaign.
#[derive(Clone, Debug)]
pub struct Campaign<'a> {
    pub spec: &'a SystemSpec,
    pub workload: &'a Workload,
    pub settings: MeasureSettings,
    /// Measure configurations whose earlier runs failed again (default: skip them).
    pub retry_failed: bool,
    /// `""` for the program as the spec runs it; a name for a derived build (whose runs are
    /// kept apart in the store).
    pub variant: String,
    /// Runs this program instead of the spec's (an instrumented build), with the same
    /// arguments.
    pub program: Option<PathBuf>,
    /// Collects per-region times that the program writes to a file.
    pub regions: Option<RegionOutput>,
    /// The `[history]` commit (full id) whose build `program` is; its runs are stored and
    /// resumed under it. `""`: the program as the spec runs it.
    pub commit: String,
}

/// How an instrumented program reports region times: it writes them to the file named by
/// the environment variable `env`, and `read` parses that file (an error fails the run with
/// its message).
#[derive(Clone)]
pub struct RegionOutput {
    pub env: String,
    pub read: std::sync::Arc<ReadRegions>,
}

impl std::fmt::Debug for RegionOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionOutput")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

/// Reads a region-times file.
pub type ReadRegions = dyn Fn(&Path) -> Result<Vec<RegionMeasurement>, String> + Send + Sync;

impl<'a> Campaign<'a> {
    /// A campaign with the spec's settings, of the program as the spec runs it.
    pub fn new(spec: &'a SystemSpec, workload: &'a Workload) -> Self {
        Campaign {
            spec,
            workload,
            settings: spec.measure.clone(),
            retry_failed: false,
            variant: String::new(),
            program: None,
            regions: None,
            commit: String::new(),
        }
    }

    /// A campaign of the build of `commit` (a full id): runs `program` with the spec's
    /// arguments and stores the runs under the commit.
    pub fn at_commit(
        spec: &'a SystemSpec,
        workload: &'a Workload,
        commit: &str,
        program: PathBuf,
    ) -> Self {
        Campaign {
            commit: commit.to_string(),
            program: Some(program),
            ..Campaign::new(spec, workload)
        }
    }

    /// The store's selection of this campaign's runs.
    pub fn selection(&self) -> Selection {
        Selection {
            variant: self.variant.clone(),
            ..Selection::of(self.spec, &self.workload.name)
        }
        .at_commit(&self.commit)
    }

    /// Runs once; with region output, reads the region times the program wrote (a
    /// successful run that wrote none is a failure: the instrumentation did not work).
    fn run_once(
        &self,
        invocation: &Invocation,
        scratch: &Path,
    ) -> (RunResult, Vec<RegionMeasurement>) {
        let Some(output) = &self.regions else {
            return (runner::run(invocation), Vec::new());
        };
        let file = scratch.join("regions.txt");
        let _ = std::fs::remove_file(&file);
        let mut invocation = invocation.clone();
        invocation
            .env
            .push((output.env.clone(), file.display().to_string()));
        let mut result = runner::run(&invocation);
        if !result.outcome.is_ok() {
            return (result, Vec::new());
        }
        match (output.read)(&file) {
            Ok(regions) => (result, regions),
            Err(why) => {
                result.outcome = Outcome::SpawnFailed(format!("no region times: {why}"));
                (result, Vec::new())
            }
        }
    }
    fn needs_more(&self, values: &[f64]) -> bool {
        let s = &self.settings;
        if values.len() < s.repetitions as usize {
            return true;
        }
        s.adaptive
            && values.len() < s.max_repetitions as usize
            && !Summary::of(values).is_some_and(|sum| sum.ci_within(s.ci))
    }

    /// The store's key for a configuration's runs; `inputs` is the workload's digest.
    fn key(&self, configuration: String, inputs: &Option<String>) -> MeasurementKey {
        MeasurementKey {
            inputs: inputs.clone(),
            system: self.spec.name.clone(),
            variant: self.variant.clone(),
            spec_hash: self.spec.hash.clone(),
            workload: self.workload.name.clone(),
            configuration,
            commit: self.commit.clone(),
        }
    }

    /// Measures the configurations (in order), storing each run as it finishes.
    pub fn run(
        &self,
        store: &Store,
        configurations: &[Configuration],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<CampaignReport, Error> {
        let started = std::time::Instant::now();
        let spec = self.spec;
        let metric = self.settings.metric;
        // Runs start in the spec's working directory: a relative program path must not be
        // read from there.
        let program = match &self.program {
            Some(p) => Some(std::path::absolute(p).map_err(|cause| Error::Io {
                path: p.display().to_string(),
                cause,
            })?),
            None => None,
        };
        match &program {
            Some(program) if !program.is_file() => {
                return Err(Error::Invalid(format!(
                    "program `{}` does not exist",
                    program.display()
                )));
            }
            Some(_) => spec.check_cwd()?,
            None => {
                spec.check_runnable()?;
            }
        }
        spec.prepare_workload(self.workload)?;
        store.register_spec(spec)?;
        let scratch = std::env::temp_dir().join(format!("knobs-campaign-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).map_err(|cause| Error::Io {
            path: scratch.display().to_string(),
            cause,
        })?;
        let mut report_notes = Vec::new();
        let existing = store.runs_by_configuration(&self.selection())?;
        // Runs of a workload whose files have changed since are still used, but said so.
        let inputs = spec.workload_digest(self.workload);
        let changed = existing
            .values()
            .flatten()
            .filter(|r| r.inputs.is_some() && r.inputs != inputs)
            .count();
        if changed > 0 {
            report_notes.push(format!(
                "{changed} stored runs measured workload `{}` when its files were different \
                 (their digest differs from the files now); a new spec name or store keeps them apart",
                self.workload.name
            ));
        }
        // What each configuration already has: successful values, and whether it failed.
        let mut todo = Vec::new();
        let mut planned = 0u64;
        for config in configurations {
            let text = spec.space.format_configuration(config);
            let runs = existing.get(&text).map(Vec::as_slice).unwrap_or(&[]);
            let (values, failure) = self.standing(runs);
            if failure.is_none() && self.needs_more(&values) {
                let missing = (self.settings.repetitions as usize)
                    .saturating_sub(values.len())
                    .max(1);
                planned += missing as u64 + self.settings.warmup as u64;
            }
            todo.push((config, text, values, failure));
        }
        on_event(Event::Planned { runs: planned });
        let mut report = CampaignReport {
            configurations: configurations.len(),
            notes: report_notes,
            ..Default::default()
        };
        // Each configuration is claimed in the store before it is measured, so processes
        // measuring into one store share the plan; one another process holds comes back
        // later, with what that process stored by then.
        let owner = format!(
            "{}:{}:{}",
            store::host_name(),
            std::process::id(),
            store::now()
        );
        let lease =
            || store::now() + spec.run().map_or(600.0, |r| r.timeout.unwrap_or(600.0)) + 60.0;
        let mut queue: std::collections::VecDeque<_> = todo.into();
        let mut deferred_in_a_row = 0usize;
        while let Some((config, text, mut values, mut failure)) = queue.pop_front() {
            if failure.is_none() && self.needs_more(&values) {
                let key = self.key(text.clone(), &inputs);
                if !store.claim(&key, &owner, lease())? {
                    queue.push_back((config, text, values, failure));
                    deferred_in_a_row += 1;
                    if deferred_in_a_row > queue.len() {
                        // Everything left is another process's: wait for it.
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        deferred_in_a_row = 0;
                    }
                    continue;
                }
                // Another process may have measured it since the plan was made.
                (values, failure) = self.stored(store, &text)?;
            }
            deferred_in_a_row = 0;
            let status = if let Some(failed) = failure {
                report.reused += 1;
                ConfigurationStatus::Failed {
                    why: failed.detail.unwrap_or_else(|| failed.status.clone()),
                    stderr_tail: failed.stderr_tail.unwrap_or_default(),
                }
            } else if !self.needs_more(&values) {
                report.reused += 1;
                self.measured(values, 0)
            } else {
                on_event(Event::Starting {
                    configuration: &text,
                });
                let invocation = match &program {
                    Some(program) => spec.invocation_of(program.clone(), config, self.workload)?,
                    None => spec.invocation(config, self.workload)?,
                };
                let key = self.key(text.clone(), &inputs);
                let before = values.len();
                let mut failed = None;
                for _ in 0..self.settings.warmup {
                    let (result, _) = self.run_once(&invocation, &scratch);
                    on_event(Event::Ran {
                        configuration: &text,
                        result: &result,
                        warmup: true,
                    });
                    if !result.outcome.is_ok() {
                        // A failing warm-up is a failing configuration: store it so a
                        // rerun does not try again.
                        store.record(&key, store::now(), &result, &[])?;
                        report.runs += 1;
                        failed = Some(result);
                        break;
                    }
                }
                let initial_target = self.settings.repetitions as usize;
                while failed.is_none() && self.needs_more(&values) {
                    let at = store::now();
                    let (result, regions) = self.run_once(&invocation, &scratch);
                    store.record(&key, at, &result, &regions)?;
                    store.claim(&key, &owner, lease())?;
                    report.runs += 1;
                    on_event(Event::Ran {
                        configuration: &text,
                        result: &result,
                        warmup: false,
                    });
                    if !result.outcome.is_ok() {
                        failed = Some(result);
                        break;
                    }
                    values.push(result.metric(metric));
                    if values.len() >= initial_target && self.needs_more(&values) {
                        // Adaptive mode asks for one more run than planned.
                        planned += 1;
                        on_event(Event::Planned { runs: planned });
                    }
                }
                match failed {
                    Some(r) => ConfigurationStatus::Failed {
                        why: r.outcome.describe(),
                        stderr_tail: r.stderr_tail,
                    },
                    None => self.measured(values.clone(), (values.len() - before) as u32),
                }
            };
            match &status {
                ConfigurationStatus::Failed { why, .. } => {
                    report.failed.push((text.clone(), why.clone()))
                }
                ConfigurationStatus::Measured {
                    summary,
                    noisy: true,
                    ..
                } => report.noisy.push((text.clone(), summary.cv)),
                _ => {}
            }
            store.release(&self.key(text.clone(), &inputs), &owner)?;
            on_event(Event::Done {
                configuration: &text,
                status: &status,
            });
        }
        let _ = std::fs::remove_dir_all(&scratch);
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// A configuration's successful values in the store now, and its failure (unless
    /// failures are retried).
    fn stored(
        &self,
        store: &Store,
        text: &str,
    ) -> Result<(Vec<f64>, Option<crate::store::StoredRun>), Error> {
        Ok(self.standing(&store.runs_of(&self.selection(), text)?))
    }

    /// Where a configuration stands given its stored runs: the metric of its successful
    /// runs, and its latest failure (unless failures are retried).
    fn standing(
        &self,
        runs: &[crate::store::StoredRun],
    ) -> (Vec<f64>, Option<crate::store::StoredRun>) {
        let values = runs
            .iter()
            .filter(|r| r.is_ok())
            .map(|r| r.metric(self.settings.metric))
            .collect();
        let failure = runs
            .iter()
            .rev()
            .find(|r| !r.is_ok())
            .filter(|_| !self.retry_failed)
            .cloned();
        (values, failure)
    }

    fn measured(&self, values: Vec<f64>, new_runs: u32) -> ConfigurationStatus {
        let summary = Summary::of(&values).expect("measured configurations have values");
        let noisy = summary.n > 1 && summary.cv > self.settings.max_cv;
        ConfigurationStatus::Measured {
            summary,
            noisy,
            new_runs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spec(dir: &Path, measure: &str) -> SystemSpec {
        let text = format!(
            "name = \"s\"\n[run]\nprogram = \"sleep\"\nargs = [\"0.01\", \"{{options}}\"]\n[measure]\n{measure}\n[[workload]]\nname = \"w\"\n[[option]]\nname = \"a\"\non = [\"0.01\"]\n"
        );
        SystemSpec::parse(&text, &dir.join("knobs.toml")).unwrap()
    }

    fn runs_per_configuration(spec: &SystemSpec, store: &Store) -> Vec<usize> {
        let by = store.runs_by_configuration(&Selection::default()).unwrap();
        let mut counts: Vec<usize> = by.values().map(Vec::len).collect();
        counts.sort();
        assert_eq!(
            by.len(),
            spec.space.len() + 1,
            "both configurations measured"
        );
        counts
    }

    fn measure_all(spec: &SystemSpec, store: &Store) -> CampaignReport {
        let valid = space::ValidConfigurations::new(&spec.space).unwrap();
        let configs: Vec<Configuration> = valid.iter().collect();
        let mut planned = 0;
        let mut ran = 0;
        let report = Campaign::new(spec, spec.workload(None).unwrap())
            .run(store, &configs, &mut |e| match e {
                Event::Planned { runs } => planned = runs,
                Event::Ran { .. } => ran += 1,
                _ => {}
            })
            .unwrap();
        assert_eq!(
            planned, ran,
            "the progress total ends at the number of runs made"
        );
        report
    }

    #[test]
    fn adaptive_mode_stops_at_the_interval_or_the_maximum() {
        let dir = tempfile::tempdir().unwrap();
        // An interval this narrow is never reached: every configuration gets the maximum.
        let strict = spec(
            dir.path(),
            "repetitions = 2\nadaptive = true\nci = 1e-9\nmax_repetitions = 5",
        );
        let store = Store::open(&dir.path().join("strict.db")).unwrap();
        let report = measure_all(&strict, &store);
        assert_eq!(report.runs, 10);
        assert_eq!(runs_per_configuration(&strict, &store), [5, 5]);
        // One this wide is met at once: the minimum.
        let loose = spec(
            dir.path(),
            "repetitions = 3\nadaptive = true\nci = 10\nmax_repetitions = 9",
        );
        let store = Store::open(&dir.path().join("loose.db")).unwrap();
        measure_all(&loose, &store);
        assert_eq!(runs_per_configuration(&loose, &store), [3, 3]);
    }

    #[test]
    fn a_campaign_at_a_commit_stores_and_resumes_under_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec(dir.path(), "repetitions = 2");
        let workload = spec.workload(None).unwrap();
        let configs: Vec<Configuration> = space::ValidConfigurations::new(&spec.space)
            .unwrap()
            .iter()
            .collect();
        let sleep = std::path::PathBuf::from("/bin/sleep");
        let commit = "c".repeat(40);
        let at = Campaign::at_commit(&spec, workload, &commit, sleep.clone());
        let report = at.run(&store, &configs, &mut |_| {}).unwrap();
        assert_eq!(report.runs, 4);
        let again = at.run(&store, &configs, &mut |_| {}).unwrap();
        assert_eq!(
            (again.runs, again.reused),
            (0, 2),
            "resumed under the commit"
        );
        // The program without history has none of them, and another commit neither.
        assert!(store.runs(&Selection::default()).unwrap().is_empty());
        let other = Campaign::at_commit(&spec, workload, &"d".repeat(40), sleep);
        assert_eq!(other.run(&store, &configs, &mut |_| {}).unwrap().runs, 4);
        let runs = store.runs(&at.selection()).unwrap();
        assert_eq!(runs.len(), 4);
        assert!(runs.iter().all(|r| r.commit == commit));
    }

    #[test]
    fn warmups_are_run_but_not_stored_and_more_repetitions_extend() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let two = spec(dir.path(), "repetitions = 2\nwarmup = 1");
        let report = measure_all(&two, &store);
        assert_eq!(report.runs, 4);
        assert_eq!(runs_per_configuration(&two, &store), [2, 2]);
        // Asking for more repetitions later adds only the missing ones.
        let three = spec(dir.path(), "repetitions = 3");
        assert_eq!(two.hash, three.hash);
        let report = measure_all(&three, &store);
        assert_eq!((report.runs, report.reused), (2, 0));
        assert_eq!(runs_per_configuration(&three, &store), [3, 3]);
    }
}
