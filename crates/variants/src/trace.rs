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
//! (a `break`, `continue`, `case` or `default` of a loop or switch outside it, a `goto` out
//! of it or into it) is not traced either: its exit marker could be skipped. Leaving by `return` is safe: a function's exit closes the blocks open in
//! it. A branch that is not traced starts with a call of [`UNTRACED_BLOCK`] saying why, so
//! family-based measurement can list it among what its model cannot see.

use crate::Feature;
use crate::condition::{self, Condition};
use crate::lex::{Lexed, Token, TokenKind};
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
    let inside = |t: &Token| t.line > from && t.line < to;
    let body: Vec<&Token> = lexed.tokens.iter().filter(|t| inside(t)).collect();
    if !jumps_stay_inside(&body, &lexed.tokens, &inside) {
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

/// What a jump in a branch's `body` lands on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Construct {
    Loop,
    Switch,
    Other,
}

/// Whether every jump of `body` (a branch's tokens) stays inside it: each `break`,
/// `continue`, `case` and `default` belongs to a loop or `switch` that starts in it, each
/// `goto` targets a label in it, and each label in it is the target of gotos in it only
/// (`all`: the file's tokens, `inside`: whether one is in the branch).
fn jumps_stay_inside(body: &[&Token], all: &[Token], inside: &dyn Fn(&Token) -> bool) -> bool {
    let labels: Vec<&str> = (0..body.len())
        .filter(|&k| {
            body[k].kind == TokenKind::Ident
                && body.get(k + 1).is_some_and(|n| n.text == ":")
                && (k == 0 || matches!(body[k - 1].text.as_str(), ";" | "{" | "}"))
                && body[k].text != "default"
        })
        .map(|k| body[k].text.as_str())
        .collect();
    let gotos_to_inside_labels_only = all
        .windows(2)
        .all(|w| w[0].text != "goto" || inside(&w[0]) == labels.contains(&w[1].text.as_str()));
    if !gotos_to_inside_labels_only {
        return false;
    }
    // The loops and switches open at each token: (what, brace depth, whether its body is
    // unbraced, ending at its statement's `;`).
    let mut open: Vec<(Construct, usize, bool)> = Vec::new();
    let mut depth = 0usize;
    let mut parens = 0usize;
    let mut pending: Option<Construct> = None; // a loop or switch whose body comes next
    for (k, t) in body.iter().enumerate() {
        match t.text.as_str() {
            "for" | "while" | "do" => pending = Some(Construct::Loop),
            "switch" => pending = Some(Construct::Switch),
            "(" => parens += 1,
            ")" => parens = parens.saturating_sub(1),
            "{" => {
                depth += 1;
                open.push((pending.take().unwrap_or(Construct::Other), depth, false));
            }
            "}" => {
                open.retain(|(_, d, _)| *d < depth);
                depth = depth.saturating_sub(1);
            }
            ";" if parens == 0 => open.retain(|(_, d, unbraced)| !(*unbraced && *d == depth)),
            _ => {}
        }
        // A loop or switch header ends at its `)` (`do` at once); without a `{` after it, its
        // body is the next statement.
        let header_done = (t.text == ")" && parens == 0) || t.text == "do";
        if header_done
            && let Some(c) = pending
            && body.get(k + 1).is_some_and(|n| n.text != "{")
        {
            open.push((c, depth, true));
            pending = None;
        }
        let within = |wanted: &[Construct]| open.iter().any(|(c, _, _)| wanted.contains(c));
        let stays = match t.text.as_str() {
            "break" => within(&[Construct::Loop, Construct::Switch]),
            "continue" => within(&[Construct::Loop]),
            "case" | "default" => within(&[Construct::Switch]),
            _ => true,
        };
        if !stays {
            return false;
        }
    }
    true
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

#[cfg(test)]
mod tests {
    use super::jumps_stay_inside;
    use crate::lex::lex;

    /// `code` is a function whose body's lines 3 to 5 are the branch.
    fn stays(branch: &str, after: &str) -> bool {
        let code = format!(
            "void f(int n) {{\n  for (int i = 0; i < n; i++) {{\n{branch}\n  }}\n{after}\n}}\n"
        );
        let lexed = lex(&code);
        let inside = |t: &crate::lex::Token| t.line == 3;
        let body: Vec<&crate::lex::Token> = lexed.tokens.iter().filter(|t| inside(t)).collect();
        jumps_stay_inside(&body, &lexed.tokens, &inside)
    }

    #[test]
    fn jumps_inside_a_branch_are_told_from_jumps_out_of_it() {
        assert!(stays("g();", ""));
        assert!(!stays("if (i) break;", ""));
        assert!(!stays("if (i) continue;", ""));
        assert!(stays("for (;;) { if (i) break; }", ""));
        assert!(stays("while (i) if (i) break; g();", ""));
        assert!(!stays("while (i) g(); break;", ""));
        assert!(stays("do { continue; } while (0);", ""));
        assert!(stays(
            "switch (i) { case 1: g(); break; default: h(); }",
            ""
        ));
        assert!(stays("switch (i) { case 1: for (;;) continue; }", ""));
        assert!(!stays("if (i) goto out;", "out: ;"));
        assert!(stays("if (i) goto out; g(); out: ;", ""));
        assert!(!stays("in: g();", "goto in;"));
    }
}
