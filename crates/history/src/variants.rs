//! Builds for build options: one build per distinct set of build-option values
//! ([`measure::spec::BuildValues`]), in the same cache as commit builds and under the same
//! rules (a temporary directory renamed into place, a failure recorded with its log).
//!
//! A build's key is its source and recipe, as a commit build's, plus the values' key:
//! `<commit>-<recipe>-<values>/`, or `<commit>-<recipe>/` for no values, so a history ×
//! compile-time grid shares every build it can. Without `[history]`, the source is a copy of
//! `[build] dir` and its "commit" the SHA-256 of that directory's files: editing a source
//! builds again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use measure::SystemSpec;
use measure::campaign::{AtCommit, FailedBuild};
use measure::spec::BuildValues;
use serde::Serialize;
use space::Configuration;

use crate::builds::{self, Job, Source};
use crate::{BUILDS_DIR, Build, Error, History};

/// How to build the program for any set of build-option values.
#[derive(Clone, Debug)]
pub struct Variants {
    builds: PathBuf,
    source: Source,
    /// The commit built, or the source directory's digest.
    commit: String,
    recipe: String,
    steps: Vec<Vec<String>>,
    output: String,
    timeout: Duration,
}

/// What building a campaign's variants did: one entry per distinct set of values.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VariantsReport {
    /// Distinct sets of build-option values among the configurations.
    pub variants: usize,
    /// Built by this call.
    pub built: usize,
    /// Found in the cache (built or failed earlier).
    pub cached: usize,
    pub failed: usize,
    /// Seconds spent building in this call (apart from the runs' time).
    pub build_seconds: f64,
    /// Per variant: its values, its status, and its build's seconds (as recorded).
    pub builds: Vec<VariantBuild>,
}

/// One variant's build.
#[derive(Clone, Debug, Serialize)]
pub struct VariantBuild {
    /// The values, as the build sees them (`-DLZ4_HEAPMODE -O3`).
    pub values: String,
    /// `built`, `cached` or `failed`.
    pub status: &'static str,
    pub seconds: f64,
    /// The program, or the failed build's log.
    pub path: PathBuf,
    /// The build log.
    pub log: PathBuf,
}

impl VariantsReport {
    /// The builds in one line.
    pub fn summary(&self) -> String {
        format!(
            "{} builds for {} sets of build-option values: {} built in {:.1} s, {} from the cache, {} failed",
            self.variants, self.variants, self.built, self.build_seconds, self.cached, self.failed
        )
    }
}

impl Variants {
    /// The variants of a spec's program: of `commit` (a full id) of its `[history]`, or of
    /// its `[build] recipe`'s directory.
    pub fn open(spec: &SystemSpec, commit: Option<&str>) -> Result<Variants, Error> {
        if let Some(commit) = commit {
            let history = History::open(spec)?;
            return Ok(Variants::at_commit(&history, commit));
        }
        let recipe = spec.build_recipe().ok_or_else(|| {
            Error::Git(format!(
                "{}: no [build] recipe to build the build options with",
                spec.path.display()
            ))
        })?;
        if !recipe.dir.is_dir() {
            return Err(Error::Git(format!(
                "{}: build: `dir` {} is not a directory",
                spec.path.display(),
                recipe.dir.display()
            )));
        }
        let commit = builds::tree_digest(&recipe.dir).map_err(crate::io_error(&recipe.dir))?;
        let key = (&recipe.steps, &recipe.output);
        Ok(Variants {
            builds: spec.dir.join(BUILDS_DIR),
            source: Source::Dir(recipe.dir.clone()),
            commit,
            recipe: builds::hash_of(&key),
            steps: recipe.steps,
            output: recipe.output,
            timeout: recipe.timeout,
        })
    }

    /// The variants of a commit's build (a full id).
    pub fn at_commit(history: &History, commit: &str) -> Variants {
        let spec = history.spec();
        Variants {
            builds: history.builds_dir().to_path_buf(),
            source: Source::Commit(history.git_dir().to_path_buf()),
            commit: commit.to_string(),
            recipe: history.recipe_hash().to_string(),
            steps: spec.build.clone(),
            output: spec.output.clone(),
            timeout: spec.build_timeout(),
        }
    }

    /// The cache entry of a set of values; no values is the plain build's entry.
    fn job(&self, values: &BuildValues) -> Job {
        let mut name = format!("{}-{}", self.commit, self.recipe);
        if values != &BuildValues::default() {
            name = format!("{name}-{}", values.key());
        }
        Job {
            name,
            commit: self.commit.clone(),
            recipe: self.recipe.clone(),
            source: self.source.clone(),
            steps: self.steps.iter().map(|s| values.expand(s)).collect(),
            output: self.output.clone(),
            timeout: self.timeout,
            env: values.env(),
        }
    }

    /// The build for `values`: from the cache, or built now (a recorded failure is built
    /// again only with `retry_failed`).
    pub fn build(&self, values: &BuildValues, retry_failed: bool) -> Result<Build, Error> {
        let job = self.job(values);
        if let Some(known) = builds::status_of(&self.builds, &job.name, &job.commit, &job.output)
            && (known.is_built() || !retry_failed)
        {
            return Ok(known);
        }
        builds::build_job(&self.builds, &job)
    }

    /// Builds what the configurations need, each distinct set of values once, and pairs each
    /// configuration with its build, ready for [`measure::Campaign::run_at_commits`]: runs
    /// are stored under `stored_commit` (`""` without `[history]`); a configuration whose
    /// build failed carries the failure. `on_build` hears of each build as it is done.
    pub fn pairs(
        &self,
        spec: &SystemSpec,
        configurations: &[Configuration],
        stored_commit: &str,
        retry_failed: bool,
        on_build: &mut dyn FnMut(&VariantBuild),
    ) -> Result<(Vec<AtCommit>, VariantsReport), Error> {
        let mut report = VariantsReport::default();
        let mut done: BTreeMap<BuildValues, Build> = BTreeMap::new();
        let mut pairs = Vec::with_capacity(configurations.len());
        for configuration in configurations {
            let values = spec.build_values(configuration);
            if !done.contains_key(&values) {
                let build = self.build(&values, retry_failed)?;
                let variant = report.add(&values, &build);
                on_build(&variant);
                done.insert(values.clone(), build);
            }
            let (program, failed_build) = match &done[&values] {
                Build::Built(b) => (b.program.clone(), None),
                Build::Failed(f) => (
                    f.log.clone(),
                    Some(FailedBuild {
                        why: format!("{} ({})", f.why, values.describe()),
                        log_tail: f.log_tail.clone(),
                        log: f.log.clone(),
                    }),
                ),
            };
            pairs.push(AtCommit {
                commit: stored_commit.to_string(),
                program,
                configuration: configuration.clone(),
                failed_build,
            });
        }
        Ok((pairs, report))
    }
}

impl VariantBuild {
    /// As the results store keeps it.
    pub fn stored(&self) -> measure::store::StoredBuild {
        measure::store::StoredBuild {
            build_values: self.values.clone(),
            status: if self.status == "failed" {
                "failed"
            } else {
                "built"
            }
            .into(),
            seconds: self.seconds,
            log: self.log.display().to_string(),
        }
    }
}

impl VariantsReport {
    fn add(&mut self, values: &BuildValues, build: &Build) -> VariantBuild {
        self.variants += 1;
        let (status, seconds, path, cached) = match build {
            Build::Built(b) => ("built", b.seconds, b.program.clone(), b.cached),
            Build::Failed(f) => ("failed", f.seconds, f.log.clone(), f.cached),
        };
        let log = match build {
            Build::Built(b) => b.dir.with_extension("log"),
            Build::Failed(f) => f.log.clone(),
        };
        if status == "failed" {
            self.failed += 1;
        }
        if cached {
            self.cached += 1;
        } else {
            self.build_seconds += seconds;
            if status == "built" {
                self.built += 1;
            }
        }
        let variant = VariantBuild {
            values: values.describe(),
            status: if cached && status == "built" {
                "cached"
            } else {
                status
            },
            seconds,
            path,
            log,
        };
        self.builds.push(variant.clone());
        variant
    }
}
