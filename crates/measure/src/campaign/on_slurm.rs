//! A round as a Slurm job array: submitted, waited for, its result files stored.

use std::path::{Path, PathBuf};

use super::*;
use crate::Error;
use crate::slurm::{self, SlurmBackend, Submission, TaskWork, Waiting, WorkItem};
use crate::store::{Store, StoredRun};

impl Campaign<'_> {
    /// One round as a Slurm job array: planned and claimed as locally, split into the tasks'
    /// shares (each with the reference), submitted, waited for and stored.
    pub(super) fn slurm_round(
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
            counted_regions: self.counted_regions,
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

/// The store's file, absolute, as submissions record it.
pub(super) fn store_path(store: &Store) -> PathBuf {
    store
        .path()
        .canonicalize()
        .unwrap_or_else(|_| store.path().to_path_buf())
}

/// Waits for a submission and stores its runs (each one a `Ran` event) with the region times
/// they wrote, read with `regions`: how many, and a note per task that ended without
/// finishing its share.
pub(super) fn collect(
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
