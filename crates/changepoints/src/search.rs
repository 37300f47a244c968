//! The iterative search of §3: sample, estimate likelihoods, assemble a candidate solution,
//! acquire measurements, update the solution cache, until it settles or the budget ends.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Instant;

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use serde::Serialize;
use space::{Configuration, ValidConfigurations};

use crate::acquisition::{self, AcquisitionSettings};
use crate::association::{self, Affects, Association, AssociationSettings, CandidateModel};
use crate::cache::{CacheSettings, SolutionCache};
use crate::candidates::{self, KdeSettings};
use crate::likelihood::{self, Threshold};
use crate::source::{CommitInfo, MeasurementSource};
use crate::{Error, Features};

/// Every parameter of the search, with the paper's defaults.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Configurations in the initial sample (`n_configurations`; distance-based).
    pub initial_configurations: usize,
    /// Share of the commits measured per configuration at first (`r_commits`), drawn
    /// independently per configuration; the first and last commit are always included.
    pub commit_share: f64,
    /// Eq. 3's threshold for a performance change.
    pub threshold: Threshold,
    /// `N_CPL` of eq. 6: the paper's 3 (the reference implementation uses 5).
    pub peak_factor: f64,
    pub kde: KdeSettings,
    pub association: AssociationSettings,
    pub acquisition: AcquisitionSettings,
    pub cache: CacheSettings,
    /// Fallback stops: iterations (`i_max`) and measurements (`m_max`).
    pub max_iterations: usize,
    pub max_measurements: usize,
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            initial_configurations: 20,
            commit_share: 0.03,
            threshold: Threshold::Relative(0.1),
            peak_factor: 3.0,
            kde: KdeSettings::default(),
            association: AssociationSettings::default(),
            acquisition: AcquisitionSettings::default(),
            cache: CacheSettings::default(),
            max_iterations: 30,
            max_measurements: usize::MAX,
            seed: 1,
        }
    }
}

impl Settings {
    /// Where the paper and the reference implementation differ, the reference's choices:
    /// peak factor 5, no intercept rule, random commit exploration (it also holds LASSO
    /// coefficients non-negative, which knobs does by default).
    pub fn reference(mut self) -> Settings {
        self.peak_factor = 5.0;
        self.association.intercept_rule = false;
        self.acquisition.commit_exploration = acquisition::CommitExploration::Random;
        self
    }
}

/// A configuration of the sample and its measured history.
#[derive(Clone, Debug, Serialize)]
pub struct SampledConfiguration {
    pub configuration: String,
    #[serde(skip)]
    pub config: Configuration,
    #[serde(skip)]
    pub row: Vec<f64>,
    /// Measured commits and their performance.
    pub history: BTreeMap<usize, f64>,
    /// Commits where this configuration's likelihood peaked in the last iteration.
    pub peaks: Vec<usize>,
}

/// What one iteration saw.
#[derive(Clone, Debug, Serialize)]
pub struct Iteration {
    pub configurations: usize,
    pub measurements: usize,
    pub candidates: Vec<usize>,
    pub bandwidth: f64,
    pub candidate_solution: Vec<Association>,
    pub cached: usize,
    pub seconds: f64,
}

/// A detected change point: a commit, what it affects, and how performance moved there.
#[derive(Clone, Debug, Serialize)]
pub struct ChangePoint {
    pub commit: usize,
    pub info: CommitInfo,
    /// Feature names; empty with `all_configurations` or `unattributed`.
    pub options: Vec<String>,
    /// The options read as the paper reads them: each inner list holds alternatives (no
    /// measurable configuration selects two of them, so they are separate changes of one
    /// commit), and the lists together are an interaction (configurations that select one
    /// of each). `[["lzma", "none"]]` is "lzma or none", not `lzma & none`.
    pub option_groups: Vec<Vec<String>>,
    pub all_configurations: bool,
    /// Some configurations changed here, which no option explains ([`Affects::Unattributed`]).
    pub unattributed: bool,
    /// The cache weights of its associations (confidence).
    pub weight: f64,
    /// Median relative change from `before_commit` to `after_commit` (just outside the
    /// cache's tolerance around the commit) of up to three sampled configurations that
    /// select the associated options; `None` when none could be compared.
    pub relative_change: Option<f64>,
    pub before_commit: usize,
    pub after_commit: usize,
    pub configurations_compared: usize,
}

/// The outcome of a search.
#[derive(Clone, Debug, Serialize)]
pub struct Detection {
    /// Commits searched, `first_commit..first_commit + commits` in the source's numbering,
    /// in which every commit of a detection is reported.
    pub commits: usize,
    pub first_commit: usize,
    pub features: Vec<String>,
    pub change_points: Vec<ChangePoint>,
    /// The associations found (the unit of the paper's evaluation): the final cache's, or
    /// its confirmed ones ([`SolutionCache::confirmed`]) when the measurement limit cut the
    /// search off.
    pub associations: Vec<Association>,
    /// Associations the cache held when the measurement limit cut the search off but had
    /// not confirmed (seen in one iteration only, or not again since): left out of
    /// `associations` and `change_points`.
    pub unconfirmed: Vec<Association>,
    pub iterations: Vec<Iteration>,
    pub measurements: usize,
    /// Batches of measurements asked of the source: the initial sample, one per acquisition
    /// round, and the change points' sizes ([`MeasurementSource::measure_batch`]).
    pub batches: usize,
    pub configurations: usize,
    /// Why the search ended.
    pub stopped: String,
    pub sample: Vec<SampledConfiguration>,
    /// Per candidate commit of the last iteration, its LASSO.
    pub models: Vec<CandidateModel>,
    pub seconds: f64,
}

struct State<'b> {
    source: &'b mut dyn MeasurementSource,
    sample: Vec<SampledConfiguration>,
    used: HashSet<Configuration>,
    measurements: usize,
    /// `Settings::max_measurements`: no measurement is made past it.
    limit: usize,
    /// Measurements asked for and not made yet, per sampled configuration, in the order
    /// asked: a step of the search asks for all it wants, then [`State::measure_wanted`]
    /// makes them as one batch.
    wanted: Vec<(usize, Vec<usize>)>,
    /// Batches the source was asked for.
    batches: usize,
}

impl State<'_> {
    fn add_configuration(&mut self, wanted: &Configuration, features: &Features) -> Option<usize> {
        let config = self.source.substitute(wanted, &self.used)?;
        self.used.insert(config.clone());
        let space = self.source.space();
        self.sample.push(SampledConfiguration {
            configuration: space.format_configuration(&config),
            row: features.row(space, &config),
            config,
            history: BTreeMap::new(),
            peaks: Vec::new(),
        });
        Some(self.sample.len() - 1)
    }

    /// Asks for configuration `at` at those of `commits` it has not been measured (or asked
    /// for) at, in the order asked for as far as the measurement limit allows; the
    /// measurements are made by the next [`State::measure_wanted`].
    fn want(&mut self, at: usize, commits: &[usize]) {
        let queued: BTreeSet<usize> = self
            .wanted
            .iter()
            .filter(|(a, _)| *a == at)
            .flat_map(|(_, c)| c.iter().copied())
            .collect();
        let mut seen = BTreeSet::new();
        let mut fresh: Vec<usize> = commits
            .iter()
            .copied()
            .filter(|c| {
                !self.sample[at].history.contains_key(c) && !queued.contains(c) && seen.insert(*c)
            })
            .take(self.limit.saturating_sub(self.measurements))
            .collect();
        fresh.sort_unstable();
        if fresh.is_empty() {
            return;
        }
        self.measurements += fresh.len();
        self.wanted.push((at, fresh));
    }

    /// Makes every measurement asked for since the last batch, as one batch.
    fn measure_wanted(&mut self) -> Result<(), Error> {
        if self.wanted.is_empty() {
            return Ok(());
        }
        let wanted = std::mem::take(&mut self.wanted);
        let requests: Vec<(Configuration, Vec<usize>)> = wanted
            .iter()
            .map(|(at, commits)| (self.sample[*at].config.clone(), commits.clone()))
            .collect();
        let answers = self.source.measure_batch(&requests)?;
        self.batches += 1;
        if answers.len() != requests.len() {
            return Err(Error::Measure(format!(
                "the source answered {} of {} requests",
                answers.len(),
                requests.len()
            )));
        }
        for ((at, _), observations) in wanted.iter().zip(answers) {
            for o in observations {
                self.sample[*at].history.insert(o.commit, o.value);
            }
        }
        Ok(())
    }
}

/// `feats` partitioned into alternatives: two features are in one group when no measurable
/// configuration selects both (joined transitively), in the order of their first feature.
fn option_groups(
    feats: &[usize],
    features: &Features,
    valid: &ValidConfigurations,
    measurable: Option<&[Configuration]>,
) -> Vec<Vec<usize>> {
    let space = valid.space();
    let exclusive = |a: usize, b: usize| match measurable {
        Some(configs) => !configs.iter().any(|c| {
            let row = features.row(space, c);
            row[a] == 1.0 && row[b] == 1.0
        }),
        None => valid
            .bdd()
            .and(&valid.literal(features.literal(a)))
            .and(&valid.literal(features.literal(b)))
            .is_false(),
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &f in feats {
        let joined: Vec<usize> = (0..groups.len())
            .filter(|g| groups[*g].iter().any(|o| exclusive(*o, f)))
            .collect();
        let mut group = vec![f];
        for g in joined.into_iter().rev() {
            group.extend(groups.remove(g));
        }
        group.sort_unstable();
        groups.push(group);
    }
    groups.sort();
    groups
}

/// The gap between the measured commits around `v` (`a < v ≤ b`).
fn gap_around(history: &BTreeMap<usize, f64>, v: usize, commits: usize) -> usize {
    let before = history.range(..v).next_back().map_or(0, |(c, _)| *c);
    let after = history.range(v..).next().map_or(commits, |(c, _)| *c);
    after - before
}

/// Per configuration whether its nearest measurements around commit `v` (`a < v ≤ b`)
/// differ by the threshold: whether it shows a change at `v`, as far as its measurements
/// tell; `None` when it is not measured on both sides.
fn changed_at(
    sample: &[SampledConfiguration],
    v: usize,
    threshold: Threshold,
) -> Vec<Option<bool>> {
    sample
        .iter()
        .map(|s| {
            let before = s.history.range(..v).next_back();
            let after = s.history.range(v..).next();
            match (before, after) {
                (Some((_, a)), Some((_, b))) => Some(threshold.differs(*a, *b)),
                _ => None,
            }
        })
        .collect()
}

/// Commits for a new configuration: the first and last, and `count` more at random.
fn initial_commits(commits: usize, count: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
    let mut all: Vec<usize> = (1..commits.saturating_sub(1)).collect();
    all.shuffle(rng);
    let mut out = vec![0, commits - 1];
    out.extend(all.into_iter().take(count));
    out
}

/// Runs the search on a source.
pub fn detect(source: &mut dyn MeasurementSource, settings: &Settings) -> Result<Detection, Error> {
    let started = Instant::now();
    let commits = source.commits();
    if commits < 3 {
        return Err(Error::Invalid(format!(
            "a history of {commits} commits has no change point to find (3 or more needed)"
        )));
    }
    if !(settings.commit_share > 0.0 && settings.commit_share <= 1.0) {
        return Err(Error::Invalid(format!(
            "the commit share must be in (0, 1], not {}",
            settings.commit_share
        )));
    }
    let space = source.space().clone();
    let valid = ValidConfigurations::new(&space)?;
    let features = Features::new(&space);
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let per_configuration = ((commits as f64 * settings.commit_share) as usize).max(2);
    let mut state = State {
        source,
        sample: Vec::new(),
        used: HashSet::new(),
        measurements: 0,
        limit: settings.max_measurements,
        wanted: Vec::new(),
        batches: 0,
    };
    let initial = space::sample(
        &valid,
        &space::Strategy::Distance(settings.initial_configurations.max(2)),
        settings.seed,
    )?;
    for config in &initial.configurations {
        if let Some(at) = state.add_configuration(config, &features) {
            let picked = initial_commits(commits, per_configuration, &mut rng);
            state.want(at, &picked);
        }
    }
    state.measure_wanted()?;
    let mut cache = SolutionCache::default();
    let mut iterations = Vec::new();
    let mut models = Vec::new();
    let stopped;
    let mut budget_spent = false;
    let mut i = 0;
    loop {
        let began = Instant::now();
        // Likelihoods and per-configuration peaks.
        let mut likelihoods = Vec::with_capacity(state.sample.len());
        let mut thresholds = Vec::with_capacity(state.sample.len());
        let mut pooled = Vec::new();
        for s in &mut state.sample {
            let p = likelihood::likelihood(&s.history, commits, settings.threshold);
            let t = candidates::peak_threshold(&p, settings.peak_factor);
            s.peaks = if p.iter().any(|x| *x > 0.0) {
                candidates::peaks(&p, t)
            } else {
                Vec::new()
            };
            pooled.extend(s.peaks.iter().map(|&commit| candidates::Peak {
                commit,
                gap: gap_around(&s.history, commit, commits),
            }));
            likelihoods.push(p);
            thresholds.push(t);
        }
        let (candidates, bandwidth) =
            candidates::cluster(&pooled, commits, &settings.kde, &mut rng);
        // Associations per candidate commit.
        let rows: Vec<Vec<f64>> = state.sample.iter().map(|s| s.row.clone()).collect();
        let mut candidate_solution = Vec::new();
        models.clear();
        for &v in &candidates {
            let y: Vec<f64> = likelihoods.iter().map(|p| p[v]).collect();
            let changed = changed_at(&state.sample, v, settings.threshold);
            let (found, model) =
                association::associate(v, &rows, &y, &changed, &settings.association, &mut rng);
            candidate_solution.extend(found);
            models.push(model);
        }
        cache.update(&candidate_solution, &settings.cache);
        iterations.push(Iteration {
            configurations: state.sample.len(),
            measurements: state.measurements,
            candidates: candidates.clone(),
            bandwidth,
            candidate_solution: candidate_solution.clone(),
            cached: cache.len(),
            seconds: began.elapsed().as_secs_f64(),
        });
        i += 1;
        if cache.is_settled(&settings.cache) {
            stopped = format!(
                "the solution cache settled (unchanged for {} iterations, every association confirmed)",
                settings.cache.k
            );
            break;
        }
        if i >= settings.max_iterations {
            stopped = format!("the iteration limit ({})", settings.max_iterations);
            break;
        }
        if state.measurements >= settings.max_measurements {
            budget_spent = true;
            stopped = format!("the measurement limit ({})", settings.max_measurements);
            break;
        }
        // Acquisition.
        let budget = settings.acquisition.budget(i - 1);
        let remaining = settings.max_measurements.saturating_sub(state.measurements);
        let scale = |n: usize| n.min(remaining);
        let n = state.sample.len();
        let explore = acquisition::share(scale(budget.explore_commits), n, &mut rng);
        let exploit = acquisition::share(scale(budget.exploit_commits), n, &mut rng);
        for at in 0..n {
            let mut picked = acquisition::exploit_commits(
                &state.sample[at].history,
                &likelihoods[at],
                &state.sample[at].peaks,
                thresholds[at],
                exploit[at],
                &mut rng,
            );
            let mut measured = state.sample[at].history.clone();
            measured.extend(picked.iter().map(|c| (*c, 0.0)));
            picked.extend(acquisition::explore_commits(
                &measured,
                commits,
                explore[at],
                settings.acquisition.commit_exploration,
                &mut rng,
            ));
            state.want(at, &picked);
        }
        // New configurations: exploitation and exploration interleaved, as many as the
        // configuration budget gives each its share of commits.
        let capacity = scale(budget.configurations) / (per_configuration + 2);
        let exploit_configs = acquisition::exploit_configurations(
            &valid,
            &features,
            &candidate_solution,
            &state.used,
            &settings.acquisition,
            &mut rng,
        );
        let explore_configs = space::sample(
            &valid,
            &space::Strategy::Distance(
                (settings.acquisition.explore_configurations + state.used.len()).min(100_000),
            ),
            settings.seed.wrapping_add(i as u64),
        )?
        .configurations;
        let unused: Vec<Configuration> = explore_configs
            .into_iter()
            .filter(|c| !state.used.contains(c))
            .collect();
        let mut explore_iter = unused.into_iter();
        let mut exploit_iter = exploit_configs.into_iter();
        let mut added = 0;
        let mut explored = 0;
        while added < capacity {
            let next = if added % 2 == 0 {
                exploit_iter.next().or_else(|| {
                    (explored < settings.acquisition.explore_configurations)
                        .then(|| explore_iter.next())
                        .flatten()
                })
            } else {
                let e = (explored < settings.acquisition.explore_configurations)
                    .then(|| explore_iter.next())
                    .flatten();
                if e.is_some() {
                    explored += 1;
                }
                e.or_else(|| exploit_iter.next())
            };
            let Some(wanted) = next else { break };
            if state.used.contains(&wanted) {
                continue;
            }
            let Some(at) = state.add_configuration(&wanted, &features) else {
                break;
            };
            let picked = initial_commits(commits, per_configuration, &mut rng);
            state.want(at, &picked);
            added += 1;
        }
        // The acquisition's measurements (new commits of sampled configurations, new
        // configurations' first commits) depend on none of each other: one batch.
        state.measure_wanted()?;
    }
    // Cut off by the measurement budget, the search reports what its cache has confirmed
    // and names the rest, which it would still have tested with more measurements. A
    // settled cache is confirmed throughout. At the iteration limit the whole cache stands:
    // after that many iterations an association that is not confirmed may be one that keeps
    // coming back without settling (lrzip's replay loses true change points to the filter
    // there; docs/guide/changepoints.md).
    let confirmed: BTreeSet<&Association> =
        cache.confirmed(&settings.cache).map(|(a, _)| a).collect();
    let mut reported: Vec<(Association, f64)> = Vec::new();
    let mut unconfirmed: Vec<Association> = Vec::new();
    for (a, w) in cache.associations() {
        if !budget_spent || confirmed.contains(a) {
            reported.push((a.clone(), w));
        } else {
            unconfirmed.push(a.clone());
        }
    }
    let associations: Vec<Association> = reported.iter().map(|(a, _)| a.clone()).collect();
    let change_points = summarise(&reported, &mut state, &features, &valid, settings)?;
    let detection = Detection {
        commits,
        first_commit: 0,
        features: features.names().to_vec(),
        change_points,
        associations,
        unconfirmed,
        iterations,
        measurements: state.measurements,
        batches: state.batches,
        configurations: state.sample.len(),
        stopped,
        sample: state.sample,
        models,
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok(detection.shifted(state.source.first_commit()))
}

impl Detection {
    /// The detection with commits numbered from `first` (the search numbers them from 0).
    fn shifted(mut self, first: usize) -> Detection {
        self.first_commit = first;
        if first == 0 {
            return self;
        }
        for c in &mut self.change_points {
            c.commit += first;
            c.before_commit += first;
            c.after_commit += first;
        }
        for a in self.associations.iter_mut().chain(&mut self.unconfirmed) {
            a.commit += first;
        }
        for i in &mut self.iterations {
            i.candidates.iter_mut().for_each(|c| *c += first);
            i.candidate_solution
                .iter_mut()
                .for_each(|a| a.commit += first);
        }
        for s in &mut self.sample {
            s.history = s.history.iter().map(|(c, v)| (c + first, *v)).collect();
            s.peaks.iter_mut().for_each(|c| *c += first);
        }
        for m in &mut self.models {
            m.commit += first;
        }
        self
    }
}

/// The associations (and their cache weights) grouped by commit, with the size and
/// direction of each change.
fn summarise(
    associations: &[(Association, f64)],
    state: &mut State,
    features: &Features,
    valid: &ValidConfigurations,
    settings: &Settings,
) -> Result<Vec<ChangePoint>, Error> {
    let mut by_commit: BTreeMap<usize, (Vec<usize>, bool, bool, f64)> = BTreeMap::new();
    for (a, w) in associations {
        let entry = by_commit
            .entry(a.commit)
            .or_insert((Vec::new(), false, false, 0.0));
        match a.affects {
            Affects::All => entry.1 = true,
            Affects::Feature(f) => entry.0.push(f),
            Affects::Unattributed => entry.2 = true,
        }
        entry.3 = entry.3.max(*w);
    }
    let window = settings.cache.tolerance.max(1);
    let commits = state.source.commits();
    // The size and direction: up to three sampled configurations that select the
    // associated options, measured just outside the commit's tolerance window; every
    // change point's measurements in one batch.
    let mut compared = Vec::new();
    for (commit, (feats, all, unattributed, weight)) in by_commit {
        let unattributed = unattributed && !all && feats.is_empty();
        let before_commit = commit.saturating_sub(window + 1);
        let after_commit = (commit + window).min(commits - 1);
        // Configurations with the associated options, one of each group of alternatives
        // (any, for a change of all of them).
        let groups = option_groups(&feats, features, valid, state.source.measurable());
        let matching: Vec<usize> = (0..state.sample.len())
            .filter(|at| {
                let row = &state.sample[*at].row;
                groups.iter().all(|g| g.iter().any(|f| row[*f] == 1.0))
            })
            .take(3)
            .collect();
        for &at in &matching {
            state.want(at, &[before_commit, after_commit]);
        }
        compared.push((commit, feats, all, unattributed, weight, groups, matching));
    }
    state.measure_wanted()?;
    let mut out = Vec::new();
    for (commit, feats, all, unattributed, weight, groups, matching) in compared {
        let before_commit = commit.saturating_sub(window + 1);
        let after_commit = (commit + window).min(commits - 1);
        let mut changes = Vec::new();
        for at in matching {
            let h = &state.sample[at].history;
            if let (Some(b), Some(a)) = (h.get(&before_commit), h.get(&after_commit))
                && *b != 0.0
            {
                changes.push((a - b) / b.abs());
            }
        }
        changes.sort_by(f64::total_cmp);
        let relative_change = (!changes.is_empty()).then(|| changes[changes.len() / 2]);
        out.push(ChangePoint {
            commit,
            info: state.source.commit_info(commit),
            options: feats
                .iter()
                .map(|f| features.name(*f).to_string())
                .collect(),
            option_groups: groups
                .into_iter()
                .map(|g| g.iter().map(|f| features.name(*f).to_string()).collect())
                .collect(),
            all_configurations: all,
            unattributed,
            weight,
            relative_change,
            before_commit,
            after_commit,
            configurations_compared: changes.len(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use space::{ConfigSpace, GroupKind};

    #[test]
    fn alternatives_are_grouped_and_other_options_interact() {
        let mut space = ConfigSpace::new("s");
        let backend = space.add_binary("backend", None, true).unwrap();
        let members: Vec<_> = ["lzma", "lzo", "none"]
            .iter()
            .map(|n| space.add_binary(n, Some(backend), false).unwrap())
            .collect();
        space
            .add_group(GroupKind::Alternative, Some(backend), members)
            .unwrap();
        space.add_binary("threads", None, false).unwrap();
        let valid = ValidConfigurations::new(&space).unwrap();
        let features = Features::new(&space);
        let id = |n: &str| features.names().iter().position(|f| f == n).unwrap();
        let (lzma, none, threads) = (id("lzma"), id("none"), id("threads"));
        assert_eq!(
            option_groups(&[lzma, none, threads], &features, &valid, None),
            vec![vec![lzma, none], vec![threads]]
        );
        // A fixed set of configurations decides: here `lzma` and `threads` never meet.
        let only = [
            space.parse_configuration("backend,lzma").unwrap(),
            space.parse_configuration("backend,none,threads").unwrap(),
        ];
        assert_eq!(
            option_groups(&[lzma, threads], &features, &valid, Some(&only)),
            vec![vec![lzma, threads]]
        );
        assert_eq!(
            option_groups(&[none, threads], &features, &valid, Some(&only)),
            vec![vec![none], vec![threads]]
        );
    }
}
