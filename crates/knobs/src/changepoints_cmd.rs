//! `knobs changepoints`: flags for [`changepoints::detect`] over its sources, the synthetic
//! evaluation grid, and the rendering of a detection.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use changepoints::evaluation::{self, GridPoint, GridRow, TOLERANCE};
use changepoints::likelihood::Threshold;
use changepoints::regions::{RegionSettings, RegionsReport};
use changepoints::store::HistoryDetection;
use changepoints::synthetic::{SyntheticSettings, SyntheticSource, SyntheticSystem};
use changepoints::{Detection, RecordedHistory, Settings, detect};
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::Outcome;

#[derive(Subcommand)]
pub enum ChangepointsCommand {
    /// Detect change points in a spec's [history]: commits are built on demand (cached),
    /// configurations measured at commits through the results store; a killed detection
    /// resumes from what was measured.
    #[command(
        after_help = "Example:\n  knobs changepoints detect --spec examples/xz-history/knobs.toml --max-measurements 400 --plot xz.svg"
    )]
    Detect(DetectArgs),
    /// Replay a recorded history (CSV: commit, options…, performance), as the paper replays
    /// its pre-study: requested configurations that were not recorded are replaced by the
    /// closest recorded ones.
    #[command(after_help = "Example:\n  knobs changepoints replay history.csv --threshold 10%")]
    Replay(ReplayArgs),
    /// Generate a synthetic system with known change points (§4.1.4), detect, and score.
    #[command(
        after_help = "Example:\n  knobs changepoints synthetic --options 16 --commits 2500 --change-points 5\n  \
        knobs changepoints synthetic --system system.json"
    )]
    Synthetic(SyntheticArgs),
    /// Run the synthetic grid of Table 1 (or its quick subset) and print F1, precision,
    /// recall, iterations and measurement effort per setting.
    Grid(GridArgs),
    /// Score associations found by another tool against a synthetic system: JSON with
    /// `associations` as [commit, option] pairs (option −1: all configurations; a commit
    /// alone: a change no option explains).
    Score(ScoreArgs),
}

#[derive(Args)]
pub struct ScoreArgs {
    system: PathBuf,
    found: PathBuf,
}

/// The search's parameters (every default is the paper's).
#[derive(Args, Clone)]
pub struct SearchArgs {
    /// Eq. 3's threshold: a relative change (`10%` or `0.1`) or an absolute one (`abs:2.5`,
    /// in the measurement's unit).
    #[arg(long, default_value = "10%")]
    threshold: String,
    /// Configurations of the initial sample (distance-based).
    #[arg(long, default_value_t = 20)]
    initial_configurations: usize,
    /// Share of the commits each configuration starts with (drawn per configuration).
    #[arg(long, default_value_t = 0.03)]
    commit_share: f64,
    /// New measurements per iteration.
    #[arg(long, default_value_t = 200)]
    measurements: usize,
    /// N_CPL of eq. 6 (the reference implementation uses 5).
    #[arg(long, default_value_t = 3.0)]
    peak_factor: f64,
    /// N_influence of eq. 7.
    #[arg(long, default_value_t = 1.0)]
    influence_factor: f64,
    /// New configurations explored per iteration.
    #[arg(long, default_value_t = 75)]
    explore_configurations: usize,
    #[arg(long, default_value_t = 30)]
    max_iterations: usize,
    /// Stop after this many measurements in all.
    #[arg(long)]
    max_measurements: Option<usize>,
    /// Read option shares from a least-squares refit on the options the LASSO kept (a
    /// relaxed LASSO) instead of its own shrunk coefficients (the paper).
    #[arg(long)]
    refit: bool,
    /// LASSO coefficients of either sign, their absolute values read as influence (the
    /// paper's literal reading; by default they are held non-negative).
    #[arg(long)]
    signed: bool,
    /// Every choice where the reference implementation differs from the paper: peak factor
    /// 5, no intercept rule, random commit exploration.
    #[arg(long)]
    reference_choices: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl SearchArgs {
    fn settings(&self) -> Result<Settings> {
        let mut s = Settings {
            threshold: parse_threshold(&self.threshold)?,
            initial_configurations: self.initial_configurations,
            commit_share: self.commit_share,
            max_iterations: self.max_iterations,
            max_measurements: self.max_measurements.unwrap_or(usize::MAX),
            seed: self.seed,
            ..Settings::default()
        };
        s.acquisition.measurements = self.measurements;
        s.acquisition.explore_configurations = self.explore_configurations;
        s.association.factor = self.influence_factor;
        s.association.refit = self.refit;
        s.association.positive = !self.signed;
        if self.reference_choices {
            s = s.reference();
        }
        // Explicit flags win over the reference's choices.
        if self.peak_factor != 3.0 || !self.reference_choices {
            s.peak_factor = self.peak_factor;
        }
        if !(s.commit_share > 0.0 && s.commit_share <= 1.0) {
            bail!("--commit-share must be in (0, 1], not {}", s.commit_share);
        }
        if s.max_iterations == 0 || s.acquisition.measurements == 0 {
            bail!("--max-iterations and --measurements must be at least 1");
        }
        Ok(s)
    }
}

fn parse_threshold(text: &str) -> Result<Threshold> {
    let bad = || anyhow::anyhow!("--threshold `{text}`: expected e.g. 10%, 0.1 or abs:2.5");
    let t = if let Some(abs) = text.strip_prefix("abs:") {
        Threshold::Absolute(abs.trim().parse().map_err(|_| bad())?)
    } else if let Some(pct) = text.strip_suffix('%') {
        Threshold::Relative(pct.trim().parse::<f64>().map_err(|_| bad())? / 100.0)
    } else {
        Threshold::Relative(text.trim().parse().map_err(|_| bad())?)
    };
    match t {
        Threshold::Absolute(x) | Threshold::Relative(x) if x.is_finite() && x > 0.0 => Ok(t),
        _ => Err(bad()),
    }
}

/// How a detection is shown.
#[derive(Args)]
pub struct OutputArgs {
    /// Write the sampled histories with the detected change points as an SVG image.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct DetectArgs {
    /// The system spec, with a [history] section.
    #[arg(long, default_value = "knobs.toml")]
    spec: PathBuf,
    /// The measured workload (default: the spec's first).
    #[arg(long)]
    workload: Option<String>,
    /// The results store (default: knobs.db beside the spec).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Recorded runs per configuration and commit (overrides the spec's [measure]).
    #[arg(long)]
    repetitions: Option<u32>,
    // Each batch of the search is one campaign: on Slurm, one job array per round.
    #[command(flatten)]
    backend: crate::backend_args::BackendArgs,
    /// Down to the code: per change point, the functions whose instructions moved from the
    /// commit before it to it (or between the commits its size was measured at, when the
    /// change is not there), by valgrind's callgrind, in configurations that show the change
    /// and one that does not; profiles are cached beside the builds.
    #[arg(long)]
    regions: bool,
    /// With --regions: configurations that show the change profiled per change point.
    #[arg(long, default_value_t = 2)]
    regions_configurations: usize,
    /// With --regions: functions listed per change point.
    #[arg(long, default_value_t = 10)]
    regions_top: usize,
    /// With --regions: the smallest move of a function's own instructions that counts, as a
    /// share of the configuration's instructions before the change.
    #[arg(long, default_value = "0.5%")]
    regions_min_share: String,
    #[command(flatten)]
    search: SearchArgs,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The recorded history CSV.
    history: PathBuf,
    #[command(flatten)]
    search: SearchArgs,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
pub struct SyntheticArgs {
    /// A system written before (`--write-system`); otherwise one is generated.
    #[arg(long)]
    system: Option<PathBuf>,
    #[arg(long, default_value_t = 8)]
    options: usize,
    #[arg(long, default_value_t = 1000)]
    commits: usize,
    #[arg(long, default_value_t = 2)]
    change_points: usize,
    /// Geometric parameter of interaction degrees (larger: fewer high-order interactions).
    #[arg(long, default_value_t = 0.7)]
    p_interaction: f64,
    /// Relative standard deviation of measurement noise.
    #[arg(long, default_value_t = 0.0)]
    noise: f64,
    /// Influences from [0, 1) as the reference implementation draws them (the paper: [−1, 1]).
    #[arg(long)]
    positive_influences: bool,
    /// Seed of the generated system.
    #[arg(long, default_value_t = 1)]
    system_seed: u64,
    /// Write the system as JSON (the format the reference comparison reads).
    #[arg(long)]
    write_system: Option<PathBuf>,
    #[command(flatten)]
    search: SearchArgs,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
pub struct GridArgs {
    /// The whole of Table 1 (864 settings); default: the quick subset.
    #[arg(long)]
    full: bool,
    /// Systems per setting (different seeds).
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    #[arg(long, default_value_t = 0.0)]
    noise: f64,
    /// Threshold of the search (synthetic systems have no noise by default, so 1 % sees the
    /// smallest changes of the generator).
    #[arg(long, default_value = "1%")]
    threshold: String,
    #[arg(long)]
    reference_choices: bool,
    /// Write each synthetic system (with its search parameters) as JSON into this directory,
    /// for the comparison with the reference implementation.
    #[arg(long)]
    systems_dir: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub fn changepoints(cmd: ChangepointsCommand) -> Result<Outcome> {
    match cmd {
        ChangepointsCommand::Detect(args) => detect_in_history(args),
        ChangepointsCommand::Replay(args) => {
            let text = std::fs::read_to_string(&args.history)
                .with_context(|| format!("reading {}", args.history.display()))?;
            let mut source = RecordedHistory::parse(&text, &args.history.display().to_string())?;
            let detection = detect(&mut source, &args.search.settings()?)?;
            finish(
                &detection,
                args.output.plot.as_deref(),
                args.output.json,
                None,
            )
        }
        ChangepointsCommand::Synthetic(args) => synthetic(args),
        ChangepointsCommand::Grid(args) => grid(args),
        ChangepointsCommand::Score(args) => score(args),
    }
}

#[derive(serde::Deserialize)]
struct Found {
    associations: Vec<Vec<f64>>,
}

fn score(args: ScoreArgs) -> Result<Outcome> {
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
    };
    let system =
        SyntheticSystem::from_json(&read(&args.system)?, &args.system.display().to_string())?;
    let found: Found = serde_json::from_str(&read(&args.found)?).with_context(|| {
        format!(
            "{}: expected {{\"associations\": [[commit, option], …]}}",
            args.found.display()
        )
    })?;
    let associations = evaluation::associations_from_pairs(&found.associations)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.found.display()))?;
    let score = evaluation::score(&evaluation::truth(&system), &associations, TOLERANCE);
    crate::print_json(&score)?;
    Ok(Outcome::Done)
}

fn detect_in_history(args: DetectArgs) -> Result<Outcome> {
    let mut spec = measure::SystemSpec::load(&args.spec)?;
    if let Some(r) = args.repetitions {
        spec.measure.set_repetitions(r)?;
    }
    let workload = spec.workload(args.workload.as_deref())?;
    if spec.prepare_workload(workload)? {
        eprintln!("prepared workload `{}`", workload.name);
    }
    let store_path = args
        .store
        .clone()
        .unwrap_or_else(|| measure::store::default_path(&spec.path));
    let store = measure::Store::open(&store_path)?;
    store.register_spec(&spec)?;
    let region_settings = region_settings(&args)?;
    let started = std::time::Instant::now();
    let runs_on = args.backend.backend(&spec, &store_path)?;
    let found = changepoints::store::StoreSource::new(
        &spec,
        workload,
        &store,
        Box::new(|line| eprintln!("{line}")),
    )?
    .runs_on(runs_on)
    .detect(&args.search.settings()?, region_settings.as_ref())?;
    if args.output.json {
        write_plot(&found.detection, args.output.plot.as_deref())?;
        crate::print_json(&found)?;
        return Ok(Outcome::Done);
    }
    finish(&found.detection, args.output.plot.as_deref(), false, None)?;
    if let Some(r) = &found.regions {
        print!("{}", render_regions(r));
    }
    print!("{}", render_effort(&found, started.elapsed().as_secs_f64()));
    Ok(Outcome::Done)
}

/// `--regions`' settings from their flags; `None` without `--regions`.
fn region_settings(args: &DetectArgs) -> Result<Option<RegionSettings>> {
    if !args.regions {
        return Ok(None);
    }
    let min_share = match parse_threshold(&args.regions_min_share)? {
        Threshold::Relative(r) => r,
        Threshold::Absolute(_) => bail!("--regions-min-share is a share (0.5% or 0.005)"),
    };
    if args.regions_configurations == 0 || args.regions_top == 0 {
        bail!("--regions-configurations and --regions-top must be at least 1");
    }
    Ok(Some(RegionSettings {
        configurations: args.regions_configurations,
        top: args.regions_top,
        min_share,
        threshold: match parse_threshold(&args.search.threshold)? {
            Threshold::Relative(r) => Some(r),
            Threshold::Absolute(_) => None,
        },
    }))
}

/// What a detection over a history cost, as lines of text.
fn render_effort(found: &HistoryDetection, seconds: f64) -> String {
    let effort = &found.effort;
    let mut out = format!(
        "effort: {} builds ({} cached, {} failed) in {:.1} min, {} runs ({} measurements read back from {}) in {:.1} min; {:.1} min in all\n",
        effort.builds,
        effort.cached_builds,
        effort.failed_builds.len(),
        effort.build_seconds / 60.0,
        effort.runs,
        effort.reused,
        found.store,
        effort.measure_seconds / 60.0,
        seconds / 60.0
    );
    if found.regions.is_some() {
        out.push_str(&format!(
            "regions: {} callgrind profiles made in {:.1} min (the others read from the build cache)\n",
            effort.profiles,
            effort.profile_seconds / 60.0
        ));
    }
    for f in &effort.failed_builds {
        out.push_str(&format!(
            "  did not build: {} ({}; log {})\n",
            f.commit, f.why, f.log
        ));
    }
    out
}

fn synthetic(args: SyntheticArgs) -> Result<Outcome> {
    let system = match &args.system {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            SyntheticSystem::from_json(&text, &path.display().to_string())?
        }
        None => SyntheticSystem::generate(&SyntheticSettings {
            options: args.options,
            commits: args.commits,
            change_points: args.change_points,
            p_interaction: args.p_interaction,
            noise: args.noise,
            influence_range: if args.positive_influences {
                (0.0, 1.0)
            } else {
                (-1.0, 1.0)
            },
            seed: args.system_seed,
            ..SyntheticSettings::default()
        })?,
    };
    if let Some(path) = &args.write_system {
        std::fs::write(path, serde_json::to_string_pretty(&system)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let truth = evaluation::truth(&system);
    let mut source = SyntheticSource::new(system, args.search.seed);
    let detection = detect(&mut source, &args.search.settings()?)?;
    let score = evaluation::score(&truth, &detection.associations, TOLERANCE);
    let truth_text: Vec<String> = source
        .system()
        .change_points
        .iter()
        .map(|c| {
            let options: Vec<String> = c.options.iter().map(|o| format!("o{o}")).collect();
            format!(
                "{} ({})",
                c.commit,
                if options.is_empty() {
                    "all configurations".to_string()
                } else {
                    options.join(" & ")
                }
            )
        })
        .collect();
    finish(
        &detection,
        args.output.plot.as_deref(),
        args.output.json,
        Some((score, truth_text)),
    )
}

#[derive(Serialize)]
struct Scored<'a> {
    #[serde(flatten)]
    detection: &'a Detection,
    score: Option<evaluation::Score>,
    truth: Option<Vec<String>>,
}

fn finish(
    detection: &Detection,
    plot: Option<&std::path::Path>,
    json: bool,
    scored: Option<(evaluation::Score, Vec<String>)>,
) -> Result<Outcome> {
    write_plot(detection, plot)?;
    if json {
        let (score, truth) = match scored {
            Some((s, t)) => (Some(s), Some(t)),
            None => (None, None),
        };
        crate::print_json(&Scored {
            detection,
            score,
            truth,
        })?;
        return Ok(Outcome::Done);
    }
    print!("{}", render(detection));
    if let Some((score, truth)) = scored {
        println!("true change points: {}", truth.join(", "));
        println!(
            "F1 {:.2} (precision {:.2}, recall {:.2}; {} found, {} true associations, tolerance {TOLERANCE} commits)",
            score.f1, score.precision, score.recall, score.found, score.truth
        );
    }
    Ok(Outcome::Done)
}

fn write_plot(detection: &Detection, path: Option<&std::path::Path>) -> Result<()> {
    if let Some(path) = path {
        std::fs::write(path, changepoints::plot::svg(detection, 12))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}

/// The change points and the effort, as text.
/// How a change that no option explains is named ([`changepoints::Affects::Unattributed`]).
const UNATTRIBUTED: &str = "some configurations, which no option explains";

pub fn render(d: &Detection) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let range = if d.first_commit > 0 {
        format!(" ({}–{})", d.first_commit, d.first_commit + d.commits - 1)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{} change point(s) in {} commits{range}; {} measurements of {} configurations, {} iterations ({}), {:.1} s",
        d.change_points.len(),
        d.commits,
        d.measurements,
        d.configurations,
        d.iterations.len(),
        d.stopped,
        d.seconds
    );
    if !d.unconfirmed.is_empty() {
        let listed: Vec<String> = d
            .unconfirmed
            .iter()
            .map(|a| match &a.affects {
                changepoints::Affects::All => format!("{} (all configurations)", a.commit),
                changepoints::Affects::Feature(f) => format!("{} ({})", a.commit, d.features[*f]),
                changepoints::Affects::Unattributed => {
                    format!("{} ({UNATTRIBUTED})", a.commit)
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "  left out, not confirmed when the measurement limit stopped the search (seen in one iteration, or not again since): {}",
            listed.join(", ")
        );
    }
    for c in &d.change_points {
        let options = options_text(&c.option_groups);
        let what = match (c.all_configurations, options.is_empty()) {
            (true, true) => "all configurations".to_string(),
            (true, false) => format!("all configurations and {options}"),
            (false, _) if c.unattributed => UNATTRIBUTED.to_string(),
            (false, _) => options,
        };
        let change = match c.relative_change {
            Some(r) => format!(
                "{}{:.1} % ({} → {}, {} configuration(s))",
                if r >= 0.0 { "+" } else { "" },
                100.0 * r,
                c.before_commit,
                c.after_commit,
                c.configurations_compared
            ),
            None => "size unknown".to_string(),
        };
        let _ = write!(out, "  commit {:>6}", c.commit);
        if c.info.id != c.commit.to_string() {
            let _ = write!(out, " {}", &c.info.id[..c.info.id.len().min(12)]);
        }
        if !c.info.date.is_empty() {
            let _ = write!(out, " {}", c.info.date);
        }
        let _ = writeln!(out, ": {what}; {change}; weight {:.2}", c.weight);
        if !c.info.subject.is_empty() {
            let _ = writeln!(out, "      {}", c.info.subject);
        }
    }
    out
}

/// An instruction count as text: millions with one decimal from a million on.
fn count(n: f64) -> String {
    if n.abs() >= 1e6 {
        format!("{:.1} M", n / 1e6)
    } else {
        format!("{n:.0}")
    }
}

/// Each change point's moved functions, as text.
pub fn render_regions(r: &RegionsReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "regions (unit: {}):", r.unit);
    let percent = |before: f64, after: f64| {
        if before > 0.0 {
            format!("{:+.1} %", 100.0 * (after - before) / before)
        } else {
            "new".to_string()
        }
    };
    if r.change_points.is_empty() {
        let _ = writeln!(out, "  no change point to take down to the code");
    }
    for cp in &r.change_points {
        let _ = writeln!(
            out,
            "  change point at commit {} (commits {} → {} compared):",
            cp.commit, cp.before_commit, cp.after_commit
        );
        for c in &cp.configurations {
            let _ = writeln!(
                out,
                "    {} `{}`: {} → {} ({})",
                if c.associated {
                    "shows it "
                } else {
                    "contrast "
                },
                if c.configuration.is_empty() {
                    "no option selected"
                } else {
                    &c.configuration
                },
                count(c.total_before as f64),
                count(c.total_after as f64),
                percent(c.total_before as f64, c.total_after as f64)
            );
        }
        if cp.functions.is_empty() {
            let _ = writeln!(
                out,
                "    no function's own instructions moved by {:.1} % of the total or more",
                100.0 * r.settings.min_share
            );
        }
        for f in &cp.functions {
            let place = match (&f.file, f.line) {
                (Some(file), Some(line)) => format!(" ({file}:{line})"),
                (Some(file), None) => format!(" ({file})"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "    {}{place}: own {} → {} ({}{}, {}), with callees {}{}; moved in {}",
                f.function,
                count(f.exclusive_before),
                count(f.exclusive_after),
                if f.exclusive_change >= 0.0 { "+" } else { "" },
                count(f.exclusive_change),
                percent(f.exclusive_before, f.exclusive_after),
                if f.inclusive_change >= 0.0 { "+" } else { "" },
                count(f.inclusive_change),
                if f.scope == "some" {
                    f.moved_in
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                } else {
                    f.scope.clone()
                }
            );
        }
        for n in &cp.notes {
            let _ = writeln!(out, "    note: {n}");
        }
    }
    out
}

/// Option groups as text: alternatives joined by "or", interacting groups by "&"
/// (parenthesised when both occur).
fn options_text(groups: &[Vec<String>]) -> String {
    let parts: Vec<String> = groups
        .iter()
        .map(|g| {
            let alternatives = g.join(" or ");
            if g.len() > 1 && groups.len() > 1 {
                format!("({alternatives})")
            } else {
                alternatives
            }
        })
        .collect();
    parts.join(" & ")
}

fn grid(args: GridArgs) -> Result<Outcome> {
    let mut base = Settings {
        threshold: parse_threshold(&args.threshold)?,
        ..Settings::default()
    };
    if args.reference_choices {
        base = base.reference();
    }
    let points = if args.full {
        evaluation::table1()
    } else {
        evaluation::quick_grid()
    };
    let mut rows: Vec<GridRow> = Vec::new();
    if let Some(dir) = &args.systems_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    for point in &points {
        for seed in 1..=args.seeds {
            if let Some(dir) = &args.systems_dir {
                write_grid_system(dir, point, seed, &base, args.noise)?;
            }
            let row = evaluation::run_point(point, seed, &base, args.noise)?;
            eprintln!(
                "options {:>2} commits {:>4} change points {:>2} p {:.1} N_initial {:>2} budget {:>3} seed {seed}: F1 {:.2} ({:.1} s)",
                point.options,
                point.commits,
                point.change_points,
                point.p_interaction,
                point.initial_per_option,
                point.measurements,
                row.score.f1,
                row.seconds
            );
            rows.push(row);
        }
    }
    if args.json {
        crate::print_json(&rows)?;
        return Ok(Outcome::Done);
    }
    print_grid_table(&rows, args.seeds);
    Ok(Outcome::Done)
}

/// A grid point's synthetic system for one seed, with the search parameters it is run with,
/// as JSON into `dir`: what the reference implementation is run on for the comparison.
fn write_grid_system(
    dir: &Path,
    point: &GridPoint,
    seed: u64,
    base: &Settings,
    noise: f64,
) -> Result<()> {
    let (name, system) = evaluation::reference_system(point, seed, base, noise)?;
    std::fs::write(dir.join(name), serde_json::to_string(&system)?)?;
    Ok(())
}

/// The grid as a table: per setting, the means over its `seeds` systems (consecutive rows).
fn print_grid_table(rows: &[GridRow], seeds: u64) {
    println!(
        "{:>7} {:>7} {:>5} {:>5} {:>9} {:>6} | {:>5} {:>9} {:>6} {:>10} {:>12} {:>9}",
        "options",
        "commits",
        "cps",
        "p",
        "N_initial",
        "budget",
        "F1",
        "precision",
        "recall",
        "iterations",
        "measurements",
        "seconds"
    );
    for chunk in rows.chunks(seeds as usize) {
        let p = &chunk[0].point;
        let mean =
            |f: &dyn Fn(&GridRow) -> f64| chunk.iter().map(f).sum::<f64>() / chunk.len() as f64;
        println!(
            "{:>7} {:>7} {:>5} {:>5.1} {:>9} {:>6} | {:>5.2} {:>9.2} {:>6.2} {:>10.1} {:>12.0} {:>9.2}",
            p.options,
            p.commits,
            p.change_points,
            p.p_interaction,
            p.initial_per_option,
            p.measurements,
            mean(&|r| r.score.f1),
            mean(&|r| r.score.precision),
            mean(&|r| r.score.recall),
            mean(&|r| r.iterations as f64),
            mean(&|r| r.measurements as f64),
            mean(&|r| r.seconds)
        );
    }
}
