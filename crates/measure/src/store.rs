//! The results store: every repetition of every measured configuration, in SQLite.
//!
//! One row per run (`runs`), keyed by system, spec hash, workload and configuration (its
//! compact text, `a,b,level=6`), with the host, the time, the tool version, how the run
//! ended and its metrics. `specs` keeps the text of each spec measured under, so a store
//! alone can be turned back into a dataset. Each run is committed as it finishes; the
//! database is in WAL mode with a busy timeout, so a killed measurement loses nothing and
//! several processes can write at once.
//!
//! A run may also carry per-region times (`region_times`), written by an instrumented
//! program, and belongs to a *variant* of the system: `""` for the program as the spec runs
//! it, or e.g. `configcrusher:<plan>` for an instrumented build. Black-box data are the
//! runs of variant `""`.
//!
//! A run of a spec with `[history]` also names the *commit* whose build it ran (the full
//! id); runs of the program as `[run]` names it have commit `""`. Reads select one commit,
//! `""` by default, so the history never mixes into a configuration's measurements.
//!
//! The schema is versioned with `PRAGMA user_version`; `SCHEMA` below is the current
//! version, and `MIGRATIONS` bring older stores up to it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior, params};
use serde::Serialize;
use space::{Configuration, Dataset};

use crate::Error;
use crate::runner::RunResult;
use crate::spec::{Metric, SystemSpec};
use crate::stats::Summary;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 7;

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
";

/// Statements taking a store of version `i + 1` to version `i + 2`.
const MIGRATIONS: [&str; 6] = [
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
];

/// The share of its wall time a configuration's deciding run spends on a CPU (user +
/// system) for `metric = "auto"` to read its CPU time: at least most of it (a CPU-bound program on a
/// machine with a core to spare: 93–100 % here), at most one CPU's worth (no threads in
/// parallel).
pub const CPU_BOUND: (f64, f64) = (0.8, 1.1);

/// What `metric = "auto"` reads for a configuration whose deciding run used `cpu` seconds
/// of user + system time and waited `cpu_wait` seconds for a CPU in `wall` seconds: CPU
/// time when it was on a CPU or waiting for one nearly all the time, and wanted no more than
/// one at once ([`CPU_BOUND`]: the bounds apply to `cpu + cpu_wait`, so that threads in
/// parallel on a loaded machine, where they take turns, still count as parallel), and slept
/// no longer than it was on a CPU; wall time otherwise. CPU time leaves out the time a run waits
/// for a CPU another program holds, so it is far steadier on a shared machine; it would miss
/// sleeps, I/O waits and a second thread's work, which is why such configurations keep wall
/// time. On a quiet machine both are the same for the first kind, so the model reads one
/// quantity: the time the configuration takes.
pub fn auto_metric(cpu: f64, cpu_wait: f64, wall: f64) -> Metric {
    let (lo, hi) = CPU_BOUND;
    let wall = wall.max(1e-9);
    let demand = (cpu + cpu_wait) / wall;
    // Time neither on a CPU nor waiting for one: sleeps and I/O. On a saturated machine a
    // short sleeper's wall time is mostly waits for a CPU after it wakes, so it must also
    // have slept no longer than it computed.
    let slept = (wall - cpu - cpu_wait).max(0.0);
    if (lo..=hi).contains(&demand) && slept <= cpu {
        Metric::Cpu
    } else {
        Metric::Wall
    }
}

/// How runs are read against the reference configuration measured in every round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Drift {
    /// As measured.
    #[default]
    None,
    /// Each round scaled by how fast the reference ran in it (to the reference's median):
    /// seconds, with the drift between rounds taken out.
    Rounds,
    /// As multiples of the reference's time in the same round: unitless, and so free of
    /// drift between sessions too.
    Relative,
}

/// Identifies a configuration's measurements.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MeasurementKey {
    pub system: String,
    /// `""` for the program as the spec runs it; another name for a derived build.
    pub variant: String,
    pub spec_hash: String,
    pub workload: String,
    /// Compact text (`ConfigSpace::format_configuration`).
    pub configuration: String,
    /// The `[history]` commit whose build ran (full id); `""` for the spec's own program.
    pub commit: String,
    /// Digest of the workload's files as measured (`SystemSpec::workload_digest`); `None`
    /// when the workload lists no files. Stored with each run, not part of the identity.
    pub inputs: Option<String>,
}

/// One stored run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredRun {
    pub id: i64,
    pub system: String,
    pub variant: String,
    pub spec_hash: String,
    pub workload: String,
    pub configuration: String,
    pub host: String,
    pub started: f64,
    pub tool_version: String,
    pub status: String,
    pub detail: Option<String>,
    pub wall: f64,
    pub user: f64,
    pub system_time: f64,
    pub max_rss_kib: i64,
    pub stderr_tail: Option<String>,
    /// The workload's files' digest when it ran (`None`: no files, or an older store).
    pub inputs: Option<String>,
    /// The `[history]` commit whose build ran; `""` for the spec's own program.
    pub commit: String,
    /// The round it was measured in (`None`: before rounds).
    pub round: Option<i64>,
    /// Instructions executed, when counted.
    pub instructions: Option<i64>,
    /// Seconds it waited for a CPU (`None`: measured before knobs recorded it).
    pub cpu_wait: Option<f64>,
    /// The machine it ran on: the Slurm node, or the host for local runs.
    pub node: String,
    /// Where a run made elsewhere was ingested from (`slurm:JOBNAME:TASK:INDEX`).
    pub source: Option<String>,
}

impl StoredRun {
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }

    pub fn metric(&self, metric: Metric) -> f64 {
        metric.of_run(
            self.wall,
            self.user,
            self.system_time,
            self.max_rss_kib as f64,
            self.instructions.map(|n| n as u64),
        )
    }

    /// User + system time over wall time.
    pub fn cpu_share(&self) -> f64 {
        (self.user + self.system_time) / self.wall.max(1e-9)
    }

    /// What `auto` reads for a configuration whose deciding run this is.
    pub fn auto_metric(&self) -> Metric {
        auto_metric(
            self.user + self.system_time,
            self.cpu_wait.unwrap_or(0.0),
            self.wall,
        )
    }

    /// How many CPUs it was on or waiting for, on average over its wall time.
    pub fn cpu_demand(&self) -> f64 {
        self.cpu_share() + self.cpu_wait_share()
    }

    /// The share of its wall time it waited for a CPU.
    pub fn cpu_wait_share(&self) -> f64 {
        self.cpu_wait.unwrap_or(0.0) / self.wall.max(1e-9)
    }
}

/// A region's time in one run (from an instrumented program).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegionMeasurement {
    pub region: String,
    /// Self time in seconds.
    pub seconds: f64,
    pub entries: u64,
    /// Self time by the threads' CPU clocks (user + system), in seconds, when the runtime
    /// read them.
    pub cpu_seconds: Option<f64>,
}

/// A spec something was measured under.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredSpec {
    pub hash: String,
    pub system: String,
    pub path: String,
    pub text: String,
    pub created: f64,
}

/// Which measurements to read. The default variant `""` is the program as the spec runs it,
/// and the default commit `""` is that program too (not a `[history]` build).
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub system: Option<String>,
    pub variant: String,
    pub spec_hash: Option<String>,
    pub workload: Option<String>,
    /// The `[history]` commit (full id) whose runs to read; `""`: runs without history.
    pub commit: String,
}

impl Selection {
    /// The runs of one spec and workload (the program as the spec runs it, no commit).
    pub fn of(spec: &SystemSpec, workload: &str) -> Selection {
        Selection {
            system: Some(spec.name.clone()),
            variant: String::new(),
            spec_hash: Some(spec.hash.clone()),
            workload: Some(workload.to_string()),
            commit: String::new(),
        }
    }

    /// The same selection, of the runs of the build of `commit` (a full id).
    pub fn at_commit(self, commit: &str) -> Selection {
        Selection {
            commit: commit.to_string(),
            ..self
        }
    }
}

/// A configuration's measurements, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigurationSummary {
    pub configuration: String,
    pub runs: usize,
    pub failed: usize,
    pub summary: Option<Summary>,
    /// What its values are: the metric asked for, or for `auto` what its deciding run says
    /// (`cpu` when it kept one CPU busy, `wall` when it slept, waited or ran threads).
    pub metric: Metric,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn db_error(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::Store(format!("{}: {}", path.display(), one_line(&e.to_string())))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where a run was made: the host and node it ran on, and for a run made elsewhere and
/// ingested, its source (a spool file), under which it is stored once.
#[derive(Clone, Debug)]
pub struct Origin {
    pub host: String,
    pub node: String,
    pub source: Option<String>,
}

/// A round's runs on one node (round id, node), as drift correction scales them.
type RoundOnNode = (i64, String);

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// This machine's host name.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Store {
    /// Opens a store, creating it (and its schema) when it does not exist.
    pub fn open(path: &Path) -> Result<Store, Error> {
        Self::open_with(path, true)
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
        let conn = Connection::open(path).map_err(&err)?;
        conn.busy_timeout(Duration::from_secs(60)).map_err(&err)?;
        let not_a_store = |e: rusqlite::Error| {
            Error::Store(format!(
                "{}: not a knobs results store ({})",
                path.display(),
                one_line(&e.to_string())
            ))
        };
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

    pub fn path(&self) -> &Path {
        &self.path
    }

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
                    result.system,
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

    /// What `metric` reads in the selection's runs, and why: itself, or for `auto` what each
    /// configuration's deciding run says ([`Store::deciding_runs`], [`auto_metric`]): `Cpu`
    /// or `Wall` when all agree, `Auto` (each configuration its own) when they differ.
    pub fn resolve_metric(
        &self,
        selection: &Selection,
        metric: Metric,
    ) -> Result<(Metric, String), Error> {
        if metric != Metric::Auto {
            return Ok((metric, format!("{} (as the spec says)", metric.name())));
        }
        let firsts = self.deciding_runs(selection)?;
        if firsts.is_empty() {
            return Ok((Metric::Wall, "wall (auto: nothing measured yet)".into()));
        }
        let cpu = firsts
            .values()
            .filter(|r| r.auto_metric() == Metric::Cpu)
            .count();
        let (lo, hi) = CPU_BOUND;
        let share = |r: &StoredRun| r.cpu_share();
        let low = firsts.values().min_by(|a, b| share(a).total_cmp(&share(b)));
        let high = firsts.values().max_by(|a, b| share(a).total_cmp(&share(b)));
        let (low, high) = (low.expect("one"), high.expect("one"));
        let parallel = firsts
            .values()
            .max_by(|a, b| a.cpu_demand().total_cmp(&b.cpu_demand()))
            .expect("one");
        let odd = if parallel.cpu_demand() > hi {
            format!(
                "`{}` ran on or waited for {:.2} CPUs at once: threads in parallel",
                parallel.configuration,
                parallel.cpu_demand()
            )
        } else {
            let off = firsts
                .values()
                .filter(|r| r.auto_metric() == Metric::Wall)
                .min_by(|a, b| share(a).total_cmp(&share(b)))
                .unwrap_or(low);
            match off.cpu_wait {
                Some(_) => format!(
                    "`{}` used a CPU {:.0} % of its wall time and waited for one {:.0} %: it \
                     sleeps or waits",
                    off.configuration,
                    share(off) * 100.0,
                    off.cpu_wait_share() * 100.0
                ),
                None => format!(
                    "`{}` used a CPU {:.0} % of its wall time: it sleeps, waits or lacked a CPU",
                    off.configuration,
                    share(off) * 100.0
                ),
            }
        };
        let waited = firsts
            .values()
            .map(StoredRun::cpu_wait_share)
            .fold(0.0, f64::max);
        Ok(if cpu == firsts.len() {
            (
                Metric::Cpu,
                format!(
                    "cpu (auto: user + system reached {:.0}–{:.0} % of wall time in every \
                     configuration{})",
                    share(low) * 100.0,
                    share(high) * 100.0,
                    if waited >= 0.01 {
                        format!(
                            ", the rest waiting for a CPU (up to {:.0} %)",
                            waited * 100.0
                        )
                    } else {
                        String::new()
                    }
                ),
            )
        } else if cpu == 0 {
            (Metric::Wall, format!("wall (auto: {odd})"))
        } else {
            (
                Metric::Auto,
                format!(
                    "cpu for the {cpu} configurations that kept one CPU busy ({:.0}–{:.0} % of \
                     wall time), wall for the other {} (auto: {odd})",
                    lo * 100.0,
                    hi * 100.0,
                    firsts.len() - cpu
                ),
            )
        })
    }

    /// Per configuration, the successful run that decides what `auto` reads for it: the one
    /// that spent the largest share of its wall time on a CPU. A busy machine only lowers a
    /// run's share, so one run with a CPU to itself is enough to tell a CPU-bound
    /// configuration, and every session of a spec comes to the same decision.
    pub fn deciding_runs(
        &self,
        selection: &Selection,
    ) -> Result<BTreeMap<String, StoredRun>, Error> {
        let mut deciding: BTreeMap<String, StoredRun> = BTreeMap::new();
        for run in self.runs(selection)?.into_iter().filter(StoredRun::is_ok) {
            match deciding.get(&run.configuration) {
                Some(best) if best.cpu_share() >= run.cpu_share() => {}
                _ => {
                    deciding.insert(run.configuration.clone(), run);
                }
            }
        }
        Ok(deciding)
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

    /// `auto` by a run's seconds on a CPU, waiting for one, and in all.
    #[test]
    fn auto_reads_cpu_time_only_for_one_busy_cpu() {
        // Alone, and sharing its core: on a CPU or waiting for one all the time.
        assert_eq!(auto_metric(0.50, 0.0, 0.51), Metric::Cpu);
        assert_eq!(auto_metric(0.30, 0.60, 0.92), Metric::Cpu);
        // Asleep most of the time.
        assert_eq!(auto_metric(0.01, 0.0, 0.30), Metric::Wall);
        // A short sleep on a saturated machine, then waiting long for a CPU: 85 % on a CPU
        // or waiting, but it slept 24 times as long as it computed.
        assert_eq!(auto_metric(0.002, 0.27, 0.32), Metric::Wall);
        // Two threads taking turns on one CPU: one CPU's worth of work, two CPUs' demand.
        assert_eq!(auto_metric(1.0, 0.6, 1.0), Metric::Wall);
    }

    fn result(wall: f64, outcome: Outcome) -> RunResult {
        RunResult {
            outcome,
            wall,
            user: wall / 2.0,
            system: 0.01,
            cpu_wait: 0.0,
            max_rss_kib: 1000,
            instructions: None,
            stderr_tail: String::new(),
            escaped: Vec::new(),
        }
    }

    fn spec() -> SystemSpec {
        SystemSpec::parse(
            "name = \"demo\"\n[run]\nprogram = \"true\"\nargs = [\"{options}\"]\n[[option]]\nname = \"a\"\non = [\"-a\"]\n[[option]]\nname = \"n\"\nvalues = [1, 2]\narg = [\"-n{value}\"]\n",
            Path::new("/tmp/demo.toml"),
        )
        .unwrap()
    }

    fn key(spec: &SystemSpec, configuration: &str) -> MeasurementKey {
        MeasurementKey {
            inputs: None,
            commit: String::new(),
            system: spec.name.clone(),
            variant: String::new(),
            spec_hash: spec.hash.clone(),
            workload: "real".into(),
            configuration: configuration.into(),
        }
    }

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
                "ALTER TABLE region_times DROP COLUMN cpu_seconds;
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
