//! The store's schema, its version, and the migrations that bring older stores up to it.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::*;
use crate::Error;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 8;

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE specs (
    hash TEXT PRIMARY KEY,
    system TEXT NOT NULL,
    path TEXT NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    system TEXT NOT NULL,
    variant TEXT NOT NULL DEFAULT '',   -- '' = the program as the spec runs it
    spec_hash TEXT NOT NULL REFERENCES specs(hash),
    workload TEXT NOT NULL,
    configuration TEXT NOT NULL,
    host TEXT NOT NULL,
    started REAL NOT NULL,          -- Unix time, seconds
    tool_version TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout')),
    detail TEXT,                    -- how a failed run ended, e.g. 'exit status 1'
    wall REAL NOT NULL,             -- seconds
    user REAL NOT NULL,
    system_time REAL NOT NULL,
    max_rss_kib INTEGER NOT NULL,
    stderr_tail TEXT,
    inputs TEXT,                    -- digest of the workload's files, when it has any
    \"commit\" TEXT NOT NULL DEFAULT '',  -- the [history] commit built and run; '' = none
    round INTEGER,                  -- rounds.id; NULL: measured before rounds
    instructions INTEGER,           -- when counted (metric = \"instructions\")
    cpu_wait REAL,                  -- seconds it waited for a CPU (run delay); NULL: unknown
    node TEXT NOT NULL DEFAULT '',  -- the machine it ran on: the Slurm node, or the host
    source TEXT                     -- where an ingested run came from (a spool file); unique
);
CREATE UNIQUE INDEX runs_by_source ON runs (source) WHERE source IS NOT NULL;
CREATE TABLE rounds (               -- every pending configuration once, in a random order
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    seed INTEGER NOT NULL,          -- of the order (ChaCha8), so it can be replayed
    reference TEXT                  -- the configuration measured in every round, if any
);
CREATE INDEX runs_by_configuration ON runs (system, spec_hash, workload, configuration);
CREATE TABLE region_times (
    run INTEGER NOT NULL REFERENCES runs(id),
    region TEXT NOT NULL,
    seconds REAL NOT NULL,          -- self time: nested regions' time excluded
    entries INTEGER NOT NULL,
    cpu_seconds REAL,               -- self time by the threads' CPU clocks; NULL: not read
    PRIMARY KEY (run, region)
);
CREATE TABLE claims (               -- a configuration being measured, and by whom
    system TEXT NOT NULL,
    variant TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    workload TEXT NOT NULL,
    configuration TEXT NOT NULL,
    owner TEXT NOT NULL,            -- host:pid:start of the measuring process
    expires REAL NOT NULL,          -- Unix time; a claim past it is free
    \"commit\" TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (system, variant, spec_hash, workload, configuration, \"commit\")
);
CREATE TABLE builds (               -- a build of a set of build-option values
    system TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    \"commit\" TEXT NOT NULL DEFAULT '',
    build_values TEXT NOT NULL,     -- as the build saw them: '-DHEAVY -O2', 'defaults'
    status TEXT NOT NULL CHECK (status IN ('built', 'failed')),
    seconds REAL NOT NULL,          -- the build's own time, apart from the runs'
    log TEXT NOT NULL,              -- the build log's path
    recorded REAL NOT NULL,
    PRIMARY KEY (system, spec_hash, \"commit\", build_values)
);
";

/// Statements taking a store of version `i + 1` to version `i + 2`.
const MIGRATIONS: [&str; 7] = [
    "
ALTER TABLE runs ADD COLUMN variant TEXT NOT NULL DEFAULT '';
CREATE TABLE region_times (
    run INTEGER NOT NULL REFERENCES runs(id),
    region TEXT NOT NULL,
    seconds REAL NOT NULL,
    entries INTEGER NOT NULL,
    PRIMARY KEY (run, region)
);
",
    "
ALTER TABLE runs ADD COLUMN inputs TEXT;
CREATE TABLE claims (
    system TEXT NOT NULL,
    variant TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    workload TEXT NOT NULL,
    configuration TEXT NOT NULL,
    owner TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (system, variant, spec_hash, workload, configuration)
);
",
    // Claims are leases of minutes; a store being migrated has none worth keeping.
    "
ALTER TABLE runs ADD COLUMN \"commit\" TEXT NOT NULL DEFAULT '';
DROP TABLE claims;
CREATE TABLE claims (
    system TEXT NOT NULL,
    variant TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    workload TEXT NOT NULL,
    configuration TEXT NOT NULL,
    owner TEXT NOT NULL,
    expires REAL NOT NULL,
    \"commit\" TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (system, variant, spec_hash, workload, configuration, \"commit\")
);
",
    "
CREATE TABLE rounds (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    seed INTEGER NOT NULL,
    reference TEXT
);
ALTER TABLE runs ADD COLUMN round INTEGER;
ALTER TABLE runs ADD COLUMN instructions INTEGER;
",
    // Runs before nodes ran where they were recorded: their node is their host.
    "
ALTER TABLE runs ADD COLUMN cpu_wait REAL;
ALTER TABLE runs ADD COLUMN node TEXT NOT NULL DEFAULT '';
UPDATE runs SET node = host;
ALTER TABLE runs ADD COLUMN source TEXT;
CREATE UNIQUE INDEX runs_by_source ON runs (source) WHERE source IS NOT NULL;
",
    "
ALTER TABLE region_times ADD COLUMN cpu_seconds REAL;
",
    "
CREATE TABLE builds (               -- a build of a set of build-option values
    system TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    \"commit\" TEXT NOT NULL DEFAULT '',
    build_values TEXT NOT NULL,     -- as the build saw them: '-DHEAVY -O2', 'defaults'
    status TEXT NOT NULL CHECK (status IN ('built', 'failed')),
    seconds REAL NOT NULL,          -- the build's own time, apart from the runs'
    log TEXT NOT NULL,              -- the build log's path
    recorded REAL NOT NULL,
    PRIMARY KEY (system, spec_hash, \"commit\", build_values)
);
",
];

/// Why a store cannot be opened: it cannot be written (a read-only file, directory or file
/// system: SQLite answers "read-only" or "unable to open"), or it is not a store.
fn open_error(path: &Path, e: rusqlite::Error) -> Error {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir.filter(|d| !d.is_dir()) {
        return Error::Store(format!(
            "{}: no such directory {} for the results store",
            path.display(),
            dir.display()
        ));
    }
    let cannot_write = matches!(
        &e,
        rusqlite::Error::SqliteFailure(f, _) if matches!(
            f.code,
            rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::CannotOpen
                | rusqlite::ErrorCode::PermissionDenied
        )
    );
    if cannot_write {
        return Error::Store(format!(
            "{}: the results store cannot be written ({}); it needs write permission on the \
             file and on its directory, where SQLite keeps its -wal and -shm files",
            path.display(),
            one_line(&e.to_string())
        ));
    }
    Error::Store(format!(
        "{}: not a knobs results store ({})",
        path.display(),
        one_line(&e.to_string())
    ))
}

impl Store {
    /// Opens a store, creating it (and its schema) when it does not exist.
    pub fn open(path: &Path) -> Result<Store, Error> {
        Self::open_with(path, true)
    }

    /// Whether a file is an SQLite database (a results store, or something to reject as
    /// one), by its header.
    pub fn is_sqlite_file(path: &Path) -> bool {
        let mut magic = [0u8; 16];
        std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
            .is_ok_and(|_| &magic == b"SQLite format 3\0")
    }

    /// Opens an existing store; a missing file is an error rather than an empty store.
    pub fn open_existing(path: &Path) -> Result<Store, Error> {
        if !path.exists() {
            return Err(Error::Store(format!(
                "{}: no such results store",
                path.display()
            )));
        }
        Self::open_with(path, false)
    }

    fn open_with(path: &Path, create: bool) -> Result<Store, Error> {
        let err = db_error(path);
        let conn = Connection::open(path).map_err(|e| open_error(path, e))?;
        conn.busy_timeout(Duration::from_secs(60)).map_err(&err)?;
        let not_a_store = |e: rusqlite::Error| open_error(path, e);
        // Switching to WAL needs a moment of exclusive access and, unlike other statements,
        // may report "busy" without waiting: retry while another process holds the lock.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(not_a_store(e)),
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(&err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(&err)?;
        // A store opened to be written must be writable: SQLite would open a read-only file
        // for reading and fail at the first run stored.
        if create && conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(open_error(
                path,
                rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
                    Some("the file is read-only".into()),
                ),
            ));
        }
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate(create)?;
        Ok(store)
    }

    /// Creates the schema in an empty database, or checks the version of an existing one.
    fn migrate(&mut self, create: bool) -> Result<(), Error> {
        let path = self.path.clone();
        let err = db_error(&path);
        // IMMEDIATE: two processes opening a new store at once must not both create it.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(&err)?;
        let tables: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(&err)?;
        match version {
            0 if tables == 0 && create => {
                tx.execute_batch(SCHEMA).map_err(&err)?;
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('format', 'knobs-results')",
                    [],
                )
                .map_err(&err)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                    .map_err(&err)?;
            }
            0 => {
                return Err(Error::Store(format!(
                    "{}: not a knobs results store",
                    path.display()
                )));
            }
            SCHEMA_VERSION => {}
            v if (1..SCHEMA_VERSION).contains(&v) => {
                for step in &MIGRATIONS[(v - 1) as usize..] {
                    tx.execute_batch(step).map_err(&err)?;
                }
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                    .map_err(&err)?;
            }
            v => {
                return Err(Error::Store(format!(
                    "{}: results store schema version {v}; this knobs reads version {SCHEMA_VERSION}",
                    path.display()
                )));
            }
        }
        tx.commit().map_err(&err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store SQLite may only read is said to be one that cannot be written, not "not a
    /// store": the error SQLite really gives for a read-only file, and (when permissions
    /// apply: not as root) a read-only file and a read-only directory opened for real.
    #[test]
    fn a_read_only_store_is_said_to_be_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        drop(Store::open(&path).unwrap());
        let read_only =
            Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let e = read_only.execute("CREATE TABLE t (x)", []).unwrap_err();
        let said = open_error(&path, e).to_string();
        assert!(said.contains("cannot be written"), "{said}");
        assert!(said.starts_with(&path.display().to_string()), "{said}");
        assert!(!said.contains("not a knobs results store"), "{said}");
        let nowhere = dir.path().join("missing").join("r.db");
        let e = Store::open(&nowhere).err().unwrap().to_string();
        assert!(e.contains("no such directory"), "{e}");
        // SAFETY: geteuid only reads this process's user id.
        if unsafe { libc::geteuid() } != 0 {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
            for f in ["r.db-wal", "r.db-shm"] {
                let _ = std::fs::remove_file(dir.path().join(f));
            }
            mode(&path, 0o444).unwrap();
            let e = Store::open(&path).err().unwrap().to_string();
            assert!(e.contains("cannot be written"), "{e}");
            // Reading it is fine.
            assert!(
                Store::open_existing(&path)
                    .unwrap()
                    .runs(&Selection::default())
                    .unwrap()
                    .is_empty()
            );
            mode(&path, 0o644).unwrap();
            mode(dir.path(), 0o555).unwrap();
            let e = Store::open(&dir.path().join("new.db"))
                .err()
                .unwrap()
                .to_string();
            mode(dir.path(), 0o755).unwrap();
            assert!(e.contains("cannot be written"), "{e}");
        }
    }

    use crate::runner::Outcome;
    use crate::store::test_support::*;

    #[test]
    fn region_times_belong_to_a_variant_and_version_1_stores_migrate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        // A version-1 store, as the first release wrote it.
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO meta VALUES ('format', 'knobs-results');
                 CREATE TABLE specs (hash TEXT PRIMARY KEY, system TEXT NOT NULL, path TEXT NOT NULL,
                     text TEXT NOT NULL, created REAL NOT NULL);
                 CREATE TABLE runs (id INTEGER PRIMARY KEY, system TEXT NOT NULL,
                     spec_hash TEXT NOT NULL REFERENCES specs(hash), workload TEXT NOT NULL,
                     configuration TEXT NOT NULL, host TEXT NOT NULL, started REAL NOT NULL,
                     tool_version TEXT NOT NULL, status TEXT NOT NULL, detail TEXT,
                     wall REAL NOT NULL, user REAL NOT NULL, system_time REAL NOT NULL,
                     max_rss_kib INTEGER NOT NULL, stderr_tail TEXT);
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        let spec = spec();
        let store = Store::open(&path).unwrap();
        store.register_spec(&spec).unwrap();
        store
            .record(&key(&spec, "a,n=1"), now(), &result(1.0, Outcome::Ok), &[])
            .unwrap();
        let instrumented = MeasurementKey {
            inputs: None,
            variant: "configcrusher:x".into(),
            ..key(&spec, "a,n=1")
        };
        let regions = [
            RegionMeasurement {
                region: "r0".into(),
                seconds: 0.25,
                entries: 3,
                cpu_seconds: Some(0.125),
            },
            RegionMeasurement {
                region: "base".into(),
                seconds: 0.5,
                entries: 1,
                cpu_seconds: None,
            },
        ];
        store
            .record(&instrumented, now(), &result(0.8, Outcome::Ok), &regions)
            .unwrap();
        // Black-box reads see only the plain program; the variant sees its own runs.
        assert_eq!(store.runs(&Selection::default()).unwrap().len(), 1);
        let variant = Selection {
            variant: "configcrusher:x".into(),
            ..Default::default()
        };
        let runs = store.runs(&variant).unwrap();
        assert_eq!((runs.len(), runs[0].wall), (1, 0.8));
        let times = store.region_times(&variant).unwrap();
        assert_eq!(times.len(), 2);
        assert_eq!(times[1].0, "a,n=1");
        // Both clocks come back, a missing CPU time as none.
        assert!(times.iter().any(|(_, _, r)| *r == regions[0]));
        assert!(times.iter().any(|(_, _, r)| *r == regions[1]));
        assert!(
            store
                .region_times(&Selection::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn runs_at_commits_are_selected_by_commit_and_version_3_stores_migrate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.db");
        let spec = spec();
        {
            let store = Store::open(&path).unwrap();
            store.register_spec(&spec).unwrap();
            store
                .record(&key(&spec, "a,n=1"), now(), &result(1.0, Outcome::Ok), &[])
                .unwrap();
        }
        // Back to version 3 as it was: no commit column, claims without one.
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "DROP TABLE builds;
                 ALTER TABLE region_times DROP COLUMN cpu_seconds;
                 DROP INDEX runs_by_source;
                 ALTER TABLE runs DROP COLUMN source;
                 ALTER TABLE runs DROP COLUMN node;
                 ALTER TABLE runs DROP COLUMN cpu_wait;
                 ALTER TABLE runs DROP COLUMN instructions;
                 ALTER TABLE runs DROP COLUMN round;
                 DROP TABLE rounds;
                 ALTER TABLE runs DROP COLUMN \"commit\";
                 DROP TABLE claims;
                 CREATE TABLE claims (system TEXT NOT NULL, variant TEXT NOT NULL,
                     spec_hash TEXT NOT NULL, workload TEXT NOT NULL, configuration TEXT NOT NULL,
                     owner TEXT NOT NULL, expires REAL NOT NULL,
                     PRIMARY KEY (system, variant, spec_hash, workload, configuration));
                 PRAGMA user_version = 3;",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let old = store.runs(&Selection::default()).unwrap();
        assert_eq!((old.len(), old[0].commit.as_str()), (1, ""));
        let (first, second) = ("1".repeat(40), "2".repeat(40));
        for (commit, wall) in [(&first, 2.0), (&first, 4.0), (&second, 8.0), (&first, 3.0)] {
            let at = MeasurementKey {
                commit: commit.clone(),
                ..key(&spec, "a,n=1")
            };
            store
                .record(&at, now(), &result(wall, Outcome::Ok), &[])
                .unwrap();
        }
        // Without a commit: only the run without history, as before.
        let plain = Selection::of(&spec, "real");
        let before = store.runs(&plain).unwrap();
        assert_eq!(before.len(), 1);
        assert_eq!(
            before[0].node, before[0].host,
            "older runs ran on their host"
        );
        let at_first = store
            .summaries(&plain.clone().at_commit(&first), Metric::Wall)
            .unwrap();
        assert_eq!(at_first.len(), 1);
        assert_eq!(at_first[0].runs, 3);
        assert_eq!(at_first[0].summary.as_ref().unwrap().median, 3.0);
        let runs = store.runs(&plain.clone().at_commit(&second)).unwrap();
        assert_eq!((runs.len(), runs[0].commit.as_str()), (1, second.as_str()));
        assert_eq!(
            store.commits(&plain).unwrap(),
            [first.clone(), second.clone()]
        );
        // The migration made the builds table.
        assert!(store.builds(&plain).unwrap().is_empty());
        // Claims are per commit: one commit's configuration does not block another's.
        let claim = |commit: &str, owner: &str| {
            let at = MeasurementKey {
                commit: commit.to_string(),
                ..key(&spec, "a,n=1")
            };
            store.claim(&at, owner, now() + 60.0).unwrap()
        };
        assert!(claim(&first, "p1"));
        assert!(claim(&second, "p2"));
        assert!(!claim(&first, "p2"));
    }

    #[test]
    fn rejects_foreign_files_and_newer_schemas() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.db");
        std::fs::write(
            &text,
            "this is not sqlite at all, just text.......................",
        )
        .unwrap();
        let e = Store::open(&text).err().unwrap();
        assert!(e.to_string().contains("not a knobs results store"), "{e}");
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x INTEGER);")
            .unwrap();
        let e = Store::open(&other).err().unwrap();
        assert!(e.to_string().contains("not a knobs results store"), "{e}");
        let newer = dir.path().join("newer.db");
        Store::open(&newer).unwrap();
        Connection::open(&newer)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let e = Store::open(&newer).err().unwrap();
        assert!(e.to_string().contains("schema version 99"), "{e}");
        let e = Store::open_existing(&dir.path().join("missing.db"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("no such results store"), "{e}");
    }
}
