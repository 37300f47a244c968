//! CART regression trees (with a grid search over depth × leaf size) and random forests.
//!
//! Splits minimise the squared error: at each node, for each option tried, the node's
//! configurations are scanned in order of the option's value and every boundary between
//! two distinct values is a candidate threshold (their midpoint). The order is computed once
//! and kept by a stable partition at every split ("pre-sorted" CART), so a level of the tree
//! costs O(options × rows).
//!
//! A tree grown without a depth limit, cut at depth d, is exactly the tree grown with limit
//! d (a split never depends on the limit), so every node keeps its mean and the grid search
//! grows one tree per leaf size and reads all depths off it.
//!
//! Random forests grow `trees` trees, each on a bootstrap sample of the training
//! configurations, trying `mtry` options drawn at random at each split (all by default:
//! bagged trees); the prediction is the trees' mean. Everything random comes from one
//! seeded ChaCha8 generator.

use model::{Node, Tree};
use rand::Rng;
use rand::SeedableRng;
use rand::seq::index::sample as sample_indices;
use rand_chacha::ChaCha8Rng;

use crate::Target;
use crate::cv;
use crate::fitted::Fitted;
use crate::learner::{CartSettings, ForestSettings};

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

/// Training data of trees, by option: `columns[j][i]` is option j's value in training
/// configuration i, `y[i]` its target.
pub struct Columns {
    pub columns: Vec<Vec<f64>>,
    pub y: Vec<f64>,
}

impl Columns {
    /// The target's configurations at the given positions.
    pub fn of(target: &Target, positions: &[usize]) -> Columns {
        let table = target.table;
        Columns {
            columns: (0..table.width())
                .map(|j| {
                    positions
                        .iter()
                        .map(|&p| table.rows[target.rows[p]][j])
                        .collect()
                })
                .collect(),
            y: positions.iter().map(|&p| target.y[p]).collect(),
        }
    }

    /// Per option, the configurations sorted by the option's value (stable by index).
    pub fn presort(&self) -> Vec<Vec<u32>> {
        self.columns
            .iter()
            .map(|c| {
                let mut o: Vec<u32> = (0..c.len() as u32).collect();
                o.sort_by(|a, b| c[*a as usize].total_cmp(&c[*b as usize]));
                o
            })
            .collect()
    }
}

/// Grows a tree on the configurations listed in `orders` (per option, sorted by value; a
/// subset of the data's configurations, each with a weight: how many times a bootstrap
/// sample drew it, or 1). Weighted configurations give exactly the tree grown on the
/// sample with its repetitions, with less work.
pub fn grow(
    data: &Columns,
    weight: &[f64],
    mut orders: Vec<Vec<u32>>,
    growth: Growth,
    rng: &mut ChaCha8Rng,
) -> GrownTree {
    let y = &data.y;
    let width = orders.len();
    let n = orders.first().map_or(0, Vec::len);
    let min_leaf = growth.min_leaf.max(1) as f64;
    let mut goes_left = vec![false; y.len()];
    let mut buffer: Vec<u32> = Vec::with_capacity(n);
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
    if width == 0 || n == 0 {
        let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
        tree.nodes[0] = leaf(mean);
        tree.mean[0] = mean;
        return tree;
    }
    // (node, range of every order, depth)
    let mut stack = vec![(0usize, 0usize, n, 0usize)];
    while let Some((node, lo, hi, depth)) = stack.pop() {
        let (total, sum, sum2) =
            orders[0][lo..hi]
                .iter()
                .fold((0.0, 0.0, 0.0), |(w, s, s2), &i| {
                    let (wi, v) = (weight[i as usize], y[i as usize]);
                    (w + wi, s + wi * v, s2 + wi * v * v)
                });
        let mean = sum / total;
        let sse = sum2 - sum * mean;
        let splittable = hi - lo >= 2
            && total >= 2.0 * min_leaf
            && growth.max_depth.is_none_or(|d| depth < d)
            && sse > 1e-12 * sum2.max(1e-300);
        // option, threshold, gain, configurations going left
        let mut best: Option<(usize, f64, f64, usize)> = None;
        if splittable {
            options.clear();
            match growth.mtry {
                Some(k) if k < width => options.extend(sample_indices(rng, width, k).iter()),
                _ => options.extend(0..width),
            }
            let base = sum * mean;
            for &j in &options {
                let order = &orders[j][lo..hi];
                let column = &data.columns[j];
                let (mut left_weight, mut left_sum) = (0.0, 0.0);
                for k in 0..order.len() - 1 {
                    let i = order[k] as usize;
                    left_weight += weight[i];
                    left_sum += weight[i] * y[i];
                    let (v, next) = (column[i], column[order[k + 1] as usize]);
                    if v == next || left_weight < min_leaf || total - left_weight < min_leaf {
                        continue;
                    }
                    let right_sum = sum - left_sum;
                    let gain = left_sum * left_sum / left_weight
                        + right_sum * right_sum / (total - left_weight)
                        - base;
                    if best.is_none_or(|(_, _, g, _)| gain > g) {
                        best = Some((j, 0.5 * (v + next), gain, k + 1));
                    }
                }
            }
        }
        tree.mean[node] = mean;
        let Some((option, threshold, gain, left_count)) =
            best.filter(|(_, _, g, _)| *g > 1e-12 * sse.max(1e-300))
        else {
            tree.nodes[node] = leaf(mean);
            continue;
        };
        let column = &data.columns[option];
        for &i in &orders[option][lo..hi] {
            goes_left[i as usize] = column[i as usize] <= threshold;
        }
        // Stable partition of every order: left configurations first, in order.
        for order in orders.iter_mut() {
            let slice = &mut order[lo..hi];
            buffer.clear();
            let mut write = 0;
            for k in 0..slice.len() {
                let i = slice[k];
                if goes_left[i as usize] {
                    slice[write] = i;
                    write += 1;
                } else {
                    buffer.push(i);
                }
            }
            slice[write..].copy_from_slice(&buffer);
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
        let mid = lo + left_count;
        stack.push((left + 1, mid, hi, depth + 1));
        stack.push((left, lo, mid, depth + 1));
    }
    tree
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
        data.presort(),
        growth,
        &mut ChaCha8Rng::seed_from_u64(0),
    );
    Fitted::forest(vec![tree], target.log)
}

/// Held-out predictions of every (leaf, depth) of the grid: `out[leaf][depth][i]`.
pub fn grid_held_out(target: &Target, train: &[usize], test: &[usize]) -> Vec<Vec<Vec<f64>>> {
    let data = Columns::of(target, train);
    let orders = data.presort();
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
                orders.clone(),
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
    // Sort the training configurations once; a bootstrap sample's orders are this one
    // without the configurations it did not draw, and the others weigh as often as drawn.
    let data = Columns::of(target, train);
    let sorted = data.presort();
    let m = train.len();
    let mut weight = vec![0.0; m];
    let trees = (0..settings.trees)
        .map(|_| {
            weight.iter_mut().for_each(|w| *w = 0.0);
            for _ in 0..m {
                weight[rng.gen_range(0..m)] += 1.0;
            }
            let orders: Vec<Vec<u32>> = sorted
                .iter()
                .map(|order| {
                    order
                        .iter()
                        .copied()
                        .filter(|&i| weight[i as usize] > 0.0)
                        .collect()
                })
                .collect();
            grow(&data, &weight, orders, growth, &mut rng)
        })
        .collect();
    Fitted::forest(trees, target.log)
}

pub fn forest(target: &Target, settings: &ForestSettings, seed: u64) -> Fitted {
    let all: Vec<usize> = (0..target.rows.len()).collect();
    forest_on(target, &all, settings, seed)
}
