//! `knobs predict` and `knobs model …`: use, inspect and convert performance-influence models.

use std::fs::File;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use model::{
    ModelFile, Threshold, Transform, importances, influence_from_subspaces, predict_csv,
    subspaces_from_influence,
};

use crate::Outcome;

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs space sample examples/running-example/space.toml --sample all -o all.csv\n  \
    knobs predict examples/running-example/model.json all.csv")]
pub struct PredictArgs {
    /// The model JSON (docs/model-json.md).
    model: PathBuf,
    /// Configurations as CSV with a header of option names (e.g. from `knobs space sample`).
    configs: PathBuf,
}

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Print a model sorted by influence, optionally pruning small terms.
    #[command(
        after_help = "Example:\n  knobs model show examples/running-example/model.json\n  \
        knobs model show examples/running-example/model.json --prune-relative 0.05 --json"
    )]
    Show {
        /// The model JSON (docs/model-json.md).
        model: PathBuf,
        /// Drop terms whose |coefficient| is below this value.
        #[arg(long, conflicts_with = "prune_relative")]
        prune_absolute: Option<f64>,
        /// Drop terms whose |coefficient| is below this fraction of the largest one.
        #[arg(long)]
        prune_relative: Option<f64>,
        /// Decimals to print.
        #[arg(long, default_value_t = 2)]
        precision: usize,
        /// Print the (pruned) model JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Build a model from the subspace form: one value per combination of the options.
    /// Cell i has option j selected when bit j of i is set (cell 0: none selected).
    #[command(after_help = "Example:\n  \
        knobs model from-subspaces --options A,C 0 3 0 6   # 0 s, 3 s with A, 0 s with C, 6 s with both")]
    FromSubspaces {
        /// Options, comma-separated: `A,B`.
        #[arg(long, value_delimiter = ',', required = true)]
        options: Vec<String>,
        /// The 2^k cell values, in cell order.
        #[arg(required = true, allow_hyphen_values = true)]
        cells: Vec<f64>,
    },
    /// Print a model's subspace form over the given binary options (CSV: options, value).
    #[command(after_help = "Example:\n  \
        knobs model subspaces examples/running-example/model.json --options A,B,C")]
    Subspaces {
        /// The model JSON (docs/model-json.md).
        model: PathBuf,
        /// Binary options, comma-separated: `A,B`.
        #[arg(long, value_delimiter = ',', required = true)]
        options: Vec<String>,
    },
}

pub fn predict(args: PredictArgs) -> Result<Outcome> {
    let file = ModelFile::load(&args.model)?;
    let input = File::open(&args.configs).with_context(|| args.configs.display().to_string())?;
    predict_csv(
        &file,
        input,
        &args.configs.display().to_string(),
        std::io::stdout().lock(),
    )?;
    Ok(Outcome::Done)
}

pub fn run(cmd: ModelCommand) -> Result<Outcome> {
    match cmd {
        ModelCommand::Show {
            model,
            prune_absolute,
            prune_relative,
            precision,
            json,
        } => {
            let mut file = ModelFile::load(&model)?;
            let threshold = match (prune_absolute, prune_relative) {
                (Some(a), _) => Some(Threshold::Absolute(a)),
                (_, Some(r)) => Some(Threshold::Relative(r)),
                _ => None,
            };
            let mut dropped = 0;
            if let Some(t) = threshold {
                dropped += file.terms.prune(t).len();
                for r in &mut file.regions {
                    r.terms.prune(t);
                }
            }
            if json {
                println!("{}", file.to_json());
                return Ok(Outcome::Done);
            }
            if let Some(system) = &file.system {
                println!("system: {system}");
            }
            if let Some(metric) = &file.metric {
                println!("metric: {metric}");
            }
            if file.transform == Transform::Log {
                println!("transform: log (the model predicts ln(performance))");
            }
            if !file.trees.is_empty() {
                print_trees(&file, precision);
            }
            if file.trees.is_empty() {
                println!("{}", file.terms.format(precision));
            } else if !file.terms.terms().is_empty() {
                println!("plus the terms: {}", file.terms.format(precision));
            }
            if dropped > 0 {
                println!("({dropped} terms below the threshold pruned)");
            }
            for r in &file.regions {
                println!("{}", region_line(r, &r.terms.format(precision)));
            }
            Ok(Outcome::Done)
        }
        ModelCommand::FromSubspaces { options, cells } => {
            let terms = influence_from_subspaces(&options, &cells)?;
            println!("{}", ModelFile::new(terms).to_json());
            Ok(Outcome::Done)
        }
        ModelCommand::Subspaces { model, options } => {
            let file = ModelFile::load(&model)?;
            if !file.is_influence_model() {
                anyhow::bail!(
                    "{}: the subspace form needs a sum of terms on the performance scale, and this model has trees or a transform",
                    model.display()
                );
            }
            let cells = subspaces_from_influence(&options, &file.terms)?;
            println!("{},value", options.join(","));
            for (m, v) in cells.iter().enumerate() {
                let bits: Vec<String> = (0..options.len())
                    .map(|j| ((m >> j) & 1).to_string())
                    .collect();
                println!("{},{v}", bits.join(","));
            }
            Ok(Outcome::Done)
        }
    }
}

/// Tree models: how many trees, how deep, how many leaves, and which options matter most.
fn print_trees(file: &ModelFile, precision: usize) {
    let trees = &file.trees;
    let depth = trees.iter().map(|t| t.depth()).max().unwrap_or(0);
    let leaves: usize = trees.iter().map(|t| t.leaves()).sum();
    if trees.len() == 1 {
        println!("regression tree: depth {depth}, {leaves} leaves");
    } else {
        println!(
            "forest: {} trees (prediction = their mean), depth ≤ {depth}, {:.1} leaves per tree",
            trees.len(),
            leaves as f64 / trees.len() as f64
        );
    }
    let ranked = importances(trees);
    if !ranked.is_empty() {
        println!("option importance (share of the squared-error reduction):");
        for (option, share) in ranked {
            println!("  {option:<24} {:.prec$}", share, prec = precision.max(2));
        }
    }
}

/// Prints the global model and the regions that matter most, leaving out terms below 1 % of
/// the largest global term (measurement noise); the file has everything.
pub fn print_model(model: &model::ModelFile, most_regions: usize) {
    let largest = model
        .terms
        .terms()
        .iter()
        .map(|t| t.value.abs())
        .fold(0.0, f64::max);
    let limit = 0.01 * largest;
    let shown = |terms: &model::InfluenceModel| {
        // `prune` keeps the intercept; a region's near-zero intercept is noise too.
        let kept = terms
            .terms()
            .iter()
            .filter(|t| t.value.abs() >= limit)
            .cloned();
        model::InfluenceModel::from_terms(kept).format(4)
    };
    println!("{}", shown(&model.terms));
    // Regions by the size of their local model.
    let weight = |r: &model::Region| r.terms.terms().iter().map(|t| t.value.abs()).sum::<f64>();
    let mut regions: Vec<&model::Region> = model
        .regions
        .iter()
        .filter(|r| weight(r) >= 0.01 * largest)
        .collect();
    regions.sort_by(|a, b| weight(b).total_cmp(&weight(a)));
    let hidden = model.regions.len() - regions.len().min(most_regions);
    for r in regions.into_iter().take(most_regions) {
        println!("  {}", region_line(r, &shown(&r.terms)));
    }
    if hidden > 0 {
        println!("  ({hidden} more regions, smaller: knobs model show FILE)");
    }
}

/// `region ID FILE:FIRST-LAST [OPTIONS]: TERMS`, the file without its directories.
fn region_line(r: &model::Region, terms: &str) -> String {
    let place = r.location.as_ref().map_or(String::new(), |l| {
        format!(" {}:{}-{}", short(&l.file), l.lines[0], l.lines[1])
    });
    format!("region {}{place} [{}]: {terms}", r.id, r.options.join(", "))
}

/// A source file's name without its directories, for one-line region summaries.
fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}
