//! Writes the encoded file from a scan: directives of decision groups become `if` chains
//! (statements) or disappear with dispatchers appended (definitions), constant ones `#if 0`
//! or `#if 1`, features used as values become reads of their globals. Every replacement keeps
//! the line count, and a `#line` after the prelude keeps the original numbering.

use crate::condition::{self, Condition};
use crate::lex::Lexed;
use crate::scan::{Dispatch, GroupPlan, Plan, Scanned};
use crate::{Feature, MacroValue, trace};

pub fn rewrite(
    path: &str,
    text: &str,
    lexed: &Lexed,
    scanned: &Scanned,
    live: &[Feature],
    traced: &[Option<Vec<String>>],
) -> String {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_end = |line: usize| line_starts.get(line).map_or(text.len(), |&next| next - 1);
    // A directive's lines become `replacement` and as many empty lines as it continued over.
    let directive_edit = |d: usize, replacement: String| {
        let d = &lexed.directives[d];
        let lines = d.last_line - d.first_line;
        let start = line_starts[d.first_line - 1];
        (
            start,
            line_end(d.last_line),
            replacement + &"\n".repeat(lines),
        )
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for (block, group) in scanned.groups.iter().enumerate() {
        let traced = traced[block].as_deref();
        let replacements = directive_replacements(group, lexed, (block, traced), live);
        for (k, replacement) in replacements.into_iter().enumerate() {
            edits.push(directive_edit(group.directives[k], replacement));
        }
        for (start, end, replacement) in group.lift.iter().flat_map(|l| &l.statements) {
            let (first, last) = (&lexed.tokens[*start], &lexed.tokens[*end]);
            edits.push((
                first.offset,
                last.offset + last.text.len(),
                replacement.clone(),
            ));
        }
        if let Plan::Definitions(dispatches) = &group.plan {
            for dispatch in dispatches {
                for &(branch, token) in &dispatch.variants {
                    let t = &lexed.tokens[token];
                    edits.push((
                        t.offset,
                        t.offset + t.text.len(),
                        variant_name(&t.text, branch),
                    ));
                }
            }
        }
    }
    for &d in &scanned.guarded_definitions {
        let line = lexed.directives[d].first_line;
        let message = format!(
            "#error \"{path}:{line}: this redefines a feature the variant simulator reads at run time\""
        );
        edits.push(directive_edit(d, message));
    }
    for (start, _, features) in &scanned.feature_functions {
        let [feature] = features.as_slice() else {
            continue;
        };
        let option = &live
            .iter()
            .find(|f| &f.macro_name == feature)
            .expect("a live feature")
            .option;
        let offset = lexed.tokens[*start].offset;
        let annotation = format!("__attribute__((annotate(\"knobs:feature={option}\"))) ");
        edits.push((offset, offset, annotation));
    }
    for &i in &scanned.value_uses {
        let t = &lexed.tokens[i];
        let feature = live
            .iter()
            .find(|f| f.macro_name == t.text)
            .expect("a live feature");
        edits.push((t.offset, t.offset + t.text.len(), value(feature)));
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (start, end, replacement) in edits {
        out.replace_range(start..end, &replacement);
    }
    let mut prelude = String::new();
    if !live.is_empty() {
        let globals: Vec<String> = live.iter().map(Feature::global).collect();
        prelude = format!("extern int {};\n", globals.join(", "));
    }
    if scanned
        .groups
        .iter()
        .any(|g| matches!(g.plan, Plan::Statements))
    {
        prelude.push_str(&trace::marker_definitions());
    }
    format!(
        "{prelude}#line 1 \"{}\"\n{out}",
        path.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// The simulator's name of the function whose definition names it at `token`: renamed when
/// it is one variant of several.
pub fn function_name(scanned: &Scanned, lexed: &Lexed, token: usize) -> String {
    let name = &lexed.tokens[token].text;
    let dispatched = scanned.groups.iter().find_map(|g| match &g.plan {
        Plan::Definitions(ds) => ds
            .iter()
            .flat_map(|d| &d.variants)
            .find(|(_, t)| *t == token),
        _ => None,
    });
    match dispatched {
        Some(&(branch, _)) => variant_name(name, branch),
        None => name.clone(),
    }
}

fn variant_name(name: &str, branch: usize) -> String {
    format!("{name}__knobs_variant_{branch}")
}

/// A feature's macro as a value: its value in the variant the global selects.
fn value(feature: &Feature) -> String {
    match (&feature.on, &feature.off) {
        (MacroValue::Defined(on), MacroValue::Defined(off)) => {
            format!("({} ? {on} : {off})", feature.global())
        }
        (MacroValue::Defined(v), MacroValue::Undefined)
        | (MacroValue::Undefined, MacroValue::Defined(v)) => format!("({v})"),
        (MacroValue::Undefined, MacroValue::Undefined) => feature.macro_name.clone(),
    }
}

fn c_condition(condition: &Option<Condition>) -> String {
    match condition {
        None => "1".into(),
        Some(Condition::Constant(v)) => i32::from(*v).to_string(),
        Some(Condition::Decision { features, table }) => {
            condition::c_expression(features, table, crate::global)
        }
        // Never planned: the scan refuses both.
        Some(Condition::Independent | Condition::Mixed { .. }) => unreachable!("not encoded"),
    }
}

/// The directives' replacements; `block`: the group's number in its file, `traced`: the
/// options whose markers surround its first branch when it is traced (every other branch
/// starts with a marker that it is not).
fn directive_replacements(
    group: &GroupPlan,
    lexed: &Lexed,
    (block, traced): (usize, Option<&[String]>),
    live: &[Feature],
) -> Vec<String> {
    let last = group.directives.len() - 1;
    let has_else = group.conditions.last().is_some_and(Option::is_none);
    (0..group.directives.len())
        .map(|k| {
            let name = lexed.directives[group.directives[k]].name.as_str();
            let condition = group.conditions.get(k);
            match &group.plan {
                Plan::Constant => match (name, condition) {
                    ("else", _) => "#else".into(),
                    ("endif", _) => "#endif".into(),
                    (_, Some(c)) => {
                        let keyword = if k == 0 { "#if" } else { "#elif" };
                        format!("{keyword} {}", c_condition(c))
                    }
                    _ => unreachable!("a condition per #if and #elif"),
                },
                // `;` first: a label may end the branch, and needs a statement after it.
                Plan::Statements => {
                    let exits = match traced {
                        Some(options) if k == 1 => trace::exit_markers(block, options),
                        _ => String::new(),
                    };
                    let enters = match traced {
                        Some(options) if k == 0 => trace::enter_markers(block, options),
                        _ if k < last => trace::untraced_marker(group, k, block, live),
                        _ => String::new(),
                    };
                    match (k, name) {
                        // An empty `else` when there is none: the jump that ends the traced
                        // branch is then matched by one where it does not run, so the
                        // enclosing code costs the same either way.
                        (_, "endif") if traced.is_some() && !has_else => {
                            format!(";{exits}}} else {{}}")
                        }
                        (_, "endif") => format!(";{exits}}}"),
                        (_, "else") => format!(";{exits}}} else {{{enters}"),
                        (0, _) => {
                            let lifted = group
                                .lift
                                .as_ref()
                                .map_or(String::new(), |l| l.declarations.clone() + " ");
                            format!(
                                "{lifted}if ({}) {{{enters}",
                                c_condition(condition.expect("a condition"))
                            )
                        }
                        _ => format!(
                            ";{exits}}} else if ({}) {{{enters}",
                            c_condition(condition.expect("a condition"))
                        ),
                    }
                }
                Plan::Definitions(dispatches) if k == last => dispatches
                    .iter()
                    .map(|d| dispatcher(d, group, lexed))
                    .collect::<Vec<_>>()
                    .join(" "),
                Plan::Definitions(_) => String::new(),
            }
        })
        .collect()
}

/// One line defining the function under its own name: it calls the variant of the branch
/// the features select.
fn dispatcher(dispatch: &Dispatch, group: &GroupPlan, lexed: &Lexed) -> String {
    let header: Vec<&str> = lexed.tokens[dispatch.header.0..dispatch.header.1]
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    let arguments = dispatch.arguments.join(", ");
    let mut body = String::new();
    for &(branch, _) in &dispatch.variants {
        let call = format!("{}({arguments})", variant_name(&dispatch.name, branch));
        let action = if dispatch.returns_void {
            format!("{{ {call}; return; }}")
        } else {
            format!("return {call};")
        };
        body.push_str(&format!(
            "if ({}) {action} ",
            c_condition(&group.conditions[branch])
        ));
    }
    format!("{} {{ {body}__builtin_trap(); }}", header.join(" "))
}
