//! Variability encoding of a C program's `#ifdef` features: a *variant simulator*, one
//! program that runs every variant, choosing by run-time reads what the preprocessor chose at
//! build time (the family-based measurement paper's step 1).
//!
//! A feature is a boolean build option that sets one macro (`-DNAME` or `-DNAME=1` when
//! selected, undefined or `-DNAME=0` when not). Disciplined annotations are encoded:
//! conditional groups around whole statements become `if (…) {…} else {…}`, around whole
//! function definitions renamed variants behind a dispatcher, and a feature's value used in
//! code becomes a read of its global; a function that exists only where one feature is selected
//! is marked as that feature's (`knobs:feature=`, family-based measurement's feature map), and
//! so is a block of statements that runs exactly where features are selected (marker calls
//! around it, [`FEATURE_BLOCK_ENTER`]).
//! Everything else is refused with its line and the
//! pattern's name ([`Pattern`]); a refused feature stays build-only (the simulator is built
//! with it as before), and so does every feature sharing a condition with it. Line numbers
//! of the encoded file are the original's (`#line`), so what is reported on the simulator
//! points into the real source.
//!
//! Encoding removes constant folding and dead-code elimination of the real variants, so the
//! simulator's costs are not the variants' costs: measure a few real builds beside it.

mod condition;
mod lex;
mod lift;
mod rewrite;
mod scan;
mod trace;

use serde::Serialize;

pub use condition::Condition;
pub use trace::{FEATURE_BLOCK_ENTER, FEATURE_BLOCK_EXIT, UNTRACED_BLOCK};

/// What a feature's macro is in a variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum MacroValue {
    Undefined,
    /// Defined, with this integer value (`-DNAME` defines 1).
    Defined(i64),
}

/// A boolean build option that sets one macro.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Feature {
    /// The macro (`LOGGING`).
    pub macro_name: String,
    /// The option of the configuration space it belongs to.
    pub option: String,
    /// The macro when the option is selected, and when not.
    pub on: MacroValue,
    pub off: MacroValue,
}

impl Feature {
    /// `-DNAME` when selected, undefined when not (the `#ifdef` style).
    pub fn defined_when_on(macro_name: &str, option: &str) -> Feature {
        Feature {
            macro_name: macro_name.into(),
            option: option.into(),
            on: MacroValue::Defined(1),
            off: MacroValue::Undefined,
        }
    }

    /// `-DNAME=1` when selected, `-DNAME=0` when not (the `#if NAME` style).
    pub fn valued(macro_name: &str, option: &str) -> Feature {
        Feature {
            macro_name: macro_name.into(),
            option: option.into(),
            on: MacroValue::Defined(1),
            off: MacroValue::Defined(0),
        }
    }

    /// The simulator's global that holds the feature (1 selected, 0 not).
    pub fn global(&self) -> String {
        global(&self.macro_name)
    }

    /// The environment variable the simulator reads the feature from at start.
    pub fn env_var(&self) -> String {
        format!("KNOBS_FEATURE_{}", self.macro_name)
    }
}

fn global(macro_name: &str) -> String {
    format!("knobs_feature_{macro_name}")
}

/// An annotation the encoding cannot turn into run-time variability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Pattern {
    /// The group starts or ends inside an expression or a statement.
    PartOfExpression,
    /// The group is inside an initializer.
    PartOfInitializer,
    /// The group holds struct, union or enum members.
    StructField,
    /// The group is the unbraced body of an `if`, `else` or loop.
    UnbracedBody,
    /// A branch is not whole statements or whole definitions (braces or parentheses open).
    Unbalanced,
    /// The feature's value is used where C needs a constant.
    ConstantExpression,
    /// A declaration inside the group is used after it.
    DeclarationUsedAfter,
    /// A label or `case` inside the group.
    ConditionalLabel,
    /// A macro defined or undefined under the condition, or the feature's own macro defined
    /// in the source.
    ConditionalMacro,
    /// The feature is used in a macro's definition.
    MacroDefinitionUse,
    /// The condition also depends on other macros (or on a feature that stays build-only).
    MixedCondition,
    /// The same global or type is declared in two branches.
    DeclaredInTwoBranches,
    /// A function in two branches whose variants cannot be dispatched (variadic, unnamed or
    /// function-pointer parameters).
    FunctionSignature,
}

impl Pattern {
    pub fn describe(self) -> &'static str {
        match self {
            Pattern::PartOfExpression => "part of an expression or statement",
            Pattern::PartOfInitializer => "part of an initializer",
            Pattern::StructField => "a struct, union or enum member",
            Pattern::UnbracedBody => "the unbraced body of an if, else or loop",
            Pattern::Unbalanced => "not whole statements or definitions",
            Pattern::ConstantExpression => "a value used in a constant expression",
            Pattern::DeclarationUsedAfter => "a declaration used after its conditional block",
            Pattern::ConditionalLabel => "a conditional label",
            Pattern::ConditionalMacro => "a macro defined under a condition",
            Pattern::MacroDefinitionUse => "a feature used in a macro definition",
            Pattern::MixedCondition => "a condition over the feature and other macros",
            Pattern::DeclaredInTwoBranches => "a declaration in two branches",
            Pattern::FunctionSignature => "function variants that cannot be dispatched",
        }
    }
}

/// One refused annotation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Refusal {
    pub file: String,
    pub line: usize,
    pub pattern: Pattern,
    /// The feature's macro, which stays build-only.
    pub feature: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {} stays build-only: {}",
            self.file,
            self.line,
            self.feature,
            self.pattern.describe()
        )
    }
}

/// A source file of the program: its path as the build names it, and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: String,
    pub text: String,
}

/// The variant simulator of a program.
#[derive(Debug, Clone, Serialize)]
pub struct Simulator {
    /// The encoded files, in the order given (same paths).
    #[serde(skip)]
    pub files: Vec<SourceFile>,
    /// The features read at run time.
    pub encoded: Vec<Feature>,
    /// The features that stay build options of the simulator's build.
    pub build_only: Vec<Feature>,
    /// Why each build-only feature is one (the first cause per annotation).
    pub refusals: Vec<Refusal>,
    /// Conditional groups turned into run-time decisions (statement and function level).
    pub decisions: usize,
    /// The functions that exist only where certain features are selected, under their name in
    /// the simulator: each feature's functions (a feature map for family-based measurement).
    pub feature_functions: Vec<FeatureFunction>,
    /// The statement blocks inside functions traced as feature code (between
    /// [`FEATURE_BLOCK_ENTER`] and [`FEATURE_BLOCK_EXIT`] calls).
    pub feature_blocks: Vec<FeatureBlock>,
}

/// A block of statements of the simulator that runs exactly where all of `options` are
/// selected, marked so that family-based measurement charges its cost to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeatureBlock {
    pub file: String,
    /// The line of its `#if`.
    pub line: usize,
    /// The options (not macros), in the order their markers nest; more than one is their
    /// interaction.
    pub options: Vec<String>,
}

/// A function of the simulator defined only where all of `features` are selected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeatureFunction {
    pub function: String,
    /// The features' macros, sorted; more than one is their interaction.
    pub features: Vec<String>,
    pub file: String,
    pub line: usize,
}

impl Simulator {
    /// A C file defining the encoded features' globals, read from their environment
    /// variables before `main` runs; compile and link it with the encoded files. Each global
    /// is marked as its option's source for the white-box approaches.
    pub fn features_source(&self) -> String {
        let mut c = String::from("#include <stdlib.h>\n");
        for f in &self.encoded {
            c.push_str(&format!(
                "int {} __attribute__((annotate(\"knobs:option={}\"))) = 0;\n",
                f.global(),
                f.option
            ));
        }
        c.push_str("__attribute__((constructor)) static void knobs_read_features(void) {\n");
        c.push_str("    const char *value;\n");
        for f in &self.encoded {
            c.push_str(&format!(
                "    value = getenv(\"{}\");\n    if (value) {} = atoi(value) != 0;\n",
                f.env_var(),
                f.global()
            ));
        }
        c.push_str("}\n");
        c
    }
}

/// Encodes `features` in `files`. A feature refused in one file is build-only everywhere
/// (its macro decides in every file alike), so refusals are found to a fixed point over the
/// whole program before any file is rewritten.
pub fn encode(files: &[SourceFile], features: &[Feature]) -> Simulator {
    let lexed: Vec<lex::Lexed> = files.iter().map(|f| lex::lex(&f.text)).collect();
    let mut live: Vec<Feature> = features.to_vec();
    let mut refusals: Vec<Refusal> = Vec::new();
    // The scans of the last round, which refused nothing, are the ones the rewrite uses.
    let scans = loop {
        let scans: Vec<scan::Scanned> = lexed.iter().map(|l| scan::scan(l, &live)).collect();
        let new: Vec<Refusal> = files
            .iter()
            .zip(&scans)
            .flat_map(|(file, scanned)| {
                scanned
                    .refusals
                    .iter()
                    .map(|(line, pattern, feature)| Refusal {
                        file: file.path.clone(),
                        line: *line,
                        pattern: *pattern,
                        feature: feature.clone(),
                    })
            })
            .collect();
        if new.is_empty() {
            break scans;
        }
        live.retain(|f| !new.iter().any(|r| r.feature == f.macro_name));
        refusals.extend(new);
    };
    refusals.sort();
    refusals.dedup_by(|a, b| a.file == b.file && a.line == b.line && a.feature == b.feature);
    let mut decisions = 0;
    let mut feature_functions = Vec::new();
    let mut feature_blocks = Vec::new();
    let encoded_files = files
        .iter()
        .zip(&lexed)
        .zip(&scans)
        .map(|((file, lexed), scanned)| {
            decisions += scanned.decisions();
            for (_, token, features) in &scanned.feature_functions {
                feature_functions.push(FeatureFunction {
                    function: rewrite::function_name(scanned, lexed, *token),
                    features: features.clone(),
                    file: file.path.clone(),
                    line: lexed.tokens[*token].line,
                });
            }
            let traced: Vec<Option<Vec<String>>> = scanned
                .groups
                .iter()
                .map(|g| match g.plan {
                    scan::Plan::Statements => trace::traced_options(g, lexed, &live),
                    _ => None,
                })
                .collect();
            for (group, options) in scanned.groups.iter().zip(&traced) {
                if let Some(options) = options {
                    feature_blocks.push(FeatureBlock {
                        file: file.path.clone(),
                        line: lexed.directives[group.directives[0]].first_line,
                        options: options.clone(),
                    });
                }
            }
            SourceFile {
                path: file.path.clone(),
                text: rewrite::rewrite(&file.path, &file.text, lexed, scanned, &live, &traced),
            }
        })
        .collect();
    let build_only = features
        .iter()
        .filter(|f| !live.contains(f))
        .cloned()
        .collect();
    Simulator {
        files: encoded_files,
        encoded: live,
        build_only,
        refusals,
        decisions,
        feature_functions,
        feature_blocks,
    }
}
