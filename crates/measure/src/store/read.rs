//! Reading runs back: by selection, summarised, read against the reference, as a dataset.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::params;
use space::{Configuration, Dataset};

use super::*;
use crate::Error;
use crate::spec::{Metric, SystemSpec};
use crate::stats::Summary;

impl Store {
    /// Stored runs, oldest first.
    pub fn runs(&self, selection: &Selection) -> Result<Vec<StoredRun>, Error> {
        self.runs_where(selection, None)
    }

    /// The stored runs of one configuration (its store text), oldest first.
    pub fn runs_of(
        &self,
        selection: &Selection,
        configuration: &str,
    ) -> Result<Vec<StoredRun>, Error> {
        self.runs_where(selection, Some(configuration))
    }

    fn runs_where(
        &self,
        selection: &Selection,
        configuration: Option<&str>,
    ) -> Result<Vec<StoredRun>, Error> {
        let err = db_error(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, system, spec_hash, workload, configuration, host, started,
                        tool_version, status, detail, wall, user, system_time, max_rss_kib,
                        stderr_tail, variant, inputs, \"commit\", round, instructions, node,
                        source, cpu_wait
                 FROM runs
                 WHERE (?1 IS NULL OR system = ?1) AND (?2 IS NULL OR spec_hash = ?2)
                   AND (?3 IS NULL OR workload = ?3) AND variant = ?4
                   AND (?5 IS NULL OR configuration = ?5) AND \"commit\" = ?6
                 ORDER BY id",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map(
                params![
                    selection.system,
                    selection.spec_hash,
                    selection.workload,
                    selection.variant,
                    configuration,
                    selection.commit
                ],
                |r| {
                    Ok(StoredRun {
                        id: r.get(0)?,
                        system: r.get(1)?,
                        variant: r.get(15)?,
                        spec_hash: r.get(2)?,
                        workload: r.get(3)?,
                        configuration: r.get(4)?,
                        host: r.get(5)?,
                        started: r.get(6)?,
                        tool_version: r.get(7)?,
                        status: r.get(8)?,
                        detail: r.get(9)?,
                        wall: r.get(10)?,
                        user: r.get(11)?,
                        system_time: r.get(12)?,
                        max_rss_kib: r.get(13)?,
                        stderr_tail: r.get(14)?,
                        inputs: r.get(16)?,
                        commit: r.get(17)?,
                        round: r.get(18)?,
                        instructions: r.get(19)?,
                        node: r.get(20)?,
                        source: r.get(21)?,
                        cpu_wait: r.get(22)?,
                    })
                },
            )
            .map_err(&err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(&err)
    }

    /// Runs grouped by configuration.
    pub fn runs_by_configuration(
        &self,
        selection: &Selection,
    ) -> Result<BTreeMap<String, Vec<StoredRun>>, Error> {
        let mut by: BTreeMap<String, Vec<StoredRun>> = BTreeMap::new();
        for run in self.runs(selection)? {
            by.entry(run.configuration.clone()).or_default().push(run);
        }
        Ok(by)
    }

    /// The commits with runs in the selection (its `commit` aside), in the order of their
    /// first run; `""` (runs without history) is left out.
    pub fn commits(&self, selection: &Selection) -> Result<Vec<String>, Error> {
        self.strings(
            "SELECT \"commit\" FROM runs
             WHERE (?1 IS NULL OR system = ?1) AND (?2 IS NULL OR spec_hash = ?2)
               AND (?3 IS NULL OR workload = ?3) AND variant = ?4 AND \"commit\" <> ''
             GROUP BY \"commit\" ORDER BY min(id)",
            params![
                selection.system,
                selection.spec_hash,
                selection.workload,
                selection.variant
            ],
        )
    }

    /// The variants with runs in the selection (its `variant` aside), sorted; `""` is the
    /// program as the spec runs it.
    pub fn variants(&self, selection: &Selection) -> Result<Vec<String>, Error> {
        self.strings(
            "SELECT DISTINCT variant FROM runs
             WHERE (?1 IS NULL OR system = ?1) AND (?2 IS NULL OR spec_hash = ?2)
               AND (?3 IS NULL OR workload = ?3) AND \"commit\" = ?4
             ORDER BY variant",
            params![
                selection.system,
                selection.spec_hash,
                selection.workload,
                selection.commit
            ],
        )
    }

    /// The first column of a query's rows, as strings.
    fn strings(&self, sql: &str, params: impl rusqlite::Params) -> Result<Vec<String>, Error> {
        let err = db_error(&self.path);
        let mut stmt = self.conn.prepare(sql).map_err(&err)?;
        let rows = stmt.query_map(params, |r| r.get(0)).map_err(&err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(&err)
    }

    pub fn specs(&self) -> Result<Vec<StoredSpec>, Error> {
        let err = db_error(&self.path);
        let mut stmt = self
            .conn
            .prepare("SELECT hash, system, path, text, created FROM specs ORDER BY created")
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StoredSpec {
                    hash: r.get(0)?,
                    system: r.get(1)?,
                    path: r.get(2)?,
                    text: r.get(3)?,
                    created: r.get(4)?,
                })
            })
            .map_err(&err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(&err)
    }

    /// `selection` at the one stored commit whose id starts with `prefix` (unchanged
    /// without a prefix).
    pub fn at_commit_prefix(
        &self,
        selection: Selection,
        prefix: Option<&str>,
    ) -> Result<Selection, Error> {
        let Some(prefix) = prefix else {
            return Ok(selection);
        };
        let matching: Vec<String> = self
            .commits(&selection)?
            .into_iter()
            .filter(|c| c.starts_with(prefix))
            .collect();
        match matching.as_slice() {
            [one] => Ok(selection.at_commit(one)),
            [] => Err(Error::Store(format!(
                "{}: no measurements at a commit `{prefix}`",
                self.path.display()
            ))),
            _ => Err(Error::Store(format!(
                "{}: `{prefix}` is the start of {} measured commits; give more of it",
                self.path.display(),
                matching.len()
            ))),
        }
    }

    /// The metric of the spec the selected runs were measured under.
    pub fn spec_metric(&self, selection: &Selection) -> Result<Metric, Error> {
        let stored = self.spec(selection)?;
        Ok(SystemSpec::parse(&stored.text, Path::new(&stored.path))?
            .measure
            .metric)
    }

    /// The selected runs as a dataset, in the metric their spec reads.
    pub fn dataset_as_specified(&self, selection: &Selection) -> Result<Dataset, Error> {
        self.dataset(selection, self.spec_metric(selection)?)
    }

    /// Of the selected configurations with runs, how many have none that succeeded — a
    /// dataset leaves them out —, as (failed, timed out): a configuration with a timeout
    /// among its runs counts as timed out.
    pub fn configurations_without_success(
        &self,
        selection: &Selection,
    ) -> Result<(usize, usize), Error> {
        let mut by_configuration: BTreeMap<String, (bool, bool)> = BTreeMap::new();
        for run in self.runs(selection)? {
            let seen = by_configuration
                .entry(run.configuration.clone())
                .or_default();
            seen.0 |= run.is_ok();
            seen.1 |= run.status == "timeout";
        }
        let failing = by_configuration.values().filter(|s| !s.0);
        let (mut failed, mut timed_out) = (0, 0);
        for &(_, timeout) in failing {
            if timeout {
                timed_out += 1;
            } else {
                failed += 1;
            }
        }
        Ok((failed, timed_out))
    }

    /// The one spec the selection designates: with several specs of one system (it was
    /// edited), the latest; with several systems, the selection must say which.
    pub fn spec(&self, selection: &Selection) -> Result<StoredSpec, Error> {
        let matching: Vec<StoredSpec> = self
            .specs()?
            .into_iter()
            .filter(|s| selection.system.as_ref().is_none_or(|n| *n == s.system))
            .filter(|s| {
                selection
                    .spec_hash
                    .as_ref()
                    .is_none_or(|h| s.hash.starts_with(h))
            })
            .collect();
        match matching.len() {
            0 => Err(Error::Store(format!(
                "{}: no measurements{}",
                self.path.display(),
                match (&selection.system, &selection.spec_hash) {
                    (None, None) => String::new(),
                    (s, h) => format!(
                        " for{}{}",
                        s.as_ref()
                            .map(|s| format!(" system `{s}`"))
                            .unwrap_or_default(),
                        h.as_ref().map(|h| format!(" spec {h}")).unwrap_or_default()
                    ),
                }
            ))),
            1 => Ok(matching.into_iter().next().expect("one")),
            // One system whose spec was edited: the latest spec is what the user means.
            _ if matching.iter().all(|s| s.system == matching[0].system) => {
                Ok(matching.into_iter().last().expect("several"))
            }
            _ => Err(Error::Store(format!(
                "{}: measurements of several systems ({}); choose one with --system or --spec-hash",
                self.path.display(),
                matching
                    .iter()
                    .map(|s| format!("{} {}", s.system, s.hash))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Per configuration: how many runs, how many failed, and the metric over the
    /// successful ones (`auto` resolved per configuration).
    pub fn summaries(
        &self,
        selection: &Selection,
        metric: Metric,
    ) -> Result<Vec<ConfigurationSummary>, Error> {
        self.summaries_with(selection, metric, Drift::None)
    }

    /// [`Store::summaries`], each run read against the reference configuration's run in its
    /// round as `drift` says.
    pub fn summaries_with(
        &self,
        selection: &Selection,
        metric: Metric,
        drift: Drift,
    ) -> Result<Vec<ConfigurationSummary>, Error> {
        let firsts = match metric {
            Metric::Auto => self.deciding_runs(selection)?,
            _ => BTreeMap::new(),
        };
        let metric_of = |configuration: &str| {
            firsts
                .get(configuration)
                .map_or(metric, StoredRun::auto_metric)
        };
        let by_configuration = self.runs_by_configuration(selection)?;
        let scale = match drift {
            Drift::None => None,
            _ => self.reference_scale(selection, &by_configuration, drift, &metric_of)?,
        };
        Ok(by_configuration
            .into_iter()
            .map(|(configuration, runs)| {
                let metric = metric_of(&configuration);
                let value = |r: &StoredRun| -> Option<f64> {
                    match &scale {
                        None => Some(r.metric(metric)),
                        Some(scale) => {
                            Some(r.metric(metric) * scale.get(&(r.round?, r.node.clone()))?)
                        }
                    }
                };
                let ok: Vec<&StoredRun> = runs.iter().filter(|r| r.is_ok()).collect();
                let mut values: Vec<f64> = ok.iter().filter_map(|r| value(r)).collect();
                if values.is_empty() {
                    // No round of this configuration had the reference: read it as it is.
                    values = ok.iter().map(|r| r.metric(metric)).collect();
                }
                ConfigurationSummary {
                    configuration,
                    runs: runs.len(),
                    failed: runs.len() - ok.len(),
                    summary: Summary::of(&values),
                    metric,
                }
            })
            .collect())
    }

    /// Per round and node that measured the reference configuration, the factor the runs
    /// of that round on that node are multiplied by: the reference's median over all of them
    /// over its time there (`Drift::Rounds`), or one over its time there
    /// (`Drift::Relative`). Per node, so that a model does not learn which node a
    /// configuration landed on. `None` when the selection has no reference.
    fn reference_scale(
        &self,
        selection: &Selection,
        by_configuration: &BTreeMap<String, Vec<StoredRun>>,
        drift: Drift,
        metric_of: &dyn Fn(&str) -> Metric,
    ) -> Result<Option<BTreeMap<RoundOnNode, f64>>, Error> {
        let Some(reference) = self.reference(selection)? else {
            return Ok(None);
        };
        let metric = metric_of(&reference);
        // Several array tasks of a round on one node each ran the reference: their median.
        let mut runs: BTreeMap<RoundOnNode, Vec<f64>> = BTreeMap::new();
        for r in by_configuration.get(&reference).into_iter().flatten() {
            let value = r.metric(metric);
            if let (true, Some(round), true) = (r.is_ok(), r.round, value > 0.0) {
                runs.entry((round, r.node.clone())).or_default().push(value);
            }
        }
        let per_round: BTreeMap<RoundOnNode, f64> = runs
            .into_iter()
            .filter_map(|(at, values)| Some((at, ::stats::median(&values)?)))
            .collect();
        let values: Vec<f64> = per_round.values().copied().collect();
        let Some(median) = ::stats::median(&values) else {
            return Ok(None);
        };
        let unit = match drift {
            Drift::Relative => 1.0,
            _ => median,
        };
        Ok(Some(
            per_round.into_iter().map(|(r, v)| (r, unit / v)).collect(),
        ))
    }

    /// The measurements as a dataset: the spec's space, and per configuration that has
    /// successful runs its value of the metric (`Summary::value`). The selection must designate one spec and
    /// one workload (the only one measured, or the one named).
    pub fn dataset(&self, selection: &Selection, metric: Metric) -> Result<Dataset, Error> {
        self.dataset_with(selection, metric, Drift::None)
    }

    /// [`Store::dataset`] with each run read against the reference as `drift` says.
    pub fn dataset_with(
        &self,
        selection: &Selection,
        metric: Metric,
        drift: Drift,
    ) -> Result<Dataset, Error> {
        let stored = self.spec(selection)?;
        let spec = SystemSpec::parse(&stored.text, Path::new(&stored.path))?;
        let mut selection = Selection {
            system: Some(stored.system.clone()),
            spec_hash: Some(stored.hash.clone()),
            workload: selection.workload.clone(),
            variant: selection.variant.clone(),
            commit: selection.commit.clone(),
        };
        if selection.workload.is_none() {
            let workloads: std::collections::BTreeSet<String> = self
                .runs(&selection)?
                .into_iter()
                .map(|r| r.workload)
                .collect();
            if workloads.len() > 1 {
                return Err(Error::Store(format!(
                    "{}: measurements with {} workloads ({}); choose one with --workload",
                    self.path.display(),
                    workloads.len(),
                    workloads.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
            selection.workload = workloads.into_iter().next();
        }
        let (metric, _) = self.resolve_metric(&selection, metric)?;
        let mut configurations: Vec<Configuration> = Vec::new();
        let mut performance = Vec::new();
        for s in self.summaries_with(&selection, metric, drift)? {
            let Some(summary) = s.summary else { continue };
            let config = spec
                .space
                .parse_configuration(&s.configuration)
                .map_err(|e| {
                    Error::Store(format!(
                        "{}: stored configuration `{}` no longer fits the spec: {e}",
                        self.path.display(),
                        s.configuration
                    ))
                })?;
            configurations.push(config);
            performance.push(summary.value);
        }
        Ok(Dataset {
            space: spec.space,
            configurations,
            performance,
            metric: match drift {
                Drift::Relative => format!("{}_per_reference", metric.name()),
                _ => metric.label().to_string(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Outcome;
    use crate::store::test_support::*;

    /// The machine runs twice as slow in the second round: read against the reference in
    /// each round, the configuration's two runs agree.
    #[test]
    fn runs_read_against_the_reference_lose_the_drift_between_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec();
        store.register_spec(&spec).unwrap();
        for (speed, reference) in [(1.0, None), (2.0, Some("n=1"))] {
            let round = store.begin_round(7, reference).unwrap();
            for (config, wall) in [("n=1", 1.0), ("a,n=2", 2.0)] {
                let r = result(wall * speed, Outcome::Ok);
                store
                    .record_in_round(&key(&spec, config), now(), &r, &[], Some(round))
                    .unwrap();
            }
        }
        let median = |drift| {
            store
                .summaries_with(&Selection::default(), Metric::Wall, drift)
                .unwrap()
                .into_iter()
                .find(|s| s.configuration == "a,n=2")
                .and_then(|s| s.summary)
                .map(|s| (s.median, s.sd))
                .unwrap()
        };
        assert_eq!(median(Drift::None), (3.0, 2f64.sqrt()));
        assert_eq!(median(Drift::Rounds), (3.0, 0.0));
        assert_eq!(median(Drift::Relative), (2.0, 0.0));
        assert_eq!(
            store.reference(&Selection::default()).unwrap().as_deref(),
            Some("n=1")
        );
    }

    #[test]
    fn runs_from_nodes_are_read_against_the_reference_on_their_node_and_ingested_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec();
        store.register_spec(&spec).unwrap();
        let round = store.begin_round(7, Some("n=1")).unwrap();
        // The same round on a node and on one twice as slow.
        let runs = [
            ("fast", "n=1", 1.0),
            ("fast", "a,n=2", 2.0),
            ("slow", "n=1", 2.0),
            ("slow", "a,n=1", 6.0),
        ];
        for (i, (node, config, wall)) in runs.into_iter().enumerate() {
            let origin = Origin {
                host: node.into(),
                node: node.into(),
                source: Some(format!("slurm:job:0:{i}")),
            };
            let r = result(wall, Outcome::Ok);
            for expected in [true, false] {
                let stored = store
                    .record_from(&key(&spec, config), now(), &r, &[], Some(round), &origin)
                    .unwrap();
                assert_eq!(
                    stored, expected,
                    "the second copy of a source is not stored"
                );
            }
        }
        let stored = store.runs(&Selection::default()).unwrap();
        assert_eq!(stored.len(), 4);
        assert_eq!(
            stored.iter().map(|r| r.node.as_str()).collect::<Vec<_>>(),
            ["fast", "fast", "slow", "slow"]
        );
        let relative: BTreeMap<String, f64> = store
            .summaries_with(&Selection::default(), Metric::Wall, Drift::Relative)
            .unwrap()
            .into_iter()
            .map(|s| (s.configuration, s.summary.unwrap().median))
            .collect();
        assert_eq!(relative["a,n=1"], 3.0, "against the slow node's reference");
        assert_eq!(relative["a,n=2"], 2.0, "against the fast node's reference");
        // A local run names this host as its node.
        store
            .record(&key(&spec, "n=2"), now(), &result(1.0, Outcome::Ok), &[])
            .unwrap();
        let local = store.runs_of(&Selection::default(), "n=2").unwrap();
        assert_eq!(
            (local[0].node.clone(), local[0].source.clone()),
            (host_name(), None)
        );
    }

    #[test]
    fn runs_round_trip_and_become_a_dataset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.db");
        let spec = spec();
        {
            let store = Store::open(&path).unwrap();
            store.register_spec(&spec).unwrap();
            store.register_spec(&spec).unwrap();
            for w in [1.0, 3.0, 2.0] {
                store
                    .record(&key(&spec, "a,n=2"), now(), &result(w, Outcome::Ok), &[])
                    .unwrap();
            }
            store
                .record(&key(&spec, "n=1"), now(), &result(0.5, Outcome::Ok), &[])
                .unwrap();
            store
                .record(
                    &key(&spec, "a,n=1"),
                    now(),
                    &result(0.1, Outcome::Exit(2)),
                    &[],
                )
                .unwrap();
        }
        let store = Store::open_existing(&path).unwrap();
        let runs = store.runs(&Selection::default()).unwrap();
        assert_eq!(runs.len(), 5);
        assert_eq!(runs[4].detail.as_deref(), Some("exit status 2"));
        assert_eq!(runs[0].tool_version, env!("CARGO_PKG_VERSION"));
        let summaries = store
            .summaries(&Selection::default(), Metric::Wall)
            .unwrap();
        let a2 = summaries
            .iter()
            .find(|s| s.configuration == "a,n=2")
            .unwrap();
        let a2 = a2.summary.as_ref().unwrap();
        assert_eq!(
            (a2.median, a2.value),
            (2.0, 1.0),
            "read as its fastest run of three"
        );
        let failed = summaries
            .iter()
            .find(|s| s.configuration == "a,n=1")
            .unwrap();
        assert_eq!((failed.runs, failed.failed), (1, 1));
        assert!(failed.summary.is_none());
        let data = store.dataset(&Selection::default(), Metric::Wall).unwrap();
        assert_eq!(
            data.configurations.len(),
            2,
            "the failed configuration is left out"
        );
        let i = data
            .configurations
            .iter()
            .position(|c| data.space.format_configuration(c) == "a,n=2")
            .unwrap();
        assert_eq!(data.performance[i], 1.0);
        let cpu = store.dataset(&Selection::default(), Metric::Cpu).unwrap();
        assert!(cpu.performance.contains(&0.51));
    }

    #[test]
    fn an_edited_spec_selects_the_latest_and_several_systems_need_a_choice() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let old = spec();
        let edited = SystemSpec::parse(
            &old.text.replace("-n{value}", "--n={value}"),
            Path::new("/tmp/demo.toml"),
        )
        .unwrap();
        assert_ne!(old.hash, edited.hash);
        store.register_spec(&old).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        store.register_spec(&edited).unwrap();
        assert_eq!(store.spec(&Selection::default()).unwrap().hash, edited.hash);
        let prefix = Selection {
            spec_hash: Some(old.hash[..6].to_string()),
            ..Default::default()
        };
        assert_eq!(store.spec(&prefix).unwrap().hash, old.hash);
        let other = SystemSpec::parse(
            &old.text.replace("name = \"demo\"", "name = \"other\""),
            Path::new("/tmp/other.toml"),
        )
        .unwrap();
        store.register_spec(&other).unwrap();
        let e = store.spec(&Selection::default()).unwrap_err();
        assert!(e.to_string().contains("several systems"), "{e}");
        let demo = Selection {
            system: Some("demo".into()),
            ..Default::default()
        };
        assert_eq!(store.spec(&demo).unwrap().hash, edited.hash);
    }
}
