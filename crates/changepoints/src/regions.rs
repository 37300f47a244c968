//! Down to the code: for each change point of a detection, the functions whose cost moved
//! between the commit and its predecessor (or, when the change is not between those two, the
//! commits the change's size was measured at), in configurations that show the change and
//! in one that does not (a contrast).
//!
//! The cost is the instructions valgrind's callgrind counts per function (exclusive: in the
//! function's own code, inlined code included; inclusive: with its callees). Instructions are
//! exact and repeatable, so a before/after difference is the code's, not the machine's, but
//! they are not time. A [`Profiler`] runs the program (only `store.rs` runs anything); this
//! module picks the configurations, compares the profiles and ranks the functions.

use std::collections::BTreeMap;

use serde::Serialize;
use space::Configuration;

use crate::Error;
use crate::search::{ChangePoint, Detection};

/// One function's cost in one profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FunctionCost {
    pub function: String,
    /// Source file, and the line of it with the most own cost, where the debug information
    /// says.
    pub file: Option<String>,
    pub line: Option<u32>,
    pub exclusive: u64,
    pub inclusive: u64,
}

/// A run's cost per function.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Profile {
    pub total: u64,
    pub functions: Vec<FunctionCost>,
    /// Set when the profile could only be made without the program's debug information
    /// (valgrind cannot read it): names, but no file:line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Runs a configuration at a commit (in the source's numbering, from 0) under the profiler.
pub trait Profiler {
    fn profile(&mut self, config: &Configuration, commit: usize) -> Result<Profile, Error>;
}

/// How many configurations are profiled and how much of a move counts.
#[derive(Clone, Debug, Serialize)]
pub struct RegionSettings {
    /// Configurations that show the change (select its options), profiled per change point.
    pub configurations: usize,
    /// Functions listed per change point.
    pub top: usize,
    /// A function moved in a configuration when its exclusive cost changed by at least this
    /// share of the configuration's total before the change.
    pub min_share: f64,
    /// The search's relative threshold (`None` for an absolute one). A change pinned to the
    /// commit: some profiled configuration's instructions moved by this much from its
    /// predecessor to it. The contrast of a change of all configurations: a sampled
    /// configuration whose measurements changed by less.
    pub threshold: Option<f64>,
}

impl Default for RegionSettings {
    fn default() -> RegionSettings {
        RegionSettings {
            configurations: 2,
            top: 10,
            min_share: 0.005,
            threshold: Some(0.1),
        }
    }
}

/// The regions of every change point of a detection.
#[derive(Clone, Debug, Serialize)]
pub struct RegionsReport {
    /// What the costs count.
    pub unit: String,
    pub settings: RegionSettings,
    pub change_points: Vec<ChangePointRegions>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChangePointRegions {
    pub commit: usize,
    /// The commits compared: the change point and its predecessor when the profiles show
    /// the change between them (`adjacent`), else those the detection measured the change's
    /// size at.
    pub before_commit: usize,
    pub after_commit: usize,
    pub adjacent: bool,
    pub configurations: Vec<ProfiledConfiguration>,
    /// Functions that moved in at least one configuration showing the change, largest mean
    /// move first.
    pub functions: Vec<MovedFunction>,
    /// What the comparison cannot see (no symbols, no contrast configuration, …).
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProfiledConfiguration {
    pub configuration: String,
    /// Selects the change's options (false: the contrast).
    pub associated: bool,
    pub total_before: u64,
    pub total_after: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MovedFunction {
    pub function: String,
    /// Its file and hottest line (where it costs most).
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Mean over the configurations that show the change (0 where it did not run).
    pub exclusive_before: f64,
    pub exclusive_after: f64,
    pub exclusive_change: f64,
    /// `exclusive_change / exclusive_before`; `None` for a function new at the later commit.
    pub relative_change: Option<f64>,
    pub inclusive_change: f64,
    /// Configurations (of those profiled) in which it moved.
    pub moved_in: Vec<String>,
    /// Where it moved: `every configuration` (the contrast too, or no contrast profiled),
    /// `associated only` (every associated configuration, not the contrast), or `some`.
    pub scope: String,
}

/// A function: its name and file (static functions of two files may share a name).
type FunctionKey = (String, Option<String>);
/// A function's cost in one configuration before and after a change.
type BeforeAfter = (FunctionCost, FunctionCost);

/// Profiles each change point's configurations before and after it and ranks the functions
/// whose cost moved.
pub fn regions(
    detection: &Detection,
    profiler: &mut dyn Profiler,
    settings: &RegionSettings,
) -> Result<RegionsReport, Error> {
    let mut out = Vec::new();
    for cp in &detection.change_points {
        out.push(change_point_regions(detection, cp, profiler, settings)?);
    }
    Ok(RegionsReport {
        unit: "instructions (valgrind callgrind), not time".to_string(),
        settings: settings.clone(),
        change_points: out,
    })
}

fn change_point_regions(
    detection: &Detection,
    cp: &ChangePoint,
    profiler: &mut dyn Profiler,
    settings: &RegionSettings,
) -> Result<ChangePointRegions, Error> {
    let first = detection.first_commit;
    let mut notes = Vec::new();
    let (associated, contrast) =
        pick_configurations(detection, cp, settings.configurations, settings.threshold);
    // The commit and its predecessor when the profiles pin the change there (a configuration
    // that shows it moved by the threshold between them), so that one commit's code is
    // compared; else the commits the change's size was measured at, which enclose it.
    let mut adjacent = false;
    if cp.commit > first
        && let Some(threshold) = settings.threshold
    {
        for at in &associated {
            let config = &detection.sample[*at].config;
            let b = profiler.profile(config, cp.commit - 1 - first)?.total as f64;
            let a = profiler.profile(config, cp.commit - first)?.total as f64;
            if b > 0.0 && ((a - b) / b).abs() >= threshold {
                adjacent = true;
                break;
            }
        }
    }
    let (before, after) = if adjacent {
        (cp.commit - 1, cp.commit)
    } else {
        notes.push(format!(
            "no profiled configuration changed by the threshold from commit {} to {}: the \
             commits the change's size was measured at are compared, and what moved between \
             them may be more than one commit's doing",
            cp.commit.saturating_sub(1),
            cp.commit
        ));
        (cp.before_commit, cp.after_commit)
    };
    if associated.is_empty() {
        notes.push("no sampled configuration selects the change's options".to_string());
    }
    match contrast {
        None if cp.all_configurations || cp.unattributed => notes.push(
            "no contrast: the change concerns all configurations and no sampled configuration \
             was measured unchanged, so every function that moved in all profiled ones reads \
             `every configuration`"
                .to_string(),
        ),
        None => notes.push(
            "no contrast: every sampled configuration selects the change's options".to_string(),
        ),
        Some(_) => {}
    }
    let mut configurations = Vec::new();
    // Per function (name, file): per profiled configuration, its costs before and after.
    let mut costs: BTreeMap<FunctionKey, Vec<Option<BeforeAfter>>> = BTreeMap::new();
    let chosen: Vec<(usize, bool)> = associated
        .iter()
        .map(|a| (*a, true))
        .chain(contrast.map(|c| (c, false)))
        .collect();
    for (slot, (at, is_associated)) in chosen.iter().enumerate() {
        let sampled = &detection.sample[*at];
        let p_before = profiler.profile(&sampled.config, before - first)?;
        let p_after = profiler.profile(&sampled.config, after - first)?;
        for p in [&p_before, &p_after] {
            if let Some(n) = &p.note
                && !notes.contains(n)
            {
                notes.push(n.clone());
            }
        }
        let by_key = |p: &Profile| -> BTreeMap<FunctionKey, FunctionCost> {
            p.functions
                .iter()
                .map(|f| ((f.function.clone(), f.file.clone()), f.clone()))
                .collect()
        };
        let (b, a) = (by_key(&p_before), by_key(&p_after));
        for key in b.keys().chain(a.keys()) {
            let entry = costs
                .entry(key.clone())
                .or_insert_with(|| vec![None; chosen.len()]);
            entry[slot] = Some((
                b.get(key).cloned().unwrap_or_default(),
                a.get(key).cloned().unwrap_or_default(),
            ));
        }
        configurations.push(ProfiledConfiguration {
            configuration: sampled.configuration.clone(),
            associated: *is_associated,
            total_before: p_before.total,
            total_after: p_after.total,
        });
        if let Some(why) = no_symbols(&p_before)
            && !notes.contains(&why)
        {
            notes.push(why);
        }
    }
    let mut functions = Vec::new();
    for ((function, file), per_config) in costs {
        let moved = |slot: usize| -> bool {
            let total = configurations[slot].total_before.max(1) as f64;
            per_config[slot].as_ref().is_some_and(|(b, a)| {
                (a.exclusive as f64 - b.exclusive as f64).abs() >= settings.min_share * total
            })
        };
        let moved_in: Vec<usize> = (0..chosen.len()).filter(|s| moved(*s)).collect();
        let associated_slots: Vec<usize> = (0..chosen.len()).filter(|s| chosen[*s].1).collect();
        if !moved_in.iter().any(|s| chosen[*s].1) {
            continue;
        }
        let mean = |f: &dyn Fn(&(FunctionCost, FunctionCost)) -> f64| -> f64 {
            let values: Vec<f64> = associated_slots
                .iter()
                .map(|s| per_config[*s].as_ref().map_or(0.0, f))
                .collect();
            values.iter().sum::<f64>() / values.len().max(1) as f64
        };
        let exclusive_before = mean(&|(b, _)| b.exclusive as f64);
        let exclusive_after = mean(&|(_, a)| a.exclusive as f64);
        let inclusive_change = mean(&|(b, a)| a.inclusive as f64 - b.inclusive as f64);
        let every_associated = associated_slots.iter().all(|s| moved_in.contains(s));
        let scope = if moved_in.len() == chosen.len() {
            "every configuration"
        } else if every_associated && contrast.is_some() && !moved_in.contains(&(chosen.len() - 1))
        {
            "associated only"
        } else {
            "some"
        };
        // The hottest line of the profile where the function costs most.
        let located = per_config
            .iter()
            .flatten()
            .flat_map(|(b, a)| [b, a])
            .filter(|f| f.line.is_some())
            .max_by_key(|f| f.exclusive);
        functions.push(MovedFunction {
            function,
            file,
            line: located.and_then(|f| f.line),
            exclusive_before,
            exclusive_after,
            exclusive_change: exclusive_after - exclusive_before,
            relative_change: (exclusive_before > 0.0)
                .then(|| (exclusive_after - exclusive_before) / exclusive_before),
            inclusive_change,
            moved_in: moved_in
                .iter()
                .map(|s| configurations[*s].configuration.clone())
                .collect(),
            scope: scope.to_string(),
        });
    }
    functions.sort_by(|a, b| {
        b.exclusive_change
            .abs()
            .total_cmp(&a.exclusive_change.abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    functions.truncate(settings.top);
    Ok(ChangePointRegions {
        commit: cp.commit,
        before_commit: before,
        after_commit: after,
        adjacent,
        configurations,
        functions,
        notes,
    })
}

/// Sample indices: up to `n` configurations that select the change's options (all, for a
/// change of all configurations), those whose own measurements changed most between the
/// compared commits first; and a contrast: of the others, the one whose measurements changed
/// least — measured at both commits with a change below `quiet` (relative) for a change of
/// all configurations, since any configuration might show it.
fn pick_configurations(
    detection: &Detection,
    cp: &ChangePoint,
    n: usize,
    quiet: Option<f64>,
) -> (Vec<usize>, Option<usize>) {
    let index = |name: &String| detection.features.iter().position(|f| f == name);
    let groups: Vec<Vec<usize>> = cp
        .option_groups
        .iter()
        .map(|g| g.iter().filter_map(index).collect())
        .collect();
    let selects = |row: &[f64]| {
        groups
            .iter()
            .all(|g| g.iter().any(|f| row.get(*f) == Some(&1.0)))
    };
    // How much a configuration's own measurements changed (`None`: not measured at both).
    let change = |at: usize| -> Option<f64> {
        let h = &detection.sample[at].history;
        match (h.get(&cp.before_commit), h.get(&cp.after_commit)) {
            (Some(b), Some(a)) if *b != 0.0 => Some(((a - b) / b).abs()),
            _ => None,
        }
    };
    let (mut with, mut without): (Vec<usize>, Vec<usize>) = (0..detection.sample.len())
        .partition(|at| cp.all_configurations || selects(&detection.sample[*at].row));
    let larger = |a: &usize, b: &usize| {
        change(*b)
            .unwrap_or(0.0)
            .total_cmp(&change(*a).unwrap_or(0.0))
            .then(a.cmp(b))
    };
    with.sort_by(larger);
    if cp.all_configurations || cp.unattributed {
        // The quietest configuration is the contrast, not one that shows the change.
        let quietest = with
            .iter()
            .copied()
            .filter(|at| change(*at).zip(quiet).is_some_and(|(c, q)| c < q))
            .min_by(|a, b| larger(b, a));
        with.retain(|at| Some(*at) != quietest);
        with.truncate(n.max(1));
        return (with, quietest);
    }
    with.truncate(n.max(1));
    // Measured configurations first, the least changed of them.
    without.sort_by_key(|at| change(*at).is_none());
    let contrast = without.iter().copied().min_by(|a, b| {
        change(*a)
            .is_none()
            .cmp(&change(*b).is_none())
            .then(larger(b, a))
    });
    (with, contrast)
}

/// Why a profile cannot name functions, when most of its cost is in functions known only by
/// address.
fn no_symbols(p: &Profile) -> Option<String> {
    let anonymous: u64 = p
        .functions
        .iter()
        .filter(|f| f.function.starts_with("0x"))
        .map(|f| f.exclusive)
        .sum();
    let located: u64 = p
        .functions
        .iter()
        .filter(|f| f.file.is_some())
        .map(|f| f.exclusive)
        .sum();
    if 2 * anonymous > p.total {
        Some(
            "the build has no symbols: most instructions are in functions known only by \
             address (build without stripping, with -g)"
                .to_string(),
        )
    } else if 2 * located < p.total && p.note.is_none() {
        Some(
            "the build has no debug information for most of its code: functions are named, \
             without file:line (build with -g)"
                .to_string(),
        )
    } else {
        None
    }
}

/// A callgrind output file's cost per function (the first event, `Ir`), exclusive and
/// inclusive. Inclusive cost adds the calls a function makes to others (not to itself); with
/// mutual recursion it counts some instructions twice, as callgrind's own does.
pub fn parse_callgrind(text: &str) -> Result<Profile, String> {
    // Name compression: `(id) name` defines, `(id)` refers (objects, files and functions
    // apart).
    fn name(
        table: &mut BTreeMap<(&'static str, String), String>,
        kind: &'static str,
        value: &str,
    ) -> String {
        let value = value.trim();
        if let Some(rest) = value.strip_prefix('(')
            && let Some((id, tail)) = rest.split_once(')')
        {
            let key = (kind, id.to_string());
            let tail = tail.trim();
            if tail.is_empty() {
                return table.get(&key).cloned().unwrap_or_default();
            }
            table.insert(key, tail.to_string());
            return tail.to_string();
        }
        value.to_string()
    }
    let mut table = BTreeMap::new();
    let mut functions: BTreeMap<(String, String), FunctionCost> = BTreeMap::new();
    let mut file = String::new();
    let mut cost_file = String::new();
    let mut current: Option<(String, String)> = None;
    let mut last_line: i64 = 0;
    let mut call_target: Option<(String, String)> = None;
    let mut pending_call = false;
    let mut call_file = String::new();
    let mut summary = None;
    let mut totals = None;
    // Per function, its own cost per line of its file.
    let mut lines: BTreeMap<(String, String), BTreeMap<u32, u64>> = BTreeMap::new();
    for raw in text.lines() {
        let l = raw.trim_end();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let first = l.as_bytes()[0];
        if first.is_ascii_digit() || first == b'+' || first == b'-' || first == b'*' {
            let mut parts = l.split_whitespace();
            let pos = parts.next().unwrap_or("");
            let line = if pos == "*" {
                last_line
            } else if let Some(d) = pos.strip_prefix('+') {
                last_line + d.parse::<i64>().unwrap_or(0)
            } else if let Some(d) = pos.strip_prefix('-') {
                last_line - d.parse::<i64>().unwrap_or(0)
            } else {
                pos.parse::<i64>()
                    .map_err(|_| format!("callgrind output: bad position in `{l}`"))?
            };
            last_line = line;
            let cost: u64 = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
            let Some(key) = current.clone() else {
                continue;
            };
            if pending_call {
                pending_call = false;
                if call_target.as_ref() != Some(&key) {
                    functions.entry(key).or_default().inclusive += cost;
                }
                continue;
            }
            let f = functions.entry(key.clone()).or_default();
            f.exclusive += cost;
            f.inclusive += cost;
            if cost_file == key.1 && line > 0 {
                *lines
                    .entry(key)
                    .or_default()
                    .entry(line as u32)
                    .or_default() += cost;
            }
            continue;
        }
        let Some((key, value)) = l.split_once('=') else {
            if let Some(s) = l.strip_prefix("summary:") {
                summary = s.split_whitespace().next().and_then(|n| n.parse().ok());
            } else if let Some(s) = l.strip_prefix("totals:") {
                totals = s.split_whitespace().next().and_then(|n| n.parse().ok());
            }
            continue;
        };
        match key {
            "fl" => {
                file = name(&mut table, "fl", value);
                cost_file = file.clone();
            }
            "fi" | "fe" => cost_file = name(&mut table, "fl", value),
            "fn" => {
                let f = name(&mut table, "fn", value);
                cost_file = file.clone();
                let k = (f, file.clone());
                functions.entry(k.clone()).or_default();
                current = Some(k);
            }
            "cfl" | "cfi" => call_file = name(&mut table, "fl", value),
            "cfn" => {
                let f = name(&mut table, "fn", value);
                let target_file = if call_file.is_empty() {
                    file.clone()
                } else {
                    std::mem::take(&mut call_file)
                };
                call_target = Some((f, target_file));
            }
            "calls" => pending_call = true,
            "ob" | "cob" => {
                name(&mut table, "ob", value);
            }
            _ => {}
        }
    }
    let total = summary
        .or(totals)
        .ok_or("callgrind output without a summary line (an incomplete run?)")?;
    let functions = functions
        .into_iter()
        .filter(|(_, f)| f.inclusive > 0)
        .map(|(key, f)| {
            let hottest = lines.get(&key).and_then(|per_line| {
                per_line
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(line, _)| *line)
            });
            let (function, file) = key;
            let known = !file.is_empty() && file != "???";
            FunctionCost {
                function,
                file: known.then_some(file),
                line: if known { hottest } else { None },
                exclusive: f.exclusive,
                inclusive: f.inclusive,
            }
        })
        .collect();
    Ok(Profile {
        total,
        functions,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Callgrind's own output for a program where `main` calls `slow_part` and
    /// `steady_part` (names compressed, positions relative).
    const OUTPUT: &str = "# callgrind format\nversion: 1\npositions: line\nevents: Ir\n\
        summary: 1200030\n\nob=(5) /tmp/p\nfl=(146) /tmp/p.c\nfn=(540) steady_part\n\n\
        fn=(538) slow_part\n\nfn=(536) main\n\nfl=(139) ???\nfn=(574) 0x00000000000010f0\n0 12\n\nfl=(146)\nfn=(540)\n4 600003\n\n\
        fn=(538)\n3 600005\n+2 1\n\nfn=(536)\n5 9\ncfn=(538)\ncalls=1 -2 \n* 600006\n* 1\n\
        cfn=(540)\ncalls=1 -1 \n* 600003\n* 9\n";

    #[test]
    fn callgrind_costs_are_read_per_function() {
        let p = parse_callgrind(OUTPUT).unwrap();
        assert_eq!(p.total, 1_200_030);
        let f = |n: &str| p.functions.iter().find(|f| f.function == n).unwrap();
        assert_eq!(f("slow_part").exclusive, 600_006);
        assert_eq!(f("slow_part").line, Some(3));
        assert_eq!(f("slow_part").file.as_deref(), Some("/tmp/p.c"));
        assert_eq!(f("main").exclusive, 19);
        assert_eq!(f("main").inclusive, 19 + 600_006 + 600_003);
        assert_eq!(f("main").line, Some(5));
        assert_eq!(f("0x00000000000010f0").file, None);
        assert_eq!(f("0x00000000000010f0").exclusive, 12);
    }

    #[test]
    fn a_profile_of_addresses_says_the_build_has_no_symbols() {
        let mut p = parse_callgrind(OUTPUT).unwrap();
        assert_eq!(no_symbols(&p), None);
        for f in &mut p.functions {
            f.function = format!("0x{}", f.exclusive);
        }
        assert!(no_symbols(&p).unwrap().contains("no symbols"));
    }

    #[test]
    fn output_without_a_summary_is_an_error() {
        assert!(parse_callgrind("events: Ir\nfn=(1) main\n3 4\n").is_err());
    }
}
