//! A measurement campaign: runs a list of configurations in rounds (each round every
//! configuration that needs runs once, in a fresh random order, with a reference
//! configuration), storing every run as it finishes and counting what the store already
//! holds, so an interrupted campaign resumes where it stopped.

use std::path::{Path, PathBuf};

use space::Configuration;

use rand_chacha::ChaCha8Rng;

use crate::Error;
use crate::instructions::{Counter, counted};
use crate::region_output::read_regions;
pub use crate::region_output::{ReadRegions, RegionOutput};
use crate::runner::{self, RunResult};
use crate::slurm::SlurmBackend;
use crate::spec::{Invocation, MeasureSettings, Metric, SystemSpec, Workload};
use crate::stats::Summary;
use crate::store::{self, MeasurementKey, RegionMeasurement, Selection, Store, StoredRun};

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
    /// Something the user should know as it happens (a job submitted, a job found again).
    Note(&'a str),
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
    /// What the runs are read by, and why (`auto`'s decision, or the instruction counter).
    pub metric: String,
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
    /// The program counts its own instructions and its region file holds counts (the
    /// region timers' counting build): with `metric = "instructions"` a run's instructions
    /// are what its regions add up to, not a counter's around the process.
    pub counted_regions: bool,
    /// The `[history]` commit (full id) whose build `program` is; its runs are stored and
    /// resumed under it. `""`: the program as the spec runs it.
    pub commit: String,
    /// Where the runs are made: here, or as Slurm jobs.
    pub backend: Backend,
}

/// A configuration to measure with the build of a `[history]` commit: one pair of
/// [`Campaign::run_at_commits`].
#[derive(Clone, Debug)]
pub struct AtCommit {
    /// The commit (full id) the runs are stored under.
    pub commit: String,
    /// Its build.
    pub program: PathBuf,
    pub configuration: Configuration,
    /// The configuration's build options did not build: it is stored as failed with this,
    /// and not run.
    pub failed_build: Option<FailedBuild>,
}

/// A build of a configuration's build options that failed.
#[derive(Clone, Debug)]
pub struct FailedBuild {
    /// Which step failed and how, and the values built.
    pub why: String,
    /// The last lines of the build log.
    pub log_tail: String,
    /// The whole build log.
    pub log: PathBuf,
}

impl FailedBuild {
    /// The failed run it is stored as.
    fn as_run(&self) -> RunResult {
        RunResult {
            stderr_tail: self.log_tail.clone(),
            ..RunResult::not_run(runner::Outcome::BuildFailed(format!(
                "{}; log: {}",
                self.why,
                self.log.display()
            )))
        }
    }
}

/// Where a campaign's runs are made.
#[derive(Clone, Debug, Default)]
pub enum Backend {
    /// On this machine, one after another.
    #[default]
    Local,
    /// As Slurm job arrays, a round at a time ([`crate::slurm`]).
    Slurm(SlurmBackend),
}

mod commits;
mod on_slurm;
mod resume;
mod rounds;

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
            counted_regions: false,
            commit: String::new(),
            backend: Backend::Local,
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

    /// Runs once; with region output, the region times the program wrote ([`read_regions`]).
    fn run_once(
        &self,
        invocation: &Invocation,
        scratch: &Path,
        counter: Option<Counter>,
    ) -> (RunResult, Vec<RegionMeasurement>) {
        if let Some(counter) = counter {
            return (counted(invocation, scratch, counter), Vec::new());
        }
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
        let regions = read_regions(&*output.read, &mut result, &file);
        if self.counted_regions {
            crate::region_output::count_from_regions(&mut result, &regions);
        }
        (result, regions)
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

    /// The store's key for a configuration's runs at `commit`; `inputs` is the workload's
    /// digest.
    fn key(&self, commit: &str, configuration: String, inputs: &Option<String>) -> MeasurementKey {
        MeasurementKey {
            inputs: inputs.clone(),
            system: self.spec.name.clone(),
            variant: self.variant.clone(),
            spec_hash: self.spec.hash.clone(),
            workload: self.workload.name.clone(),
            configuration,
            commit: commit.to_string(),
        }
    }

    /// The store's selection of the runs of `key`'s commit.
    fn selection_of(&self, key: &MeasurementKey) -> Selection {
        self.selection().at_commit(&key.commit)
    }

    /// The program to run (absolute: runs start in the spec's working directory), checked,
    /// with the workload prepared and the spec registered in the store.
    fn prepare(&self, store: &Store) -> Result<Option<PathBuf>, Error> {
        let program = self.program.as_deref().map(checked_program).transpose()?;
        match &program {
            Some(_) => self.spec.check_cwd()?,
            None => {
                self.spec.check_runnable()?;
            }
        }
        self.spec.prepare_workload(self.workload)?;
        store.register_spec(self.spec)?;
        Ok(program)
    }

    /// Measures the configurations in rounds, storing each run as it finishes: every round
    /// runs each configuration that needs more runs once, in a fresh random order (seeded,
    /// the seed stored with the round), together with the reference configuration; the
    /// spec's `warmup` rounds before them are not stored. Rounds go on until every
    /// configuration has its runs (`repetitions`, or in adaptive mode its interval) or the
    /// budget is spent. What the store holds counts, so a killed campaign resumes.
    pub fn run(
        &self,
        store: &Store,
        configurations: &[Configuration],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<CampaignReport, Error> {
        let started = std::time::Instant::now();
        let spec = self.spec;
        let program = self.prepare(store)?;
        let selection = self.selection();
        let (resumed_runs, resumed_notes) =
            self.resume(store, std::slice::from_ref(&selection), on_event)?;
        let existing = store.runs_by_configuration(&selection)?;
        let inputs = spec.workload_digest(self.workload);
        let mut report = CampaignReport {
            configurations: configurations.len(),
            notes: self.changed_inputs_note(&existing, &inputs),
            ..Default::default()
        };
        report.notes.extend(resumed_notes);
        let mut items = Vec::new();
        for config in configurations {
            let text = spec.space.format_configuration(config);
            let runs = existing.get(&text).map(Vec::as_slice).unwrap_or(&[]);
            let (samples, failure) = self.standing(runs);
            items.push(Item {
                invocation: self.invocation(&program, config)?,
                key: self.key(&self.commit, text, &inputs),
                samples,
                failure,
                failed_now: false,
                new_runs: 0,
                listed: true,
                done: false,
            });
        }
        let reference = self.reference(store, &selection, &mut items, &program, &inputs)?;
        self.measure_items(
            store,
            Planned {
                items,
                reference,
                selection,
                report,
                resumed_runs,
                started,
            },
            on_event,
        )
    }
}

/// A campaign's items, ready for their rounds.
struct Planned {
    items: Vec<Item>,
    reference: Option<usize>,
    /// Whose stored runs say what `auto` resolves to, for the report.
    selection: Selection,
    report: CampaignReport,
    /// Runs of submissions found again and stored before the first round.
    resumed_runs: u64,
    started: std::time::Instant,
}

/// `program`, absolute (runs start in the spec's working directory), when it is a file.
fn checked_program(program: &Path) -> Result<PathBuf, Error> {
    let absolute = std::path::absolute(program).map_err(|cause| Error::Io {
        path: program.display().to_string(),
        cause,
    })?;
    if !absolute.is_file() {
        return Err(Error::Invalid(format!(
            "program `{}` does not exist",
            absolute.display()
        )));
    }
    Ok(absolute)
}

/// A configuration of the campaign and what it has.
struct Item {
    invocation: Invocation,
    key: MeasurementKey,
    samples: Vec<Sample>,
    failure: Option<Failure>,
    /// Its build failed in this campaign: stored now, so not among those already in the store.
    failed_now: bool,
    new_runs: u32,
    /// One of the campaign's configurations (not only the reference).
    listed: bool,
    /// Reported: it has its runs, or failed.
    done: bool,
}

impl Item {
    /// The metric of its runs (`auto`: what its deciding run says, as the store does).
    fn values(&self, metric: Metric) -> Vec<f64> {
        let deciding = self
            .samples
            .iter()
            .max_by(|a, b| a.cpu_share().total_cmp(&b.cpu_share()));
        let metric = match (metric, deciding) {
            (Metric::Auto, Some(run)) => run.auto_metric(),
            (m, _) => m,
        };
        self.samples.iter().map(|s| s.metric(metric)).collect()
    }
}

/// What one successful run measured.
#[derive(Clone, Copy)]
struct Sample {
    wall: f64,
    user: f64,
    system_cpu_s: f64,
    cpu_wait: f64,
    max_rss_kib: f64,
    instructions: Option<u64>,
}

impl Sample {
    fn of_run(r: &RunResult) -> Sample {
        Sample {
            wall: r.wall,
            user: r.user,
            system_cpu_s: r.system_cpu_s,
            cpu_wait: r.cpu_wait,
            max_rss_kib: r.max_rss_kib as f64,
            instructions: r.instructions,
        }
    }

    fn of_stored(r: &StoredRun) -> Sample {
        Sample {
            wall: r.wall,
            user: r.user,
            system_cpu_s: r.system_time,
            cpu_wait: r.cpu_wait.unwrap_or(0.0),
            max_rss_kib: r.max_rss_kib as f64,
            instructions: r.instructions.map(|n| n as u64),
        }
    }

    /// User + system time over wall time.
    fn cpu_share(&self) -> f64 {
        (self.user + self.system_cpu_s) / self.wall.max(1e-9)
    }

    /// `store::auto_metric` of a configuration whose deciding run this is.
    fn auto_metric(&self) -> Metric {
        store::auto_metric(self.user + self.system_cpu_s, self.cpu_wait, self.wall)
    }

    fn metric(&self, metric: Metric) -> f64 {
        metric.of_run(
            self.wall,
            self.user,
            self.system_cpu_s,
            self.max_rss_kib,
            self.instructions,
        )
    }
}

/// How a configuration failed.
struct Failure {
    why: String,
    stderr_tail: String,
}

impl Failure {
    fn of(r: &RunResult) -> Failure {
        Failure {
            why: r.outcome.describe(),
            stderr_tail: r.stderr_tail.clone(),
        }
    }
}

/// The state of a campaign's rounds.
struct Rounds {
    /// What the runs are judged by (`auto`: per configuration, by its deciding run).
    metric: Metric,
    /// The item measured in every round.
    reference: Option<usize>,
    /// Draws each round's seed.
    rng: ChaCha8Rng,
    /// This process, as it claims configurations in the store.
    owner: String,
    /// The owner of the claims this process last said it waits for.
    waiting_for: Option<String>,
    /// Counts each run's instructions (`metric = "instructions"`).
    counter: Option<Counter>,
    /// Runs made, warm-ups included.
    ran: u64,
    /// Runs stored.
    stored: u64,
    /// A round was submitted to Slurm (its tasks made the warm-up runs).
    warmed: bool,
}

/// The seed that draws a spec's reference configuration when it names none.
const REFERENCE_SEED: u64 = 0x6b6e6f6273;

/// A seed for a campaign whose spec sets none.
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    pub(super) fn spec(dir: &Path, measure: &str) -> SystemSpec {
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

    /// Per round (by its id), the configurations it ran, in the order they ran.
    fn rounds_of(store: &Store) -> std::collections::BTreeMap<i64, Vec<String>> {
        let mut by = std::collections::BTreeMap::<i64, Vec<String>>::new();
        for r in store.runs(&Selection::default()).unwrap() {
            by.entry(r.round.expect("measured in a round"))
                .or_default()
                .push(r.configuration);
        }
        by
    }

    #[test]
    fn rounds_run_every_configuration_once_with_the_reference_and_resume() {
        let dir = tempfile::tempdir().unwrap();
        let text = "name = \"s\"\n[run]\nprogram = \"sleep\"\nargs = [\"0.001\", \"{options}\"]\n\
                    [measure]\nrepetitions = 2\nseed = 7\n[[workload]]\nname = \"w\"\n\
                    [[option]]\nname = \"a\"\non = [\"0.002\"]\n[[option]]\nname = \"b\"\non = [\"0.004\"]\n";
        let spec = SystemSpec::parse(text, &dir.path().join("knobs.toml")).unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let report = measure_all(&spec, &store);
        assert_eq!(report.runs, 8);
        let rounds = rounds_of(&store);
        assert_eq!(rounds.len(), 2, "{rounds:?}");
        for configs in rounds.values() {
            let mut sorted = configs.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                4,
                "each configuration once a round: {configs:?}"
            );
        }
        // The reference: one of the four, drawn with a fixed seed, so every session of the
        // sample has it.
        let reference = store.reference(&Selection::default()).unwrap().unwrap();
        let again = tempfile::tempdir().unwrap();
        let other = Store::open(&again.path().join("r.db")).unwrap();
        measure_all(&spec, &other);
        assert_eq!(
            other.reference(&Selection::default()).unwrap(),
            Some(reference.clone())
        );
        // More repetitions later: the missing round, with the same reference.
        let three = SystemSpec::parse(
            &text.replace("repetitions = 2", "repetitions = 3"),
            &dir.path().join("knobs.toml"),
        )
        .unwrap();
        assert_eq!(measure_all(&three, &store).runs, 4);
        assert_eq!(rounds_of(&store).len(), 3);
        assert_eq!(
            store.reference(&Selection::default()).unwrap(),
            Some(reference.clone())
        );
        // A sample without the reference still measures it in every round.
        let four = SystemSpec::parse(
            &text.replace("repetitions = 2", "repetitions = 4"),
            &dir.path().join("knobs.toml"),
        )
        .unwrap();
        let others: Vec<Configuration> = space::ValidConfigurations::new(&four.space)
            .unwrap()
            .iter()
            .filter(|c| four.space.format_configuration(c) != reference)
            .collect();
        let report = Campaign::new(&four, four.workload(None).unwrap())
            .run(&store, &others, &mut |_| {})
            .unwrap();
        assert_eq!((report.configurations, report.runs), (3, 4));
        let last = rounds_of(&store).into_values().last().unwrap();
        assert!(last.contains(&reference), "{last:?}");
    }

    #[test]
    fn auto_reads_cpu_time_for_a_busy_program_and_wall_time_for_a_sleeping_one() {
        let dir = tempfile::tempdir().unwrap();
        let sleeping = spec(dir.path(), "repetitions = 1");
        let store = Store::open(&dir.path().join("sleep.db")).unwrap();
        measure_all(&sleeping, &store);
        let (metric, why) = store
            .resolve_metric(&Selection::default(), Metric::Auto)
            .unwrap();
        assert_eq!(metric, Metric::Wall, "{why}");
        let busy = SystemSpec::parse(
            "name = \"s\"\n[run]\nprogram = \"sh\"\nargs = [\"-c\", \"i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done\", \"{options}\"]\n\
             [measure]\nrepetitions = 1\n[[workload]]\nname = \"w\"\n[[option]]\nname = \"a\"\non = [\"x\"]\n",
            &dir.path().join("knobs.toml"),
        )
        .unwrap();
        let store = Store::open(&dir.path().join("busy.db")).unwrap();
        measure_all(&busy, &store);
        let (metric, why) = store
            .resolve_metric(&Selection::default(), Metric::Auto)
            .unwrap();
        // A busy loop is on a CPU or waiting for one all its wall time, however loaded the
        // machine: a busier one lengthens the wait, not the time it is off a CPU.
        assert_eq!(metric, Metric::Cpu, "{why}");
        // Each configuration's summary reads what its deciding run says (one run each here).
        for s in store
            .summaries(&Selection::default(), Metric::Auto)
            .unwrap()
        {
            let run = &store
                .runs_of(&Selection::default(), &s.configuration)
                .unwrap()[0];
            assert_eq!(s.summary.unwrap().median, run.metric(run.auto_metric()));
        }
    }

    /// Instructions under valgrind (this machine has no hardware counters) or perf: the same
    /// count every time, whatever the machine's load, and more work counts more.
    #[test]
    fn instructions_are_counted_the_same_in_every_run() {
        let dir = tempfile::tempdir().unwrap();
        let text = "name = \"s\"\n[run]\nprogram = \"sh\"\n\
            args = [\"-c\", \"i=0; while [ $i -lt $0 ]; do i=$((i+1)); done\", \"{options}\"]\n\
            [measure]\nrepetitions = 2\nmetric = \"instructions\"\n[[workload]]\nname = \"w\"\n\
            [[option]]\nname = \"long\"\non = [\"3000\"]\noff = [\"1000\"]\n";
        let counted = SystemSpec::parse(text, &dir.path().join("knobs.toml")).unwrap();
        let timed = SystemSpec::parse(
            &text.replace("metric = \"instructions\"", "metric = \"cpu\""),
            &dir.path().join("knobs.toml"),
        )
        .unwrap();
        assert_ne!(counted.hash, timed.hash, "counted runs are kept apart");
        let overridden = timed.clone().with_metric(Metric::Instructions).unwrap();
        assert_eq!(
            overridden.hash, counted.hash,
            "`--metric` counts as the spec would"
        );
        let reread = SystemSpec::parse(&overridden.text, &dir.path().join("knobs.toml")).unwrap();
        assert_eq!(reread.measure.metric, Metric::Instructions);
        assert_eq!(reread.hash, counted.hash);
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let report = measure_all(&counted, &store);
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        let runs = store.runs(&Selection::default()).unwrap();
        let count = |config: &str| -> Vec<i64> {
            runs.iter()
                .filter(|r| r.configuration == config)
                .map(|r| r.instructions.expect("counted"))
                .collect()
        };
        let (short, long) = (count(""), count("long"));
        assert_eq!(short.len(), 2);
        assert_eq!(short[0], short[1], "{short:?}");
        assert_eq!(long[0], long[1], "{long:?}");
        assert!(long[0] > 2 * short[0], "{long:?} against {short:?}");
    }

    /// The spec `text` (in `dir`) measured while a busy loop holds CPU 0, in a store in `dir`.
    fn measure_beside_a_busy_loop_on_cpu0(text: &str, dir: &Path) -> Store {
        let mut busy = std::process::Command::new("taskset")
            .args(["-c", "0", "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset runs");
        let spec = SystemSpec::parse(text, &dir.join("knobs.toml")).unwrap();
        let store = Store::open(&dir.join("r.db")).unwrap();
        let report = measure_all(&spec, &store);
        busy.kill().unwrap();
        busy.wait().unwrap();
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        store
    }

    /// A CPU-bound program that shares its core with a busy loop (both pinned to CPU 0) is
    /// on a CPU about half its wall time and waits for one the rest: `auto` reads its CPU
    /// time, however busy the machine (more load only lengthens the wait). A program that
    /// sleeps neither runs nor waits for a CPU: wall time.
    #[test]
    fn auto_tells_waiting_for_a_cpu_from_sleeping() {
        let dir = tempfile::tempdir().unwrap();
        let text = "name = \"s\"\n[run]\nprogram = \"taskset\"\n\
            args = [\"-c\", \"0\", \"sh\", \"-c\", \"{options}\"]\n\
            [measure]\nrepetitions = 1\nwarmup = 0\n[[workload]]\nname = \"w\"\n\
            [[option]]\nname = \"sleeps\"\n\
            on = [\"sleep 0.3\"]\n\
            off = [\"i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done\"]\n";
        let store = measure_beside_a_busy_loop_on_cpu0(text, dir.path());
        let deciding = store.deciding_runs(&Selection::default()).unwrap();
        let computing = &deciding[""];
        assert!(
            computing.cpu_wait_share() > 0.2,
            "a loop sharing its core waits for it: {computing:?}"
        );
        assert_eq!(computing.auto_metric(), Metric::Cpu, "{computing:?}");
        let sleeping = &deciding["sleeps"];
        assert_eq!(sleeping.auto_metric(), Metric::Wall, "{sleeping:?}");
        let (metric, why) = store
            .resolve_metric(&Selection::default(), Metric::Auto)
            .unwrap();
        assert_eq!(metric, Metric::Auto, "{why}");
        assert!(
            why.contains("`sleeps`") && why.contains("sleeps or waits"),
            "{why}"
        );
    }

    /// A program whose work runs on a second thread while its main thread waits for it,
    /// sharing its core with a busy loop: the worker's waits for the CPU count (the kernel
    /// keeps them per thread), so `auto` reads its CPU time as it would a one-thread
    /// program's. With two workers (`-p`) on that one core, the threads take turns: on a
    /// CPU about as long as the wall time, but waiting for it twice as long, which is threads
    /// in parallel (wall time), as on a machine with a core for each.
    #[test]
    fn auto_sees_the_waits_of_worker_threads() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("worker.c");
        std::fs::write(
            &source,
            "#include <pthread.h>\n\
             #include <string.h>\n\
             static void *work(void *n) { volatile unsigned long x = 0;\n\
               for (unsigned long i = 0; i < (unsigned long)n; i++) x += i; return 0; }\n\
             int main(int argc, char **argv) { pthread_t t, u;\n\
               int two = argc > 1 && !strcmp(argv[1], \"-p\");\n\
               pthread_create(&t, 0, work, (void *)600000000UL);\n\
               if (two) pthread_create(&u, 0, work, (void *)600000000UL);\n\
               if (two) pthread_join(u, 0);\n\
               return pthread_join(t, 0); }\n",
        )
        .unwrap();
        let built = std::process::Command::new("clang-19")
            .args(["-O1", "-pthread", "-o"])
            .arg(dir.path().join("worker"))
            .arg(&source)
            .output()
            .expect("clang-19 runs");
        assert!(built.status.success(), "{built:?}");
        let text = "name = \"t\"\n[run]\nprogram = \"taskset\"\n\
            args = [\"-c\", \"0\", \"./worker\", \"{options}\"]\n\
            [measure]\nrepetitions = 1\nwarmup = 0\n[[workload]]\nname = \"w\"\n\
            [[option]]\nname = \"parallel\"\non = [\"-p\"]\n";
        let store = measure_beside_a_busy_loop_on_cpu0(text, dir.path());
        let deciding = store.deciding_runs(&Selection::default()).unwrap();
        let one = &deciding[""];
        assert!(
            one.cpu_wait_share() > 0.2,
            "a worker sharing its core waits for it: {one:?}"
        );
        assert_eq!(one.auto_metric(), Metric::Cpu, "{one:?}");
        let two = &deciding["parallel"];
        assert!(two.cpu_demand() > 1.5, "{two:?}");
        assert_eq!(two.auto_metric(), Metric::Wall, "{two:?}");
    }

    /// A program of two translation units built by clang 19 with `-g`, whose DWARF 5
    /// valgrind 3.19 cannot read, is counted (on a copy without debug information) instead of
    /// failing every configuration; the count is the same in every run.
    #[test]
    fn instructions_are_counted_when_valgrind_cannot_read_the_debug_info() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.c"), "int f(int x) { return x * 3; }\n").unwrap();
        std::fs::write(
            dir.path().join("b.c"),
            "#include <stdlib.h>\nint f(int);\n\
             int main(int c, char **v) { long s = 0; int n = c > 1 ? atoi(v[1]) : 10;\n\
             for (int i = 0; i < n; i++) s += f(i); return s == 42; }\n",
        )
        .unwrap();
        let status = std::process::Command::new("clang-19")
            .args(["-O2", "-g", "a.c", "b.c", "-o", "prog"])
            .current_dir(dir.path())
            .status()
            .expect("clang-19 runs");
        assert!(status.success());
        let text = "name = \"p\"\n[run]\nprogram = \"./prog\"\nargs = [\"{options}\"]\n\
            [measure]\nrepetitions = 2\nmetric = \"instructions\"\n[[workload]]\nname = \"w\"\n\
            [[option]]\nname = \"long\"\non = [\"100000\"]\noff = [\"10\"]\n";
        let spec = SystemSpec::parse(text, &dir.path().join("knobs.toml")).unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let report = measure_all(&spec, &store);
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        let runs = store.runs(&Selection::default()).unwrap();
        let count = |config: &str| -> Vec<i64> {
            runs.iter()
                .filter(|r| r.configuration == config)
                .map(|r| r.instructions.expect("counted"))
                .collect()
        };
        let (short, long) = (count(""), count("long"));
        assert_eq!(short.len(), 2);
        assert_eq!(short[0], short[1], "{short:?}");
        assert!(long[0] > short[0] + 100_000, "{long:?} against {short:?}");
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
