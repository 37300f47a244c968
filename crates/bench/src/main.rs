//! `knobs-bench`: runs the benchmarks declared in `bench/subjects.toml` and records their
//! results under `docs/results/rows/` (see the library's documentation, `crates/bench/src/lib.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use bench::rows;
use bench::run::{Settings, shell_quote};
use bench::subjects::{SUBJECTS_FILE, SubjectsFile};
use bench::summary;
use clap::Parser;

/// Runs knobs' benchmarks as declared in bench/subjects.toml: every approach on every subject
/// through `knobs … --json`, one row per approach in docs/results/rows/DATE-COMMIT-SUBJECT.jsonl,
/// and docs/results/rows/latest.md regenerated from the newest rows.
#[derive(Parser)]
#[command(name = "knobs-bench", version)]
struct Args {
    /// Subjects to run (default: every declared subject).
    subjects: Vec<String>,
    /// Only these approaches, of those each subject declares (comma-separated): brute-force,
    /// crush, comprex, splat, splat-delayed, family, blackbox (or one SAMPLE/LEARNER run),
    /// overhead, repeat, or the name of a subject's extra run.
    /// The brute force runs first whenever an error is measured against it.
    #[arg(long, value_delimiter = ',')]
    approaches: Option<Vec<String>>,
    /// Stop a step (an approach on a subject) still running after this many seconds; its
    /// row records that it did not finish.
    #[arg(long)]
    step_timeout: Option<u64>,
    /// Every subject built from a pinned source (the real programs), with the subjects named.
    #[arg(long)]
    real: bool,
    /// List the declared subjects and exit.
    #[arg(long)]
    list: bool,
    /// The knobs binary (default: `cargo build --release -p knobs`, then target/release/knobs).
    #[arg(long)]
    knobs: Option<PathBuf>,
    /// Where the rows and latest.md go (default: docs/results/rows, and README.md's headline
    /// table is regenerated; with --quick: target/bench/quick-results).
    #[arg(long)]
    results_dir: Option<PathBuf>,
    /// Small workloads (the subject's `quick.workload`), 2 repetitions, the first black-box
    /// seed, a shorter Table 7: minutes, not hours. Its rows say so and never reach the
    /// summary.
    #[arg(long)]
    quick: bool,
    /// Stores, models, builds and logs go to WORK_DIR/SUBJECT/ (emptied first unless --resume).
    #[arg(long, default_value = "target/bench")]
    work_dir: PathBuf,
    /// Keep WORK_DIR/SUBJECT/ from an earlier run: measurements already in its stores are
    /// reused (the rows then say so in the measurement reports).
    #[arg(long)]
    resume: bool,
    /// Measure the ground truth on this sample instead of the subject's (e.g. `random:64`;
    /// recorded in every row).
    #[arg(long)]
    ground_truth: Option<String>,
    /// Measure this metric (`knobs measure --metric`) for the ground truth, the repetition and
    /// the black-box runs, e.g. `instructions`: a yardstick without the machine's noise, so a
    /// learner's own error shows. The white-box approaches take it too (`instructions`: their
    /// counting builds, compared with the counted ground truth of the plain counting build);
    /// Table 7 does not apply. Rows go to docs/results/rows/metric-METRIC/ by default.
    #[arg(long)]
    metric: Option<String>,
    /// Each step measures in a session of its own, one after another. Default: the ground
    /// truth, its repetition and the white-box approaches measure in rounds interleaved with
    /// each other (each step's command once per round, one more run of each configuration
    /// each time), so a machine's drift over the run falls on all of them alike.
    #[arg(long)]
    sessions: bool,
    /// Only regenerate latest.md from the rows in the results directory.
    #[arg(long)]
    summary_only: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("knobs-bench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Regenerates latest.md from the rows, and README.md's headline tables when given (README.md
/// and the directory of the timed rows).
fn write_summaries(
    results_dir: &Path,
    readme: Option<(&Path, &Path)>,
    order: &[String],
    quick: bool,
) -> Result<()> {
    let path = summary::write_summary(results_dir, order, quick)?;
    eprintln!("knobs-bench: wrote {}", path.display());
    if let Some((readme, rows_dir)) = readme {
        summary::write_readme_table(readme, rows_dir, order)?;
        eprintln!("knobs-bench: updated {}", readme.display());
    }
    Ok(())
}

/// The workspace root (this crate is crates/bench).
fn workspace_root() -> Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize()
        .with_context(|| format!("no workspace at {}", root.display()))
}

/// Builds knobs in release mode and returns its path.
fn build_knobs(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("knobs-bench: cargo build --release -p knobs");
    let status = Command::new(&cargo)
        .args(["build", "--release", "-p", "knobs"])
        .current_dir(root)
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("cargo build --release -p knobs failed ({status})");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map_or_else(|| root.join("target"), |t| root.join(t));
    Ok(target.join("release/knobs"))
}

/// Where the rows go: `--results-dir`, or by mode (quick rows apart, counted rows in
/// `metric-METRIC/`).
fn results_dir(args: &Args) -> PathBuf {
    match (&args.results_dir, &args.metric, args.quick) {
        (Some(dir), _, _) => dir.clone(),
        (None, _, true) => PathBuf::from("target/bench/quick-results"),
        (None, Some(metric), false) => {
            Path::new(rows::RESULTS_DIR).join(format!("metric-{metric}"))
        }
        (None, None, false) => PathBuf::from(rows::RESULTS_DIR),
    }
}

fn run(args: Args) -> Result<bool> {
    let root = workspace_root()?;
    let file = SubjectsFile::load(&root.join(SUBJECTS_FILE))?;
    let order: Vec<String> = file.subjects.iter().map(|s| s.name.clone()).collect();
    let results_dir = root.join(results_dir(&args));
    // README.md's tables come from docs/results/rows and its counted rows only.
    let rows_dir = root.join(rows::RESULTS_DIR);
    let readme_path = root.join("README.md");
    let readme = ((results_dir == rows_dir || results_dir == rows_dir.join(summary::COUNTED_DIR))
        && !args.quick)
        .then_some((readme_path.as_path(), rows_dir.as_path()));
    if args.list {
        print!("{}", file.listing());
        return Ok(true);
    }
    if args.summary_only {
        write_summaries(&results_dir, readme, &order, args.quick)?;
        return Ok(true);
    }
    let selected = file.select(&args.subjects, args.real, args.approaches.as_deref())?;
    let knobs = match &args.knobs {
        Some(k) => root.join(k),
        None => build_knobs(&root)?,
    };
    let runner = std::env::args()
        .map(|a| shell_quote(&a))
        .collect::<Vec<_>>()
        .join(" ");
    let info = bench::run::run_info(&root, &knobs, runner)?;
    let settings = Settings {
        root: root.clone(),
        knobs,
        results_dir: results_dir.clone(),
        work_dir: root.join(&args.work_dir),
        resume: args.resume,
        ground_truth: args.ground_truth.clone(),
        only: args.approaches.clone(),
        command_line: info.runner.clone(),
        quick: args.quick,
        metric: args.metric.clone(),
        step_timeout: args.step_timeout.map(std::time::Duration::from_secs),
        sessions: args.sessions,
    };
    let failed = bench::run::run_subjects(&settings, &selected, &info)?;
    write_summaries(&results_dir, readme, &order, args.quick)?;
    if !failed.is_empty() {
        eprintln!("knobs-bench: failed: {}", failed.join("; "));
    }
    Ok(failed.is_empty())
}
