//! Claims: which process is measuring a configuration, so that concurrent processes on
//! one store share the plan.

use rusqlite::{OptionalExtension, params};

use super::*;
use crate::Error;

impl Store {
    /// Claims a configuration for measuring until `expires` (Unix seconds): true when
    /// `owner` holds it now (it was free, expired, or already `owner`'s). Concurrent
    /// processes on one store share the plan this way; the claims of a claimant of this host
    /// that died are freed at once ([`Store::release_dead_owners`]), those of one elsewhere
    /// when the lease runs out.
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

/// Who holds claims: `host:pid:since`, the process and when its campaign began (Unix
/// seconds). The start time tells a live holder from a later process that got its pid.
pub fn owner_of_this_process() -> String {
    format!("{}:{}:{}", host_name(), std::process::id(), now())
}

/// Whether the process that owns claims (`host:pid:since`) is alive; `None` when it ran on
/// another host. A process that exists but started after `since` has only reused the pid,
/// and a zombie has ended: both count as dead.
pub fn owner_alive(owner: &str) -> Option<bool> {
    let here = format!("{}:", host_name());
    let mut fields = owner.strip_prefix(&here)?.split(':');
    let pid: i32 = fields.next()?.parse().ok()?;
    let since: Option<f64> = fields.next().and_then(|s| s.parse().ok());
    // SAFETY: signal 0 only asks whether the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return Some(false);
    }
    let Some((state, started)) = process_state_and_start(pid) else {
        return Some(true);
    };
    // A second of slack: the start time is read in clock ticks since boot.
    let reused = since.is_some_and(|since| started > since + 1.0);
    Some(state != 'Z' && !reused)
}

/// A process's state letter and start time (Unix seconds), from `/proc`.
fn process_state_and_start(pid: i32) -> Option<(char, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; the fields follow the last `)`.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    // `starttime`, the 22nd field: the 3rd is `state`, so 19 more after it.
    let ticks: f64 = rest.nth(18)?.parse().ok()?;
    let boot: f64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| (state, boot + ticks / per_second as f64))
}

/// A claim another process holds: the configuration, who holds it and until when.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldClaim {
    pub configuration: String,
    pub owner: String,
    pub expires: f64,
}

impl HeldClaim {
    /// `a,b (knobs pid 42 on this host, until 12:34:56 UTC)`, for a note about a wait.
    pub fn describe(&self) -> String {
        let holder = match self.owner.split(':').collect::<Vec<_>>().as_slice() {
            [host, pid, ..] if *host == host_name() => format!("knobs pid {pid} on this host"),
            [host, pid, ..] => format!("knobs pid {pid} on {host}"),
            _ => self.owner.clone(),
        };
        let left = (self.expires - now()).max(0.0);
        format!(
            "`{}` ({holder}, for at most {left:.0} s more)",
            self.configuration
        )
    }
}

impl Store {
    /// Frees the claims of processes of this host that are gone (killed, or ended without
    /// giving them back): their configurations can be measured at once. The owners freed.
    pub fn release_dead_owners(&self) -> Result<Vec<String>, Error> {
        let mut freed = Vec::new();
        for owner in self.claim_owners()? {
            if owner_alive(&owner) == Some(false) {
                self.release_owner(&owner)?;
                freed.push(owner);
            }
        }
        Ok(freed)
    }

    /// The claim on `key` that an owner other than `owner` holds and that has not expired.
    pub fn held_by_other(
        &self,
        key: &MeasurementKey,
        owner: &str,
    ) -> Result<Option<HeldClaim>, Error> {
        self.conn
            .query_row(
                "SELECT owner, expires FROM claims WHERE system = ?1 AND variant = ?2
                 AND spec_hash = ?3 AND workload = ?4 AND configuration = ?5
                 AND \"commit\" = ?6 AND owner <> ?7 AND expires >= ?8",
                rusqlite::params![
                    key.system,
                    key.variant,
                    key.spec_hash,
                    key.workload,
                    key.configuration,
                    key.commit,
                    owner,
                    now()
                ],
                |r| {
                    Ok(HeldClaim {
                        configuration: key.configuration.clone(),
                        owner: r.get(0)?,
                        expires: r.get(1)?,
                    })
                },
            )
            .optional()
            .map_err(db_error(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::*;

    /// A claim of a process of this host that is gone is freed for another at once; one of
    /// a live process stays and says who holds it; a pid taken over by a later process
    /// does not keep a dead owner's claims.
    #[test]
    fn claims_of_a_dead_process_are_freed_and_a_live_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let spec = spec();
        let key = key(&spec, "a");
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let live = format!("{}:{}:{}", host_name(), child.id(), now());
        assert_eq!(owner_alive(&live), Some(true));
        let reused = format!("{}:{}:{}", host_name(), child.id(), now() - 3600.0);
        assert_eq!(owner_alive(&reused), Some(false));
        assert_eq!(owner_alive("elsewhere.invalid:1:0"), None);

        assert!(store.claim(&key, &live, now() + 86_400.0).unwrap());
        assert!(store.release_dead_owners().unwrap().is_empty());
        let me = owner_of_this_process();
        assert!(!store.claim(&key, &me, now() + 60.0).unwrap());
        let held = store.held_by_other(&key, &me).unwrap().unwrap();
        assert_eq!(held.owner, live);
        assert!(
            held.describe().contains(&format!("pid {}", child.id())),
            "{}",
            held.describe()
        );

        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(owner_alive(&live), Some(false));
        assert_eq!(store.release_dead_owners().unwrap(), vec![live]);
        assert!(store.claim(&key, &me, now() + 60.0).unwrap());
        assert_eq!(store.held_by_other(&key, &me).unwrap(), None);
    }
}
