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

fn measurements(args: &StoreArgs) -> Result<Measurements> {
    let store = args.open()?;
    let metric = args.metric(&store)?;
    let selection: Selection = args.selection_in(&store)?;
    Ok(Measurements::load(&store, &selection, metric)?)
}
