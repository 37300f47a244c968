//! Subspaces as BDDs over a space's options, partitions as sets of disjoint subspaces, the
//! cross product, and the partition one decision record induces (Algorithm 1, GET_PART),
//! also as the splits that make it, for refining a region's partition part by part.

use std::collections::BTreeSet;

use std::collections::HashMap;

use biodivine_lib_bdd::{Bdd, BddPartialValuation, BddPointer};
use space::{Configuration, Formula, OptionId, OptionVars, ValidConfigurations, VariableRole};

use crate::Error;
use crate::record::DecisionRecord;

/// How subspaces of one space are written as BDDs: over the space's own variables
/// ([`ValidConfigurations::variable_role`] says what each stands for), so a subspace can be
/// tested against a configuration and read back as option literals.
pub struct Encoding<'v> {
    valid: &'v ValidConfigurations<'v>,
}

/// One literal of a cube: an option equal (`holds`) or not equal to a value index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CubeLiteral {
    pub option: OptionId,
    pub value: u32,
    pub holds: bool,
}

impl<'v> Encoding<'v> {
    pub fn new(valid: &'v ValidConfigurations<'v>) -> Self {
        Encoding { valid }
    }

    pub fn valid(&self) -> &'v ValidConfigurations<'v> {
        self.valid
    }

    pub fn option_id(&self, name: &str, context: &str) -> Result<OptionId, Error> {
        self.valid
            .space()
            .find(name)
            .ok_or_else(|| Error::UnknownOption {
                name: name.to_string(),
                context: context.to_string(),
            })
    }

    /// Whether the configuration satisfies `bdd`: one walk from the root, no BDD built.
    pub fn contains(&self, bdd: &Bdd, config: &Configuration) -> bool {
        let mut node = bdd.root_pointer();
        while !node.is_terminal() {
            let high = match self.valid.variable_role(bdd.var_of(node)) {
                VariableRole::Selected(o) => config.0[o.index()] == 1,
                VariableRole::Value(o, v) => config.0[o.index()] == v,
                VariableRole::IndexBit(o, k) => (config.0[o.index()] >> k) & 1 == 1,
            };
            node = if high {
                bdd.high_link_of(node)
            } else {
                bdd.low_link_of(node)
            };
        }
        node.is_one()
    }

    /// Disjoint cubes whose union is `bdd` (on option values), literals in option order: its
    /// paths to `true`, low edges first. The index bits of a log-encoded option are read
    /// together, one branch per set of values that leads to the same node below them (see
    /// [`Self::value_branches`]), since single bits are no option literals.
    pub fn cubes(&self, bdd: &Bdd) -> Vec<Vec<CubeLiteral>> {
        let mut out = Vec::new();
        if bdd.is_false() {
            return out;
        }
        // An explicit stack: paths can be as long as the space has variables.
        let mut stack = vec![(bdd.root_pointer(), Vec::new())];
        while let Some((node, cube)) = stack.pop() {
            if node.is_one() {
                out.push(cube);
                continue;
            }
            // A variable that is an option literal by itself: its two edges, low first.
            let edges = |option, value| {
                let literal = |holds| CubeLiteral {
                    option,
                    value,
                    holds,
                };
                vec![
                    (bdd.low_link_of(node), vec![literal(false)]),
                    (bdd.high_link_of(node), vec![literal(true)]),
                ]
            };
            let branches = match self.valid.variable_role(bdd.var_of(node)) {
                VariableRole::Selected(option) => edges(option, 1),
                VariableRole::Value(option, value) => edges(option, value),
                VariableRole::IndexBit(option, _) => self.value_branches(bdd, node, option),
            };
            for (child, literals) in branches.into_iter().rev() {
                if child.is_zero() {
                    continue;
                }
                let mut longer = cube.clone();
                longer.extend(literals);
                stack.push((child, longer));
            }
        }
        for cube in &mut out {
            cube.sort();
        }
        out
    }

    /// From `node`, the first test of a log-encoded option's index bits: the nodes below the
    /// option that its values lead to, each with literals for the values that lead there.
    /// Values leading to one node become one cube `o≠u ∧ o≠w ∧ …` when they are most values
    /// (the rest are few: those a formula names), else one cube `o=v` per value.
    fn value_branches(
        &self,
        bdd: &Bdd,
        node: BddPointer,
        option: OptionId,
    ) -> Vec<(BddPointer, Vec<CubeLiteral>)> {
        let bits = match self.valid.option_vars(option) {
            OptionVars::Log(bits) => bits.as_slice(),
            _ => unreachable!("index bits belong to a log-encoded option"),
        };
        let n = self.valid.space().option(option).arity() as u64;
        let width = bits.len();
        // Ways through the bits: (node below them, mask of tested bits, their values).
        let mut ends: Vec<(BddPointer, u64, u64)> = Vec::new();
        let mut walk = vec![(node, 0usize, 0u64, 0u64)];
        while let Some((p, j, mask, value)) = walk.pop() {
            if j == width {
                ends.push((p, mask, value));
                continue;
            }
            if p.is_terminal() || bdd.var_of(p) != bits[j] {
                walk.push((p, j + 1, mask, value));
                continue;
            }
            let weight = 1u64 << (width - 1 - j);
            for (child, bit) in [(bdd.low_link_of(p), 0), (bdd.high_link_of(p), weight)] {
                if !child.is_zero() {
                    walk.push((child, j + 1, mask | weight, value | bit));
                }
            }
        }
        let mut groups: HashMap<BddPointer, Vec<u32>> = HashMap::new();
        let full = (1u64 << width) - 1;
        for (p, mask, value) in ends {
            let group = groups.entry(p).or_default();
            // Every subset of the untested bits, in increasing order.
            let free = full & !mask;
            let mut sub = 0u64;
            loop {
                let v = value | sub;
                if v < n {
                    group.push(v as u32);
                }
                if sub == free {
                    break;
                }
                sub = (sub.wrapping_sub(free)) & free;
            }
        }
        let mut branches: Vec<(u32, BddPointer, Vec<CubeLiteral>)> = Vec::new();
        for (p, mut values) in groups {
            if values.is_empty() {
                continue;
            }
            values.sort_unstable();
            let literal = |value, holds| CubeLiteral {
                option,
                value,
                holds,
            };
            if values.len() as u64 == n {
                branches.push((values[0], p, Vec::new()));
            } else if values.len() as u64 * 2 <= n {
                branches.extend(values.iter().map(|&v| (v, p, vec![literal(v, true)])));
            } else {
                let mut taken = vec![false; n as usize];
                values.iter().for_each(|&v| taken[v as usize] = true);
                let others = (0..n as u32)
                    .filter(|v| !taken[*v as usize])
                    .map(|v| literal(v, false))
                    .collect();
                branches.push((values[0], p, others));
            }
        }
        branches.sort_by_key(|b| b.0);
        branches.into_iter().map(|(_, p, l)| (p, l)).collect()
    }

    /// `bdd` as text: cubes joined by ` ∨ `, literals by ` ∧ ` (`A ∧ ¬B`, `level=6`); `⊤`
    /// for everything, `⊥` for nothing. The same function always prints the same way.
    pub fn describe(&self, bdd: &Bdd) -> String {
        if bdd.is_true() {
            return "⊤".into();
        }
        if bdd.is_false() {
            return "⊥".into();
        }
        let space = self.valid.space();
        let mut cubes: Vec<String> = self
            .cubes(bdd)
            .iter()
            .map(|cube| {
                // A value indicator excludes the option's other values: `ITER=1`, not
                // `ITER=1 ∧ ITER≠2 ∧ ITER≠4`.
                let valued: Vec<OptionId> = cube
                    .iter()
                    .filter(|l| l.holds && !space.option(l.option).is_binary())
                    .map(|l| l.option)
                    .collect();
                cube.iter()
                    .filter(|l| l.holds || !valued.contains(&l.option))
                    .map(|l| {
                        let o = space.option(l.option);
                        match (o.is_binary(), l.holds) {
                            (true, true) => o.name.clone(),
                            (true, false) => format!("¬{}", o.name),
                            (false, true) => format!("{}={}", o.name, o.format_value(l.value)),
                            (false, false) => format!("{}≠{}", o.name, o.format_value(l.value)),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ∧ ")
            })
            .collect();
        cubes.sort();
        cubes.dedup();
        cubes.join(" ∨ ")
    }

    /// The configurations that give every option in `options` the same value as `config`.
    fn agreeing_with(&self, options: &BTreeSet<OptionId>, config: &Configuration) -> Bdd {
        options.iter().fold(self.everything(), |acc, id| {
            acc.and(&self.valid.literal((*id, config.0[id.index()])))
        })
    }

    /// What a formula fixing the variables `fixed` says of `option = value`: `Some(true)`
    /// when it implies the literal, `Some(false)` when it implies its negation, `None` when
    /// `fixed` does not tell (the formula, not the constraints: a one-hot option's other
    /// value variables fixed true do not exclude this one).
    fn implies(&self, fixed: &BddPartialValuation, option: OptionId, value: u32) -> Option<bool> {
        match self.valid.option_vars(option) {
            OptionVars::Binary(v) => fixed.get_value(*v).map(|b| b == (value == 1)),
            OptionVars::OneHot(vs) => fixed.get_value(vs[value as usize]),
            OptionVars::Log(bits) => {
                let width = bits.len();
                let mut all = true;
                for (j, bit) in bits.iter().enumerate() {
                    let wanted = (value >> (width - 1 - j)) & 1 == 1;
                    match fixed.get_value(*bit) {
                        Some(b) if b != wanted => return Some(false),
                        Some(_) => {}
                        None => all = false,
                    }
                }
                all.then_some(true)
            }
        }
    }

    /// Whether a formula fixing the variables `fixed` implies one value literal of `option`
    /// (so in valid configurations the option has that value alone).
    fn determines(&self, fixed: &BddPartialValuation, option: OptionId) -> bool {
        match self.valid.option_vars(option) {
            OptionVars::Binary(v) => fixed.has_value(*v),
            OptionVars::OneHot(vs) => vs.iter().any(|v| fixed.get_value(*v) == Some(true)),
            OptionVars::Log(bits) => bits.iter().all(|b| fixed.has_value(*b)),
        }
    }

    /// The formula `true` over this space's variables.
    pub fn everything(&self) -> Bdd {
        self.valid.compile(&Formula::Const(true))
    }
}

/// A set of configurations, kept two ways: `description`, a formula over option literals
/// alone (what the analysis derived; its cubes become model terms), and `bdd`, the valid
/// configurations satisfying it (what is explored and intersected).
#[derive(Clone, Debug)]
pub struct Subspace {
    description: Bdd,
    bdd: Bdd,
    /// The variables `description` fixes (its necessary clause): what lets
    /// [`DecisionSplit::split`] see without a BDD operation that a decision cannot cut it.
    fixed: BddPartialValuation,
}

impl Subspace {
    fn new(description: Bdd, bdd: Bdd) -> Subspace {
        let fixed = description
            .necessary_clause()
            .unwrap_or_else(BddPartialValuation::empty);
        Subspace {
            description,
            bdd,
            fixed,
        }
    }

    /// The valid configurations in the subspace.
    pub fn bdd(&self) -> &Bdd {
        &self.bdd
    }

    /// The formula over option literals the subspace was derived from (equal to [`Self::bdd`]
    /// on valid configurations; it never mentions the constraints).
    pub fn description(&self) -> &Bdd {
        &self.description
    }

    /// Whether both hold the same valid configurations.
    pub fn same_as(&self, other: &Subspace) -> bool {
        self.bdd.xor(&other.bdd).is_false()
    }

    /// The non-empty intersection, or `None`.
    pub(crate) fn intersect(&self, other: &Subspace) -> Option<Subspace> {
        let bdd = self.bdd.and(&other.bdd);
        (!bdd.is_false()).then(|| Subspace::new(self.description.and(&other.description), bdd))
    }
}

/// Disjoint, non-empty subspaces that together hold every valid configuration.
#[derive(Clone, Debug)]
pub struct Partition {
    parts: Vec<Subspace>,
}

impl Partition {
    /// The trivial partition: one subspace, every valid configuration.
    pub fn whole(enc: &Encoding) -> Self {
        Partition {
            parts: vec![Subspace::new(enc.everything(), enc.valid.bdd().clone())],
        }
    }

    /// A partition from formulas over option literals (disjoint on valid configurations,
    /// covering them); empty parts are dropped. For tests and hand-made partitions.
    pub fn from_descriptions(enc: &Encoding, descriptions: Vec<Bdd>) -> Self {
        let parts = descriptions
            .into_iter()
            .filter_map(|d| {
                let bdd = enc.valid.restricted(&d);
                (!bdd.is_false()).then(|| Subspace::new(d, bdd))
            })
            .collect();
        Partition { parts }
    }

    pub(crate) fn from_parts(parts: Vec<Subspace>) -> Self {
        Partition { parts }
    }

    pub(crate) fn into_parts(self) -> Vec<Subspace> {
        self.parts
    }

    pub fn parts(&self) -> &[Subspace] {
        &self.parts
    }

    pub fn len(&self) -> usize {
        self.parts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The cross product: every non-empty pairwise intersection. Commutative and
    /// associative (as sets), so the order in which decisions arrive does not matter.
    pub fn cross(&self, other: &Partition) -> Partition {
        let parts = self
            .parts
            .iter()
            .flat_map(|p| other.parts.iter().filter_map(move |d| p.intersect(d)))
            .collect();
        Partition { parts }
    }

    /// Whether both hold the same subspaces (in any order).
    pub fn same_as(&self, other: &Partition) -> bool {
        self.len() == other.len()
            && self
                .parts
                .iter()
                .all(|p| other.parts.iter().any(|q| p.same_as(q)))
    }

    /// The partition one decision record induces when reached in `config` (Algorithm 1,
    /// GET_PART): `S_reach` = the configurations agreeing with `config` on every option of
    /// the control-flow taint; one subspace `C ∖ S_reach` for configurations that might not
    /// reach the decision; and one subspace per combination of values of the data-flow
    /// taint's options within `S_reach`. Options are resolved by name in the encoding's
    /// space.
    pub fn of_decision(
        enc: &Encoding,
        record: &DecisionRecord,
        config: &Configuration,
    ) -> Result<Partition, Error> {
        let context = |kind: &str| {
            format!(
                "the {kind} taint of decision {} ({}:{})",
                record.decision.id, record.decision.file, record.decision.line
            )
        };
        let control = record
            .control_flow
            .iter()
            .map(|n| enc.option_id(n, &context("control-flow")))
            .collect::<Result<BTreeSet<_>, _>>()?;
        let data = record
            .data_flow
            .iter()
            .map(|n| enc.option_id(n, &context("data-flow")))
            .collect::<Result<BTreeSet<_>, _>>()?;
        Ok(Self::of_taints(enc, &data, &control, config))
    }

    /// [`Self::of_decision`] on resolved options.
    pub fn of_taints(
        enc: &Encoding,
        data_flow: &BTreeSet<OptionId>,
        control_flow: &BTreeSet<OptionId>,
        config: &Configuration,
    ) -> Partition {
        let reach_description = enc.agreeing_with(control_flow, config);
        let reach = Subspace::new(
            reach_description.clone(),
            enc.valid.restricted(&reach_description),
        );
        // The data-flow combinations are built one option at a time, each step a cross
        // product, so combinations that are invalid or outside S_reach are dropped early
        // instead of enumerating all of them.
        let mut within = Partition {
            parts: vec![reach.clone()],
        };
        if within.parts[0].bdd.is_false() {
            within.parts.clear();
        }
        let space = enc.valid.space();
        for &id in data_flow {
            let values: Vec<Bdd> = (0..space.option(id).arity() as u32)
                .map(|v| enc.valid.literal((id, v)))
                .collect();
            within = within.cross(&Partition::from_descriptions(enc, values));
        }
        let outside_description = reach.description.not();
        let outside = Subspace::new(
            outside_description.clone(),
            enc.valid.restricted(&outside_description),
        );
        if !outside.bdd.is_false() {
            within.parts.push(outside);
        }
        within
    }
}

/// One decision record's partition (GET_PART, [`Partition::of_taints`]) kept as the splits
/// that make it, so a region's partition is refined part by part: each part is cut by
/// `S_reach` and then by the data-flow options' values, one option at a time. That costs BDD
/// operations in proportion to the pieces that exist, where crossing every part with every
/// subspace of the decision's partition costs their product (thousands of operations per
/// record on SQLite, most of them empty intersections).
pub(crate) struct DecisionSplit {
    /// The control-flow options and their values in the run: `S_reach` is where they agree.
    control: Vec<(OptionId, u32)>,
    /// `S_reach`'s formula; `None` without control-flow taint (every configuration reaches
    /// the decision).
    reach: Option<Bdd>,
    /// The data-flow options, in option order, each with the literals of its values (in
    /// value order).
    values: Vec<(OptionId, Vec<Bdd>)>,
}

impl DecisionSplit {
    pub(crate) fn new(
        enc: &Encoding,
        data_flow: &BTreeSet<OptionId>,
        control_flow: &BTreeSet<OptionId>,
        config: &Configuration,
    ) -> Self {
        let space = enc.valid.space();
        DecisionSplit {
            control: control_flow
                .iter()
                .map(|&id| (id, config.0[id.index()]))
                .collect(),
            reach: (!control_flow.is_empty()).then(|| enc.agreeing_with(control_flow, config)),
            values: data_flow
                .iter()
                .map(|&id| {
                    let literals = (0..space.option(id).arity() as u32)
                        .map(|v| enc.valid.literal((id, v)))
                        .collect();
                    (id, literals)
                })
                .collect(),
        }
    }

    /// `part`'s non-empty intersections with the decision's subspaces, in the order
    /// `part.cross(of_taints(…))` gives them: within `S_reach` by data-flow values
    /// (lexicographically, the first option slowest), then outside `S_reach`.
    /// `None` when the description shows that `part` lies in one subspace and is left
    /// whole (see [`Self::leaves_whole`]).
    pub(crate) fn split(&self, enc: &Encoding, part: &Subspace) -> Option<Vec<Subspace>> {
        if self.leaves_whole(enc, part) {
            return None;
        }
        let cut = |s: &Subspace, formula: &Bdd| {
            let bdd = s.bdd.and(formula);
            (!bdd.is_false()).then(|| Subspace::new(s.description.and(formula), bdd))
        };
        let (inside, outside) = match &self.reach {
            None => (Some(part.clone()), None),
            Some(reach) => (cut(part, reach), cut(part, &reach.not())),
        };
        let mut pieces: Vec<Subspace> = inside.into_iter().collect();
        for (_, values) in &self.values {
            pieces = pieces
                .iter()
                .flat_map(|s| values.iter().filter_map(move |v| cut(s, v)))
                .collect();
        }
        pieces.extend(outside);
        Some(pieces)
    }

    /// Whether `part`'s description already implies one of the decision's subspaces, so
    /// that intersecting changes neither its formula nor its configurations: it fixes a
    /// control-flow option to another value than the run's (it lies outside `S_reach`), or
    /// it fixes every control-flow option to the run's value and every data-flow option.
    /// Once a region's partition is as fine as its decisions make it, this is every part,
    /// and refining it costs no BDD operation.
    fn leaves_whole(&self, enc: &Encoding, part: &Subspace) -> bool {
        let implied = |&(id, value): &(OptionId, u32)| enc.implies(&part.fixed, id, value);
        let mut inside = true;
        for literal in &self.control {
            match implied(literal) {
                Some(false) => return true,
                Some(true) => {}
                None => inside = false,
            }
        }
        inside
            && self
                .values
                .iter()
                .all(|(id, _)| enc.determines(&part.fixed, *id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use space::ConfigSpace;

    fn abcd() -> ConfigSpace {
        let mut s = ConfigSpace::new("t");
        for n in ["A", "B", "C", "D"] {
            s.add_binary(n, None, false).unwrap();
        }
        s
    }

    fn ids(space: &ConfigSpace, names: &[&str]) -> BTreeSet<OptionId> {
        names.iter().map(|n| space.find(n).unwrap()).collect()
    }

    fn texts(enc: &Encoding, p: &Partition) -> Vec<String> {
        let mut t: Vec<String> = p
            .parts()
            .iter()
            .map(|s| enc.describe(s.description()))
            .collect();
        t.sort();
        t
    }

    #[test]
    fn get_part_follows_the_papers_foo_example() {
        // foo's decision in {A, D}: data-flow {B}, control-flow {A} → ⟦A∧B⟧, ⟦A∧¬B⟧, ⟦¬A⟧.
        let space = abcd();
        let valid = ValidConfigurations::new(&space).unwrap();
        let enc = Encoding::new(&valid);
        let cc = space.parse_configuration("A,D").unwrap();
        let p = Partition::of_taints(&enc, &ids(&space, &["B"]), &ids(&space, &["A"]), &cc);
        assert_eq!(texts(&enc, &p), ["A ∧ B", "A ∧ ¬B", "¬A"]);
        // No control-flow taint: S_reach is everything and no "outside" subspace exists.
        let p = Partition::of_taints(&enc, &ids(&space, &["A", "B"]), &BTreeSet::new(), &cc);
        assert_eq!(texts(&enc, &p), ["A ∧ B", "A ∧ ¬B", "¬A ∧ B", "¬A ∧ ¬B"]);
        // Untainted: the trivial partition.
        let p = Partition::of_taints(&enc, &BTreeSet::new(), &BTreeSet::new(), &cc);
        assert_eq!(texts(&enc, &p), ["⊤"]);
    }

    /// A one-hot option's value is one literal: the others it excludes are not listed.
    #[test]
    fn a_value_indicator_is_not_followed_by_the_values_it_excludes() {
        let mut space = ConfigSpace::new("t");
        space.add_binary("HEAVY", None, false).unwrap();
        let iter = space.add_numeric("ITER", &[1.0, 2.0, 4.0, 8.0]).unwrap();
        let heavy = OptionId(0);
        let valid = ValidConfigurations::new(&space).unwrap();
        assert!(!matches!(valid.option_vars(iter), OptionVars::Log(_)));
        let enc = Encoding::new(&valid);
        let is = |v| valid.literal((iter, v));
        let heavy_four = is(2).and(&valid.literal((heavy, 1)));
        assert_eq!(enc.describe(&heavy_four), "HEAVY ∧ ITER=4");
        assert_eq!(enc.describe(&is(0)), "ITER=1");
        assert_eq!(enc.describe(&is(0).not()), "ITER≠1");
    }

    #[test]
    fn a_log_encoded_option_reads_back_as_value_literals() {
        // 3,000 values: the option's value index is written in 12 bits, not one-hot.
        let mut space = ConfigSpace::new("t");
        space.add_binary("A", None, false).unwrap();
        let values: Vec<f64> = (0..3000).map(f64::from).collect();
        let x = space.add_numeric("x", &values).unwrap();
        let a = OptionId(0);
        let valid = ValidConfigurations::new(&space).unwrap();
        assert!(matches!(valid.option_vars(x), OptionVars::Log(_)));
        let enc = Encoding::new(&valid);
        let is = |v| valid.literal((x, v));
        assert_eq!(enc.describe(&is(5)), "x=5");
        assert_eq!(enc.describe(&is(5).not()), "x≠5");
        assert_eq!(enc.describe(&is(5).or(&is(2999))), "x=2999 ∨ x=5");
        let not_two = is(5).or(&is(7)).not().and(&valid.literal((a, 1)));
        assert_eq!(enc.describe(&not_two), "A ∧ x≠5 ∧ x≠7");
        let mixed = is(5).and(&valid.literal((a, 1))).or(&is(6));
        // A comes first in the variable order, so x=6 splits on it.
        assert_eq!(enc.describe(&mixed), "A ∧ x=5 ∨ A ∧ x=6 ∨ ¬A ∧ x=6");
        let config = |on: u32, v: u32| Configuration(vec![on, v]);
        assert!(enc.contains(&mixed, &config(1, 5)));
        assert!(!enc.contains(&mixed, &config(0, 5)));
        assert!(enc.contains(&mixed, &config(0, 6)));
        assert!(enc.contains(&not_two, &config(1, 2048)));
        assert!(!enc.contains(&not_two, &config(1, 7)));
        // Each cube set is exact on every value.
        for bdd in [&is(5).not(), &not_two, &mixed] {
            let cubes = enc.cubes(bdd);
            for on in 0..2 {
                for v in 0..3000 {
                    let c = config(on, v);
                    let hits = cubes
                        .iter()
                        .filter(|cube| {
                            cube.iter()
                                .all(|l| (c.0[l.option.index()] == l.value) == l.holds)
                        })
                        .count();
                    assert_eq!(hits, enc.contains(bdd, &c) as usize, "{on} {v}");
                }
            }
        }
        // A data-flow taint on x: one part per value.
        let cc = space.parse_configuration("x=3").unwrap();
        let p = Partition::of_taints(&enc, &ids(&space, &["x"]), &BTreeSet::new(), &cc);
        assert_eq!(p.parts().len(), 3000);
    }

    #[test]
    fn splitting_part_by_part_is_the_cross_product_with_the_same_formulas() {
        // Constraints (A requires B, exactly one of X, Y, Z), a one-hot and a log-encoded
        // numeric option: descriptions then fix fewer options than their configurations do,
        // where leaving a part whole could change its formula or lose a piece.
        use rand::{Rng, SeedableRng};
        use space::GroupKind;
        let mut space = ConfigSpace::new("t");
        for n in ["A", "B", "C"] {
            space.add_binary(n, None, false).unwrap();
        }
        let xyz: Vec<OptionId> = ["X", "Y", "Z"]
            .iter()
            .map(|n| space.add_binary(n, None, false).unwrap())
            .collect();
        space.add_group(GroupKind::Alternative, None, xyz).unwrap();
        space.add_numeric("level", &[1.0, 6.0, 9.0]).unwrap();
        let wide: Vec<f64> = (0..1100).map(f64::from).collect();
        let big = space.add_numeric("big", &wide).unwrap();
        space.add_constraint("A => B", "test").unwrap();
        let valid = ValidConfigurations::new(&space).unwrap();
        assert!(matches!(valid.option_vars(big), OptionVars::Log(_)));
        let enc = Encoding::new(&valid);
        let options: Vec<OptionId> = (0..space.options().len() as u32).map(OptionId).collect();
        for seed in 0..3 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let (mut crossed, mut split) = (Partition::whole(&enc), Partition::whole(&enc));
            for step in 0..16 {
                let config = valid.sample_uniform_in(valid.bdd(), &mut rng).unwrap();
                let mut pick = |most: usize, data: bool| -> BTreeSet<OptionId> {
                    let n = rng.gen_range(0..=most);
                    // Data-flow taint on `big` would make 1,100 parts: control-flow only.
                    let from: Vec<OptionId> = options
                        .iter()
                        .copied()
                        .filter(|&o| !data || o != big)
                        .collect();
                    (0..n).map(|_| from[rng.gen_range(0..from.len())]).collect()
                };
                let data = pick(2, true);
                let control = pick(2, false);
                crossed = crossed.cross(&Partition::of_taints(&enc, &data, &control, &config));
                let decision = DecisionSplit::new(&enc, &data, &control, &config);
                split = Partition::from_parts(
                    split
                        .parts()
                        .iter()
                        .flat_map(|p| decision.split(&enc, p).unwrap_or_else(|| vec![p.clone()]))
                        .collect(),
                );
                let context = format!("seed {seed}, step {step}");
                assert_eq!(split.len(), crossed.len(), "{context}");
                for (a, b) in split.parts().iter().zip(crossed.parts()) {
                    assert!(a.same_as(b), "{context}");
                    assert_eq!(
                        enc.describe(a.description()),
                        enc.describe(b.description()),
                        "{context}"
                    );
                }
            }
            assert!(split.len() > 4, "seed {seed}: {}", split.len());
        }
    }

    #[test]
    fn cross_product_is_commutative_and_drops_empty_parts() {
        let space = abcd();
        let valid = ValidConfigurations::new(&space).unwrap();
        let enc = Encoding::new(&valid);
        let with_a = space.parse_configuration("A").unwrap();
        let without = space.parse_configuration("").unwrap();
        let c = ids(&space, &["C"]);
        let a = ids(&space, &["A"]);
        let p = Partition::of_taints(&enc, &c, &a, &with_a);
        let q = Partition::of_taints(&enc, &c, &a, &without);
        let pq = p.cross(&q);
        let qp = q.cross(&p);
        assert!(pq.same_as(&qp));
        assert_eq!(texts(&enc, &pq), ["A ∧ C", "A ∧ ¬C", "¬A ∧ C", "¬A ∧ ¬C"]);
        // Idempotent: a partition crossed with itself is itself.
        assert!(p.cross(&p).same_as(&p));
        assert!(pq.parts().iter().all(|s| !s.bdd().is_false()));
    }
}
