//! SPLat's model: the explored paths as a table. A configuration follows the path whose
//! reached options it agrees with (the paths form a tree: each run reached the options of
//! the runs before it that share its choices, in the same order), and is predicted that
//! path's measured time. As a model file the table is influence terms over the reached
//! options (exact on every valid configuration), or a regression tree when the reached
//! options have too many value combinations for terms.

use model::{ModelFile, Node, Tree};
use space::{OptionId, ValidConfigurations};

use crate::off_path::Changes;
use crate::{Error, Path};

/// The region the table's unmeasured cells are recorded under: it models the whole program.
const PROGRAM: &str = "program";

/// The explored paths as a tree of choices.
#[derive(Clone, Debug)]
pub struct PathTable {
    /// Node 0 is the root.
    nodes: Vec<Choice>,
}

#[derive(Clone, Debug)]
enum Choice {
    /// The next option the paths reached, and the node each of its values leads to.
    Split {
        option: OptionId,
        children: Vec<Option<usize>>,
    },
    /// The path that ends here.
    Leaf { path: usize },
    /// Not yet known (only while building).
    Open,
}

impl PathTable {
    /// The tree of `paths` (as [`crate::explore`] returns them).
    pub fn new(valid: &ValidConfigurations, paths: &[Path]) -> Result<PathTable, Error> {
        let space = valid.space();
        let mut nodes = vec![Choice::Open];
        for (p, path) in paths.iter().enumerate() {
            let mut at = 0;
            for &(option, value) in &path.reached {
                if let Choice::Open = nodes[at] {
                    nodes[at] = Choice::Split {
                        option,
                        children: vec![None; space.option(option).arity()],
                    };
                }
                let fresh = nodes.len();
                let Choice::Split {
                    option: o,
                    children,
                } = &mut nodes[at]
                else {
                    return Err(conflict(valid, path));
                };
                if *o != option {
                    return Err(conflict(valid, path));
                }
                at = match children[value as usize] {
                    Some(next) => next,
                    None => {
                        children[value as usize] = Some(fresh);
                        nodes.push(Choice::Open);
                        fresh
                    }
                };
            }
            match nodes[at] {
                Choice::Open => nodes[at] = Choice::Leaf { path: p },
                _ => return Err(conflict(valid, path)),
            }
        }
        Ok(PathTable { nodes })
    }

    /// Every option some path reached, in the space's order.
    pub fn options(&self) -> Vec<OptionId> {
        let mut out: Vec<OptionId> = self
            .nodes
            .iter()
            .filter_map(|n| match n {
                Choice::Split { option, .. } => Some(*option),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The path a configuration (value indices by option) follows. A value no path took
    /// under its choices is one the constraints forbid there; it follows the first value
    /// that was taken.
    pub fn path_of(&self, value: impl Fn(OptionId) -> u32) -> usize {
        let mut at = 0;
        loop {
            match &self.nodes[at] {
                Choice::Leaf { path } => return *path,
                Choice::Split { option, children } => {
                    at = children[value(*option) as usize]
                        .or_else(|| children.iter().flatten().next().copied())
                        .expect("a split has a child");
                }
                Choice::Open => unreachable!("every node is closed after `new`"),
            }
        }
    }

    /// The table as a model file: influence terms over the reached options (with
    /// alternatives against a reference member), or a regression tree when they have more
    /// than 2^20 value combinations. `times[p]` is path `p`'s measured time, `None` when its
    /// runs failed: the terms that rest on it are left out, and the model records which
    /// (`instrumented::failed`); a regression tree cannot leave a leaf out, so there it is
    /// an error. `changes` are what options change on paths that do not reach them
    /// ([`crate::off_path`]): a cell adds them for the options its path does not reach
    /// (terms only; a regression tree leaves them out). `paths` are the explored paths.
    pub fn model(
        &self,
        valid: &ValidConfigurations,
        times: &[Option<f64>],
        paths: &[Path],
        changes: &Changes,
    ) -> Result<ModelFile, Error> {
        let space = valid.space();
        let mut options = self.options();
        for o in changes.options() {
            if !options.contains(&o) {
                options.push(o);
            }
        }
        let combinations = options
            .iter()
            .try_fold(1usize, |acc, o| acc.checked_mul(space.option(*o).arity()));
        if combinations.is_some_and(|n| n <= 1 << model::MAX_OPTIONS) {
            let table = instrumented::influence_of_table(valid, &options, |digits| {
                let digit = |o: OptionId| {
                    options
                        .iter()
                        .position(|x| *x == o)
                        .map_or(0, |j| digits[j])
                };
                let p = self.path_of(digit);
                times[p].map(|t| t + changes.on_path(p, &paths[p], digit))
            })?;
            let mut file = ModelFile::new(table.terms);
            file.express_against_reference(&instrumented::reference_choices(space)?);
            if !table.unmeasured.is_empty() {
                let unmeasured = instrumented::failed::Unmeasured {
                    region: PROGRAM.into(),
                    cells: table.unmeasured,
                    terms_left_out: table.left_out,
                };
                instrumented::failed::record(&mut file, &[unmeasured]);
            }
            return Ok(file);
        }
        let Some(times) = times.iter().copied().collect::<Option<Vec<f64>>>() else {
            return Err(Error::Invalid(format!(
                "{} of the paths have no successful run, and a regression tree (over more than \
                 2^{} value combinations) cannot leave them out",
                times.iter().filter(|t| t.is_none()).count(),
                model::MAX_OPTIONS
            )));
        };
        let mut tree = Vec::new();
        self.emit(valid, 0, &times, &mut tree);
        Ok(ModelFile::from_trees(vec![Tree { nodes: tree }]))
    }

    /// Appends node `at` as regression-tree nodes (a split on an option with k values is a
    /// chain of k − 1 threshold splits over its values in increasing order); returns the
    /// index of its first node.
    fn emit(
        &self,
        valid: &ValidConfigurations,
        at: usize,
        times: &[f64],
        out: &mut Vec<Node>,
    ) -> usize {
        let me = out.len();
        match &self.nodes[at] {
            Choice::Leaf { path } => out.push(Node::Leaf {
                value: times[*path],
            }),
            Choice::Open => unreachable!("every node is closed after `new`"),
            Choice::Split { option, children } => {
                let o = valid.space().option(*option);
                let first = children.iter().flatten().next().copied().expect("a child");
                let mut values: Vec<(f64, usize)> = (0..children.len())
                    .map(|v| {
                        let x = if o.is_binary() {
                            v as f64
                        } else {
                            o.numeric_value(v as u32)
                        };
                        (x, children[v].unwrap_or(first))
                    })
                    .collect();
                values.sort_by(|a, b| a.0.total_cmp(&b.0));
                self.emit_chain(valid, &o.name, &values, times, out);
            }
        }
        me
    }

    fn emit_chain(
        &self,
        valid: &ValidConfigurations,
        name: &str,
        values: &[(f64, usize)],
        times: &[f64],
        out: &mut Vec<Node>,
    ) {
        if values.len() == 1 {
            self.emit(valid, values[0].1, times, out);
            return;
        }
        let me = out.len();
        out.push(Node::Leaf { value: 0.0 });
        let left = self.emit(valid, values[0].1, times, out);
        let right = out.len();
        self.emit_chain(valid, name, &values[1..], times, out);
        out[me] = Node::Split {
            option: name.to_string(),
            threshold: (values[0].0 + values[1].0) / 2.0,
            left,
            right,
            gain: None,
        };
    }
}

fn conflict(valid: &ValidConfigurations, path: &Path) -> Error {
    Error::Invalid(format!(
        "configuration `{}` does not extend the paths explored before it",
        valid.space().format_configuration(&path.configuration)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use space::ConfigSpace;

    /// Binary options `names`.
    fn binary_space(names: &[&str]) -> ConfigSpace {
        let mut s = ConfigSpace::new("t");
        for n in names {
            s.add_binary(n, None, false).unwrap();
        }
        s
    }

    /// The paths of a program that reads A, and B when A is on; no other option.
    fn paths_reading_a_then_b(s: &ConfigSpace) -> (ValidConfigurations<'_>, crate::Exploration) {
        let valid = ValidConfigurations::new(s).unwrap();
        let id = |n: &str| s.find(n).unwrap();
        let e = crate::explore(&valid, 10, |c| {
            Ok(if c.0[0] == 1 {
                vec![id("A"), id("B")]
            } else {
                vec![id("A")]
            })
        })
        .unwrap();
        (valid, e)
    }

    #[test]
    fn the_table_predicts_each_path_and_ignores_unreached_options() {
        // A off: nothing else read (1 s); A on: B read (2 s off, 5 s on). C never read.
        let s = binary_space(&["A", "B", "C"]);
        let (valid, e) = paths_reading_a_then_b(&s);
        let times: Vec<f64> = e
            .paths
            .iter()
            .map(|p| match (p.configuration.0[0], p.configuration.0[1]) {
                (0, _) => 1.0,
                (1, 0) => 2.0,
                _ => 5.0,
            })
            .collect();
        let table = PathTable::new(&valid, &e.paths).unwrap();
        let measured: Vec<Option<f64>> = times.iter().copied().map(Some).collect();
        let file = table
            .model(&valid, &measured, &e.paths, &Changes::default())
            .unwrap();
        assert_eq!(file.terms.format(2), "1.00 + 3.00·A·B + 1.00·A");
        let mut tree = Vec::new();
        table.emit(&valid, 0, &times, &mut tree);
        let tree = ModelFile::from_trees(vec![Tree { nodes: tree }]);
        let bound = tree.bind(&["A", "B", "C"]).unwrap();
        for (row, want) in [
            ([0., 1., 1.], 1.0),
            ([1., 0., 1.], 2.0),
            ([1., 1., 0.], 5.0),
        ] {
            assert_eq!(bound.predict(&row), want);
        }
    }

    /// What an option changes on a path that does not reach it is added wherever a
    /// configuration follows that path: B (read only when A is on) adds 0.5 on A's off path,
    /// C (never read) 0.25 there and 0.75 on A's other paths, as measured on each.
    #[test]
    fn off_path_changes_are_added_where_the_path_does_not_reach_the_option() {
        let s = binary_space(&["A", "B", "C"]);
        let (valid, e) = paths_reading_a_then_b(&s);
        let times: Vec<Option<f64>> = e
            .paths
            .iter()
            .map(|p| match (p.configuration.0[0], p.configuration.0[1]) {
                (0, _) => Some(1.0),
                (1, 0) => Some(2.0),
                _ => Some(5.0),
            })
            .collect();
        let table = PathTable::new(&valid, &e.paths).unwrap();
        let (b, c) = (s.find("B").unwrap(), s.find("C").unwrap());
        let mut probes = Vec::new();
        let mut effects = Vec::new();
        for (index, path) in e.paths.iter().enumerate() {
            let a_on = path.configuration.0[0] == 1;
            let mut probe = |option: OptionId, change: f64| {
                let mut configuration = path.configuration.clone();
                configuration.0[option.index()] = 1;
                probes.push(crate::off_path::Probe {
                    option,
                    value: 1,
                    path: index,
                    configuration,
                });
                effects.push(crate::off_path::Effect {
                    option: String::new(),
                    value: "1".into(),
                    configuration: String::new(),
                    effect: Some(change),
                });
            };
            if !a_on {
                probe(b, 0.5);
            }
            probe(c, if a_on { 0.75 } else { 0.25 });
        }
        let changes = Changes::new(&valid, &probes, &effects);
        let file = table.model(&valid, &times, &e.paths, &changes).unwrap();
        let bound = file.bind(&["A", "B", "C"]).unwrap();
        for a in 0..2 {
            for bv in 0..2 {
                for cv in 0..2 {
                    let on_path = match (a, bv) {
                        (0, _) => 1.0 + 0.5 * bv as f64,
                        (1, 0) => 2.0,
                        _ => 5.0,
                    };
                    let want = on_path + if a == 1 { 0.75 } else { 0.25 } * cv as f64;
                    let got = bound.predict(&[a as f64, bv as f64, cv as f64]);
                    assert!(
                        (got - want).abs() < 1e-9,
                        "A={a} B={bv} C={cv}: {got} vs {want}"
                    );
                }
            }
        }
    }

    /// A path whose runs failed is no cell of zero time: the terms that rest on it are left
    /// out of the model, which names them and the cell.
    #[test]
    fn a_failed_path_leaves_its_terms_out_and_says_so() {
        let s = binary_space(&["A", "B"]);
        let (valid, e) = paths_reading_a_then_b(&s);
        // A on and B on crashed.
        let times: Vec<Option<f64>> = e
            .paths
            .iter()
            .map(|p| match (p.configuration.0[0], p.configuration.0[1]) {
                (0, _) => Some(1.0),
                (1, 0) => Some(2.0),
                _ => None,
            })
            .collect();
        let table = PathTable::new(&valid, &e.paths).unwrap();
        let file = table
            .model(&valid, &times, &e.paths, &Changes::default())
            .unwrap();
        assert_eq!(file.terms.format(2), "1.00 + 1.00·A");
        assert_eq!(
            instrumented::failed::recorded(&file),
            [instrumented::failed::Unmeasured {
                region: "program".into(),
                cells: vec!["A, B".into()],
                terms_left_out: vec!["A·B".into()],
            }]
        );
    }
}
