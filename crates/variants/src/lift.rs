//! Declarations lifted out of a statement group: when branches declare the same variable and
//! code after the group uses it (`T *p = malloc(…);` / `#else` / `T s; T *const p = &s;` /
//! `#endif` / `use(p)`), the declarations move before the `if` chain and each branch keeps
//! only its assignments. Only plain declarations are lifted (no arrays, initializer lists,
//! storage classes or function declarators), a variable used after the group must be
//! declared in every branch with the same type, and a variable a lifted initializer refers
//! to is lifted with it, so that nothing outlives the block it was declared in.

use std::collections::BTreeSet;

use crate::lex::{Token, TokenKind};

/// A declaration statement at a branch's own level: tokens `start..end`, `end` its `;`.
#[derive(Debug, Clone)]
pub struct Local {
    pub branch: usize,
    pub start: usize,
    pub end: usize,
    pub names: Vec<String>,
}

/// How a group's declarations are lifted.
#[derive(Debug, Clone, Default)]
pub struct Lift {
    /// Declarations written before the group's `if`.
    pub declarations: String,
    /// Statements (first token, `;` token) replaced by their assignments.
    pub statements: Vec<(usize, usize, String)>,
}

struct Declarator {
    name: String,
    /// The declaration to lift: type, pointers, name, with the object's own `const` dropped.
    lifted: String,
    /// The initializer, if any.
    init: Option<Vec<String>>,
}

/// Lifts what the code after the group (`used_after`) needs, or None when it cannot.
pub fn lift(
    tokens: &[Token],
    locals: &[Local],
    branches: usize,
    has_else: bool,
    used_after: &BTreeSet<String>,
) -> Option<Lift> {
    let parsed: Vec<(&Local, Vec<Declarator>)> = locals
        .iter()
        .map(|l| Some((l, declarators(&tokens[l.start..l.end])?)))
        .collect::<Option<_>>()?;
    let mut needed: BTreeSet<String> = used_after.clone();
    // Variables a lifted initializer refers to are lifted too.
    loop {
        let mut more = needed.clone();
        for (_, ds) in &parsed {
            for d in ds.iter().filter(|d| needed.contains(&d.name)) {
                let declared_here =
                    |w: &String| parsed.iter().any(|(_, o)| o.iter().any(|x| &x.name == w));
                more.extend(
                    d.init
                        .iter()
                        .flatten()
                        .filter(|w| declared_here(w))
                        .cloned(),
                );
            }
        }
        if more == needed {
            break;
        }
        needed = more;
    }
    let mut lift = Lift::default();
    let mut lifted: Vec<(String, String)> = Vec::new();
    for name in &needed {
        let declarations: Vec<(usize, &Declarator)> = parsed
            .iter()
            .flat_map(|(l, ds)| ds.iter().filter(|d| &d.name == name).map(|d| (l.branch, d)))
            .collect();
        if declarations.is_empty() {
            continue;
        }
        let every_branch = (0..branches).all(|b| declarations.iter().any(|(br, _)| *br == b));
        if used_after.contains(name) && !(every_branch && has_else) {
            return None;
        }
        if declarations
            .iter()
            .any(|(_, d)| d.lifted != declarations[0].1.lifted)
        {
            return None;
        }
        lifted.push((name.clone(), declarations[0].1.lifted.clone()));
    }
    let lifted_names: BTreeSet<&str> = lifted.iter().map(|(n, _)| n.as_str()).collect();
    for (local, ds) in &parsed {
        if !ds.iter().any(|d| lifted_names.contains(d.name.as_str())) {
            continue;
        }
        // A statement is lifted whole: every declarator in it.
        if !ds.iter().all(|d| lifted_names.contains(d.name.as_str())) {
            return None;
        }
        let assignments: Vec<String> = ds
            .iter()
            .filter_map(|d| {
                d.init
                    .as_ref()
                    .map(|i| format!("{} = {};", d.name, i.join(" ")))
            })
            .collect();
        let newlines = tokens[local.end].line - tokens[local.start].line;
        lift.statements.push((
            local.start,
            local.end,
            assignments.join(" ") + &"\n".repeat(newlines),
        ));
    }
    lift.declarations = lifted
        .iter()
        .map(|(_, d)| d.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Some(lift)
}

/// A plain declaration's declarators, or None for anything else.
fn declarators(statement: &[Token]) -> Option<Vec<Declarator>> {
    const REFUSED: [&str; 5] = ["static", "extern", "typedef", "_Thread_local", "__thread"];
    if statement.iter().any(|t| REFUSED.contains(&t.text.as_str())) {
        return None;
    }
    let parts = split_top_level(statement);
    let mut type_part: Option<Vec<&str>> = None;
    let mut out = Vec::new();
    for part in parts {
        let eq = part.iter().position(|t| t.text == "=");
        let (head, init) = match eq {
            Some(k) => (&part[..k], Some(&part[k + 1..])),
            None => (part, None),
        };
        if init.is_some_and(|i| i.first().is_some_and(|t| t.text == "{") || i.is_empty()) {
            return None;
        }
        let name = head.last().filter(|t| t.kind == TokenKind::Ident)?;
        if head
            .iter()
            .any(|t| matches!(t.text.as_str(), "(" | ")" | "[" | "]"))
        {
            return None;
        }
        // Pointers and qualifiers between the type and the name belong to this declarator.
        let mut k = head.len() - 1;
        while k > 0
            && matches!(
                head[k - 1].text.as_str(),
                "*" | "const" | "volatile" | "restrict"
            )
        {
            k -= 1;
        }
        let pointers: Vec<&str> = head[k..head.len() - 1]
            .iter()
            .map(|t| t.text.as_str())
            .collect();
        if type_part.is_none() {
            let t: Vec<&str> = head[..k].iter().map(|t| t.text.as_str()).collect();
            if t.is_empty() {
                return None;
            }
            type_part = Some(t);
        } else if k != 0 {
            return None;
        }
        let type_words = type_part.as_ref()?;
        let has_pointer = pointers.contains(&"*");
        let (type_words, pointers): (Vec<&str>, Vec<&str>) = if has_pointer {
            let last_star = pointers.iter().rposition(|p| *p == "*")?;
            (type_words.clone(), pointers[..=last_star].to_vec())
        } else {
            (
                type_words
                    .iter()
                    .copied()
                    .filter(|w| *w != "const")
                    .collect(),
                Vec::new(),
            )
        };
        out.push(Declarator {
            name: name.text.clone(),
            lifted: format!(
                "{} {}{};",
                type_words.join(" "),
                pointers.join(" "),
                name.text
            ),
            init: init.map(|i| i.iter().map(|t| t.text.clone()).collect()),
        });
    }
    Some(out)
}

/// Splits at commas outside parentheses, brackets and braces.
fn split_top_level(tokens: &[Token]) -> Vec<&[Token]> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (k, t) in tokens.iter().enumerate() {
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            "," if depth == 0 => {
                parts.push(&tokens[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&tokens[start..]);
    parts
}
