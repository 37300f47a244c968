//! Claims: which process is measuring a configuration, so that concurrent processes on
//! one store share the plan.

use rusqlite::params;

use super::*;
use crate::Error;

impl Store {
    /// Claims a configuration for measuring until `expires` (Unix seconds): true when
    /// `owner` holds it now (it was free, expired, or already `owner`'s). Concurrent
    /// processes on one store share the plan this way; a claimant that dies frees its
    /// configurations when the lease runs out.
    pub fn claim(&self, key: &MeasurementKey, owner: &str, expires: f64) -> Result<bool, Error> {
        let err = db_error(&self.path);
        let now = now();
        let changed = self
            .conn
            .execute(
                "INSERT INTO claims (system, variant, spec_hash, workload, configuration, owner, expires,
                    \"commit\")
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?9)
                 ON CONFLICT (system, variant, spec_hash, workload, configuration, \"commit\") DO UPDATE
                 SET owner = excluded.owner, expires = excluded.expires
                 WHERE claims.owner = excluded.owner OR claims.expires < ?8",
                rusqlite::params![
                    key.system,
                    key.variant,
                    key.spec_hash,
                    key.workload,
                    key.configuration,
                    owner,
                    expires,
                    now,
                    key.commit
                ],
            )
            .map_err(&err)?;
        Ok(changed == 1)
    }

    /// Gives a claim back (nothing when `owner` does not hold it).
    pub fn release(&self, key: &MeasurementKey, owner: &str) -> Result<(), Error> {
        self.conn
            .execute(
                "DELETE FROM claims WHERE system = ?1 AND variant = ?2 AND spec_hash = ?3
                 AND workload = ?4 AND configuration = ?5 AND owner = ?6 AND \"commit\" = ?7",
                rusqlite::params![
                    key.system,
                    key.variant,
                    key.spec_hash,
                    key.workload,
                    key.configuration,
                    owner,
                    key.commit
                ],
            )
            .map_err(db_error(&self.path))?;
        Ok(())
    }

    /// Gives back every claim `owner` holds (a process that is gone, whose work another
    /// process took over).
    pub fn release_owner(&self, owner: &str) -> Result<(), Error> {
        self.conn
            .execute("DELETE FROM claims WHERE owner = ?1", params![owner])
            .map_err(db_error(&self.path))?;
        Ok(())
    }

    /// Who holds claims now.
    pub fn claim_owners(&self) -> Result<Vec<String>, Error> {
        let err = db_error(&self.path);
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT owner FROM claims ORDER BY owner")
            .map_err(&err)?;
        let owners = stmt.query_map([], |r| r.get(0)).map_err(&err)?;
        owners.collect::<Result<Vec<String>, _>>().map_err(&err)
    }
}
