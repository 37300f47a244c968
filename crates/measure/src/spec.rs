//! The system spec (`knobs.toml`): a configuration space plus how to run the program in
//! each configuration. The space part is `space`'s TOML (`[[option]]`, `[[group]]`,
//! `constraints`, or `space = "model.xml"`); this module adds `[run]`, `[measure]`,
//! `[[workload]]` and, per option, the arguments or environment that select it. The complete,
//! commented example is `examples/xz/knobs.toml`; `docs/system-spec.md` lists every key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use space::formats::spec::{SpaceSpec, read_space_spec, space_from_spec};
use space::{ConfigSpace, Configuration, Domain};

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
    pub slurm: crate::slurm::SlurmSettings,
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
}

/// How knobs builds the program for white-box analysis: from C sources it compiles itself
/// (clang-19), or from LLVM bitcode the system's own build produced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSpec {
    /// C source files, relative to the spec's directory.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Instead of `sources`: one bitcode (`.bc`) or textual IR (`.ll`) file.
    pub bitcode: Option<String>,
    /// `-I` directories, relative to the spec's directory.
    #[serde(default)]
    pub include: Vec<String>,
    /// `-D` definitions: `NAME` or `NAME=VALUE`.
    #[serde(default)]
    pub defines: Vec<String>,
    /// Further compiler flags.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Flags for linking the instrumented program (libraries: `-lm`, `-lpthread`).
    #[serde(default)]
    pub link: Vec<String>,
    /// Fixed settings (`[build.fixed]`): globals holding the same integer in every run of the
    /// workload, the part of the command line no option changes (`decompress = 0` for a
    /// compressor never run with `-d`). ConfigCrusher's analysis reads them as constants and
    /// skips the code they rule out; the instrumented program checks every read it folded.
    #[serde(default)]
    pub fixed: BTreeMap<String, i64>,
    /// Whether ConfigCrusher infers further fixed settings from the program's own runs on the
    /// analysis workload (`infer_fixed = false` turns it off; `[build.fixed]` entries always
    /// win over inferred ones).
    #[serde(default = "yes")]
    pub infer_fixed: bool,
    /// Globals never to infer as fixed settings (`not_fixed = ["counter"]`).
    #[serde(default)]
    pub not_fixed: Vec<String>,
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

/// Where a program keeps an option's value, for the white-box analyses. Exactly one of:
/// `global = "name"`; `struct = "type"` with `field = "name"` (or its index); `function =
/// "name"` (its return value), optionally only for calls whose argument `arg_index`
/// (default 0) is the constant string `arg`: `{ function = "getenv", arg = "XZ_MODE" }`.
/// Globals marked `__attribute__((annotate("knobs:option=NAME")))` need no entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionSourceSpec {
    pub global: Option<String>,
    #[serde(rename = "struct")]
    pub structure: Option<String>,
    pub field: Option<toml::Value>,
    pub function: Option<String>,
    pub arg: Option<String>,
    pub arg_index: Option<u32>,
}

/// One source, or several (an option kept in more than one place).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum SourceList {
    One(OptionSourceSpec),
    Many(Vec<OptionSourceSpec>),
}

impl OptionSourceSpec {
    /// Checks that exactly one kind of source is given, with the keys it needs.
    fn check(&self) -> Result<(), String> {
        let kinds = [
            self.global.is_some(),
            self.structure.is_some(),
            self.function.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(
                "a source is exactly one of `global`, `struct` (with `field`) or `function`".into(),
            );
        }
        if self.structure.is_some() != self.field.is_some() {
            return Err("`struct` and `field` go together".into());
        }
        if let Some(field) = &self.field
            && !(field.is_str() || field.as_integer().is_some_and(|i| i >= 0))
        {
            return Err("`field` is a field name or a non-negative index".into());
        }
        if self.function.is_none() && (self.arg.is_some() || self.arg_index.is_some()) {
            return Err("`arg` and `arg_index` select calls of a `function`".into());
        }
        Ok(())
    }
}

/// A whole spec file as this crate reads it: its own keys typed, the space's keys (read by
/// `space`) passed over. Read in one pass without `flatten`, so every error keeps its line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    run: Option<RunSpec>,
    build: Option<BuildSpec>,
    history: Option<HistorySpec>,
    #[serde(default)]
    slurm: crate::slurm::SlurmSettings,
    #[serde(default)]
    measure: MeasureSettings,
    #[serde(default)]
    workload: Vec<Workload>,
    /// A feature model in another format (SPL Conqueror XML, DIMACS), instead of inline
    /// options.
    space: Option<String>,
    #[serde(default)]
    option: Vec<OptionKeys>,
    // The space's keys.
    #[allow(dead_code)]
    name: Option<toml::Value>,
    #[allow(dead_code)]
    group: Option<toml::Value>,
    #[allow(dead_code)]
    constraints: Option<toml::Value>,
}

/// An `[[option]]` table: how to select it here, its space keys passed over.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionKeys {
    name: String,
    #[serde(default)]
    on: Vec<String>,
    #[serde(default)]
    off: Vec<String>,
    #[serde(default)]
    arg: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    source: Option<SourceList>,
    #[serde(default)]
    functions: Vec<String>,
    // The space's keys (`space::formats::spec::OptionSpec`).
    #[allow(dead_code)]
    values: Option<toml::Value>,
    #[allow(dead_code)]
    range: Option<toml::Value>,
    #[allow(dead_code)]
    parent: Option<toml::Value>,
    #[allow(dead_code)]
    mandatory: Option<toml::Value>,
    #[allow(dead_code)]
    help: Option<toml::Value>,
}

/// Everything needed to start one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub stdin: Option<PathBuf>,
    pub timeout: Duration,
}

/// Line and column (both 1-based) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// Line (1-based) of the first line at or after `from` that assigns `key`; 0 if none.
fn line_of_key(text: &str, key: &str, from: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| {
            let l = l.trim_start();
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(0, |(i, _)| i + 1)
}

fn format_error(shown: &str, line: usize, message: impl Into<String>) -> Error {
    Error::Spec {
        path: shown.to_string(),
        line,
        column: 0,
        message: message.into(),
    }
}

impl SystemSpec {
    /// Reads and checks a spec file.
    pub fn load(path: &Path) -> Result<SystemSpec, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            cause: e,
        })?;
        SystemSpec::parse(&text, path)
    }

    /// Parses a spec's text; `path` locates the file (for relative paths and messages).
    pub fn parse(text: &str, path: &Path) -> Result<SystemSpec, Error> {
        let shown = path.display().to_string();
        let keys: SpecFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |s| line_column(text, s.start));
            Error::Spec {
                path: shown.clone(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        // Options, groups and constraints are `space`'s to read and check.
        let spec: SpaceSpec = read_space_spec(text, &shown)?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = parent
            .canonicalize()
            .unwrap_or_else(|_| parent.to_path_buf());
        let space = match &keys.space {
            Some(model) => {
                // With a feature model file, [[option]] tables only say how to select
                // the model's options.
                let defines_options = keys.option.iter().any(|o| {
                    o.values.is_some()
                        || o.range.is_some()
                        || o.parent.is_some()
                        || o.mandatory.is_some()
                });
                if defines_options || !spec.group.is_empty() || !spec.constraints.is_empty() {
                    return Err(format_error(
                        &shown,
                        line_of_key(text, "space", 0),
                        "with `space = \"FILE\"` the options, groups and constraints come from the file; [[option]] tables may only give `on`, `off`, `arg` and `env` (define the space inline or in the file, not both)",
                    ));
                }
                let mut space = space::load_space(&dir.join(model))?;
                if let Some(name) = &spec.name {
                    space.name = name.clone();
                }
                space
            }
            None => space_from_spec(&spec, &shown)?,
        };
        let mut option_args = vec![OptionArgs::default(); space.len()];
        let mut option_sources = vec![Vec::new(); space.len()];
        let mut option_functions = vec![Vec::new(); space.len()];
        for o in keys.option {
            let name_line = text
                .lines()
                .position(|l| {
                    let l = l.trim_start();
                    l.starts_with("name") && l.contains(&format!("\"{}\"", o.name))
                })
                .map_or(0, |i| i + 1);
            let id = space.resolve(&o.name, &format!("{shown}: [[option]]"))?;
            let binary = space.option(id).is_binary();
            let misplaced = if binary && !o.arg.is_empty() {
                Some("`arg` is for numeric options; a binary option uses `on` and `off`")
            } else if !binary && (!o.on.is_empty() || !o.off.is_empty()) {
                Some(
                    "`on`/`off` are for binary options; a numeric option uses `arg` with `{value}`",
                )
            } else {
                None
            };
            if let Some(why) = misplaced {
                return Err(format_error(
                    &shown,
                    name_line,
                    format!("option `{}`: {why}", o.name),
                ));
            }
            option_args[id.index()] = OptionArgs {
                on: o.on,
                off: o.off,
                arg: o.arg,
                env: o.env,
            };
            let sources = match o.source {
                None => Vec::new(),
                Some(SourceList::One(s)) => vec![s],
                Some(SourceList::Many(list)) => list,
            };
            for source in &sources {
                source.check().map_err(|why| {
                    format_error(
                        &shown,
                        line_of_key(text, "source", name_line).max(name_line),
                        format!("option `{}`: source: {why}", o.name),
                    )
                })?;
            }
            option_sources[id.index()] = sources;
            if let Some(bad) = o.functions.iter().find(|p| p.is_empty()) {
                return Err(format_error(
                    &shown,
                    line_of_key(text, "functions", name_line).max(name_line),
                    format!("option `{}`: functions: empty pattern `{bad}`", o.name),
                ));
            }
            option_functions[id.index()] = o.functions;
        }
        let name = spec.name.clone().unwrap_or_else(|| space.name.clone());
        let spec = SystemSpec {
            name,
            path: path.to_path_buf(),
            dir,
            text: text.to_string(),
            space,
            run: keys.run,
            measure: keys.measure,
            workloads: keys.workload,
            option_args,
            build: keys.build,
            history: keys.history,
            slurm: keys.slurm,
            option_sources,
            option_functions,
            hash: String::new(),
        };
        spec.check(&shown, text)?;
        let hash = spec.compute_hash();
        Ok(SystemSpec { hash, ..spec })
    }

    /// The same spec measuring `metric` (`knobs measure --metric`): its text says so too, so
    /// the store's copy reads back as what was measured; counted runs take other times, so
    /// the hash follows.
    pub fn with_metric(mut self, metric: Metric) -> Result<SystemSpec, Error> {
        let mut doc: toml::Table = self
            .text
            .parse()
            .map_err(|e| Error::Invalid(format!("{}: {e}", self.path.display())))?;
        let measure = doc
            .entry("measure")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(measure) = measure.as_table_mut() else {
            return Err(Error::Invalid(format!(
                "{}: `measure` is not a table",
                self.path.display()
            )));
        };
        measure.insert("metric".into(), toml::Value::String(metric.name().into()));
        self.text = toml::to_string(&doc).expect("a parsed table serialises");
        self.measure.metric = metric;
        self.hash = self.compute_hash();
        Ok(self)
    }

    fn check(&self, shown: &str, text: &str) -> Result<(), Error> {
        let m = &self.measure;
        let bad = |key: &str, message: &str| {
            Err(format_error(
                shown,
                line_of_key(text, key, 0),
                format!("measure.{key}: {message}"),
            ))
        };
        if m.repetitions == 0 {
            return bad("repetitions", "must be at least 1");
        }
        if !(m.max_cv.is_finite() && m.max_cv >= 0.0) {
            return bad("max_cv", "must be a number >= 0");
        }
        if !(m.ci.is_finite() && m.ci > 0.0) {
            return bad("ci", "must be a number > 0");
        }
        if m.budget.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
            return bad("budget", "must be a number of seconds > 0");
        }
        if let Some(reference) = m.reference.as_deref().filter(|r| *r != "none") {
            let message = match self.space.parse_configuration(reference) {
                Ok(c) if self.space.violations(&c).is_empty() => None,
                Ok(_) => Some("is not a valid configuration"),
                Err(_) => Some("is not a configuration of this space"),
            };
            if let Some(message) = message {
                return bad("reference", &format!("`{reference}` {message}"));
            }
        }
        if m.adaptive && m.max_repetitions < m.repetitions {
            return bad("max_repetitions", "must be at least `repetitions`");
        }
        let mut names = std::collections::HashSet::new();
        for w in &self.workloads {
            if !names.insert(w.name.as_str()) {
                return Err(format_error(
                    shown,
                    0,
                    format!("workload `{}` is defined twice", w.name),
                ));
            }
            if w.prepare.as_ref().is_some_and(|p| p.is_empty()) {
                return Err(format_error(
                    shown,
                    0,
                    format!("workload `{}`: `prepare` is an empty command", w.name),
                ));
            }
        }
        if let Some(build) = &self.build
            && build.sources.is_empty() == build.bitcode.is_none()
        {
            return Err(format_error(
                shown,
                line_of_key(text, "sources", 0).max(line_of_key(text, "bitcode", 0)),
                "build: give `sources` (C files knobs compiles) or `bitcode`, not both",
            ));
        }
        if let Some(history) = &self.history {
            check_history(history).map_err(|why| {
                format_error(
                    shown,
                    text.lines()
                        .position(|l| l.trim() == "[history]")
                        .map_or(0, |i| i + 1),
                    format!("history: {why}"),
                )
            })?;
        }
        let Some(run) = &self.run else { return Ok(()) };
        if run.program.is_empty() && self.history.is_none() {
            return Err(format_error(
                shown,
                line_of_key(text, "program", 0),
                "run.program is missing or empty (only a spec with [history] may leave it out)",
            ));
        }
        if let Some(t) = run.timeout
            && !(t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_SECONDS)
        {
            return Err(format_error(
                shown,
                line_of_key(text, "timeout", 0),
                "run.timeout must be a number of seconds > 0 and at most a year (31536000)",
            ));
        }
        let has = |p: &str| run.args.iter().any(|a| a == p);
        let option_has_args = self
            .option_args
            .iter()
            .any(|a| !a.on.is_empty() || !a.off.is_empty() || !a.arg.is_empty());
        if option_has_args && !has("{options}") {
            return Err(format_error(
                shown,
                line_of_key(text, "args", 0),
                "run.args has no `{options}` element, but options have arguments",
            ));
        }
        if self.workloads.iter().any(|w| !w.args.is_empty()) && !has("{workload}") {
            return Err(format_error(
                shown,
                line_of_key(text, "args", 0),
                "run.args has no `{workload}` element, but workloads have arguments",
            ));
        }
        Ok(())
    }

    fn compute_hash(&self) -> String {
        #[derive(Serialize)]
        struct Meaning<'a> {
            system: &'a str,
            run: &'a Option<RunSpec>,
            options: Vec<(&'a str, &'a OptionArgs)>,
            // Whole workloads: a changed `prepare` command may change the input too.
            workloads: &'a [Workload],
            // How a commit's program is built; left out without history, so specs without
            // it keep their hash.
            #[serde(skip_serializing_if = "Option::is_none")]
            history_build: Option<(&'a [Vec<String>], &'a str)>,
            // Runs under an instruction counter take other times: kept apart.
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            counted: bool,
        }
        // How long a run may take does not change what it measures.
        let run = self.run.clone().map(|r| RunSpec { timeout: None, ..r });
        let meaning = Meaning {
            system: &self.name,
            run: &run,
            options: self
                .space
                .options()
                .iter()
                .zip(&self.option_args)
                .map(|(o, a)| (o.name.as_str(), a))
                .collect(),
            workloads: &self.workloads,
            history_build: self
                .history
                .as_ref()
                .map(|h| (h.build.as_slice(), h.output.as_str())),
            counted: self.measure.metric == Metric::Instructions,
        };
        let json = serde_json::to_string(&meaning).expect("spec serialises");
        let digest = Sha256::digest(json.as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The run section, or an error saying the spec describes only a space.
    pub fn run(&self) -> Result<&RunSpec, Error> {
        self.run.as_ref().ok_or_else(|| {
            Error::Invalid(format!(
                "{}: no [run] section: the spec describes a space but not how to run the program",
                self.path.display()
            ))
        })
    }

    /// The workload with this name, or (`None`) the first one meant for measurement.
    pub fn workload(&self, name: Option<&str>) -> Result<&Workload, Error> {
        match name {
            Some(name) => self
                .workloads
                .iter()
                .find(|w| w.name == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = self.workloads.iter().map(|w| w.name.as_str()).collect();
                    Error::Invalid(format!(
                        "{}: no workload `{name}` (defined: {})",
                        self.path.display(),
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ))
                }),
            None => self
                .workloads
                .iter()
                .find(|w| w.purpose == Purpose::Measure)
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "{}: no workload to measure with; add a [[workload]]",
                        self.path.display()
                    ))
                }),
        }
    }

    /// The workload for analysis runs: the first with purpose "analysis", else the one
    /// measured.
    pub fn analysis_workload(&self) -> Result<&Workload, Error> {
        match self
            .workloads
            .iter()
            .find(|w| w.purpose == Purpose::Analysis)
        {
            Some(w) => Ok(w),
            None => self.workload(None),
        }
    }

    /// The working directory runs start in.
    pub fn cwd(&self) -> PathBuf {
        match self.run.as_ref().and_then(|r| r.cwd.as_deref()) {
            Some(cwd) => self.dir.join(cwd),
            None => self.dir.clone(),
        }
    }

    /// Checks that runs can start: a run section, an existing working directory, and the
    /// program. Returns the program's path.
    pub fn check_runnable(&self) -> Result<PathBuf, Error> {
        self.check_cwd()?;
        self.program()
    }

    /// Checks that there is a run section and its working directory exists.
    pub fn check_cwd(&self) -> Result<(), Error> {
        self.run()?;
        let cwd = self.cwd();
        if !cwd.is_dir() {
            return Err(Error::Invalid(format!(
                "{}: working directory `{}` does not exist",
                self.path.display(),
                cwd.display()
            )));
        }
        Ok(())
    }

    /// The program to run: a path relative to the spec's directory, or found on `PATH`.
    pub fn program(&self) -> Result<PathBuf, Error> {
        let program = &self.run()?.program;
        if program.is_empty() {
            return Err(Error::Invalid(format!(
                "{}: the program is built from [history] (no run.program); measure it at a commit (--commit REV)",
                self.path.display()
            )));
        }
        if program.contains('/') {
            let path = self.dir.join(program);
            if path.is_file() && !is_executable(&path) {
                return Err(Error::Invalid(format!(
                    "program `{}` is not executable (`chmod +x` it)",
                    path.display()
                )));
            }
            if path.is_file() {
                return Ok(path);
            }
            return Err(Error::Invalid(format!(
                "program `{}` does not exist",
                path.display()
            )));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| is_executable(p))
            .ok_or_else(|| Error::Invalid(format!("program `{program}` is not on PATH")))
    }

    /// Makes sure the workload's files exist, running its `prepare` command when one is
    /// missing — or was left by a `prepare` that did not finish. Returns whether `prepare` ran.
    ///
    /// A workload file is complete or absent: after `prepare` succeeds, a marker beside the
    /// files (`.knobs/prepared-WORKLOAD`) records each file's size and SHA-256; files a
    /// `prepare` made without a matching marker (it was killed, or failed half-way) are
    /// removed and made again. A failing `prepare` removes what it wrote; it dies with knobs.
    pub fn prepare_workload(&self, workload: &Workload) -> Result<bool, Error> {
        let cwd = self.cwd();
        let missing = |w: &Workload| w.files.iter().find(|f| !cwd.join(f).exists()).cloned();
        let Some(prepare) = &workload.prepare else {
            return match missing(workload) {
                None => Ok(false),
                Some(first_missing) => Err(Error::Invalid(format!(
                    "workload `{}`: file `{}` is missing (and the workload has no `prepare` command)",
                    workload.name,
                    cwd.join(&first_missing).display()
                ))),
            };
        };
        if workload.files.is_empty() {
            return Ok(false);
        }
        let marker = cwd
            .join(".knobs")
            .join(format!("prepared-{}", marker_name(&workload.name)));
        let digests = |w: &Workload| self.file_digests(w);
        if missing(workload).is_none()
            && let (Ok(recorded), Some(now)) = (std::fs::read_to_string(&marker), digests(workload))
            && recorded == now
        {
            return Ok(false);
        }
        // Incomplete or unchecked: start from nothing.
        let remove_files = || {
            for f in &workload.files {
                let _ = std::fs::remove_file(cwd.join(f));
            }
        };
        let _ = std::fs::remove_file(&marker);
        remove_files();
        let mut command = std::process::Command::new(&prepare[0]);
        command
            .args(&prepare[1..])
            .current_dir(&cwd)
            .stdin(std::process::Stdio::null());
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: `prctl` is async-signal-safe and touches only this (forked) process;
            // nothing else runs between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        let status = command.status().map_err(|e| {
            Error::Invalid(format!(
                "workload `{}`: cannot run prepare command `{}`: {e}",
                workload.name, prepare[0]
            ))
        })?;
        if !status.success() {
            remove_files();
            return Err(Error::Invalid(format!(
                "workload `{}`: prepare command `{}` failed ({status}); what it wrote was removed",
                workload.name,
                prepare.join(" ")
            )));
        }
        if let Some(still) = missing(workload) {
            remove_files();
            return Err(Error::Invalid(format!(
                "workload `{}`: prepare command ran but `{}` is still missing",
                workload.name,
                cwd.join(still).display()
            )));
        }
        let recorded = digests(workload).ok_or_else(|| {
            Error::Invalid(format!(
                "workload `{}`: cannot read the files `prepare` made",
                workload.name
            ))
        })?;
        let write = std::fs::create_dir_all(cwd.join(".knobs"))
            .and_then(|()| std::fs::write(&marker, recorded));
        write.map_err(|e| {
            Error::Invalid(format!(
                "workload `{}`: cannot record the prepared files in {}: {e}",
                workload.name,
                marker.display()
            ))
        })?;
        Ok(true)
    }

    /// Per listed file of the workload: `name<TAB>size<TAB>sha256`; `None` when one cannot
    /// be read.
    fn file_digests(&self, workload: &Workload) -> Option<String> {
        let cwd = self.cwd();
        let mut out = String::new();
        for f in &workload.files {
            let bytes = std::fs::read(cwd.join(f)).ok()?;
            let hex: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            out.push_str(&format!("{f}\t{}\t{hex}\n", bytes.len()));
        }
        Some(out)
    }

    /// A digest of the workload's files as they are now (the first 16 hex digits of a SHA-256
    /// over each file's size and SHA-256), stored with every run so a changed input is
    /// noticed; `None` when the workload lists no files or one cannot be read.
    pub fn workload_digest(&self, workload: &Workload) -> Option<String> {
        if workload.files.is_empty() {
            return None;
        }
        let all = self.file_digests(workload)?;
        let hex: String = Sha256::digest(all.as_bytes())[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(hex)
    }

    /// The command line, environment and input for one configuration and workload.
    pub fn invocation(
        &self,
        config: &Configuration,
        workload: &Workload,
    ) -> Result<Invocation, Error> {
        self.invocation_of(self.program()?, config, workload)
    }

    /// The same for another program with the spec's arguments (an instrumented build).
    pub fn invocation_of(
        &self,
        program: PathBuf,
        config: &Configuration,
        workload: &Workload,
    ) -> Result<Invocation, Error> {
        let run = self.run()?;
        let mut option_argv = Vec::new();
        let mut env: BTreeMap<String, String> = run.env.clone();
        for (i, (option, how)) in self
            .space
            .options()
            .iter()
            .zip(&self.option_args)
            .enumerate()
        {
            let index = config.0[i];
            let value = option.format_value(index);
            match &option.domain {
                Domain::Binary => {
                    option_argv.extend(if index == 1 { &how.on } else { &how.off }.iter().cloned())
                }
                Domain::Numeric { .. } => {
                    option_argv.extend(how.arg.iter().map(|a| a.replace("{value}", &value)))
                }
            }
            for (k, v) in &how.env {
                env.insert(k.clone(), v.replace("{value}", &value));
            }
        }
        for (k, v) in &workload.env {
            env.insert(k.clone(), v.clone());
        }
        let mut args = Vec::new();
        for a in &run.args {
            match a.as_str() {
                "{options}" => args.extend(option_argv.iter().cloned()),
                "{workload}" => args.extend(workload.args.iter().cloned()),
                _ => args.push(a.clone()),
            }
        }
        let cwd = self.cwd();
        let stdin = workload
            .stdin
            .as_ref()
            .or(run.stdin.as_ref())
            .map(|s| cwd.join(s));
        Ok(Invocation {
            program,
            args,
            env: env.into_iter().collect(),
            cwd,
            stdin,
            timeout: Duration::from_secs_f64(run.timeout.unwrap_or(600.0)),
        })
    }
}

/// What is wrong with a `[history]` section, if anything.
fn check_history(history: &HistorySpec) -> Result<(), String> {
    if history.repository.trim().is_empty() {
        return Err("`repository` is empty".into());
    }
    if history.range.trim().is_empty() {
        return Err("`range` is empty".into());
    }
    if history.build.is_empty() {
        return Err("`build` has no steps; give argv lists, e.g. [[\"make\"]]".into());
    }
    if let Some(i) = history.build.iter().position(|step| step.is_empty()) {
        return Err(format!("`build` step {} is an empty command", i + 1));
    }
    let output = Path::new(&history.output);
    let escapes = output.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    if history.output.is_empty() || escapes {
        return Err(format!(
            "`output` must be a path inside the checkout (`src/prog`), not `{}`",
            history.output
        ));
    }
    if let Some(t) = history.timeout
        && !(t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_SECONDS)
    {
        return Err("`timeout` must be a number of seconds > 0 and at most a year".into());
    }
    Ok(())
}

/// A workload name as a file name: anything but letters, digits, `-` and `_` becomes `_`.
fn marker_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
name = "demo"
constraints = ["fast => !level=9"]

[run]
program = "/bin/echo"
args = ["-n", "{options}", "--", "{workload}"]
env = { LC_ALL = "C" }
timeout = 5

[measure]
repetitions = 2
warmup = 1

[[workload]]
name = "real"
args = ["big.txt"]

[[workload]]
name = "small"
purpose = "analysis"
args = ["small.txt"]

[[option]]
name = "fast"
on = ["--fast"]
off = ["--best"]

[[option]]
name = "level"
values = [1, 5, 9]
arg = ["-{value}"]
env = { LEVEL = "{value}" }
"#;

    fn parse(text: &str) -> Result<SystemSpec, Error> {
        SystemSpec::parse(text, Path::new("/tmp/knobs.toml"))
    }

    #[test]
    fn invocation_expands_options_and_workload() {
        let spec = parse(SPEC).unwrap();
        assert_eq!(spec.name, "demo");
        assert_eq!(spec.measure.repetitions, 2);
        let config = spec.space.parse_configuration("fast,level=5").unwrap();
        let w = spec.workload(None).unwrap();
        assert_eq!(w.name, "real");
        let inv = spec.invocation(&config, w).unwrap();
        assert_eq!(inv.args, ["-n", "--fast", "-5", "--", "big.txt"]);
        assert!(inv.env.contains(&("LEVEL".into(), "5".into())));
        assert!(inv.env.contains(&("LC_ALL".into(), "C".into())));
        assert_eq!(inv.timeout, Duration::from_secs(5));
        let off = spec.space.parse_configuration("level=9").unwrap();
        let small = spec.workload(Some("small")).unwrap();
        assert_eq!(
            spec.invocation(&off, small).unwrap().args,
            ["-n", "--best", "-9", "--", "small.txt"]
        );
    }

    #[test]
    fn integers_beyond_a_float_reach_the_program_exactly() {
        let text = SPEC
            .replace("constraints = [\"fast => !level=9\"]", "")
            .replace(
                "values = [1, 5, 9]",
                "values = [1, 9007199254740993, 9223372036854775807]",
            );
        let spec = parse(&text).unwrap();
        let w = spec.workload(None).unwrap();
        for (value, arg) in [
            ("9007199254740993", "-9007199254740993"),
            ("9223372036854775807", "-9223372036854775807"),
            ("1", "-1"),
        ] {
            let config = spec
                .space
                .parse_configuration(&format!("level={value}"))
                .unwrap();
            let inv = spec.invocation(&config, w).unwrap();
            assert!(
                inv.args.contains(&arg.to_string()),
                "{value}: {:?}",
                inv.args
            );
            // And the store's text for it is exact too.
            assert!(spec.space.format_configuration(&config).contains(value));
        }
        // Two values a float cannot tell apart are an error, not one value.
        let e = parse(&SPEC.replace(
            "values = [1, 5, 9]",
            "values = [9007199254740992, 9007199254740993]",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("too close"), "{e}");
    }

    #[test]
    fn hash_tracks_meaning_not_repetitions() {
        let a = parse(SPEC).unwrap();
        let b = parse(
            &SPEC
                .replace("repetitions = 2", "repetitions = 7")
                .replace("timeout = 5", "timeout = 50"),
        )
        .unwrap();
        let c = parse(&SPEC.replace("\"-{value}\"", "\"--level={value}\"")).unwrap();
        assert_eq!(a.hash, b.hash);
        assert_ne!(a.hash, c.hash);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse(&SPEC.replace("warmup = 1", "warmup = 1\nwarmups = 2")).unwrap_err();
        assert!(e.to_string().contains("knobs.toml:14:"), "{e}");
        assert!(e.to_string().contains("warmups"), "{e}");
        let e = parse(&SPEC.replace("off = [\"--best\"]", "of = [\"--best\"]")).unwrap_err();
        assert!(e.to_string().contains("unknown field `of`"), "{e}");
        assert!(e.to_string().contains(":27:"), "{e}");
        let e = parse(&SPEC.replace("arg = [\"-{value}\"]", "on = [\"-x\"]")).unwrap_err();
        assert!(e.to_string().contains("numeric option uses `arg`"), "{e}");
        let e = parse(&SPEC.replace("\"{options}\", ", "")).unwrap_err();
        assert!(e.to_string().contains("no `{options}`"), "{e}");
        let e = parse(&SPEC.replace("repetitions = 2", "repetitions = 0")).unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
        for absurd in ["1e20", "0", "-3", "inf", "nan"] {
            let e =
                parse(&SPEC.replace("timeout = 5", &format!("timeout = {absurd}"))).unwrap_err();
            assert!(e.to_string().contains("at most a year"), "{absurd}: {e}");
        }
        let e = parse("[run]\nprogram = \"x\"\ntimeout = \"long\"\n").unwrap_err();
        assert!(e.to_string().contains("knobs.toml:3:"), "{e}");
        let e = parse(&SPEC.replace("[run]", "[run\n")).unwrap_err();
        assert!(e.to_string().contains("knobs.toml:5:5: "), "{e}");
        let e = parse(&SPEC.replace("timeout = 5", "timeout = 5 5")).unwrap_err();
        assert!(e.to_string().contains("knobs.toml:9:11: "), "{e}");
    }

    #[test]
    fn missing_program_and_workload() {
        let spec = parse(&SPEC.replace("/bin/echo", "no-such-program-knobs")).unwrap();
        let e = spec.program().unwrap_err();
        assert!(e.to_string().contains("not on PATH"), "{e}");
        let e = parse(SPEC).unwrap().workload(Some("huge")).unwrap_err();
        assert!(e.to_string().contains("no workload `huge`"), "{e}");
    }

    #[test]
    fn the_space_can_come_from_a_feature_model_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("model.dimacs"),
            "c 1 a\nc 2 b\np cnf 2 1\n-1 -2 0\n",
        )
        .unwrap();
        let text = "name = \"fm\"\nspace = \"model.dimacs\"\n[run]\nprogram = \"true\"\n";
        let spec = SystemSpec::parse(text, &dir.path().join("knobs.toml")).unwrap();
        assert_eq!(spec.space.names(), ["a", "b"]);
        assert_eq!(spec.space.name, "fm");
        let path = dir.path().join("knobs.toml");
        let selected =
            format!("{text}args = [\"{{options}}\"]\n[[option]]\nname = \"b\"\non = [\"-b\"]\n");
        let spec = SystemSpec::parse(&selected, &path).unwrap();
        let config = spec.space.parse_configuration("b").unwrap();
        assert_eq!(spec.option_args[1].on, ["-b"]);
        assert_eq!(spec.space.format_configuration(&config), "b");
        let unknown = selected.replace("name = \"b\"", "name = \"q\"");
        let e = SystemSpec::parse(&unknown, &path).unwrap_err();
        assert!(e.to_string().contains("unknown option `q`"), "{e}");
        let both = format!("{text}[[option]]\nname = \"c\"\nvalues = [1, 2]\n");
        let e = SystemSpec::parse(&both, &path).unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
    }

    #[test]
    fn build_and_option_sources_for_white_box_work() {
        let text = SPEC.replace(
            "[run]",
            "[build]\nsources = [\"main.c\"]\ndefines = [\"NDEBUG\"]\nlink = [\"-lm\"]\n\n[run]",
        )
        .replace(
            "on = [\"--fast\"]",
            "on = [\"--fast\"]\nsource = { function = \"getenv\", arg = \"FAST\" }",
        )
        .replace(
            "arg = [\"-{value}\"]",
            "arg = [\"-{value}\"]\nsource = [{ global = \"level\" }, { struct = \"opts\", field = \"level\" }]",
        );
        let spec = parse(&text).unwrap();
        let build = spec.build.as_ref().unwrap();
        assert_eq!(
            (build.sources.as_slice(), build.link.as_slice()),
            (&["main.c".to_string()][..], &["-lm".to_string()][..])
        );
        assert_eq!(
            spec.option_sources[0][0].function.as_deref(),
            Some("getenv")
        );
        assert_eq!(spec.option_sources[0][0].arg.as_deref(), Some("FAST"));
        assert_eq!(spec.option_sources[1].len(), 2);
        let e = parse(&text.replace(
            "{ global = \"level\" }",
            "{ global = \"level\", function = \"f\" }",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("exactly one of"), "{e}");
        let e = parse(&text.replace(
            "sources = [\"main.c\"]",
            "sources = [\"main.c\"]\nbitcode = \"p.bc\"",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let e = parse(&text.replace(
            "{ function = \"getenv\", arg",
            "{ function = \"getenv\", argh",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("knobs.toml:"), "{e}");
    }

    #[test]
    fn prepare_creates_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let text = SPEC.replace(
            "args = [\"big.txt\"]",
            "args = [\"big.txt\"]\nfiles = [\"big.txt\"]\nprepare = [\"sh\", \"-c\", \"echo hi > big.txt\"]",
        );
        let spec = SystemSpec::parse(&text, &dir.path().join("knobs.toml")).unwrap();
        let w = spec.workload(None).unwrap();
        assert!(spec.prepare_workload(w).unwrap());
        assert!(!spec.prepare_workload(w).unwrap());
        assert!(dir.path().join("big.txt").exists());
        let small = spec.workload(Some("small")).unwrap();
        assert!(
            spec.prepare_workload(small).is_ok(),
            "no files listed: nothing to check"
        );
    }

    #[test]
    fn a_workload_file_is_complete_or_absent() {
        let dir = tempfile::tempdir().unwrap();
        let with_prepare = |prepare: &str| {
            let text = SPEC.replace(
                "args = [\"big.txt\"]",
                &format!("args = [\"big.txt\"]\nfiles = [\"big.txt\"]\nprepare = {prepare}"),
            );
            SystemSpec::parse(&text, &dir.path().join("knobs.toml")).unwrap()
        };
        let big = dir.path().join("big.txt");
        // A prepare that writes a line, then fails: nothing is left behind, and it is an error.
        let spec = with_prepare(r#"["sh", "-c", "echo half > big.txt; exit 3"]"#);
        let w = spec.workload(None).unwrap();
        let e = spec.prepare_workload(w).unwrap_err().to_string();
        assert!(e.contains("failed") && e.contains("removed"), "{e}");
        assert!(!big.exists(), "the partial file was removed");
        // A file a killed prepare left (no marker): made again, whole.
        std::fs::write(&big, "16 of 40 lines\n").unwrap();
        let spec = with_prepare(r#"["sh", "-c", "seq 40 > big.txt"]"#);
        let w = spec.workload(None).unwrap();
        assert!(spec.prepare_workload(w).unwrap(), "redone");
        assert_eq!(std::fs::read_to_string(&big).unwrap().lines().count(), 40);
        assert!(!spec.prepare_workload(w).unwrap(), "complete now: kept");
        // Changed behind knobs' back: made again.
        std::fs::write(&big, "edited\n").unwrap();
        assert!(spec.prepare_workload(w).unwrap());
        assert_eq!(std::fs::read_to_string(&big).unwrap().lines().count(), 40);
    }
}
