//! The recorded results: one JSON object per approach and run (JSON Lines, one file per
//! run and subject under `docs/results/rows/`), with where and on what each run happened.
//! Their markdown rendering is [`crate::summary`].

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::subjects::Source;

/// The row format's version; bump it when a field changes meaning.
/// 2: `mape_percent` is on the configurations the approach did not measure for every
/// approach, `mape_all_percent` on all (schema 1: white-box `mape_percent` was on all).
/// 4: a configuration's measured value is the mean of its fastest half of runs (the median
/// before), in the measurement seconds, the ground truth and the models alike.
pub const SCHEMA: u32 = 4;

/// Where the rows go, relative to the workspace root.
pub const RESULTS_DIR: &str = "docs/results/rows";

/// The approach name of a run's comparison row ([`crate::compare`]).
pub const COMPARISON: &str = "comparison";

/// Whether a step gave numbers.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    #[default]
    Ok,
    /// It cannot apply to this subject (`reason` says why).
    NotApplicable,
    /// It failed (`reason` holds the error).
    Failed,
}

/// Where and on what a run happened.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Machine {
    pub hostname: String,
    /// `model name` of /proc/cpuinfo.
    pub cpu: String,
    /// Logical processors.
    pub cores: u64,
    pub memory_mib: u64,
    pub kernel: String,
}

impl Machine {
    pub fn this() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name").then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let cores = cpuinfo
            .lines()
            .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
            .count() as u64;
        let cores = if cores > 0 {
            cores
        } else {
            std::thread::available_parallelism().map_or(0, |n| n.get() as u64)
        };
        let memory_mib = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024);
        Machine {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpu,
            cores,
            memory_mib,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        }
    }
}

/// The 1, 5 and 15 minute load averages (/proc/loadavg).
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = text
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(f64::NAN));
    [
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
    ]
}

/// The source tree's commit, and whether the tree differs from it (tracked files only).
pub fn git_commit(root: &Path) -> (String, bool) {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    (commit, dirty)
}

/// Now, as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format_utc(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// What every row of one run shares.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RunInfo {
    /// The run's id: its file's name without `.jsonl`.
    pub run: String,
    /// When the run started (UTC).
    pub started: String,
    pub commit: String,
    /// The working tree had changes to tracked files.
    pub dirty: bool,
    pub machine: Machine,
    /// `knobs --version` and the binary run, with its SHA-256 and modification time (UTC):
    /// the binary may have been built from another tree than `commit` (`--knobs PATH`).
    pub knobs_version: String,
    pub knobs: String,
    pub knobs_sha256: String,
    pub knobs_modified: String,
    /// The runner's own command line.
    pub runner: String,
}

/// One approach on one subject in one run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Row {
    pub schema: u32,
    #[serde(flatten)]
    pub info: RunInfo,
    pub subject: String,
    pub approach: String,
    /// When this approach started (UTC).
    pub date: String,
    pub load_start: [f64; 3],
    pub load_end: [f64; 3],
    pub spec: String,
    pub workload: Option<String>,
    /// Run with `--quick` (small workload, fewer repetitions): never in the summary.
    pub quick: bool,
    pub status: Status,
    /// Why it does not apply, or the error it failed with.
    pub reason: Option<String>,
    pub source: Option<Source>,
    /// The ground truth's sample (`all`: brute force), what the error is measured against.
    pub ground_truth: Option<String>,
    /// Configurations the approach measured (a mean over seeds for the black-box ones).
    pub configurations: Option<f64>,
    /// Valid configurations of the space.
    pub total_configurations: Option<f64>,
    pub lower_bound: Option<f64>,
    /// Σ over the configurations measured of their value (fastest-half mean, metric seconds).
    pub measurement_seconds: Option<f64>,
    /// Wall time of the whole step (analysis, builds and measuring included).
    pub elapsed_seconds: f64,
    /// MAPE against the ground truth on the configurations the approach did not measure
    /// (the papers' metric), %; `None` when it measured them all.
    pub mape_percent: Option<f64>,
    /// MAPE against the ground truth on every configuration, %.
    #[serde(default)]
    pub mape_all_percent: Option<f64>,
    /// Seconds of the approach's own analysis (static or dynamic taint analysis,
    /// exploration, learning), as it reports them; what it is is in `details.analysis`.
    pub analysis_seconds: Option<f64>,
    /// Terms of the global model (a mean over seeds), and code regions with local models.
    pub terms: Option<f64>,
    pub regions: Option<f64>,
    /// Every command the step ran, as a shell would run it.
    pub commands: Vec<String>,
    /// Everything else the approach reports (regions, RC, overhead ratios, per-seed
    /// results, …).
    pub details: BTreeMap<String, Value>,
}

impl Row {
    pub fn detail(&mut self, key: &str, value: impl Serialize) {
        self.details.insert(
            key.to_string(),
            serde_json::to_value(value).expect("serialisable"),
        );
    }

    /// A number among the details, `None` when absent or not a number.
    pub fn detail_number(&self, key: &str) -> Option<f64> {
        self.details.get(key).and_then(Value::as_f64)
    }
}

/// Appends a row to a JSON Lines file.
pub fn append(path: &Path, row: &Row) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut line = serde_json::to_string(row)?;
    line.push('\n');
    f.write_all(line.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// A fresh file name for a run's rows: `DATE-COMMIT-SUBJECT.jsonl`, with `-2`, `-3`, … when
/// that run already has one.
pub fn run_file(dir: &Path, date: &str, commit: &str, subject: &str) -> PathBuf {
    let short = &commit[..commit.len().min(7)];
    let stem = format!("{}-{short}-{subject}", &date[..date.len().min(10)]);
    let mut path = dir.join(format!("{stem}.jsonl"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{stem}-{n}.jsonl"));
        n += 1;
    }
    path
}

/// Every row of every `*.jsonl` in `dir`, in file order then line order.
pub fn read_all(dir: &Path) -> Result<Vec<Row>> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    files.sort();
    let mut rows = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            rows.push(
                serde_json::from_str(line).with_context(|| format!("{}:{}", f.display(), i + 1))?,
            );
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_795_469_374), "2026-11-23T21:29:34Z");
    }

    #[test]
    fn file_names_do_not_clash() {
        let dir = tempfile::tempdir().unwrap();
        let a = run_file(dir.path(), "2026-11-23T21:00:00Z", "9b62c418101c", "gzip");
        assert_eq!(a.file_name().unwrap(), "2026-11-23-9b62c41-gzip.jsonl");
        std::fs::write(&a, "").unwrap();
        let b = run_file(dir.path(), "2026-11-23T22:00:00Z", "9b62c418101c", "gzip");
        assert_eq!(b.file_name().unwrap(), "2026-11-23-9b62c41-gzip-2.jsonl");
    }
}
