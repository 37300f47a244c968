//! The configuration space: options, their tree structure, groups and cross-tree constraints.

use std::collections::HashMap;
use std::fmt;

use crate::Error;
use crate::formula::Formula;

/// Index of an option in its [`ConfigSpace`], in declaration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OptionId(pub u32);

impl OptionId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The values an option can take.
#[derive(Clone, Debug, PartialEq)]
pub enum Domain {
    /// Selected (1) or not (0).
    Binary,
    /// One of an explicit, discretised list of values (sorted, distinct).
    Numeric { values: Vec<f64> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConfigOption {
    pub name: String,
    pub domain: Domain,
    /// A selected binary option requires its parent to be selected.
    pub parent: Option<OptionId>,
    /// A mandatory binary option is selected whenever its parent is (always, at the root).
    pub mandatory: bool,
    /// Per value of a numeric option, its exact decimal text when a 64-bit float cannot hold
    /// it (integers beyond 2^53): what reaches the program. Empty: none.
    pub exact: Vec<Option<String>>,
}

impl ConfigOption {
    pub fn is_binary(&self) -> bool {
        matches!(self.domain, Domain::Binary)
    }

    /// Number of values: 2 for binary options.
    pub fn arity(&self) -> usize {
        match &self.domain {
            Domain::Binary => 2,
            Domain::Numeric { values } => values.len(),
        }
    }

    /// The value with the given index as it appears in CSV output: 0/1 or the number.
    pub fn format_value(&self, index: u32) -> String {
        match &self.domain {
            Domain::Binary => index.to_string(),
            Domain::Numeric { values } => match self.exact.get(index as usize) {
                Some(Some(text)) => text.clone(),
                _ => format_number(values[index as usize]),
            },
        }
    }

    /// The index of a value read from text or a dataset, if it is in the domain.
    pub fn value_index(&self, value: f64) -> Option<u32> {
        match &self.domain {
            Domain::Binary if value == 0.0 => Some(0),
            Domain::Binary if value == 1.0 => Some(1),
            Domain::Binary => None,
            Domain::Numeric { values } => values
                .iter()
                .position(|v| (v - value).abs() <= 1e-9 * v.abs().max(1.0))
                .map(|i| i as u32),
        }
    }

    /// The numeric value of a value index (0/1 for binary options).
    pub fn numeric_value(&self, index: u32) -> f64 {
        match &self.domain {
            Domain::Binary => index as f64,
            Domain::Numeric { values } => values[index as usize],
        }
    }
}

/// How the configuration with no option selected (compact text `""`) is shown to a person,
/// everywhere.
pub const NO_OPTION_SELECTED: &str = "(no option selected)";

/// A configuration's compact text as shown to a person: the empty one has a name.
pub fn shown_configuration(text: &str) -> &str {
    if text.is_empty() {
        NO_OPTION_SELECTED
    } else {
        text
    }
}

/// The characters besides letters and digits an option's name may use; `docs/system-spec.md`
/// lists the same (a test reads it).
pub const NAME_PUNCTUATION: &str = "_.-:/+";

fn spaced(chars: &str) -> String {
    chars
        .chars()
        .map(String::from)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints a number the shortest way that reads back exactly (`6`, not `6.0`).
pub fn format_number(v: f64) -> String {
    format!("{v}")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    /// Exactly one member is selected when the parent is.
    Alternative,
    /// At least one member is selected when the parent is.
    Or,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub kind: GroupKind,
    /// `None`: the group sits at the root, so its rule always applies.
    pub parent: Option<OptionId>,
    pub members: Vec<OptionId>,
}

/// A cross-tree constraint as written, with where it came from (for error messages).
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    pub formula: Formula,
    pub origin: String,
}

/// One rule every valid configuration obeys, structural or cross-tree, with a sentence that
/// says what it means. Reasoning and explanations both start from [`ConfigSpace::rules`].
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub formula: Formula,
    pub why: String,
}

/// A configuration: one value index per option, in option order (binary: 0/1; numeric:
/// the index into the option's values).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Configuration(pub Vec<u32>);

/// Options, structure and constraints; what "a valid configuration" means.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigSpace {
    pub name: String,
    options: Vec<ConfigOption>,
    by_name: HashMap<String, OptionId>,
    groups: Vec<Group>,
    constraints: Vec<Constraint>,
}

impl ConfigSpace {
    pub fn new(name: impl Into<String>) -> Self {
        ConfigSpace {
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn options(&self) -> &[ConfigOption] {
        &self.options
    }

    pub fn option(&self, id: OptionId) -> &ConfigOption {
        &self.options[id.index()]
    }

    pub fn ids(&self) -> impl Iterator<Item = OptionId> {
        (0..self.options.len() as u32).map(OptionId)
    }

    pub fn len(&self) -> usize {
        self.options.len()
    }

    pub fn is_empty(&self) -> bool {
        self.options.is_empty()
    }

    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }

    pub fn find(&self, name: &str) -> Option<OptionId> {
        self.by_name.get(name).copied()
    }

    /// Looks an option up by name; `context` says where the name was used, for the error.
    pub fn resolve(&self, name: &str, context: &str) -> Result<OptionId, Error> {
        self.find(name).ok_or_else(|| Error::UnknownOption {
            name: name.to_string(),
            context: context.to_string(),
        })
    }

    pub fn names(&self) -> Vec<&str> {
        self.options.iter().map(|o| o.name.as_str()).collect()
    }

    /// Each option's value in a configuration, in the space's order: 0 or 1 for a binary
    /// option, the value itself for a numeric one (what learners and models compute with).
    pub fn values(&self, config: &Configuration) -> Vec<f64> {
        self.options
            .iter()
            .zip(&config.0)
            .map(|(o, &v)| o.numeric_value(v))
            .collect()
    }

    fn push(&mut self, option: ConfigOption) -> Result<OptionId, Error> {
        if option.name.is_empty()
            || !option
                .name
                .chars()
                .all(|c| c.is_alphanumeric() || NAME_PUNCTUATION.contains(c))
        {
            return Err(Error::Invalid(format!(
                "option name `{}` must be non-empty and use only letters, digits and {}",
                option.name,
                spaced(NAME_PUNCTUATION)
            )));
        }
        if self.by_name.contains_key(&option.name) {
            return Err(Error::Invalid(format!(
                "option `{}` is declared twice",
                option.name
            )));
        }
        if let Some(p) = option.parent
            && !self.option(p).is_binary()
        {
            return Err(Error::Invalid(format!(
                "option `{}` has numeric parent `{}`; parents must be binary",
                option.name,
                self.option(p).name
            )));
        }
        let id = OptionId(self.options.len() as u32);
        self.by_name.insert(option.name.clone(), id);
        self.options.push(option);
        Ok(id)
    }

    pub fn add_binary(
        &mut self,
        name: &str,
        parent: Option<OptionId>,
        mandatory: bool,
    ) -> Result<OptionId, Error> {
        self.push(ConfigOption {
            name: name.into(),
            domain: Domain::Binary,
            parent,
            mandatory,
            exact: Vec::new(),
        })
    }

    /// Adds a numeric option with the given discrete values (sorted and deduplicated here).
    pub fn add_numeric(&mut self, name: &str, values: &[f64]) -> Result<OptionId, Error> {
        let values: Vec<(f64, Option<String>)> = values.iter().map(|v| (*v, None)).collect();
        self.add_numeric_exact(name, &values)
    }

    /// [`Self::add_numeric`] with, per value, its exact text when a float cannot hold it (an
    /// integer beyond 2^53 written in a spec). Two values a float cannot tell apart are an
    /// error, not one value.
    pub fn add_numeric_exact(
        &mut self,
        name: &str,
        values: &[(f64, Option<String>)],
    ) -> Result<OptionId, Error> {
        let mut values: Vec<(f64, Option<String>)> = values.to_vec();
        if values.is_empty() || values.iter().any(|(v, _)| !v.is_finite()) {
            return Err(Error::Invalid(format!(
                "numeric option `{name}` needs at least one finite value"
            )));
        }
        values.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        values.dedup();
        if let Some(w) = values.windows(2).find(|w| w[0].0 == w[1].0) {
            let text =
                |(v, t): &(f64, Option<String>)| t.clone().unwrap_or_else(|| format_number(*v));
            return Err(Error::Invalid(format!(
                "numeric option `{name}`: values {} and {} are too close for a 64-bit float to \
                 tell apart",
                text(&w[0]),
                text(&w[1])
            )));
        }
        let exact: Vec<Option<String>> = if values.iter().any(|(_, t)| t.is_some()) {
            values.iter().map(|(_, t)| t.clone()).collect()
        } else {
            Vec::new()
        };
        self.push(ConfigOption {
            name: name.into(),
            domain: Domain::Numeric {
                values: values.into_iter().map(|(v, _)| v).collect(),
            },
            parent: None,
            mandatory: false,
            exact,
        })
    }

    /// Sets the parent of an already declared option (formats that name children before
    /// their parents need this).
    pub fn set_parent(&mut self, child: OptionId, parent: OptionId) -> Result<(), Error> {
        if !self.option(parent).is_binary() {
            return Err(Error::Invalid(format!(
                "option `{}` has numeric parent `{}`; parents must be binary",
                self.option(child).name,
                self.option(parent).name
            )));
        }
        // Refuse cycles: walk up from the new parent.
        let mut cur = Some(parent);
        while let Some(c) = cur {
            if c == child {
                return Err(Error::Invalid(format!(
                    "option `{}` would be its own ancestor",
                    self.option(child).name
                )));
            }
            cur = self.option(c).parent;
        }
        self.options[child.index()].parent = Some(parent);
        Ok(())
    }

    pub fn set_mandatory(&mut self, id: OptionId, mandatory: bool) {
        self.options[id.index()].mandatory = mandatory;
    }

    pub fn add_group(
        &mut self,
        kind: GroupKind,
        parent: Option<OptionId>,
        members: Vec<OptionId>,
    ) -> Result<(), Error> {
        if members.is_empty() {
            return Err(Error::Invalid("a group needs at least one member".into()));
        }
        if let Some(m) = members.iter().find(|m| !self.option(**m).is_binary()) {
            return Err(Error::Invalid(format!(
                "group member `{}` is numeric; group members must be binary",
                self.option(*m).name
            )));
        }
        self.groups.push(Group {
            kind,
            parent,
            members,
        });
        Ok(())
    }

    /// Parses and adds a cross-tree constraint; every name must be an option of this space.
    pub fn add_constraint(&mut self, text: &str, origin: &str) -> Result<(), Error> {
        let formula = Formula::parse(text).map_err(|e| Error::Constraint {
            constraint: text.to_string(),
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        self.add_formula(formula, origin)
    }

    pub fn add_formula(&mut self, formula: Formula, origin: &str) -> Result<(), Error> {
        self.check_atoms(&formula, origin)?;
        self.constraints.push(Constraint {
            formula,
            origin: origin.to_string(),
        });
        Ok(())
    }

    fn check_atoms(&self, f: &Formula, origin: &str) -> Result<(), Error> {
        let err = |message: String| Error::Constraint {
            constraint: f.to_string(),
            origin: origin.to_string(),
            message,
        };
        let mut result = Ok(());
        visit_atoms(f, &mut |atom| {
            if result.is_err() {
                return;
            }
            result = match atom {
                Formula::Var(n) => match self.find(n) {
                    None => Err(err(format!("unknown option `{n}`"))),
                    Some(id) if !self.option(id).is_binary() => Err(err(format!(
                        "numeric option `{n}` needs a value, as in `{n}=4`"
                    ))),
                    Some(_) => Ok(()),
                },
                Formula::Equals(n, v) => match self.find(n) {
                    None => Err(err(format!("unknown option `{n}`"))),
                    Some(id) if self.option(id).value_index(*v).is_none() => Err(err(format!(
                        "`{}` is not a value of option `{n}`",
                        format_number(*v)
                    ))),
                    Some(_) => Ok(()),
                },
                _ => Ok(()),
            };
        });
        result
    }

    /// The value index an atom of a (checked) formula refers to: `Var(a)` is `a = 1`.
    pub fn atom_literal(&self, atom: &Formula) -> (OptionId, u32) {
        match atom {
            Formula::Var(n) => (self.find(n).expect("checked atom"), 1),
            Formula::Equals(n, v) => {
                let id = self.find(n).expect("checked atom");
                (id, self.option(id).value_index(*v).expect("checked value"))
            }
            _ => panic!("not an atom: {atom}"),
        }
    }

    /// Every rule of the space: parent, mandatory and group structure, then cross-tree
    /// constraints. A configuration is valid exactly when it satisfies all of them.
    pub fn rules(&self) -> Vec<Rule> {
        let var = |id: OptionId| Formula::var(&self.option(id).name);
        let name = |id: OptionId| self.option(id).name.as_str();
        let mut rules = Vec::new();
        for (i, o) in self.options.iter().enumerate() {
            let id = OptionId(i as u32);
            if !o.is_binary() {
                continue;
            }
            if let Some(p) = o.parent {
                rules.push(Rule {
                    formula: Formula::implies(var(id), var(p)),
                    why: format!("`{}` requires its parent `{}`", o.name, name(p)),
                });
            }
            if o.mandatory {
                rules.push(match o.parent {
                    Some(p) => Rule {
                        formula: Formula::implies(var(p), var(id)),
                        why: format!(
                            "`{}` is mandatory whenever `{}` is selected",
                            o.name,
                            name(p)
                        ),
                    },
                    None => Rule {
                        formula: var(id),
                        why: format!("`{}` is mandatory", o.name),
                    },
                });
            }
        }
        for g in &self.groups {
            let list = g
                .members
                .iter()
                .map(|m| name(*m))
                .collect::<Vec<_>>()
                .join(", ");
            let under = g.parent.map_or(String::new(), |p| {
                format!(" when `{}` is selected", name(p))
            });
            let members: Vec<Formula> = g.members.iter().map(|m| var(*m)).collect();
            let (body, why) = match g.kind {
                GroupKind::Or => (
                    Formula::Or(members),
                    format!("at least one of {list} must be selected{under}"),
                ),
                GroupKind::Alternative => (
                    Formula::ExactlyOne(members),
                    format!("exactly one of {list} must be selected{under}"),
                ),
            };
            let formula = match g.parent {
                Some(p) => Formula::implies(var(p), body),
                None => body,
            };
            rules.push(Rule { formula, why });
            // Group members live under the group's parent.
            if let Some(p) = g.parent {
                for m in &g.members {
                    if self.option(*m).parent != Some(p) {
                        rules.push(Rule {
                            formula: Formula::implies(var(*m), var(p)),
                            why: format!("`{}` requires its parent `{}`", name(*m), name(p)),
                        });
                    }
                }
            }
        }
        for c in &self.constraints {
            rules.push(Rule {
                formula: c.formula.clone(),
                why: format!("constraint `{}` ({})", c.formula, c.origin),
            });
        }
        rules
    }

    /// Whether a configuration satisfies a formula of this space.
    pub fn satisfies(&self, config: &Configuration, formula: &Formula) -> bool {
        formula.eval(&|atom| {
            let (id, value) = self.atom_literal(atom);
            config.0[id.index()] == value
        })
    }

    /// The rules a configuration breaks, in rule order; empty means valid.
    pub fn violations(&self, config: &Configuration) -> Vec<Rule> {
        self.rules()
            .into_iter()
            .filter(|r| !self.satisfies(config, &r.formula))
            .collect()
    }

    /// Parses a configuration written as the selected binary options and numeric values:
    /// `a,b,level=6` (unlisted binary options are off; every numeric option needs a value).
    /// `a=0`/`a=1` also work for binary options.
    pub fn parse_configuration(&self, text: &str) -> Result<Configuration, Error> {
        let mut values: Vec<Option<u32>> = self
            .options
            .iter()
            .map(|o| if o.is_binary() { Some(0) } else { None })
            .collect();
        let mut mentioned = std::collections::HashSet::new();
        for item in text
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            let id = self.resolve(name, "the configuration")?;
            if !mentioned.insert(id) {
                return Err(Error::Config(format!(
                    "option `{name}` appears more than once in the configuration"
                )));
            }
            let o = self.option(id);
            let index = match (value, o.is_binary()) {
                (None, true) => 1,
                (None, false) => {
                    return Err(Error::Config(format!(
                        "numeric option `{name}` needs a value, as in `{name}={}`",
                        o.format_value(0)
                    )));
                }
                (Some(v), _) => {
                    let parsed: f64 = v.parse().map_err(|_| {
                        Error::Config(format!("`{v}` is not a number (option `{name}`)"))
                    })?;
                    o.value_index(parsed).ok_or_else(|| {
                        Error::Config(format!("`{v}` is not a value of option `{name}`"))
                    })?
                }
            };
            values[id.index()] = Some(index);
        }
        let mut out = Vec::with_capacity(values.len());
        for (i, v) in values.into_iter().enumerate() {
            out.push(v.ok_or_else(|| {
                Error::Config(format!(
                    "numeric option `{}` has no value",
                    self.options[i].name
                ))
            })?);
        }
        Ok(Configuration(out))
    }

    /// Reads a configuration from options given by name with their values (a typed
    /// configuration or a CSV row: 0/1 for a binary option, the number for a numeric one);
    /// binary options not given are off. Names the space lacks are an error, as are a value
    /// outside an option's domain and a numeric option without a value.
    pub fn configuration_from_named(
        &self,
        given: &[(String, f64)],
    ) -> Result<Configuration, Error> {
        let mut values: Vec<Option<u32>> = self
            .options
            .iter()
            .map(|o| if o.is_binary() { Some(0) } else { None })
            .collect();
        for (name, value) in given {
            let id = self.resolve(name, "the configuration")?;
            let o = self.option(id);
            values[id.index()] = Some(o.value_index(*value).ok_or_else(|| {
                Error::Config(format!(
                    "`{}` is not a value of option `{name}`",
                    format_number(*value)
                ))
            })?);
        }
        values
            .into_iter()
            .zip(&self.options)
            .map(|(v, o)| {
                v.ok_or_else(|| Error::Config(format!("numeric option `{}` has no value", o.name)))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Configuration)
    }

    /// Why options given by name (as [`ConfigSpace::configuration_from_named`] reads them,
    /// names the space lacks left out) are not a valid configuration of the space: the
    /// first rule broken, or why they are not a configuration at all; `None` when valid.
    pub fn why_invalid(&self, given: &[(String, f64)]) -> Option<String> {
        let known: Vec<(String, f64)> = given
            .iter()
            .filter(|(n, _)| self.find(n).is_some())
            .cloned()
            .collect();
        match self.configuration_from_named(&known) {
            Ok(config) => self.violations(&config).first().map(|r| r.why.clone()),
            Err(e) => Some(e.to_string()),
        }
    }

    /// Reads one configuration from numeric cells given in option order (a CSV row).
    pub fn configuration_from_values(&self, cells: &[f64]) -> Result<Configuration, Error> {
        if cells.len() != self.options.len() {
            return Err(Error::Config(format!(
                "configuration has {} values but the space has {} options",
                cells.len(),
                self.options.len()
            )));
        }
        cells
            .iter()
            .zip(&self.options)
            .map(|(v, o)| {
                o.value_index(*v).ok_or_else(|| {
                    Error::Config(format!(
                        "`{}` is not a value of option `{}`",
                        format_number(*v),
                        o.name
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Configuration)
    }

    /// The configuration in the compact text form `parse_configuration` reads.
    pub fn format_configuration(&self, config: &Configuration) -> String {
        let mut parts = Vec::new();
        for (o, v) in self.options.iter().zip(&config.0) {
            match o.domain {
                Domain::Binary if *v == 1 => parts.push(o.name.clone()),
                Domain::Binary => {}
                Domain::Numeric { .. } => parts.push(format!("{}={}", o.name, o.format_value(*v))),
            }
        }
        parts.join(",")
    }

    /// Number of selected binary options: the "distance" of distance-based sampling.
    pub fn selected_count(&self, config: &Configuration) -> usize {
        self.options
            .iter()
            .zip(&config.0)
            .filter(|(o, v)| o.is_binary() && **v == 1)
            .count()
    }
}

fn visit_atoms<'a>(f: &'a Formula, visit: &mut impl FnMut(&'a Formula)) {
    match f {
        Formula::Const(_) => {}
        Formula::Var(_) | Formula::Equals(..) => visit(f),
        Formula::Not(a) => visit_atoms(a, visit),
        Formula::And(xs) | Formula::Or(xs) | Formula::ExactlyOne(xs) => {
            xs.iter().for_each(|x| visit_atoms(x, visit))
        }
        Formula::Implies(a, b) | Formula::Iff(a, b) => {
            visit_atoms(a, visit);
            visit_atoms(b, visit)
        }
    }
}

impl fmt::Display for ConfigSpace {
    /// A readable outline: the option tree, groups and constraints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "space {} ({} options)", self.name, self.options.len())?;
        fn walk(
            s: &ConfigSpace,
            parent: Option<OptionId>,
            depth: usize,
            f: &mut fmt::Formatter<'_>,
        ) -> fmt::Result {
            for id in s.ids().filter(|id| s.option(*id).parent == parent) {
                let o = s.option(id);
                let kind = match &o.domain {
                    Domain::Binary if o.mandatory => "mandatory".to_string(),
                    Domain::Binary => "optional".to_string(),
                    Domain::Numeric { values } => format!(
                        "numeric {{{}}}",
                        values
                            .iter()
                            .map(|v| format_number(*v))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                writeln!(f, "{}{} [{}]", "  ".repeat(depth + 1), o.name, kind)?;
                walk(s, Some(id), depth + 1, f)?;
            }
            Ok(())
        }
        walk(self, None, 0, f)?;
        for g in &self.groups {
            let kind = match g.kind {
                GroupKind::Alternative => "alternative (exactly one)",
                GroupKind::Or => "or (at least one)",
            };
            let members: Vec<&str> = g
                .members
                .iter()
                .map(|m| self.option(*m).name.as_str())
                .collect();
            let parent = g
                .parent
                .map_or("root".to_string(), |p| self.option(p).name.clone());
            writeln!(f, "  group {kind} under {parent}: {}", members.join(", "))?;
        }
        for c in &self.constraints {
            writeln!(f, "  constraint {}", c.formula)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_option_in_a_configuration_is_an_error() {
        let mut s = ConfigSpace::new("c");
        s.add_binary("fast", None, false).unwrap();
        s.add_numeric("threads", &[1.0, 2.0]).unwrap();
        s.add_numeric("level", &[6.0, 7.0]).unwrap();
        assert!(s.parse_configuration("fast,threads=2,level=6").is_ok());
        for text in [
            "fast,threads=2,threads=1,level=6",
            "threads=1,level=6,level=7",
            "fast,fast,threads=1,level=6",
        ] {
            let err = s.parse_configuration(text).unwrap_err().to_string();
            assert!(err.contains("appears more than once"), "{text}: {err}");
        }
    }

    #[test]
    fn the_system_spec_lists_the_characters_an_option_name_may_use() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/system-spec.md"
        ))
        .unwrap();
        let row = doc
            .lines()
            .find(|l| l.starts_with("| `name` | required;"))
            .expect("docs/system-spec.md has an [[option]] `name` row");
        let listed: String = row
            .split('`')
            .skip(3)
            .step_by(2)
            .filter(|s| s.chars().count() == 1)
            .collect();
        assert_eq!(listed, NAME_PUNCTUATION, "{row}");
    }

    #[test]
    fn options_given_by_name_are_checked_as_a_typed_configuration() {
        let mut s = ConfigSpace::new("c");
        s.add_numeric("level", &[0.0, 6.0]).unwrap();
        let check = s.add_binary("check", None, true).unwrap();
        let a = s.add_binary("crc32", Some(check), false).unwrap();
        let b = s.add_binary("crc64", Some(check), false).unwrap();
        s.add_group(GroupKind::Alternative, Some(check), vec![a, b])
            .unwrap();
        let given = |items: &[(&str, f64)]| -> Vec<(String, f64)> {
            items.iter().map(|(n, v)| (n.to_string(), *v)).collect()
        };
        let valid = given(&[("level", 6.0), ("check", 1.0), ("crc32", 1.0), ("id", 7.0)]);
        assert_eq!(s.why_invalid(&valid), None);
        let both = given(&[
            ("level", 6.0),
            ("check", 1.0),
            ("crc32", 1.0),
            ("crc64", 1.0),
        ]);
        assert!(s.why_invalid(&both).is_some());
        let no_check = given(&[("level", 6.0)]);
        assert!(s.why_invalid(&no_check).is_some());
        let no_level = given(&[("check", 1.0), ("crc32", 1.0)]);
        assert_eq!(
            s.why_invalid(&no_level).unwrap(),
            "numeric option `level` has no value"
        );
        let seven = given(&[("level", 7.0), ("check", 1.0), ("crc32", 1.0)]);
        assert_eq!(
            s.why_invalid(&seven).unwrap(),
            "`7` is not a value of option `level`"
        );
    }
}
