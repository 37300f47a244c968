//! Reading the region times instrumented programs wrote.

use rusqlite::params;

use super::*;
use crate::Error;

impl Store {
    /// The region times of the selected successful runs: (configuration, run, region).
    pub fn region_times(
        &self,
        selection: &Selection,
    ) -> Result<Vec<(String, i64, RegionMeasurement)>, Error> {
        let err = db_error(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.configuration, r.id, t.region, t.seconds, t.entries, t.cpu_seconds
                 FROM runs r JOIN region_times t ON t.run = r.id
                 WHERE r.status = 'ok' AND r.variant = ?1
                   AND (?2 IS NULL OR r.system = ?2) AND (?3 IS NULL OR r.spec_hash = ?3)
                   AND (?4 IS NULL OR r.workload = ?4) AND r.\"commit\" = ?5
                 ORDER BY r.id, t.region",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map(
                params![
                    selection.variant,
                    selection.system,
                    selection.spec_hash,
                    selection.workload,
                    selection.commit
                ],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        RegionMeasurement {
                            region: r.get(2)?,
                            seconds: r.get(3)?,
                            entries: r.get::<_, i64>(4)? as u64,
                            cpu_seconds: r.get(5)?,
                        },
                    ))
                },
            )
            .map_err(&err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(&err)
    }
}
