//! Compression (ConfigCrusher Algorithm 1): as few valid configurations as possible that
//! together contain every combination of values of each interaction the constraints allow,
//! and a lower bound on how many any such set needs.
//!
//! The paper merges the combinations of each maximal interaction pairwise around their
//! common options (the pivot), a heuristic that is not minimal: {A,B}, {A,C}, {B,C} give 6
//! configurations where 4 suffice, all pairs of n binary options give 2n where a covering
//! array needs far fewer. Here compression is a covering problem over the *relevant* options
//! (those in some interaction):
//! 1. every required tuple (an allowed combination of one maximal interaction) is listed;
//! 2. a first cover comes from the first-fit merge (the paper's idea), then a seeded local
//!    search ([`cover::improve`]) looks for covers with one row fewer until it fails;
//! 3. lower bounds ([`bound`]) — the largest interaction, pairwise-incompatible tuples, the
//!    binary covering-array number for sets of options all pairwise interacting — and, for
//!    small instances, an exhaustive branch and bound ([`cover::exists`]) that proves no
//!    smaller cover exists;
//! 4. each row is completed to a valid configuration with the fewest selected options.
//!
//! The result says whether it is proven minimal. Everything is deterministic (fixed seed,
//! step budgets instead of clocks).

mod bound;
mod cover;

use space::{Configuration, Literal, OptionId, ValidConfigurations};

use crate::Error;
use analysis::OptionSet;

/// The compressed configurations and the numbers reported beside them.
#[derive(Clone, Debug, PartialEq)]
pub struct Compression {
    /// The interactions that are not subsets of others, largest first.
    pub maximal: Vec<OptionSet>,
    /// Valid configurations covering every allowed combination of each maximal interaction.
    pub configurations: Vec<Configuration>,
    /// No set of configurations covering them all can be smaller: the largest of the bounds
    /// of [`bound`] and, when the search proved it, the size found.
    pub lower_bound: u128,
    /// Whether `configurations` is proven minimal (its size equals `lower_bound`).
    pub optimal: bool,
}

/// The covering problem over the relevant options.
pub(crate) struct Instance<'a> {
    pub valid: &'a ValidConfigurations<'a>,
    /// The relevant options (in some maximal interaction), and their arities.
    pub options: Vec<OptionId>,
    pub arity: Vec<u32>,
    /// Per maximal interaction, the positions of its options in `options`.
    pub interactions: Vec<Vec<usize>>,
    /// The required tuples: (interaction, values of its options in order).
    pub tuples: Vec<(usize, Vec<u32>)>,
    /// Per interaction, its tuples' indices by mixed-radix code of their values (`None`:
    /// not allowed by the constraints, not required).
    pub tuple_of: Vec<Vec<Option<usize>>>,
}

/// A row: one value per relevant option.
pub(crate) type Row = Vec<u32>;

impl Instance<'_> {
    /// The tuple a row covers in interaction `i`, if that combination is required.
    pub fn covered(&self, i: usize, row: &[u32]) -> Option<usize> {
        let mut code = 0usize;
        for &p in self.interactions[i].iter().rev() {
            code = code * self.arity[p] as usize + row[p] as usize;
        }
        self.tuple_of[i][code]
    }

    /// The literals of a (partial) row: the relevant options that are set.
    pub fn literals(&self, row: &[Option<u32>]) -> Vec<Literal> {
        row.iter()
            .enumerate()
            .filter_map(|(p, v)| v.map(|v| (self.options[p], v)))
            .collect()
    }

    pub fn row_allowed(&self, row: &[u32]) -> bool {
        let literals: Vec<Literal> = self
            .options
            .iter()
            .zip(row)
            .map(|(o, v)| (*o, *v))
            .collect();
        self.valid.allows(&literals)
    }
}

/// Compresses a set of interactions over `valid`'s space. `limit` caps the combinations of a
/// single interaction (2^|interaction| for binary options) to keep a runaway analysis from
/// asking for billions of configurations.
pub fn compress(
    valid: &ValidConfigurations,
    interactions: &[OptionSet],
    limit: u128,
) -> Result<Compression, Error> {
    let space = valid.space();
    let mut unique: Vec<OptionSet> = interactions
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect();
    unique.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    unique.dedup();
    let mut maximal: Vec<OptionSet> = Vec::new();
    for s in unique {
        if !maximal.iter().any(|m| s.is_subset(m)) {
            maximal.push(s);
        }
    }
    for m in &maximal {
        if let Some(o) = m.iter().find(|o| o.index() >= space.len()) {
            return Err(Error::UnknownOption {
                name: format!("#{}", o.0),
                context: "an interaction (the space has fewer options)".into(),
            });
        }
    }
    let mut options: Vec<OptionId> = maximal.iter().flat_map(|m| m.iter()).collect();
    options.sort();
    options.dedup();
    let arity: Vec<u32> = options
        .iter()
        .map(|o| space.option(*o).arity() as u32)
        .collect();
    let position = |o: OptionId| options.binary_search(&o).expect("relevant");
    let mut instance = Instance {
        valid,
        options: options.clone(),
        arity: arity.clone(),
        interactions: Vec::new(),
        tuples: Vec::new(),
        tuple_of: Vec::new(),
    };
    for (i, m) in maximal.iter().enumerate() {
        let positions: Vec<usize> = m.iter().map(position).collect();
        let needed = positions
            .iter()
            .try_fold(1u128, |acc, p| acc.checked_mul(u128::from(arity[*p])));
        let count = match needed {
            Some(n) if n <= limit => n as usize,
            _ => {
                return Err(Error::TooManyCombinations {
                    needed: needed.unwrap_or(u128::MAX),
                    limit,
                });
            }
        };
        let mut tuple_of = vec![None; count];
        let mut digits = vec![0u32; positions.len()];
        for slot in tuple_of.iter_mut() {
            let combo: Vec<Literal> = positions
                .iter()
                .zip(&digits)
                .map(|(p, v)| (options[*p], *v))
                .collect();
            if valid.allows(&combo) {
                *slot = Some(instance.tuples.len());
                instance.tuples.push((i, digits.clone()));
            }
            // Next combination (odometer, the first option fastest, as `covered` codes it).
            for (d, p) in digits.iter_mut().zip(&positions) {
                *d += 1;
                if *d < arity[*p] {
                    break;
                }
                *d = 0;
            }
        }
        instance.interactions.push(positions);
        instance.tuple_of.push(tuple_of);
    }

    let mut lower_bound = bound::lower_bound(&instance).max(1);
    let rows: Vec<Row> = if instance.tuples.is_empty() {
        Vec::new()
    } else {
        let first = cover::first_fit(&instance)?;
        cover::improve(&instance, first, lower_bound as usize)
    };
    let mut optimal = rows.len().max(1) as u128 <= lower_bound;
    if !optimal && cover::exists(&instance, rows.len() - 1) == Some(false) {
        lower_bound = rows.len() as u128;
        optimal = true;
    }

    // Complete each row to a valid configuration with the fewest selected options.
    let rows = if rows.is_empty() { vec![vec![]] } else { rows };
    let mut configurations = Vec::new();
    for row in &rows {
        let mut bdd = valid.bdd().clone();
        for (o, v) in instance.options.iter().zip(row) {
            bdd = bdd.and(&valid.literal((*o, *v)));
        }
        let config = valid.extreme_in(&bdd, false).ok_or_else(|| {
            Error::Space(space::Error::Unsatisfiable(
                "a row of relevant options the constraints allowed has no completion".into(),
            ))
        })?;
        if !configurations.contains(&config) {
            configurations.push(config);
        }
    }
    Ok(Compression {
        maximal,
        configurations,
        lower_bound,
        optimal,
    })
}
