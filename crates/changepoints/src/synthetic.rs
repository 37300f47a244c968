//! Synthetic configurable systems with known change points (§4.1.4): binary options, a
//! performance-influence model whose terms change influence at chosen commits, and noise.
//!
//! Each option has an influence; `interactions · n_options` extra terms have degrees
//! 1 + Geometric(`p_interaction`) (most interactions are pairs); a base term holds for every
//! configuration. A change point picks a term uniformly (the base term included: a change of
//! every configuration) and scales its influence by `1 ± s`, `s` from
//! {0.5, 0.9, 0.99, 1.01, 1.1, 2}, from its commit on. A measurement is the model's value
//! plus normal noise with standard deviation `noise · value`.
//!
//! The system serialises to the JSON the comparison with the reference implementation
//! reads (`format = "knobs-cp-system/1"`), so both run on the same systems.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use serde::{Deserialize, Serialize};
use space::{ConfigSpace, Configuration};

use crate::Error;
use crate::source::{MeasurementSource, Observation};

/// The generator's parameters (Table 1's system parameters and the model's ranges).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SyntheticSettings {
    pub options: usize,
    pub commits: usize,
    pub change_points: usize,
    /// Parameter of the geometric distribution of interaction degrees (Table 1's
    /// `p_interaction`): the larger, the fewer higher-order interactions.
    pub p_interaction: f64,
    /// Extra interaction terms per option.
    pub interactions: f64,
    /// Influences are drawn uniformly from this range: the paper's [−1, 1]; the reference
    /// implementation draws from [0, 1).
    pub influence_range: (f64, f64),
    /// The base term's influence, so that performance stays positive: the sum of the largest
    /// negative influences a configuration could select, plus one.
    pub positive_base: bool,
    /// Relative standard deviation of a measurement's noise.
    pub noise: f64,
    pub seed: u64,
}

impl Default for SyntheticSettings {
    fn default() -> Self {
        SyntheticSettings {
            options: 8,
            commits: 1000,
            change_points: 2,
            p_interaction: 0.7,
            interactions: 0.25,
            influence_range: (-1.0, 1.0),
            positive_base: true,
            noise: 0.0,
            seed: 1,
        }
    }
}

/// A term of the model: its options (empty: every configuration) and influence at commit 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SyntheticTerm {
    pub options: Vec<usize>,
    pub influence: f64,
}

/// A change: from `commit` on, the term of these options has `delta` more influence.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SyntheticChange {
    pub commit: usize,
    pub options: Vec<usize>,
    pub delta: f64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Noise {
    pub relative_sd: f64,
}

/// A synthetic system: the exchange format with the reference implementation's driver.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SyntheticSystem {
    pub format: String,
    pub n_options: usize,
    pub n_commits: usize,
    pub terms: Vec<SyntheticTerm>,
    pub change_points: Vec<SyntheticChange>,
    pub noise: Noise,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

pub const FORMAT: &str = "knobs-cp-system/1";

impl SyntheticSystem {
    pub fn generate(s: &SyntheticSettings) -> Result<SyntheticSystem, Error> {
        if s.options == 0 || s.options > 1024 {
            return Err(Error::Invalid(format!(
                "a synthetic system needs 1 to 1,024 options, not {}",
                s.options
            )));
        }
        if s.commits < 2 || s.commits > 10_000_000 {
            return Err(Error::Invalid(format!(
                "a synthetic system needs 2 to 10,000,000 commits, not {}",
                s.commits
            )));
        }
        if !(s.p_interaction > 0.0 && s.p_interaction <= 1.0) {
            return Err(Error::Invalid(format!(
                "p_interaction must be in (0, 1], not {}",
                s.p_interaction
            )));
        }
        let usable = |x: f64| x.is_finite() && x >= 0.0;
        if !usable(s.noise) || !usable(s.interactions) {
            return Err(Error::Invalid(
                "noise and interactions must be non-negative numbers".into(),
            ));
        }
        let (lo, hi) = s.influence_range;
        if !(lo < hi && lo.is_finite() && hi.is_finite()) {
            return Err(Error::Invalid(format!(
                "the influence range [{lo}, {hi}] is empty"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(s.seed);
        let mut terms: Vec<SyntheticTerm> = (0..s.options)
            .map(|o| SyntheticTerm {
                options: vec![o],
                influence: rng.gen_range(lo..hi),
            })
            .collect();
        let extra = (s.interactions * s.options as f64) as usize;
        let all: Vec<usize> = (0..s.options).collect();
        for _ in 0..extra {
            let degree = (1 + geometric(&mut rng, s.p_interaction)).min(s.options);
            if degree < 2 {
                continue;
            }
            let mut options: Vec<usize> = all.choose_multiple(&mut rng, degree).copied().collect();
            options.sort_unstable();
            terms.push(SyntheticTerm {
                options,
                influence: rng.gen_range(lo..hi),
            });
        }
        let base = if s.positive_base {
            1.0 + terms.iter().map(|t| (-t.influence).max(0.0)).sum::<f64>()
        } else {
            rng.gen_range(lo..hi)
        };
        terms.push(SyntheticTerm {
            options: vec![],
            influence: base,
        });
        // Change points at distinct commits after the first (a change at commit 0 changes
        // nothing one could observe).
        let slots = (s.commits - 1).min(s.change_points);
        let commits: Vec<usize> = rand::seq::index::sample(&mut rng, s.commits - 1, slots)
            .into_iter()
            .map(|c| c + 1)
            .collect();
        let mut current: Vec<f64> = terms.iter().map(|t| t.influence).collect();
        let mut order = commits.clone();
        order.sort_unstable();
        let mut change_points = Vec::new();
        for commit in order {
            let term = rng.gen_range(0..terms.len());
            let sign = if rng.gen_bool(0.5) { -1.0 } else { 1.0 };
            let size = *[0.5, 0.9, 0.99, 1.01, 1.1, 2.0]
                .choose(&mut rng)
                .expect("sizes");
            let delta = sign * size * current[term];
            current[term] += delta;
            change_points.push(SyntheticChange {
                commit,
                options: terms[term].options.clone(),
                delta,
            });
        }
        Ok(SyntheticSystem {
            format: FORMAT.into(),
            n_options: s.options,
            n_commits: s.commits,
            terms,
            change_points,
            noise: Noise {
                relative_sd: s.noise,
            },
            params: None,
        })
    }

    pub fn from_json(text: &str, shown: &str) -> Result<SyntheticSystem, Error> {
        let system: SyntheticSystem = serde_json::from_str(text)
            .map_err(|e| Error::Invalid(format!("{shown}: not a synthetic system: {e}")))?;
        if system.format != FORMAT {
            return Err(Error::Invalid(format!(
                "{shown}: format `{}`, expected `{FORMAT}`",
                system.format
            )));
        }
        let bad_option = |o: &usize| *o >= system.n_options;
        if system.n_commits < 2
            || system
                .terms
                .iter()
                .any(|t| t.options.iter().any(bad_option))
            || system
                .change_points
                .iter()
                .any(|c| c.commit >= system.n_commits || c.options.iter().any(bad_option))
        {
            return Err(Error::Invalid(format!(
                "{shown}: an option or commit is out of range"
            )));
        }
        Ok(system)
    }

    /// Performance of a configuration (selected options) at a commit, without noise.
    pub fn performance(&self, selected: &[bool], commit: usize) -> f64 {
        let holds = |options: &[usize]| options.iter().all(|o| selected[*o]);
        let model: f64 = self
            .terms
            .iter()
            .filter(|t| holds(&t.options))
            .map(|t| t.influence)
            .sum();
        let changes: f64 = self
            .change_points
            .iter()
            .filter(|c| c.commit <= commit && holds(&c.options))
            .map(|c| c.delta)
            .sum();
        model + changes
    }

    /// The space: options `o0 … o{n−1}`, binary, unconstrained.
    pub fn space(&self) -> ConfigSpace {
        let mut space = ConfigSpace::new("synthetic");
        for o in 0..self.n_options {
            space
                .add_binary(&format!("o{o}"), None, false)
                .expect("distinct names");
        }
        space
    }
}

/// Failures before the first success, success probability `p`.
fn geometric(rng: &mut ChaCha8Rng, p: f64) -> usize {
    let mut k = 0;
    while !rng.gen_bool(p) && k < 64 {
        k += 1;
    }
    k
}

/// A synthetic system as a measurement source: every configuration at every commit.
pub struct SyntheticSource {
    system: SyntheticSystem,
    space: ConfigSpace,
    rng: ChaCha8Rng,
}

impl SyntheticSource {
    pub fn new(system: SyntheticSystem, seed: u64) -> SyntheticSource {
        let space = system.space();
        SyntheticSource {
            system,
            space,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x05ee_d0f0_a15e),
        }
    }

    pub fn system(&self) -> &SyntheticSystem {
        &self.system
    }
}

impl MeasurementSource for SyntheticSource {
    fn space(&self) -> &ConfigSpace {
        &self.space
    }

    fn commits(&self) -> usize {
        self.system.n_commits
    }

    fn measure(
        &mut self,
        config: &Configuration,
        commits: &[usize],
    ) -> Result<Vec<Observation>, Error> {
        let selected: Vec<bool> = config.0.iter().map(|v| *v == 1).collect();
        Ok(commits
            .iter()
            .map(|&commit| {
                let value = self.system.performance(&selected, commit);
                let sd = self.system.noise.relative_sd * value.abs();
                let noise = if sd > 0.0 {
                    sd * standard_normal(&mut self.rng)
                } else {
                    0.0
                };
                Observation {
                    commit,
                    value: value + noise,
                }
            })
            .collect())
    }
}

/// Box–Muller: one standard normal draw.
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.r#gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_changes_apply_from_their_commit() {
        let s = SyntheticSettings {
            options: 16,
            commits: 500,
            change_points: 5,
            ..Default::default()
        };
        let a = SyntheticSystem::generate(&s).unwrap();
        let b = SyntheticSystem::generate(&s).unwrap();
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        assert_eq!(a.change_points.len(), 5);
        let all = vec![true; 16];
        for c in &a.change_points {
            let before = a.performance(&all, c.commit - 1);
            let after = a.performance(&all, c.commit);
            let others: f64 = a
                .change_points
                .iter()
                .filter(|d| d.commit == c.commit)
                .map(|d| d.delta)
                .sum();
            assert!((after - before - others).abs() < 1e-9);
        }
        // Every configuration is positive at every commit's start.
        assert!(a.performance(&[false; 16], 0) > 0.0);
        let json = serde_json::to_string(&a).unwrap();
        let back = SyntheticSystem::from_json(&json, "x").unwrap();
        assert_eq!(back.terms.len(), a.terms.len());
    }
}
