//! The variant simulator of a system spec (the family-based measurement paper's step 1):
//! the spec's compile-time features — boolean options whose `build` sets one macro — are
//! encoded in its `[build] sources` (`variants::encode`), the simulator is compiled, and a
//! run-time spec is written beside it in which each encoded feature is selected through the
//! environment variable the simulator reads. Every approach then runs on compile-time
//! features as it runs on run-time options: `knobs family --spec DIR/knobs.toml`.
//!
//! The simulator is not the real variants (encoding removes their constant folding and
//! dead-code elimination): its model is checked against real builds, not assumed equal.

mod check;
mod sources;
mod spec;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

pub use check::{Check, CheckedConfiguration, OptionEffect, check};
pub use variants::{FeatureBlock, FeatureFunction, Refusal};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Spec(#[from] measure::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("compiling the variant simulator failed ({command}): {log}")]
    Compile { command: String, log: String },
}

/// Where and how the simulator is built.
#[derive(Debug, Clone)]
pub struct Options {
    /// Gets `src/` (the encoded sources), the simulator binary and `knobs.toml`.
    pub out_dir: PathBuf,
    pub clang: PathBuf,
}

impl Options {
    /// The same with `out_dir` absolute: the written spec and the real builds' runs name
    /// their programs by it, from the spec's own directory.
    fn absolute(&self) -> Result<Options, Error> {
        let out_dir = std::path::absolute(&self.out_dir).map_err(|source| Error::Io {
            path: self.out_dir.clone(),
            source,
        })?;
        Ok(Options {
            out_dir,
            clang: self.clang.clone(),
        })
    }
}

/// What was built.
#[derive(Debug, Clone, Serialize)]
pub struct Built {
    /// The features, as the original spec builds them.
    #[serde(skip)]
    pub features: Vec<variants::Feature>,
    /// The run-time spec of the simulator.
    pub spec: PathBuf,
    /// The simulator, compiled as the spec's sources are (`-O2`).
    pub program: PathBuf,
    /// The options read at run time.
    pub encoded: Vec<String>,
    /// Each refused annotation: its option stays a build option.
    pub refusals: Vec<Refusal>,
    /// The options that stay build options.
    pub build_only: Vec<String>,
    /// Functions that exist only where features are selected (the feature map), with the
    /// options' names for the features' macros.
    pub feature_functions: Vec<FeatureFunction>,
    /// Blocks of statements inside functions marked as features' code.
    pub feature_blocks: Vec<FeatureBlock>,
    /// Conditional groups turned into run-time decisions.
    pub decisions: usize,
}

/// Builds the variant simulator of `spec` into `options.out_dir`.
pub fn build(spec: &measure::SystemSpec, options: &Options) -> Result<Built, Error> {
    let options = &options.absolute()?;
    let (features, others) = spec::features(spec);
    if !others.is_empty() {
        return Err(Error::Invalid(format!(
            "option(s) {} act on the build but do not set one macro: the variant simulator reads \
             only such features at run time (measure the others with a build per configuration)",
            others.join(", ")
        )));
    }
    if features.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: no option sets a macro when the program is built (`build = {{ define = \"NAME\" }}`), \
             so there is nothing to simulate",
            spec.path.display()
        )));
    }
    let (files, outside) = sources::read(spec)?;
    for header in &outside {
        let named = features
            .iter()
            .find(|f| header.text.contains(f.macro_name.as_str()));
        if let Some(feature) = named {
            return Err(Error::Invalid(format!(
                "{} tests {} but lies outside the spec's directory, where the encoded copies go",
                header.path, feature.macro_name
            )));
        }
    }
    let simulator = variants::encode(&files, &features);
    if !simulator.build_only.is_empty() {
        let first = &simulator.refusals[0];
        return Err(Error::Invalid(format!(
            "cannot encode {} ({} refused annotations; first: {first}); the variant simulator \
             needs every build option encoded",
            names(&simulator.build_only).join(", "),
            simulator.refusals.len()
        )));
    }
    let src = options.out_dir.join("src");
    for file in &simulator.files {
        write(&src.join(&file.path), &file.text)?;
    }
    let features_c = src.join("knobs_features.c");
    write(&features_c, &simulator.features_source())?;
    let program = options.out_dir.join(format!("{}-simulator", spec.name));
    compile(spec, &options.clang, &src, &[&features_c], &[], &program)?;
    let spec_path = options.out_dir.join("knobs.toml");
    let text = spec::runtime_spec(spec, &simulator, &src, &features_c, &program)?;
    write(&spec_path, &text)?;
    // The one parser of specs checks what was written.
    measure::SystemSpec::load(&spec_path)?;
    Ok(Built {
        features: simulator.encoded.clone(),
        spec: spec_path,
        program,
        encoded: simulator.encoded.iter().map(|f| f.option.clone()).collect(),
        refusals: simulator.refusals,
        build_only: Vec::new(),
        feature_functions: option_names(simulator.feature_functions, &features),
        feature_blocks: simulator.feature_blocks,
        decisions: simulator.decisions,
    })
}

fn option_names(
    functions: Vec<FeatureFunction>,
    features: &[variants::Feature],
) -> Vec<FeatureFunction> {
    let option = |m: &String| {
        features
            .iter()
            .find(|f| &f.macro_name == m)
            .map_or_else(|| m.clone(), |f| f.option.clone())
    };
    functions
        .into_iter()
        .map(|f| FeatureFunction {
            features: f.features.iter().map(option).collect(),
            ..f
        })
        .collect()
}

fn names(features: &[variants::Feature]) -> Vec<String> {
    features.iter().map(|f| f.option.clone()).collect()
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}

/// Compiles a program as the spec compiles its own (its defines, flags, include directories
/// and link flags), at `-O2`: the `[build] sources` under `root` (the encoded copies, whose
/// include directories come first, or the originals), with `extra` files and `defines`.
fn compile(
    spec: &measure::SystemSpec,
    clang: &Path,
    root: &Path,
    extra: &[&Path],
    defines: &[String],
    program: &Path,
) -> Result<(), Error> {
    let build = spec
        .build
        .as_ref()
        .expect("sources were read, so [build] exists");
    let mut command = Command::new(clang);
    command.args(["-O2", "-w", "-o"]).arg(program);
    for dir in &build.include {
        command.arg(format!("-I{}", root.join(dir).display()));
        command.arg(format!("-I{}", spec.dir.join(dir).display()));
    }
    command.args(
        build
            .defines
            .iter()
            .chain(defines)
            .map(|d| format!("-D{d}")),
    );
    command.args(&build.flags);
    command.args(build.sources.iter().map(|s| root.join(s)));
    command.args(extra);
    command.args(&build.link);
    let shown = format!("{command:?}");
    let failed = |log: String| Error::Compile {
        command: shown.clone(),
        log,
    };
    let out = command.output().map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stderr);
        return Err(failed(
            log.lines()
                .find(|l| l.contains("error"))
                .unwrap_or("no message")
                .into(),
        ));
    }
    Ok(())
}
