//! `knobs report`: one self-contained HTML page from a results store and model files.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use measure::store::Selection;
use report::{Input, Measurements, NamedModel};

use crate::Outcome;
use crate::measure_cmd::StoreArgs;

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs measure --spec examples/xz/knobs.toml --sample pairwise\n  \
    knobs learn examples/xz/knobs.db --learner stepwise -o xz.json\n  \
    knobs report --spec examples/xz/knobs.toml --model xz.json -o report.html")]
pub struct ReportArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// A model file (any approach's) to report on; repeat for several.
    #[arg(long = "model")]
    models: Vec<PathBuf>,
    /// A directory where the source files the models' regions name are looked up (besides
    /// the paths as written and the spec's directory); repeatable.
    #[arg(long)]
    sources: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(long, short = 'o', default_value = "report.html")]
    out: PathBuf,
}

pub fn report(args: ReportArgs) -> Result<Outcome> {
    let models = args
        .models
        .iter()
        .map(|path| {
            Ok(NamedModel {
                name: path.display().to_string(),
                file: model::ModelFile::load(path)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Without a store, models alone make a report; with neither there is nothing to show.
    let measurements = if args.store.store.is_some() || args.store.path().exists() {
        Some(measurements(&args.store)?)
    } else if models.is_empty() {
        bail!(
            "{}: no such results store, and no --model given: nothing to report",
            args.store.path().display()
        );
    } else {
        None
    };
    // Models of another system than the store's (or, without a store, the spec's) are refused.
    let system = match &measurements {
        Some(m) => Some(m.system.clone()),
        None => crate::model_cmd::spec_system(&args.store.spec),
    };
    for named in models.iter().filter(|_| system.is_some()) {
        named
            .file
            .check_system(system.as_deref().unwrap_or_default(), &named.name)?;
    }
    let mut source_dirs = args.sources.clone();
    if let Some(dir) = args.store.spec.parent() {
        source_dirs.push(if dir.as_os_str().is_empty() {
            ".".into()
        } else {
            dir.to_path_buf()
        });
    }
    let input = Input {
        measurements,
        models,
        source_dirs,
    };
    std::fs::write(&args.out, report::render(&input))
        .with_context(|| args.out.display().to_string())?;
    eprintln!("report written to {}", args.out.display());
    Ok(Outcome::Done)
}

/// The selection's measurements; when the program itself has none and one variant has
/// (only a white-box approach measured), that variant's.
fn measurements(args: &StoreArgs) -> Result<Measurements> {
    let store = args.open()?;
    let metric = args.metric(&store)?;
    let selection: Selection = args.selection_in(&store)?;
    let measured = Measurements::load(&store, &selection, metric)?;
    match measured.variants.as_slice() {
        [(variant, _)] if measured.configurations.is_empty() && selection.variant.is_empty() => {
            eprintln!("note: nothing measured of the program itself; reporting variant {variant}");
            let of_variant = Selection {
                variant: variant.clone(),
                ..selection
            };
            Ok(Measurements::load(&store, &of_variant, metric)?)
        }
        _ => Ok(measured),
    }
}

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs crush --spec examples/running-example/knobs.toml\n  \
    knobs trace --spec examples/running-example/knobs.toml --variant configcrusher:… \\\n    \
    --model examples/running-example/knobs.configcrusher.json A,C -o trace.json")]
pub struct TraceArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The configuration whose region times to write (`A,C`, `level=6,extreme`).
    configuration: String,
    /// A model whose regions name the functions and places of the region ids.
    #[arg(long)]
    model: Option<PathBuf>,
    /// The trace file to write (Chrome's JSON trace format).
    #[arg(long, short = 'o', default_value = "trace.json")]
    out: PathBuf,
}

/// `knobs trace`: a configuration's region times, one track per run, as a Chrome trace.
pub fn trace(args: TraceArgs) -> Result<Outcome> {
    let store = args.store.open()?;
    let selection = args.store.selection_in(&store)?;
    let stored = store.spec(&selection)?;
    let spec = measure::SystemSpec::parse(&stored.text, std::path::Path::new(&stored.path))?;
    let configuration = spec
        .space
        .format_configuration(&spec.space.parse_configuration(&args.configuration)?);
    let mut runs: Vec<(i64, Vec<measure::store::RegionMeasurement>)> = Vec::new();
    let mut others = std::collections::BTreeSet::new();
    for (c, run, region) in store.region_times(&selection)? {
        if c != configuration {
            others.insert(c);
            continue;
        }
        match runs.last_mut() {
            Some((id, regions)) if *id == run => regions.push(region),
            _ => runs.push((run, vec![region])),
        }
    }
    if runs.is_empty() {
        let measured: Vec<&str> = others
            .iter()
            .map(|c| space::shown_configuration(c))
            .collect();
        bail!(
            "{}: no region times of `{}` under variant `{}` ({}: {}); region times come from knobs crush, comprex and family",
            store.path().display(),
            space::shown_configuration(&configuration),
            selection.variant,
            if measured.is_empty() {
                "variants measured"
            } else {
                "configurations with region times"
            },
            if measured.is_empty() {
                store.variants(&selection)?.join(", ")
            } else {
                measured.join(", ")
            }
        );
    }
    let names = match &args.model {
        Some(path) => report::region_names(&model::ModelFile::load(path)?),
        None => Default::default(),
    };
    let title = format!(
        "{}: {}",
        stored.system,
        space::shown_configuration(&configuration)
    );
    let trace = report::chrome_trace(&title, &runs, &names);
    std::fs::write(&args.out, serde_json::to_string(&trace)? + "\n")
        .with_context(|| args.out.display().to_string())?;
    eprintln!(
        "{} runs of `{}` written to {} (open it in Perfetto or chrome://tracing)",
        runs.len(),
        space::shown_configuration(&configuration),
        args.out.display()
    );
    Ok(Outcome::Done)
}
