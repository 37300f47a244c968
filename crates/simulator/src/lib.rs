//! The variant simulator of a system spec (the family-based measurement paper's step 1):
//! the spec's compile-time features — boolean options whose `build` sets one macro — are
//! encoded in its `[build] sources` (`variants::encode`), the simulator is compiled, and a
//! run-time spec is written beside it in which each encoded feature is selected through the
//! environment variable the simulator reads. Every approach then runs on compile-time
//! features as it runs on run-time options: `knobs family --spec DIR/knobs.toml`. Options it
//! cannot read at run time (refused features, `-O3`) stay build options of that spec, which
//! then builds a simulator per set of their values with a recipe.
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
    /// The options that stay build options of the simulator's spec (refused features, and
    /// options that act on the build otherwise, `-O3`): it builds a simulator per set of
    /// their values.
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
    if let Some(option) = spec::configured(spec) {
        return Err(Error::Invalid(format!(
            "option `{option}` acts on the build through `configure`, and the variant simulator \
             is built by one clang command with no configure step (measure it with a build per \
             configuration: `knobs measure --spec` the original)"
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
    if simulator.encoded.is_empty() {
        let first = &simulator.refusals[0];
        return Err(Error::Invalid(format!(
            "cannot encode {} ({} refused annotations; first: {first}): nothing is left to read \
             at run time",
            names(&simulator.build_only).join(", "),
            simulator.refusals.len()
        )));
    }
    // Options the simulator cannot read at run time stay build options of its spec: a
    // simulator is built per set of their values.
    let build_only: Vec<String> = spec
        .space
        .options()
        .iter()
        .map(|o| o.name.clone())
        .filter(|o| others.contains(o) || simulator.build_only.iter().any(|f| &f.option == o))
        .collect();
    let src = options.out_dir.join("src");
    for file in &simulator.files {
        write(&src.join(&file.path), &file.text)?;
    }
    let features_c = src.join("knobs_features.c");
    write(&features_c, &simulator.features_source())?;
    let program = options.out_dir.join(format!("{}-simulator", spec.name));
    compile(spec, &options.clang, &src, &[&features_c], &[], &program)?;
    let spec_path = options.out_dir.join("knobs.toml");
    let recipe = (!build_only.is_empty())
        .then(|| recipe(spec, &options.clang, &features_c, &program))
        .transpose()?;
    let text = spec::runtime_spec(spec, &simulator, &src, &features_c, &program, recipe)?;
    write(&spec_path, &text)?;
    // The one parser of specs checks what was written.
    measure::SystemSpec::load(&spec_path)?;
    Ok(Built {
        features: simulator.encoded.clone(),
        spec: spec_path,
        program,
        encoded: simulator.encoded.iter().map(|f| f.option.clone()).collect(),
        refusals: simulator.refusals,
        build_only,
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

/// The recipe that builds the simulator per set of values of the options that stay build
/// options: the compile command of [`compile`], in a copy of the encoded sources, with
/// their `{cppflags}`, `{cflags}` (after `-O2`, so an `-O3` wins) and `{ldflags}`.
fn recipe(
    spec: &measure::SystemSpec,
    clang: &Path,
    features_c: &Path,
    program: &Path,
) -> Result<spec::Recipe, Error> {
    let name = |p: &Path| -> Result<String, Error> {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::Invalid(format!("{}: no file name", p.display())))
    };
    let output = name(program)?;
    let features_c = Path::new(".").join(name(features_c)?);
    let placeholders = [["{cppflags}", "{cflags}"].as_slice(), &["{ldflags}"]];
    let argv = compile_args(
        spec,
        Path::new("."),
        &[&features_c],
        &[],
        Path::new(&output),
        placeholders,
    );
    let mut step = vec![clang.display().to_string()];
    step.extend(argv);
    Ok(spec::Recipe {
        steps: vec![step],
        output,
    })
}

/// The arguments that compile a program as the spec compiles its own (its defines, flags,
/// include directories and link flags), at `-O2`: the `[build] sources` under `root` (the
/// encoded copies, whose include directories come first, or the originals), with `extra`
/// files and `defines`; `around[0]` after the flags, `around[1]` after the link flags.
fn compile_args(
    spec: &measure::SystemSpec,
    root: &Path,
    extra: &[&Path],
    defines: &[String],
    program: &Path,
    around: [&[&str]; 2],
) -> Vec<String> {
    let build = spec
        .build
        .as_ref()
        .expect("sources were read, so [build] exists");
    let shown = |p: &Path| p.display().to_string();
    let mut args: Vec<String> = vec!["-O2".into(), "-w".into(), "-o".into(), shown(program)];
    for dir in &build.include {
        args.push(format!("-I{}", root.join(dir).display()));
        args.push(format!("-I{}", spec.dir.join(dir).display()));
    }
    args.extend(
        build
            .defines
            .iter()
            .chain(defines)
            .map(|d| format!("-D{d}")),
    );
    args.extend(build.flags.iter().cloned());
    args.extend(around[0].iter().map(|a| a.to_string()));
    args.extend(build.sources.iter().map(|s| shown(&root.join(s))));
    args.extend(extra.iter().map(|p| shown(p)));
    args.extend(build.link.iter().cloned());
    args.extend(around[1].iter().map(|a| a.to_string()));
    args
}

/// Compiles a program with [`compile_args`].
fn compile(
    spec: &measure::SystemSpec,
    clang: &Path,
    root: &Path,
    extra: &[&Path],
    defines: &[String],
    program: &Path,
) -> Result<(), Error> {
    let mut command = Command::new(clang);
    command.args(compile_args(
        spec,
        root,
        extra,
        defines,
        program,
        [&[], &[]],
    ));
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
