//! Writing runs: specs, rounds, runs and their region times, each committed as it finishes.

use rusqlite::params;

use super::*;
use crate::Error;
use crate::runner::RunResult;
use crate::spec::SystemSpec;

impl Store {
    /// Records the spec measurements are taken under (idempotent).
    pub fn register_spec(&self, spec: &SystemSpec) -> Result<(), Error> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO specs (hash, system, path, text, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    spec.hash,
                    spec.name,
                    spec.path
                        .canonicalize()
                        .unwrap_or(spec.path.clone())
                        .display()
                        .to_string(),
                    spec.text,
                    now()
                ],
            )
            .map_err(db_error(&self.path))?;
        Ok(())
    }

    /// Stores one run, with the region times it reported; committed when this returns.
    pub fn record(
        &self,
        key: &MeasurementKey,
        started: f64,
        result: &RunResult,
        regions: &[RegionMeasurement],
    ) -> Result<i64, Error> {
        self.record_in_round(key, started, result, regions, None)
    }

    /// Starts a round: its id, for [`Store::record_in_round`].
    pub fn begin_round(&self, seed: u64, reference: Option<&str>) -> Result<i64, Error> {
        let err = db_error(&self.path);
        self.conn
            .execute(
                "INSERT INTO rounds (started, seed, reference) VALUES (?1, ?2, ?3)",
                params![now(), seed as i64, reference],
            )
            .map_err(&err)?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The reference configuration of the selection's latest round that had one.
    pub fn reference(&self, selection: &Selection) -> Result<Option<String>, Error> {
        let err = db_error(&self.path);
        self.conn
            .query_row(
                "SELECT rounds.reference FROM runs JOIN rounds ON runs.round = rounds.id
                 WHERE (?1 IS NULL OR system = ?1) AND (?2 IS NULL OR spec_hash = ?2)
                   AND (?3 IS NULL OR workload = ?3) AND variant = ?4 AND \"commit\" = ?5
                   AND rounds.reference IS NOT NULL
                 ORDER BY rounds.id DESC LIMIT 1",
                params![
                    selection.system,
                    selection.spec_hash,
                    selection.workload,
                    selection.variant,
                    selection.commit
                ],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(err(e)),
            })
    }

    /// [`Store::record`] of a run measured in `round` ([`Store::begin_round`]).
    pub fn record_in_round(
        &self,
        key: &MeasurementKey,
        started: f64,
        result: &RunResult,
        regions: &[RegionMeasurement],
        round: Option<i64>,
    ) -> Result<i64, Error> {
        let host = host_name();
        let origin = Origin {
            node: host.clone(),
            host,
            source: None,
        };
        self.insert_run(key, started, result, regions, round, &origin)
            .map(|run| run.expect("a run without a source is always stored"))
    }

    /// Stores a run made elsewhere (a Slurm node) unless a run from the same `source` is
    /// stored already: true when stored now.
    pub fn record_from(
        &self,
        key: &MeasurementKey,
        started: f64,
        result: &RunResult,
        regions: &[RegionMeasurement],
        round: Option<i64>,
        origin: &Origin,
    ) -> Result<bool, Error> {
        Ok(self
            .insert_run(key, started, result, regions, round, origin)?
            .is_some())
    }

    /// Whether a run from `source` is stored.
    pub fn has_source(&self, source: &str) -> Result<bool, Error> {
        self.conn
            .query_row(
                "SELECT count(*) FROM runs WHERE source = ?1",
                params![source],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(db_error(&self.path))
    }

    /// Inserts a run and its region times in one transaction; `None` when its source is
    /// stored already.
    fn insert_run(
        &self,
        key: &MeasurementKey,
        started: f64,
        result: &RunResult,
        regions: &[RegionMeasurement],
        round: Option<i64>,
        origin: &Origin,
    ) -> Result<Option<i64>, Error> {
        let err = db_error(&self.path);
        let detail = (!result.outcome.is_ok()).then(|| result.outcome.describe());
        let tail = (!result.stderr_tail.is_empty()).then_some(&result.stderr_tail);
        let tx = self.conn.unchecked_transaction().map_err(&err)?;
        let changed = tx
            .execute(
                "INSERT INTO runs (system, variant, spec_hash, workload, configuration,
                host, started, tool_version, status, detail, wall, user, system_time,
                max_rss_kib, stderr_tail, inputs, \"commit\", round, instructions, cpu_wait, node,
                source)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19, ?20, ?21, ?22)
             ON CONFLICT (source) WHERE source IS NOT NULL DO NOTHING",
                params![
                    key.system,
                    key.variant,
                    key.spec_hash,
                    key.workload,
                    key.configuration,
                    origin.host,
                    started,
                    env!("CARGO_PKG_VERSION"),
                    result.outcome.status(),
                    detail,
                    result.wall,
                    result.user,
                    result.system_cpu_s,
                    result.max_rss_kib as i64,
                    tail,
                    key.inputs,
                    key.commit,
                    round,
                    result.instructions.map(|n| n as i64),
                    result.cpu_wait,
                    origin.node,
                    origin.source,
                ],
            )
            .map_err(&err)?;
        if changed == 0 {
            return Ok(None);
        }
        let run = tx.last_insert_rowid();
        for r in regions {
            tx.execute(
                "INSERT INTO region_times (run, region, seconds, entries, cpu_seconds)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run, r.region, r.seconds, r.entries as i64, r.cpu_seconds],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(Some(run))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Outcome;
    use crate::store::test_support::*;

    #[test]
    fn concurrent_writers_do_not_lose_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.db");
        let spec = spec();
        Store::open(&path).unwrap().register_spec(&spec).unwrap();
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let path = path.clone();
                let spec = spec.clone();
                std::thread::spawn(move || {
                    let store = Store::open(&path).unwrap();
                    for i in 0..50 {
                        let config = if (t + i) % 2 == 0 { "a,n=1" } else { "n=2" };
                        store
                            .record(&key(&spec, config), now(), &result(1.0, Outcome::Ok), &[])
                            .unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.runs(&Selection::default()).unwrap().len(), 200);
        let ok: String = store
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
}
