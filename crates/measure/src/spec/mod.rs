//! The system spec (`knobs.toml`): a configuration space plus how to run the program in
//! each configuration. The space part is `space`'s TOML (`[[option]]`, `[[group]]`,
//! `constraints`, or `space = "model.xml"`); this module adds `[run]`, `[measure]`,
//! `[[workload]]` and, per option, the arguments or environment that select it. The complete,
//! commented example is `examples/xz/knobs.toml`; `docs/system-spec.md` lists every key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use space::ConfigSpace;

use crate::Error;

/// The longest `run.timeout` (a year): longer is a typo, and would not fit a `Duration`.
const MAX_TIMEOUT_SECONDS: f64 = 31_536_000.0;
/// A parsed, checked system spec.
#[derive(Clone, Debug)]
pub struct SystemSpec {
    pub name: String,
    /// The spec file, as given.
    pub path: PathBuf,
    /// Relative paths in the spec (program, working directory, feature model) resolve here.
    pub dir: PathBuf,
    /// The file's text, kept so a results store can rebuild the space it was measured in.
    pub text: String,
    pub space: ConfigSpace,
    /// How to run the program; `None` for a file that only describes a space.
    pub run: Option<RunSpec>,
    pub measure: MeasureSettings,
    pub workloads: Vec<Workload>,
    /// Per option (indexed like `space.options()`): how a configuration selects it.
    pub option_args: Vec<OptionArgs>,
    /// How to build the program from source, for the white-box approaches.
    pub build: Option<BuildSpec>,
    /// The program's version history (`[history]`): the program measured at a commit is
    /// built from it.
    pub history: Option<HistorySpec>,
    /// How `--backend slurm` submits rounds (`[slurm]`); not part of what a run means.
    pub slurm: SlurmSettings,
    /// Per option (indexed like `space.options()`): where the program keeps its value.
    pub option_sources: Vec<Vec<OptionSourceSpec>>,
    /// Per option: name patterns of the functions that implement it (`*` matches any run of
    /// characters), for the family-based approach's feature map.
    pub option_functions: Vec<Vec<String>>,
    /// Identifies what a measurement means: the system's name, the run template, option
    /// arguments and environment, and the workloads (not repetitions, warm-ups or noise
    /// settings). Measurements are reused only under the same
    /// hash.
    pub hash: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// A command on `PATH`, or a path (relative to the spec's directory). May be left out
    /// with `[history]`: the program is then the build of the commit measured.
    #[serde(default)]
    pub program: String,
    /// Arguments after the program. An element `{options}` expands to the options'
    /// arguments, `{workload}` to the workload's arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// A file fed to standard input (relative to the working directory); default: none.
    pub stdin: Option<String>,
    /// Working directory, relative to the spec's directory; default: the spec's directory.
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds before a run is killed (its whole process group); default 600.
    pub timeout: Option<f64>,
}

/// How many times to run each configuration, and what counts as too noisy.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureSettings {
    /// Recorded runs per configuration (the minimum, in adaptive mode).
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Unrecorded runs before the recorded ones (warm caches).
    #[serde(default)]
    pub warmup: u32,
    /// Configurations whose coefficient of variation exceeds this are flagged.
    #[serde(default = "default_max_cv")]
    pub max_cv: f64,
    /// Adaptive mode: keep repeating until the 95 % confidence interval's half-width is at
    /// most `ci` × mean, or `max_repetitions` runs are recorded.
    #[serde(default)]
    pub adaptive: bool,
    #[serde(default = "default_ci")]
    pub ci: f64,
    #[serde(default = "default_max_repetitions")]
    pub max_repetitions: u32,
    /// The performance learned and exported: auto (cpu for a program that keeps one CPU
    /// busy, wall otherwise), wall, user, system, cpu (user + system) or max_rss (KiB).
    #[serde(default)]
    pub metric: Metric,
    /// The configuration measured in every round, so that each round's speed can be read
    /// off it (compact text, as `knobs results show` prints it); `"none"`: no reference.
    /// Default: one of the campaign's configurations drawn with a fixed seed (the same in
    /// every session of the same sample), or the one the store's earlier rounds used.
    pub reference: Option<String>,
    /// The seed of the rounds' random orders; default: a fresh one per campaign (each
    /// round's is recorded in the store).
    pub seed: Option<u64>,
    /// Seconds after which no further round starts (adaptive mode's cap on time).
    pub budget: Option<f64>,
}

fn default_repetitions() -> u32 {
    3
}
fn default_max_cv() -> f64 {
    0.05
}
fn default_ci() -> f64 {
    0.02
}
fn default_max_repetitions() -> u32 {
    10
}

impl MeasureSettings {
    /// Sets the recorded runs per configuration (a command line's `--repetitions` over the
    /// spec's): at least 1, and adaptive mode's maximum is at least as many.
    pub fn set_repetitions(&mut self, repetitions: u32) -> Result<(), Error> {
        if repetitions == 0 {
            return Err(Error::Invalid("--repetitions must be at least 1".into()));
        }
        self.repetitions = repetitions;
        self.max_repetitions = self.max_repetitions.max(repetitions);
        Ok(())
    }
}

impl Default for MeasureSettings {
    fn default() -> Self {
        MeasureSettings {
            repetitions: default_repetitions(),
            warmup: 0,
            max_cv: default_max_cv(),
            adaptive: false,
            ci: default_ci(),
            max_repetitions: default_max_repetitions(),
            metric: Metric::default(),
            reference: None,
            seed: None,
            budget: None,
        }
    }
}

/// A per-run quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// CPU time for a configuration that keeps one CPU busy, wall time for any other:
    /// decided per configuration by its most CPU-bound run (`Store::resolve_metric`).
    #[default]
    Auto,
    Wall,
    User,
    System,
    Cpu,
    MaxRss,
    /// Instructions executed in user mode: hardware counters where the machine has them
    /// (`perf stat`), else valgrind's cachegrind (5–100× slower). Deterministic for a program
    /// and its input, but not time.
    Instructions,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::Auto,
        Metric::Wall,
        Metric::User,
        Metric::System,
        Metric::Cpu,
        Metric::MaxRss,
        Metric::Instructions,
    ];

    /// This metric of a run that measured these (`auto` unresolved reads wall time, right
    /// for any program; instructions not counted are NaN).
    pub fn of_run(
        self,
        wall: f64,
        user: f64,
        system: f64,
        max_rss_kib: f64,
        instructions: Option<u64>,
    ) -> f64 {
        match self {
            Metric::Wall | Metric::Auto => wall,
            Metric::User => user,
            Metric::System => system,
            Metric::Cpu => user + system,
            Metric::MaxRss => max_rss_kib,
            Metric::Instructions => instructions.map_or(f64::NAN, |n| n as f64),
        }
    }

    /// The metric of a timer that reads the wall clock unless told otherwise: `auto` is wall
    /// time for it. The region timers, the call tree and Comprex's profiler resolve `auto`
    /// themselves (`instrumented::region_clocks`, `comprex::pipeline::choose_profile_clock`).
    pub fn of_region_timers(self) -> Metric {
        match self {
            Metric::Auto => Metric::Wall,
            m => m,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Auto => "auto",
            Metric::Wall => "wall",
            Metric::User => "user",
            Metric::System => "system",
            Metric::Cpu => "cpu",
            Metric::MaxRss => "max_rss",
            Metric::Instructions => "instructions",
        }
    }

    /// The column header used in exported datasets, with the unit.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Auto => "time_s",
            Metric::Wall => "wall_s",
            Metric::User => "user_s",
            Metric::System => "system_s",
            Metric::Cpu => "cpu_s",
            Metric::MaxRss => "max_rss_kib",
            Metric::Instructions => "instructions",
        }
    }

    pub fn parse(text: &str) -> Result<Metric, Error> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "unknown metric `{text}`; expected auto, wall, user, system, cpu, max_rss or instructions"
                ))
            })
    }
}

/// What a workload is for: the real one is measured, the small one drives analysis runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    #[default]
    Measure,
    Analysis,
}

/// A named input for the program.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    #[serde(default)]
    pub purpose: Purpose,
    /// Substituted for `{workload}` in `run.args`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Overrides `run.stdin`.
    pub stdin: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Files the workload needs (relative to the working directory). When one is missing,
    /// `prepare` is run (once, in the working directory) to create them.
    #[serde(default)]
    pub files: Vec<String>,
    pub prepare: Option<Vec<String>>,
}

/// How a configuration selects one option on the command line or in the environment.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionArgs {
    /// Binary options: arguments when selected.
    #[serde(default)]
    pub on: Vec<String>,
    /// Binary options: arguments when not selected.
    #[serde(default)]
    pub off: Vec<String>,
    /// Numeric options: arguments, with `{value}` replaced by the value.
    #[serde(default)]
    pub arg: Vec<String>,
    /// Environment variables; `{value}` is the value (0/1 for binary options).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How the option acts on the build (`build = { define = "NAME" }`); `None` for a
    /// run-time option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<OptionBuild>,
}

mod build_options;
mod invocation;
mod parse;
#[cfg(test)]
mod test_support;
mod white_box;

pub use build_options::{BuildRecipe, BuildValues, OptionBuild, SIMULATOR_HEADER};
pub use invocation::Invocation;
pub use white_box::{BuildSpec, OptionSourceSpec};

/// The `[slurm]` section of a spec: how rounds are submitted.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurmSettings {
    /// `sbatch --partition` (default: the cluster's default partition).
    pub partition: Option<String>,
    /// `sbatch --time`, the limit of each array task (`MM`, `HH:MM:SS`, `D-HH`).
    pub time_limit: Option<String>,
    /// `sbatch --cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// More `sbatch` arguments, as given (`["--qos=short", "--exclusive"]`).
    #[serde(default)]
    pub sbatch_args: Vec<String>,
    /// Where rounds' work and results go; every node must see it (default: `.knobs-slurm`
    /// beside the store). Relative paths resolve beside the spec.
    pub spool: Option<PathBuf>,
    /// Array tasks per round (default 1): each measures its share of the round and the
    /// reference.
    pub tasks: Option<u32>,
}

fn yes() -> bool {
    true
}

/// The program's version history (`[history]`): where its repository is, which commits
/// matter, and how to build one. The program measured at a commit is `output` of its build;
/// the rest of the spec (arguments, options, workloads) applies to every commit.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistorySpec {
    /// A local path (relative to the spec's directory) or a URL to clone.
    pub repository: String,
    /// A git revision range (`v5.0.0..v5.2.0`), or one revision meaning its whole history.
    pub range: String,
    /// Only the first-parent line of the range (default); `false`: every commit, in
    /// topological order.
    #[serde(default = "yes")]
    pub first_parent: bool,
    /// The build recipe: argv lists run in order in a clean checkout (no shell).
    pub build: Vec<Vec<String>>,
    /// The built program, relative to the checkout (`src/xz/xz`).
    pub output: String,
    /// Seconds a whole build may take; default 3600.
    pub timeout: Option<f64>,
}

impl HistorySpec {
    /// The build's time limit.
    pub fn build_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout.unwrap_or(3600.0))
    }
}

/// A file beside `file` (in its directory): where a spec's store, builds and models go by
/// default, and a store's Slurm spool.
pub fn beside(file: &Path, name: &str) -> PathBuf {
    file.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(name)
}

/// Loads a configuration space from any format; a `.toml` file may be a full system spec.
pub fn load_space(path: &Path) -> Result<ConfigSpace, Error> {
    let is_toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    if is_toml {
        Ok(SystemSpec::load(path)?.space)
    } else {
        Ok(space::load_space(path)?)
    }
}
