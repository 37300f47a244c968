//! Subspaces as BDDs over a space's options, partitions as sets of disjoint subspaces, the
//! cross product, and the partition one decision record induces (Algorithm 1, GET_PART).

use std::collections::BTreeSet;

use biodivine_lib_bdd::Bdd;
use space::{Configuration, Formula, OptionId, ValidConfigurations};

use crate::Error;
use crate::record::DecisionRecord;

/// What one BDD variable of the space means: an option, and for a numeric option the value
/// its one-hot variable stands for (`None` for a binary option: the variable is the option).
#[derive(Clone, Copy, Debug)]
struct VarMeaning {
    option: OptionId,
    value: Option<u32>,
}

/// How subspaces of one space are written as BDDs: the space's valid configurations plus the
/// meaning of each BDD variable, so a subspace can be tested against a configuration and read
/// back as option literals.
pub struct Encoding<'v> {
    valid: &'v ValidConfigurations<'v>,
    meaning: Vec<Option<VarMeaning>>,
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
        // The space does not expose its variable map; each literal's BDD is one node on the
        // variable that encodes it, which is all we need.
        let mut meaning = vec![None; valid.num_vars()];
        let space = valid.space();
        for id in space.ids() {
            let o = space.option(id);
            if o.is_binary() {
                let b = valid.literal((id, 1));
                meaning[b.var_of(b.root_pointer()).to_index()] = Some(VarMeaning {
                    option: id,
                    value: None,
                });
            } else {
                for v in 0..o.arity() as u32 {
                    let b = valid.literal((id, v));
                    meaning[b.var_of(b.root_pointer()).to_index()] = Some(VarMeaning {
                        option: id,
                        value: Some(v),
                    });
                }
            }
        }
        Encoding { valid, meaning }
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
            let m = self.meaning[bdd.var_of(node).to_index()]
                .expect("every BDD variable encodes an option");
            let value = config.0[m.option.index()];
            let high = match m.value {
                None => value == 1,
                Some(v) => value == v,
            };
            node = if high {
                bdd.high_link_of(node)
            } else {
                bdd.low_link_of(node)
            };
        }
        node.is_one()
    }

    /// Disjoint cubes whose union is `bdd` (its paths to `true`), literals in option order.
    pub fn cubes(&self, bdd: &Bdd) -> Vec<Vec<CubeLiteral>> {
        bdd.sat_clauses()
            .map(|clause| {
                let mut cube: Vec<CubeLiteral> = clause
                    .to_values()
                    .into_iter()
                    .map(|(var, bit)| {
                        let m = self.meaning[var.to_index()]
                            .expect("every BDD variable encodes an option");
                        match m.value {
                            None => CubeLiteral {
                                option: m.option,
                                value: 1,
                                holds: bit,
                            },
                            Some(v) => CubeLiteral {
                                option: m.option,
                                value: v,
                                holds: bit,
                            },
                        }
                    })
                    .collect();
                cube.sort();
                cube
            })
            .collect()
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
                cube.iter()
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
        cubes.join(" ∨ ")
    }

    /// The configurations that give every option in `options` the same value as `config`.
    fn agreeing_with(&self, options: &BTreeSet<OptionId>, config: &Configuration) -> Bdd {
        options.iter().fold(self.everything(), |acc, id| {
            acc.and(&self.valid.literal((*id, config.0[id.index()])))
        })
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
}

impl Subspace {
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
        (!bdd.is_false()).then(|| Subspace {
            description: self.description.and(&other.description),
            bdd,
        })
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
            parts: vec![Subspace {
                description: enc.everything(),
                bdd: enc.valid.bdd().clone(),
            }],
        }
    }

    /// A partition from formulas over option literals (disjoint on valid configurations,
    /// covering them); empty parts are dropped. For tests and hand-made partitions.
    pub fn from_descriptions(enc: &Encoding, descriptions: Vec<Bdd>) -> Self {
        let parts = descriptions
            .into_iter()
            .filter_map(|d| {
                let bdd = enc.valid.restricted(&d);
                (!bdd.is_false()).then_some(Subspace {
                    description: d,
                    bdd,
                })
            })
            .collect();
        Partition { parts }
    }

    pub(crate) fn from_parts(parts: Vec<Subspace>) -> Self {
        Partition { parts }
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
        let reach = Subspace {
            bdd: enc.valid.restricted(&reach_description),
            description: reach_description,
        };
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
        let outside = Subspace {
            bdd: enc.valid.restricted(&outside_description),
            description: outside_description,
        };
        if !outside.bdd.is_false() {
            within.parts.push(outside);
        }
        within
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
