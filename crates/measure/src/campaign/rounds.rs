//! Rounds: every configuration that needs runs once per round, in a fresh seeded order,
//! with the reference; warm-ups, claims, and what a configuration's runs say.

use std::path::{Path, PathBuf};

use space::Configuration;

use rand::{RngCore, SeedableRng, seq::SliceRandom};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::Error;
use crate::instructions::Counter;
use crate::slurm::{self};
use crate::spec::{Invocation, Metric};
use crate::stats::Summary;
use crate::store::{self, Selection, Store, StoredRun};

impl Campaign<'_> {
    /// The rounds of a campaign whose items are planned: warm-ups, then rounds until every
    /// listed item has its runs (or failed) or the budget is spent.
    pub(super) fn measure_items(
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
            owner: store::owner_of_this_process(),
            waiting_for: None,
            counter: match self.settings.metric {
                // The counting build counts itself.
                Metric::Instructions if self.counted_regions => None,
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
                report.reused += usize::from(!item.failed_now);
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

    pub(super) fn invocation(
        &self,
        program: &Option<PathBuf>,
        config: &Configuration,
    ) -> Result<Invocation, Error> {
        let mut invocation = match program {
            Some(program) => self
                .spec
                .invocation_of(program.clone(), config, self.workload)?,
            None => self.spec.invocation(config, self.workload)?,
        };
        invocation.steady_env = self.settings.metric == Metric::Instructions;
        Ok(invocation)
    }

    /// A note when stored runs measured the workload's files as they were before a change.
    pub(super) fn changed_inputs_note(
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
    pub(super) fn reference(
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
            failed_now: false,
            new_runs: 0,
            listed: false,
            done: false,
        });
        Ok(Some(items.len() - 1))
    }

    /// Tells the progress display how many runs the campaign makes, as far as known now.
    pub(super) fn plan(&self, items: &[Item], rounds: &Rounds, on_event: &mut dyn FnMut(Event)) {
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
    pub(super) fn order(
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
    pub(super) fn round(
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
            return self.wait_for_others(store, items, rounds, on_event);
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
    pub(super) fn warm_up(
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
    pub(super) fn finish(
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
    pub(super) fn standing(&self, runs: &[StoredRun]) -> (Vec<Sample>, Option<Failure>) {
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

    pub(super) fn measured(&self, values: Vec<f64>, new_runs: u32) -> ConfigurationStatus {
        let summary = Summary::of(&values).expect("measured configurations have values");
        let noisy = summary.n > 1 && summary.cv > self.settings.max_cv;
        ConfigurationStatus::Measured {
            summary,
            noisy,
            new_runs,
        }
    }

    /// Everything left is claimed by another process: frees the claims of processes of this
    /// host that are gone, and otherwise waits a moment for the others, saying (once per
    /// change) what it waits for.
    pub(super) fn wait_for_others(
        &self,
        store: &Store,
        items: &[Item],
        rounds: &mut Rounds,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), Error> {
        if !store.release_dead_owners()?.is_empty() {
            return Ok(());
        }
        let mut held = Vec::new();
        for item in items.iter().filter(|i| i.listed && !i.done) {
            held.extend(store.held_by_other(&item.key, &rounds.owner)?);
        }
        if let Some(first) = held.first() {
            let what = match held.len() {
                1 => first.describe(),
                n => format!("{} and {} more", first.describe(), n - 1),
            };
            if rounds.waiting_for.as_deref() != Some(first.owner.as_str()) {
                on_event(Event::Note(&format!(
                    "waiting for configurations another knobs is measuring: {what}"
                )));
                rounds.waiting_for = Some(first.owner.clone());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        Ok(())
    }
}
