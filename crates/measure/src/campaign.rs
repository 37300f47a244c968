//! A measurement campaign: runs a list of configurations in rounds (each round every
//! configuration that needs runs once, in a fresh random order, with a reference
//! configuration), storing every run as it finishes and counting what the store already
//! holds, so an interrupted campaign resumes where it stopped.

use std::path::{Path, PathBuf};

use space::Configuration;

use rand::{RngCore, SeedableRng, seq::SliceRandom};
use rand_chacha::ChaCha8Rng;

use crate::Error;
use crate::instructions::{self, Counter};
use crate::runner::{self, Outcome, RunResult};
use crate::slurm::{self, SlurmBackend, Submission, TaskWork, Waiting, WorkItem};
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

/// The region times a run wrote to `file`, read with `read`; none for a failed run. A
/// successful run whose file `read` rejects (or that wrote none: the instrumentation did not
/// work) becomes a failed run saying why.
pub(crate) fn read_regions(
    read: &ReadRegions,
    result: &mut RunResult,
    file: &Path,
) -> Vec<RegionMeasurement> {
    if !result.outcome.is_ok() {
        return Vec::new();
    }
    read(file).unwrap_or_else(|why| {
        result.outcome = Outcome::SpawnFailed(format!("no region times: {why}"));
        Vec::new()
    })
}

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

    /// Measures each configuration with the build of its commit, all pairs as one campaign:
    /// each round brings every pair that needs a run one run further (on Slurm: one job array
    /// per round, whatever the commits), and each run is stored under its own commit, as
    /// [`Campaign::at_commit`] stores it, so either reads the other's runs back. The
    /// campaign's own `program` and `commit` are not used. There is no reference
    /// configuration: the pairs are of several builds, and a campaign of one configuration
    /// at a commit has none either.
    pub fn run_at_commits(
        &self,
        store: &Store,
        pairs: &[AtCommit],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<CampaignReport, Error> {
        let started = std::time::Instant::now();
        let spec = self.spec;
        let Some(first) = pairs.first() else {
            return Ok(CampaignReport::default());
        };
        let mut programs: std::collections::BTreeMap<&Path, Option<PathBuf>> =
            std::collections::BTreeMap::new();
        for pair in pairs {
            if !programs.contains_key(pair.program.as_path()) {
                programs.insert(&pair.program, Some(checked_program(&pair.program)?));
            }
        }
        spec.check_cwd()?;
        spec.prepare_workload(self.workload)?;
        store.register_spec(spec)?;
        let mut commits: Vec<&str> = pairs.iter().map(|p| p.commit.as_str()).collect();
        commits.sort_unstable();
        commits.dedup();
        let selections: Vec<Selection> = commits
            .iter()
            .map(|c| self.selection().at_commit(c))
            .collect();
        let (resumed_runs, resumed_notes) = self.resume(store, &selections, on_event)?;
        let inputs = spec.workload_digest(self.workload);
        let mut report = CampaignReport::default();
        let mut existing = std::collections::BTreeMap::new();
        for (commit, selection) in commits.iter().zip(&selections) {
            let runs = store.runs_by_configuration(selection)?;
            report
                .notes
                .extend(self.changed_inputs_note(&runs, &inputs));
            existing.insert(*commit, runs);
        }
        report.notes.dedup();
        report.notes.extend(resumed_notes);
        let mut items: Vec<Item> = Vec::new();
        for pair in pairs {
            let text = spec.space.format_configuration(&pair.configuration);
            let key = self.key(&pair.commit, text, &inputs);
            if items.iter().any(|i| i.key == key) {
                continue;
            }
            let runs = existing[pair.commit.as_str()]
                .get(&key.configuration)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let (samples, failure) = self.standing(runs);
            items.push(Item {
                invocation: self
                    .invocation(&programs[pair.program.as_path()], &pair.configuration)?,
                key,
                samples,
                failure,
                new_runs: 0,
                listed: true,
                done: false,
            });
        }
        report.configurations = items.len();
        self.measure_items(
            store,
            Planned {
                items,
                reference: None,
                selection: self.selection().at_commit(&first.commit),
                report,
                resumed_runs,
                started,
            },
            on_event,
        )
    }

    /// The rounds of a campaign whose items are planned: warm-ups, then rounds until every
    /// listed item has its runs (or failed) or the budget is spent.
    fn measure_items(
        &self,
        store: &Store,
        planned: Planned,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<CampaignReport, Error> {
        let Planned {
            mut items,
            reference,
            selection,
            mut report,
            resumed_runs,
            started,
        } = planned;
        // One scratch directory per campaign: campaigns of one process may run at once.
        static CAMPAIGNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let scratch = std::env::temp_dir().join(format!(
            "knobs-campaign-{}-{}",
            std::process::id(),
            CAMPAIGNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&scratch).map_err(|cause| Error::Io {
            path: scratch.display().to_string(),
            cause,
        })?;
        let mut rounds = Rounds {
            metric: self.settings.metric,
            reference,
            rng: ChaCha8Rng::seed_from_u64(self.settings.seed.unwrap_or_else(fresh_seed)),
            owner: format!(
                "{}:{}:{}",
                store::host_name(),
                std::process::id(),
                store::now()
            ),
            counter: match self.settings.metric {
                Metric::Instructions if self.regions.is_some() => {
                    return Err(Error::Invalid(
                        "metric `instructions` counts whole runs; the white-box approaches time \
                         regions (use wall or cpu)"
                            .into(),
                    ));
                }
                Metric::Instructions => Some(Counter::detect()?),
                _ => None,
            },
            ran: 0,
            stored: resumed_runs,
            warmed: false,
        };
        // Configurations with nothing left to do are reported at once.
        for item in items.iter_mut().filter(|i| i.listed) {
            if item.failure.is_some() || !self.needs_more(&item.values(rounds.metric)) {
                item.done = true;
                report.reused += 1;
                self.finish(item, rounds.metric, &mut report, on_event);
            }
        }
        self.plan(&items, &rounds, on_event);
        // On Slurm each task warms up its own share on its node (`slurm::work`).
        let local_warmups = match self.backend {
            Backend::Local => self.settings.warmup,
            Backend::Slurm(_) => 0,
        };
        for _ in 0..local_warmups {
            self.warm_up(
                store,
                &mut items,
                &mut rounds,
                &scratch,
                &mut report,
                on_event,
            )?;
        }
        loop {
            let pending: Vec<usize> = (0..items.len())
                .filter(|&i| items[i].listed && !items[i].done)
                .collect();
            if pending.is_empty() {
                break;
            }
            if let Some(budget) = self
                .settings
                .budget
                .filter(|b| started.elapsed().as_secs_f64() > *b)
            {
                report.notes.push(format!(
                    "the budget of {budget:.0} s is spent: {} configurations have fewer runs \
                     than asked for (a rerun adds them)",
                    pending.len()
                ));
                break;
            }
            match &self.backend {
                Backend::Local => self.round(store, &mut items, &mut rounds, &scratch, on_event)?,
                Backend::Slurm(backend) => {
                    let notes =
                        self.slurm_round(store, backend, &mut items, &mut rounds, on_event)?;
                    report.notes.extend(notes);
                }
            }
            for item in items.iter_mut().filter(|i| i.listed && !i.done) {
                if item.failure.is_some() || !self.needs_more(&item.values(rounds.metric)) {
                    item.done = true;
                    self.finish(item, rounds.metric, &mut report, on_event);
                }
            }
            self.plan(&items, &rounds, on_event);
        }
        on_event(Event::Planned { runs: rounds.ran });
        report.runs = rounds.stored;
        report.metric = match rounds.counter {
            Some(counter) => counter.describe().to_string(),
            None => store.resolve_metric(&selection, self.settings.metric)?.1,
        };
        let _ = std::fs::remove_dir_all(&scratch);
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    fn invocation(
        &self,
        program: &Option<PathBuf>,
        config: &Configuration,
    ) -> Result<Invocation, Error> {
        match program {
            Some(program) => self
                .spec
                .invocation_of(program.clone(), config, self.workload),
            None => self.spec.invocation(config, self.workload),
        }
    }

    /// A note when stored runs measured the workload's files as they were before a change.
    fn changed_inputs_note(
        &self,
        existing: &std::collections::BTreeMap<String, Vec<StoredRun>>,
        inputs: &Option<String>,
    ) -> Vec<String> {
        let changed = existing
            .values()
            .flatten()
            .filter(|r| r.inputs.is_some() && r.inputs != *inputs)
            .count();
        (changed > 0)
            .then(|| {
                format!(
                    "{changed} stored runs measured workload `{}` when its files were \
                     different (their digest differs from the files now); a new spec name or \
                     store keeps them apart",
                    self.workload.name
                )
            })
            .into_iter()
            .collect()
    }

    /// The reference configuration's index among `items` (added, unlisted, when it is not
    /// one of them): the spec's, the one the store's earlier rounds used, or one of the
    /// campaign's configurations drawn with a fixed seed, so that every session of the same
    /// sample has the same reference. `None` when the spec says `none` or for fewer than
    /// three configurations.
    fn reference(
        &self,
        store: &Store,
        selection: &Selection,
        items: &mut Vec<Item>,
        program: &Option<PathBuf>,
        inputs: &Option<String>,
    ) -> Result<Option<usize>, Error> {
        let chosen = match self.settings.reference.as_deref() {
            Some("none") => return Ok(None),
            _ if items.len() < 3 => return Ok(None),
            Some(text) => Some(text.to_string()),
            None => store.reference(selection)?,
        };
        let text = match chosen {
            Some(text) => self
                .spec
                .space
                .format_configuration(&self.spec.space.parse_configuration(&text)?),
            None => {
                // Drawn from the campaign's own configurations, in an order that does not
                // depend on the sample's: the same for every session of the same sample.
                let mut texts: Vec<&str> = items
                    .iter()
                    .filter(|i| i.failure.is_none())
                    .map(|i| i.key.configuration.as_str())
                    .collect();
                if texts.len() < 3 {
                    return Ok(None);
                }
                texts.sort_unstable();
                let mut rng = ChaCha8Rng::seed_from_u64(REFERENCE_SEED);
                let drawn = texts[rand::Rng::gen_range(&mut rng, 0..texts.len())];
                return Ok(items.iter().position(|i| i.key.configuration == drawn));
            }
        };
        if let Some(i) = items.iter().position(|i| i.key.configuration == text) {
            return Ok(Some(i));
        }
        let config = self.spec.space.parse_configuration(&text)?;
        let runs = store.runs_of(selection, &text)?;
        let (samples, failure) = self.standing(&runs);
        items.push(Item {
            invocation: self.invocation(program, &config)?,
            key: self.key(&self.commit, text, inputs),
            samples,
            failure,
            new_runs: 0,
            listed: false,
            done: false,
        });
        Ok(Some(items.len() - 1))
    }

    /// Tells the progress display how many runs the campaign makes, as far as known now.
    fn plan(&self, items: &[Item], rounds: &Rounds, on_event: &mut dyn FnMut(Event)) {
        let missing: Vec<u64> = items
            .iter()
            .filter(|i| i.listed && !i.done)
            .map(|i| {
                (self.settings.repetitions as usize)
                    .saturating_sub(i.samples.len())
                    .max(1) as u64
            })
            .collect();
        let reference_runs = match rounds.reference {
            Some(r) if items[r].done || !items[r].listed => {
                missing.iter().copied().max().unwrap_or(0)
            }
            _ => 0,
        };
        on_event(Event::Planned {
            runs: rounds.ran + missing.iter().sum::<u64>() + reference_runs,
        });
    }

    /// The items of the next round in a fresh random order, the round's seed, and the claims
    /// taken (held until the round ends). A round brings the configurations with the fewest
    /// runs one run further (so a resumed campaign first completes the round it was killed
    /// in), and always has the reference. Configurations another process is measuring wait
    /// for a later round, with what that process stored by then.
    fn order(
        &self,
        store: &Store,
        items: &mut [Item],
        rounds: &mut Rounds,
    ) -> Result<(Vec<usize>, u64), Error> {
        let lease = store::now()
            + match self.backend {
                Backend::Local => {
                    self.spec
                        .run()
                        .map_or(600.0, |r| r.timeout.unwrap_or(600.0))
                        + 60.0
                }
                Backend::Slurm(_) => slurm::CLAIM_SECONDS,
            };
        let level = items
            .iter()
            .filter(|i| i.listed && !i.done && i.failure.is_none())
            .map(|i| i.samples.len())
            .min();
        let mut order = Vec::new();
        for (i, item) in items.iter_mut().enumerate() {
            let wanted = (item.listed && !item.done && Some(item.samples.len()) == level)
                || rounds.reference == Some(i);
            if !wanted || item.failure.is_some() {
                continue;
            }
            if store.claim(&item.key, &rounds.owner, lease)? {
                let runs = store.runs_of(&self.selection_of(&item.key), &item.key.configuration)?;
                (item.samples, item.failure) = self.standing(&runs);
                let needed =
                    rounds.reference == Some(i) || self.needs_more(&item.values(rounds.metric));
                if item.failure.is_none() && needed {
                    order.push(i);
                } else {
                    store.release(&item.key, &rounds.owner)?;
                }
            }
        }
        let seed = rounds.rng.next_u64();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        Ok((order, seed))
    }

    /// One measured round.
    fn round(
        &self,
        store: &Store,
        items: &mut [Item],
        rounds: &mut Rounds,
        scratch: &Path,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), Error> {
        let (order, seed) = self.order(store, items, rounds)?;
        let claimed = order.clone();
        if order.is_empty() {
            // Everything left is another process's: wait for it.
            std::thread::sleep(std::time::Duration::from_millis(100));
            return Ok(());
        }
        let reference = rounds
            .reference
            .map(|r| items[r].key.configuration.as_str());
        let round = store.begin_round(seed, reference)?;
        for i in order {
            let item = &mut items[i];
            on_event(Event::Starting {
                configuration: &item.key.configuration,
            });
            let at = store::now();
            let (result, regions) = self.run_once(&item.invocation, scratch, rounds.counter);
            store.record_in_round(&item.key, at, &result, &regions, Some(round))?;
            rounds.ran += 1;
            rounds.stored += 1;
            item.new_runs += 1;
            on_event(Event::Ran {
                configuration: &item.key.configuration,
                result: &result,
                warmup: false,
            });
            if result.outcome.is_ok() {
                item.samples.push(Sample::of_run(&result));
            } else {
                item.failure = Some(Failure::of(&result));
            }
        }
        for &i in &claimed {
            store.release(&items[i].key, &rounds.owner)?;
        }
        Ok(())
    }

    /// A round whose runs are not stored (warm caches, settled CPU frequency); a failing
    /// run is stored, so that its configuration is not tried again.
    fn warm_up(
        &self,
        store: &Store,
        items: &mut [Item],
        rounds: &mut Rounds,
        scratch: &Path,
        report: &mut CampaignReport,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), Error> {
        let (order, _) = self.order(store, items, rounds)?;
        let claimed = order.clone();
        for i in order {
            let item = &mut items[i];
            on_event(Event::Starting {
                configuration: &item.key.configuration,
            });
            let (result, _) = self.run_once(&item.invocation, scratch, rounds.counter);
            rounds.ran += 1;
            on_event(Event::Ran {
                configuration: &item.key.configuration,
                result: &result,
                warmup: true,
            });
            if !result.outcome.is_ok() {
                store.record(&item.key, store::now(), &result, &[])?;
                rounds.stored += 1;
                item.failure = Some(Failure::of(&result));
                item.new_runs += 1;
            }
        }
        for &i in &claimed {
            store.release(&items[i].key, &rounds.owner)?;
        }
        // Configurations that failed in the warm-up are done.
        for item in items.iter_mut().filter(|i| i.listed && !i.done) {
            if item.failure.is_some() {
                item.done = true;
                self.finish(item, rounds.metric, report, on_event);
            }
        }
        Ok(())
    }

    /// Reports a configuration that needs no more runs.
    fn finish(
        &self,
        item: &Item,
        metric: Metric,
        report: &mut CampaignReport,
        on_event: &mut dyn FnMut(Event),
    ) {
        let text = &item.key.configuration;
        let status = match &item.failure {
            Some(f) => {
                report.failed.push((text.clone(), f.why.clone()));
                ConfigurationStatus::Failed {
                    why: f.why.clone(),
                    stderr_tail: f.stderr_tail.clone(),
                }
            }
            None => {
                let status = self.measured(item.values(metric), item.new_runs);
                if let ConfigurationStatus::Measured {
                    summary,
                    noisy: true,
                    ..
                } = &status
                {
                    report.noisy.push((text.clone(), summary.cv));
                }
                status
            }
        };
        on_event(Event::Done {
            configuration: text,
            status: &status,
        });
    }

    /// Where a configuration stands given its stored runs: its successful runs, and its
    /// latest failure (unless failures are retried).
    fn standing(&self, runs: &[StoredRun]) -> (Vec<Sample>, Option<Failure>) {
        let samples = runs
            .iter()
            .filter(|r| r.is_ok())
            .map(Sample::of_stored)
            .collect();
        let failure = runs
            .iter()
            .rev()
            .find(|r| !r.is_ok())
            .filter(|_| !self.retry_failed)
            .map(|r| Failure {
                why: r.detail.clone().unwrap_or_else(|| r.status.clone()),
                stderr_tail: r.stderr_tail.clone().unwrap_or_default(),
            });
        (samples, failure)
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

/// The Slurm backend's side of a campaign: rounds as job arrays, and finding them again.
impl Campaign<'_> {
    /// Waits for the submissions a killed knobs left in the spool for this campaign and
    /// stores their runs, then frees the configurations they held: the runs stored, and
    /// notes about tasks that did not finish.
    fn resume(
        &self,
        store: &Store,
        selections: &[Selection],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(u64, Vec<String>), Error> {
        let mut stored = 0;
        let mut notes = Vec::new();
        let Backend::Slurm(backend) = &self.backend else {
            return Ok((stored, notes));
        };
        // A submission of several commits belongs to the selection of each.
        let mut found: Vec<(PathBuf, Submission)> = Vec::new();
        for selection in selections {
            for (dir, submission) in backend.unfinished(&store_path(store), selection)? {
                if !found.iter().any(|(d, _)| *d == dir) {
                    found.push((dir, submission));
                }
            }
        }
        found.sort_by_key(|(_, s)| s.round);
        for (dir, submission) in found {
            if owner_alive(&submission.owner) == Some(true) {
                // Another knobs here waits for it and stores its runs.
                continue;
            }
            on_event(Event::Note(&format!(
                "found round {} again (Slurm job {}, {}); waiting for it",
                submission.round,
                submission.job.as_deref().unwrap_or("not known yet"),
                dir.display()
            )));
            let (runs, more) = collect(store, &dir, &submission, self.regions.as_ref(), on_event)?;
            stored += runs;
            notes.extend(more);
            store.release_owner(&submission.owner)?;
        }
        // A knobs killed between claiming a round and recording its submission left claims
        // of a day's lease and nothing to find again.
        for owner in store.claim_owners()? {
            if owner_alive(&owner) == Some(false) {
                store.release_owner(&owner)?;
            }
        }
        Ok((stored, notes))
    }

    /// One round as a Slurm job array: planned and claimed as locally, split into the tasks'
    /// shares (each with the reference), submitted, waited for and stored.
    fn slurm_round(
        &self,
        store: &Store,
        backend: &SlurmBackend,
        items: &mut [Item],
        rounds: &mut Rounds,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Vec<String>, Error> {
        let (order, seed) = self.order(store, items, rounds)?;
        if order.is_empty() {
            // Everything left is another process's: wait for it.
            std::thread::sleep(std::time::Duration::from_millis(100));
            return Ok(Vec::new());
        }
        let reference = rounds.reference.map(|r| items[r].key.configuration.clone());
        let round = store.begin_round(seed, reference.as_deref())?;
        let tasks = backend.settings.tasks.unwrap_or(1);
        let warmup = if rounds.warmed {
            0
        } else {
            self.settings.warmup
        };
        let work: Vec<TaskWork> = slurm::shares(&order, rounds.reference, tasks, seed)
            .iter()
            .map(|share| TaskWork {
                warmup,
                regions_env: self.regions.as_ref().map(|r| r.env.clone()),
                counter: rounds.counter,
                runs: share
                    .iter()
                    .map(|&i| {
                        WorkItem::of(
                            &items[i].key.configuration,
                            &items[i].key.commit,
                            &items[i].invocation,
                        )
                    })
                    .collect(),
            })
            .collect();
        rounds.warmed = true;
        let key = &items[order[0]].key;
        let system: String = (key.system.chars())
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let mut commits: Vec<String> = order.iter().map(|&i| items[i].key.commit.clone()).collect();
        commits.sort_unstable();
        commits.dedup();
        if commits.len() == 1 {
            commits.clear();
        }
        let submission = Submission {
            name: format!("knobs-{system}-r{round}-{}", std::process::id()),
            store: store_path(store),
            system: key.system.clone(),
            spec_hash: key.spec_hash.clone(),
            workload: key.workload.clone(),
            variant: key.variant.clone(),
            commit: key.commit.clone(),
            commits,
            inputs: key.inputs.clone(),
            round,
            owner: rounds.owner.clone(),
            tasks: 0,
            job: None,
        };
        let runs: usize = work.iter().map(|w| w.runs.len()).sum();
        let (dir, submission) = match backend.submit(submission, &work) {
            Ok(submitted) => submitted,
            Err(e) => {
                store.release_owner(&rounds.owner)?;
                return Err(e);
            }
        };
        on_event(Event::Note(&format!(
            "round {round}: submitted Slurm job {} ({} tasks, {runs} runs; spool {})",
            submission.job.as_deref().unwrap_or("?"),
            submission.tasks,
            dir.display()
        )));
        let (stored, notes) = collect(store, &dir, &submission, self.regions.as_ref(), on_event)?;
        if stored == 0 && !notes.is_empty() {
            return Err(Error::Invalid(format!(
                "Slurm job {} measured nothing: {}",
                submission.job.as_deref().unwrap_or("?"),
                notes[0]
            )));
        }
        rounds.ran += stored;
        rounds.stored += stored;
        for &i in &order {
            let runs = store.runs_of(
                &self.selection_of(&items[i].key),
                &items[i].key.configuration,
            )?;
            let item = &mut items[i];
            let now: Vec<&StoredRun> = runs.iter().filter(|r| r.round == Some(round)).collect();
            item.new_runs += now.len() as u32;
            (item.samples, item.failure) = self.standing(&runs);
            if let Some(failed) = now.iter().find(|r| !r.is_ok()) {
                item.failure.get_or_insert(Failure {
                    why: failed
                        .detail
                        .clone()
                        .unwrap_or_else(|| failed.status.clone()),
                    stderr_tail: failed.stderr_tail.clone().unwrap_or_default(),
                });
            }
            store.release(&item.key, &rounds.owner)?;
        }
        Ok(notes)
    }
}

/// Whether the process that owns claims (`host:pid:start`) is alive; `None` when it ran on
/// another host.
fn owner_alive(owner: &str) -> Option<bool> {
    let here = format!("{}:", store::host_name());
    let pid: i32 = owner.strip_prefix(&here)?.split(':').next()?.parse().ok()?;
    // SAFETY: signal 0 only asks whether the process exists.
    Some(unsafe { libc::kill(pid, 0) } == 0)
}

/// The store's file, absolute, as submissions record it.
fn store_path(store: &Store) -> PathBuf {
    store
        .path()
        .canonicalize()
        .unwrap_or_else(|_| store.path().to_path_buf())
}

/// Waits for a submission and stores its runs (each one a `Ran` event) with the region times
/// they wrote, read with `regions`: how many, and a note per task that ended without
/// finishing its share.
fn collect(
    store: &Store,
    dir: &Path,
    submission: &Submission,
    regions: Option<&RegionOutput>,
    on_event: &mut dyn FnMut(Event),
) -> Result<(u64, Vec<String>), Error> {
    let job = submission.job.as_deref().unwrap_or(&submission.name);
    let read = regions.map(|r| &*r.read);
    let collected = slurm::collect(store, dir, submission, read, &mut |waiting| match waiting {
        Waiting::Stored(run) => on_event(Event::Ran {
            configuration: &run.configuration,
            result: &run.result,
            warmup: run.warmup,
        }),
        Waiting::Queue(state) => on_event(Event::Note(&format!("Slurm job {job}: {state}"))),
    })?;
    let notes = collected
        .unfinished_tasks
        .iter()
        .map(|(task, log)| {
            format!(
                "task {task} of Slurm job {} ended without finishing its share (failed, \
                 cancelled or out of time); what it did not measure is pending again (its log: \
                 {})",
                submission.job.as_deref().unwrap_or("?"),
                log.display()
            )
        })
        .collect();
    Ok((
        collected.stored.values().map(|&n| u64::from(n)).sum(),
        notes,
    ))
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
    system: f64,
    cpu_wait: f64,
    max_rss_kib: f64,
    instructions: Option<u64>,
}

impl Sample {
    fn of_run(r: &RunResult) -> Sample {
        Sample {
            wall: r.wall,
            user: r.user,
            system: r.system,
            cpu_wait: r.cpu_wait,
            max_rss_kib: r.max_rss_kib as f64,
            instructions: r.instructions,
        }
    }

    fn of_stored(r: &StoredRun) -> Sample {
        Sample {
            wall: r.wall,
            user: r.user,
            system: r.system_time,
            cpu_wait: r.cpu_wait.unwrap_or(0.0),
            max_rss_kib: r.max_rss_kib as f64,
            instructions: r.instructions.map(|n| n as u64),
        }
    }

    /// User + system time over wall time.
    fn cpu_share(&self) -> f64 {
        (self.user + self.system) / self.wall.max(1e-9)
    }

    /// `store::auto_metric` of a configuration whose deciding run this is.
    fn auto_metric(&self) -> Metric {
        store::auto_metric(self.user + self.system, self.cpu_wait, self.wall)
    }

    fn metric(&self, metric: Metric) -> f64 {
        metric.of_run(
            self.wall,
            self.user,
            self.system,
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
    /// Counts each run's instructions (`metric = "instructions"`).
    counter: Option<Counter>,
    /// Runs made, warm-ups included.
    ran: u64,
    /// Runs stored.
    stored: u64,
    /// A round was submitted to Slurm (its tasks made the warm-up runs).
    warmed: bool,
}

/// One run under the instruction counter, its count read into the result (a count that
/// cannot be read fails the run).
/// When valgrind cannot read the program's debug information, the run is counted again on a
/// copy without it (made once per campaign, in `scratch`).
pub(crate) fn counted(invocation: &Invocation, scratch: &Path, counter: Counter) -> RunResult {
    let program = invocation.cwd.join(&invocation.program);
    let stripped = instructions::stripped_path(&program, scratch);
    let result = if stripped.is_file() {
        counted_once(&with_program(invocation, stripped), scratch, counter)
    } else {
        counted_once(invocation, scratch, counter)
    };
    let done = result.outcome.is_ok()
        || !instructions::debuginfo_unreadable(&result.stderr_tail)
        || !program.is_file();
    if done {
        return result;
    }
    match instructions::stripped_copy(&program, scratch) {
        Ok(copy) => counted_once(&with_program(invocation, copy), scratch, counter),
        Err(why) => RunResult {
            stderr_tail: format!("{}\n{why}", result.stderr_tail),
            ..result
        },
    }
}

fn with_program(invocation: &Invocation, program: PathBuf) -> Invocation {
    Invocation {
        program,
        ..invocation.clone()
    }
}

fn counted_once(invocation: &Invocation, scratch: &Path, counter: Counter) -> RunResult {
    let out = scratch.join("instructions");
    let _ = std::fs::remove_dir_all(&out);
    if let Err(e) = std::fs::create_dir_all(&out) {
        return RunResult::failed_to_start(format!("{}: {e}", out.display()));
    }
    let mut result = runner::run(&counter.wrap(invocation, &out));
    if result.outcome.is_ok() {
        match counter.read(&out) {
            Ok(n) => result.instructions = Some(n),
            Err(why) => {
                result.outcome = Outcome::SpawnFailed(format!("no instruction count: {why}"))
            }
        }
    }
    if !result.outcome.is_ok()
        && let Some(complaint) = instructions::counter_complaint(&out)
    {
        result.stderr_tail = format!("{}{complaint}", result.stderr_tail);
    }
    result
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

    /// Pairs of several commits' builds in one campaign: each run under its own commit,
    /// where a campaign at that commit reads it back; the same pairs again run nothing.
    #[test]
    fn a_campaign_across_commits_stores_each_run_under_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec(dir.path(), "repetitions = 2");
        let workload = spec.workload(None).unwrap();
        let configs: Vec<Configuration> = space::ValidConfigurations::new(&spec.space)
            .unwrap()
            .iter()
            .collect();
        let sleep = std::path::PathBuf::from("/bin/sleep");
        let (c, d) = ("c".repeat(40), "d".repeat(40));
        let pairs = vec![
            AtCommit {
                commit: c.clone(),
                program: sleep.clone(),
                configuration: configs[0].clone(),
            },
            AtCommit {
                commit: d.clone(),
                program: sleep.clone(),
                configuration: configs[0].clone(),
            },
            AtCommit {
                commit: d.clone(),
                program: sleep.clone(),
                configuration: configs[1].clone(),
            },
        ];
        let campaign = Campaign::new(&spec, workload);
        let report = campaign
            .run_at_commits(&store, &pairs, &mut |_| {})
            .unwrap();
        assert_eq!((report.configurations, report.runs), (3, 6));
        let at = |commit: &str| Campaign::at_commit(&spec, workload, commit, sleep.clone());
        let runs_at = |commit: &str| store.runs(&at(commit).selection()).unwrap();
        assert_eq!(runs_at(&c).len(), 2);
        assert_eq!(runs_at(&d).len(), 4);
        assert!(runs_at(&c).iter().all(|r| r.commit == c));
        // A campaign at `d` has both configurations already.
        let resumed = at(&d).run(&store, &configs, &mut |_| {}).unwrap();
        assert_eq!((resumed.runs, resumed.reused), (0, 2));
        let again = campaign
            .run_at_commits(&store, &pairs, &mut |_| {})
            .unwrap();
        assert_eq!((again.runs, again.reused), (0, 3));
        // A program that is not there is one line, before anything runs.
        let missing = AtCommit {
            program: dir.path().join("nothing"),
            ..pairs[0].clone()
        };
        let e = campaign
            .run_at_commits(&store, &[missing], &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist") && !e.contains('\n'), "{e}");
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
