//! Reading a spec: its TOML checked key by key, errors with their line and column, and the
//! hash of what the spec means.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use space::formats::spec::{SpaceSpec, read_space_spec, space_from_spec};

use super::white_box::SourceList;
use super::*;
use crate::Error;

/// A whole spec file as this crate reads it: its own keys typed, the space's keys (read by
/// `space`) passed over. Read in one pass without `flatten`, so every error keeps its line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    run: Option<RunSpec>,
    build: Option<BuildSpec>,
    history: Option<HistorySpec>,
    #[serde(default)]
    slurm: SlurmSettings,
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
    build: Option<OptionBuild>,
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

/// Line and column (both 1-based) of a byte offset.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// Line (1-based) of the first line at or after `from` that assigns `key`; 0 if none.
pub(super) fn line_of_key(text: &str, key: &str, from: usize) -> usize {
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

pub(super) fn format_error(shown: &str, line: usize, message: impl Into<String>) -> Error {
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
            if let Some(build) = &o.build {
                build.check(binary).map_err(|why| {
                    format_error(
                        &shown,
                        line_of_key(text, "build", name_line).max(name_line),
                        format!("option `{}`: build: {why}", o.name),
                    )
                })?;
            }
            option_args[id.index()] = OptionArgs {
                on: o.on,
                off: o.off,
                arg: o.arg,
                env: o.env,
                build: o.build,
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
            && build.recipe.is_empty()
            && build.sources.is_empty() == build.bitcode.is_none()
        {
            return Err(format_error(
                shown,
                line_of_key(text, "sources", 0).max(line_of_key(text, "bitcode", 0)),
                "build: give `sources` (C files knobs compiles) or `bitcode`, not both",
            ));
        }
        self.check_build_recipe(shown, text)?;
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
        let built = !self.build_options().is_empty();
        if run.program.is_empty() && self.history.is_none() && !built {
            return Err(format_error(
                shown,
                line_of_key(text, "program", 0),
                "run.program is missing or empty (only a spec with [history] or build options may leave it out)",
            ));
        }
        if built && !run.program.is_empty() {
            return Err(format_error(
                shown,
                line_of_key(text, "program", 0),
                "run.program: with build options the program is each configuration's build (the recipe's `output`); leave `program` out",
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

    /// What the hash is taken of: what a measurement means, as JSON.
    fn hashed_meaning(&self) -> String {
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
            // How the program is built for its build options; left out without a recipe.
            #[serde(skip_serializing_if = "Option::is_none")]
            build_recipe: Option<(&'a [Vec<String>], &'a str)>,
            // Runs under an instruction counter take other times: kept apart, and apart
            // from runs counted under another way of starting the program.
            #[serde(skip_serializing_if = "Option::is_none")]
            counted: Option<String>,
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
            build_recipe: self
                .build
                .as_ref()
                .filter(|b| !b.recipe.is_empty())
                .map(|b| (b.recipe.as_slice(), b.output.as_deref().unwrap_or(""))),
            counted: (self.measure.metric == Metric::Instructions)
                .then(crate::runner::counted_launch),
        };
        serde_json::to_string(&meaning).expect("spec serialises")
    }

    fn compute_hash(&self) -> String {
        let digest = Sha256::digest(self.hashed_meaning().as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// What is wrong with a `[history]` section, if anything.
pub(super) fn check_history(history: &HistorySpec) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::test_support::*;

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

    /// A counted spec's hash differs from the timed one's and follows how knobs starts a
    /// counted program: the launch is part of what it hashes.
    #[test]
    fn a_counted_hash_covers_how_the_program_is_started() {
        let timed = parse(SPEC).unwrap();
        let counted = timed.clone().with_metric(Metric::Instructions).unwrap();
        assert_ne!(timed.hash, counted.hash);
        let meaning = counted.hashed_meaning();
        assert!(
            meaning.contains(&crate::runner::counted_launch()),
            "{meaning}"
        );
        assert!(!timed.hashed_meaning().contains("launch"));
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
}
