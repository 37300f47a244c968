//! Which encoded statement blocks are traced as feature code, and the markers that trace them.
//!
//! Family-based measurement charges a feature the cost of its code (the paper traces annotated
//! code, not only whole functions). A function defined only under a feature is marked with an
//! annotation; a block of statements inside another function's body is marked by a pair of
//! calls around it, [`FEATURE_BLOCK_ENTER`] and [`FEATURE_BLOCK_EXIT`], each naming the block
//! (its number in the file) and one option. Family-based measurement turns each pair into a
//! calling-context node of the option (a conjunction of features nests one pair per feature:
//! their interaction), so the block's own instructions and its callees' are the feature's,
//! not the enclosing function's. The markers are empty `static inline` functions: a real
//! build inlines them away, and the counting build counts neither the calls nor their bodies
//! (they are named with `llvm`'s marker prefix).
//!
//! A block is traced when it runs exactly where a set of features is selected (the first
//! branch of a group whose condition is their conjunction: `#ifdef A`, `#if A && B`). The
//! others run where a feature is *not* selected (`#else`, `#elif`, `#ifndef`, a disjunction):
//! one run with every feature never runs them, so they stay the enclosing function's code,
//! as a run-time option's `else` is. A block a jump can leave or enter other than by its end
//! (`break`, `continue`, `goto`, a label or a `case`) is not traced either: its exit marker
//! could be skipped. Leaving by `return` is safe: a function's exit closes the blocks open in
//! it. A branch that is not traced starts with a call of [`UNTRACED_BLOCK`] saying why, so
//! family-based measurement can list it among what its model cannot see.

use crate::Feature;
use crate::condition::{self, Condition};
use crate::lex::{Lexed, TokenKind};
use crate::scan::GroupPlan;

/// The marker called where a traced block starts: `(block, option)`.
pub const FEATURE_BLOCK_ENTER: &str = "__knobs_marker_feature_block_enter";
/// The marker called where a traced block ends, with the same arguments.
pub const FEATURE_BLOCK_EXIT: &str = "__knobs_marker_feature_block_exit";
/// The marker called where a block that is not traced starts: `(block, options, why)`, the
/// options its group's conditions up to it name (comma-separated), and why it is not.
pub const UNTRACED_BLOCK: &str = "__knobs_marker_untraced_block";

/// The markers' definitions, for the prelude of a file with traced blocks: once per
/// translation unit, as an encoded header and the file including it both have them.
pub fn marker_definitions() -> String {
    let guard = "KNOBS_FEATURE_BLOCK_MARKERS";
    let mut definitions: String = [FEATURE_BLOCK_ENTER, FEATURE_BLOCK_EXIT]
        .iter()
        .map(|name| {
            format!(
                "static inline void {name}(unsigned block, const char *option) {{ (void)block; (void)option; }}\n"
            )
        })
        .collect();
    definitions.push_str(&format!(
        "static inline void {UNTRACED_BLOCK}(unsigned block, const char *options, const char *why) {{ (void)block; (void)options; (void)why; }}\n"
    ));
    format!("#ifndef {guard}\n#define {guard}\n{definitions}#endif\n")
}

/// The options whose conjunction selects the first branch of `group` (in the order the
/// condition names them), when that branch is traced.
pub fn traced_options(group: &GroupPlan, lexed: &Lexed, live: &[Feature]) -> Option<Vec<String>> {
    let Some(Some(Condition::Decision { features, table })) = group.conditions.first() else {
        return None;
    };
    let macros = condition::conjunction(features, table)?;
    let (first, next) = (group.directives[0], *group.directives.get(1)?);
    let (from, to) = (
        lexed.directives[first].last_line,
        lexed.directives[next].first_line,
    );
    let body: Vec<&crate::lex::Token> = lexed
        .tokens
        .iter()
        .filter(|t| t.line > from && t.line < to)
        .collect();
    let jumps = body.iter().enumerate().any(|(k, t)| {
        let label = t.kind == TokenKind::Ident
            && body.get(k + 1).is_some_and(|n| n.text == ":")
            && (k == 0 || matches!(body[k - 1].text.as_str(), ";" | "{" | "}"));
        label
            || matches!(
                t.text.as_str(),
                "break" | "continue" | "goto" | "case" | "default"
            )
    });
    if jumps {
        return None;
    }
    macros
        .iter()
        .map(|m| {
            live.iter()
                .find(|f| &f.macro_name == m)
                .map(|f| f.option.clone())
        })
        .collect()
}

/// The call that marks branch `branch` of `group` (block `block`) as not traced, with the
/// options its conditions up to it name and why.
pub fn untraced_marker(group: &GroupPlan, branch: usize, block: usize, live: &[Feature]) -> String {
    let why = match group.conditions.first() {
        _ if branch > 0 => "an #elif or #else branch: it runs where an earlier condition fails",
        Some(Some(Condition::Decision { features, table }))
            if condition::conjunction(features, table).is_some() =>
        {
            "a jump can leave or enter it other than by its end"
        }
        _ => "its condition holds where a feature is deselected",
    };
    let mut options: Vec<&str> = Vec::new();
    for condition in group.conditions.iter().take(branch + 1).flatten() {
        for m in condition.features() {
            let option = live
                .iter()
                .find(|f| &f.macro_name == m)
                .map(|f| f.option.as_str());
            if let Some(o) = option.filter(|o| !options.contains(o)) {
                options.push(o);
            }
        }
    }
    format!(
        " {UNTRACED_BLOCK}({block}, {:?}, {why:?});",
        options.join(",")
    )
}

/// The calls that open block `block` of `options` (one per option, nested in this order).
pub fn enter_markers(block: usize, options: &[String]) -> String {
    options
        .iter()
        .map(|o| format!(" {FEATURE_BLOCK_ENTER}({block}, {o:?});"))
        .collect()
}

/// The calls that close it, innermost first.
pub fn exit_markers(block: usize, options: &[String]) -> String {
    options
        .iter()
        .rev()
        .map(|o| format!(" {FEATURE_BLOCK_EXIT}({block}, {o:?});"))
        .collect()
}
