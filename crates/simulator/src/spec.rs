//! The spec's side: which options are features (from their `build` table), and the run-time
//! spec of the simulator, written by editing the spec's own TOML so that everything else in
//! it (workloads, measurement settings, constraints) means what it meant.

use std::path::Path;

use measure::spec::OptionBuild;
use toml::{Table, Value};
use variants::{Feature, MacroValue};

use crate::Error;

fn table(spec: &measure::SystemSpec) -> Result<Table, Error> {
    toml::from_str(&spec.text).map_err(|e| Error::Invalid(format!("{}: {e}", spec.path.display())))
}

/// The spec's features: binary options whose `build` sets one macro, either with `define`
/// (`-DNAME` when selected, undefined when not) or with one `-DNAME=V` in `flags` and one in
/// `off_flags` (`#if NAME` style). Options that act on the build otherwise are returned apart:
/// the simulator cannot read them at run time.
pub fn features(spec: &measure::SystemSpec) -> (Vec<Feature>, Vec<String>) {
    let mut features = Vec::new();
    let mut others = Vec::new();
    for (option, args) in spec.space.options().iter().zip(&spec.option_args) {
        let Some(build) = &args.build else { continue };
        match feature(build, &option.name).filter(|_| option.is_binary()) {
            Some(f) => features.push(f),
            None => others.push(option.name.clone()),
        }
    }
    (features, others)
}

/// The first option that acts on the build through `configure` arguments.
pub fn configured(spec: &measure::SystemSpec) -> Option<String> {
    spec.space
        .options()
        .iter()
        .zip(&spec.option_args)
        .find(|(_, args)| {
            args.build
                .as_ref()
                .is_some_and(|b| !b.configure.is_empty() || !b.off_configure.is_empty())
        })
        .map(|(o, _)| o.name.clone())
}

/// How the simulator's spec builds a simulator per set of values of the options that stay
/// build options: steps run in a copy of the encoded sources, and the program they leave.
pub struct Recipe {
    pub steps: Vec<Vec<String>>,
    pub output: String,
}

fn feature(build: &OptionBuild, option: &str) -> Option<Feature> {
    let plain = build.link.is_empty()
        && build.off_link.is_empty()
        && build.configure.is_empty()
        && build.off_configure.is_empty();
    if !plain {
        return None;
    }
    if let Some(name) = &build.define {
        let only = build.flags.is_empty() && build.off_flags.is_empty();
        return only.then(|| Feature::defined_when_on(name, option));
    }
    let valued = |flags: &[String]| -> Option<(String, i64)> {
        let [flag] = flags else { return None };
        let (name, value) = flag.strip_prefix("-D")?.split_once('=')?;
        Some((name.to_string(), value.parse().ok()?))
    };
    let (on_name, on) = valued(&build.flags)?;
    let (off_name, off) = valued(&build.off_flags)?;
    (on_name == off_name).then(|| Feature {
        macro_name: on_name,
        option: option.into(),
        on: MacroValue::Defined(on),
        off: MacroValue::Defined(off),
    })
}

/// The simulator's spec: the same space, workloads and settings; each encoded option
/// selected through its environment variable instead of the build; the simulator as the
/// program (run where the spec ran it) and its encoded sources as the sources. With a
/// `recipe` (options stay build options), the program is instead the recipe's build of a
/// copy of the encoded sources, one per set of those options' values.
pub fn runtime_spec(
    spec: &measure::SystemSpec,
    simulator: &variants::Simulator,
    src: &Path,
    features_c: &Path,
    program: &Path,
    recipe: Option<Recipe>,
) -> Result<String, Error> {
    let mut table = table(spec)?;
    let absolute = |p: &Path| Value::String(p.display().to_string());
    table.insert(
        "name".into(),
        Value::String(format!("{}-simulator", spec.name)),
    );
    table.remove("history");
    if let Some(space) = table.get("space").and_then(Value::as_str) {
        table.insert("space".into(), absolute(&spec.dir.join(space)));
    }
    for option in table
        .get_mut("option")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(option) = option.as_table_mut() else {
            continue;
        };
        let name = option
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let Some(feature) = simulator.encoded.iter().find(|f| f.option == name) else {
            continue;
        };
        option.remove("build");
        let env = option
            .entry("env")
            .or_insert_with(|| Value::Table(Table::new()));
        if let Some(env) = env.as_table_mut() {
            env.insert(feature.env_var(), Value::String("{value}".into()));
        }
    }
    let run = table
        .entry("run")
        .or_insert_with(|| Value::Table(Table::new()));
    let run = run
        .as_table_mut()
        .ok_or_else(|| Error::Invalid("[run] is not a table".into()))?;
    let cwd = spec
        .dir
        .join(run.get("cwd").and_then(Value::as_str).unwrap_or("."));
    run.insert("cwd".into(), absolute(&cwd));
    match recipe {
        Some(_) => run.remove("program"),
        None => run.insert("program".into(), absolute(program)),
    };
    let build = spec.build.as_ref().expect("sources were read");
    let mut sources: Vec<Value> = build
        .sources
        .iter()
        .map(|s| absolute(&src.join(s)))
        .collect();
    sources.push(absolute(features_c));
    let include: Vec<Value> = build
        .include
        .iter()
        .flat_map(|dir| [absolute(&src.join(dir)), absolute(&spec.dir.join(dir))])
        .collect();
    let build_table = table
        .entry("build")
        .or_insert_with(|| Value::Table(Table::new()));
    if let Some(b) = build_table.as_table_mut() {
        // The simulator is built once, here: the recipe that builds real variants is not its.
        for key in ["recipe", "output", "dir"] {
            b.remove(key);
        }
        b.insert("sources".into(), Value::Array(sources));
        b.insert("include".into(), Value::Array(include));
        match recipe {
            Some(recipe) => {
                let strings =
                    |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
                b.insert("dir".into(), absolute(src));
                let steps = recipe.steps.into_iter().map(strings).collect();
                b.insert("recipe".into(), Value::Array(steps));
                b.insert("output".into(), Value::String(recipe.output));
            }
            None => {
                b.remove("timeout");
            }
        }
    }
    let text = toml::to_string(&table).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(format!(
        "{}{} (written by `knobs simulator`): its compile-time\n\
         # features are read at run time from KNOBS_FEATURE_* (the options' `env`).\n{text}",
        measure::spec::SIMULATOR_HEADER,
        spec.path.display()
    ))
}
