//! The builds of a spec's build options: per set of build-option values, whether it built
//! and how long its build took, kept apart from the runs' times.

use rusqlite::params;
use serde::Serialize;

use super::*;
use crate::Error;

/// One build of a set of build-option values, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredBuild {
    /// The values as the build saw them (`-DHEAVY -O2`; `defaults` for none).
    pub build_values: String,
    /// `built` or `failed`.
    pub status: String,
    /// The build's own time.
    pub seconds: f64,
    /// The build log.
    pub log: String,
}

/// The builds of a selection, summed up for `results show`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BuildsSummary {
    pub builds: usize,
    pub failed: usize,
    /// Seconds of every build, apart from the runs' time.
    pub seconds: f64,
}

impl Store {
    /// Records (or updates) the build of a set of build-option values of the selection's
    /// system, spec and commit.
    pub fn record_build(&self, selection: &Selection, build: &StoredBuild) -> Result<(), Error> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO builds
                   (system, spec_hash, \"commit\", build_values, status, seconds, log, recorded)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    selection.system.as_deref().unwrap_or_default(),
                    selection.spec_hash.as_deref().unwrap_or_default(),
                    selection.commit,
                    build.build_values,
                    build.status,
                    build.seconds,
                    build.log,
                    now()
                ],
            )
            .map_err(db_error(&self.path))?;
        Ok(())
    }

    /// The builds of the selection's system, spec and commit, by their values.
    pub fn builds(&self, selection: &Selection) -> Result<Vec<StoredBuild>, Error> {
        let err = db_error(&self.path);
        let mut statement = self
            .conn
            .prepare(
                "SELECT build_values, status, seconds, log FROM builds
                 WHERE (?1 IS NULL OR system = ?1) AND (?2 IS NULL OR spec_hash = ?2)
                   AND \"commit\" = ?3
                 ORDER BY build_values",
            )
            .map_err(&err)?;
        let rows = statement
            .query_map(
                params![selection.system, selection.spec_hash, selection.commit],
                |r| {
                    Ok(StoredBuild {
                        build_values: r.get(0)?,
                        status: r.get(1)?,
                        seconds: r.get(2)?,
                        log: r.get(3)?,
                    })
                },
            )
            .map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(&err)
    }

    /// [`Store::builds`] summed up; `None` when there are none (a spec without build
    /// options).
    pub fn builds_summary(&self, selection: &Selection) -> Result<Option<BuildsSummary>, Error> {
        let builds = self.builds(selection)?;
        if builds.is_empty() {
            return Ok(None);
        }
        Ok(Some(BuildsSummary {
            builds: builds.len(),
            failed: builds.iter().filter(|b| b.status == "failed").count(),
            seconds: builds.iter().map(|b| b.seconds).sum(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_are_kept_per_spec_and_commit_and_replaced_by_values() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let selection = Selection {
            system: Some("s".into()),
            spec_hash: Some("h".into()),
            ..Selection::default()
        };
        let build = |values: &str, status: &str, seconds: f64| StoredBuild {
            build_values: values.into(),
            status: status.into(),
            seconds,
            log: format!("/b/{values}.log"),
        };
        store
            .record_build(&selection, &build("-DA", "built", 1.5))
            .unwrap();
        store
            .record_build(&selection, &build("-DB", "failed", 0.5))
            .unwrap();
        store
            .record_build(&selection, &build("-DA", "built", 2.0))
            .unwrap();
        let at_commit = selection.clone().at_commit("c");
        store
            .record_build(&at_commit, &build("-DA", "built", 9.0))
            .unwrap();
        assert_eq!(
            store.builds_summary(&selection).unwrap(),
            Some(BuildsSummary {
                builds: 2,
                failed: 1,
                seconds: 2.5
            })
        );
        assert_eq!(store.builds(&at_commit).unwrap().len(), 1);
        let other = Selection {
            spec_hash: Some("other".into()),
            ..selection
        };
        assert_eq!(store.builds_summary(&other).unwrap(), None);
    }
}
