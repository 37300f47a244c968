//! Sampling strategies: which configurations to measure. Every strategy is seeded and
//! deterministic and returns only valid configurations, without duplicates.

mod cover;
mod twise;

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use num_bigint::BigUint;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::Error;
use crate::space::Configuration;
use crate::valid::ValidConfigurations;

pub use cover::{CoverInstance, cover_within};
pub use twise::{TupleCoverage, covering_lower_bound, tuple_coverage};

/// A sampling strategy, as written on the command line (see [`Strategy::HELP`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    /// Every valid configuration (brute force).
    All,
    /// Each binary option selected alone, with as few others as the constraints allow.
    FeatureWise,
    /// Each binary option deselected alone, with as many others as the constraints allow.
    NegativeFeatureWise,
    /// A covering array: every valid combination of `t` option values appears.
    TWise(usize),
    /// `n` distinct configurations drawn uniformly from the valid ones.
    Random(usize),
    /// `n` distinct configurations, uniform over the number of selected options, then uniform
    /// among the configurations at that distance (Kaltenecker et al., ICSE 2019).
    Distance(usize),
    /// Configurations listed in a CSV file (header of option names).
    File(PathBuf),
}

impl Strategy {
    pub const HELP: &'static str = "all | featurewise | negfeaturewise | pairwise | twise:T (T=1..3) | random:N | distance:N | file:PATH.csv";
}

impl FromStr for Strategy {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::Invalid(format!(
                "unknown sampling strategy `{s}`; expected {}",
                Strategy::HELP
            ))
        };
        let (head, arg) = match s.split_once(':') {
            Some((h, a)) => (h, Some(a)),
            None => (s, None),
        };
        let number = |what: &str| -> Result<usize, Error> {
            let a = arg.ok_or_else(|| {
                Error::Invalid(format!(
                    "strategy `{head}` needs a {what}, as in `{head}:10`"
                ))
            })?;
            a.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::Invalid(format!("strategy `{head}`: `{a}` is not a positive {what}"))
            })
        };
        let no_arg = |st: Strategy| if arg.is_some() { Err(bad()) } else { Ok(st) };
        match head {
            "all" | "bruteforce" | "brute-force" => no_arg(Strategy::All),
            "featurewise" | "feature-wise" | "fw" => no_arg(Strategy::FeatureWise),
            "negfeaturewise" | "negative-featurewise" | "nfw" => {
                no_arg(Strategy::NegativeFeatureWise)
            }
            "pairwise" | "pw" => no_arg(Strategy::TWise(2)),
            "twise" | "t-wise" => {
                let t = number("strength t")?;
                if t > 3 {
                    return Err(Error::Invalid(format!(
                        "t-wise sampling supports t = 1, 2, 3, not {t}"
                    )));
                }
                Ok(Strategy::TWise(t))
            }
            "random" => Ok(Strategy::Random(number("sample size")?)),
            "distance" | "distance-based" => Ok(Strategy::Distance(number("sample size")?)),
            "file" => match arg {
                Some(p) if !p.is_empty() => Ok(Strategy::File(PathBuf::from(p))),
                _ => Err(Error::Invalid(
                    "strategy `file` needs a path, as in `file:configs.csv`".into(),
                )),
            },
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::All => write!(f, "all"),
            Strategy::FeatureWise => write!(f, "featurewise"),
            Strategy::NegativeFeatureWise => write!(f, "negfeaturewise"),
            Strategy::TWise(t) => write!(f, "twise:{t}"),
            Strategy::Random(n) => write!(f, "random:{n}"),
            Strategy::Distance(n) => write!(f, "distance:{n}"),
            Strategy::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

/// A sample and what is worth knowing about it.
#[derive(Clone, Debug)]
pub struct Sample {
    pub configurations: Vec<Configuration>,
    /// For t-wise samples: how many valid t-tuples exist and how many the sample covers.
    pub coverage: Option<TupleCoverage>,
    /// Remarks for the user (options that can never be selected, sizes capped, ...).
    pub notes: Vec<String>,
}

/// Above this many valid configurations, `all` refuses rather than running for ever.
pub const MAX_ENUMERATION: u64 = 10_000_000;

/// Draws a sample of the valid configurations.
pub fn sample(
    valid: &ValidConfigurations,
    strategy: &Strategy,
    seed: u64,
) -> Result<Sample, Error> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let space = valid.space();
    let mut notes = Vec::new();
    let mut coverage = None;
    let configurations = match strategy {
        Strategy::All => {
            let count = valid.count();
            if count > BigUint::from(MAX_ENUMERATION) {
                return Err(Error::Invalid(format!(
                    "the space has {count} valid configurations; `all` enumerates at most {MAX_ENUMERATION}"
                )));
            }
            valid.iter().collect()
        }
        Strategy::FeatureWise | Strategy::NegativeFeatureWise => {
            let positive = *strategy == Strategy::FeatureWise;
            let mut out = Vec::new();
            for id in space.ids().filter(|id| space.option(*id).is_binary()) {
                let restricted = valid.restricted(&valid.literal((id, positive as u32)));
                match valid.extreme_in(&restricted, !positive) {
                    Some(c) => out.push(c),
                    None => notes.push(format!(
                        "`{}` can never be {}",
                        space.option(id).name,
                        if positive { "selected" } else { "deselected" }
                    )),
                }
            }
            dedup(out)
        }
        Strategy::TWise(t) => {
            let (configs, cov) = twise::covering_array(valid, *t, &mut rng)?;
            coverage = Some(cov);
            configs
        }
        Strategy::Random(n) => random(valid, *n, &mut rng, &mut notes),
        Strategy::Distance(n) => distance(valid, *n, &mut rng, &mut notes),
        Strategy::File(path) => {
            let listed = crate::formats::read_configurations_csv(valid, path)?;
            let total = listed.len();
            let unique = dedup(listed);
            if unique.len() < total {
                notes.push(format!("{} duplicate rows dropped", total - unique.len()));
            }
            unique
        }
    };
    Ok(Sample {
        configurations,
        coverage,
        notes,
    })
}

fn dedup(configs: Vec<Configuration>) -> Vec<Configuration> {
    let mut seen = HashSet::new();
    configs
        .into_iter()
        .filter(|c| seen.insert(c.clone()))
        .collect()
}

fn random(
    valid: &ValidConfigurations,
    n: usize,
    rng: &mut ChaCha8Rng,
    notes: &mut Vec<String>,
) -> Vec<Configuration> {
    let count = valid.count();
    // Small spaces: shuffle the whole list (exact, and no rejection loop near the total).
    if count <= BigUint::from(2 * n as u64) {
        let mut all: Vec<Configuration> = valid.iter().collect();
        if all.len() <= n {
            notes.push(format!(
                "the space has only {} valid configurations; taking all of them",
                all.len()
            ));
        }
        all.shuffle(rng);
        all.truncate(n);
        return all;
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let c = valid.sample_uniform(rng);
        if seen.insert(c.clone()) {
            out.push(c);
        }
    }
    out
}

fn distance(
    valid: &ValidConfigurations,
    n: usize,
    rng: &mut ChaCha8Rng,
    notes: &mut Vec<String>,
) -> Vec<Configuration> {
    use rand::Rng;
    let table = valid.distance_table();
    let counts = valid.count_by_selected();
    // Distances still offering unseen configurations, with how many remain.
    let mut remaining: Vec<(usize, BigUint)> = counts
        .into_iter()
        .enumerate()
        .filter(|(_, c)| *c > BigUint::from(0u32))
        .collect();
    let total: BigUint = remaining.iter().map(|(_, c)| c).sum();
    if total <= BigUint::from(n as u64) {
        notes.push(format!(
            "the space has only {total} valid configurations; taking all of them"
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n && !remaining.is_empty() {
        let slot = rng.gen_range(0..remaining.len());
        let k = remaining[slot].0;
        // Rejection of already-drawn configurations terminates quickly: a distance whose
        // unseen configurations are few also has few in total (at most n + unseen).
        let config = loop {
            let c = valid
                .sample_with_selected(k, &table, rng)
                .expect("distance has configurations");
            if !seen.contains(&c) {
                break Some(c);
            }
        };
        match config {
            Some(c) => {
                seen.insert(c.clone());
                out.push(c);
                remaining[slot].1 -= 1u32;
                if remaining[slot].1 == BigUint::from(0u32) {
                    remaining.swap_remove(slot);
                }
            }
            None => {
                remaining.swap_remove(slot);
            }
        }
    }
    out
}
