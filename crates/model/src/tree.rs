//! Regression trees (CART) and forests of them, as stored in the model file's `trees` field.
//!
//! A tree is a flat list of nodes; node 0 is the root. A split node sends a configuration to
//! `left` when its value of `option` is at most `threshold`, else to `right`; a leaf holds the
//! predicted value. Children always come after their parent in the list, which makes every
//! stored tree finite and acyclic by construction (checked on reading).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Error;

/// One node of a [`Tree`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "NodeFields")]
pub enum Node {
    /// `value(option) <= threshold` goes to `left`, otherwise to `right` (node indices).
    Split {
        option: String,
        threshold: f64,
        left: usize,
        right: usize,
        /// How much the split reduced the squared error on the training data; feature
        /// importances are sums of these.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gain: Option<f64>,
    },
    Leaf {
        value: f64,
    },
}

/// A node as written, read key by key so that a malformed node is named by what it lacks
/// (an untagged enum would only say that no variant matched).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFields {
    option: Option<String>,
    threshold: Option<f64>,
    left: Option<usize>,
    right: Option<usize>,
    gain: Option<f64>,
    value: Option<f64>,
}

impl TryFrom<NodeFields> for Node {
    type Error = String;

    fn try_from(n: NodeFields) -> Result<Node, String> {
        match (n.option, n.threshold, n.left, n.right, n.value) {
            (None, None, None, None, Some(value)) if n.gain.is_none() => Ok(Node::Leaf { value }),
            (Some(option), Some(threshold), Some(left), Some(right), None) => Ok(Node::Split {
                option,
                threshold,
                left,
                right,
                gain: n.gain,
            }),
            (_, _, _, _, Some(_)) => Err(
                "a leaf has only `value`; a split has `option`, `threshold`, `left`, `right`"
                    .into(),
            ),
            (option, threshold, left, right, None) => {
                let missing: Vec<&str> = [
                    ("option", option.is_none()),
                    ("threshold", threshold.is_none()),
                    ("left", left.is_none()),
                    ("right", right.is_none()),
                ]
                .into_iter()
                .filter_map(|(k, absent)| absent.then_some(k))
                .collect();
                Err(format!(
                    "a tree node needs `value` (a leaf) or `option`, `threshold`, `left` and `right` (a split); this one lacks `{}`",
                    missing.join("`, `")
                ))
            }
        }
    }
}

/// A regression tree; node 0 is the root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

impl Tree {
    /// A tree with a single leaf.
    pub fn leaf(value: f64) -> Tree {
        Tree {
            nodes: vec![Node::Leaf { value }],
        }
    }

    /// Checks the structure: at least one node, children after their parent and in range,
    /// finite numbers.
    pub fn check(&self) -> Result<(), Error> {
        if self.nodes.is_empty() {
            return Err(Error::Invalid("a tree has no nodes".into()));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            match node {
                Node::Split {
                    threshold,
                    left,
                    right,
                    ..
                } => {
                    for child in [left, right] {
                        if *child <= i || *child >= self.nodes.len() {
                            return Err(Error::Invalid(format!(
                                "tree node {i}: child {child} must come after its parent and exist ({} nodes)",
                                self.nodes.len()
                            )));
                        }
                    }
                    if !threshold.is_finite() {
                        return Err(Error::Invalid(format!(
                            "tree node {i}: threshold is not a finite number"
                        )));
                    }
                }
                Node::Leaf { value } if !value.is_finite() => {
                    return Err(Error::Invalid(format!(
                        "tree node {i}: leaf value is not a finite number"
                    )));
                }
                Node::Leaf { .. } => {}
            }
        }
        Ok(())
    }

    pub fn leaves(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n, Node::Leaf { .. }))
            .count()
    }

    /// Number of splits on the longest path from the root to a leaf.
    pub fn depth(&self) -> usize {
        // Children come after parents, so one pass in order fills every node's depth.
        let mut depth = vec![0usize; self.nodes.len()];
        let mut max = 0;
        for (i, node) in self.nodes.iter().enumerate() {
            if let Node::Split { left, right, .. } = node {
                depth[*left] = depth[i] + 1;
                depth[*right] = depth[i] + 1;
                max = max.max(depth[i] + 1);
            }
        }
        max
    }

    /// Every option the tree splits on.
    pub fn options(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().filter_map(|n| match n {
            Node::Split { option, .. } => Some(option.as_str()),
            Node::Leaf { .. } => None,
        })
    }

    /// Resolves option names to column indices for fast prediction.
    pub(crate) fn bind(&self, index: &BTreeMap<&str, usize>) -> Result<BoundTree, Error> {
        let nodes = self
            .nodes
            .iter()
            .map(|n| match n {
                Node::Split {
                    option,
                    threshold,
                    left,
                    right,
                    ..
                } => {
                    let column = *index.get(option.as_str()).ok_or_else(|| {
                        Error::Invalid(format!(
                            "the model uses option `{option}`, which the configurations lack"
                        ))
                    })?;
                    Ok(BoundNode::Split {
                        column,
                        threshold: *threshold,
                        left: *left,
                        right: *right,
                    })
                }
                Node::Leaf { value } => Ok(BoundNode::Leaf(*value)),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(BoundTree { nodes })
    }
}

/// Sum of the split gains per option over all trees, as fractions of the total (sorted,
/// largest first). Empty when no split records its gain.
pub fn importances(trees: &[Tree]) -> Vec<(String, f64)> {
    let mut sums: BTreeMap<&str, f64> = BTreeMap::new();
    for t in trees {
        for n in &t.nodes {
            if let Node::Split {
                option,
                gain: Some(g),
                ..
            } = n
            {
                *sums.entry(option).or_default() += g.max(0.0);
            }
        }
    }
    let total: f64 = sums.values().sum();
    if total <= 0.0 {
        return vec![];
    }
    let mut out: Vec<(String, f64)> = sums
        .into_iter()
        .map(|(o, g)| (o.to_string(), g / total))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

#[derive(Clone, Debug)]
enum BoundNode {
    Split {
        column: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
    Leaf(f64),
}

/// A tree whose splits point at columns of a row of values.
#[derive(Clone, Debug)]
pub(crate) struct BoundTree {
    nodes: Vec<BoundNode>,
}

impl BoundTree {
    pub(crate) fn predict(&self, row: &[f64]) -> f64 {
        let mut i = 0;
        loop {
            match &self.nodes[i] {
                BoundNode::Leaf(v) => return *v,
                BoundNode::Split {
                    column,
                    threshold,
                    left,
                    right,
                } => {
                    i = if row[*column] <= *threshold {
                        *left
                    } else {
                        *right
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn step() -> Tree {
        // A ≤ 0.5 → 1; else (B ≤ 0.5 → 4, else 7)
        Tree {
            nodes: vec![
                Node::Split {
                    option: "A".into(),
                    threshold: 0.5,
                    left: 1,
                    right: 2,
                    gain: Some(30.0),
                },
                Node::Leaf { value: 1.0 },
                Node::Split {
                    option: "B".into(),
                    threshold: 0.5,
                    left: 3,
                    right: 4,
                    gain: Some(10.0),
                },
                Node::Leaf { value: 4.0 },
                Node::Leaf { value: 7.0 },
            ],
        }
    }

    #[test]
    fn predicts_and_describes() {
        let t = step();
        t.check().unwrap();
        assert_eq!((t.depth(), t.leaves()), (2, 3));
        let index: BTreeMap<&str, usize> = [("B", 0), ("A", 1)].into_iter().collect();
        let b = t.bind(&index).unwrap();
        assert_eq!(b.predict(&[1.0, 0.0]), 1.0);
        assert_eq!(b.predict(&[0.0, 1.0]), 4.0);
        assert_eq!(b.predict(&[1.0, 1.0]), 7.0);
        assert_eq!(
            importances(&[t]),
            vec![("A".to_string(), 0.75), ("B".to_string(), 0.25)]
        );
    }

    #[test]
    fn rejects_cycles_and_missing_children() {
        let mut t = step();
        if let Node::Split { right, .. } = &mut t.nodes[2] {
            *right = 0;
        }
        assert!(t.check().unwrap_err().to_string().contains("node 2"));
        let mut t = step();
        if let Node::Split { left, .. } = &mut t.nodes[0] {
            *left = 9;
        }
        assert!(t.check().is_err());
        assert!(Tree { nodes: vec![] }.check().is_err());
    }

    #[test]
    fn nodes_read_back_and_a_malformed_one_is_named_by_what_it_lacks() {
        let tree = Tree {
            nodes: vec![
                Node::Split {
                    option: "A".into(),
                    threshold: 0.5,
                    left: 1,
                    right: 2,
                    gain: Some(1.0),
                },
                Node::Leaf { value: 1.0 },
                Node::Leaf { value: 2.0 },
            ],
        };
        let text = serde_json::to_string(&tree).unwrap();
        assert_eq!(serde_json::from_str::<Tree>(&text).unwrap(), tree);
        let e =
            serde_json::from_str::<Tree>(r#"{"nodes": [{"option": "A", "left": 1, "right": 2}]}"#)
                .unwrap_err()
                .to_string();
        assert!(e.contains("lacks `threshold`"), "{e}");
        assert!(!e.contains("untagged"), "{e}");
    }
}
