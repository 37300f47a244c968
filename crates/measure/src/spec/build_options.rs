//! Build options: options that act on how the program is built (`-D` definitions, compiler
//! and linker flags, configure arguments) rather than on how it is run. A configuration's
//! build options expand to its [`BuildValues`]; configurations with the same values share one
//! build.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use space::Configuration;

use super::*;

/// How an option acts on the build (its `build = { … }` key). A binary option adds its
/// `define` (`-DNAME`), `flags`, `link` and `configure` when selected and its `off_flags`,
/// `off_link` and `off_configure` when not (an unselected `define` is simply not defined, as
/// `#ifdef` expects). A numeric option adds `-DNAME={value}` and its lists with `{value}`
/// replaced by the value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionBuild {
    /// A macro: `-DNAME` (binary, when selected) or `-DNAME={value}` (numeric).
    pub define: Option<String>,
    /// Compiler flags (`CFLAGS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_flags: Vec<String>,
    /// Linker flags (`LDFLAGS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_link: Vec<String>,
    /// Arguments for the recipe's `{configure}` element.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configure: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_configure: Vec<String>,
}

impl OptionBuild {
    /// What is wrong with it for a binary (or numeric) option, if anything.
    pub(super) fn check(&self, binary: bool) -> Result<(), String> {
        if let Some(name) = &self.define {
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "define `{name}` is not a macro name (letters, digits and `_`; give the value through a numeric option)"
                ));
            }
        }
        let offs = !self.off_flags.is_empty()
            || !self.off_link.is_empty()
            || !self.off_configure.is_empty();
        if !binary && offs {
            return Err(
                "`off_flags`/`off_link`/`off_configure` are for binary options; a numeric option uses `{value}`"
                    .into(),
            );
        }
        let all = [
            &self.flags,
            &self.off_flags,
            &self.link,
            &self.off_link,
            &self.configure,
            &self.off_configure,
        ];
        if let Some(empty) = all.iter().flat_map(|l| l.iter()).find(|a| a.is_empty()) {
            return Err(format!("empty argument `{empty}`"));
        }
        if self == &OptionBuild::default() {
            return Err("is empty; give `define`, `flags`, `link` or `configure`".into());
        }
        Ok(())
    }
}

/// What a configuration's build options add to the build: `-D` definitions (`CPPFLAGS`),
/// compiler flags (`CFLAGS`), linker flags (`LDFLAGS`) and configure arguments, in the
/// options' order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BuildValues {
    pub defines: Vec<String>,
    pub flags: Vec<String>,
    pub link: Vec<String>,
    pub configure: Vec<String>,
}

impl BuildValues {
    /// Identifies the values (12 hex digits), part of a build's cache key.
    pub fn key(&self) -> String {
        let json = serde_json::to_string(self).expect("strings serialise");
        Sha256::digest(json.as_bytes())[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The values on one line, as the build sees them (`-DLZ4_HEAPMODE=1 -O3`); `defaults`
    /// when there are none.
    pub fn describe(&self) -> String {
        let all: Vec<&str> = self
            .defines
            .iter()
            .chain(&self.flags)
            .chain(&self.link)
            .chain(&self.configure)
            .map(String::as_str)
            .collect();
        if all.is_empty() {
            "defaults".into()
        } else {
            all.join(" ")
        }
    }

    /// The environment a build recipe runs with: `CPPFLAGS`, `CFLAGS` and `LDFLAGS`, each
    /// only when not empty (an empty `CFLAGS` would override a Makefile's `CFLAGS ?= -O2`).
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("CPPFLAGS", &self.defines),
            ("CFLAGS", &self.flags),
            ("LDFLAGS", &self.link),
        ]
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(name, list)| (name.to_string(), list.join(" ")))
        .collect()
    }

    /// A recipe step with its `{configure}` element replaced by the configure arguments and
    /// `{cppflags}`, `{cflags}`, `{ldflags}` elements by the flags, one argument each.
    pub fn expand(&self, step: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(step.len());
        for arg in step {
            match arg.as_str() {
                "{configure}" => out.extend(self.configure.iter().cloned()),
                "{cppflags}" => out.extend(self.defines.iter().cloned()),
                "{cflags}" => out.extend(self.flags.iter().cloned()),
                "{ldflags}" => out.extend(self.link.iter().cloned()),
                _ => out.push(arg.clone()),
            }
        }
        out
    }
}

/// How knobs builds the program for its build options when the spec has no `[history]`:
/// the `[build]` section's `recipe`, run in a fresh copy of `dir`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuildRecipe {
    /// The source directory copied for each build (absolute).
    pub dir: PathBuf,
    pub steps: Vec<Vec<String>>,
    /// The built program, relative to the copy.
    pub output: String,
    /// Seconds a whole build may take.
    pub timeout: Duration,
}

impl SystemSpec {
    /// The names of the options that act on the build, in the space's order.
    pub fn build_options(&self) -> Vec<&str> {
        self.space
            .options()
            .iter()
            .zip(&self.option_args)
            .filter(|(_, a)| a.build.is_some())
            .map(|(o, _)| o.name.as_str())
            .collect()
    }

    /// What `config`'s build options add to the build.
    pub fn build_values(&self, config: &Configuration) -> BuildValues {
        let mut values = BuildValues::default();
        for (i, (option, args)) in self
            .space
            .options()
            .iter()
            .zip(&self.option_args)
            .enumerate()
        {
            let Some(build) = &args.build else { continue };
            let index = config.0[i];
            if option.is_binary() {
                let on = index == 1;
                if on && let Some(name) = &build.define {
                    values.defines.push(format!("-D{name}"));
                }
                let pick = |a: &[String], b: &[String]| if on { a.to_vec() } else { b.to_vec() };
                values.flags.extend(pick(&build.flags, &build.off_flags));
                values.link.extend(pick(&build.link, &build.off_link));
                values
                    .configure
                    .extend(pick(&build.configure, &build.off_configure));
            } else {
                let value = option.format_value(index);
                let fill = |list: &[String]| -> Vec<String> {
                    list.iter().map(|a| a.replace("{value}", &value)).collect()
                };
                if let Some(name) = &build.define {
                    values.defines.push(format!("-D{name}={value}"));
                }
                values.flags.extend(fill(&build.flags));
                values.link.extend(fill(&build.link));
                values.configure.extend(fill(&build.configure));
            }
        }
        values
    }

    /// The recipe that builds the program for its build options without `[history]`;
    /// `None` when `[build]` has no `recipe`.
    pub fn build_recipe(&self) -> Option<BuildRecipe> {
        let build = self.build.as_ref()?;
        if build.recipe.is_empty() {
            return None;
        }
        Some(BuildRecipe {
            dir: self.dir.join(build.dir.as_deref().unwrap_or(".")),
            steps: build.recipe.clone(),
            output: build.output.clone().unwrap_or_default(),
            timeout: Duration::from_secs_f64(build.timeout.unwrap_or(3600.0)),
        })
    }

    /// An error for an approach that cannot take build options (the white-box ones analyse
    /// one build), naming them; `Ok` for a spec without.
    pub fn check_no_build_options(&self, approach: &str) -> Result<(), Error> {
        if self.build_options().is_empty() {
            return Ok(());
        }
        Err(self.refuse_build_options(approach))
    }

    /// The error of [`SystemSpec::check_no_build_options`]. On a variant simulator's own spec
    /// the build options left are those it could not encode, so it does not send the user
    /// back to `knobs simulator`.
    pub(super) fn refuse_build_options(&self, approach: &str) -> Error {
        let names = self.build_options();
        let instead = if self.text.starts_with(SIMULATOR_HEADER) {
            "the variant simulator keeps them as build options: they are no `#ifdef` features it could encode".to_string()
        } else {
            format!(
                "for `#ifdef` features, `knobs simulator` writes a run-time spec {approach} reads"
            )
        };
        Error::Invalid(format!(
            "{}: {approach} needs one build, but options {} act on the build: each configuration has its own (measure them with `knobs measure`, black-box; {instead})",
            self.path.display(),
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// How a variant simulator's spec begins (`knobs simulator` writes it).
pub const SIMULATOR_HEADER: &str = "# The variant simulator of ";

impl SystemSpec {
    /// Checks `[build] recipe` and that build options have a recipe to reach.
    pub(super) fn check_build_recipe(&self, shown: &str, text: &str) -> Result<(), Error> {
        let recipe = self.build.as_ref().filter(|b| !b.recipe.is_empty());
        let at = |key: &str| parse::line_of_key(text, key, 0);
        if let Some(build) = recipe {
            let as_history = HistorySpec {
                repository: ".".into(),
                range: "HEAD".into(),
                first_parent: true,
                build: build.recipe.clone(),
                output: build.output.clone().unwrap_or_default(),
                timeout: build.timeout,
            };
            parse::check_history(&as_history).map_err(|why| {
                parse::format_error(
                    shown,
                    at("recipe"),
                    format!("build: {}", why.replace("`build`", "`recipe`")),
                )
            })?;
            if self.history.is_some() {
                return Err(parse::format_error(
                    shown,
                    at("recipe"),
                    "build: `recipe` is for a spec without [history]; with it, [history] `build` builds every configuration",
                ));
            }
        }
        let names = self.build_options();
        if !names.is_empty() && recipe.is_none() && self.history.is_none() {
            return Err(parse::format_error(
                shown,
                0,
                format!(
                    "options {} act on the build, but the spec has no build recipe: give [build] `recipe` and `output` (or [history])",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::test_support::parse;

    const SPEC: &str = r#"
name = "b"
[build]
recipe = [["./configure", "{configure}"], ["make", "{cflags}"]]
output = "prog"
[run]
args = ["{options}"]
[[option]]
name = "table"
build = { define = "TABLE", configure = ["--with-table"], off_configure = ["--without-table"] }
[[option]]
name = "bits"
values = [12, 16]
build = { define = "BITS", flags = ["-falign-functions={value}"] }
[[option]]
name = "o3"
build = { flags = ["-O3"], off_flags = ["-O2"], link = ["-flto"] }
[[option]]
name = "quiet"
on = ["-q"]
"#;

    /// Each option adds its part in the options' order; a binary option's `define` is left
    /// undefined when not selected; the run-time option adds nothing to the build.
    #[test]
    fn a_configuration_expands_to_its_build_values() {
        let spec = parse(SPEC).unwrap();
        assert_eq!(spec.build_options(), ["table", "bits", "o3"]);
        let values = |text: &str| spec.build_values(&spec.space.parse_configuration(text).unwrap());
        let on = values("table,bits=16,o3,quiet");
        assert_eq!(on.defines, ["-DTABLE", "-DBITS=16"]);
        assert_eq!(on.flags, ["-falign-functions=16", "-O3"]);
        assert_eq!(on.link, ["-flto"]);
        assert_eq!(on.configure, ["--with-table"]);
        assert_eq!(
            on.describe(),
            "-DTABLE -DBITS=16 -falign-functions=16 -O3 -flto --with-table"
        );
        let off = values("bits=12");
        assert_eq!(off.defines, ["-DBITS=12"]);
        assert_eq!(off.flags, ["-falign-functions=12", "-O2"]);
        assert!(off.link.is_empty());
        assert_eq!(
            off.expand(&["./configure".into(), "{configure}".into(), "x".into()]),
            ["./configure", "--without-table", "x"]
        );
        // Only what is set reaches the environment: a Makefile's own default stays.
        assert_eq!(
            off.env(),
            [
                ("CPPFLAGS".to_string(), "-DBITS=12".to_string()),
                ("CFLAGS".to_string(), "-falign-functions=12 -O2".to_string())
            ]
        );
        // The run-time option does not change the build; the build options do.
        assert_eq!(values("bits=12,quiet"), off);
        assert_ne!(values("bits=12,table").key(), off.key());
    }

    /// The build keys and the recipe are part of what a measurement means.
    #[test]
    fn the_hash_covers_build_keys_and_the_recipe() {
        let a = parse(SPEC).unwrap();
        let b = parse(&SPEC.replace("\"-O3\"]", "\"-O3\", \"-march=native\"]")).unwrap();
        let c = parse(&SPEC.replace("[\"make\", ", "[\"gmake\", ")).unwrap();
        let d =
            parse(&SPEC.replace("output = \"prog\"", "output = \"prog\"\ntimeout = 50")).unwrap();
        assert_ne!(a.hash, b.hash);
        assert_ne!(a.hash, c.hash);
        assert_eq!(a.hash, d.hash);
    }
}
