//! `knobs predict` and `knobs model …`: use, inspect and convert performance-influence models.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use model::{
    Configurations, Effects, Given, KnownValues, ModelFile, Scale, Threshold, Transform, assign,
    importances, influence_from_subspaces, parse_given, predict_csv, show_value,
    subspaces_from_influence,
};

use crate::Outcome;

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs predict examples/running-example/model.json A,B\n  \
    knobs space sample examples/running-example/space.toml --sample all -o all.csv\n  \
    knobs predict examples/running-example/model.json all.csv\n  \
    printf 'A\\nA,C\\n' | knobs predict examples/running-example/model.json\n  \
    knobs predict MODEL --spec examples/xz/knobs.toml --top 5")]
pub struct PredictArgs {
    /// The model JSON (docs/model-json.md).
    model: PathBuf,
    /// A configuration (`level=6,extreme`: the selected options and numeric values), or a
    /// CSV file with a header of option names (e.g. from `knobs space sample`); without it,
    /// standard input: CSV, or one configuration a line.
    input: Option<String>,
    /// A system spec or space: its options' values are what the model may be asked about
    /// (default: the configurations it was built from), its valid configurations what
    /// --best and --top search.
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Print the valid configuration the model predicts fastest (needs --spec).
    #[arg(long, requires = "spec", conflicts_with_all = ["input", "top"])]
    best: bool,
    /// Print the N valid configurations the model predicts fastest (needs --spec).
    #[arg(long, value_name = "N", requires = "spec", conflicts_with = "input")]
    top: Option<usize>,
}

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Print a model, its options and terms ranked by their effect (the largest difference
    /// each makes to the prediction between configurations, never more than the model's
    /// spread), optionally pruning small terms; warns of models that fit their noise or are
    /// constant.
    #[command(
        after_help = "Example:\n  knobs model show examples/running-example/model.json\n  \
        knobs model show MODEL --spec examples/xz/knobs.toml --prune-relative 0.05 --json"
    )]
    Show {
        /// The model JSON (docs/model-json.md).
        model: PathBuf,
        /// A system spec or space: effects are read over its valid configurations (default:
        /// the configurations the model was built from).
        #[arg(long)]
        spec: Option<PathBuf>,
        /// Drop terms whose effect is below this value (in the model's unit: seconds for a
        /// time, ln units for a log model).
        #[arg(long, conflicts_with = "prune_relative")]
        prune_absolute: Option<f64>,
        /// Drop terms whose effect is below this fraction of the model's spread (its largest
        /// prediction minus its smallest).
        #[arg(long)]
        prune_relative: Option<f64>,
        /// Decimals to print (default: 2, in a unit that suits the model: s, ms, µs).
        #[arg(long)]
        precision: Option<usize>,
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
    if let Some(system) = args.spec.as_deref().and_then(spec_system) {
        file.check_system(&system, &args.model.display().to_string())?;
    }
    if let Some(warning) = model::unmeasured_warning(&file) {
        eprintln!("warning: {warning}");
    }
    let space = args.spec.as_deref().map(load_space).transpose()?;
    if let (Some(space), Some(n)) = (&space, args.top.or(args.best.then_some(1))) {
        for (configuration, prediction) in report::fastest(&file, space, n)? {
            let value = show_value(prediction, file.metric.as_deref());
            println!(
                "{value:>12}  {}",
                space::shown_configuration(&configuration)
            );
        }
        return Ok(Outcome::Done);
    }
    let known = match &space {
        Some(space) => known_values(space),
        None => KnownValues::from_training(&file),
    };
    // Every input path (typed, CSV file, standard input) is checked the same way.
    let predict_one = |given: &Given| -> Result<(f64, Vec<String>), model::Error> {
        let assignment = assign(&file, &known, given)?;
        let mut warnings = assignment.warnings;
        if let Some(why) = space.as_ref().and_then(|s| s.why_invalid(given)) {
            warnings.push(format!("not a valid configuration of the space: {why}"));
        }
        let prediction = file.bind(&assignment.columns)?.predict(&assignment.values);
        Ok((prediction, warnings))
    };
    let text = match args.input.as_deref() {
        // A CSV file; a name ending in `.csv` is one even when it does not exist (an error).
        Some(input) if Path::new(input).is_file() || input.to_lowercase().ends_with(".csv") => {
            let csv = File::open(input).with_context(|| input.to_string())?;
            let out = std::io::stdout().lock();
            let warnings = predict_csv(csv, input, &file.options(), out, predict_one)?;
            warnings.iter().for_each(|w| eprintln!("warning: {w}"));
            return Ok(Outcome::Done);
        }
        Some(configuration) => configuration.to_string(),
        None => std::io::read_to_string(std::io::stdin()).context("standard input")?,
    };
    if args.input.is_none() && looks_like_csv(&text) {
        let out = std::io::stdout().lock();
        let (text, required) = (text.as_bytes(), file.options());
        let warnings = predict_csv(text, "standard input", &required, out, predict_one)?;
        warnings.iter().for_each(|w| eprintln!("warning: {w}"));
        return Ok(Outcome::Done);
    }
    let lines: Vec<&str> = match args.input {
        Some(_) => vec![text.as_str()],
        None => text.lines().filter(|l| !l.trim().is_empty()).collect(),
    };
    for line in lines {
        let (prediction, warnings) = predict_one(&parse_given(line)?)?;
        for warning in &warnings {
            eprintln!("warning: `{}`: {warning}", line.trim());
        }
        let value = show_value(prediction, file.metric.as_deref());
        println!("{value}  {}", space::shown_configuration(line.trim()));
    }
    Ok(Outcome::Done)
}

/// The system a system spec describes (`None` for a file that only describes a space: its
/// name may be its file's).
pub fn spec_system(path: &Path) -> Option<String> {
    measure::SystemSpec::load(path)
        .ok()
        .filter(|spec| spec.run.is_some())
        .map(|spec| spec.name)
}

/// A system spec's space (`knobs.toml`), or a space file of any format `knobs space` reads.
fn load_space(path: &Path) -> Result<space::ConfigSpace> {
    match measure::SystemSpec::load(path) {
        Ok(spec) => Ok(spec.space),
        Err(_) => Ok(space::load_space(path)?),
    }
}

/// Every value of every option of the space.
fn known_values(space: &space::ConfigSpace) -> KnownValues {
    let mut known = KnownValues::default();
    for o in space.options() {
        for index in 0..o.arity() as u32 {
            known.include(&o.name, o.numeric_value(index));
        }
    }
    known
}

/// Whether standard input is CSV (a header of names, then rows of numbers) rather than one
/// configuration a line.
fn looks_like_csv(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let (Some(header), Some(row)) = (lines.next(), lines.next()) else {
        return false;
    };
    !header.contains('=')
        && row
            .split(',')
            .all(|cell| cell.trim().parse::<f64>().is_ok())
}

pub fn run(cmd: ModelCommand) -> Result<Outcome> {
    match cmd {
        ModelCommand::Show {
            model,
            spec,
            prune_absolute,
            prune_relative,
            precision,
            json,
        } => {
            let threshold = match (prune_absolute, prune_relative) {
                (Some(a), _) => Some(Threshold::Absolute(a)),
                (_, Some(r)) => Some(Threshold::Relative(r)),
                _ => None,
            };
            show(&model, spec.as_deref(), threshold, precision, json)
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

/// What a model's effects are read over: the valid configurations of `spec` (a system spec
/// or space) when given, else those the model was built from, else its values' combinations.
fn effect_configurations(file: &ModelFile, spec: Option<&Path>) -> Result<Configurations> {
    let Some(path) = spec else {
        return Ok(Configurations::of_model(file));
    };
    let space = load_space(path)?;
    report::valid_configurations(&space)?.with_context(|| {
        format!(
            "{}: more than {} valid configurations to read effects over; drop --spec to read them over the model's training configurations",
            path.display(),
            report::MOST_VALID
        )
    })
}

/// `knobs model show`: the model's terms ranked by effect in a unit that suits them, its
/// trees, its regions, its options' effects, and what to beware of.
fn show(
    path: &Path,
    spec: Option<&Path>,
    threshold: Option<Threshold>,
    precision: Option<usize>,
    json: bool,
) -> Result<Outcome> {
    let mut file = ModelFile::load(path)?;
    let configurations = effect_configurations(&file, spec)?;
    let mut dropped = 0;
    if let Some(t) = threshold {
        let effects = Effects::of(&file, configurations.clone())?;
        dropped += effects.prune(&mut file.terms, t).len();
        for r in &mut file.regions {
            effects.prune(&mut r.terms, t);
        }
    }
    if json {
        println!("{}", file.to_json());
        return Ok(Outcome::Done);
    }
    let effects = Effects::of(&file, configurations)?;
    let scale = Scale::of_model(&file, &effects, None);
    let precision = precision.unwrap_or_else(|| measured_precision(&file, &scale));
    if let Some(system) = &file.system {
        println!("system: {system}");
    }
    if let Some(metric) = &file.metric {
        match scale.unit {
            "" | "s" => println!("metric: {metric}"),
            unit => println!("metric: {metric}; terms in {unit}"),
        }
    }
    for warning in model::warnings(&file) {
        println!("warning: {warning}");
    }
    if file.transform == Transform::Log {
        println!("transform: log (the model predicts ln(performance))");
    }
    print_members(&file, &effects, &scale, precision);
    if !file.trees.is_empty() {
        print_trees(&file, precision);
    }
    let terms = file.terms.format_ranked(&effects, &scale, precision);
    if file.trees.is_empty() {
        println!("{terms}");
    } else if !file.terms.terms().is_empty() {
        println!("plus the terms: {terms}");
    }
    if dropped > 0 {
        println!("({dropped} terms below the threshold pruned)");
    }
    for r in &file.regions {
        let local = r.terms.format_ranked(&effects, &scale, precision);
        println!("{}", region_line(r, &local));
    }
    print_effects(&file, &effects, &scale, precision);
    Ok(Outcome::Done)
}

/// The options' and terms' effects, each a difference between two predictions of the
/// configurations the effects are read over, and the model's spread they never exceed.
fn print_effects(file: &ModelFile, effects: &Effects, scale: &Scale, precision: usize) {
    let shown = |effect: f64| match file.transform {
        Transform::Log => format!("×{:.prec$}", effect.exp(), prec = precision.max(2)),
        Transform::Identity => scale.show(effect, precision),
    };
    println!(
        "effects over {}; the predictions span {}:",
        effects.configurations.described,
        match file.transform {
            Transform::Log => format!(
                "×{:.prec$}",
                effects.spread().exp(),
                prec = precision.max(2)
            ),
            Transform::Identity => scale.show(effects.spread(), precision),
        }
    );
    for o in &effects.options {
        let how = match o.others {
            Some(0) => "",
            Some(_) => "  (swapped for another member)",
            None => "  (over any two configurations that differ in it)",
        };
        println!("  option {:<24} {}{how}", o.option, shown(o.effect));
    }
    for t in file.terms.ranked_terms(effects) {
        if t.options.is_empty() {
            continue;
        }
        let offset = if effects.is_offset(t) {
            "  (offset by other terms: its coefficient alone moves further)"
        } else {
            ""
        };
        println!(
            "  term   {:<24} {}{offset}",
            t.label(),
            shown(effects.term(t))
        );
    }
}

/// A mean of learners (`auto`'s or `L1+L2`): what it is, and each member as learned, its
/// terms at full weight, so that no weighted coefficient reads as an effect.
fn print_members(file: &ModelFile, effects: &Effects, scale: &Scale, precision: usize) {
    let Some(members) = file.provenance.get("members").and_then(|m| m.as_array()) else {
        return;
    };
    println!(
        "mean of {k} models{}, each weighted 1/{k}: the terms and trees below are their weighted sum; each member as learned:",
        if file.transform == Transform::Log {
            " of ln(performance)"
        } else {
            ""
        },
        k = members.len()
    );
    for m in members {
        let terms: model::InfluenceModel =
            serde_json::from_value(m["terms"].clone()).unwrap_or_default();
        let mut parts = Vec::new();
        if !terms.terms().is_empty() {
            parts.push(terms.format_ranked(effects, scale, precision));
        }
        match m["trees"].as_u64().unwrap_or(0) {
            0 => {}
            1 => parts.push("a regression tree".into()),
            n => parts.push(format!("a forest of {n} trees")),
        }
        let learner = m["learner"].as_str().unwrap_or("?");
        println!("  {learner}: {}", parts.join(" plus "));
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

/// Prints the global model and the regions that matter most, ranked by effect in a unit
/// that suits them, leaving out terms below 1 % of the model's spread (measurement noise);
/// the file has everything.
/// Decimals for a model's terms: 2, or for a sampled model (Comprex's profiler) one more than
/// a single sample resolves, as its values are means of many samples.
fn measured_precision(file: &ModelFile, scale: &Scale) -> usize {
    file.provenance
        .get("profile_period_seconds")
        .and_then(|p| p.as_f64())
        .and_then(|period| scale.decimals_for(period))
        .map_or(2, |decimals| decimals + 1)
}

pub fn print_model(model: &model::ModelFile, most_regions: usize) {
    let effects = match Effects::of(model, Configurations::of_model(model)) {
        Ok(effects) => effects,
        Err(e) => {
            println!("{} (the model cannot be read: {e})", model.terms);
            return;
        }
    };
    let scale = Scale::of_model(model, &effects, None);
    let precision = measured_precision(model, &scale);
    let limit = 0.01 * effects.spread();
    let shown = |terms: &model::InfluenceModel| {
        // `prune` keeps the intercept; a region's near-zero intercept is noise too.
        let kept = terms
            .terms()
            .iter()
            .filter(|t| {
                let size = match t.options.is_empty() {
                    true => t.value,
                    false => effects.term(t),
                };
                size.abs() >= limit
            })
            .cloned();
        model::InfluenceModel::from_terms(kept).format_ranked(&effects, &scale, precision)
    };
    if !scale.unit.is_empty() {
        println!("model ({}):", scale.unit);
    }
    println!("{}", shown(&model.terms));
    // Regions by how far their local model moves.
    let weight = |r: &model::Region| effects.spread_of(&r.terms);
    let mut regions: Vec<&model::Region> = model
        .regions
        .iter()
        .filter(|r| weight(r) >= limit)
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

/// `region ID FUNCTION() FILE:FIRST-LAST [OPTIONS]: TERMS`, the file without its
/// directories, the function when the model names one other than the id.
fn region_line(r: &model::Region, terms: &str) -> String {
    let place = r.location.as_ref().map_or(String::new(), |l| {
        let function = match &l.function {
            Some(f) if *f != r.id => format!(" {f}()"),
            _ => String::new(),
        };
        format!(
            "{function} {}:{}-{}",
            short(&l.file),
            l.lines[0],
            l.lines[1]
        )
    });
    format!("region {}{place} [{}]: {terms}", r.id, r.options.join(", "))
}

/// A source file's name without its directories, for one-line region summaries.
fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}
