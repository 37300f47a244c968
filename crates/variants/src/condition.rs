//! Preprocessor conditions (`#if`, `#elif`, `#ifdef`, `#ifndef`) read as decisions over
//! features: evaluated under every on/off assignment of the features they mention, they are a
//! constant, a decision (a truth table, written back as a C expression over the features'
//! globals), independent of features, or mixed with macros the encoding does not own.

use std::collections::{BTreeMap, BTreeSet};

use crate::{Feature, MacroValue};

/// What a condition is, over the given features.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// Mentions no feature: left to the preprocessor.
    Independent,
    /// Mentions features, yet has the same value in every assignment.
    Constant(bool),
    /// Decided by the features it mentions: `table[mask]` is its value when feature `i` is on
    /// exactly when bit `i` of `mask` is set.
    Decision {
        features: Vec<String>,
        table: Vec<bool>,
    },
    /// Depends on features and on other macros (or cannot be read): not encodable.
    Mixed { features: Vec<String> },
}

impl Condition {
    /// The features the condition mentions.
    pub fn features(&self) -> &[String] {
        match self {
            Condition::Decision { features, .. } | Condition::Mixed { features } => features,
            _ => &[],
        }
    }
}

/// Reads a directive's condition: `name` is `if`, `elif`, `ifdef` or `ifndef`.
pub fn read(name: &str, body: &str, features: &[Feature]) -> Condition {
    let expr = match name {
        "ifdef" => Some(Expr::Defined(first_word(body))),
        "ifndef" => Some(Expr::Not(Box::new(Expr::Defined(first_word(body))))),
        _ => Parser::new(body).parse(),
    };
    let mut mentioned = BTreeSet::new();
    let words = crate::lex::lex(body).tokens;
    let mentions_other = match &expr {
        Some(e) => e.names(features, &mut mentioned),
        // Unreadable: every feature it names is mixed with what could not be read.
        None => {
            mentioned.extend(words.iter().map(|t| t.text.as_str()));
            true
        }
    };
    let mentioned: Vec<&Feature> = features
        .iter()
        .filter(|f| mentioned.contains(f.macro_name.as_str()))
        .collect();
    let names: Vec<String> = mentioned.iter().map(|f| f.macro_name.clone()).collect();
    if mentioned.is_empty() {
        return Condition::Independent;
    }
    let Some(expr) = expr else {
        return Condition::Mixed { features: names };
    };
    if mentions_other || mentioned.len() > 8 {
        return Condition::Mixed { features: names };
    }
    let mut table = Vec::with_capacity(1 << mentioned.len());
    for mask in 0..(1usize << mentioned.len()) {
        let state: BTreeMap<&str, &MacroValue> = mentioned
            .iter()
            .enumerate()
            .map(|(i, f)| {
                (
                    f.macro_name.as_str(),
                    if mask & (1 << i) != 0 { &f.on } else { &f.off },
                )
            })
            .collect();
        match expr.eval(&state) {
            Some(v) => table.push(v != 0),
            None => return Condition::Mixed { features: names },
        }
    }
    if table.iter().all(|&v| v == table[0]) {
        return Condition::Constant(table[0]);
    }
    Condition::Decision {
        features: names,
        table,
    }
}

/// The C expression over the features' globals (`global(name)`) that a decision's table
/// describes: the feature itself or its negation when it mentions one, else a disjunction
/// of the assignments where it holds.
pub fn c_expression(
    features: &[String],
    table: &[bool],
    global: impl Fn(&str) -> String,
) -> String {
    let literal = |i: usize, on: bool| {
        let g = global(&features[i]);
        if on { g } else { format!("!{g}") }
    };
    if features.len() == 1 {
        return literal(0, table[1]);
    }
    let terms: Vec<String> = (0..table.len())
        .filter(|&mask| table[mask])
        .map(|mask| {
            let literals: Vec<String> = (0..features.len())
                .map(|i| literal(i, mask & (1 << i) != 0))
                .collect();
            format!("({})", literals.join(" && "))
        })
        .collect();
    terms.join(" || ")
}

/// The features a decision requires selected when it is exactly their conjunction
/// (`#ifdef A`, `#if defined(A) && defined(B)`), else None.
pub fn conjunction(features: &[String], table: &[bool]) -> Option<Vec<String>> {
    let required = (0..features.len())
        .filter(|&i| (0..table.len()).all(|mask| !table[mask] || mask & (1 << i) != 0))
        .fold(0usize, |m, i| m | (1 << i));
    let exact = (0..table.len()).all(|mask| table[mask] == (mask & required == required));
    let names = (0..features.len()).filter(|&i| required & (1 << i) != 0);
    (exact && required != 0).then(|| names.map(|i| features[i].clone()).collect())
}

fn first_word(body: &str) -> String {
    body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("")
        .to_string()
}

#[derive(Debug)]
enum Expr {
    Number(i64),
    Name(String),
    Defined(String),
    Not(Box<Expr>),
    Unary(char, Box<Expr>),
    Binary(String, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Collects the features mentioned into `features`; whether anything else is mentioned.
    fn names<'a>(&'a self, features: &[Feature], found: &mut BTreeSet<&'a str>) -> bool {
        match self {
            Expr::Number(_) => false,
            Expr::Name(n) | Expr::Defined(n) => {
                if features.iter().any(|f| &f.macro_name == n) {
                    found.insert(n);
                    false
                } else {
                    true
                }
            }
            Expr::Not(e) | Expr::Unary(_, e) => e.names(features, found),
            Expr::Binary(_, a, b) => {
                let x = a.names(features, found);
                b.names(features, found) | x
            }
            Expr::Ternary(a, b, c) => {
                let x = a.names(features, found);
                let y = b.names(features, found);
                c.names(features, found) | x | y
            }
        }
    }

    /// The value under `state` (a feature's macro value), or None where another macro or an
    /// undefined operation decides it.
    fn eval(&self, state: &BTreeMap<&str, &MacroValue>) -> Option<i64> {
        Some(match self {
            Expr::Number(n) => *n,
            Expr::Defined(n) => match state.get(n.as_str())? {
                MacroValue::Undefined => 0,
                MacroValue::Defined(_) => 1,
            },
            // An undefined macro is 0 in a condition; a defined one its (integer) value.
            Expr::Name(n) => match state.get(n.as_str())? {
                MacroValue::Undefined => 0,
                MacroValue::Defined(v) => *v,
            },
            Expr::Not(e) => i64::from(e.eval(state)? == 0),
            Expr::Unary(op, e) => {
                let v = e.eval(state)?;
                match op {
                    '-' => v.checked_neg()?,
                    '~' => !v,
                    _ => v,
                }
            }
            Expr::Ternary(c, a, b) => {
                if c.eval(state)? != 0 {
                    a.eval(state)?
                } else {
                    b.eval(state)?
                }
            }
            Expr::Binary(op, a, b) => {
                let x = a.eval(state)?;
                if op == "&&" && x == 0 {
                    return Some(0);
                }
                if op == "||" && x != 0 {
                    return Some(1);
                }
                let y = b.eval(state)?;
                binary(op, x, y)?
            }
        })
    }
}

fn binary(op: &str, x: i64, y: i64) -> Option<i64> {
    Some(match op {
        "*" => x.checked_mul(y)?,
        "/" => x.checked_div(y)?,
        "%" => x.checked_rem(y)?,
        "+" => x.checked_add(y)?,
        "-" => x.checked_sub(y)?,
        "<<" => x.checked_shl(u32::try_from(y).ok()?)?,
        ">>" => x.checked_shr(u32::try_from(y).ok()?)?,
        "<" => i64::from(x < y),
        ">" => i64::from(x > y),
        "<=" => i64::from(x <= y),
        ">=" => i64::from(x >= y),
        "==" => i64::from(x == y),
        "!=" => i64::from(x != y),
        "&" => x & y,
        "^" => x ^ y,
        "|" => x | y,
        "&&" => i64::from(x != 0 && y != 0),
        "||" => i64::from(x != 0 || y != 0),
        _ => return None,
    })
}

/// A precedence-climbing parser of `#if` expressions; None for anything it cannot read
/// (function-like macros, character constants), which then counts as another macro.
struct Parser {
    tokens: Vec<String>,
    at: usize,
}

const BINARY: [(&str, u8); 18] = [
    ("||", 1),
    ("&&", 2),
    ("|", 3),
    ("^", 4),
    ("&", 5),
    ("==", 6),
    ("!=", 6),
    ("<", 7),
    (">", 7),
    ("<=", 7),
    (">=", 7),
    ("<<", 8),
    (">>", 8),
    ("+", 9),
    ("-", 9),
    ("*", 10),
    ("/", 10),
    ("%", 10),
];

impl Parser {
    fn new(text: &str) -> Parser {
        let lexed = crate::lex::lex(text);
        Parser {
            tokens: lexed.tokens.into_iter().map(|t| t.text).collect(),
            at: 0,
        }
    }

    fn parse(mut self) -> Option<Expr> {
        let e = self.ternary()?;
        (self.at == self.tokens.len()).then_some(e)
    }

    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<String> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn ternary(&mut self) -> Option<Expr> {
        let c = self.binary(1)?;
        if self.peek() == Some("?") {
            self.at += 1;
            let a = self.ternary()?;
            (self.next()? == ":").then_some(())?;
            let b = self.ternary()?;
            return Some(Expr::Ternary(Box::new(c), Box::new(a), Box::new(b)));
        }
        Some(c)
    }

    fn binary(&mut self, min: u8) -> Option<Expr> {
        let mut left = self.unary()?;
        while let Some(&(op, prec)) = self
            .peek()
            .and_then(|t| BINARY.iter().find(|(o, _)| *o == t))
        {
            if prec < min {
                break;
            }
            self.at += 1;
            let right = self.binary(prec + 1)?;
            left = Expr::Binary(op.to_string(), Box::new(left), Box::new(right));
        }
        Some(left)
    }

    fn unary(&mut self) -> Option<Expr> {
        let t = self.next()?;
        match t.as_str() {
            "!" => Some(Expr::Not(Box::new(self.unary()?))),
            "-" | "+" | "~" => Some(Expr::Unary(t.chars().next()?, Box::new(self.unary()?))),
            "(" => {
                let e = self.ternary()?;
                (self.next()? == ")").then_some(e)
            }
            "defined" => {
                let parenthesised = self.peek() == Some("(");
                if parenthesised {
                    self.at += 1;
                }
                let name = self.next()?;
                if parenthesised && self.next()? != ")" {
                    return None;
                }
                Some(Expr::Defined(name))
            }
            _ if t.starts_with(|c: char| c.is_ascii_digit()) => Some(Expr::Number(number(&t)?)),
            _ if t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') => {
                // A function-like macro call cannot be evaluated here.
                (self.peek() != Some("(")).then_some(Expr::Name(t))
            }
            _ => None,
        }
    }
}

fn number(text: &str) -> Option<i64> {
    let t = text.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features() -> Vec<Feature> {
        vec![
            Feature::defined_when_on("A", "a"),
            Feature::valued("B", "b"),
        ]
    }

    #[test]
    fn ifdef_of_a_feature_is_the_feature() {
        let c = read("ifdef", "A", &features());
        assert_eq!(
            c,
            Condition::Decision {
                features: vec!["A".into()],
                table: vec![false, true]
            }
        );
        let Condition::Decision { features, table } = read("ifndef", "A", &features()) else {
            panic!()
        };
        assert_eq!(
            c_expression(&features, &table, |n| format!("g_{n}")),
            "!g_A"
        );
    }

    #[test]
    fn a_feature_defined_as_zero_when_off_is_defined_in_every_variant() {
        // B is -DB=1 or -DB=0: `#ifdef B` holds in both, `#if B` decides.
        assert_eq!(read("ifdef", "B", &features()), Condition::Constant(true));
        assert_eq!(read("ifndef", "B", &features()), Condition::Constant(false));
        assert!(matches!(
            read("if", "B", &features()),
            Condition::Decision { .. }
        ));
    }

    #[test]
    fn conjunctions_become_disjunctions_of_assignments() {
        let Condition::Decision { features, table } =
            read("if", "defined(A) && !(B == 1)", &features())
        else {
            panic!()
        };
        assert_eq!(table, vec![false, true, false, false]);
        assert_eq!(
            c_expression(&features, &table, |n| n.to_lowercase()),
            "(a && !b)"
        );
    }

    #[test]
    fn a_conjunction_of_selected_features_is_recognised() {
        let read_conjunction = |body: &str| match read("if", body, &features()) {
            Condition::Decision { features, table } => conjunction(&features, &table),
            other => panic!("{other:?}"),
        };
        assert_eq!(read_conjunction("defined(A)"), Some(vec!["A".into()]));
        assert_eq!(
            read_conjunction("defined(A) && B"),
            Some(vec!["A".into(), "B".into()])
        );
        assert_eq!(read_conjunction("defined(A) || B"), None);
        assert_eq!(read_conjunction("!defined(A)"), None);
    }

    #[test]
    fn other_macros_make_a_condition_mixed_and_no_feature_independent() {
        assert_eq!(
            read("if", "defined(A) && defined(__GNUC__)", &features()),
            Condition::Mixed {
                features: vec!["A".into()]
            }
        );
        // Short-circuit: another macro that no assignment reaches does not matter.
        assert_eq!(read("if", "0 && X", &features()), Condition::Independent);
        assert_eq!(
            read("if", "defined(__GNUC__) && X > 3", &features()),
            Condition::Independent
        );
        assert!(matches!(
            read("if", "A(1)", &features()),
            Condition::Mixed { .. }
        ));
    }
}
