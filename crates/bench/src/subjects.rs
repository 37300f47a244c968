//! The declared subjects (`bench/subjects.toml`): what to build, what to measure, and how.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// The file of declared subjects, relative to the workspace root.
pub const SUBJECTS_FILE: &str = "bench/subjects.toml";

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectsFile {
    #[serde(rename = "subject")]
    pub subjects: Vec<Subject>,
}

/// One subject: a system spec, how to get its program, and what to run on it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    pub name: String,
    /// One line on what the subject is.
    #[serde(default)]
    pub about: String,
    /// The system spec (`knobs.toml`), relative to the workspace root.
    pub spec: PathBuf,
    /// The spec's workload to measure (default: the spec's first one for measurement).
    pub workload: Option<String>,
    /// The command that fetches and builds the program (argv, run in the workspace root;
    /// it must be idempotent). With a `source`, it gets `KNOBS_SOURCE_VERSION` and
    /// `KNOBS_SOURCE_SHA256` in its environment and must verify them.
    #[serde(default)]
    pub build: Vec<String>,
    /// The pinned source the build uses.
    pub source: Option<Source>,
    /// The ground truth's sample (`knobs measure --sample`): brute force is `all`.
    #[serde(default = "default_ground_truth")]
    pub ground_truth: String,
    /// What to run, in this order.
    pub approaches: Vec<Approach>,
    #[serde(default)]
    pub blackbox: BlackBox,
    #[serde(default)]
    pub overhead: OverheadSettings,
    /// What `--quick` measures instead (it also runs fewer repetitions, the first seed and a
    /// shorter Table 7).
    #[serde(default)]
    pub quick: WorkloadInstead,
    /// What `--metric instructions` measures instead: counts repeat exactly, so a smaller
    /// workload is as precise as the long one timing needs, and where the machine has no
    /// counters cachegrind runs the program 30–60× slower.
    #[serde(default)]
    pub counted: WorkloadInstead,
    /// More runs of a white-box approach with other flags (`[[subject.extra]]`), each its
    /// own row.
    #[serde(default, rename = "extra")]
    pub extras: Vec<Extra>,
    /// Flags added to a declared approach's own command line, by approach name (e.g.
    /// Comprex's `--max-runs` where its exploration needs more taint runs than the default).
    #[serde(default)]
    pub args: std::collections::BTreeMap<String, Vec<String>>,
}

/// Another run of `crush` or `comprex` with more flags, e.g. Comprex without its overhead
/// correction.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extra {
    /// The row's approach name, e.g. `comprex-uncorrected`.
    pub name: String,
    pub approach: Approach,
    /// Flags added to the approach's command line.
    #[serde(default)]
    pub args: Vec<String>,
    /// The approach as declared, run a second time (a session of its own): its model is
    /// compared with the first run's, the drift its own measurement carries (what *brute
    /// force again* is for the ground truth).
    #[serde(default)]
    pub again: bool,
}

/// One step of a subject's run: an approach, under its own name, with its extra flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub approach: Approach,
    pub args: Vec<String>,
    /// The step this one repeats, whose model's predictions it is compared with.
    pub again_of: Option<String>,
}

impl Step {
    fn of(approach: Approach) -> Step {
        Step {
            name: approach.name().to_string(),
            approach,
            args: Vec::new(),
            again_of: None,
        }
    }
}

fn default_ground_truth() -> String {
    "all".to_string()
}

/// A pinned source: the package, its version and the checksum of the file that pins it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Where it comes from, in words (e.g. `Debian bookworm source package`).
    pub origin: String,
    pub package: String,
    pub version: String,
    /// The file whose checksum pins the source (relative to the workspace root, present
    /// after the build): a Debian `.dsc` lists the checksums of every tarball it unpacks.
    pub file: PathBuf,
    /// Its SHA-256, lower-case hex.
    pub sha256: String,
}

/// The black-box baselines: learners on samples, over several seeds.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackBox {
    /// `SAMPLE/LEARNER` pairs (`knobs learn --sample SAMPLE --learner LEARNER`), one step
    /// each, named as written.
    #[serde(default = "default_runs")]
    pub runs: Vec<String>,
    #[serde(default = "default_seeds")]
    pub seeds: Vec<u64>,
}

impl Default for BlackBox {
    fn default() -> Self {
        BlackBox {
            runs: default_runs(),
            seeds: default_seeds(),
        }
    }
}

/// The seeds' baselines: feature-wise and pair-wise sampling with stepwise regression, and
/// random samples of 50 and 200 configurations with stepwise, LASSO, a random forest and
/// `auto`; and, for a comparison at equal cost, random samples as large as Comprex's and
/// ConfigCrusher's in the same run, with `auto`.
pub const DEFAULT_RUNS: [&str; 12] = [
    "featurewise/stepwise",
    "pairwise/stepwise",
    "random:50/stepwise",
    "random:200/stepwise",
    "random:50/lasso",
    "random:200/lasso",
    "random:50/rf",
    "random:200/rf",
    "random:50/auto",
    "random:200/auto",
    "random:as:comprex/auto",
    "random:as:crush/auto",
];

/// `random:as:STEP`: a random sample as large as what step STEP of the same run measured.
pub const RANDOM_AS: &str = "random:as:";

fn default_runs() -> Vec<String> {
    DEFAULT_RUNS.map(String::from).to_vec()
}

/// A black-box run's sample and learner.
pub fn split_run(run: &str) -> Option<(&str, &str)> {
    let (sample, learner) = run.rsplit_once('/')?;
    (!sample.is_empty() && !learner.is_empty()).then_some((sample, learner))
}

/// Another workload a mode of the runner measures (`quick = { workload = … }`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadInstead {
    /// The workload (default: the subject's).
    pub workload: Option<String>,
}

/// Recorded runs per configuration under `--quick`.
pub const QUICK_REPETITIONS: u32 = 2;

fn default_seeds() -> Vec<u64> {
    vec![1]
}

/// Table 7: how many configurations, how many interleaved rounds.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverheadSettings {
    /// A number (a distance-based sample of that size, seed 1) or `"all"`.
    #[serde(default = "default_overhead_configurations")]
    pub configurations: Count,
    #[serde(default = "default_rounds")]
    pub rounds: usize,
}

impl Default for OverheadSettings {
    fn default() -> Self {
        OverheadSettings {
            configurations: default_overhead_configurations(),
            rounds: default_rounds(),
        }
    }
}

fn default_overhead_configurations() -> Count {
    Count::Some(8)
}

fn default_rounds() -> usize {
    5
}

/// `8` or `"all"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    All,
    Some(u64),
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Count::Some(n)),
            Raw::S(s) if s == "all" => Ok(Count::All),
            Raw::S(s) => Err(serde::de::Error::custom(format!(
                "expected a number or \"all\", found \"{s}\""
            ))),
        }
    }
}

/// What the runner can run on a subject. The brute force (the ground truth) runs first
/// whenever an approach's error is measured against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approach {
    /// `knobs measure --sample all` (or the subject's `ground_truth` sample).
    BruteForce,
    /// ConfigCrusher: `knobs crush`.
    Crush,
    /// Comprex: `knobs comprex`.
    Comprex,
    /// Comprex's Table IV: regions and configurations to measure at each region granularity
    /// (`knobs comprex --granularity-table`).
    Granularity,
    /// Black-box: every `blackbox.runs` pair of sample and learner, one step each.
    Blackbox,
    /// ConfigCrusher's instrumentation overhead before and after optimisation (Table 7).
    Overhead,
    /// SPLat: `knobs splat`.
    Splat,
    /// SPLat-delayed: `knobs splat --delayed`.
    SplatDelayed,
    /// Family-based measurement: `knobs family`.
    Family,
    /// The ground truth measured again, in a session of its own: how far two sessions of
    /// the same measurement disagree, the error no model can get below.
    Repeat,
}

impl Approach {
    pub const ALL: [Approach; 10] = [
        Approach::BruteForce,
        Approach::Crush,
        Approach::Comprex,
        Approach::Granularity,
        Approach::Blackbox,
        Approach::Overhead,
        Approach::Splat,
        Approach::SplatDelayed,
        Approach::Family,
        Approach::Repeat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Approach::BruteForce => "brute-force",
            Approach::Crush => "crush",
            Approach::Comprex => "comprex",
            Approach::Granularity => "granularity",
            Approach::Blackbox => "blackbox",
            Approach::Overhead => "overhead",
            Approach::Splat => "splat",
            Approach::SplatDelayed => "splat-delayed",
            Approach::Family => "family",
            Approach::Repeat => "repeat",
        }
    }

    /// Whether its error is measured against the ground truth.
    pub fn needs_ground_truth(self) -> bool {
        matches!(
            self,
            Approach::Crush
                | Approach::Comprex
                | Approach::Blackbox
                | Approach::Splat
                | Approach::SplatDelayed
                | Approach::Family
                | Approach::Repeat
        )
    }
}

impl fmt::Display for Approach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Approach {
    type Err = String;
    fn from_str(s: &str) -> Result<Approach, String> {
        Approach::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown approach `{s}` (one of {})",
                    Approach::ALL.map(Approach::name).join(", ")
                )
            })
    }
}

impl SubjectsFile {
    pub fn load(path: &Path) -> Result<SubjectsFile> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("{}", path.display()))
    }

    pub fn parse(text: &str) -> Result<SubjectsFile> {
        let file: SubjectsFile = toml::from_str(text)?;
        let mut seen = std::collections::BTreeSet::new();
        for s in &file.subjects {
            if !seen.insert(s.name.as_str()) {
                bail!("subject `{}` is declared twice", s.name);
            }
            if s.approaches.is_empty() {
                bail!("subject `{}` declares no approaches", s.name);
            }
            if s.blackbox.seeds.is_empty() {
                bail!("subject `{}`: blackbox.seeds is empty", s.name);
            }
            for run in &s.blackbox.runs {
                if split_run(run).is_none() {
                    bail!(
                        "subject `{}`: blackbox run `{run}` is not SAMPLE/LEARNER",
                        s.name
                    );
                }
            }
            for name in s.args.keys() {
                if !s.approaches.iter().any(|a| a.name() == name) {
                    bail!(
                        "subject `{}`: args of `{name}`, which is not one of its approaches",
                        s.name
                    );
                }
            }
            for e in &s.extras {
                if !matches!(
                    e.approach,
                    Approach::Crush | Approach::Comprex | Approach::Family
                ) {
                    bail!(
                        "subject `{}`: extra `{}`: only crush, comprex and family take extra runs",
                        s.name,
                        e.name
                    );
                }
                if e.again && (!s.approaches.contains(&e.approach) || !e.args.is_empty()) {
                    bail!(
                        "subject `{}`: extra `{}`: `again` repeats a declared approach as it is \
                         (declare `{}` and give no args)",
                        s.name,
                        e.name,
                        e.approach.name()
                    );
                }
                if e.name.parse::<Approach>().is_ok()
                    || s.extras.iter().filter(|o| o.name == e.name).count() > 1
                {
                    bail!(
                        "subject `{}`: extra `{}`: the name is taken",
                        s.name,
                        e.name
                    );
                }
            }
            if let Some(src) = &s.source
                && (src.sha256.len() != 64 || !src.sha256.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                bail!("subject `{}`: source.sha256 is not 64 hex digits", s.name);
            }
        }
        Ok(file)
    }

    pub fn get(&self, name: &str) -> Result<&Subject> {
        self.subjects
            .iter()
            .find(|s| s.name == name)
            .with_context(|| {
                format!(
                    "no subject `{name}` in {SUBJECTS_FILE} (declared: {})",
                    self.subjects
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// The subjects a run covers: those named, every subject with a pinned source when `real`
    /// (added to those named), every subject when neither; and when `only` restricts the
    /// approaches, an error unless every selected subject declares one of them.
    pub fn select(
        &self,
        names: &[String],
        real: bool,
        only: Option<&[String]>,
    ) -> Result<Vec<&Subject>> {
        let mut selected: Vec<&Subject> =
            names.iter().map(|n| self.get(n)).collect::<Result<_>>()?;
        if real {
            for s in self.subjects.iter().filter(|s| s.source.is_some()) {
                if !selected.iter().any(|o| o.name == s.name) {
                    selected.push(s);
                }
            }
        } else if selected.is_empty() {
            selected = self.subjects.iter().collect();
        }
        if let Some(only) = only {
            for name in only {
                if !selected.iter().any(|s| s.step_names().contains(name)) {
                    bail!(
                        "--approaches: no selected subject knows `{name}` (approaches: {})",
                        Approach::ALL.map(Approach::name).join(", ")
                    );
                }
            }
            if let Some(s) = selected.iter().find(|s| s.plan(Some(only)).is_empty()) {
                bail!(
                    "--approaches: subject `{}` declares none of {} (it runs {})",
                    s.name,
                    only.join(", "),
                    s.approaches
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(selected)
    }

    /// Two lines a subject: its name, spec and description; its steps, ground truth and source.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for s in &self.subjects {
            out.push_str(&format!(
                "{:16} {} — {}\n",
                s.name,
                s.spec.display(),
                s.about
            ));
            let steps: Vec<String> = s.plan(None).into_iter().map(|a| a.name).collect();
            let source = s.source.as_ref().map_or(String::new(), |src| {
                format!("; source: {} {} ({})", src.package, src.version, src.origin)
            });
            out.push_str(&format!(
                "{:16} approaches: {}; ground truth: {}{source}\n",
                "",
                steps.join(", "),
                s.ground_truth
            ));
        }
        out
    }
}

impl Subject {
    /// The steps to run: the declared approaches and extras (restricted to those named in
    /// `only` when given), with the brute force first when anything needs it.
    pub fn plan(&self, only: Option<&[String]>) -> Vec<Step> {
        let wanted = |name: &str| only.is_none_or(|o| o.iter().any(|n| n == name));
        let mut plan: Vec<Step> = Vec::new();
        for a in &self.approaches {
            if *a == Approach::Blackbox {
                for run in &self.blackbox.runs {
                    if wanted(a.name()) || wanted(run) {
                        plan.push(Step {
                            name: run.clone(),
                            approach: *a,
                            args: Vec::new(),
                            again_of: None,
                        });
                    }
                }
            } else if *a != Approach::BruteForce && wanted(a.name()) {
                plan.push(Step {
                    args: self.args.get(a.name()).cloned().unwrap_or_default(),
                    ..Step::of(*a)
                });
            }
            for e in self.extras.iter().filter(|e| e.approach == *a) {
                if wanted(&e.name) {
                    plan.push(Step {
                        name: e.name.clone(),
                        approach: e.approach,
                        args: e.args.clone(),
                        again_of: e.again.then(|| e.approach.name().to_string()),
                    });
                }
            }
        }
        let needs = plan.iter().any(|s| s.approach.needs_ground_truth());
        if needs || wanted(Approach::BruteForce.name()) && only.is_some() {
            plan.insert(0, Step::of(Approach::BruteForce));
        }
        plan
    }

    /// Every step name this subject knows.
    pub fn step_names(&self) -> Vec<String> {
        Approach::ALL
            .iter()
            .map(|a| a.name().to_string())
            .chain(self.extras.iter().map(|e| e.name.clone()))
            .chain(self.blackbox.runs.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_subjects_parse() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let file = SubjectsFile::load(&root.join(SUBJECTS_FILE)).unwrap();
        for s in &file.subjects {
            assert!(
                root.join(&s.spec).is_file(),
                "{}: no spec {}",
                s.name,
                s.spec.display()
            );
        }
        for name in ["running-example", "gzip", "xz"] {
            file.get(name).unwrap();
        }
    }

    /// The pins in subjects.toml are the defaults of the fetch scripts too, so that running
    /// a script by hand builds the same source.
    #[test]
    fn the_fetch_scripts_pin_the_same_sources() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let file = SubjectsFile::load(&root.join(SUBJECTS_FILE)).unwrap();
        for s in &file.subjects {
            let Some(src) = &s.source else { continue };
            let script = s
                .build
                .iter()
                .find(|a| a.ends_with(".sh"))
                .unwrap_or_else(|| panic!("{}: a pinned source needs a build script", s.name));
            let text = std::fs::read_to_string(root.join(script)).unwrap();
            assert!(
                text.contains(&format!("KNOBS_SOURCE_VERSION:-{}}}", src.version)),
                "{script} does not default to version {}",
                src.version
            );
            assert!(
                text.contains(&format!("KNOBS_SOURCE_SHA256:-{}}}", src.sha256)),
                "{script} does not default to sha256 {}",
                src.sha256
            );
        }
    }

    #[test]
    fn args_reach_their_declared_approach_only() {
        let file = SubjectsFile::parse(
            r#"
            [[subject]]
            name = "x"
            spec = "x.toml"
            approaches = ["crush", "comprex"]
            args = { comprex = ["--max-runs", "1024"] }
            "#,
        )
        .unwrap();
        let args: Vec<(String, Vec<String>)> = file.subjects[0]
            .plan(None)
            .into_iter()
            .map(|s| (s.name, s.args))
            .collect();
        assert!(args.contains(&("crush".into(), vec![])), "{args:?}");
        assert!(
            args.contains(&("comprex".into(), vec!["--max-runs".into(), "1024".into()])),
            "{args:?}"
        );
        let undeclared = SubjectsFile::parse(
            "[[subject]]\nname = \"x\"\nspec = \"x.toml\"\napproaches = [\"crush\"]\n\
             args = { comprex = [\"--max-runs\", \"1024\"] }\n",
        )
        .unwrap_err();
        assert!(
            format!("{undeclared:#}").contains("args of `comprex`, which is not one of its"),
            "{undeclared:#}"
        );
    }

    #[test]
    fn plan_puts_the_brute_force_first_when_needed() {
        let file = SubjectsFile::parse(
            r#"
            [[subject]]
            name = "x"
            spec = "x.toml"
            approaches = ["overhead", "crush", "blackbox"]
            blackbox = { runs = ["pairwise/stepwise", "random:8/lasso"] }
            [[subject.extra]]
            name = "crush-unoptimised"
            approach = "crush"
            args = ["--no-optimise"]
            "#,
        )
        .unwrap();
        let s = &file.subjects[0];
        let names = |only: Option<&[&str]>| {
            let only: Option<Vec<String>> = only.map(|o| o.iter().map(|n| n.to_string()).collect());
            s.plan(only.as_deref())
                .into_iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(None),
            [
                "brute-force",
                "overhead",
                "crush",
                "crush-unoptimised",
                "pairwise/stepwise",
                "random:8/lasso"
            ]
        );
        assert_eq!(
            names(Some(&["random:8/lasso"])),
            ["brute-force", "random:8/lasso"]
        );
        assert_eq!(names(Some(&["overhead"])), ["overhead"]);
        assert_eq!(names(Some(&["crush", "comprex"])), ["brute-force", "crush"]);
        assert_eq!(names(Some(&["brute-force"])), ["brute-force"]);
        assert_eq!(
            s.plan(Some(&["crush-unoptimised".to_string()]))[1].args,
            ["--no-optimise"]
        );
        assert!(
            SubjectsFile::parse(
                "[[subject]]\nname = \"x\"\nspec = \"x\"\napproaches = [\"crush\"]\n\
                 [[subject.extra]]\nname = \"crush\"\napproach = \"crush\"\n"
            )
            .is_err()
        );
    }

    #[test]
    fn an_again_extra_repeats_a_declared_approach() {
        let subject = |approaches: &str, extra: &str| {
            SubjectsFile::parse(&format!(
                "[[subject]]\nname = \"x\"\nspec = \"x\"\napproaches = [{approaches}]\n\
                 [[subject.extra]]\nname = \"crush-again\"\napproach = \"crush\"\n{extra}"
            ))
        };
        let file = subject("\"crush\"", "again = true\n").unwrap();
        let plan = file.subjects[0].plan(None);
        assert_eq!(plan[2].name, "crush-again");
        assert_eq!(plan[2].again_of.as_deref(), Some("crush"));
        assert_eq!(plan[1].again_of, None);
        let undeclared = subject("\"comprex\"", "again = true\n").unwrap_err();
        assert!(format!("{undeclared:#}").contains("repeats a declared approach"));
        assert!(subject("\"crush\"", "again = true\nargs = [\"-x\"]\n").is_err());
    }

    #[test]
    fn counts_are_numbers_or_all() {
        let file = SubjectsFile::parse(
            r#"
            [[subject]]
            name = "x"
            spec = "x.toml"
            approaches = ["overhead"]
            overhead = { configurations = "all", rounds = 3 }
            "#,
        )
        .unwrap();
        assert_eq!(file.subjects[0].overhead.configurations, Count::All);
        assert!(
            SubjectsFile::parse(
                "[[subject]]\nname = \"x\"\nspec = \"x\"\napproaches = [\"overhead\"]\noverhead = { configurations = \"some\" }\n"
            )
            .is_err()
        );
    }
}
