//! A campaign across commits: each (commit build, configuration) pair measured in one
//! campaign, each run stored under its commit.

use std::path::{Path, PathBuf};

use super::*;
use crate::Error;
use crate::store::{Selection, Store};

impl Campaign<'_> {
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
        for pair in pairs.iter().filter(|p| p.failed_build.is_none()) {
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
            let (samples, mut failure) = self.standing(runs);
            let failed_now = pair.failed_build.is_some() && failure.is_none();
            let program = match &pair.failed_build {
                None => programs[pair.program.as_path()].clone(),
                Some(failed) => {
                    if failed_now {
                        store.record(&key, store::now(), &failed.as_run(), &[])?;
                        failure = Some(Failure {
                            why: failed.as_run().outcome.describe(),
                            stderr_tail: failed.log_tail.clone(),
                        });
                    }
                    Some(pair.program.clone())
                }
            };
            items.push(Item {
                invocation: self.invocation(&program, &pair.configuration)?,
                key,
                samples,
                failure,
                failed_now,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::tests::spec;

    fn every_configuration(spec: &SystemSpec) -> Vec<Configuration> {
        space::ValidConfigurations::new(&spec.space)
            .unwrap()
            .iter()
            .collect()
    }

    #[test]
    pub(super) fn a_campaign_at_a_commit_stores_and_resumes_under_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec(dir.path(), "repetitions = 2");
        let workload = spec.workload(None).unwrap();
        let configs = every_configuration(&spec);
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
    pub(super) fn a_campaign_across_commits_stores_each_run_under_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec(dir.path(), "repetitions = 2");
        let workload = spec.workload(None).unwrap();
        let configs = every_configuration(&spec);
        let sleep = std::path::PathBuf::from("/bin/sleep");
        let (c, d) = ("c".repeat(40), "d".repeat(40));
        let pairs = vec![
            AtCommit {
                commit: c.clone(),
                program: sleep.clone(),
                configuration: configs[0].clone(),

                failed_build: None,
            },
            AtCommit {
                commit: d.clone(),
                program: sleep.clone(),
                configuration: configs[0].clone(),

                failed_build: None,
            },
            AtCommit {
                commit: d.clone(),
                program: sleep.clone(),
                configuration: configs[1].clone(),

                failed_build: None,
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

    /// A configuration whose build failed is a failure of this campaign the first time, and
    /// one already in the store (not stored again) the next.
    #[test]
    fn a_failed_build_is_new_the_first_time_and_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec(dir.path(), "repetitions = 2");
        let workload = spec.workload(None).unwrap();
        let configs = every_configuration(&spec);
        let commit = "c".repeat(40);
        let failed = AtCommit {
            commit: commit.clone(),
            program: dir.path().join("not-built"),
            configuration: configs[0].clone(),
            failed_build: Some(FailedBuild {
                why: "`make` exited with status 2".into(),
                log_tail: "error: no such macro".into(),
                log: dir.path().join("build.log"),
            }),
        };
        let built = AtCommit {
            commit: commit.clone(),
            program: std::path::PathBuf::from("/bin/sleep"),
            configuration: configs[1].clone(),
            failed_build: None,
        };
        let pairs = [failed, built];
        let campaign = Campaign::new(&spec, workload);
        let first = campaign
            .run_at_commits(&store, &pairs, &mut |_| {})
            .unwrap();
        assert_eq!((first.reused, first.failed.len(), first.runs), (0, 1, 2));
        assert!(
            first.failed[0].1.contains("build failed"),
            "{:?}",
            first.failed
        );
        let again = campaign
            .run_at_commits(&store, &pairs, &mut |_| {})
            .unwrap();
        assert_eq!((again.reused, again.failed.len(), again.runs), (2, 1, 0));
        let stored = store
            .runs(&Campaign::at_commit(&spec, workload, &commit, "/bin/sleep".into()).selection())
            .unwrap();
        assert_eq!(stored.iter().filter(|r| !r.is_ok()).count(), 1);
    }
}
