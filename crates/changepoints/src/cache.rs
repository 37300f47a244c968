//! The solution cache of §3.5: associations seen in successive iterations gain confidence,
//! those not seen again evaporate and are dropped.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::association::Association;

/// How the cache weighs associations (the paper's defaults).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CacheSettings {
    /// Added to an association's weight each iteration it is in the candidate solution.
    pub increase: f64,
    /// Every weight is multiplied by this after each iteration (`e_decrease`, in ]0, 1[).
    pub decrease: f64,
    /// An association seen once and then not for `k` iterations falls below the drop
    /// threshold `decrease^k`; and `k` stable iterations end the search.
    pub k: usize,
    /// A candidate association within this many commits of a cached one with the same
    /// option reinforces it instead of starting a new one (candidate commits move by a few
    /// commits between iterations; the reference implementation uses 5, the paper does not
    /// say).
    pub tolerance: usize,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings {
            increase: 1.0,
            decrease: 0.3,
            k: 3,
            tolerance: 5,
        }
    }
}

impl CacheSettings {
    /// `t_drop`: the weight of an association included once and then not in `k` iterations.
    pub fn drop_threshold(&self) -> f64 {
        self.increase * self.decrease.powi(self.k as i32)
    }
}

/// Associations and their weights.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SolutionCache {
    weights: BTreeMap<Association, f64>,
    /// Iterations in a row in which the cached associations stayed the same.
    stable: usize,
}

fn is_confirmed(weight: f64, settings: &CacheSettings) -> bool {
    weight > settings.increase * (1.0 + 1e-9)
}

impl SolutionCache {
    /// Takes in one iteration's candidate solution; returns how many associations were
    /// dropped. Weights evaporate first and the candidate's associations gain `increase`
    /// after, so that an association included once weighs `increase` and, not included in
    /// the `k` iterations after, `increase · decrease^k` = `t_drop`, where it is dropped.
    pub fn update(&mut self, candidate: &[Association], settings: &CacheSettings) -> usize {
        let before: Vec<Association> = self.weights.keys().cloned().collect();
        for w in self.weights.values_mut() {
            *w *= settings.decrease;
        }
        for a in candidate {
            let near = self
                .weights
                .keys()
                .filter(|c| {
                    c.affects == a.affects && c.commit.abs_diff(a.commit) <= settings.tolerance
                })
                .min_by_key(|c| c.commit.abs_diff(a.commit))
                .cloned();
            *self
                .weights
                .entry(near.unwrap_or_else(|| a.clone()))
                .or_insert(0.0) += settings.increase;
        }
        let threshold = settings.drop_threshold();
        self.weights.retain(|_, w| *w > threshold * (1.0 + 1e-9));
        let dropped = before
            .iter()
            .filter(|a| !self.weights.contains_key(*a))
            .count();
        if self.weights.keys().eq(before.iter()) {
            self.stable += 1;
        } else {
            self.stable = 0;
        }
        dropped
    }

    /// §3.5's stopping rule: no association dropped (or added) for `k` iterations in a row
    /// and every cached association confirmed.
    pub fn is_settled(&self, settings: &CacheSettings) -> bool {
        self.stable >= settings.k
            && !self.weights.is_empty()
            && self.weights.values().all(|w| is_confirmed(*w, settings))
    }

    /// The associations that pass the stopping rule's test of each one: weight above
    /// `increase`, so in the latest candidate solution and in an earlier one that has not
    /// evaporated. A search cut off by its measurement limit reports these: the others are
    /// undecided, seen once or not again since.
    pub fn confirmed<'a>(
        &'a self,
        settings: &'a CacheSettings,
    ) -> impl Iterator<Item = (&'a Association, f64)> + 'a {
        self.associations()
            .filter(move |(_, w)| is_confirmed(*w, settings))
    }

    pub fn associations(&self) -> impl Iterator<Item = (&Association, f64)> {
        self.weights.iter().map(|(a, w)| (a, *w))
    }

    pub fn len(&self) -> usize {
        self.weights.len()
    }

    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::association::Affects;

    fn at(commit: usize, option: usize) -> Association {
        Association {
            commit,
            affects: Affects::Feature(option),
        }
    }

    fn confirmed(cache: &SolutionCache, settings: &CacheSettings) -> Vec<Association> {
        cache.confirmed(settings).map(|(a, _)| a.clone()).collect()
    }

    #[test]
    fn an_association_is_confirmed_when_seen_now_and_before() {
        let settings = CacheSettings::default();
        let mut cache = SolutionCache::default();
        // Seen once: cached, not confirmed.
        cache.update(&[at(100, 1), at(500, 2)], &settings);
        assert_eq!(cache.len(), 2);
        assert!(confirmed(&cache, &settings).is_empty());
        // Seen again, two commits off (within the tolerance): confirmed under its first
        // commit; the other, not seen again, is not.
        cache.update(&[at(102, 1), at(800, 3)], &settings);
        assert_eq!(confirmed(&cache, &settings), vec![at(100, 1)]);
        // Missed in the latest iteration: no longer confirmed, though still cached.
        cache.update(&[at(800, 3)], &settings);
        assert_eq!(confirmed(&cache, &settings), vec![at(800, 3)]);
        assert!(cache.associations().any(|(a, _)| *a == at(100, 1)));
        // Seen again after a gap of one iteration: confirmed again (0.3² · 1.3 + 1 > 1).
        cache.update(&[at(100, 1), at(800, 3)], &settings);
        assert_eq!(confirmed(&cache, &settings), vec![at(100, 1), at(800, 3)]);
    }

    #[test]
    fn a_settled_cache_is_confirmed_throughout() {
        let settings = CacheSettings::default();
        let mut cache = SolutionCache::default();
        let solution = [at(100, 1), at(500, 2)];
        for _ in 0..=settings.k {
            assert!(!cache.is_settled(&settings));
            cache.update(&solution, &settings);
        }
        assert!(cache.is_settled(&settings));
        assert_eq!(confirmed(&cache, &settings), solution.to_vec());
        // One new association unsettles it and is the one not confirmed.
        cache.update(&[at(100, 1), at(500, 2), at(900, 4)], &settings);
        assert!(!cache.is_settled(&settings));
        assert_eq!(cache.len(), 3);
        assert_eq!(confirmed(&cache, &settings), solution.to_vec());
    }
}
