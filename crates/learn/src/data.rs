//! The dataset as numbers, and the terms linear learners build from it.
//!
//! A [`Table`] holds every configuration's option values (the number, not the value index)
//! and its performance. Linear learners work with [`Basic`] factors — an option's value
//! (0/1, or the number of a numeric option) or a numeric option's value indicator — and
//! products of them ([`TermSpec`]), at most one factor per option.

use model::Factor;
use space::Dataset;

/// Option values and performance of every configuration of a dataset.
#[derive(Clone, Debug)]
pub struct Table {
    pub names: Vec<String>,
    /// Row-major option values: `rows[r][j]` is option j's value in configuration r.
    pub rows: Vec<Vec<f64>>,
    /// Distinct values of each numeric option (empty for binary options).
    pub levels: Vec<Vec<f64>>,
    pub performance: Vec<f64>,
}

impl Table {
    pub fn new(data: &Dataset) -> Table {
        let options = data.space.options();
        let rows = data
            .configurations
            .iter()
            .map(|c| {
                options
                    .iter()
                    .zip(&c.0)
                    .map(|(o, &v)| o.numeric_value(v))
                    .collect()
            })
            .collect();
        let levels = options
            .iter()
            .map(|o| match &o.domain {
                space::Domain::Binary => vec![],
                space::Domain::Numeric { values } => values.clone(),
            })
            .collect();
        Table {
            names: options.iter().map(|o| o.name.clone()).collect(),
            rows,
            levels,
            performance: data.performance.clone(),
        }
    }

    pub fn width(&self) -> usize {
        self.names.len()
    }

    /// The basic factors linear learners may use: every option's value, plus a value
    /// indicator per value of each numeric option with more than two values.
    pub fn basics(&self) -> Vec<Basic> {
        let mut out = Vec::new();
        for j in 0..self.width() {
            out.push(Basic::Value(j));
            if self.levels[j].len() > 2 {
                out.extend(self.levels[j].iter().map(|v| Basic::Equals(j, *v)));
            }
        }
        out
    }

    pub fn option_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// A factor of a term: an option's value, or 1 when a numeric option equals a value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Basic {
    Value(usize),
    Equals(usize, f64),
}

impl Basic {
    pub fn option(&self) -> usize {
        match self {
            Basic::Value(j) | Basic::Equals(j, _) => *j,
        }
    }

    pub fn eval(&self, row: &[f64]) -> f64 {
        match self {
            Basic::Value(j) => row[*j],
            Basic::Equals(j, v) => (row[*j] == *v) as u8 as f64,
        }
    }

    pub fn to_factor(self, names: &[String]) -> Factor {
        match self {
            Basic::Value(j) => Factor::Option(names[j].clone()),
            Basic::Equals(j, v) => Factor::Equals(names[j].clone(), v),
        }
    }

    /// A total order key (option, then kind and value) so terms have one spelling.
    fn key(self) -> (usize, u64) {
        match self {
            Basic::Value(j) => (j, 0),
            Basic::Equals(j, v) => (j, 1 + v.to_bits()),
        }
    }
}

/// A product of basic factors over distinct options, sorted; empty = the intercept.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct TermSpec(pub Vec<Basic>);

impl TermSpec {
    pub fn eval(&self, row: &[f64]) -> f64 {
        self.0.iter().map(|b| b.eval(row)).product()
    }

    pub fn degree(&self) -> usize {
        self.0.len()
    }

    /// This term times one more factor, if that factor's option is not in it yet.
    pub fn times(&self, b: Basic) -> Option<TermSpec> {
        if self.0.iter().any(|f| f.option() == b.option()) {
            return None;
        }
        let mut factors = self.0.clone();
        factors.push(b);
        factors.sort_by_key(|b| b.key());
        Some(TermSpec(factors))
    }

    /// A hashable identity of the term.
    pub fn key(&self) -> Vec<(usize, u64)> {
        self.0.iter().map(|b| b.key()).collect()
    }

    pub fn to_factors(&self, names: &[String]) -> Vec<Factor> {
        self.0.iter().map(|b| b.to_factor(names)).collect()
    }

    /// The term's values on the given rows.
    pub fn column(&self, table: &Table, rows: &[usize]) -> Vec<f64> {
        rows.iter().map(|&r| self.eval(&table.rows[r])).collect()
    }
}

/// Every term of degree 1..=`degree` over the basic factors (one factor per option).
pub fn all_terms(basics: &[Basic], degree: usize) -> Vec<TermSpec> {
    let mut out: Vec<TermSpec> = Vec::new();
    let mut frontier = vec![TermSpec::default()];
    for _ in 0..degree {
        let mut next = Vec::new();
        for t in &frontier {
            // Extend only with factors after the term's last one, so each set appears once.
            let start =
                t.0.last()
                    .map_or(0, |last| basics.iter().position(|b| b == last).unwrap() + 1);
            for b in &basics[start..] {
                if let Some(n) = t.times(*b) {
                    next.push(n);
                }
            }
        }
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

/// Tables of binary options for the learners' unit tests.
#[cfg(test)]
impl Table {
    /// Every combination of `n` binary options named o0, o1, …, with `f` as performance.
    pub fn full_factorial(n: usize, mut f: impl FnMut(&[f64]) -> f64) -> Table {
        let names: Vec<String> = (0..n).map(|j| format!("o{j}")).collect();
        let rows: Vec<Vec<f64>> = (0..1u32 << n)
            .map(|i| (0..n).map(|j| ((i >> j) & 1) as f64).collect())
            .collect();
        let performance = rows.iter().map(|r| f(r)).collect();
        Table {
            levels: vec![vec![]; n],
            names,
            rows,
            performance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_have_one_factor_per_option() {
        let basics = vec![
            Basic::Value(0),
            Basic::Value(1),
            Basic::Equals(1, 2.0),
            Basic::Value(2),
        ];
        let terms = all_terms(&basics, 2);
        // 4 singles; pairs: 0×1, 0×(1=2), 0×2, 1×2, (1=2)×2.
        assert_eq!(terms.len(), 9);
        let t = TermSpec(vec![Basic::Value(2)])
            .times(Basic::Value(0))
            .unwrap();
        assert_eq!(t.0, vec![Basic::Value(0), Basic::Value(2)]);
        assert!(t.times(Basic::Equals(2, 1.0)).is_none());
        assert_eq!(t.eval(&[2.0, 0.0, 3.0]), 6.0);
        assert_eq!(Basic::Equals(1, 2.0).eval(&[0.0, 2.0]), 1.0);
    }
}
