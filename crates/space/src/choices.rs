//! Exclusive choices: literals of which exactly one holds whenever a condition does (the
//! members of an alternative group, the values of a numeric option). A model over such
//! literals has one term too many (the intercept already is the reference member) and
//! products no configuration selects; `model` rewrites terms against a reference member with
//! these.

use crate::space::{ConfigSpace, GroupKind, OptionId};

/// Literals of which exactly one holds whenever `given` does (and none otherwise), written as
/// a model writes factors: `NAME` for a selected binary option, `NAME=VALUE` for a numeric
/// option's value. The first member is the reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExclusiveChoice {
    pub members: Vec<String>,
    /// The option (selected) under which one member holds; `None`: in every configuration.
    pub given: Option<String>,
}

impl ConfigSpace {
    /// The space's exclusive choices: each alternative group, and each numeric option's
    /// values (the first value is the reference, as in value-indicator models).
    pub fn exclusive_choices(&self) -> Vec<ExclusiveChoice> {
        let mut out = Vec::new();
        for g in self.groups() {
            if g.kind != GroupKind::Alternative {
                continue;
            }
            out.push(ExclusiveChoice {
                members: g
                    .members
                    .iter()
                    .map(|m| self.option(*m).name.clone())
                    .collect(),
                given: g
                    .parent
                    .filter(|p| !self.always_selected(*p))
                    .map(|p| self.option(p).name.clone()),
            });
        }
        for id in self.ids() {
            let o = self.option(id);
            if o.is_binary() {
                continue;
            }
            out.push(ExclusiveChoice {
                members: (0..o.arity() as u32)
                    .map(|v| format!("{}={}", o.name, o.format_value(v)))
                    .collect(),
                given: None,
            });
        }
        out
    }

    /// Whether a binary option is selected in every configuration by the tree alone: it and
    /// every ancestor are mandatory.
    pub fn always_selected(&self, id: OptionId) -> bool {
        let mut at = Some(id);
        for _ in 0..=self.len() {
            match at {
                None => return true,
                Some(o) => {
                    let option = self.option(o);
                    if !option.is_binary() || !option.mandatory {
                        return false;
                    }
                    at = option.parent;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_numeric_options_are_choices() {
        let mut s = ConfigSpace::new("c");
        let level = s.add_binary("level", None, true).unwrap();
        let codec = s.add_binary("codec", None, false).unwrap();
        let mut members = Vec::new();
        for (n, parent) in [("l1", level), ("l9", level), ("lz", codec), ("huff", codec)] {
            members.push(s.add_binary(n, Some(parent), false).unwrap());
        }
        s.add_group(GroupKind::Alternative, Some(level), members[..2].to_vec())
            .unwrap();
        s.add_group(GroupKind::Alternative, Some(codec), members[2..].to_vec())
            .unwrap();
        s.add_numeric("threads", &[1.0, 2.0, 4.0]).unwrap();
        assert!(s.always_selected(level));
        assert!(!s.always_selected(codec));
        let choices = s.exclusive_choices();
        assert_eq!(
            choices,
            [
                ExclusiveChoice {
                    members: vec!["l1".into(), "l9".into()],
                    given: None,
                },
                ExclusiveChoice {
                    members: vec!["lz".into(), "huff".into()],
                    given: Some("codec".into()),
                },
                ExclusiveChoice {
                    members: vec!["threads=1".into(), "threads=2".into(), "threads=4".into()],
                    given: None,
                },
            ]
        );
    }
}
