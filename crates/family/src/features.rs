//! The feature map: which feature (option) each function implements, from three sources a
//! user can combine, in this order of precedence: a source annotation on the function
//! (`__attribute__((annotate("knobs:feature=NAME")))`), name patterns in the spec (an
//! option's `functions = ["print_color*"]`), and the static taint analysis (a function whose
//! every call is guarded by decisions on one option, and only that option, implements it).
//! Functions without a feature are *base* code: they belong to whatever feature calls them.

use std::collections::BTreeMap;

use analysis::StatementInfluence;
use ir::{Callee, FuncId, InstKind, Program};
use serde::Serialize;
use space::{ConfigSpace, OptionId};

use crate::Error;

/// Where a function's feature came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureSource {
    Annotation,
    Spec,
    Derived,
}

impl std::fmt::Display for FeatureSource {
    /// Who mapped the function, as a reader says it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FeatureSource::Annotation => "an annotation",
            FeatureSource::Spec => "the spec",
            FeatureSource::Derived => "the static analysis",
        })
    }
}

/// One mapped function, as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct MappedFunction {
    pub function: String,
    pub feature: String,
    pub source: FeatureSource,
    /// Why: the annotation, the pattern, or the guarded calls.
    pub why: String,
}

/// Functions → features.
#[derive(Clone, Debug, Default)]
pub struct FeatureMap {
    pub by_function: BTreeMap<FuncId, OptionId>,
    /// Every mapped function, in the program's order.
    pub mapped: Vec<MappedFunction>,
    /// Patterns that matched no function, and the like.
    pub notes: Vec<String>,
}

const ANNOTATION: &str = "knobs:feature=";

/// Maps the program's defined functions to features. `patterns[o]` are option `o`'s
/// function-name patterns; `influence` (the static taint analysis) derives the rest.
pub fn feature_map(
    program: &Program,
    space: &ConfigSpace,
    patterns: &[Vec<String>],
    influence: Option<&StatementInfluence>,
) -> Result<FeatureMap, Error> {
    let mut map = FeatureMap::default();
    let mut chosen: BTreeMap<FuncId, (OptionId, FeatureSource, String)> = BTreeMap::new();
    for (f, func) in program.functions.iter_enumerated() {
        for a in &func.annotations {
            let Some(name) = a.strip_prefix(ANNOTATION) else {
                continue;
            };
            let o = space.find(name).ok_or_else(|| {
                Error::Invalid(format!(
                    "function `{}`: annotation `{a}` names no option of the space",
                    func.name
                ))
            })?;
            chosen
                .entry(f)
                .or_insert((o, FeatureSource::Annotation, format!("annotated `{a}`")));
        }
    }
    for (k, list) in patterns.iter().enumerate() {
        let o = OptionId(k as u32);
        for pattern in list {
            let mut matched = false;
            for (f, func) in program.functions.iter_enumerated() {
                if func.is_declaration || !glob(pattern, &func.name) {
                    continue;
                }
                matched = true;
                chosen.entry(f).or_insert((
                    o,
                    FeatureSource::Spec,
                    format!("matches `{pattern}` of option `{}`", space.option(o).name),
                ));
            }
            if !matched {
                map.notes.push(format!(
                    "option `{}`: function pattern `{pattern}` matches no function of the program",
                    space.option(o).name
                ));
            }
        }
    }
    if let Some(influence) = influence {
        for (f, (o, why)) in derived(program, influence) {
            chosen.entry(f).or_insert((o, FeatureSource::Derived, why));
        }
    }
    for (f, (o, source, why)) in chosen {
        map.by_function.insert(f, o);
        map.mapped.push(MappedFunction {
            function: program.func(f).name.clone(),
            feature: space.option(o).name.clone(),
            source,
            why,
        });
    }
    Ok(map)
}

/// Functions every direct call of which is guarded by decisions on exactly one option.
fn derived(
    program: &Program,
    influence: &StatementInfluence,
) -> BTreeMap<FuncId, (OptionId, String)> {
    let mut guards: BTreeMap<FuncId, (Option<OptionId>, bool, Vec<String>)> = BTreeMap::new();
    for inst in program.insts.iter() {
        let InstKind::Call {
            callee: Callee::Direct(f),
            ..
        } = &inst.kind
        else {
            continue;
        };
        // A marker is called under every feature's blocks, and is no feature's code.
        if program.func(*f).is_declaration || crate::blocks::is_marker(program, *f) {
            continue;
        }
        let set = influence.sets.get(influence.facts.block_taint[inst.block]);
        let entry = guards.entry(*f).or_insert((None, true, Vec::new()));
        let mut options = set.iter();
        match (options.next(), options.next()) {
            (Some(o), None) if entry.0.is_none_or(|x| x == o) => {
                entry.0 = Some(o);
                let caller = &program.func(program.block(inst.block).func).name;
                entry.2.push(format!("{caller}:{}", inst.loc.line));
            }
            _ => entry.1 = false,
        }
    }
    // A function whose address is taken may also be called through a pointer, unguarded.
    let mut address_taken: std::collections::HashSet<FuncId> = std::collections::HashSet::new();
    let mut note = |v: ir::ValueId| {
        if let ir::ValueDef::Function(f) = program.value(v) {
            address_taken.insert(*f);
        }
    };
    for i in program.insts.iter() {
        i.kind.for_each_use(&mut note);
    }
    for g in program.globals.iter() {
        for r in &g.initializer_refs {
            note(r.address);
        }
    }
    guards
        .into_iter()
        .filter(|(f, (o, all, _))| o.is_some() && *all && !address_taken.contains(f))
        .map(|(f, (o, _, sites))| {
            (
                f,
                (
                    o.expect("filtered"),
                    format!("every call is guarded by it ({})", sites.join(", ")),
                ),
            )
        })
        .collect()
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs() {
        assert!(glob("scan", "scan"));
        assert!(!glob("scan", "scanner"));
        assert!(glob("scan*", "scanner"));
        assert!(glob("*_color*", "print_colorscan"));
        assert!(glob("p*t*n", "print_scan"));
        assert!(!glob("p*x*n", "print_scan"));
        assert!(!glob("ab*ba", "aba"));
        assert!(glob("*", ""));
    }
}
