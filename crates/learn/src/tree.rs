//! CART regression trees (with a grid search over depth × leaf size) and random forests.
//!
//! Splits minimise the squared error: at each node, for each option tried, the node's
//! configurations are summed per value of the option, the values are scanned in sorted
//! order, and every boundary between two values present in the node is a candidate
//! threshold (their midpoint). Options of configurable systems take few distinct values, so
//! a level of the tree costs O(options × rows) with no sorting at all.
//!
//! A tree grown without a depth limit, cut at depth d, is exactly the tree grown with limit
//! d (a split never depends on the limit), so every node keeps its mean and the grid search
//! grows one tree per leaf size and reads all depths off it.
//!
//! Random forests grow `trees` trees, each on a bootstrap sample of the training
//! configurations, trying `mtry` options drawn at random at each split (all by default:
//! bagged trees); the prediction is the trees' mean. Everything random comes from one
//! seeded ChaCha8 generator.
//!
//! Gradient boosting (`boost`) adds shallow trees fitted to the residuals, each shrunk by
//! the learning rate; depth × rounds are tuned by cross-validation, every round count of a
//! depth read off one run.

use model::{Node, Tree};
use rand::Rng;
use rand::SeedableRng;
use rand::seq::index::sample as sample_indices;
use rand_chacha::ChaCha8Rng;

use crate::Target;
use crate::cv;
use crate::fitted::Fitted;
use crate::learner::{BoostSettings, CartSettings, ForestSettings};

/// Depths and leaf sizes of the CART grid search (`None` = no depth limit).
pub const DEPTHS: [Option<usize>; 6] = [Some(2), Some(3), Some(4), Some(6), Some(8), None];
pub const LEAVES: [usize; 4] = [1, 2, 3, 5];

/// A node of a grown tree, compact for fast prediction: a split sends a row to `left` when
/// its value of `option` is at most `value`, else to `left + 1`; a leaf (`option == LEAF`)
/// predicts `value`.
#[derive(Clone, Copy, Debug)]
struct Packed {
    option: u32,
    left: u32,
    value: f64,
}

const LEAF: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct GrownTree {
    nodes: Vec<Packed>,
    /// Per node: the mean of its training targets (its prediction when the tree is cut
    /// there) and, for splits, how much the split reduced the squared error.
    mean: Vec<f64>,
    gain: Vec<f64>,
}

impl GrownTree {
    pub fn predict(&self, row: &[f64]) -> f64 {
        let mut i = 0;
        loop {
            let n = self.nodes[i];
            if n.option == LEAF {
                return n.value;
            }
            i = n.left as usize + (row[n.option as usize] > n.value) as usize;
        }
    }

    /// Adds `share ×` this tree's prediction of each row to `out`. Four rows descend at once:
    /// a descent is a chain of dependent loads, and independent chains overlap.
    pub fn add_predictions(&self, rows: &[&[f64]], share: f64, out: &mut [f64]) {
        let nodes = &self.nodes;
        let mut chunks = rows.chunks_exact(4);
        let mut k = 0;
        for chunk in &mut chunks {
            let mut at = [0usize; 4];
            loop {
                let mut moved = false;
                for lane in 0..4 {
                    let n = nodes[at[lane]];
                    if n.option != LEAF {
                        at[lane] =
                            n.left as usize + (chunk[lane][n.option as usize] > n.value) as usize;
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
            for lane in 0..4 {
                out[k + lane] += share * nodes[at[lane]].value;
            }
            k += 4;
        }
        for row in chunks.remainder() {
            out[k] += share * self.predict(row);
            k += 1;
        }
    }

    /// The prediction of this tree cut at `depth` splits.
    pub fn predict_to_depth(&self, row: &[f64], depth: usize) -> f64 {
        let mut i = 0;
        for _ in 0..depth {
            let n = self.nodes[i];
            if n.option == LEAF {
                return n.value;
            }
            i = n.left as usize + (row[n.option as usize] > n.value) as usize;
        }
        self.mean[i]
    }

    pub fn leaves(&self) -> usize {
        self.nodes.iter().filter(|n| n.option == LEAF).count()
    }

    /// The tree with every value multiplied by `s` (gains, being squared errors, by s²).
    pub fn scaled(&self, s: f64) -> GrownTree {
        GrownTree {
            nodes: self
                .nodes
                .iter()
                .map(|n| Packed {
                    value: if n.option == LEAF {
                        n.value * s
                    } else {
                        n.value
                    },
                    ..*n
                })
                .collect(),
            mean: self.mean.iter().map(|m| m * s).collect(),
            gain: self.gain.iter().map(|g| g * s * s).collect(),
        }
    }

    pub fn to_tree(&self, names: &[String]) -> Tree {
        Tree {
            nodes: self
                .nodes
                .iter()
                .zip(&self.gain)
                .map(|(n, gain)| {
                    if n.option == LEAF {
                        Node::Leaf { value: n.value }
                    } else {
                        Node::Split {
                            option: names[n.option as usize].clone(),
                            threshold: n.value,
                            left: n.left as usize,
                            right: n.left as usize + 1,
                            gain: Some(*gain),
                        }
                    }
                })
                .collect(),
        }
    }
}

/// How to grow one tree.
#[derive(Clone, Copy, Debug)]
pub struct Growth {
    pub max_depth: Option<usize>,
    pub min_leaf: usize,
    /// Options tried per split (all when `None`).
    pub mtry: Option<usize>,
}

/// Training data of trees: each option's values as codes into its sorted distinct values
/// (`codes[j][i]` for training configuration i), and the targets. Configuration options
/// take few distinct values, so a split search over per-value sums is cheap.
pub struct Columns {
    pub codes: Vec<Vec<u32>>,
    pub levels: Vec<Vec<f64>>,
    pub y: Vec<f64>,
}

impl Columns {
    /// The target's configurations at the given positions.
    pub fn of(target: &Target, positions: &[usize]) -> Columns {
        let table = target.table;
        let mut codes = Vec::with_capacity(table.width());
        let mut levels = Vec::with_capacity(table.width());
        for j in 0..table.width() {
            let values: Vec<f64> = positions
                .iter()
                .map(|&p| table.rows[target.rows[p]][j])
                .collect();
            let mut distinct = values.clone();
            distinct.sort_by(f64::total_cmp);
            distinct.dedup();
            codes.push(
                values
                    .iter()
                    .map(|v| distinct.partition_point(|d| d < v) as u32)
                    .collect(),
            );
            levels.push(distinct);
        }
        Columns {
            codes,
            levels,
            y: positions.iter().map(|&p| target.y[p]).collect(),
        }
    }
}

/// Grows a tree on the training configurations listed in `rows`, each with a weight: how
/// many times a bootstrap sample drew it, or 1 (weighted configurations give exactly the
/// tree grown on the sample with its repetitions, with less work).
///
/// At a node, for each option tried, the weights and weighted targets are summed per value
/// of the option; scanning the values in order, every boundary between two values present
/// in the node is a candidate threshold (their midpoint), scored by the reduction of the
/// squared error. The node's configurations are then partitioned in place.
pub fn grow(
    data: &Columns,
    weight: &[f64],
    mut rows: Vec<u32>,
    growth: Growth,
    rng: &mut ChaCha8Rng,
) -> GrownTree {
    let y = &data.y;
    let width = data.codes.len();
    let n = rows.len();
    let min_leaf = growth.min_leaf.max(1) as f64;
    let most_levels = data.levels.iter().map(Vec::len).max().unwrap_or(0);
    let mut level_weight = vec![0.0; most_levels];
    let mut level_sum = vec![0.0; most_levels];
    let mut scratch = vec![0.0; 8 * most_levels];
    let mut options: Vec<usize> = (0..width).collect();
    let leaf = |value: f64| Packed {
        option: LEAF,
        left: 0,
        value,
    };
    let mut tree = GrownTree {
        nodes: vec![leaf(0.0)],
        mean: vec![0.0],
        gain: vec![0.0],
    };
    if n == 0 {
        return tree;
    }
    // (node, range of `rows`, depth)
    let mut stack = vec![(0usize, 0usize, n, 0usize)];
    while let Some((node, lo, hi, depth)) = stack.pop() {
        let (total, sum, sum2) = rows[lo..hi].iter().fold((0.0, 0.0, 0.0), |(w, s, s2), &i| {
            let (wi, v) = (weight[i as usize], y[i as usize]);
            (w + wi, s + wi * v, s2 + wi * v * v)
        });
        let mean = sum / total;
        let sse = sum2 - sum * mean;
        tree.mean[node] = mean;
        let splittable = width > 0
            && hi - lo >= 2
            && total >= 2.0 * min_leaf
            && growth.max_depth.is_none_or(|d| depth < d)
            && sse > 1e-12 * sum2.max(1e-300);
        // option, code of the last value going left, threshold, gain
        let mut best: Option<(usize, u32, f64, f64)> = None;
        if splittable {
            options.clear();
            match growth.mtry {
                Some(k) if k < width => options.extend(sample_indices(rng, width, k).iter()),
                _ => options.extend(0..width),
            }
            let base = sum * mean;
            for &j in &options {
                let levels = &data.levels[j];
                let codes = &data.codes[j];
                let count = levels.len();
                level_sums(
                    codes,
                    weight,
                    y,
                    &rows[lo..hi],
                    (total, sum),
                    (&mut level_weight[..count], &mut level_sum[..count]),
                    &mut scratch,
                );
                let (mut left_weight, mut left_sum) = (0.0, 0.0);
                let mut previous: Option<usize> = None;
                for c in 0..count {
                    if level_weight[c] == 0.0 {
                        continue;
                    }
                    if let Some(p) = previous
                        && left_weight >= min_leaf
                        && total - left_weight >= min_leaf
                    {
                        let right_sum = sum - left_sum;
                        let gain = left_sum * left_sum / left_weight
                            + right_sum * right_sum / (total - left_weight)
                            - base;
                        if best.is_none_or(|(_, _, _, g)| gain > g) {
                            best = Some((j, p as u32, 0.5 * (levels[p] + levels[c]), gain));
                        }
                    }
                    left_weight += level_weight[c];
                    left_sum += level_sum[c];
                    previous = Some(c);
                }
            }
        }
        let Some((option, last_left, threshold, gain)) =
            best.filter(|(_, _, _, g)| *g > 1e-12 * sse.max(1e-300))
        else {
            tree.nodes[node] = leaf(mean);
            continue;
        };
        // Partition the node's configurations in place: left ones first.
        let codes = &data.codes[option];
        let slice = &mut rows[lo..hi];
        let mut mid = 0;
        for k in 0..slice.len() {
            if codes[slice[k] as usize] <= last_left {
                slice.swap(mid, k);
                mid += 1;
            }
        }
        let left = tree.nodes.len();
        tree.nodes.extend([leaf(0.0), leaf(0.0)]);
        tree.mean.extend([0.0, 0.0]);
        tree.gain.extend([0.0, 0.0]);
        tree.nodes[node] = Packed {
            option: option as u32,
            left: left as u32,
            value: threshold,
        };
        tree.gain[node] = gain;
        stack.push((left + 1, lo + mid, hi, depth + 1));
        stack.push((left, lo, lo + mid, depth + 1));
    }
    tree
}

/// Per value of an option, the weight and weighted target sum of the given configurations.
/// The obvious loop `w[code] += …` waits on its own stores when consecutive configurations
/// share a value (always, with two values), so binary options sum the second value in
/// registers and take the first as the rest, and other options spread the sums over four
/// interleaved copies.
fn level_sums(
    codes: &[u32],
    weight: &[f64],
    y: &[f64],
    rows: &[u32],
    (total, sum): (f64, f64),
    (level_weight, level_sum): (&mut [f64], &mut [f64]),
    scratch: &mut [f64],
) {
    let count = level_weight.len();
    if count == 2 {
        let (mut w1, mut s1) = (0.0, 0.0);
        for &i in rows {
            let i = i as usize;
            let on = codes[i] as f64;
            let w = weight[i] * on;
            w1 += w;
            s1 += w * y[i];
        }
        level_weight[0] = total - w1;
        level_sum[0] = sum - s1;
        level_weight[1] = w1;
        level_sum[1] = s1;
        return;
    }
    let (w4, s4) = scratch[..8 * count].split_at_mut(4 * count);
    w4.fill(0.0);
    s4.fill(0.0);
    for (k, &i) in rows.iter().enumerate() {
        let i = i as usize;
        let slot = (k & 3) * count + codes[i] as usize;
        w4[slot] += weight[i];
        s4[slot] += weight[i] * y[i];
    }
    for c in 0..count {
        level_weight[c] = w4[c] + w4[count + c] + w4[2 * count + c] + w4[3 * count + c];
        level_sum[c] = s4[c] + s4[count + c] + s4[2 * count + c] + s4[3 * count + c];
    }
}

/// One tree on all training configurations.
pub fn cart(target: &Target, depth: Option<usize>, leaf: usize) -> Fitted {
    let all: Vec<usize> = (0..target.rows.len()).collect();
    let data = Columns::of(target, &all);
    let growth = Growth {
        max_depth: depth,
        min_leaf: leaf,
        mtry: None,
    };
    let weight = vec![1.0; all.len()];
    let tree = grow(
        &data,
        &weight,
        (0..all.len() as u32).collect(),
        growth,
        &mut ChaCha8Rng::seed_from_u64(0),
    );
    Fitted::forest(vec![tree], target.log)
}

/// Held-out predictions of every (leaf, depth) of the grid: `out[leaf][depth][i]`.
pub fn grid_held_out(target: &Target, train: &[usize], test: &[usize]) -> Vec<Vec<Vec<f64>>> {
    let data = Columns::of(target, train);
    let weight = vec![1.0; train.len()];
    LEAVES
        .iter()
        .map(|&leaf| {
            let growth = Growth {
                max_depth: None,
                min_leaf: leaf,
                mtry: None,
            };
            let tree = grow(
                &data,
                &weight,
                (0..train.len() as u32).collect(),
                growth,
                &mut ChaCha8Rng::seed_from_u64(0),
            );
            DEPTHS
                .iter()
                .map(|d| {
                    test.iter()
                        .map(|&p| {
                            let row = &target.table.rows[target.rows[p]];
                            target.back(tree.predict_to_depth(row, d.unwrap_or(usize::MAX)))
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// CART with depth and leaf size fixed or tuned by cross-validation; returns the model and
/// the (depth, leaf) used.
pub fn cart_tuned(
    target: &Target,
    settings: &CartSettings,
    seed: u64,
) -> (Fitted, Option<usize>, usize) {
    if !settings.tune {
        return (
            cart(target, settings.depth, settings.leaf),
            settings.depth,
            settings.leaf,
        );
    }
    let m = target.rows.len();
    let mut errors = vec![vec![0.0; DEPTHS.len()]; LEAVES.len()];
    if m >= 2 {
        for fold in cv::folds(m, settings.folds, seed) {
            let train = cv::complement(m, &fold);
            let actual: Vec<f64> = fold.iter().map(|&p| target.actual[p]).collect();
            for (l, by_depth) in grid_held_out(target, &train, &fold).iter().enumerate() {
                for (d, predicted) in by_depth.iter().enumerate() {
                    errors[l][d] += cv::relative_error_sum(predicted, &actual);
                }
            }
        }
    }
    let mut best = (0, 0);
    for l in 0..LEAVES.len() {
        for d in 0..DEPTHS.len() {
            if errors[l][d] < errors[best.0][best.1] {
                best = (l, d);
            }
        }
    }
    let (depth, leaf) = (DEPTHS[best.1], LEAVES[best.0]);
    (cart(target, depth, leaf), depth, leaf)
}

/// A random forest on the training positions `train` of the target.
pub fn forest_on(target: &Target, train: &[usize], settings: &ForestSettings, seed: u64) -> Fitted {
    let width = target.table.width();
    let mtry = settings.mtry.unwrap_or(width).clamp(1, width.max(1));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let growth = Growth {
        max_depth: None,
        min_leaf: settings.leaf,
        mtry: Some(mtry),
    };
    let data = Columns::of(target, train);
    let m = train.len();
    let mut weight = vec![0.0; m];
    let trees = (0..settings.trees)
        .map(|_| {
            weight.iter_mut().for_each(|w| *w = 0.0);
            for _ in 0..m {
                weight[rng.gen_range(0..m)] += 1.0;
            }
            let drawn: Vec<u32> = (0..m as u32)
                .filter(|&i| weight[i as usize] > 0.0)
                .collect();
            grow(&data, &weight, drawn, growth, &mut rng)
        })
        .collect();
    Fitted::forest(trees, target.log)
}

pub fn forest(target: &Target, settings: &ForestSettings, seed: u64) -> Fitted {
    let all: Vec<usize> = (0..target.rows.len()).collect();
    forest_on(target, &all, settings, seed)
}

/// Depths and round counts of the boosting grid search.
pub const BOOST_DEPTHS: [usize; 3] = [2, 3, 4];
pub const BOOST_ROUNDS: [usize; 4] = [25, 50, 100, 200];

/// Gradient boosting on the squared error: each round fits a tree of depth `depth` to the
/// residuals and adds `rate` times it. Returns the initial value (the mean) and the scaled
/// trees, whose sum after k rounds is the k-round model.
pub fn boost_on(
    target: &Target,
    train: &[usize],
    depth: usize,
    rounds: usize,
    rate: f64,
) -> (f64, Vec<GrownTree>) {
    let mut data = Columns::of(target, train);
    let y = data.y.clone();
    let n = y.len();
    let init = y.iter().sum::<f64>() / n as f64;
    let mut fitted = vec![init; n];
    let weight = vec![1.0; n];
    let growth = Growth {
        max_depth: Some(depth),
        min_leaf: 1,
        mtry: None,
    };
    let rows: Vec<&[f64]> = train
        .iter()
        .map(|&p| target.table.rows[target.rows[p]].as_slice())
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut trees = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        for i in 0..n {
            data.y[i] = y[i] - fitted[i];
        }
        let all: Vec<u32> = (0..n as u32).collect();
        let tree = grow(&data, &weight, all, growth, &mut rng).scaled(rate);
        for (f, row) in fitted.iter_mut().zip(&rows) {
            *f += tree.predict(row);
        }
        trees.push(tree);
    }
    (init, trees)
}

/// Held-out predictions of every (depth, rounds) of the boosting grid:
/// `out[depth][rounds][i]`. One run per depth gives every round count on the way.
pub fn boost_grid_held_out(
    target: &Target,
    train: &[usize],
    test: &[usize],
    rate: f64,
) -> Vec<Vec<Vec<f64>>> {
    let most = *BOOST_ROUNDS.last().expect("round counts");
    BOOST_DEPTHS
        .iter()
        .map(|&depth| {
            let (init, trees) = boost_on(target, train, depth, most, rate);
            let rows: Vec<&[f64]> = test
                .iter()
                .map(|&p| target.table.rows[target.rows[p]].as_slice())
                .collect();
            let mut raw = vec![init; test.len()];
            let mut out = Vec::new();
            for (k, tree) in trees.iter().enumerate() {
                tree.add_predictions(&rows, 1.0, &mut raw);
                if BOOST_ROUNDS.contains(&(k + 1)) {
                    out.push(raw.iter().map(|v| target.back(*v)).collect());
                }
            }
            out
        })
        .collect()
}

/// Boosting with depth and rounds fixed or tuned by cross-validation; returns the model
/// and the (depth, rounds) used.
pub fn boost(target: &Target, settings: &BoostSettings, seed: u64) -> (Fitted, usize, usize) {
    let (depth, rounds) = if settings.tune {
        let m = target.rows.len();
        let mut errors = vec![vec![0.0; BOOST_ROUNDS.len()]; BOOST_DEPTHS.len()];
        if m >= 2 {
            for fold in cv::folds(m, settings.folds, seed) {
                let train = cv::complement(m, &fold);
                let actual: Vec<f64> = fold.iter().map(|&p| target.actual[p]).collect();
                let grid = boost_grid_held_out(target, &train, &fold, settings.rate);
                for (d, by_rounds) in grid.iter().enumerate() {
                    for (r, predicted) in by_rounds.iter().enumerate() {
                        errors[d][r] += cv::relative_error_sum(predicted, &actual);
                    }
                }
            }
        }
        let mut best = (0, 0);
        for d in 0..BOOST_DEPTHS.len() {
            for r in 0..BOOST_ROUNDS.len() {
                if errors[d][r] < errors[best.0][best.1] {
                    best = (d, r);
                }
            }
        }
        (BOOST_DEPTHS[best.0], BOOST_ROUNDS[best.1])
    } else {
        (settings.depth, settings.rounds)
    };
    let all: Vec<usize> = (0..target.rows.len()).collect();
    (
        boosted(target, &all, depth, rounds, settings.rate),
        depth,
        rounds,
    )
}

/// A boosted model as terms + mean of trees: the intercept is the initial value, and the
/// sum of T trees is the mean of the trees scaled by T.
pub fn boosted(target: &Target, train: &[usize], depth: usize, rounds: usize, rate: f64) -> Fitted {
    let (init, trees) = boost_on(target, train, depth, rounds, rate);
    let t = trees.len() as f64;
    Fitted {
        terms: vec![(crate::data::TermSpec::default(), init)],
        trees: trees.iter().map(|tr| tr.scaled(t)).collect(),
        log: target.log,
    }
}
