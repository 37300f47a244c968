//! `knobs learn`, `knobs evaluate` and `knobs experiment …`: black-box learners on measured
//! configurations, their error, and the evaluation protocols of the literature.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use learn::experiment::{CompareRow, SizeResult, compare, deepperf};
use learn::{EvaluationRows, Learner, Table, evaluate, learn, sample_rows};
use model::ModelFile;
use serde_json::json;
use space::formats::read_configurations_csv;
use space::{Dataset, Strategy, ValidConfigurations};

use crate::Outcome;
use crate::space_cmd::strategies;

const DATA_HELP: &str = "Measured configurations: a knobs results store (knobs.db), a dataset CSV (one column per option, performance last) or SPL Conqueror measurements XML (with --space)";
const LEARNER_HELP: &str = "Learner: stepwise | lasso | ridge | cart | rf | boost | divide | ols:TERMS | auto, settings after `:` (e.g. `lasso:degree=2,log`), or a mean `L1+L2` (weighted: `0.3*L1+0.7*L2`); see the README";
/// `--space` of every command that reads DATA.
const SPACE_OPTION_HELP: &str = "Variability model of SPL Conqueror measurements XML in DATA: SPL Conqueror .xml, or any space file (.toml, .dimacs)";
/// `--sample` of the commands that learn from measured configurations.
const LEARN_SAMPLE_HELP: &str = concat!(
    "Which measured configurations to learn from: ",
    strategies!(),
    " (random:N draws among the measured ones; every other configuration sampled must have been measured)"
);
const REPETITIONS_HELP: &str = "Repetitions of the experiment, each with its own seed (derived from --seed) for the sample and the learner; the table shows means and the 95 % margin of the error";
const EXPERIMENT_SEED_HELP: &str = "Seed for the random choices (samples, cross-validation folds, forests); each repetition derives its own from it, and the same seed gives the same table";

/// Loads the measured configurations a command learns from or evaluates on. `space` is the
/// variability model SPL Conqueror measurements need.
pub fn load_data(path: &Path, space: Option<&Path>) -> Result<Dataset> {
    load_data_at(path, space, None)
}

/// As [`load_data`], a store's runs at one `[history]` commit (a prefix of its id).
fn load_data_at(path: &Path, space: Option<&Path>, commit: Option<&str>) -> Result<Dataset> {
    if measure::Store::is_sqlite_file(path) {
        if space.is_some() {
            bail!(
                "{}: a results store carries its own space; drop --space",
                path.display()
            );
        }
        let store = measure::Store::open_existing(path)?;
        let selection = store.at_commit_prefix(Default::default(), commit)?;
        return Ok(store.dataset_as_specified(&selection)?);
    }
    if commit.is_some() {
        bail!(
            "{}: --commit selects the runs of a results store; this is not one",
            path.display()
        );
    }
    let space = space.map(measure::load_space).transpose()?;
    let is_xml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("xml"));
    if is_xml && space.is_none() {
        bail!(
            "{}: SPL Conqueror measurements need their variability model; give it with --space",
            path.display()
        );
    }
    Ok(space::formats::load_dataset(path, space.as_ref())?)
}

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs learn examples/xz/knobs.db --learner stepwise:log --sample pairwise -o xz-model.json\n  \
    knobs learn ../shared/datasets/deepperf/x264.csv --learner auto --sample random:80 -o x264.json --json")]
pub struct LearnArgs {
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    #[arg(long, short = 'l', help = LEARNER_HELP)]
    learner: String,
    #[arg(long, short = 's', default_value = "all", help = LEARN_SAMPLE_HELP)]
    sample: String,
    /// Seed for the random choices (sample, cross-validation folds, forests); the same seed
    /// gives the same model.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, help = SPACE_OPTION_HELP)]
    space: Option<PathBuf>,
    /// Learn from the store's runs at this `[history]` commit (a prefix of its id), as
    /// `knobs measure --commit` measured them.
    #[arg(long)]
    commit: Option<String>,
    /// Where to write the model JSON.
    #[arg(long, short = 'o')]
    out: PathBuf,
    /// Print what was learned as JSON on stdout instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs evaluate xz-model.json examples/xz/knobs.db\n  \
    knobs evaluate x264.json ../shared/datasets/deepperf/x264.csv --all --json")]
pub struct EvaluateArgs {
    /// The model JSON (docs/model-json.md).
    model: PathBuf,
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    /// Evaluate on these configurations (CSV with a header of option names, as written by
    /// `knobs space sample`), looked up in DATA; default: every configuration of DATA the
    /// model was not built from (trained on, or measured by `knobs crush`/`knobs comprex`).
    #[arg(long, conflicts_with = "all")]
    test: Option<PathBuf>,
    /// Evaluate on every configuration of DATA, including those the model was built from.
    #[arg(long)]
    all: bool,
    #[arg(long, help = SPACE_OPTION_HELP)]
    space: Option<PathBuf>,
    /// Print the error as JSON on stdout instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
pub enum ExperimentCommand {
    /// DeepPerf's protocol: for each sample size, draw random samples, learn, and compute
    /// the mean relative error on all other configurations; prints size, mean MRE, its 95 %
    /// margin, the median, CPU seconds per model and model size, and for a published system
    /// (DeepPerf's six datasets) the best published mean of each size, its holder and
    /// DeepPerf's own.
    #[command(after_help = "Example:\n  \
        knobs experiment deepperf ../shared/datasets/deepperf/x264.csv --learner auto --repetitions 5\n  \
        knobs experiment deepperf ../shared/datasets/deepperf/Apache.csv --learner lasso --sizes 9,18 --json")]
    Deepperf(DeepPerfArgs),
    /// Sampling strategies × learners (Comprex, Tables II/III): sample size, measurement cost,
    /// learning time, MAPE on the configurations not sampled, model size.
    #[command(after_help = "Example:\n  \
        knobs experiment compare examples/xz/knobs.db --sample featurewise,pairwise,random:12 \\\n      \
        --learners \"stepwise:log;rf;auto\" --repetitions 10\n  \
        knobs experiment compare ../shared/datasets/splconqueror/LLVM/measurements.xml \\\n      \
        --space ../shared/datasets/splconqueror/LLVM/FeatureModel.xml --sample pairwise --learners stepwise,cart")]
    Compare(CompareArgs),
}

#[derive(Args)]
pub struct DeepPerfArgs {
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    #[arg(long, short = 'l', help = LEARNER_HELP)]
    learner: String,
    /// Sample sizes, comma-separated (default: the published sizes of the system).
    #[arg(long, value_delimiter = ',', conflicts_with = "n")]
    sizes: Vec<usize>,
    /// Sizes n, 2n, …, 5n (DeepPerf's per-system n).
    #[arg(long)]
    n: Option<usize>,
    #[arg(long, default_value_t = 30, help = REPETITIONS_HELP)]
    repetitions: usize,
    #[arg(long, default_value_t = 1, help = EXPERIMENT_SEED_HELP)]
    seed: u64,
    /// The system whose best published results are shown beside each size (default: the
    /// data file's name without extension, e.g. `x264` for `x264.csv`, when it is one of
    /// the published systems).
    #[arg(long)]
    system: Option<String>,
    #[arg(long, help = SPACE_OPTION_HELP)]
    space: Option<PathBuf>,
    /// Print the table as JSON on stdout instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CompareArgs {
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    /// Sampling strategies, comma-separated, each as --sample of `knobs learn` (e.g.
    /// `featurewise,pairwise,random:50`).
    #[arg(long, short = 's', value_delimiter = ',', required = true)]
    sample: Vec<String>,
    /// Learners, comma-separated, each as --learner of `knobs learn` (e.g. `stepwise,rf`; `;`
    /// separates learners whose settings contain commas unambiguously).
    #[arg(long, required = true)]
    learners: String,
    #[arg(long, default_value_t = 1, help = EXPERIMENT_SEED_HELP)]
    seed: u64,
    #[arg(long, default_value_t = 1, help = REPETITIONS_HELP)]
    repetitions: usize,
    #[arg(long, help = SPACE_OPTION_HELP)]
    space: Option<PathBuf>,
    /// Print the table as JSON on stdout instead of text.
    #[arg(long)]
    json: bool,
}

pub fn learn_model(args: LearnArgs) -> Result<Outcome> {
    let learner: Learner = args.learner.parse()?;
    let strategy: Strategy = args.sample.parse()?;
    let data = load_data_at(&args.data, args.space.as_deref(), args.commit.as_deref())?;
    let rows = sample_rows(&data, &strategy, args.seed)?;
    let start = Instant::now();
    let mut file = learn(&data, &rows, &learner, args.seed)?;
    let seconds = start.elapsed().as_secs_f64();
    let p = &mut file.provenance;
    p.insert("dataset".into(), json!(args.data.display().to_string()));
    p.insert("sample".into(), json!(strategy.to_string()));
    if let Some(commit) = &args.commit {
        p.insert("commit".into(), json!(commit));
    }
    file.save(&args.out)?;
    let resolved = file.provenance["resolved"].as_str().unwrap_or("");
    let cv_mre = file.provenance.get("cv_mre").and_then(|v| v.as_f64());
    let leaves: usize = file.trees.iter().map(|t| t.leaves()).sum();
    let log = file.transform == model::Transform::Log;
    let left_out = left_out(&args.data, &data, args.commit.as_deref())?;
    if args.json {
        return crate::print_json(&json!({
            "learner": resolved,
            "sample": strategy.to_string(),
            "seed": args.seed,
            "training_configurations": rows.len(),
            "configurations": data.configurations.len(),
            "left_out_failed": left_out.map(|(failed, _)| failed),
            "left_out_timed_out": left_out.map(|(_, timed_out)| timed_out),
            "seconds": seconds,
            "cv_mre_percent": cv_mre.map(|cv| cv * 100.0),
            "transform": if log { "log" } else { "none" },
            "terms": file.terms.terms().len(),
            "trees": file.trees.len(),
            "leaves": leaves,
            "model": args.out,
        }))
        .map(|()| Outcome::Done);
    }
    println!(
        "learned {resolved} from {} of {} configurations in {seconds:.3} s",
        rows.len(),
        data.configurations.len()
    );
    if let Some((failed, timed_out)) = left_out {
        println!(
            "{} measured configurations left out: no run succeeded ({failed} failed, {timed_out} timed out; `knobs results show` lists them)",
            failed + timed_out
        );
    }
    if let Some(cv) = cv_mre {
        println!("cross-validated MRE on the sample: {:.2} %", cv * 100.0);
    }
    if file.trees.is_empty() {
        println!(
            "{} terms{}",
            file.terms.terms().len(),
            if log { " (of ln(performance))" } else { "" }
        );
    } else {
        println!(
            "{} terms, {} trees with {leaves} leaves",
            file.terms.terms().len(),
            file.trees.len()
        );
    }
    println!("model written to {}", args.out.display());
    Ok(Outcome::Done)
}

/// How many configurations of a results store have runs but none that succeeded, which the
/// dataset leaves out, as (failed, timed out); `None` for other data, or when none is left out.
fn left_out(path: &Path, data: &Dataset, commit: Option<&str>) -> Result<Option<(usize, usize)>> {
    if !measure::Store::is_sqlite_file(path) || commit.is_some() {
        return Ok(None);
    }
    let selection = measure::Selection {
        system: Some(data.space.name.clone()),
        ..Default::default()
    };
    let counts = measure::Store::open_existing(path)?.configurations_without_success(&selection)?;
    Ok((counts != (0, 0)).then_some(counts))
}

pub fn evaluate_model(args: EvaluateArgs) -> Result<Outcome> {
    let file = ModelFile::load(&args.model)?;
    let data = load_data(&args.data, args.space.as_deref())?;
    let table = Table::new(&data);
    let total = table.rows.len();
    let test = args
        .test
        .as_deref()
        .map(|t| lookup(&data, t, &args.data))
        .transpose()?;
    let set = EvaluationRows::choose(&file, &table, test, args.all);
    if set.rows.is_empty() {
        bail!(
            "{}: no configurations to evaluate on (the model was trained on all of them); give --test or --all",
            args.data.display()
        );
    }
    let mape = |rows: &[usize]| {
        evaluate(&file, &table, rows)
            .with_context(|| format!("evaluating {}", args.model.display()))
    };
    let error = mape(&set.rows)?;
    // The papers' metric is the error on the configurations a model did not measure; the
    // error on all of them goes beside it, so the two are never mistaken for each other.
    let (unmeasured, all) = if args.test.is_some() {
        (None, None)
    } else {
        let unmeasured = match set.untrained() {
            Some(rows) if !rows.is_empty() => Some(mape(&rows)?),
            _ => None,
        };
        (unmeasured, Some(mape(&(0..total).collect::<Vec<_>>())?))
    };
    if args.json {
        crate::print_json(&json!({
            "model": args.model,
            "data": args.data,
            "mape_percent": error,
            "mape_unmeasured_percent": unmeasured,
            "mape_all_percent": all,
            "set": set.set,
            "test": args.test,
            "configurations": set.rows.len(),
            "of": total,
            "training_configurations": set.trained_count(),
        }))?;
    } else {
        let which = described(&set, args.test.as_deref(), total);
        print_mape(&set, &which, error, unmeasured, all, total);
    }
    Ok(Outcome::Done)
}

/// The error of `knobs evaluate` as text, with the one that goes beside it.
fn print_mape(
    set: &EvaluationRows,
    which: &str,
    error: f64,
    unmeasured: Option<f64>,
    all: Option<f64>,
    total: usize,
) {
    match (set.set, unmeasured, all, set.trained_count()) {
        ("untrained", _, Some(all), _) => {
            println!("MAPE {error:.2} % on {which}; {all:.2} % on all {total}")
        }
        ("all", Some(u), _, Some(trained)) => println!(
            "MAPE {error:.2} % on {which}; {u:.2} % on the {} not used for training",
            total - trained
        ),
        _ => println!("MAPE {error:.2} % on {which}"),
    }
}

/// The configurations evaluated on, in words.
fn described(set: &EvaluationRows, test: Option<&Path>, total: usize) -> String {
    match (set.set, test, set.trained_count()) {
        (_, Some(test), _) => {
            format!(
                "the {} configurations of {}",
                set.rows.len(),
                test.display()
            )
        }
        ("untrained", ..) => format!(
            "{} configurations not used for training (of {total})",
            set.rows.len()
        ),
        (_, _, Some(trained)) => {
            format!("all {total} configurations ({trained} of them used for training)")
        }
        _ => format!(
            "all {total} configurations (the model does not record its training configurations)"
        ),
    }
}

/// The rows of `data` holding the configurations listed in a CSV file.
fn lookup(data: &Dataset, test: &Path, data_path: &Path) -> Result<Vec<usize>> {
    let valid = ValidConfigurations::new(&data.space)?;
    let configs = read_configurations_csv(&valid, test)?;
    let index: HashMap<&space::Configuration, usize> = data
        .configurations
        .iter()
        .enumerate()
        .map(|(r, c)| (c, r))
        .collect();
    configs
        .iter()
        .map(|c| {
            index.get(c).copied().with_context(|| {
                format!(
                    "{}: configuration `{}` is not measured in {}",
                    test.display(),
                    space::shown_configuration(&data.space.format_configuration(c)),
                    data_path.display()
                )
            })
        })
        .collect()
}

pub fn experiment(cmd: ExperimentCommand) -> Result<Outcome> {
    match cmd {
        ExperimentCommand::Deepperf(args) => experiment_deepperf(args),
        ExperimentCommand::Compare(args) => experiment_compare(args),
    }
}

fn experiment_deepperf(args: DeepPerfArgs) -> Result<Outcome> {
    let learner: Learner = args.learner.parse()?;
    let published = published_system(&args)?;
    let sizes = match (args.n, &published) {
        (Some(n), _) if n > 0 => (1..=5).map(|k| k * n).collect(),
        (Some(_), _) => bail!("--n must be at least 1"),
        (None, _) if !args.sizes.is_empty() => args.sizes.clone(),
        (None, Some(system)) => system.sizes(),
        (None, None) => bail!(
            "give --sizes or --n: `{}` is not one of the published systems ({})",
            args.data.display(),
            published_names()
        ),
    };
    if args.repetitions == 0 {
        bail!("--repetitions must be at least 1");
    }
    let data = load_data(&args.data, args.space.as_deref())?;
    let table = Table::new(&data);
    let results = deepperf(&table, &sizes, &learner, args.repetitions, args.seed)?;
    let cell = |size: usize| published.as_ref().and_then(|s| s.cell(size));
    if args.json {
        let rows: Vec<_> = results
            .iter()
            .map(|r| {
                json!({
                    "size": r.size,
                    "mean_mre_percent": r.mean_mre,
                    "median_mre_percent": r.median_mre,
                    "margin_percent": r.margin,
                    "seconds_per_experiment": r.seconds,
                    "cpu_seconds_per_experiment": r.cpu_seconds,
                    "mean_model_size": r.mean_size,
                    "mre_percent": r.errors,
                    "published": cell(r.size).map(|c| json!({
                        "best_mean_mre_percent": c.best,
                        "holder": c.holder,
                        "deepperf_mean_mre_percent": c.deepperf,
                    })),
                })
            })
            .collect();
        crate::print_json(&json!({
            "data": args.data,
            "system": published.as_ref().map(|s| &s.name),
            "learner": learner.to_string(),
            "repetitions": args.repetitions,
            "seed": args.seed,
            "configurations": table.rows.len(),
            "rows": rows,
        }))?;
        return Ok(Outcome::Done);
    }
    print_deepperf_table(&args, &learner, &results, published.as_ref());
    Ok(Outcome::Done)
}

/// The published results to show: those of `--system`, which must exist, or of the system
/// the data file is named after, if any.
fn published_system(args: &DeepPerfArgs) -> Result<Option<learn::published::System>> {
    if let Some(name) = &args.system {
        return match learn::published::system(name) {
            Some(s) => Ok(Some(s)),
            None => bail!(
                "--system {name}: no published results for this system (known: {})",
                published_names()
            ),
        };
    }
    let stem = args.data.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    Ok(learn::published::system(stem))
}

fn published_names() -> String {
    learn::published::scoreboard()
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// DeepPerf's table as text: one row per sample size, with the best published mean, its
/// holder and DeepPerf's own mean when the system is a published one.
fn print_deepperf_table(
    args: &DeepPerfArgs,
    learner: &Learner,
    results: &[SizeResult],
    published: Option<&learn::published::System>,
) {
    println!(
        "# {}: {learner}, {} repetitions (seed {}); MRE on all configurations not in the sample",
        args.data.display(),
        args.repetitions,
        args.seed
    );
    println!("# s/model: CPU seconds to learn one model (search included) and predict the rest");
    if let Some(s) = published {
        println!(
            "# published: best mean MRE of {} at each size and who holds it, DeepPerf's own mean",
            s.name
        );
    }
    println!(
        "{:>6} {:>9} {:>8} {:>8} {:>9} {:>8} {:>9} {:<9} {:>8}",
        "size", "MRE (%)", "± 95 %", "median", "s/model", "terms", "best", "holder", "DeepPerf"
    );
    for r in results {
        let c = published.and_then(|s| s.cell(r.size));
        let (best, holder, deep) = match c {
            Some(c) => (
                format!("{:.2}", c.best),
                c.holder.clone(),
                format!("{:.2}", c.deepperf),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:>6} {:>9.2} {:>8.2} {:>8.2} {:>9.4} {:>8.1} {:>9} {:<9} {:>8}",
            r.size,
            r.mean_mre,
            r.margin,
            r.median_mre,
            r.cpu_seconds.unwrap_or(r.seconds),
            r.mean_size,
            best,
            holder,
            deep
        );
    }
}

fn experiment_compare(args: CompareArgs) -> Result<Outcome> {
    let learners = Learner::parse_list(&args.learners)?;
    let strategies = args
        .sample
        .iter()
        .map(|s| s.parse::<Strategy>())
        .collect::<Result<Vec<_>, _>>()?;
    let data = load_data(&args.data, args.space.as_deref())?;
    if args.repetitions == 0 {
        bail!("--repetitions must be at least 1");
    }
    let rows = compare(&data, &strategies, &learners, args.seed, args.repetitions)?;
    if args.json {
        let rows: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "sample": r.strategy,
                    "learner": r.learner,
                    "repetitions": r.repetitions,
                    "configurations": r.configurations,
                    "measurement": r.measurement,
                    "learn_seconds": r.learn_seconds,
                    "mape_percent": r.mape.map(|(m, _)| m),
                    "margin_percent": r.mape.map(|(_, margin)| margin),
                    "terms": r.terms,
                    "leaves": r.leaves,
                })
            })
            .collect();
        crate::print_json(&json!({
            "data": args.data,
            "configurations": data.configurations.len(),
            "metric": data.metric,
            "repetitions": args.repetitions,
            "seed": args.seed,
            "rows": rows,
        }))?;
        return Ok(Outcome::Done);
    }
    print_compare_table(&args, &data, &rows);
    Ok(Outcome::Done)
}

/// The strategies × learners table as text: one row per strategy and learner.
fn print_compare_table(args: &CompareArgs, data: &Dataset, rows: &[CompareRow]) {
    println!(
        "# {}: {} configurations; measurement = sum of the sampled configurations' {}; means over {} repetition(s)",
        args.data.display(),
        data.configurations.len(),
        data.metric,
        args.repetitions
    );
    let width = rows
        .iter()
        .map(|r| r.learner.len())
        .max()
        .unwrap_or(0)
        .max(7);
    println!(
        "{:<16} {:<width$} {:>8} {:>12} {:>10} {:>16} {:>7} {:>7}",
        "sample", "learner", "configs", "measurement", "learn (s)", "MAPE (%)", "terms", "leaves"
    );
    for r in rows {
        let mape = match r.mape {
            None => "—".to_string(),
            Some((m, _)) if r.repetitions == 1 => format!("{m:.2}"),
            Some((m, margin)) => format!("{m:.2} ± {margin:.2}"),
        };
        println!(
            "{:<16} {:<width$} {:>8.1} {:>12.1} {:>10.4} {:>16} {:>7.1} {:>7.0}",
            r.strategy,
            r.learner,
            r.configurations,
            r.measurement,
            r.learn_seconds,
            mape,
            r.terms,
            r.leaves
        );
    }
}
