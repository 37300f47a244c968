//! The iterative analysis (Algorithm 1): run a configuration, refine every region's partition
//! with the decisions the run reached, pick the next configuration greedily to cover the most
//! unexplored subspaces, and stop when every subspace of every region has been explored.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Display;

use biodivine_lib_bdd::Bdd;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use space::{Configuration, OptionId, ValidConfigurations};

use crate::Error;
use crate::partition::{DecisionSplit, Encoding, Partition, Subspace};
use crate::record::{Decision, DecisionRecord, Granularity};

/// How to choose among configurations that cover equally many unexplored subspaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The configuration with the fewest selected options (closest to the default).
    Fewest,
    /// The one with the most selected options.
    Most,
    /// Subspaces visited in a seeded random order, the configuration drawn uniformly.
    Random { seed: u64 },
}

#[derive(Clone, Debug)]
pub struct ExploreSettings {
    /// Granularities whose regions are tracked; exploration continues until every subspace
    /// of every tracked region has been explored.
    pub granularities: Vec<Granularity>,
    /// The first configuration; by default the valid one [`Pick`] prefers (for
    /// [`Pick::Fewest`], the one closest to all-off).
    pub start: Option<Configuration>,
    pub pick: Pick,
    /// Give up after this many runs.
    pub max_runs: usize,
}

impl Default for ExploreSettings {
    fn default() -> Self {
        ExploreSettings {
            granularities: vec![Granularity::Method],
            start: None,
            pick: Pick::Fewest,
            max_runs: 10_000,
        }
    }
}

/// One subspace of a region's partition and the runs (indices into
/// [`Exploration::configurations`]) whose configuration lies in it.
#[derive(Clone, Debug)]
pub struct ExploredSubspace {
    pub subspace: Subspace,
    /// The subspace as text (see [`Encoding::describe`]).
    pub text: String,
    pub explored_by: Vec<usize>,
}

/// A region's final partition.
#[derive(Clone, Debug)]
pub struct RegionPartition {
    pub id: String,
    /// Every decision site of the region reached in some run.
    pub decisions: Vec<Decision>,
    /// Every option in some taint of the region's decisions, sorted.
    pub options: Vec<String>,
    /// Sorted by text.
    pub subspaces: Vec<ExploredSubspace>,
}

impl RegionPartition {
    pub fn texts(&self) -> Vec<&str> {
        self.subspaces.iter().map(|s| s.text.as_str()).collect()
    }
}

/// What the iterative analysis found.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// Every configuration run, in order.
    pub configurations: Vec<Configuration>,
    /// The distinct decision records of each run.
    pub records: Vec<Vec<DecisionRecord>>,
    /// Per tracked granularity, its regions sorted by id.
    pub regions: Vec<(Granularity, Vec<RegionPartition>)>,
}

impl Exploration {
    /// The regions at a granularity (empty if it was not tracked).
    pub fn regions(&self, granularity: Granularity) -> &[RegionPartition] {
        self.regions
            .iter()
            .find(|(g, _)| *g == granularity)
            .map_or(&[], |(_, r)| r.as_slice())
    }

    pub fn region(&self, granularity: Granularity, id: &str) -> Option<&RegionPartition> {
        self.regions(granularity).iter().find(|r| r.id == id)
    }
}

/// A region while exploring: its partition, which runs lie in each part, and which decision
/// partitions it has already absorbed (re-applying one changes nothing, so it is skipped).
struct RegionState {
    partition: Partition,
    explored_by: Vec<Vec<usize>>,
    decisions: BTreeSet<Decision>,
    options: BTreeSet<String>,
    applied: HashSet<AppliedKey>,
}

/// A decision partition as a region absorbs it: the data-flow and control-flow options and
/// the control-flow options' values in the run (what [`Partition::of_taints`] depends on).
type AppliedKey = (Vec<OptionId>, Vec<OptionId>, Vec<u32>);

/// Algorithm 1 one step at a time, for callers that run the program themselves (e.g. reading
/// taint records from files): ask [`Self::next_configuration`], run it, hand the records to
/// [`Self::record`], until there is no next configuration. [`explore`] does exactly this.
pub struct Explorer<'v> {
    enc: Encoding<'v>,
    settings: ExploreSettings,
    rng: ChaCha8Rng,
    configurations: Vec<Configuration>,
    records: Vec<Vec<DecisionRecord>>,
    tracked: Vec<(Granularity, BTreeMap<String, RegionState>)>,
    /// Method regions whose decisions count toward other method regions (see
    /// [`Self::fold_methods`]).
    fold: BTreeMap<String, Vec<String>>,
}

/// At most this many unexplored subspaces are tried as the seed of the greedy intersection.
const GREEDY_SEEDS: usize = 16;

impl<'v> Explorer<'v> {
    pub fn new(valid: &'v ValidConfigurations<'v>, settings: ExploreSettings) -> Self {
        let seed = match settings.pick {
            Pick::Random { seed } => seed,
            _ => 0,
        };
        let mut granularities = settings.granularities.clone();
        granularities.sort();
        granularities.dedup();
        Explorer {
            enc: Encoding::new(valid),
            rng: ChaCha8Rng::seed_from_u64(seed),
            configurations: vec![],
            records: vec![],
            tracked: granularities
                .into_iter()
                .map(|g| (g, BTreeMap::new()))
                .collect(),
            settings,
            fold: BTreeMap::new(),
        }
    }

    /// Maps the decisions of some methods to other method regions: a decision in method `m`
    /// with `fold[m] = [a, b]` refines the partitions of regions `a` and `b` instead of
    /// creating region `m` (method granularity only; an empty list drops the decisions).
    ///
    /// This is how a method that is not timed on its own is handled: a sampling profiler
    /// charges its time to the innermost timed method on the call stack (paper §IV, "map the
    /// performance of methods to the closest regions on the calling stack"), so that
    /// method's partition must also distinguish what the untimed method's decisions
    /// distinguish. Set it before the first [`Self::record`]; [`Self::replay`] re-applies
    /// earlier runs under a new mapping without running anything.
    pub fn fold_methods(&mut self, fold: BTreeMap<String, Vec<String>>) {
        assert!(
            self.configurations.is_empty(),
            "fold_methods before the first record"
        );
        self.fold = fold;
    }

    /// Re-applies the runs of an earlier exploration (its configurations and records, in
    /// order), e.g. under a different [`Self::fold_methods`] mapping; [`Self::next_configuration`]
    /// then says whether more runs are needed.
    pub fn replay(&mut self, earlier: &Exploration) -> Result<(), Error> {
        for (config, records) in earlier.configurations.iter().zip(&earlier.records) {
            self.record(config.clone(), records.clone())?;
        }
        Ok(())
    }

    pub fn encoding(&self) -> &Encoding<'v> {
        &self.enc
    }

    /// The configuration to run next; `None` once every subspace has been explored.
    pub fn next_configuration(&mut self) -> Result<Option<Configuration>, Error> {
        if self.configurations.is_empty() {
            let start = match &self.settings.start {
                Some(c) => c.clone(),
                None => self
                    .pick_in(&self.enc.valid().bdd().clone())
                    .expect("a compiled space has a valid configuration"),
            };
            if !self.enc.valid().is_valid(&start) {
                return Err(Error::InvalidConfiguration(
                    self.enc.valid().space().format_configuration(&start),
                ));
            }
            return Ok(Some(start));
        }
        let unexplored: Vec<Bdd> = self
            .tracked
            .iter()
            .flat_map(|(_, regions)| regions.values())
            .flat_map(|r| {
                r.partition
                    .parts()
                    .iter()
                    .zip(&r.explored_by)
                    .filter(|(_, runs)| runs.is_empty())
                    .map(|(s, _)| s.bdd().clone())
            })
            .collect();
        if unexplored.is_empty() {
            return Ok(None);
        }
        if self.configurations.len() >= self.settings.max_runs {
            return Err(Error::Budget {
                runs: self.configurations.len(),
                unexplored: unexplored.len(),
                largest: self.largest_partition(),
            });
        }
        match self.greedy(&unexplored) {
            Some(config) => Ok(Some(config)),
            // Parts are subsets of the valid configurations, so this means a part that holds
            // none: going on would call the exploration complete with it unexplored.
            None => Err(Error::Invalid(format!(
                "{} unexplored subspace(s) hold no valid configuration to run",
                unexplored.len()
            ))),
        }
    }

    /// A configuration in as many of `subspaces` as the greedy intersection finds: starting
    /// from one subspace, intersect every other that still overlaps (paper §III.A, footnote
    /// 3); the best of several starting subspaces wins.
    fn greedy(&mut self, subspaces: &[Bdd]) -> Option<Configuration> {
        let mut order: Vec<usize> = (0..subspaces.len()).collect();
        if matches!(self.settings.pick, Pick::Random { .. }) {
            order.shuffle(&mut self.rng);
        }
        // Regions share subspaces (methods reached under the same decisions are partitioned
        // alike): each distinct one is intersected once, where it first comes, and counts as
        // often as it occurs. The choice is the same: once the intersection lies in a
        // subspace, its later copies always overlap it, and if it missed the first copy it
        // misses the others.
        let mut distinct: Vec<(&Bdd, usize)> = Vec::new();
        let mut index: HashMap<&Bdd, usize> = HashMap::new();
        let mut seeds = Vec::new();
        for (k, &i) in order.iter().enumerate() {
            let d = *index.entry(&subspaces[i]).or_insert_with(|| {
                distinct.push((&subspaces[i], 0));
                distinct.len() - 1
            });
            distinct[d].1 += 1;
            if k < GREEDY_SEEDS && !seeds.contains(&d) {
                seeds.push(d);
            }
        }
        let mut best: Option<(usize, Bdd)> = None;
        for seed in seeds {
            let mut acc = distinct[seed].0.clone();
            let mut covered = distinct[seed].1;
            for (j, (subspace, copies)) in distinct.iter().enumerate() {
                if j == seed {
                    continue;
                }
                let both = acc.and(subspace);
                if !both.is_false() {
                    acc = both;
                    covered += copies;
                }
            }
            if best.as_ref().is_none_or(|(n, _)| covered > *n) {
                best = Some((covered, acc));
            }
        }
        let (_, acc) = best?;
        self.pick_in(&acc)
    }

    /// The region with the most subspaces, said for a user who must choose between more runs
    /// and a smaller program: a method's partition is the cross product of its decisions, so
    /// one that reads `n` options in independent branches needs `2^n` configurations.
    fn largest_partition(&self) -> String {
        let largest = self
            .tracked
            .iter()
            .flat_map(|(_, regions)| regions.iter())
            .max_by_key(|(id, state)| (state.partition.parts().len(), std::cmp::Reverse(*id)));
        let Some((id, state)) = largest else {
            return "no region yet".into();
        };
        let options: Vec<&str> = state.options.iter().map(String::as_str).collect();
        let shown = if options.len() > 8 {
            format!("{}, …", options[..8].join(", "))
        } else {
            options.join(", ")
        };
        format!(
            "region `{id}` alone has {} subspaces (the cross product of its decisions on {} \
             options: {shown})",
            state.partition.parts().len(),
            options.len()
        )
    }

    fn pick_in(&mut self, bdd: &Bdd) -> Option<Configuration> {
        let valid = self.enc.valid();
        match self.settings.pick {
            Pick::Fewest => valid.extreme_in(bdd, false),
            Pick::Most => valid.extreme_in(bdd, true),
            Pick::Random { .. } => valid.sample_uniform_in(bdd, &mut self.rng),
        }
    }

    /// Absorbs one run: `config` was executed and reached these decisions.
    pub fn record(
        &mut self,
        config: Configuration,
        records: Vec<DecisionRecord>,
    ) -> Result<(), Error> {
        if !self.enc.valid().is_valid(&config) {
            return Err(Error::InvalidConfiguration(
                self.enc.valid().space().format_configuration(&config),
            ));
        }
        let run = self.configurations.len();
        // Records are resolved first, so a bad record leaves the explorer unchanged.
        let distinct: BTreeSet<DecisionRecord> = records.into_iter().collect();
        let mut resolved = Vec::with_capacity(distinct.len());
        for r in &distinct {
            // The error's context is written only for an unknown name: formatting it for
            // every name of every record cost more than the lookups.
            let names = |set: &BTreeSet<String>, kind: &str| {
                set.iter()
                    .map(|n| {
                        self.enc
                            .valid()
                            .space()
                            .find(n)
                            .ok_or_else(|| Error::UnknownOption {
                                name: n.clone(),
                                context: format!(
                                    "the {kind} taint of decision {} ({}:{})",
                                    r.decision.id, r.decision.file, r.decision.line
                                ),
                            })
                    })
                    .collect::<Result<BTreeSet<_>, _>>()
            };
            resolved.push((
                r,
                names(&r.data_flow, "data-flow")?,
                names(&r.control_flow, "control-flow")?,
            ));
        }
        for (_, regions) in &mut self.tracked {
            for state in regions.values_mut() {
                for (part, runs) in state.partition.parts().iter().zip(&mut state.explored_by) {
                    if self.enc.contains(part.bdd(), &config) {
                        runs.push(run);
                    }
                }
            }
        }
        let enc = &self.enc;
        let earlier = &self.configurations;
        let config_of = |r: usize| earlier.get(r).unwrap_or(&config);
        let fold = &self.fold;
        // What each record's decision partition depends on, made once per record rather
        // than per region it refines (a folded method's records refine dozens).
        let keyed: Vec<_> = resolved
            .iter()
            .map(|(record, data, control)| {
                let key: AppliedKey = (
                    data.iter().copied().collect(),
                    control.iter().copied().collect(),
                    control.iter().map(|o| config.0[o.index()]).collect(),
                );
                (*record, data, control, key)
            })
            .collect();
        let mut splits: HashMap<&AppliedKey, DecisionSplit> = HashMap::new();
        for (granularity, regions) in &mut self.tracked {
            for (record, data, control, key) in &keyed {
                let own = granularity.region_of(&record.decision);
                let ids = match fold.get(&own) {
                    Some(targets) if *granularity == Granularity::Method => targets.as_slice(),
                    _ => std::slice::from_ref(&own),
                };
                for id in ids {
                    if !regions.contains_key(id) {
                        regions.insert(
                            id.clone(),
                            RegionState {
                                partition: Partition::whole(enc),
                                // Every run so far lies in the whole space.
                                explored_by: vec![(0..=run).collect()],
                                decisions: BTreeSet::new(),
                                options: BTreeSet::new(),
                                applied: HashSet::new(),
                            },
                        );
                    }
                    let state = regions.get_mut(id).expect("inserted above");
                    // Most records repeat what the region has (every run reaches the same
                    // sites): look before cloning.
                    if !state.decisions.contains(&record.decision) {
                        state.decisions.insert(record.decision.clone());
                    }
                    for option in record.data_flow.iter().chain(&record.control_flow) {
                        if !state.options.contains(option) {
                            state.options.insert(option.clone());
                        }
                    }
                    if state.applied.contains(key) {
                        continue;
                    }
                    state.applied.insert(key.clone());
                    // Regions share records, so each record's split is made once per run.
                    let split = splits
                        .entry(key)
                        .or_insert_with(|| DecisionSplit::new(enc, data, control, &config));
                    refine(state, split, enc, config_of);
                }
            }
        }
        self.configurations.push(config);
        self.records.push(distinct.into_iter().collect());
        Ok(())
    }

    /// The regions found so far.
    pub fn finish(self) -> Exploration {
        let enc = &self.enc;
        let regions = self
            .tracked
            .into_iter()
            .map(|(g, regions)| {
                let list = regions
                    .into_iter()
                    .map(|(id, state)| {
                        let mut subspaces: Vec<ExploredSubspace> = state
                            .partition
                            .parts()
                            .iter()
                            .zip(state.explored_by)
                            .map(|(s, runs)| ExploredSubspace {
                                text: enc.describe(s.description()),
                                subspace: s.clone(),
                                explored_by: runs,
                            })
                            .collect();
                        subspaces.sort_by(|a, b| a.text.cmp(&b.text));
                        RegionPartition {
                            id,
                            decisions: state.decisions.into_iter().collect(),
                            options: state.options.into_iter().collect(),
                            subspaces,
                        }
                    })
                    .collect();
                (g, list)
            })
            .collect();
        Exploration {
            configurations: self.configurations,
            records: self.records,
            regions,
        }
    }
}

/// The cross product of a region's partition with one decision's, part by part, carrying
/// along which runs lie in each new part; parts the decision cannot cut stay as they are,
/// and a partition none of whose parts is cut is not rebuilt.
fn refine<'c>(
    state: &mut RegionState,
    split: &DecisionSplit,
    enc: &Encoding,
    config_of: impl Fn(usize) -> &'c Configuration,
) {
    let cuts: Vec<(usize, Vec<Subspace>)> = state
        .partition
        .parts()
        .iter()
        .enumerate()
        .filter_map(|(i, p)| split.split(enc, p).map(|pieces| (i, pieces)))
        .collect();
    if cuts.is_empty() {
        return;
    }
    let old_parts = std::mem::replace(&mut state.partition, Partition::from_parts(Vec::new()));
    let old_runs = std::mem::take(&mut state.explored_by);
    let mut cuts = cuts.into_iter().peekable();
    let mut parts = Vec::with_capacity(old_parts.len());
    let mut explored_by = Vec::with_capacity(old_parts.len());
    for (i, (part, runs)) in old_parts.into_parts().into_iter().zip(old_runs).enumerate() {
        let Some((_, pieces)) = cuts.next_if(|(c, _)| *c == i) else {
            parts.push(part);
            explored_by.push(runs);
            continue;
        };
        if pieces.len() == 1 {
            // Pieces are non-empty and together make `part`: this one holds its runs.
            parts.extend(pieces);
            explored_by.push(runs);
            continue;
        }
        for piece in pieces {
            explored_by.push(
                runs.iter()
                    .copied()
                    .filter(|r| enc.contains(piece.bdd(), config_of(*r)))
                    .collect(),
            );
            parts.push(piece);
        }
    }
    state.partition = Partition::from_parts(parts);
    state.explored_by = explored_by;
}

/// Runs Algorithm 1: `run` executes the program under taint tracking in a configuration and
/// returns the decision records it produced.
pub fn explore<E: Display>(
    valid: &ValidConfigurations,
    settings: ExploreSettings,
    mut run: impl FnMut(&Configuration) -> Result<Vec<DecisionRecord>, E>,
) -> Result<Exploration, Error> {
    let mut explorer = Explorer::new(valid, settings);
    while let Some(config) = explorer.next_configuration()? {
        let records = run(&config).map_err(|e| Error::Run {
            run: explorer.configurations.len() + 1,
            configuration: valid.space().format_configuration(&config),
            cause: e.to_string(),
        })?;
        explorer.record(config, records)?;
    }
    Ok(explorer.finish())
}

/// A small set of configurations with at least one in every subspace of every region at
/// `granularity` (paper §III.B and Table IV): the same greedy intersection as the
/// exploration, repeated until everything is covered, ignoring which runs were made.
pub fn cover(
    valid: &ValidConfigurations,
    exploration: &Exploration,
    granularity: Granularity,
) -> Vec<Configuration> {
    let regions: Vec<&RegionPartition> = exploration.regions(granularity).iter().collect();
    cover_regions(valid, &regions)
}

/// [`cover`] of the subspaces of `regions` only.
pub fn cover_regions(
    valid: &ValidConfigurations,
    regions: &[&RegionPartition],
) -> Vec<Configuration> {
    let mut explorer = Explorer::new(valid, ExploreSettings::default());
    let mut uncovered: Vec<Bdd> = regions
        .iter()
        .flat_map(|r| r.subspaces.iter().map(|s| s.subspace.bdd().clone()))
        .collect();
    let mut out = Vec::new();
    while !uncovered.is_empty() {
        let config = explorer
            .greedy(&uncovered)
            .expect("subspaces are non-empty sets of valid configurations");
        uncovered.retain(|s| !explorer.enc.contains(s, &config));
        out.push(config);
    }
    out
}

/// The fewest configurations with at least one in every subspace of every region at
/// `granularity` (the paper's Table IV): an exhaustive search over the valid configurations
/// when there are at most [`EXACT_CONFIGURATIONS`] of them, starting from [`cover`]'s greedy
/// answer. Returns the configurations and whether they are proven the fewest (`false`: the
/// greedy cover for larger spaces, or the smallest cover found before the search ran out
/// of budget).
pub fn minimum_cover(
    valid: &ValidConfigurations,
    exploration: &Exploration,
    granularity: Granularity,
) -> (Vec<Configuration>, bool) {
    let greedy = cover(valid, exploration, granularity);
    let small = valid.count() <= EXACT_CONFIGURATIONS.into();
    if !small || greedy.len() <= 1 {
        return (greedy.clone(), small || greedy.len() <= 1);
    }
    let enc = Encoding::new(valid);
    let subspaces: Vec<&Bdd> = exploration
        .regions(granularity)
        .iter()
        .flat_map(|r| r.subspaces.iter().map(|s| s.subspace.bdd()))
        .collect();
    let configurations: Vec<Configuration> = valid.iter().collect();
    // Per configuration, the subspaces it lies in.
    let hits: Vec<Vec<usize>> = configurations
        .iter()
        .map(|c| {
            (0..subspaces.len())
                .filter(|&s| enc.contains(subspaces[s], c))
                .collect()
        })
        .collect();
    let problem = space::sampling::CoverInstance {
        candidates: &hits,
        elements: subspaces.len(),
        groups: None,
    };
    // Ever smaller covers until one size is impossible (proven the fewest) or the search
    // runs out of budget (the smallest found so far, not proven).
    let mut best: Option<Vec<usize>> = None;
    let mut size = greedy.len();
    let mut proven = true;
    while size > 1 {
        match space::sampling::cover_within(&problem, size - 1, EXACT_NODES) {
            Some(Some(found)) => {
                size = found.len();
                best = Some(found);
            }
            Some(None) => break,
            None => {
                proven = false;
                break;
            }
        }
    }
    match best {
        Some(found) => (
            found.iter().map(|&c| configurations[c].clone()).collect(),
            proven,
        ),
        None => (greedy, proven),
    }
}

/// [`minimum_cover`] searches exhaustively in spaces of at most this many configurations…
const EXACT_CONFIGURATIONS: u32 = 4096;
/// …and gives up after this many nodes.
const EXACT_NODES: usize = 1_000_000;
