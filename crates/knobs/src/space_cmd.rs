//! `knobs space …`: show, count, check and sample a configuration space.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use measure::load_space;
use serde_json::json;
use space::formats::{parse_configurations_csv, write_configurations_csv};
use space::{ConfigSpace, Domain, GroupKind, Strategy, ValidConfigurations, sample};

use crate::Outcome;

/// The positional space argument of every `knobs space` command.
pub const SPACE_HELP: &str = "Space file: knobs spec (.toml), SPL Conqueror variability model (.xml), DIMACS (.dimacs/.cnf) or dataset (.csv)";

/// The grammar of sampling strategies (`--sample` of every command that samples).
macro_rules! strategies {
    () => {
        "all | featurewise | negfeaturewise | pairwise | twise:T (T=1..3) | random:N | distance:N | file:PATH.csv"
    };
}
pub(crate) use strategies;

/// `--sample` of the commands that sample a space (`space sample`, `measure`).
pub const SAMPLE_HELP: &str = concat!("Which configurations: ", strategies!());

/// `--seed` of the commands that sample a space.
pub const SEED_HELP: &str = "Seed for the random choices; the same seed gives the same sample";

#[derive(Subcommand)]
pub enum SpaceCommand {
    /// Print the option tree, groups, constraints and the number of valid configurations.
    #[command(after_help = "Example:\n  knobs space show examples/xz/space.toml\n  \
        knobs space show ../shared/datasets/splconqueror/x264/FeatureModel.xml --json")]
    Show(ShowArgs),
    /// Print the exact number of valid configurations.
    #[command(
        after_help = "Example:\n  knobs space count examples/xz/space.toml\n  \
        knobs space count ../shared/datasets/splconqueror/x264/FeatureModel.xml   # 1152"
    )]
    Count(CountArgs),
    /// Check configurations and say which rule each invalid one breaks (exit status 1 if
    /// any is invalid).
    #[command(after_help = "Example:\n  \
        knobs space check examples/xz/space.toml \"format,format_xz,check_crc64,level=6,threads=2\"\n  \
        knobs space check examples/xz/space.toml --csv configs.csv --json")]
    Check(CheckArgs),
    /// Sample valid configurations; prints CSV (header of option names, one row each).
    #[command(after_help = "Example:\n  \
        knobs space sample examples/xz/space.toml --sample pairwise --seed 1 -o pairwise.csv\n  \
        knobs space sample ../shared/datasets/splconqueror/x264/FeatureModel.xml --sample random:50")]
    Sample(SampleArgs),
}

#[derive(Args)]
pub struct ShowArgs {
    #[arg(help = SPACE_HELP)]
    space: PathBuf,
    /// Print JSON on stdout instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CountArgs {
    #[arg(help = SPACE_HELP)]
    space: PathBuf,
    /// Print JSON on stdout instead of text: the space's name and the count (a string:
    /// counts exceed every JSON number type for large spaces).
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CheckArgs {
    #[arg(help = SPACE_HELP)]
    space: PathBuf,
    /// A configuration: the selected binary options and numeric values, e.g.
    /// `extreme,format_xz,check_crc64,level=6,threads=1`. Unlisted binary options are off.
    config: Option<String>,
    /// Check every row of a CSV file (header of option names) instead.
    #[arg(long, conflicts_with = "config")]
    csv: Option<PathBuf>,
    /// Print JSON on stdout instead of text: per configuration, whether it is valid and the
    /// rules it breaks.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct SampleArgs {
    #[arg(help = SPACE_HELP)]
    space: PathBuf,
    #[arg(long, short = 's', help = SAMPLE_HELP)]
    sample: String,
    #[arg(long, default_value_t = 1, help = SEED_HELP)]
    seed: u64,
    /// Write the CSV here instead of standard output.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
}

fn load(path: &Path) -> Result<ConfigSpace> {
    Ok(load_space(path)?)
}

pub fn run(cmd: SpaceCommand) -> Result<Outcome> {
    match cmd {
        SpaceCommand::Show(args) => show(&args.space, args.json),
        SpaceCommand::Count(args) => {
            let s = load(&args.space)?;
            let valid = ValidConfigurations::new(&s)?;
            if args.json {
                crate::print_json(&json!({
                    "name": s.name,
                    "valid_configurations": valid.count().to_string(),
                }))?;
            } else {
                println!("{}", valid.count());
            }
            Ok(Outcome::Done)
        }
        SpaceCommand::Check(args) => check(args),
        SpaceCommand::Sample(args) => sample_cmd(args),
    }
}

fn show(path: &Path, as_json: bool) -> Result<Outcome> {
    let s = load(path)?;
    let valid = ValidConfigurations::new(&s)?;
    if as_json {
        let options: Vec<_> = s
            .options()
            .iter()
            .map(|o| {
                let mut v = json!({ "name": o.name, "parent": o.parent.map(|p| s.option(p).name.clone()), "mandatory": o.mandatory });
                v["kind"] = match &o.domain {
                    Domain::Binary => json!("binary"),
                    Domain::Numeric { values } => {
                        v["values"] = json!(values);
                        json!("numeric")
                    }
                };
                v
            })
            .collect();
        let groups: Vec<_> = s
            .groups()
            .iter()
            .map(|g| {
                json!({
                    "kind": match g.kind { GroupKind::Alternative => "alternative", GroupKind::Or => "or" },
                    "parent": g.parent.map(|p| s.option(p).name.clone()),
                    "members": g.members.iter().map(|m| s.option(*m).name.clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        let constraints: Vec<String> = s
            .constraints()
            .iter()
            .map(|c| c.formula.to_string())
            .collect();
        let out = json!({
            "name": s.name,
            "options": options,
            "groups": groups,
            "constraints": constraints,
            // A string: counts exceed every JSON number type for large spaces.
            "valid_configurations": valid.count().to_string(),
        });
        crate::print_json(&out)?;
    } else {
        print!("{s}");
        println!("valid configurations: {}", valid.count());
        println!("BDD nodes: {}", valid.bdd_size());
    }
    Ok(Outcome::Done)
}

fn check(args: CheckArgs) -> Result<Outcome> {
    let s = load(&args.space)?;
    let valid = ValidConfigurations::new(&s)?;
    let configs = match (&args.config, &args.csv) {
        (Some(text), None) => vec![("configuration".to_string(), s.parse_configuration(text)?)],
        (None, Some(csv)) => {
            // Read the cells without the validity check so that every row gets a verdict.
            let text = std::fs::read_to_string(csv).with_context(|| csv.display().to_string())?;
            let shown = csv.display().to_string();
            read_rows(&s, &text, &shown)?
        }
        _ => anyhow::bail!("give a configuration (e.g. `a,b,level=6`) or --csv FILE"),
    };
    let verdicts: Vec<(&String, &space::Configuration, Vec<space::Rule>)> = configs
        .iter()
        .map(|(label, config)| {
            let broken = s.violations(config);
            debug_assert_eq!(broken.is_empty(), valid.is_valid(config));
            (label, config, broken)
        })
        .collect();
    let all_valid = verdicts.iter().all(|(_, _, broken)| broken.is_empty());
    if args.json {
        let rows: Vec<_> = verdicts
            .iter()
            .map(|(label, config, broken)| {
                json!({
                    "label": label,
                    "configuration": s.format_configuration(config),
                    "valid": broken.is_empty(),
                    "violations": broken.iter().map(|r| r.why.as_str()).collect::<Vec<_>>(),
                })
            })
            .collect();
        crate::print_json(&json!({ "all_valid": all_valid, "configurations": rows }))?;
    } else {
        for (label, _, broken) in &verdicts {
            if broken.is_empty() {
                println!("{label}: valid");
            } else {
                println!(
                    "{label}: invalid: {}",
                    broken
                        .iter()
                        .map(|r| r.why.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                );
            }
        }
    }
    Ok(if all_valid {
        Outcome::Done
    } else {
        Outcome::Invalid
    })
}

/// Rows of a configuration CSV, each labelled with its line, not yet checked for validity.
fn read_rows(
    s: &ConfigSpace,
    text: &str,
    shown: &str,
) -> Result<Vec<(String, space::Configuration)>> {
    // An unconstrained copy of the space reads the values; the verdicts come from `s`.
    let mut loose = ConfigSpace::new(&s.name);
    for o in s.options() {
        match &o.domain {
            Domain::Binary => loose.add_binary(&o.name, None, false)?,
            Domain::Numeric { values } => loose.add_numeric(&o.name, values)?,
        };
    }
    let loose_valid = ValidConfigurations::new(&loose)?;
    let configs = parse_configurations_csv(&loose_valid, text, shown)?;
    Ok(configs
        .into_iter()
        .enumerate()
        .map(|(i, c)| (format!("{shown}:{}", i + 2), c))
        .collect())
}

fn sample_cmd(args: SampleArgs) -> Result<Outcome> {
    let strategy: Strategy = args.sample.parse()?;
    let s = load(&args.space)?;
    let valid = ValidConfigurations::new(&s)?;
    let started = Instant::now();
    let result = sample(&valid, &strategy, args.seed)?;
    let elapsed = started.elapsed();
    let mut buffer = Vec::new();
    write_configurations_csv(&s, &result.configurations, &mut buffer)?;
    match &args.out {
        Some(path) => std::fs::write(path, &buffer).with_context(|| path.display().to_string())?,
        None => std::io::stdout().write_all(&buffer)?,
    }
    // The summary goes to stderr so that stdout stays pure CSV.
    let mut summary = format!(
        "{strategy}: {} configurations of {} valid",
        result.configurations.len(),
        valid.count()
    );
    if let Some(c) = &result.coverage {
        summary += &format!(
            "; covers {}/{} valid {}-wise combinations ({:.1}%), {} impossible ones excluded",
            c.covered,
            c.valid_tuples,
            c.t,
            c.percent(),
            c.invalid_tuples
        );
        if let Some(bound) = space::sampling::covering_lower_bound(&valid, c.t) {
            summary += &format!("; no {}-wise sample can have fewer than {bound}", c.t);
        }
    }
    summary += &format!("; {:.2}s", elapsed.as_secs_f64());
    eprintln!("{summary}");
    for note in &result.notes {
        eprintln!("note: {note}");
    }
    Ok(Outcome::Done)
}
