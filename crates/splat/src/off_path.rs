//! What an option changes on a path that does not reach it (in counts only).
//!
//! SPLat assumes an option a path does not read changes nothing on it, yet how an option is
//! passed (its flag parsed among the arguments) is the program's work too, and counts show
//! that exactly. So in counts each such option is also set on paths that do not reach it:
//! first on the first and the last of them; where those two changes differ, on every other
//! (at most [`MOST_PROBES_PER_OPTION`]). The model adds a path's change wherever a
//! configuration follows it, the nearest measured change (the first path's) where that path
//! was not probed.

use std::collections::BTreeMap;

use serde::Serialize;
use space::{Configuration, OptionId, ValidConfigurations};

use crate::{Exploration, Path};

/// The most paths one option is set on.
pub const MOST_PROBES_PER_OPTION: usize = 64;

/// An option set to another value on a path that does not reach it.
#[derive(Clone, Debug)]
pub struct Probe {
    pub option: OptionId,
    pub value: u32,
    /// The path (its index) whose configuration is changed.
    pub path: usize,
    pub configuration: Configuration,
}

/// What a probe changed.
#[derive(Clone, Debug, Serialize)]
pub struct Effect {
    pub option: String,
    pub value: String,
    /// The path's configuration the option was set in.
    pub configuration: String,
    /// The changed configuration's measure minus the path's (`None`: a run failed).
    pub effect: Option<f64>,
}

/// Per option some path does not reach, those paths (by index), in order.
pub type OffPaths = Vec<(OptionId, Vec<usize>)>;

/// The paths that do not reach each option (options every path reaches are left out).
pub fn off_paths(valid: &ValidConfigurations, exploration: &Exploration) -> OffPaths {
    valid
        .space()
        .ids()
        .filter_map(|option| {
            let off: Vec<usize> = (0..exploration.paths.len())
                .filter(|&p| !reaches(&exploration.paths[p], option))
                .collect();
            (!off.is_empty()).then_some((option, off))
        })
        .collect()
}

/// The first round: each option's first and last off path.
pub fn first_round(off: &OffPaths) -> OffPaths {
    off.iter()
        .map(|(option, paths)| {
            let mut ends = vec![paths[0]];
            ends.extend(paths.last().filter(|&&p| p != paths[0]));
            (*option, ends)
        })
        .collect()
}

/// The second round: the options whose first-round changes differ, on their other off paths
/// (at most [`MOST_PROBES_PER_OPTION`] in all), and the names of those that had more.
pub fn second_round(
    valid: &ValidConfigurations,
    off: &OffPaths,
    probes: &[Probe],
    effects: &[Effect],
) -> (OffPaths, Vec<String>) {
    let mut round = Vec::new();
    let mut capped = Vec::new();
    for (option, paths) in off {
        let changes: Vec<(u32, Option<f64>)> = probes
            .iter()
            .zip(effects)
            .filter(|(p, _)| p.option == *option)
            .map(|(p, e)| (p.value, e.effect))
            .collect();
        let agree = changes
            .iter()
            .all(|(v, e)| changes.iter().filter(|(w, _)| w == v).all(|(_, f)| f == e));
        if agree {
            continue;
        }
        let probed: Vec<usize> = probes
            .iter()
            .filter(|p| p.option == *option)
            .map(|p| p.path)
            .collect();
        let rest: Vec<usize> = paths
            .iter()
            .copied()
            .filter(|p| !probed.contains(p))
            .collect();
        let room = MOST_PROBES_PER_OPTION.saturating_sub(2);
        if rest.len() > room {
            capped.push(valid.space().option(*option).name.clone());
        }
        round.push((*option, rest.into_iter().take(room).collect()));
    }
    (round, capped)
}

/// Each option's other values set on each of its wanted paths; and the `name=value`s no valid
/// configuration takes there (their change stays unmeasured).
pub fn probes(
    valid: &ValidConfigurations,
    exploration: &Exploration,
    wanted: &OffPaths,
) -> (Vec<Probe>, Vec<String>) {
    let space = valid.space();
    let mut probes = Vec::new();
    let mut invalid = Vec::new();
    for (option, paths) in wanted {
        for &path in paths {
            let base = &exploration.paths[path].configuration;
            let at = base.0[option.index()];
            for value in (0..space.option(*option).arity() as u32).filter(|v| *v != at) {
                let mut configuration = base.clone();
                configuration.0[option.index()] = value;
                if valid.is_valid(&configuration) {
                    probes.push(Probe {
                        option: *option,
                        value,
                        path,
                        configuration,
                    });
                } else if valid.allows(&[(*option, value)]) {
                    let o = space.option(*option);
                    let text = format!("{}={}", o.name, o.format_value(value));
                    if !invalid.contains(&text) {
                        invalid.push(text);
                    }
                }
            }
        }
    }
    (probes, invalid)
}

/// Each probe's change against its path's measure (`path_times`, by path index).
pub fn effects(
    valid: &ValidConfigurations,
    exploration: &Exploration,
    probes: &[Probe],
    probe_times: &[Option<f64>],
    path_times: &[Option<f64>],
) -> Vec<Effect> {
    let space = valid.space();
    probes
        .iter()
        .zip(probe_times)
        .map(|(probe, time)| {
            let option = space.option(probe.option);
            Effect {
                option: option.name.clone(),
                value: option.format_value(probe.value),
                configuration: space
                    .format_configuration(&exploration.paths[probe.path].configuration),
                effect: time.zip(path_times[probe.path]).map(|(t, b)| t - b),
            }
        })
        .collect()
}

/// The measured changes as the table adds them: per option, per probed path, the change of
/// each value against the path's own (0 at it).
#[derive(Clone, Debug, Default)]
pub struct Changes {
    by_option: Vec<(OptionId, BTreeMap<usize, Vec<f64>>)>,
}

impl Changes {
    /// The nonzero changes of `probes` (with their `effects`).
    pub fn new(valid: &ValidConfigurations, probes: &[Probe], effects: &[Effect]) -> Changes {
        let mut changes = Changes::default();
        for (probe, effect) in probes.iter().zip(effects) {
            let Some(change) = effect.effect else {
                continue;
            };
            let at = match changes
                .by_option
                .iter()
                .position(|(o, _)| *o == probe.option)
            {
                Some(at) => at,
                None => {
                    changes.by_option.push((probe.option, BTreeMap::new()));
                    changes.by_option.len() - 1
                }
            };
            let arity = valid.space().option(probe.option).arity();
            changes.by_option[at]
                .1
                .entry(probe.path)
                .or_insert_with(|| vec![0.0; arity])[probe.value as usize] = change;
        }
        changes.by_option.retain(|(_, by_path)| {
            by_path
                .values()
                .any(|values| values.iter().any(|c| *c != 0.0))
        });
        changes
    }

    /// The options with a change.
    pub fn options(&self) -> impl Iterator<Item = OptionId> + '_ {
        self.by_option.iter().map(|(o, _)| *o)
    }

    /// What a configuration following path `index` (`path`) adds, its values by `value`: for
    /// each option the path does not reach, the change of its value against the path's, as
    /// measured on that path, else on the first path probed.
    pub fn on_path(&self, index: usize, path: &Path, value: impl Fn(OptionId) -> u32) -> f64 {
        self.by_option
            .iter()
            .filter(|(o, _)| !reaches(path, *o))
            .map(|(o, by_path)| {
                let values = by_path
                    .get(&index)
                    .or_else(|| by_path.values().next())
                    .expect("an option with a change has a probed path");
                values[value(*o) as usize] - values[path.configuration.0[o.index()] as usize]
            })
            .sum()
    }
}

fn reaches(path: &Path, option: OptionId) -> bool {
    path.reached.iter().any(|(o, _)| *o == option)
}
