//! The spec's white-box parts: how knobs builds the program for analysis (`[build]`) and
//! where the program keeps each option's value (an option's `source`). Parsed and checked
//! here with the rest of the spec; read only by the white-box crates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::*;

/// How knobs builds the program for white-box analysis: from C sources it compiles itself
/// (clang-19), or from LLVM bitcode the system's own build produced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSpec {
    /// C source files, relative to the spec's directory.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Instead of `sources`: one bitcode (`.bc`) or textual IR (`.ll`) file.
    pub bitcode: Option<String>,
    /// `-I` directories, relative to the spec's directory.
    #[serde(default)]
    pub include: Vec<String>,
    /// `-D` definitions: `NAME` or `NAME=VALUE`.
    #[serde(default)]
    pub defines: Vec<String>,
    /// Further compiler flags.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Flags for linking the instrumented program (libraries: `-lm`, `-lpthread`).
    #[serde(default)]
    pub link: Vec<String>,
    /// Fixed settings (`[build.fixed]`): globals holding the same integer in every run of the
    /// workload, the part of the command line no option changes (`decompress = 0` for a
    /// compressor never run with `-d`). ConfigCrusher's analysis reads them as constants and
    /// skips the code they rule out; the instrumented program checks every read it folded.
    #[serde(default)]
    pub fixed: BTreeMap<String, i64>,
    /// Whether ConfigCrusher infers further fixed settings from the program's own runs on the
    /// analysis workload (`infer_fixed = false` turns it off; `[build.fixed]` entries always
    /// win over inferred ones).
    #[serde(default = "yes")]
    pub infer_fixed: bool,
    /// Globals never to infer as fixed settings (`not_fixed = ["counter"]`).
    #[serde(default)]
    pub not_fixed: Vec<String>,
    /// How to build the program for its build options (without `[history]`): argv lists
    /// run in order, never through a shell, in a fresh copy of `dir`, with the
    /// configuration's flags in `CPPFLAGS`, `CFLAGS` and `LDFLAGS`.
    #[serde(default)]
    pub recipe: Vec<Vec<String>>,
    /// The built program, relative to the copy.
    pub output: Option<String>,
    /// The source directory the recipe builds, relative to the spec's directory (default:
    /// the spec's directory).
    pub dir: Option<String>,
    /// Seconds a whole build may take; default 3600.
    pub timeout: Option<f64>,
}

/// Where a program keeps an option's value, for the white-box analyses. Exactly one of:
/// `global = "name"`; `struct = "type"` with `field = "name"` (or its index); `function =
/// "name"` (its return value), optionally only for calls whose argument `arg_index`
/// (default 0) is the constant string `arg`: `{ function = "getenv", arg = "XZ_MODE" }`.
/// Globals marked `__attribute__((annotate("knobs:option=NAME")))` need no entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionSourceSpec {
    pub global: Option<String>,
    #[serde(rename = "struct")]
    pub structure: Option<String>,
    pub field: Option<toml::Value>,
    pub function: Option<String>,
    pub arg: Option<String>,
    pub arg_index: Option<u32>,
}

/// One source, or several (an option kept in more than one place). Told apart by the
/// value's shape (a table or an array), so that an error inside one names its key and
/// place rather than "no variant matched".
#[derive(Clone, Debug)]
pub(super) enum SourceList {
    One(OptionSourceSpec),
    Many(Vec<OptionSourceSpec>),
}

impl<'de> Deserialize<'de> for SourceList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shape;
        impl<'de> serde::de::Visitor<'de> for Shape {
            type Value = SourceList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a source table (`{ global = \"name\" }`) or an array of them")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<SourceList, A::Error> {
                let de = serde::de::value::MapAccessDeserializer::new(map);
                OptionSourceSpec::deserialize(de).map(SourceList::One)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<SourceList, A::Error> {
                let de = serde::de::value::SeqAccessDeserializer::new(seq);
                Vec::deserialize(de).map(SourceList::Many)
            }
        }
        deserializer.deserialize_any(Shape)
    }
}

impl OptionSourceSpec {
    /// Checks that exactly one kind of source is given, with the keys it needs.
    pub(super) fn check(&self) -> Result<(), String> {
        let kinds = [
            self.global.is_some(),
            self.structure.is_some(),
            self.function.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(
                "a source is exactly one of `global`, `struct` (with `field`) or `function`".into(),
            );
        }
        if self.structure.is_some() != self.field.is_some() {
            return Err("`struct` and `field` go together".into());
        }
        if let Some(field) = &self.field
            && !(field.is_str() || field.as_integer().is_some_and(|i| i >= 0))
        {
            return Err("`field` is a field name or a non-negative index".into());
        }
        if self.function.is_none() && (self.arg.is_some() || self.arg_index.is_some()) {
            return Err("`arg` and `arg_index` select calls of a `function`".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    use crate::spec::test_support::*;

    #[test]
    fn build_and_option_sources_for_white_box_work() {
        let text = SPEC.replace(
            "[run]",
            "[build]\nsources = [\"main.c\"]\ndefines = [\"NDEBUG\"]\nlink = [\"-lm\"]\n\n[run]",
        )
        .replace(
            "on = [\"--fast\"]",
            "on = [\"--fast\"]\nsource = { function = \"getenv\", arg = \"FAST\" }",
        )
        .replace(
            "arg = [\"-{value}\"]",
            "arg = [\"-{value}\"]\nsource = [{ global = \"level\" }, { struct = \"opts\", field = \"level\" }]",
        );
        let spec = parse(&text).unwrap();
        let build = spec.build.as_ref().unwrap();
        assert_eq!(
            (build.sources.as_slice(), build.link.as_slice()),
            (&["main.c".to_string()][..], &["-lm".to_string()][..])
        );
        assert_eq!(
            spec.option_sources[0][0].function.as_deref(),
            Some("getenv")
        );
        assert_eq!(spec.option_sources[0][0].arg.as_deref(), Some("FAST"));
        assert_eq!(spec.option_sources[1].len(), 2);
        let e = parse(&text.replace(
            "{ global = \"level\" }",
            "{ global = \"level\", function = \"f\" }",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("exactly one of"), "{e}");
        let e = parse(&text.replace(
            "sources = [\"main.c\"]",
            "sources = [\"main.c\"]\nbitcode = \"p.bc\"",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let e = parse(&text.replace(
            "{ function = \"getenv\", arg",
            "{ function = \"getenv\", argh",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("knobs.toml:"), "{e}");
        // A misspelt key, alone or in a list: named with the keys allowed and its place.
        for (from, to) in [
            (
                "source = { function = \"getenv\"",
                "source = { globl = \"g\", function = \"getenv\"",
            ),
            ("[{ global = \"level\" }", "[{ globl = \"level\" }"),
        ] {
            let misspelt = text.replacen(from, to, 1);
            assert_ne!(misspelt, text, "{from}");
            let e = parse(&misspelt).unwrap_err().to_string();
            assert!(e.contains("unknown field `globl`"), "{e}");
            assert!(e.contains("`global`") && e.contains("`function`"), "{e}");
            assert!(
                e.starts_with("/tmp/knobs.toml:") && e.matches(':').count() >= 3,
                "{e}"
            );
            assert!(!e.contains("untagged"), "{e}");
        }
    }
}
