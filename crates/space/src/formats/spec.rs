//! knobs' own space description, the space part of a system spec (`knobs.toml`).
//!
//! ```toml
//! name = "xz"
//! constraints = ["extreme => level=9 | level=6"]
//!
//! [[option]]
//! name = "extreme"                 # binary unless `values` or `range` is given
//!
//! [[option]]
//! name = "level"
//! values = [0, 3, 6, 9]            # numeric, discretised
//! # range = { min = 0, max = 9, step = 3 }
//!
//! [[option]]
//! name = "check"
//! mandatory = true                 # always selected (at the root), or whenever its parent is
//!
//! [[option]]
//! name = "crc32"
//! parent = "check"
//!
//! [[group]]
//! kind = "alternative"             # exactly one member when the parent is selected; or "or"
//! parent = "check"                 # omit for a group at the root
//! members = ["crc32", "crc64"]
//! ```
//!
//! Keys this crate does not know are left to the crates that read the rest of a system
//! spec (how to run the program, where it keeps each option); `parse_spec` reads a file
//! that must be a pure space description and rejects them.

use serde::Deserialize;

use crate::Error;
use crate::space::{ConfigSpace, GroupKind};

/// The space part of a spec, as deserialised. Unknown keys land in `rest` for other crates.
#[derive(Debug, Deserialize)]
pub struct SpaceSpec {
    pub name: Option<String>,
    #[serde(default)]
    pub option: Vec<OptionSpec>,
    #[serde(default)]
    pub group: Vec<GroupSpec>,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(flatten)]
    pub rest: toml::Table,
}

#[derive(Debug, Deserialize)]
pub struct OptionSpec {
    pub name: String,
    pub values: Option<Vec<SpecNumber>>,
    pub range: Option<RangeSpec>,
    pub parent: Option<String>,
    #[serde(default)]
    pub mandatory: bool,
    /// What the option means, for people; not interpreted.
    pub help: Option<String>,
    #[serde(flatten)]
    pub rest: toml::Table,
}

/// A value as written: an integer stays exact (a float holds integers only up to 2^53).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SpecNumber {
    Integer(i64),
    Float(f64),
}

/// Read by the value's own type, so a value that is not a number is named as such (an
/// untagged enum would only say that no variant matched).
impl<'de> Deserialize<'de> for SpecNumber {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Number;
        impl serde::de::Visitor<'_> for Number {
            type Value = SpecNumber;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SpecNumber, E> {
                Ok(SpecNumber::Integer(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SpecNumber, E> {
                i64::try_from(v).map(SpecNumber::Integer).map_err(|_| {
                    E::custom(format!(
                        "{v} is larger than the largest integer value, {}",
                        i64::MAX
                    ))
                })
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<SpecNumber, E> {
                Ok(SpecNumber::Float(v))
            }
        }
        deserializer.deserialize_any(Number)
    }
}

impl SpecNumber {
    /// The value as a float, with its exact text when the float is not exact.
    fn value(self) -> (f64, Option<String>) {
        match self {
            SpecNumber::Float(v) => (v, None),
            SpecNumber::Integer(i) => {
                let v = i as f64;
                let exact = v >= -(2f64.powi(63)) && v < 2f64.powi(63) && v as i64 == i;
                (v, (!exact).then(|| i.to_string()))
            }
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeSpec {
    pub min: f64,
    pub max: f64,
    #[serde(default = "one")]
    pub step: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub kind: String,
    pub parent: Option<String>,
    pub members: Vec<String>,
}

/// Line (1-based) of a byte offset, for error messages.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Deserialises the space part of a spec; `toml` errors become one line with the line number.
pub fn read_space_spec(text: &str, shown: &str) -> Result<SpaceSpec, Error> {
    toml::from_str::<SpaceSpec>(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_at(text, s.start));
        Error::format(shown, line, e.message().trim().to_string())
    })
}

/// Builds the space a spec describes.
pub fn space_from_spec(spec: &SpaceSpec, shown: &str) -> Result<ConfigSpace, Error> {
    let stem = std::path::Path::new(shown)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("space");
    let mut space = ConfigSpace::new(spec.name.clone().unwrap_or_else(|| stem.to_string()));
    let at = |what: String| format!("{shown}: {what}");
    for o in &spec.option {
        let ctx = |e: Error| Error::Invalid(at(format!("option `{}`: {e}", o.name)));
        match (&o.values, &o.range) {
            (Some(_), Some(_)) => {
                return Err(ctx(Error::Invalid(
                    "give `values` or `range`, not both".into(),
                )));
            }
            (Some(values), None) => {
                let values: Vec<(f64, Option<String>)> = values.iter().map(|v| v.value()).collect();
                space.add_numeric_exact(&o.name, &values).map_err(ctx)?;
            }
            (None, Some(r)) => {
                // NaN steps fail too.
                if r.step.is_nan()
                    || r.step <= 0.0
                    || r.min > r.max
                    || !r.min.is_finite()
                    || !r.max.is_finite()
                {
                    return Err(ctx(Error::Invalid(
                        "range needs min <= max and step > 0".into(),
                    )));
                }
                let count = ((r.max - r.min) / r.step + 1e-9).floor() as usize + 1;
                if count > super::MAX_GENERATED_VALUES {
                    return Err(ctx(Error::Invalid(format!(
                        "range has {count} values; at most {}",
                        super::MAX_GENERATED_VALUES
                    ))));
                }
                let values: Vec<f64> = (0..count).map(|i| r.min + i as f64 * r.step).collect();
                space.add_numeric(&o.name, &values).map_err(ctx)?;
            }
            (None, None) => {
                space.add_binary(&o.name, None, o.mandatory).map_err(ctx)?;
            }
        }
        if o.mandatory && (o.values.is_some() || o.range.is_some()) {
            return Err(ctx(Error::Invalid(
                "`mandatory` applies to binary options only".into(),
            )));
        }
    }
    for o in &spec.option {
        if let Some(p) = &o.parent {
            let child = space.find(&o.name).expect("declared");
            let parent = space.resolve(p, &at(format!("the parent of `{}`", o.name)))?;
            space
                .set_parent(child, parent)
                .map_err(|e| Error::Invalid(at(e.to_string())))?;
        }
    }
    for (i, g) in spec.group.iter().enumerate() {
        let kind = match g.kind.as_str() {
            "alternative" | "xor" => GroupKind::Alternative,
            "or" => GroupKind::Or,
            k => {
                return Err(Error::Invalid(at(format!(
                    "group {}: kind `{k}` is not `alternative` or `or`",
                    i + 1
                ))));
            }
        };
        let context = at(format!("group {}", i + 1));
        let parent = g
            .parent
            .as_deref()
            .map(|p| space.resolve(p, &context))
            .transpose()?;
        let members = g
            .members
            .iter()
            .map(|m| space.resolve(m, &context))
            .collect::<Result<Vec<_>, _>>()?;
        space
            .add_group(kind, parent, members)
            .map_err(|e| Error::Invalid(at(e.to_string())))?;
    }
    for (i, c) in spec.constraints.iter().enumerate() {
        space.add_constraint(c, &format!("{shown}: constraints[{}]", i + 1))?;
    }
    Ok(space)
}

/// Parses a file that is only a space description (no keys for other crates).
pub fn parse_spec(text: &str, shown: &str) -> Result<ConfigSpace, Error> {
    let spec = read_space_spec(text, shown)?;
    if let Some(key) = spec.rest.keys().next() {
        return Err(Error::format(shown, 0, format!("unknown key `{key}`")));
    }
    for o in &spec.option {
        if let Some(key) = o.rest.keys().next() {
            return Err(Error::format(
                shown,
                0,
                format!("option `{}`: unknown key `{key}`", o.name),
            ));
        }
    }
    space_from_spec(&spec, shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValidConfigurations;

    #[test]
    fn spec_with_groups_and_constraints() {
        let text = r#"
name = "demo"
constraints = ["a => level=2", "!(a & b)"]
[[option]]
name = "a"
[[option]]
name = "b"
[[option]]
name = "level"
range = { min = 0, max = 2 }
[[option]]
name = "check"
mandatory = true
[[option]]
name = "crc"
parent = "check"
[[option]]
name = "sha"
parent = "check"
[[group]]
kind = "alternative"
parent = "check"
members = ["crc", "sha"]
"#;
        let space = parse_spec(text, "demo.toml").unwrap();
        let valid = ValidConfigurations::new(&space).unwrap();
        // (a,b,level): a=1 -> b=0, level=2: 1; a=0: b free, level 3 values: 6 -> 7; times 2 checks.
        assert_eq!(valid.count(), 14u32.into());
    }

    #[test]
    fn errors() {
        let e = parse_spec("[[option]]\nname = \"a\"\nvalues = \"x\"\n", "s.toml").unwrap_err();
        assert!(e.to_string().starts_with("s.toml:3: "), "{e}");
        let e = parse_spec(
            "constraints = [\"a | q\"]\n[[option]]\nname = \"a\"\n",
            "s.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown option `q`"), "{e}");
        let e = parse_spec("[[option]]\nname = \"a\"\nflavour = 1\n", "s.toml").unwrap_err();
        assert!(e.to_string().contains("unknown key `flavour`"), "{e}");
    }

    #[test]
    fn a_value_that_is_not_a_number_is_named_as_such() {
        let e = parse_spec("[[option]]\nname = \"a\"\nvalues = [1, \"x\"]\n", "s.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.toml:3: "), "{e}");
        assert!(e.contains("expected a number"), "{e}");
        assert!(!e.contains("untagged"), "{e}");
    }
}
