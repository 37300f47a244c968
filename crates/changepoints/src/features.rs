//! Configurations as 0/1 feature vectors, the columns of the association models (§3.3.2):
//! a binary option is one feature; a numeric option is one feature per value other than its
//! first (the reference value), so every feature is something a user selects.

use space::{ConfigSpace, Configuration, Domain};

/// The features of a space and how a configuration sets them.
#[derive(Clone, Debug)]
pub struct Features {
    names: Vec<String>,
    /// Per option, its first feature; a numeric option's value `i > 0` is feature
    /// `first + i - 1`.
    first: Vec<usize>,
}

impl Features {
    pub fn new(space: &ConfigSpace) -> Features {
        let mut names = Vec::new();
        let mut first = Vec::new();
        for option in space.options() {
            first.push(names.len());
            match &option.domain {
                Domain::Binary => names.push(option.name.clone()),
                Domain::Numeric { .. } => {
                    for i in 1..option.arity() as u32 {
                        names.push(format!("{}={}", option.name, option.format_value(i)));
                    }
                }
            }
        }
        Features { names, first }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn name(&self, feature: usize) -> &str {
        &self.names[feature]
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The configuration's 0/1 row.
    pub fn row(&self, space: &ConfigSpace, config: &Configuration) -> Vec<f64> {
        let mut row = vec![0.0; self.names.len()];
        for (o, option) in space.options().iter().enumerate() {
            let value = config.0[o];
            if option.is_binary() {
                row[self.first[o]] = f64::from(value);
            } else if value > 0 {
                row[self.first[o] + value as usize - 1] = 1.0;
            }
        }
        row
    }

    /// The features `config` selects.
    pub fn selected(&self, space: &ConfigSpace, config: &Configuration) -> Vec<usize> {
        let row = self.row(space, config);
        (0..row.len()).filter(|f| row[*f] != 0.0).collect()
    }

    /// The option and value a feature stands for: binary options are selected (value 1).
    pub fn literal(&self, feature: usize) -> (space::OptionId, u32) {
        let o = self.first.partition_point(|f| *f <= feature) - 1;
        // Binary options have one feature, value 1; numeric ones count values from 1.
        (
            space::OptionId(o as u32),
            (feature - self.first[o]) as u32 + 1,
        )
    }
}
