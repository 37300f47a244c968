//! `knobs init`, `knobs measure` and `knobs results …`: describe a program, measure
//! configurations into the results store, and read the store back.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use measure::campaign::{Campaign, CampaignReport};
use measure::store::{ConfigurationSummary, Drift, StoredSpec};
use measure::{Metric, Selection, Store, SystemSpec};
use serde::Serialize;
use serde_json::json;
use space::formats::write_dataset_csv;
use space::{Strategy, ValidConfigurations, sample};

use crate::Outcome;
use crate::progress::with_progress;
use crate::space_cmd::{SAMPLE_HELP, SEED_HELP};

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs init -- xz --compress --stdout input.txt   # writes knobs.toml\n  \
    knobs init -o gzip.toml --force -- gzip -c input.txt")]
pub struct InitArgs {
    /// Where to write the spec.
    #[arg(long, short = 'o', default_value = "knobs.toml")]
    out: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
    /// The command to study, as you would run it: `knobs init -- xz -c input.txt`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

pub fn init(args: InitArgs) -> Result<Outcome> {
    if args.out.exists() && !args.force {
        bail!("{} exists; use --force to overwrite it", args.out.display());
    }
    let dir = args
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let help = measure::init::help_text(&args.command[0]);
    let text = measure::init::starting_spec(&args.command, dir, help.as_deref());
    std::fs::write(&args.out, text).with_context(|| args.out.display().to_string())?;
    let suggestions = help
        .as_deref()
        .map_or(0, |h| measure::init::parse_help(h).len());
    eprintln!(
        "wrote {}{}; edit its options, then run `knobs measure --spec {}`",
        args.out.display(),
        if suggestions > 0 {
            format!(" with {suggestions} option suggestions from `--help`")
        } else {
            String::new()
        },
        args.out.display()
    );
    Ok(Outcome::Done)
}

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs measure --spec examples/xz/knobs.toml --sample all\n  \
    knobs measure --spec examples/xz/knobs.toml --sample pairwise --workload small --json
  \
    knobs measure --spec examples/xz/knobs.toml --sample all --backend slurm --tasks 4
  \
    knobs measure --spec examples/xz-history/knobs.toml --commit v5.4.0 --sample 'random:4'")]
pub struct MeasureArgs {
    /// The system spec.
    #[arg(long, default_value = "knobs.toml")]
    spec: PathBuf,
    #[arg(long, short = 's', default_value = "all", help = SAMPLE_HELP)]
    sample: String,
    #[arg(long, default_value_t = 1, help = SEED_HELP)]
    seed: u64,
    /// The workload to measure with (default: the spec's first workload for measurement).
    #[arg(long)]
    workload: Option<String>,
    /// The results store (default: knobs.db beside the spec).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Recorded runs per configuration (overrides the spec).
    #[arg(long)]
    repetitions: Option<u32>,
    /// Unrecorded warm-up rounds first (overrides the spec's `warmup`).
    #[arg(long)]
    warmup: Option<u32>,
    /// Repeat until the 95 % confidence interval is narrow enough (overrides the spec).
    #[arg(long)]
    adaptive: bool,
    /// Seconds after which no further round starts (overrides the spec's `budget`); the
    /// configurations left short are measured further by a rerun.
    #[arg(long, value_name = "SECONDS")]
    budget: Option<f64>,
    /// What to measure and learn, instead of the spec's `metric` (`instructions` keeps its
    /// runs apart from the timed ones).
    #[arg(long, value_enum)]
    metric: Option<MetricArg>,
    /// Run configurations whose earlier runs failed again.
    #[arg(long)]
    retry_failed: bool,
    /// Exit 0 even when configurations failed (by default such a campaign exits 3 once
    /// everything is stored).
    #[arg(long)]
    accept_failures: bool,
    /// Measure the program built at this commit of the spec's [history] (a revision: id,
    /// tag, `main~3`), building it first when needed; runs are stored under the commit.
    #[arg(long)]
    commit: Option<String>,
    /// Print the report as JSON on stdout (progress stays on stderr).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    backend: crate::backend_args::BackendArgs,
}

/// What `knobs measure --json` prints: the campaign and where its measurements went.
#[derive(Serialize)]
struct MeasureReport<'a> {
    system: &'a str,
    workload: &'a str,
    store: &'a Path,
    /// The [history] commit measured (full id); absent for the spec's own program.
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<&'a str>,
    /// The builds of the build options' values (absent for a spec without build options),
    /// their time apart from the runs'.
    #[serde(skip_serializing_if = "Option::is_none")]
    builds: Option<&'a history::VariantsReport>,
    /// The sampling strategy, as the store's provenance and `knobs learn` write it.
    sample: String,
    seed: u64,
    /// Configurations in the sample.
    sampled: usize,
    #[serde(flatten)]
    campaign: &'a CampaignReport,
}

pub fn measure(args: MeasureArgs) -> Result<Outcome> {
    let mut spec = SystemSpec::load(&args.spec)?;
    if let Some(metric) = args.metric {
        spec = spec.with_metric(metric.into())?;
    }
    // Everything that can be wrong with the spec is reported before the store is touched.
    let has_build_options = !spec.build_options().is_empty();
    if args.commit.is_some() || has_build_options {
        spec.check_cwd()?;
    } else {
        spec.check_runnable()?;
    }
    let workload = spec.workload(args.workload.as_deref())?;
    spec.prepare_workload(workload)?;
    let settings = measure_settings(&spec, &args)?;
    let strategy: Strategy = args.sample.parse()?;
    let valid = ValidConfigurations::new(&spec.space)?;
    let plan = sample(&valid, &strategy, args.seed)?;
    let store_path = args
        .store
        .unwrap_or_else(|| measure::store::default_path(&args.spec));
    measure::runner::kill_runs_on_interrupt();
    let (commit, program) = match &args.commit {
        Some(rev) if has_build_options => {
            (Some(crate::history_cmd::resolve_commit(&spec, rev)?), None)
        }
        Some(rev) => {
            let built = crate::history_cmd::program_at(&spec, rev)?;
            (Some(built.commit), Some(built.program))
        }
        None => (None, None),
    };
    let store = Store::open(&store_path)?;
    let campaign = match (&commit, program) {
        (Some(c), Some(p)) => Campaign::at_commit(&spec, workload, c, p),
        _ => Campaign::new(&spec, workload),
    };
    let campaign = Campaign {
        settings,
        retry_failed: args.retry_failed,
        backend: args.backend.backend(&spec, &store_path)?,
        ..campaign
    };
    eprintln!(
        "measuring {} configurations of {}{} ({} sample, workload `{}`) into {}",
        plan.configurations.len(),
        spec.name,
        commit
            .as_ref()
            .map(|c| format!(" at commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default(),
        args.sample,
        workload.name,
        store_path.display()
    );
    let commit = commit.as_deref();
    let (report, builds) = if has_build_options {
        let (report, builds) = measure_variants(&campaign, &store, &plan.configurations, commit)?;
        (report, Some(builds))
    } else {
        let report =
            with_progress(|on_event| Ok(campaign.run(&store, &plan.configurations, on_event)?))?;
        (report, None)
    };
    print_report(&report, spec.measure.max_cv);
    if let Some(builds) = &builds {
        eprintln!("{}", builds.summary());
    }
    if args.json {
        crate::print_json(&MeasureReport {
            system: &spec.name,
            workload: &workload.name,
            store: &store_path,
            commit,
            builds: builds.as_ref(),
            sample: strategy.to_string(),
            seed: args.seed,
            sampled: plan.configurations.len(),
            campaign: &report,
        })?;
    }
    failures_outcome(&report, &store_path, args.accept_failures)
}

/// Measures configurations of a spec with build options: each distinct set of build-option
/// values built once (or found in the cache), each configuration run with its build, a
/// configuration whose build failed stored as failed.
fn measure_variants(
    campaign: &Campaign,
    store: &Store,
    configurations: &[space::Configuration],
    commit: Option<&str>,
) -> Result<(CampaignReport, history::VariantsReport)> {
    let variants = history::Variants::open(campaign.spec, commit)?;
    let (pairs, builds) = variants.pairs(
        campaign.spec,
        configurations,
        commit.unwrap_or(""),
        campaign.retry_failed,
        &mut |b| {
            eprintln!(
                "build {} ({}, {:.1} s): {}",
                b.status,
                b.values,
                b.seconds,
                b.path.display()
            )
        },
    )?;
    let selection = campaign.selection().at_commit(commit.unwrap_or(""));
    for b in &builds.builds {
        store.record_build(&selection, &b.stored())?;
    }
    let report = with_progress(|on_event| Ok(campaign.run_at_commits(store, &pairs, on_event)?))?;
    Ok((report, builds))
}

/// How a campaign ends given its failed configurations: every one failed is an error,
/// some failed is exit 3 (unless accepted), each saying how many and where to look.
fn failures_outcome(report: &CampaignReport, store: &Path, accept: bool) -> Result<Outcome> {
    if report.failed.is_empty() {
        return Ok(Outcome::Done);
    }
    eprintln!(
        "{} of {} configurations failed; their runs and the tails of their stderr are in {} \
         (`knobs results show --store {}` lists them; `knobs measure` with the same arguments \
         and --retry-failed runs them again)",
        report.failed.len(),
        report.configurations,
        store.display(),
        store.display()
    );
    if report.failed.len() == report.configurations {
        bail!("every configuration failed: nothing was measured");
    }
    Ok(if accept {
        Outcome::Done
    } else {
        Outcome::SomeFailed
    })
}

/// The spec's measure settings with the command line's overrides.
fn measure_settings(spec: &SystemSpec, args: &MeasureArgs) -> Result<measure::MeasureSettings> {
    let mut settings = spec.measure.clone();
    if let Some(r) = args.repetitions {
        settings.set_repetitions(r)?;
    }
    if let Some(w) = args.warmup {
        settings.warmup = w;
    }
    settings.adaptive |= args.adaptive;
    if let Some(budget) = args.budget {
        if !(budget.is_finite() && budget > 0.0) {
            bail!("--budget must be a number of seconds > 0");
        }
        settings.budget = Some(budget);
    }
    Ok(settings)
}

#[derive(Args)]
pub struct StoreArgs {
    /// The system spec; only its place matters here: the store defaults to knobs.db beside
    /// it (the spec file need not exist when --store is given).
    #[arg(long, default_value = "knobs.toml")]
    pub spec: PathBuf,
    /// The results store (default: knobs.db beside the spec).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Only this system.
    #[arg(long)]
    system: Option<String>,
    /// Only measurements under this spec (a prefix of its hash).
    #[arg(long)]
    spec_hash: Option<String>,
    /// Only measurements with this workload.
    #[arg(long)]
    workload: Option<String>,
    /// A derived build's measurements (e.g. `configcrusher:…`) instead of the program's.
    #[arg(long, default_value = "")]
    variant: String,
    /// The measurements of the build of this [history] commit (its id, or a prefix of it)
    /// instead of the spec's own program.
    #[arg(long)]
    commit: Option<String>,
    /// The metric (default: the one of the spec the measurements were taken under).
    #[arg(long, value_enum)]
    metric: Option<MetricArg>,
    /// How each run is read against the reference configuration measured in its round.
    #[arg(long, value_enum, default_value_t = DriftArg::None)]
    drift: DriftArg,
}

/// `measure::store::Drift`, as `--drift` spells it.
#[derive(Clone, Copy, ValueEnum)]
pub enum DriftArg {
    /// As measured.
    None,
    /// Each round scaled by how fast the reference ran in it: seconds, without the drift
    /// between rounds.
    Rounds,
    /// As multiples of the reference's time in the same round: unitless, without drift
    /// between sessions either.
    Relative,
}

impl From<DriftArg> for Drift {
    fn from(d: DriftArg) -> Drift {
        match d {
            DriftArg::None => Drift::None,
            DriftArg::Rounds => Drift::Rounds,
            DriftArg::Relative => Drift::Relative,
        }
    }
}

/// A per-run quantity (`measure::Metric`), as `--metric` spells it.
#[derive(Clone, Copy, ValueEnum)]
pub enum MetricArg {
    /// CPU time for a configuration that keeps one CPU busy, wall time otherwise (decided
    /// by its most CPU-bound run).
    Auto,
    /// Wall-clock time (s).
    Wall,
    /// User CPU time (s).
    User,
    /// System CPU time (s).
    System,
    /// User plus system CPU time (s).
    Cpu,
    /// Peak resident set size (KiB).
    #[value(name = "max_rss")]
    MaxRss,
    /// Instructions executed (runs measured with `metric = "instructions"`).
    Instructions,
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Metric {
        match m {
            MetricArg::Auto => Metric::Auto,
            MetricArg::Wall => Metric::Wall,
            MetricArg::User => Metric::User,
            MetricArg::System => Metric::System,
            MetricArg::Cpu => Metric::Cpu,
            MetricArg::MaxRss => Metric::MaxRss,
            MetricArg::Instructions => Metric::Instructions,
        }
    }
}

/// How `knobs results show` orders configurations.
#[derive(Clone, Copy, ValueEnum)]
pub enum SortArg {
    /// By their text.
    Configuration,
    /// Fastest (smallest value: the fastest-half mean) first.
    Value,
    /// Smallest median first.
    Median,
    /// Noisiest (largest coefficient of variation) first.
    Cv,
}

/// What `knobs results export` writes.
#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// The dataset layout: one column per option and the value of the metric (the mean of
    /// the fastest half of the runs).
    Csv,
    /// Every run with all its fields.
    Json,
}

impl StoreArgs {
    /// The selection; a --commit prefix is not resolved yet (see `selection_in`).
    fn selection(&self) -> Selection {
        Selection {
            system: self.system.clone(),
            spec_hash: self.spec_hash.clone(),
            workload: self.workload.clone(),
            variant: self.variant.clone(),
            commit: self.commit.clone().unwrap_or_default(),
        }
    }

    /// The selection with --commit resolved to the one stored commit it is a prefix of.
    pub fn selection_in(&self, store: &Store) -> Result<Selection> {
        Ok(store.at_commit_prefix(self.selection(), self.commit.as_deref())?)
    }

    /// The store given with --store, else knobs.db beside the spec.
    pub fn path(&self) -> PathBuf {
        self.store
            .clone()
            .unwrap_or_else(|| measure::store::default_path(&self.spec))
    }

    pub fn open(&self) -> Result<Store> {
        let path = self.path();
        if self.store.is_none() && !path.exists() {
            bail!(
                "{}: no such results store (the default: knobs.db beside the spec {}); give --store or --spec",
                path.display(),
                self.spec.display()
            );
        }
        Ok(Store::open_existing(&path)?)
    }

    /// The metric asked for, else the one of the spec the measurements were taken under.
    pub fn metric(&self, store: &Store) -> Result<Metric> {
        match self.metric {
            Some(m) => Ok(m.into()),
            None => Ok(store.spec_metric(&self.selection())?),
        }
    }
}

#[derive(Subcommand)]
pub enum ResultsCommand {
    /// Per configuration: runs, failures, median, mean, standard deviation, variation.
    #[command(
        after_help = "Example:\n  knobs results show --spec examples/xz/knobs.toml\n  \
        knobs results show --store examples/xz/knobs.db --metric max_rss --json"
    )]
    Show {
        #[command(flatten)]
        store: StoreArgs,
        /// The order of the configurations.
        #[arg(long, value_enum, default_value_t = SortArg::Configuration)]
        sort: SortArg,
        /// Print the summaries as JSON on stdout instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Export the measurements: `csv` is the dataset layout (one column per option and the
    /// fastest-half mean of the metric), `json` every run with all its fields.
    #[command(after_help = "Example:\n  \
        knobs results export --spec examples/xz/knobs.toml -o xz.csv\n  \
        knobs results export --store examples/xz/knobs.db --format json -o runs.json")]
    Export {
        #[command(flatten)]
        store: StoreArgs,
        /// The output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
        format: ExportFormat,
        /// Write here instead of standard output.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
    },
}

pub fn results(cmd: ResultsCommand) -> Result<Outcome> {
    match cmd {
        ResultsCommand::Show { store, sort, json } => show(&store, sort, json),
        ResultsCommand::Export { store, format, out } => export(&store, format, out.as_deref()),
    }
}

/// `knobs results show`: the summaries of the measurements under one spec.
fn show(args: &StoreArgs, sort: SortArg, json: bool) -> Result<Outcome> {
    let store = args.open()?;
    let requested = args.metric(&store)?;
    let stored = store.spec(&args.selection())?;
    let selection = Selection {
        spec_hash: Some(stored.hash.clone()),
        ..args.selection_in(&store)?
    };
    let (metric, why) = store.resolve_metric(&selection, requested)?;
    let why = match args.metric {
        Some(_) if requested != Metric::Auto => format!("{} (--metric)", metric.name()),
        _ => why,
    };
    let unit = match args.drift {
        DriftArg::Relative => format!("{} per reference", metric.name()),
        _ => metric.label().to_string(),
    };
    let mut summaries = store.summaries_with(&selection, metric, args.drift.into())?;
    sort_summaries(&mut summaries, sort);
    note_other_variants(&store, &selection)?;
    let older = store
        .specs()?
        .iter()
        .filter(|s| s.system == stored.system && s.hash != stored.hash)
        .count();
    if older > 0 {
        eprintln!(
            "note: the store also holds measurements under {older} other spec(s) of {}; --spec-hash selects one",
            stored.system
        );
    }
    let builds = store.builds_summary(&selection)?;
    if json {
        crate::print_json(&json!({
            "store": args.path(),
            "system": stored.system,
            "spec_hash": stored.hash,
            "variant": args.variant,
            "commit": selection.commit,
            "metric": metric.name(),
            "unit": unit,
            "builds": builds,
            "configurations": summaries,
        }))?;
        return Ok(Outcome::Done);
    }
    eprintln!("metric: {why}");
    print_summaries(&stored, &selection, (requested, &unit), &summaries)?;
    if let Some(b) = builds {
        println!(
            "builds (apart from the runs' times): {} sets of build-option values, {} failed, {:.1} s of building",
            b.builds, b.failed, b.seconds
        );
    }
    Ok(Outcome::Done)
}

/// Orders summaries; configurations without a successful run go last.
fn sort_summaries(summaries: &mut [ConfigurationSummary], sort: SortArg) {
    let key = |s: &ConfigurationSummary| match (sort, &s.summary) {
        (SortArg::Value, Some(m)) => m.value,
        (SortArg::Median, Some(m)) => m.median,
        (SortArg::Cv, Some(m)) => -m.cv,
        _ => f64::INFINITY,
    };
    match sort {
        SortArg::Configuration => {}
        _ => summaries.sort_by(|a, b| key(a).total_cmp(&key(b))),
    }
}

/// A note on stderr when other variants of the selection have runs (a white-box approach
/// measures under a variant of its own), saying how to see them.
fn note_other_variants(store: &Store, selection: &Selection) -> Result<()> {
    for variant in store.variants(selection)? {
        if variant == selection.variant {
            continue;
        }
        let of_variant = Selection {
            variant: variant.clone(),
            ..selection.clone()
        };
        let n = store.runs_by_configuration(&of_variant)?.len();
        let shown = if variant.is_empty() { "\"\"" } else { &variant };
        eprintln!("note: {n} configurations measured under variant {shown}: --variant {shown}");
    }
    Ok(())
}

/// The summaries as a table, one configuration a line under a heading; `metrics` are the
/// metric asked for and the unit its values are in.
fn print_summaries(
    stored: &StoredSpec,
    selection: &Selection,
    (requested, unit): (Metric, &str),
    summaries: &[ConfigurationSummary],
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} (spec {}{}), metric {}: {} configurations",
        stored.system,
        stored.hash,
        if selection.commit.is_empty() {
            String::new()
        } else {
            format!(", commit {}", selection.commit)
        },
        unit,
        summaries.len()
    )?;
    // Under `auto`, which time each configuration is read in: a wall-time one did not keep
    // one CPU busy (it sleeps, waits or runs threads in parallel).
    let reads = |s: &ConfigurationSummary| match requested {
        Metric::Auto => format!(" {:>5}", s.metric.name()),
        _ => String::new(),
    };
    writeln!(
        out,
        "{:>10} {:>10} {:>10} {:>10} {:>7} {:>8} {:>5} {:>6}{}  configuration",
        "value",
        "median",
        "mean",
        "sd",
        "cv %",
        "±ci95 %",
        "runs",
        "failed",
        if requested == Metric::Auto {
            " reads"
        } else {
            ""
        }
    )?;
    for s in summaries {
        let shown = space::shown_configuration(&s.configuration);
        match &s.summary {
            Some(m) => writeln!(
                out,
                "{:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>7.2} {:>8} {:>5} {:>6}{}  {shown}",
                m.value,
                m.median,
                m.mean,
                m.sd,
                m.cv * 100.0,
                relative_interval(m),
                s.runs,
                s.failed,
                reads(s)
            )?,
            None => writeln!(
                out,
                "{:>10} {:>10} {:>10} {:>10} {:>7} {:>8} {:>5} {:>6}{}  {shown}",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                s.runs,
                s.failed,
                reads(s)
            )?,
        }
    }
    Ok(())
}

/// The 95 % confidence interval's half-width relative to the value, in percent (`-` for one
/// run, which says nothing about the noise).
fn relative_interval(m: &measure::Summary) -> String {
    if m.ci95.is_finite() && m.value != 0.0 {
        format!("{:.2}", 100.0 * m.ci95 / m.value.abs())
    } else {
        "-".into()
    }
}

/// `knobs results export`: the measurements as a dataset CSV or every run as JSON, to `out`
/// or standard output.
fn export(args: &StoreArgs, format: ExportFormat, out: Option<&Path>) -> Result<Outcome> {
    let db = args.open()?;
    let mut sink: Box<dyn Write> = match out {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| path.display().to_string())?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    match format {
        ExportFormat::Csv => {
            let metric = args.metric(&db)?;
            let mut data = db.dataset_with(&args.selection_in(&db)?, metric, args.drift.into())?;
            // Values as every command prints them: 0.310332, not 0.31033199999999994.
            for v in &mut data.performance {
                *v = model::plain_number(*v).parse().unwrap_or(*v);
            }
            write_dataset_csv(&data, &mut sink)?;
        }
        ExportFormat::Json => {
            let runs = db.runs(&args.selection_in(&db)?)?;
            serde_json::to_writer_pretty(&mut sink, &runs)?;
            writeln!(sink)?;
        }
    }
    sink.flush()?;
    Ok(Outcome::Done)
}

/// The one-line summary of a campaign.
pub fn print_report(report: &CampaignReport, max_cv: f64) {
    eprintln!("{}", report.summary(max_cv));
    if !report.metric.is_empty() {
        eprintln!("metric: {}", report.metric);
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
}
