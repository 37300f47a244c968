//! The simulator against real builds: a few real variants (every feature off, each alone,
//! all) compiled as the simulator is, each run beside the simulator in the same configuration
//! on the spec's workload under the instruction counter, and per option its effect (the
//! change from every feature off to it alone) in both. Encoding removes the real builds'
//! constant folding and dead-code elimination, so the two can differ; this says by how much.

use std::path::Path;

use serde::Serialize;

use crate::{Built, Error, Options};

/// One configuration, counted in its real build and in the simulator.
#[derive(Debug, Clone, Serialize)]
pub struct CheckedConfiguration {
    /// The selected features' options.
    pub selected: Vec<String>,
    pub real: u64,
    pub simulator: u64,
}

/// An option's effect: its configuration alone against every feature off.
#[derive(Debug, Clone, Serialize)]
pub struct OptionEffect {
    pub option: String,
    pub real: i64,
    pub simulator: i64,
    /// The simulator's effect minus the real one, in % of the real count with every feature
    /// off.
    pub difference_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// How instructions were counted.
    pub counter: String,
    pub workload: String,
    pub configurations: Vec<CheckedConfiguration>,
    pub effects: Vec<OptionEffect>,
    /// Configurations the space does not allow, left out.
    pub invalid: Vec<String>,
}

/// Counts the real builds and the simulator in every feature off, each alone, and all.
pub fn check(spec: &measure::SystemSpec, built: &Built, options: &Options) -> Result<Check, Error> {
    if !built.build_only.is_empty() {
        return Err(Error::Invalid(format!(
            "the check compares one build of the simulator with real builds, and options {} stay \
             build options of the simulator (a build per set of their values): measure its \
             spec with `knobs measure` beside the original's",
            built.build_only.join(", ")
        )));
    }
    let options = &options.absolute()?;
    let simulator_spec = measure::SystemSpec::load(&built.spec)?;
    let workload = spec.workload(None)?;
    spec.prepare_workload(workload)?;
    let counter = measure::instructions::Counter::detect()?;
    let names: Vec<&str> = built.features.iter().map(|f| f.option.as_str()).collect();
    let mut wanted: Vec<Vec<&str>> = vec![Vec::new()];
    wanted.extend(names.iter().map(|n| vec![*n]));
    if names.len() > 1 {
        wanted.push(names.clone());
    }
    let mut configurations = Vec::new();
    let mut invalid = Vec::new();
    for selected in wanted {
        let text = selected.join(",");
        let config = spec
            .space
            .parse_configuration(&text)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if !spec.space.violations(&config).is_empty() {
            invalid.push(if text.is_empty() {
                "(none)".into()
            } else {
                text
            });
            continue;
        }
        let real_program = real_build(spec, built, options, &selected)?;
        let real_run = spec.invocation_of(real_program, &config, workload)?;
        let simulated_run = simulator_spec.invocation(&config, workload)?;
        configurations.push(CheckedConfiguration {
            selected: selected.iter().map(|s| s.to_string()).collect(),
            real: count(counter, &real_run, &options.out_dir)?,
            simulator: count(counter, &simulated_run, &options.out_dir)?,
        });
    }
    let effects = effects(&configurations, &names);
    Ok(Check {
        counter: counter.describe().into(),
        workload: workload.name.clone(),
        configurations,
        effects,
        invalid,
    })
}

fn effects(configurations: &[CheckedConfiguration], names: &[&str]) -> Vec<OptionEffect> {
    let Some(base) = configurations.iter().find(|c| c.selected.is_empty()) else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| {
            let alone = configurations
                .iter()
                .find(|c| c.selected == [name.to_string()])?;
            let real = alone.real as i64 - base.real as i64;
            let simulator = alone.simulator as i64 - base.simulator as i64;
            Some(OptionEffect {
                option: name.to_string(),
                real,
                simulator,
                difference_percent: 100.0 * (simulator - real) as f64 / base.real as f64,
            })
        })
        .collect()
}

/// The real variant with `selected` features, compiled once into `out_dir/real/`.
fn real_build(
    spec: &measure::SystemSpec,
    built: &Built,
    options: &Options,
    selected: &[&str],
) -> Result<std::path::PathBuf, Error> {
    let mut defines = Vec::new();
    for f in &built.features {
        let value = if selected.contains(&f.option.as_str()) {
            &f.on
        } else {
            &f.off
        };
        if let variants::MacroValue::Defined(v) = value {
            defines.push(format!("{}={v}", f.macro_name));
        }
    }
    let name = if selected.is_empty() {
        "none".to_string()
    } else {
        selected.join("+")
    };
    let program = options.out_dir.join("real").join(name);
    crate::write(&program.with_extension("defines"), &defines.join(" "))?;
    crate::compile(spec, &options.clang, &spec.dir, &[], &defines, &program)?;
    Ok(program)
}

fn count(
    counter: measure::instructions::Counter,
    run: &measure::Invocation,
    out_dir: &Path,
) -> Result<u64, Error> {
    let dir = out_dir.join("count");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let result = measure::runner::run(&counter.wrap(run, &dir));
    if !result.outcome.is_ok() {
        return Err(Error::Invalid(format!(
            "{} failed under the counter: {}",
            run.program.display(),
            result.outcome.describe()
        )));
    }
    counter.read(&dir).map_err(Error::Invalid)
}
