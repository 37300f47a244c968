//! t-wise covering arrays: a greedy construction in the spirit of AETG, on the BDD.
//!
//! A *t-tuple* is t distinct options with one value each; it is *valid* when some valid
//! configuration contains it. Each new configuration starts from the first tuple not yet
//! covered (proving it invalid instead, if no valid configuration contains it) and then fixes
//! the remaining options one by one in a seeded random order, each to the feasible value that
//! covers the most still-uncovered tuples with the options fixed so far. Feasibility is a BDD
//! cofactor, so every configuration is valid by construction and every tuple ends up either
//! covered or proven invalid: coverage is complete.

use biodivine_lib_bdd::Bdd;
use rand::Rng;
use rand::seq::SliceRandom;

use crate::Error;
use crate::space::{Configuration, OptionId};
use crate::valid::{Literal, ValidConfigurations};

/// How many valid t-tuples exist and how many of them a sample covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TupleCoverage {
    pub t: usize,
    pub valid_tuples: u64,
    pub covered: u64,
    /// Tuples no valid configuration contains (excluded from `valid_tuples`).
    pub invalid_tuples: u64,
}

impl TupleCoverage {
    pub fn percent(&self) -> f64 {
        if self.valid_tuples == 0 {
            100.0
        } else {
            100.0 * self.covered as f64 / self.valid_tuples as f64
        }
    }
}

/// Literal numbering: option `o` with value `v` is `offset[o] + v`.
struct Literals {
    offset: Vec<u32>,
    option_of: Vec<OptionId>,
}

impl Literals {
    fn new(valid: &ValidConfigurations) -> Self {
        let space = valid.space();
        let mut offset = Vec::new();
        let mut option_of = Vec::new();
        for id in space.ids() {
            offset.push(option_of.len() as u32);
            option_of.extend(std::iter::repeat_n(id, space.option(id).arity()));
        }
        Literals { offset, option_of }
    }

    fn len(&self) -> u64 {
        self.option_of.len() as u64
    }

    fn id(&self, (o, v): Literal) -> u32 {
        self.offset[o.index()] + v
    }

    fn literal(&self, id: u32) -> Literal {
        let o = self.option_of[id as usize];
        (o, id - self.offset[o.index()])
    }
}

/// A set of t-tuples of literal ids (ascending), as a dense bitset over `L^t` indices.
struct TupleSet {
    t: usize,
    l: u64,
    bits: Vec<u64>,
    /// Members containing each literal: lets the greedy skip literals with nothing left.
    per_literal: Vec<u32>,
}

impl TupleSet {
    fn new(t: usize, l: u64) -> Result<Self, Error> {
        let size = l
            .checked_pow(t as u32)
            .filter(|s| *s <= 1 << 34)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{t}-wise sampling over {l} option values is too large"
                ))
            })?;
        Ok(TupleSet {
            t,
            l,
            bits: vec![0; size.div_ceil(64) as usize],
            per_literal: vec![0; l as usize],
        })
    }

    fn index(&self, lits: &[u32]) -> u64 {
        lits.iter()
            .rev()
            .fold(0u64, |acc, x| acc * self.l + *x as u64)
    }

    fn decode(&self, mut idx: u64) -> Vec<u32> {
        (0..self.t)
            .map(|_| {
                let x = (idx % self.l) as u32;
                idx /= self.l;
                x
            })
            .collect()
    }

    fn contains(&self, lits: &[u32]) -> bool {
        let i = self.index(lits);
        self.bits[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    fn insert(&mut self, lits: &[u32]) {
        let i = self.index(lits);
        let w = &mut self.bits[(i / 64) as usize];
        if *w >> (i % 64) & 1 == 0 {
            *w |= 1 << (i % 64);
            lits.iter().for_each(|x| self.per_literal[*x as usize] += 1);
        }
    }

    /// Removes the tuple; true if it was present.
    fn remove(&mut self, lits: &[u32]) -> bool {
        let i = self.index(lits);
        let w = &mut self.bits[(i / 64) as usize];
        let was = *w >> (i % 64) & 1 == 1;
        if was {
            *w &= !(1 << (i % 64));
            lits.iter().for_each(|x| self.per_literal[*x as usize] -= 1);
        }
        was
    }

    /// The first member at or after word `*cursor` (which advances past empty words).
    fn first(&self, cursor: &mut usize) -> Option<Vec<u32>> {
        while *cursor < self.bits.len() {
            let w = self.bits[*cursor];
            if w != 0 {
                return Some(self.decode(*cursor as u64 * 64 + w.trailing_zeros() as u64));
            }
            *cursor += 1;
        }
        None
    }
}

/// Calls `f` with every t-tuple (ascending literal ids, distinct options) drawn from
/// `pool`, which must list literal ids in ascending order.
fn for_each_tuple(lits: &Literals, pool: &[u32], t: usize, f: &mut impl FnMut(&[u32])) {
    fn rec(
        lits: &Literals,
        pool: &[u32],
        t: usize,
        start: usize,
        cur: &mut Vec<u32>,
        f: &mut impl FnMut(&[u32]),
    ) {
        if cur.len() == t {
            f(cur);
            return;
        }
        for i in start..pool.len() {
            let x = pool[i];
            if let Some(last) = cur.last()
                && lits.option_of[*last as usize] == lits.option_of[x as usize]
            {
                continue;
            }
            cur.push(x);
            rec(lits, pool, t, i + 1, cur, f);
            cur.pop();
        }
    }
    rec(lits, pool, t, 0, &mut Vec::with_capacity(t), f);
}

fn config_literals(lits: &Literals, config: &Configuration) -> Vec<u32> {
    config
        .0
        .iter()
        .enumerate()
        .map(|(o, v)| lits.offset[o] + v)
        .collect()
}

/// Builds a covering array of strength `t` (1 ≤ t ≤ 3) and reports its coverage.
pub(crate) fn covering_array(
    valid: &ValidConfigurations,
    t: usize,
    rng: &mut impl Rng,
) -> Result<(Vec<Configuration>, TupleCoverage), Error> {
    let space = valid.space();
    if !(1..=3).contains(&t) {
        return Err(Error::Invalid(format!(
            "t-wise sampling supports t = 1, 2, 3, not {t}"
        )));
    }
    if t > space.len() {
        return Err(Error::Invalid(format!(
            "{t}-wise sampling needs at least {t} options; the space has {}",
            space.len()
        )));
    }
    let lits = Literals::new(valid);
    let all: Vec<u32> = (0..lits.len() as u32).collect();
    let mut pending = TupleSet::new(t, lits.len())?;
    for_each_tuple(&lits, &all, t, &mut |tuple| pending.insert(tuple));

    let mut configs = Vec::new();
    let (mut covered, mut invalid) = (0u64, 0u64);
    let mut cursor = 0usize;
    while let Some(seed) = pending.first(&mut cursor) {
        let seed_literals: Vec<Literal> = seed.iter().map(|x| lits.literal(*x)).collect();
        if !valid.allows(&seed_literals) {
            pending.remove(&seed);
            invalid += 1;
            continue;
        }
        let restricted = valid.cofactor(valid.bdd(), &seed_literals);
        // AETG: build a few candidates from different random orders, keep the best.
        let config = (0..CANDIDATES)
            .map(|_| extend_greedily(valid, &restricted, &lits, &pending, &seed_literals, rng))
            .map(|c| (count_pending(&lits, &pending, &c, t), c))
            .max_by_key(|(n, _)| *n)
            .map(|(_, c)| c)
            .expect("at least one candidate");
        for_each_tuple(&lits, &config_literals(&lits, &config), t, &mut |tuple| {
            if pending.remove(tuple) {
                covered += 1;
            }
        });
        configs.push(config);
    }
    // Every tuple was either covered or proven invalid: coverage is complete.
    Ok((
        configs,
        TupleCoverage {
            t,
            valid_tuples: covered,
            covered,
            invalid_tuples: invalid,
        },
    ))
}

/// Candidate configurations per step (AETG uses about 50; a few already get most of the gain).
const CANDIDATES: usize = 8;

fn count_pending(lits: &Literals, pending: &TupleSet, config: &Configuration, t: usize) -> u64 {
    let mut n = 0;
    for_each_tuple(lits, &config_literals(lits, config), t, &mut |tuple| {
        n += pending.contains(tuple) as u64
    });
    n
}

/// A valid configuration containing `seed`, fixing the other options greedily. Options are
/// fixed in BDD variable order, walking down `g` (the valid set restricted to the seed), so each
/// feasibility check is O(1); candidates differ by how ties between values are broken.
fn extend_greedily(
    valid: &ValidConfigurations,
    g: &Bdd,
    lits: &Literals,
    pending: &TupleSet,
    seed: &[Literal],
    rng: &mut impl Rng,
) -> Configuration {
    let space = valid.space();
    let mut node = g.root_pointer();
    let mut value: Vec<Option<u32>> = vec![None; space.len()];
    let mut fixed: Vec<u32> = Vec::with_capacity(space.len());
    for &(o, v) in seed {
        value[o.index()] = Some(v);
        fixed.push(lits.id((o, v)));
    }
    let t = pending.t;
    for o in valid.option_order() {
        if value[o.index()].is_some() {
            continue; // a seed literal: restricted away in `g`
        }
        let mut candidates: Vec<(u64, u32)> = (0..space.option(o).arity() as u32)
            .map(|v| (gain(pending, &fixed, lits.id((o, v)), t), v))
            .collect();
        candidates.shuffle(rng);
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        let (v, next) = candidates
            .iter()
            .find_map(|&(_, v)| {
                let next = valid.step(g, node, (o, v));
                (!next.is_zero()).then_some((v, next))
            })
            .expect("a satisfiable node has a feasible value for every option");
        node = next;
        value[o.index()] = Some(v);
        fixed.push(lits.id((o, v)));
    }
    let config = Configuration(value.into_iter().map(|v| v.expect("all fixed")).collect());
    debug_assert!(valid.is_valid(&config));
    config
}

/// Uncovered tuples made of literal `x` and t−1 of the already fixed literals.
fn gain(pending: &TupleSet, fixed: &[u32], x: u32, t: usize) -> u64 {
    if pending.per_literal[x as usize] == 0 {
        return 0;
    }
    match t {
        1 => pending.contains(&[x]) as u64,
        2 => fixed
            .iter()
            .filter(|a| pending.contains(&if **a < x { [**a, x] } else { [x, **a] }))
            .count() as u64,
        _ => {
            let mut n = 0;
            for (i, a) in fixed.iter().enumerate() {
                for b in &fixed[i + 1..] {
                    let mut key = [*a, *b, x];
                    key.sort_unstable();
                    n += pending.contains(&key) as u64;
                }
            }
            n
        }
    }
}

/// Coverage of a sample, computed independently of how it was built: every t-tuple is
/// checked for validity on the BDD and looked up among the sample's tuples.
pub fn tuple_coverage(
    valid: &ValidConfigurations,
    sample: &[Configuration],
    t: usize,
) -> Result<TupleCoverage, Error> {
    let lits = Literals::new(valid);
    let mut in_sample = TupleSet::new(t, lits.len())?;
    for c in sample {
        for_each_tuple(&lits, &config_literals(&lits, c), t, &mut |tuple| {
            in_sample.insert(tuple)
        });
    }
    let all: Vec<u32> = (0..lits.len() as u32).collect();
    let (mut valid_tuples, mut covered, mut invalid_tuples) = (0u64, 0u64, 0u64);
    for_each_tuple(&lits, &all, t, &mut |tuple| {
        let literals: Vec<Literal> = tuple.iter().map(|x| lits.literal(*x)).collect();
        if valid.allows(&literals) {
            valid_tuples += 1;
            covered += in_sample.contains(tuple) as u64;
        } else {
            invalid_tuples += 1;
        }
    });
    Ok(TupleCoverage {
        t,
        valid_tuples,
        covered,
        invalid_tuples,
    })
}

/// A lower bound on the size of any t-wise covering array of the space.
///
/// Options are grouped into *dimensions*: each alternative group is one dimension whose
/// values are its members, every other option is a dimension of its own. Within a set of t
/// dimensions, a configuration realises at most one combination of single-literal values, so
/// every valid such combination needs its own configuration; the bound is the largest number
/// of valid combinations over all sets of t dimensions. `None` when that is too costly to
/// compute (more than ~2 million combinations to check).
pub fn covering_lower_bound(valid: &ValidConfigurations, t: usize) -> Option<u64> {
    use crate::space::GroupKind;
    let space = valid.space();
    let mut in_group = vec![false; space.len()];
    let mut dims: Vec<Vec<Literal>> = Vec::new();
    for g in space
        .groups()
        .iter()
        .filter(|g| g.kind == GroupKind::Alternative)
    {
        if g.members.iter().any(|m| in_group[m.index()]) {
            continue;
        }
        for m in &g.members {
            in_group[m.index()] = true;
        }
        dims.push(g.members.iter().map(|m| (*m, 1)).collect());
    }
    for id in space.ids().filter(|id| !in_group[id.index()]) {
        dims.push(
            (0..space.option(id).arity() as u32)
                .map(|v| (id, v))
                .collect(),
        );
    }
    if t == 0 || t > dims.len() {
        return None;
    }
    // Budget check: Σ over t-sets of the product of dimension sizes.
    let sizes: Vec<u64> = dims.iter().map(|d| d.len() as u64).collect();
    let mut work = 0u64;
    let mut best = 0u64;
    let mut idx: Vec<usize> = (0..t).collect();
    let n = dims.len();
    loop {
        work += idx.iter().map(|&i| sizes[i]).product::<u64>();
        if work > 2_000_000 {
            return None;
        }
        // Count valid combinations of this dimension set.
        let mut count = 0u64;
        let mut choice = vec![0usize; t];
        'combos: loop {
            let literals: Vec<Literal> =
                idx.iter().zip(&choice).map(|(&d, &c)| dims[d][c]).collect();
            count += valid.allows(&literals) as u64;
            let mut k = t;
            loop {
                if k == 0 {
                    break 'combos;
                }
                k -= 1;
                choice[k] += 1;
                if choice[k] < dims[idx[k]].len() {
                    break;
                }
                choice[k] = 0;
            }
        }
        best = best.max(count);
        let mut k = t;
        while k > 0 && idx[k - 1] == n - t + k - 1 {
            k -= 1;
        }
        if k == 0 {
            return Some(best);
        }
        idx[k - 1] += 1;
        for j in k..t {
            idx[j] = idx[j - 1] + 1;
        }
    }
}
