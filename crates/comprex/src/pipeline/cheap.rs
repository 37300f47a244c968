//! Which configurations to measure when the cheap method regions need not have every subspace
//! measured (`run::Options::cheap_below`): a cover of the costly regions' subspaces, by the
//! regions' shares of the calibration runs' time ([`super::ProbeSelection::shares`]).

use std::collections::{BTreeMap, BTreeSet};

use space::{Configuration, ValidConfigurations};

use crate::RegionPartition;

/// The configurations to measure, and which regions are costly and which cheap.
#[derive(Clone, Debug, PartialEq)]
pub struct CheapCover {
    /// A cover of the costly regions' subspaces.
    pub cover: Vec<Configuration>,
    /// The costly regions with their shares, largest first.
    pub costly: Vec<(String, f64)>,
    /// The cheap regions: a subspace of theirs no configuration of the cover lies in takes the
    /// mean of the region's measured ones (`ModelSettings::approximate`).
    pub cheap: BTreeSet<String>,
    /// Options cheap regions are partitioned by that every configuration of the cover sets
    /// alike: their effect on those regions is not measured at all.
    pub unvaried: Vec<String>,
}

/// Splits `regions` by their share of the calibration runs' time, `shares` per method, a
/// region's own plus that of the methods `folded` into it (`(method, regions it went to)`: a
/// bound, as a folded method's time may go to several): below `below` a region is cheap.
pub fn cheap_cover(
    valid: &ValidConfigurations,
    regions: &[RegionPartition],
    shares: &BTreeMap<String, f64>,
    folded: &[(String, Vec<String>)],
    below: f64,
) -> CheapCover {
    let mut share = shares.clone();
    for (method, into) in folded {
        let s = shares.get(method).copied().unwrap_or(0.0);
        for region in into {
            *share.entry(region.clone()).or_default() += s;
        }
    }
    let share_of = |r: &RegionPartition| share.get(&r.id).copied().unwrap_or(0.0);
    let (costly, cheap): (Vec<&RegionPartition>, Vec<&RegionPartition>) =
        regions.iter().partition(|r| share_of(r) >= below);
    let cover = crate::cover_regions(valid, &costly);
    let mut costly: Vec<(String, f64)> =
        costly.iter().map(|r| (r.id.clone(), share_of(r))).collect();
    costly.sort_by(|a, b| b.1.total_cmp(&a.1));
    let space = valid.space();
    let unvaried = space
        .names()
        .into_iter()
        .enumerate()
        .filter(|&(k, _)| cover.windows(2).all(|w| w[0].0[k] == w[1].0[k]))
        .filter(|&(_, name)| cheap.iter().any(|r| partitioned_by(r, name)))
        .map(|(_, name)| name.to_string())
        .collect();
    CheapCover {
        cover,
        costly,
        cheap: cheap.iter().map(|r| r.id.clone()).collect(),
        unvaried,
    }
}

/// Whether a subspace of `region` names `option` (its formulas' words; a numeric option's
/// comparison starts with its name).
fn partitioned_by(region: &RegionPartition, option: &str) -> bool {
    region.subspaces.iter().any(|s| {
        s.text
            .split(|c: char| c.is_whitespace() || "∧∨¬()".contains(c))
            .any(|word| {
                word == option
                    || word
                        .strip_prefix(option)
                        .is_some_and(|rest| rest.starts_with(['=', '<', '>', '≤', '≥', '≠']))
            })
    })
}
