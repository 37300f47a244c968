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
//! A spec with build options also keeps, per set of build-option values, its build: whether
//! it built and how long that took (`builds`), apart from the runs' times.
//!
//! The schema is versioned with `PRAGMA user_version`; `SCHEMA` below is the current
//! version, and `MIGRATIONS` bring older stores up to it.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use serde::Serialize;

use crate::Error;
use crate::spec::{Metric, SystemSpec};
use crate::stats::Summary;

mod builds;
mod claims;
mod metric;
mod read;
mod regions;
mod schema;
#[cfg(test)]
mod test_support;
mod write;

pub use builds::{BuildsSummary, StoredBuild};
pub use claims::{HeldClaim, owner_alive, owner_of_this_process};
pub use metric::{CPU_BOUND, auto_metric};
pub use schema::SCHEMA_VERSION;

/// The store's file name beside its spec when no other is given.
pub const DEFAULT_FILE: &str = "knobs.db";

/// The store a spec's measurements go to by default: `knobs.db` beside the spec file.
pub fn default_path(spec_file: &Path) -> PathBuf {
    crate::spec::beside(spec_file, DEFAULT_FILE)
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
    pub fn path(&self) -> &Path {
        &self.path
    }
}
