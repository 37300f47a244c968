//! The set of valid configurations of a space as one BDD, and the questions answered on it:
//! satisfiable, exact count, enumeration, membership, exactly uniform sampling, lightest and
//! heaviest completions, and uniform sampling at a given number of selected options.
//!
//! Encoding ([`OptionVars`]): one BDD variable per binary option. A numeric option with at
//! most [`ONE_HOT_MAX_VALUES`] values has one variable per value (one-hot, with an
//! exactly-one rule); a larger one, or every numeric option of a space whose one-hot encoding
//! would pass the BDD library's variable limit, has the bits of its value index (a log
//! encoding, with the rule index < number of values), so 10^6 values take 20 variables.
//! Either way a valid valuation is exactly one configuration, so counts and uniform sampling
//! over valuations are counts and uniform sampling over configurations. Variables follow
//! option order, so a space declared tree-first keeps related options close in the ordering.

use biodivine_lib_bdd::{
    Bdd, BddNode, BddPartialValuation, BddPointer, BddValuation, BddVariable, BddVariableSet,
};
use num_bigint::{BigUint, RandBigInt};
use num_traits::{One, Zero};
use rand::Rng;

use crate::Error;
use crate::formula::Formula;
use crate::space::{ConfigSpace, Configuration, OptionId};

/// A literal of the space: an option taking one value index.
pub type Literal = (OptionId, u32);

/// Numeric options with at most this many values are one-hot encoded; larger ones write
/// their value index in binary. One-hot keeps small options' variables readable as values.
pub const ONE_HOT_MAX_VALUES: usize = 1024;

/// The BDD library numbers variables with u16 and keeps the last two values.
const VARIABLE_LIMIT: usize = u16::MAX as usize - 2;

/// The BDD variables of one option, consecutive in the variable order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionVars {
    /// A binary option: one variable, true when the option is selected.
    Binary(BddVariable),
    /// A numeric option: one variable per value index, exactly one of them true.
    OneHot(Vec<BddVariable>),
    /// A numeric option: the bits of its value index, most significant first; valuations
    /// whose index is past the last value are not valid.
    Log(Vec<BddVariable>),
}

impl OptionVars {
    pub fn vars(&self) -> &[BddVariable] {
        match self {
            OptionVars::Binary(v) => std::slice::from_ref(v),
            OptionVars::OneHot(vs) | OptionVars::Log(vs) => vs,
        }
    }

    /// The value of the `j`-th variable (of [`Self::vars`]) when the option takes `value`.
    fn bit(&self, value: u32, j: usize) -> bool {
        match self {
            OptionVars::Binary(_) => value == 1,
            OptionVars::OneHot(_) => j == value as usize,
            OptionVars::Log(bits) => (value >> (bits.len() - 1 - j)) & 1 == 1,
        }
    }
}

/// What one BDD variable of a space stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariableRole {
    /// The binary option is selected.
    Selected(OptionId),
    /// The numeric option takes this value index (one-hot).
    Value(OptionId, u32),
    /// The bit of weight 2^k (the second field is k) of the numeric option's value index.
    IndexBit(OptionId, u32),
}

/// Bits needed for the indices `0..n` (at least one, so every option has a variable).
fn index_bits(n: usize) -> usize {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).max(1) as usize
}

/// The valid configurations of a [`ConfigSpace`], compiled to a BDD.
pub struct ValidConfigurations<'s> {
    space: &'s ConfigSpace,
    vars: BddVariableSet,
    /// BDD variables of each option, by option id.
    option_vars: Vec<OptionVars>,
    /// For every BDD variable: its option.
    var_option: Vec<OptionId>,
    bdd: Bdd,
}

impl<'s> ValidConfigurations<'s> {
    /// Compiles the space; an unsatisfiable space is an error naming the rule that made it so.
    pub fn new(space: &'s ConfigSpace) -> Result<Self, Error> {
        let rules = space.rules();
        let order = variable_order(space, &rules);
        let arity = |id: OptionId| space.option(id).arity();
        let binary = |id: OptionId| space.option(id).is_binary();
        let one_hot_total: usize = order
            .iter()
            .map(|&id| if binary(id) { 1 } else { arity(id) })
            .sum();
        let log_encoded = |id: OptionId| {
            !binary(id) && (arity(id) > ONE_HOT_MAX_VALUES || one_hot_total > VARIABLE_LIMIT)
        };
        let width = |id: OptionId| {
            if binary(id) {
                1
            } else if log_encoded(id) {
                index_bits(arity(id))
            } else {
                arity(id)
            }
        };
        let needed: usize = order.iter().map(|id| width(*id)).sum();
        if needed > VARIABLE_LIMIT {
            return Err(Error::Invalid(format!(
                "space needs {needed} BDD variables (one per binary option, per value of a small numeric option, per index bit of a large one); at most {VARIABLE_LIMIT} are supported"
            )));
        }
        let mut option_vars = vec![OptionVars::Binary(BddVariable::from_index(0)); space.len()];
        let mut var_option = Vec::new();
        let mut next = 0usize;
        for &id in &order {
            let width = width(id);
            let vs: Vec<BddVariable> = (next..next + width).map(BddVariable::from_index).collect();
            option_vars[id.index()] = if binary(id) {
                OptionVars::Binary(vs[0])
            } else if log_encoded(id) {
                OptionVars::Log(vs)
            } else {
                OptionVars::OneHot(vs)
            };
            var_option.extend(std::iter::repeat_n(id, width));
            next += width;
        }
        let vars = BddVariableSet::new_anonymous(next as u16);
        let mut this = ValidConfigurations {
            space,
            vars,
            option_vars,
            var_option,
            bdd: BddVariableSet::new_anonymous(0).mk_true(),
        };
        let mut bdd = this.vars.mk_true();
        for id in space.ids() {
            match &this.option_vars[id.index()] {
                OptionVars::Binary(_) => {}
                OptionVars::OneHot(vs) => bdd = bdd.and(&this.exactly_one(vs)),
                OptionVars::Log(bits) => bdd = bdd.and(&this.index_below(bits, arity(id))),
            }
        }
        // Conjoin rules in the order of their variables, so intermediate BDDs stay local.
        let position: Vec<usize> = {
            let mut p = vec![0; space.len()];
            for (i, id) in order.iter().enumerate() {
                p[id.index()] = i;
            }
            p
        };
        let mut rules = rules;
        rules.sort_by_key(|r| {
            r.formula
                .names()
                .iter()
                .filter_map(|n| space.find(n))
                .map(|id| position[id.index()])
                .max()
                .unwrap_or(0)
        });
        for rule in rules {
            let r = this.compile(&rule.formula);
            bdd = bdd.and(&r);
            if bdd.is_false() {
                return Err(Error::Unsatisfiable(format!(
                    "no configuration satisfies {} together with the rules before it",
                    rule.why
                )));
            }
        }
        this.bdd = bdd;
        Ok(this)
    }

    /// Exactly one of `vs` holds, built node by node in O(n): `E_i` (exactly one of
    /// `v_i..v_n`) tests `v_i` and goes on to `Z_{i+1}` (none of the rest) or `E_{i+1}`. Built
    /// by pairwise exclusions instead, it costs O(n³) (a 1,001-value option took 22 s).
    fn exactly_one(&self, vs: &[BddVariable]) -> Bdd {
        let mut vs = vs.to_vec();
        vs.sort();
        let num_vars = self.vars.num_vars();
        let mut nodes = vec![BddNode::mk_zero(num_vars), BddNode::mk_one(num_vars)];
        let (mut none_after, mut one_after) = (BddPointer::one(), BddPointer::zero());
        for (i, v) in vs.iter().enumerate().rev() {
            let one = BddNode::mk_node(*v, one_after, none_after);
            if i == 0 {
                nodes.push(one);
                break;
            }
            nodes.push(BddNode::mk_node(*v, none_after, BddPointer::zero()));
            none_after = BddPointer::from_index(nodes.len() - 1);
            nodes.push(one);
            one_after = BddPointer::from_index(nodes.len() - 1);
        }
        if vs.is_empty() {
            return self.vars.mk_false();
        }
        Bdd::from_nodes(&nodes).expect("nodes in variable order, children first")
    }

    /// `bits` (most significant first) read as a number are below `n`, built from the least
    /// significant bit up: below on bits i..0 is `¬b_i ∨ below(i-1)` where n has bit i set,
    /// `¬b_i ∧ below(i-1)` where it has not.
    fn index_below(&self, bits: &[BddVariable], n: usize) -> Bdd {
        if n >= 1 << bits.len() {
            return self.vars.mk_true();
        }
        let mut below = self.vars.mk_false();
        for (k, var) in bits.iter().rev().enumerate() {
            let clear = self.vars.mk_literal(*var, false);
            below = if (n >> k) & 1 == 1 {
                clear.or(&below)
            } else {
                clear.and(&below)
            };
        }
        below
    }

    /// The BDD of a literal: "option `id` takes value index `value`" (for a binary option,
    /// 1 is selected), over whatever variables encode the option.
    pub fn literal(&self, (id, value): Literal) -> Bdd {
        match &self.option_vars[id.index()] {
            OptionVars::Binary(v) => self.vars.mk_literal(*v, value == 1),
            OptionVars::OneHot(vs) => self.vars.mk_var(vs[value as usize]),
            OptionVars::Log(_) => {
                self.vars
                    .mk_conjunctive_clause(&BddPartialValuation::from_values(
                        &self.assignment(&[(id, value)]),
                    ))
            }
        }
    }

    /// The BDD variables of an option and how they encode its values.
    pub fn option_vars(&self, id: OptionId) -> &OptionVars {
        &self.option_vars[id.index()]
    }

    /// What a BDD variable of this space stands for.
    pub fn variable_role(&self, var: BddVariable) -> VariableRole {
        let id = self.var_option[var.to_index()];
        match &self.option_vars[id.index()] {
            OptionVars::Binary(_) => VariableRole::Selected(id),
            OptionVars::OneHot(vs) => {
                VariableRole::Value(id, (var.to_index() - vs[0].to_index()) as u32)
            }
            OptionVars::Log(bits) => VariableRole::IndexBit(
                id,
                (bits.len() - 1 - (var.to_index() - bits[0].to_index())) as u32,
            ),
        }
    }

    /// Compiles a formula of the space (atoms checked by [`ConfigSpace::add_formula`]).
    pub fn compile(&self, f: &Formula) -> Bdd {
        match f {
            Formula::Const(true) => self.vars.mk_true(),
            Formula::Const(false) => self.vars.mk_false(),
            Formula::Var(_) | Formula::Equals(..) => self.literal(self.space.atom_literal(f)),
            Formula::Not(a) => self.compile(a).not(),
            Formula::And(xs) => xs
                .iter()
                .fold(self.vars.mk_true(), |acc, x| acc.and(&self.compile(x))),
            Formula::Or(xs) => xs
                .iter()
                .fold(self.vars.mk_false(), |acc, x| acc.or(&self.compile(x))),
            Formula::Implies(a, b) => self.compile(a).imp(&self.compile(b)),
            Formula::Iff(a, b) => self.compile(a).iff(&self.compile(b)),
            Formula::ExactlyOne(xs) => {
                // Binary options' own variables: one linear BDD; anything else pairwise.
                let mut vars: Option<Vec<BddVariable>> = xs
                    .iter()
                    .map(|x| match x {
                        Formula::Var(_) => {
                            let (id, _) = self.space.atom_literal(x);
                            Some(self.option_vars[id.index()].vars()[0])
                        }
                        _ => None,
                    })
                    .collect();
                if let Some(v) = &mut vars {
                    v.sort();
                }
                match vars {
                    Some(vars) if vars.windows(2).all(|w| w[0] != w[1]) => self.exactly_one(&vars),
                    _ => {
                        let parts: Vec<Bdd> = xs.iter().map(|x| self.compile(x)).collect();
                        let mut none = self.vars.mk_true();
                        let mut one = self.vars.mk_false();
                        for p in &parts {
                            one = one.and(&p.not()).or(&none.and(p));
                            none = none.and(&p.not());
                        }
                        one
                    }
                }
            }
        }
    }

    pub fn space(&self) -> &'s ConfigSpace {
        self.space
    }

    /// The BDD of all valid configurations.
    pub fn bdd(&self) -> &Bdd {
        &self.bdd
    }

    pub fn bdd_size(&self) -> usize {
        self.bdd.size()
    }

    /// The exact number of valid configurations.
    pub fn count(&self) -> BigUint {
        self.bdd.exact_cardinality()
    }

    /// The valid configurations that also satisfy `extra`, as a BDD.
    pub fn restricted(&self, extra: &Bdd) -> Bdd {
        self.bdd.and(extra)
    }

    /// The BDD variable values that express the literals.
    fn assignment(&self, literals: &[Literal]) -> Vec<(BddVariable, bool)> {
        let mut out = Vec::new();
        for &(id, value) in literals {
            let ov = &self.option_vars[id.index()];
            out.extend(
                ov.vars()
                    .iter()
                    .enumerate()
                    .map(|(j, v)| (*v, ov.bit(value, j))),
            );
        }
        out
    }

    /// Restricts a BDD to the literals (cofactor); false means no completion exists.
    pub fn cofactor(&self, bdd: &Bdd, literals: &[Literal]) -> Bdd {
        let assignment = self.assignment(literals);
        bdd.restrict(&assignment)
    }

    /// Options in BDD variable order: fixing them in this order lets [`Self::step`] walk the
    /// BDD instead of re-restricting it.
    pub fn option_order(&self) -> Vec<OptionId> {
        let mut ids: Vec<OptionId> = self.space.ids().collect();
        ids.sort_by_key(|id| self.option_vars[id.index()].vars()[0].to_index());
        ids
    }

    /// From `node` of `bdd`, the node reached by setting the option's variables to the
    /// literal; the zero pointer if that leaves no satisfying completion. Options must be
    /// stepped in [`Self::option_order`].
    pub fn step(&self, bdd: &Bdd, mut node: BddPointer, (id, value): Literal) -> BddPointer {
        let ov = &self.option_vars[id.index()];
        for (j, var) in ov.vars().iter().enumerate() {
            if node.is_terminal() || bdd.var_of(node) != *var {
                continue; // the BDD does not test this variable here: either value is fine
            }
            node = if ov.bit(value, j) {
                bdd.high_link_of(node)
            } else {
                bdd.low_link_of(node)
            };
        }
        node
    }

    /// Whether some valid configuration contains all the literals. A depth-first search for
    /// a path to `true` that agrees with them: no BDD is built, and the search stops at the
    /// first such path (t-wise sampling asks this for every candidate tuple).
    pub fn allows(&self, literals: &[Literal]) -> bool {
        let fixed = self.assignment(literals);
        let bdd = &self.bdd;
        let mut failed = vec![false; bdd.size()];
        let mut stack = vec![bdd.root_pointer()];
        while let Some(node) = stack.pop() {
            if node.is_one() {
                return true;
            }
            if node.is_zero() || failed[node.to_index()] {
                continue;
            }
            // Each node is expanded once; if it led to `true` the search has already ended.
            failed[node.to_index()] = true;
            let var = bdd.var_of(node);
            match fixed.iter().find(|(v, _)| *v == var) {
                Some((_, true)) => stack.push(bdd.high_link_of(node)),
                Some((_, false)) => stack.push(bdd.low_link_of(node)),
                None => {
                    stack.push(bdd.low_link_of(node));
                    stack.push(bdd.high_link_of(node));
                }
            }
        }
        false
    }

    pub fn is_valid(&self, config: &Configuration) -> bool {
        // A log encoding reads only an index's low bits: a larger index must not alias a value.
        let in_range = (config.0.iter().zip(self.space.options()))
            .all(|(value, o)| (*value as usize) < o.arity());
        in_range && self.bdd.eval_in(&self.valuation(config))
    }

    fn valuation(&self, config: &Configuration) -> BddValuation {
        let mut v = BddValuation::all_false(self.vars.num_vars());
        for (ov, value) in self.option_vars.iter().zip(&config.0) {
            for (j, var) in ov.vars().iter().enumerate() {
                v.set_value(*var, ov.bit(*value, j));
            }
        }
        v
    }

    /// Reads a configuration off a full valuation of the BDD variables. A numeric option
    /// whose one-hot variables are all unset (possible only where the BDD leaves them free,
    /// so any value is allowed) takes its first value.
    fn configuration(&self, valuation: &[bool]) -> Configuration {
        Configuration(
            self.option_vars
                .iter()
                .map(|ov| match ov {
                    OptionVars::Binary(v) => valuation[v.to_index()] as u32,
                    OptionVars::OneHot(vs) => {
                        vs.iter().position(|v| valuation[v.to_index()]).unwrap_or(0) as u32
                    }
                    OptionVars::Log(bits) => bits
                        .iter()
                        .fold(0, |index, v| index << 1 | valuation[v.to_index()] as u32),
                })
                .collect(),
        )
    }

    /// Every valid configuration, in BDD order.
    pub fn iter(&self) -> impl Iterator<Item = Configuration> + '_ {
        self.bdd
            .sat_valuations()
            .map(move |v| self.configuration(v.as_vector()))
    }

    /// One configuration drawn uniformly at random from those satisfying `bdd` (which must
    /// be a subset of this space's valid set, e.g. from [`Self::restricted`]).
    pub fn sample_uniform_in(&self, bdd: &Bdd, rng: &mut impl Rng) -> Option<Configuration> {
        let counts = CountTable::new(bdd);
        let total = counts.total(bdd);
        if total.is_zero() {
            return None;
        }
        let rank = rng.gen_biguint_below(&total);
        Some(self.unrank(bdd, &counts, rank))
    }

    /// One valid configuration drawn uniformly at random.
    pub fn sample_uniform(&self, rng: &mut impl Rng) -> Configuration {
        self.sample_uniform_in(&self.bdd, rng)
            .expect("a compiled space is satisfiable")
    }

    /// The configuration with the given rank among the satisfying valuations of `bdd`: a
    /// bijection from `0..count` onto them, so a uniform rank is a uniform configuration.
    fn unrank(&self, bdd: &Bdd, counts: &CountTable, mut rank: BigUint) -> Configuration {
        let n = self.vars.num_vars() as usize;
        let mut valuation = vec![false; n];
        let mut level = 0usize;
        let mut node = bdd.root_pointer();
        // Free variables above `node` take their bits from the rank.
        let take_free = |from: usize, to: usize, rank: &mut BigUint, valuation: &mut Vec<bool>| {
            for slot in valuation.iter_mut().take(to).skip(from) {
                *slot = (&*rank & BigUint::one()).is_one();
                *rank >>= 1;
            }
        };
        loop {
            let var = if node.is_terminal() {
                n
            } else {
                bdd.var_of(node).to_index()
            };
            take_free(level, var, &mut rank, &mut valuation);
            if node.is_terminal() {
                break;
            }
            let low = bdd.low_link_of(node);
            let low_total = counts.below(bdd, var, low);
            if rank < low_total {
                node = low;
            } else {
                rank -= low_total;
                valuation[var] = true;
                node = bdd.high_link_of(node);
            }
            level = var + 1;
        }
        self.configuration(&valuation)
    }

    /// Among the configurations in `bdd`, one with the fewest (`maximise = false`) or most
    /// selected binary options; ties go to the first in variable order. `None` if empty.
    pub fn extreme_in(&self, bdd: &Bdd, maximise: bool) -> Option<Configuration> {
        if bdd.is_false() {
            return None;
        }
        let n = self.vars.num_vars() as usize;
        let weight = |var: usize| self.space.option(self.var_option[var]).is_binary() as i64;
        // Free variables between levels: pick the value that helps (0 to minimise).
        let free_best = |from: usize, to: usize| -> i64 {
            if maximise {
                (from..to).map(weight).sum()
            } else {
                0
            }
        };
        let better = |a: i64, b: i64| if maximise { a > b } else { a < b };
        // Score of taking the edge from a node on `var` to `child`: the child's best, the free
        // variables skipped on the way, and the variable itself when the edge is high.
        let edge = |best: &[i64], var: usize, child: BddPointer, high: bool| -> Option<i64> {
            if child.is_zero() {
                return None;
            }
            let cv = if child.is_terminal() {
                n
            } else {
                bdd.var_of(child).to_index()
            };
            Some(
                best[child.to_index()]
                    + free_best(var + 1, cv)
                    + if high { weight(var) } else { 0 },
            )
        };
        let choose_high = |best: &[i64], var: usize, node: BddPointer| -> bool {
            match (
                edge(best, var, bdd.low_link_of(node), false),
                edge(best, var, bdd.high_link_of(node), true),
            ) {
                (Some(l), Some(h)) => better(h, l),
                (None, Some(_)) => true,
                _ => false,
            }
        };
        let mut best = vec![0i64; bdd.size()];
        // Nodes are stored children-first, so one forward pass computes every node's best.
        for p in bdd.pointers().filter(|p| !p.is_terminal()) {
            let var = bdd.var_of(p).to_index();
            let high = choose_high(&best, var, p);
            let child = if high {
                bdd.high_link_of(p)
            } else {
                bdd.low_link_of(p)
            };
            best[p.to_index()] = edge(&best, var, child, high)
                .expect("a reduced non-false node has a non-false child");
        }
        let mut valuation = vec![false; n];
        let mut node = bdd.root_pointer();
        let mut level = 0;
        loop {
            let var = if node.is_terminal() {
                n
            } else {
                bdd.var_of(node).to_index()
            };
            if maximise {
                for (i, slot) in valuation.iter_mut().enumerate().take(var).skip(level) {
                    *slot = weight(i) == 1;
                }
            }
            if node.is_terminal() {
                break;
            }
            let (lo, hi) = (bdd.low_link_of(node), bdd.high_link_of(node));
            let take_high = choose_high(&best, var, node);
            valuation[var] = take_high;
            node = if take_high { hi } else { lo };
            level = var + 1;
        }
        // A numeric option's free one-hot variables may all be set by `maximise`: keep one.
        let config = self.configuration(&valuation);
        debug_assert!(self.bdd.eval_in(&self.valuation(&config)));
        Some(config)
    }

    /// For each number k of selected binary options, how many valid configurations have
    /// exactly k (index k of the result).
    pub fn count_by_selected(&self) -> Vec<BigUint> {
        let table = DistanceTable::new(self, &self.bdd);
        table.at_root(&self.bdd)
    }

    /// A valid configuration drawn uniformly among those with exactly `k` selected binary
    /// options; `None` if there is none.
    pub fn sample_with_selected(
        &self,
        k: usize,
        table: &DistanceTable,
        rng: &mut impl Rng,
    ) -> Option<Configuration> {
        table.sample(self, &self.bdd, k, rng)
    }

    pub fn distance_table(&self) -> DistanceTable {
        DistanceTable::new(self, &self.bdd)
    }

    fn is_binary_var(&self, var: usize) -> bool {
        self.space.option(self.var_option[var]).is_binary()
    }

    pub fn num_vars(&self) -> usize {
        self.vars.num_vars() as usize
    }
}

/// A BDD variable order for the options: the FORCE heuristic (Aloul et al., 2003). Each
/// rule is a hyperedge over its options; options move to the mean centre of gravity of their
/// rules, repeatedly. Declaration order (usually tree order) is the starting point, and the
/// result is kept only if it shortens the total span of the rules.
fn variable_order(space: &ConfigSpace, rules: &[crate::space::Rule]) -> Vec<OptionId> {
    let n = space.len();
    let edges: Vec<Vec<usize>> = rules
        .iter()
        .map(|r| {
            let mut v: Vec<usize> = r
                .formula
                .names()
                .iter()
                .filter_map(|name| space.find(name))
                .map(|id| id.index())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .filter(|v| v.len() > 1)
        .collect();
    let span = |pos: &[f64]| -> f64 {
        edges
            .iter()
            .map(|e| {
                let (lo, hi) = e.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &o| {
                    (lo.min(pos[o]), hi.max(pos[o]))
                });
                hi - lo
            })
            .sum()
    };
    let mut pos: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let start_span = span(&pos);
    let mut best = (start_span, pos.clone());
    for _ in 0..50 {
        let mut sum = vec![0.0; n];
        let mut count = vec![0usize; n];
        for e in &edges {
            let centre = e.iter().map(|&o| pos[o]).sum::<f64>() / e.len() as f64;
            for &o in e {
                sum[o] += centre;
                count[o] += 1;
            }
        }
        let target: Vec<f64> = (0..n)
            .map(|o| {
                if count[o] == 0 {
                    pos[o]
                } else {
                    sum[o] / count[o] as f64
                }
            })
            .collect();
        let mut idx: Vec<usize> = (0..n).collect();
        idx.sort_by(|a, b| target[*a].partial_cmp(&target[*b]).unwrap().then(a.cmp(b)));
        for (rank, &o) in idx.iter().enumerate() {
            pos[o] = rank as f64;
        }
        let s = span(&pos);
        if s < best.0 {
            best = (s, pos.clone());
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| best.1[*a].partial_cmp(&best.1[*b]).unwrap());
    order.into_iter().map(|i| OptionId(i as u32)).collect()
}

/// Satisfying-assignment counts per BDD node, over the variables at and below the node.
struct CountTable {
    counts: Vec<BigUint>,
}

impl CountTable {
    fn new(bdd: &Bdd) -> Self {
        let n = bdd.num_vars() as usize;
        let mut counts = vec![BigUint::zero(); bdd.size()];
        for p in bdd.pointers() {
            if p.is_terminal() {
                counts[p.to_index()] = if p.is_one() {
                    BigUint::one()
                } else {
                    BigUint::zero()
                };
                continue;
            }
            let var = bdd.var_of(p).to_index();
            let child = |c: BddPointer| -> BigUint {
                let cv = if c.is_terminal() {
                    n
                } else {
                    bdd.var_of(c).to_index()
                };
                &counts[c.to_index()] << (cv - var - 1)
            };
            let total = child(bdd.low_link_of(p)) + child(bdd.high_link_of(p));
            counts[p.to_index()] = total;
        }
        CountTable { counts }
    }

    /// Completions of `child` reached from a node on variable `var` (free variables between).
    fn below(&self, bdd: &Bdd, var: usize, child: BddPointer) -> BigUint {
        let n = bdd.num_vars() as usize;
        let cv = if child.is_terminal() {
            n
        } else {
            bdd.var_of(child).to_index()
        };
        &self.counts[child.to_index()] << (cv - var - 1)
    }

    fn total(&self, bdd: &Bdd) -> BigUint {
        let root = bdd.root_pointer();
        if root.is_zero() {
            return BigUint::zero();
        }
        let top = if root.is_terminal() {
            bdd.num_vars() as usize
        } else {
            bdd.var_of(root).to_index()
        };
        &self.counts[root.to_index()] << top
    }
}

/// Counts per BDD node split by the number of selected binary options (a polynomial in the
/// count), for uniform sampling at a fixed distance from the empty configuration.
pub struct DistanceTable {
    polys: Vec<Vec<BigUint>>,
    /// binary_from[v]: number of binary-option variables among v..n.
    binary_from: Vec<usize>,
}

fn binomial_row(n: usize) -> Vec<BigUint> {
    let mut row = vec![BigUint::one()];
    for _ in 0..n {
        let mut next = vec![BigUint::zero(); row.len() + 1];
        for (i, c) in row.iter().enumerate() {
            next[i] += c;
            next[i + 1] += c;
        }
        row = next;
    }
    row
}

impl DistanceTable {
    fn new(valid: &ValidConfigurations, bdd: &Bdd) -> Self {
        let n = valid.num_vars();
        let mut binary_from = vec![0usize; n + 1];
        for v in (0..n).rev() {
            binary_from[v] = binary_from[v + 1] + valid.is_binary_var(v) as usize;
        }
        let mut table = DistanceTable {
            polys: vec![Vec::new(); bdd.size()],
            binary_from,
        };
        for p in bdd.pointers() {
            if p.is_terminal() {
                table.polys[p.to_index()] = if p.is_one() {
                    vec![BigUint::one()]
                } else {
                    vec![]
                };
                continue;
            }
            let var = bdd.var_of(p).to_index();
            let w = valid.is_binary_var(var) as usize;
            let lo = table.edge(valid, bdd, var, bdd.low_link_of(p));
            let hi = table.edge(valid, bdd, var, bdd.high_link_of(p));
            let mut poly = vec![BigUint::zero(); (lo.len()).max(hi.len() + w)];
            for (k, c) in lo.iter().enumerate() {
                poly[k] += c;
            }
            for (k, c) in hi.iter().enumerate() {
                poly[k + w] += c;
            }
            table.polys[p.to_index()] = poly;
        }
        table
    }

    /// The child's polynomial times the free variables between `var` and the child:
    /// (1+x) per free binary variable, 2 per free variable of a numeric option.
    fn edge(
        &self,
        valid: &ValidConfigurations,
        bdd: &Bdd,
        var: usize,
        child: BddPointer,
    ) -> Vec<BigUint> {
        let n = valid.num_vars();
        let cv = if child.is_terminal() {
            n
        } else {
            bdd.var_of(child).to_index()
        };
        self.spread(&self.polys[child.to_index()], var + 1, cv)
    }

    fn spread(&self, poly: &[BigUint], from: usize, to: usize) -> Vec<BigUint> {
        if poly.is_empty() {
            return vec![];
        }
        let free_binary = self.binary_from[from] - self.binary_from[to];
        let free_other = (to - from) - free_binary;
        let row = binomial_row(free_binary);
        let mut out = vec![BigUint::zero(); poly.len() + free_binary];
        for (k, c) in poly.iter().enumerate() {
            for (j, b) in row.iter().enumerate() {
                out[k + j] += (c * b) << free_other;
            }
        }
        out
    }

    fn at_root(&self, bdd: &Bdd) -> Vec<BigUint> {
        let root = bdd.root_pointer();
        let n = self.binary_from.len() - 1;
        let top = if root.is_terminal() {
            n
        } else {
            bdd.var_of(root).to_index()
        };
        self.spread(&self.polys[root.to_index()], 0, top)
    }

    fn sample(
        &self,
        valid: &ValidConfigurations,
        bdd: &Bdd,
        k: usize,
        rng: &mut impl Rng,
    ) -> Option<Configuration> {
        let n = valid.num_vars();
        let total = self.at_root(bdd).get(k).cloned().unwrap_or_default();
        if total.is_zero() {
            return None;
        }
        let mut valuation = vec![false; n];
        let mut remaining = k;
        let mut node = bdd.root_pointer();
        let mut level = 0;
        // Free variables between `level` and `to` receive `j` selected binary options, with j
        // drawn in proportion to C(free, j) * completions(child, remaining - j).
        let fill_free = |from: usize,
                         to: usize,
                         child_poly: &[BigUint],
                         remaining: &mut usize,
                         valuation: &mut Vec<bool>,
                         rng: &mut dyn rand::RngCore| {
            let binary: Vec<usize> = (from..to).filter(|v| valid.is_binary_var(*v)).collect();
            let row = binomial_row(binary.len());
            let weights: Vec<BigUint> = (0..=binary.len().min(*remaining))
                .map(|j| {
                    let rest = *remaining - j;
                    child_poly
                        .get(rest)
                        .map_or(BigUint::zero(), |c| c * &row[j])
                })
                .collect();
            let sum: BigUint = weights.iter().sum();
            let mut r = rng.gen_biguint_below(&sum);
            let mut j = 0;
            while r >= weights[j] {
                r -= &weights[j];
                j += 1;
            }
            // A uniform j-subset of the free binary variables.
            let mut chosen = binary.clone();
            for i in 0..j {
                let pick = rng.gen_range(i..chosen.len());
                chosen.swap(i, pick);
            }
            for v in &chosen[..j] {
                valuation[*v] = true;
            }
            // Free variables of numeric options: any value (the BDD does not constrain them).
            for v in (from..to).filter(|v| !valid.is_binary_var(*v)) {
                valuation[v] = rng.gen_bool(0.5);
            }
            *remaining -= j;
        };
        loop {
            let var = if node.is_terminal() {
                n
            } else {
                bdd.var_of(node).to_index()
            };
            fill_free(
                level,
                var,
                &self.polys[node.to_index()],
                &mut remaining,
                &mut valuation,
                rng,
            );
            if node.is_terminal() {
                break;
            }
            let w = valid.is_binary_var(var) as usize;
            let lo = self.edge(valid, bdd, var, bdd.low_link_of(node));
            let hi = self.edge(valid, bdd, var, bdd.high_link_of(node));
            let lo_c = lo.get(remaining).cloned().unwrap_or_default();
            let hi_c = if remaining >= w {
                hi.get(remaining - w).cloned().unwrap_or_default()
            } else {
                BigUint::zero()
            };
            let r = rng.gen_biguint_below(&(&lo_c + &hi_c));
            let (child, high) = if r < lo_c {
                (bdd.low_link_of(node), false)
            } else {
                (bdd.high_link_of(node), true)
            };
            valuation[var] = high;
            if high {
                remaining -= w;
            }
            // Free variables between this node and its child are handled at the next step,
            // but the child's polynomial must then be consulted from `var + 1`.
            level = var + 1;
            node = child;
        }
        debug_assert_eq!(remaining, 0);
        Some(valid.configuration(&valuation))
    }
}
