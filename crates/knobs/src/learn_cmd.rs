//! `knobs learn`, `knobs evaluate` and `knobs experiment …`: black-box learners on measured
//! configurations, their error, and the evaluation protocols of the literature.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use learn::experiment::{compare, deepperf};
use learn::{Learner, Table, evaluate, learn, sample_rows, training_rows};
use model::ModelFile;
use serde_json::json;
use space::formats::read_configurations_csv;
use space::{Dataset, Strategy, ValidConfigurations};

use crate::Outcome;

const DATA_HELP: &str = "Measured configurations: a knobs results store (knobs.db), a dataset CSV (one column per option, performance last) or SPL Conqueror measurements XML (with --space)";
const LEARNER_HELP: &str = "Learner: stepwise | lasso | cart | rf | boost | ols:TERMS | auto, settings after `:` (e.g. `lasso:degree=2,log`), or a mean `L1+L2`; see the README";

/// Loads the measured configurations a command learns from or evaluates on. `space` is the
/// variability model SPL Conqueror measurements need.
pub fn load_data(path: &Path, space: Option<&Path>) -> Result<Dataset> {
    if crate::measure_cmd::is_store(path) {
        if space.is_some() {
            bail!(
                "{}: a results store carries its own space; drop --space",
                path.display()
            );
        }
        return crate::measure_cmd::store_dataset(path, None);
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
pub struct LearnArgs {
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    #[arg(long, short = 'l', help = LEARNER_HELP)]
    learner: String,
    /// Which measured configurations to learn from: all | random:N (among the measured
    /// ones) | featurewise | pairwise | twise:T | distance:N | file:PATH.csv (each sampled
    /// configuration must have been measured).
    #[arg(long, short = 's', default_value = "all")]
    sample: String,
    /// Seed for sampling, cross-validation folds and forests.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Variability model (SPL Conqueror .xml, or any space file) for XML measurements.
    #[arg(long)]
    space: Option<PathBuf>,
    /// Where to write the model JSON.
    #[arg(long, short = 'o')]
    out: PathBuf,
}

#[derive(Args)]
pub struct EvaluateArgs {
    /// Model JSON.
    model: PathBuf,
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    /// Evaluate on these configurations (CSV with a header of option names, as written by
    /// `knobs space sample`), looked up in DATA; default: every configuration of DATA the
    /// model was not trained on.
    #[arg(long)]
    test: Option<PathBuf>,
    #[arg(long)]
    space: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum ExperimentCommand {
    /// DeepPerf's protocol: for each sample size, draw random samples, learn, and compute
    /// the mean relative error on all other configurations; prints size, mean MRE, its 95 %
    /// margin, seconds per experiment and model size.
    Deepperf(DeepPerfArgs),
    /// Sampling strategies × learners (Comprex, Tables II/III): sample size, measurement cost,
    /// learning time, MAPE on the configurations not sampled, model size.
    Compare(CompareArgs),
}

#[derive(Args)]
pub struct DeepPerfArgs {
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    #[arg(long, short = 'l', help = LEARNER_HELP)]
    learner: String,
    /// Sample sizes, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "n",
        required_unless_present = "n"
    )]
    sizes: Vec<usize>,
    /// Sizes n, 2n, …, 5n (DeepPerf's per-system n).
    #[arg(long)]
    n: Option<usize>,
    /// Repetitions per size.
    #[arg(long, default_value_t = 30)]
    reps: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    space: Option<PathBuf>,
}

#[derive(Args)]
pub struct CompareArgs {
    #[arg(help = DATA_HELP)]
    data: PathBuf,
    /// Sampling strategies, comma-separated (e.g. `featurewise,pairwise,random:50`).
    #[arg(long, value_delimiter = ',', required = true)]
    strategies: Vec<String>,
    /// Learners, comma-separated (e.g. `stepwise,rf`; `;` separates learners whose settings
    /// contain commas unambiguously).
    #[arg(long, required = true)]
    learners: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Repetitions with different seeds (sample and learner); the table shows means and the
    /// 95 % margin of the MAPE.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    #[arg(long)]
    space: Option<PathBuf>,
}

pub fn learn_model(args: LearnArgs) -> Result<Outcome> {
    let learner: Learner = args.learner.parse()?;
    let strategy: Strategy = args.sample.parse()?;
    let data = load_data(&args.data, args.space.as_deref())?;
    let rows = sample_rows(&data, &strategy, args.seed)?;
    let start = Instant::now();
    let mut file = learn(&data, &rows, &learner, args.seed)?;
    let seconds = start.elapsed().as_secs_f64();
    let p = &mut file.provenance;
    p.insert("dataset".into(), json!(args.data.display().to_string()));
    p.insert("sample".into(), json!(strategy.to_string()));
    file.save(&args.out)?;
    println!(
        "learned {} from {} of {} configurations in {seconds:.3} s",
        file.provenance["resolved"].as_str().unwrap_or(""),
        rows.len(),
        data.configurations.len()
    );
    if let Some(cv) = file.provenance.get("cv_mre").and_then(|v| v.as_f64()) {
        println!("cross-validated MRE on the sample: {:.2} %", cv * 100.0);
    }
    if file.trees.is_empty() {
        println!(
            "{} terms{}",
            file.terms.terms().len(),
            if file.transform == model::Transform::Log {
                " (of ln(performance))"
            } else {
                ""
            }
        );
    } else {
        let leaves: usize = file.trees.iter().map(|t| t.leaves()).sum();
        println!(
            "{} terms, {} trees with {leaves} leaves",
            file.terms.terms().len(),
            file.trees.len()
        );
    }
    println!("model written to {}", args.out.display());
    Ok(Outcome::Done)
}

pub fn evaluate_model(args: EvaluateArgs) -> Result<Outcome> {
    let file = ModelFile::load(&args.model)?;
    let data = load_data(&args.data, args.space.as_deref())?;
    let table = Table::new(&data);
    let total = table.rows.len();
    let (rows, which) = match &args.test {
        Some(test) => {
            let rows = lookup(&data, test, &args.data)?;
            let which = format!("the {} configurations of {}", rows.len(), test.display());
            (rows, which)
        }
        None => match training_rows(&file, &table) {
            Some(training) => {
                let mut trained = vec![false; total];
                for r in training {
                    trained[r] = true;
                }
                let rows: Vec<usize> = (0..total).filter(|r| !trained[*r]).collect();
                let which = format!(
                    "{} configurations not used for training (of {total})",
                    rows.len()
                );
                (rows, which)
            }
            None => (
                (0..total).collect(),
                format!(
                    "all {total} configurations (the model does not record its training configurations)"
                ),
            ),
        },
    };
    if rows.is_empty() {
        bail!(
            "{}: no configurations to evaluate on (the model was trained on all of them); give --test",
            args.data.display()
        );
    }
    let error = evaluate(&file, &table, &rows)
        .with_context(|| format!("evaluating {}", args.model.display()))?;
    println!("MAPE {error:.2} % on {which}");
    Ok(Outcome::Done)
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
                    data.space.format_configuration(c),
                    data_path.display()
                )
            })
        })
        .collect()
}

pub fn experiment(cmd: ExperimentCommand) -> Result<Outcome> {
    match cmd {
        ExperimentCommand::Deepperf(args) => {
            let learner: Learner = args.learner.parse()?;
            let sizes = match args.n {
                Some(n) if n > 0 => (1..=5).map(|k| k * n).collect(),
                Some(_) => bail!("--n must be at least 1"),
                None => args.sizes.clone(),
            };
            if args.reps == 0 {
                bail!("--reps must be at least 1");
            }
            let data = load_data(&args.data, args.space.as_deref())?;
            let table = Table::new(&data);
            let results = deepperf(&table, &sizes, &learner, args.reps, args.seed)?;
            println!(
                "# {}: {learner}, {} repetitions (seed {}); MRE on all configurations not in the sample",
                args.data.display(),
                args.reps,
                args.seed
            );
            println!(
                "{:>6} {:>9} {:>8} {:>12} {:>8}",
                "size", "MRE (%)", "± 95 %", "s/experiment", "terms"
            );
            for r in results {
                println!(
                    "{:>6} {:>9.2} {:>8.2} {:>12.4} {:>8.1}",
                    r.size, r.mean_mre, r.margin, r.seconds, r.mean_size
                );
            }
            Ok(Outcome::Done)
        }
        ExperimentCommand::Compare(args) => {
            let learners = Learner::parse_list(&args.learners)?;
            let strategies = args
                .strategies
                .iter()
                .map(|s| s.parse::<Strategy>())
                .collect::<Result<Vec<_>, _>>()?;
            let data = load_data(&args.data, args.space.as_deref())?;
            if args.reps == 0 {
                bail!("--reps must be at least 1");
            }
            let rows = compare(&data, &strategies, &learners, args.seed, args.reps)?;
            println!(
                "# {}: {} configurations; measurement = sum of the sampled configurations' {}; means over {} repetition(s)",
                args.data.display(),
                data.configurations.len(),
                data.metric,
                args.reps
            );
            let width = rows
                .iter()
                .map(|r| r.learner.len())
                .max()
                .unwrap_or(0)
                .max(7);
            println!(
                "{:<16} {:<width$} {:>8} {:>12} {:>10} {:>16} {:>7} {:>7}",
                "sample",
                "learner",
                "configs",
                "measurement",
                "learn (s)",
                "MAPE (%)",
                "terms",
                "leaves"
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
            Ok(Outcome::Done)
        }
    }
}
