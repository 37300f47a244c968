//! Covers of the required tuples by rows: the first-fit merge, a local search for smaller
//! covers, and an exhaustive search that proves no smaller cover exists on small instances.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use space::Literal;

use super::{Instance, Row};
use crate::Error;

/// The local search's moves per attempt at a smaller cover.
const MOVES: usize = 20_000;
/// Probability of a random move instead of the best one (escapes plateaus).
const NOISE: f64 = 0.2;
/// The exhaustive search runs only over at most this many candidate rows and tuples, and
/// gives up (unknown) after this many nodes.
const EXACT_ROWS: usize = 4096;
const EXACT_TUPLES: usize = 2048;
const EXACT_NODES: usize = 300_000;

/// The paper's merge as a first fit: each tuple (largest interaction first) joins the first
/// partial row it agrees with that the constraints still allow, or starts a new one; partial
/// rows are then completed with the fewest selected options.
pub(super) fn first_fit(instance: &Instance) -> Result<Vec<Row>, Error> {
    let n = instance.options.len();
    let mut partial: Vec<Vec<Option<u32>>> = Vec::new();
    for (i, values) in &instance.tuples {
        let positions = &instance.interactions[*i];
        let fits = |p: &Vec<Option<u32>>| {
            positions
                .iter()
                .zip(values)
                .all(|(q, v)| p[*q].is_none_or(|x| x == *v))
                && {
                    let mut merged = p.clone();
                    for (q, v) in positions.iter().zip(values) {
                        merged[*q] = Some(*v);
                    }
                    instance.valid.allows(&instance.literals(&merged))
                }
        };
        let k = match partial.iter().position(fits) {
            Some(k) => k,
            None => {
                partial.push(vec![None; n]);
                partial.len() - 1
            }
        };
        for (q, v) in positions.iter().zip(values) {
            partial[k][*q] = Some(*v);
        }
    }
    partial.iter().map(|p| complete(instance, p)).collect()
}

/// A partial row completed with the values of the valid configuration that has the fewest
/// selected options among those agreeing with it.
fn complete(instance: &Instance, partial: &[Option<u32>]) -> Result<Row, Error> {
    let valid = instance.valid;
    let mut bdd = valid.bdd().clone();
    for l in instance.literals(partial) {
        bdd = bdd.and(&valid.literal(l));
    }
    let config = valid.extreme_in(&bdd, false).ok_or_else(|| {
        Error::Space(space::Error::Unsatisfiable(
            "a partial configuration the constraints allowed has no completion".into(),
        ))
    })?;
    Ok(instance
        .options
        .iter()
        .map(|o| config.0[o.index()])
        .collect())
}

/// How many rows cover each tuple, and the uncovered tuples (with their positions in the
/// list, for constant-time removal).
struct Coverage {
    count: Vec<u32>,
    uncovered: Vec<usize>,
    at: Vec<usize>,
}

impl Coverage {
    fn new(instance: &Instance, rows: &[Row]) -> Coverage {
        let t = instance.tuples.len();
        let mut c = Coverage {
            count: vec![0; t],
            uncovered: Vec::new(),
            at: vec![usize::MAX; t],
        };
        for row in rows {
            for i in 0..instance.interactions.len() {
                if let Some(k) = instance.covered(i, row) {
                    c.count[k] += 1;
                }
            }
        }
        for k in 0..t {
            if c.count[k] == 0 {
                c.at[k] = c.uncovered.len();
                c.uncovered.push(k);
            }
        }
        c
    }

    fn add(&mut self, k: usize) {
        self.count[k] += 1;
        if self.count[k] == 1 {
            let pos = self.at[k];
            let last = *self.uncovered.last().expect("k is uncovered");
            self.uncovered.swap_remove(pos);
            if last != k {
                self.at[last] = pos;
            }
            self.at[k] = usize::MAX;
        }
    }

    fn remove(&mut self, k: usize) {
        self.count[k] -= 1;
        if self.count[k] == 0 {
            self.at[k] = self.uncovered.len();
            self.uncovered.push(k);
        }
    }
}

/// Looks for covers with fewer rows than `rows` by local search: drop the row whose tuples are
/// covered most often elsewhere, then repair by moving rows onto uncovered tuples (the best
/// move, or with probability [`NOISE`] a random one) until nothing is uncovered or the budget
/// is spent, down to `floor` rows (a lower bound). Returns the smallest cover found.
pub(super) fn improve(instance: &Instance, mut rows: Vec<Row>, floor: usize) -> Vec<Row> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x6b6e6f6273);
    while rows.len() > floor {
        let mut attempt = rows.clone();
        let coverage = Coverage::new(instance, &attempt);
        // The row whose removal uncovers the fewest tuples.
        let loss = |row: &Row| {
            (0..instance.interactions.len())
                .filter(|&i| {
                    instance
                        .covered(i, row)
                        .is_some_and(|k| coverage.count[k] == 1)
                })
                .count()
        };
        let drop = (0..attempt.len())
            .min_by_key(|&j| loss(&attempt[j]))
            .expect("rows");
        attempt.remove(drop);
        match repair(instance, attempt, &mut rng) {
            Some(smaller) => rows = smaller,
            None => break,
        }
    }
    rows
}

/// Moves rows onto uncovered tuples until all are covered (`Some`) or the budget is spent.
fn repair(instance: &Instance, mut rows: Vec<Row>, rng: &mut ChaCha8Rng) -> Option<Vec<Row>> {
    let mut coverage = Coverage::new(instance, &rows);
    for _ in 0..MOVES {
        if coverage.uncovered.is_empty() {
            return Some(rows);
        }
        let k = coverage.uncovered[rng.gen_range(0..coverage.uncovered.len())];
        let (i, values) = &instance.tuples[k];
        let positions = &instance.interactions[*i];
        // Each row changed to cover the tuple, scored by tuples gained minus tuples lost.
        let mut moves: Vec<(i64, usize, Row)> = Vec::new();
        for (j, row) in rows.iter().enumerate() {
            let mut new = row.clone();
            for (p, v) in positions.iter().zip(values) {
                new[*p] = *v;
            }
            if !instance.row_allowed(&new) {
                continue;
            }
            let mut gain = 0i64;
            for x in 0..instance.interactions.len() {
                let (before, after) = (instance.covered(x, row), instance.covered(x, &new));
                if before == after {
                    continue;
                }
                if let Some(b) = before
                    && coverage.count[b] == 1
                {
                    gain -= 1;
                }
                if let Some(a) = after
                    && coverage.count[a] == 0
                {
                    gain += 1;
                }
            }
            moves.push((gain, j, new));
        }
        if moves.is_empty() {
            continue;
        }
        let pick = if rng.gen_bool(NOISE) {
            rng.gen_range(0..moves.len())
        } else {
            let best = moves.iter().map(|m| m.0).max().expect("moves");
            let ties: Vec<usize> = (0..moves.len()).filter(|&m| moves[m].0 == best).collect();
            ties[rng.gen_range(0..ties.len())]
        };
        let (_, j, new) = moves.swap_remove(pick);
        for x in 0..instance.interactions.len() {
            if let Some(b) = instance.covered(x, &rows[j]) {
                coverage.remove(b);
            }
            if let Some(a) = instance.covered(x, &new) {
                coverage.add(a);
            }
        }
        rows[j] = new;
    }
    coverage.uncovered.is_empty().then_some(rows)
}

/// Whether `n` rows can cover every required tuple: an exhaustive branch and bound over the
/// valid rows (each level covers the uncovered tuple with the fewest rows that cover it;
/// a branch ends when some interaction has more uncovered tuples than rows left, since a row
/// covers one tuple per interaction). `None` when the instance is too large or the search
/// runs out of budget.
pub(super) fn exists(instance: &Instance, n: usize) -> Option<bool> {
    if instance.tuples.len() > EXACT_TUPLES {
        return None;
    }
    let candidates = valid_rows(instance, EXACT_ROWS)?;
    let covers: Vec<Vec<usize>> = candidates
        .iter()
        .map(|row| {
            (0..instance.interactions.len())
                .filter_map(|i| instance.covered(i, row))
                .collect()
        })
        .collect();
    let groups: Vec<usize> = instance.tuples.iter().map(|(i, _)| *i).collect();
    let problem = space::sampling::CoverInstance {
        candidates: &covers,
        elements: instance.tuples.len(),
        groups: Some(&groups),
    };
    space::sampling::cover_within(&problem, n, EXACT_NODES).map(|found| found.is_some())
}

/// Every row of relevant values the constraints allow, if there are at most `limit`.
fn valid_rows(instance: &Instance, limit: usize) -> Option<Vec<Row>> {
    let n = instance.options.len();
    let mut out = Vec::new();
    let mut prefix: Vec<Literal> = Vec::with_capacity(n);
    // Depth-first over the options, pruning prefixes the constraints forbid.
    fn walk(
        instance: &Instance,
        prefix: &mut Vec<Literal>,
        out: &mut Vec<Row>,
        limit: usize,
    ) -> bool {
        if !instance.valid.allows(prefix) {
            return true;
        }
        let p = prefix.len();
        if p == instance.options.len() {
            out.push(prefix.iter().map(|l| l.1).collect());
            return out.len() <= limit;
        }
        for v in 0..instance.arity[p] {
            prefix.push((instance.options[p], v));
            let ok = walk(instance, prefix, out, limit);
            prefix.pop();
            if !ok {
                return false;
            }
        }
        true
    }
    walk(instance, &mut prefix, &mut out, limit).then_some(out)
}
