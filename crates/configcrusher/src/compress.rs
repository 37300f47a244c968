//! Compression (ConfigCrusher Algorithm 1): few valid configurations that together contain
//! every combination of values of each interaction, and the lower bound on how many any
//! such set needs.
//!
//! The paper merges the combinations of each maximal interaction pairwise around their
//! common options (the pivot). This is the same idea as a first-fit merge: each combination
//! of each maximal interaction (largest first) joins the first partial configuration it
//! agrees with on the options both fix and that the constraints still allow, or starts a new
//! one. Partial configurations are then completed to valid ones with the fewest selected
//! options. Combinations the constraints forbid are not required.

use space::{Configuration, Literal, OptionId, ValidConfigurations};

use crate::Error;
use analysis::OptionSet;

/// The compressed configurations and the numbers reported beside them.
#[derive(Clone, Debug, PartialEq)]
pub struct Compression {
    /// The interactions that are not subsets of others, largest first.
    pub maximal: Vec<OptionSet>,
    /// Valid configurations covering every allowed combination of each maximal interaction.
    pub configurations: Vec<Configuration>,
    /// Max over interactions of the number of their allowed combinations: no set of
    /// configurations covering them all can be smaller.
    pub lower_bound: u128,
}

/// Compresses a set of interactions over `valid`'s space. `limit` caps the combinations of a
/// single interaction (2^|interaction| for binary options) to keep a runaway analysis from
/// asking for billions of configurations.
pub fn compress(
    valid: &ValidConfigurations,
    interactions: &[OptionSet],
    limit: u128,
) -> Result<Compression, Error> {
    let space = valid.space();
    let mut unique: Vec<OptionSet> = interactions
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect();
    unique.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    unique.dedup();
    let mut maximal: Vec<OptionSet> = Vec::new();
    for s in unique {
        if !maximal.iter().any(|m| s.is_subset(m)) {
            maximal.push(s);
        }
    }
    for m in &maximal {
        if let Some(o) = m.iter().find(|o| o.index() >= space.len()) {
            return Err(Error::UnknownOption {
                name: format!("#{}", o.0),
                context: "an interaction (the space has fewer options)".into(),
            });
        }
    }
    let mut partial: Vec<Vec<Option<u32>>> = Vec::new();
    let mut lower_bound = 0u128;
    for m in &maximal {
        let options: Vec<OptionId> = m.iter().collect();
        let arities: Vec<u128> = options
            .iter()
            .map(|o| space.option(*o).arity() as u128)
            .collect();
        let needed = arities.iter().try_fold(1u128, |acc, a| acc.checked_mul(*a));
        match needed {
            Some(n) if n <= limit => {}
            _ => {
                return Err(Error::TooManyCombinations {
                    needed: needed.unwrap_or(u128::MAX),
                    limit,
                });
            }
        }
        let mut allowed = 0u128;
        let mut digits = vec![0u32; options.len()];
        loop {
            let combo: Vec<Literal> = options
                .iter()
                .copied()
                .zip(digits.iter().copied())
                .collect();
            if valid.allows(&combo) {
                allowed += 1;
                let fit = partial.iter().position(|p| {
                    combo
                        .iter()
                        .all(|(o, v)| p[o.index()].is_none_or(|x| x == *v))
                        && valid.allows(&merged(p, &combo))
                });
                match fit {
                    Some(k) => {
                        for (o, v) in &combo {
                            partial[k][o.index()] = Some(*v);
                        }
                    }
                    None => {
                        let mut p = vec![None; space.len()];
                        for (o, v) in &combo {
                            p[o.index()] = Some(*v);
                        }
                        partial.push(p);
                    }
                }
            }
            // Next combination (odometer).
            let mut i = 0;
            while i < digits.len() {
                digits[i] += 1;
                if (digits[i] as u128) < arities[i] {
                    break;
                }
                digits[i] = 0;
                i += 1;
            }
            if i == digits.len() {
                break;
            }
        }
        lower_bound = lower_bound.max(allowed);
    }
    if partial.is_empty() {
        partial.push(vec![None; space.len()]);
        lower_bound = lower_bound.max(1);
    }
    let mut configurations = Vec::new();
    for p in &partial {
        let literals: Vec<Literal> = p
            .iter()
            .enumerate()
            .filter_map(|(o, v)| v.map(|v| (OptionId(o as u32), v)))
            .collect();
        let mut bdd = valid.bdd().clone();
        for l in &literals {
            bdd = bdd.and(&valid.literal(*l));
        }
        let config = valid.extreme_in(&bdd, false).ok_or_else(|| {
            Error::Space(space::Error::Unsatisfiable(
                "a partial configuration the constraints allowed has no completion".into(),
            ))
        })?;
        if !configurations.contains(&config) {
            configurations.push(config);
        }
    }
    Ok(Compression {
        maximal,
        configurations,
        lower_bound,
    })
}

fn merged(partial: &[Option<u32>], combo: &[Literal]) -> Vec<Literal> {
    let mut out: Vec<Literal> = partial
        .iter()
        .enumerate()
        .filter_map(|(o, v)| v.map(|v| (OptionId(o as u32), v)))
        .collect();
    for l in combo {
        if partial[l.0.index()].is_none() {
            out.push(*l);
        }
    }
    out
}
