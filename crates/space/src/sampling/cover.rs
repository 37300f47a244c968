//! The smallest cover, exactly: choose the fewest candidate sets that together contain every
//! element — the covering problem behind compression (configurations covering interactions'
//! value combinations) and Comprex's Table IV (configurations reaching every subspace).
//! An exhaustive branch and bound, for instances small enough to prove an answer.

/// A covering instance: each candidate (a row, a configuration) and the elements it covers.
/// With `groups`, element `e` belongs to group `groups[e]` and no candidate covers two
/// elements of one group (a row covers one value combination per interaction), which bounds
/// the search far better.
pub struct CoverInstance<'a> {
    pub candidates: &'a [Vec<usize>],
    pub elements: usize,
    pub groups: Option<&'a [usize]>,
}

/// Whether at most `limit` candidates cover every element: `Some(Some(chosen))` with such a
/// cover, `Some(None)` when none exists, `None` when the search spent `budget` nodes first.
pub fn cover_within(
    instance: &CoverInstance,
    limit: usize,
    budget: usize,
) -> Option<Option<Vec<usize>>> {
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); instance.elements];
    for (c, es) in instance.candidates.iter().enumerate() {
        for &e in es {
            holders[e].push(c);
        }
    }
    let ngroups = instance
        .groups
        .map_or(0, |g| g.iter().copied().max().map_or(0, |m| m + 1));
    let mut uncovered_in = vec![0usize; ngroups];
    if let Some(groups) = instance.groups {
        for &g in groups {
            uncovered_in[g] += 1;
        }
    }
    let mut search = Search {
        instance,
        holders,
        count: vec![0; instance.elements],
        uncovered: instance.elements,
        uncovered_in,
        widest: instance
            .candidates
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .max(1),
        chosen: Vec::new(),
        nodes: 0,
        budget,
    };
    match search.run(limit) {
        Some(true) => Some(Some(search.chosen)),
        Some(false) => Some(None),
        None => None,
    }
}

struct Search<'a> {
    instance: &'a CoverInstance<'a>,
    holders: Vec<Vec<usize>>,
    count: Vec<u32>,
    uncovered: usize,
    uncovered_in: Vec<usize>,
    widest: usize,
    chosen: Vec<usize>,
    nodes: usize,
    budget: usize,
}

impl Search<'_> {
    /// Keeps `chosen` as the cover when it finds one.
    fn run(&mut self, left: usize) -> Option<bool> {
        self.nodes += 1;
        if self.nodes > self.budget {
            return None;
        }
        if self.uncovered == 0 {
            return Some(true);
        }
        // Each candidate covers at most `widest` elements and one per group.
        let group_bound = self.uncovered_in.iter().copied().max().unwrap_or(0);
        if left == 0 || self.uncovered > left * self.widest || group_bound > left {
            return Some(false);
        }
        // The uncovered element with the fewest candidates: one of them is in any cover.
        let e = (0..self.count.len())
            .filter(|&e| self.count[e] == 0)
            .min_by_key(|&e| self.holders[e].len())
            .expect("something is uncovered");
        let holders = std::mem::take(&mut self.holders[e]);
        let mut unknown = false;
        let mut found = false;
        for &c in &holders {
            self.apply(c, true);
            match self.run(left - 1) {
                Some(true) => {
                    found = true;
                    break;
                }
                Some(false) => {}
                None => unknown = true,
            }
            self.apply(c, false);
            if self.nodes > self.budget {
                break;
            }
        }
        self.holders[e] = holders;
        if found {
            Some(true)
        } else if unknown || self.nodes > self.budget {
            None
        } else {
            Some(false)
        }
    }

    fn apply(&mut self, c: usize, add: bool) {
        for &e in &self.instance.candidates[c] {
            let group = self.instance.groups.map(|g| g[e]);
            if add {
                self.count[e] += 1;
                if self.count[e] == 1 {
                    self.uncovered -= 1;
                    if let Some(g) = group {
                        self.uncovered_in[g] -= 1;
                    }
                }
            } else {
                self.count[e] -= 1;
                if self.count[e] == 0 {
                    self.uncovered += 1;
                    if let Some(g) = group {
                        self.uncovered_in[g] += 1;
                    }
                }
            }
        }
        if add {
            self.chosen.push(c);
        } else {
            self.chosen.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_smallest_cover_and_proves_smaller_ones_impossible() {
        // Elements 0..6; the best cover takes sets 0 and 3.
        let sets = vec![
            vec![0, 1, 2],
            vec![0, 3],
            vec![1, 4],
            vec![3, 4, 5],
            vec![2, 5],
        ];
        let instance = CoverInstance {
            candidates: &sets,
            elements: 6,
            groups: None,
        };
        let cover = cover_within(&instance, 2, 10_000).unwrap().unwrap();
        let mut covered: Vec<usize> = cover.iter().flat_map(|&c| sets[c].clone()).collect();
        covered.sort();
        covered.dedup();
        assert_eq!(covered, (0..6).collect::<Vec<_>>());
        assert_eq!(cover_within(&instance, 1, 10_000), Some(None));
        assert_eq!(cover_within(&instance, 2, 1), None, "out of budget");
    }
}
