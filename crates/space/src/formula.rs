//! Propositional formulas over configuration options: the cross-tree constraint language.
//!
//! Grammar (loosest binding first):
//!
//! ```text
//! iff     := implies ( ("<=>" | "<->") implies )*
//! implies := or ( ("=>" | "->") implies )?          right-associative
//! or      := and ( ("|" | "||") and )*
//! and     := unary ( ("&" | "&&") unary )*
//! unary   := ("!" | "~" | "-") unary | atom | "(" iff ")" | "true" | "false"
//! atom    := NAME | NAME "=" NUMBER                  NAME = option; NAME=NUMBER = numeric option value
//! ```
//!
//! A formula is parsed against names only; [`crate::ConfigSpace`] resolves the names to
//! options so that an unknown option is reported with the constraint it appears in.

use std::fmt;

/// A propositional formula whose atoms are still names; see the module docs for the syntax.
#[derive(Clone, Debug, PartialEq)]
pub enum Formula {
    Const(bool),
    /// A binary option is selected.
    Var(String),
    /// A numeric option takes the given value.
    Equals(String, f64),
    Not(Box<Formula>),
    And(Vec<Formula>),
    Or(Vec<Formula>),
    Implies(Box<Formula>, Box<Formula>),
    Iff(Box<Formula>, Box<Formula>),
    /// Exactly one holds: an alternative group's rule, kept whole (its pairwise exclusions
    /// would be quadratic in the members) and compiled to a linear BDD. Not in the syntax.
    ExactlyOne(Vec<Formula>),
}

/// Why a formula did not parse: the message and the byte offset where it went wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} at column {}", .offset + 1)]
pub struct FormulaError {
    pub message: String,
    pub offset: usize,
}

impl Formula {
    pub fn parse(text: &str) -> Result<Formula, FormulaError> {
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            tokens,
            pos: 0,
            end: text.len(),
            depth: 0,
        };
        let formula = parser.iff()?;
        if let Some((tok, offset)) = parser.tokens.get(parser.pos) {
            return Err(FormulaError {
                message: format!("unexpected `{tok}`"),
                offset: *offset,
            });
        }
        Ok(formula)
    }

    /// Every option name the formula mentions, in order of appearance.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.visit_names(&mut |n| out.push(n));
        out
    }

    fn visit_names<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        match self {
            Formula::Const(_) => {}
            Formula::Var(n) | Formula::Equals(n, _) => f(n),
            Formula::Not(a) => a.visit_names(f),
            Formula::And(xs) | Formula::Or(xs) | Formula::ExactlyOne(xs) => {
                xs.iter().for_each(|x| x.visit_names(f))
            }
            Formula::Implies(a, b) | Formula::Iff(a, b) => {
                a.visit_names(f);
                b.visit_names(f)
            }
        }
    }

    /// Evaluates the formula; `atom` answers whether a `Var` or `Equals` atom holds.
    pub fn eval(&self, atom: &impl Fn(&Formula) -> bool) -> bool {
        match self {
            Formula::Const(b) => *b,
            Formula::Var(_) | Formula::Equals(..) => atom(self),
            Formula::Not(a) => !a.eval(atom),
            Formula::And(xs) => xs.iter().all(|x| x.eval(atom)),
            Formula::Or(xs) => xs.iter().any(|x| x.eval(atom)),
            Formula::Implies(a, b) => !a.eval(atom) || b.eval(atom),
            Formula::Iff(a, b) => a.eval(atom) == b.eval(atom),
            Formula::ExactlyOne(xs) => xs.iter().filter(|x| x.eval(atom)).take(2).count() == 1,
        }
    }

    pub fn var(name: &str) -> Formula {
        Formula::Var(name.to_string())
    }

    pub fn implies(a: Formula, b: Formula) -> Formula {
        Formula::Implies(Box::new(a), Box::new(b))
    }

    #[allow(clippy::should_implement_trait)] // a constructor, like `var` and `implies`
    pub fn not(a: Formula) -> Formula {
        Formula::Not(Box::new(a))
    }
}

impl fmt::Display for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Parenthesise every compound operand: unambiguous, and parses back to the same tree.
        fn operand(x: &Formula, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match x {
                Formula::Const(_) | Formula::Var(_) | Formula::Equals(..) | Formula::Not(_) => {
                    write!(f, "{x}")
                }
                _ => write!(f, "({x})"),
            }
        }
        fn list(xs: &[Formula], sep: &str, empty: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if xs.is_empty() {
                return write!(f, "{empty}");
            }
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    write!(f, " {sep} ")?;
                }
                operand(x, f)?;
            }
            Ok(())
        }
        match self {
            Formula::Const(b) => write!(f, "{b}"),
            Formula::Var(n) => write!(f, "{n}"),
            Formula::Equals(n, v) => write!(f, "{n}={v}"),
            Formula::Not(a) => {
                write!(f, "!")?;
                operand(a, f)
            }
            Formula::And(xs) => list(xs, "&", "true", f),
            Formula::Or(xs) => list(xs, "|", "false", f),
            Formula::Implies(a, b) => {
                operand(a, f)?;
                write!(f, " => ")?;
                operand(b, f)
            }
            Formula::Iff(a, b) => {
                operand(a, f)?;
                write!(f, " <=> ")?;
                operand(b, f)
            }
            Formula::ExactlyOne(xs) => {
                write!(f, "exactly one of (")?;
                list(xs, ",", "", f)?;
                write!(f, ")")
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Name(String),
    Number(f64),
    Not,
    And,
    Or,
    Implies,
    Iff,
    Equals,
    Open,
    Close,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Name(n) => write!(f, "{n}"),
            Token::Number(v) => write!(f, "{v}"),
            Token::Not => write!(f, "!"),
            Token::And => write!(f, "&"),
            Token::Or => write!(f, "|"),
            Token::Implies => write!(f, "=>"),
            Token::Iff => write!(f, "<=>"),
            Token::Equals => write!(f, "="),
            Token::Open => write!(f, "("),
            Token::Close => write!(f, ")"),
        }
    }
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | ':' | '/' | '+')
}

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, FormulaError> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut after_equals = false;
    while i < text.len() {
        let rest = &text[i..];
        let c = rest.chars().next().unwrap();
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        let (tok, len) = if rest.starts_with("<=>") || rest.starts_with("<->") {
            (Token::Iff, 3)
        } else if rest.starts_with("=>") || rest.starts_with("->") {
            (Token::Implies, 2)
        } else if rest.starts_with("&&") || rest.starts_with("||") {
            (if c == '&' { Token::And } else { Token::Or }, 2)
        } else {
            match c {
                '!' | '~' => (Token::Not, 1),
                '-' if !after_equals => (Token::Not, 1),
                '&' => (Token::And, 1),
                '|' => (Token::Or, 1),
                '(' => (Token::Open, 1),
                ')' => (Token::Close, 1),
                '=' => (Token::Equals, 1),
                _ if is_name_char(c) => {
                    let len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
                    // A value after `=` is a number; `-` is allowed there as a sign.
                    let word = &rest[..len];
                    if after_equals {
                        let v: f64 = word.parse().map_err(|_| FormulaError {
                            message: format!("expected a number after `=`, found `{word}`"),
                            offset: i,
                        })?;
                        (Token::Number(v), len)
                    } else {
                        (Token::Name(word.to_string()), len)
                    }
                }
                _ => {
                    return Err(FormulaError {
                        message: format!("unexpected character `{c}`"),
                        offset: i,
                    });
                }
            }
        };
        after_equals = tok == Token::Equals;
        out.push((tok, i));
        i += len;
    }
    Ok(out)
}

/// How deeply a formula may nest (parentheses, negations, chained `=>` and `<=>`): deeper is
/// no constraint anyone writes, and every pass over a formula recurses over its depth.
pub const MAX_DEPTH: usize = 256;

struct Parser {
    tokens: Vec<(Token, usize)>,
    pos: usize,
    end: usize,
    /// Nesting of the formula being built.
    depth: usize,
}

impl Parser {
    /// Enters one more level of nesting, or fails past [`MAX_DEPTH`].
    fn deeper(&mut self) -> Result<(), FormulaError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FormulaError {
                message: format!("the formula nests more than {MAX_DEPTH} levels deep"),
                offset: self.offset(),
            });
        }
        Ok(())
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |(_, o)| *o)
    }

    fn eat(&mut self, tok: &Token) -> bool {
        if self.peek() == Some(tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn iff(&mut self) -> Result<Formula, FormulaError> {
        let mut left = self.implies()?;
        let depth = self.depth;
        while self.eat(&Token::Iff) {
            // Each `<=>` nests the chain so far one level deeper.
            self.deeper()?;
            let right = self.implies()?;
            left = Formula::Iff(Box::new(left), Box::new(right));
        }
        self.depth = depth;
        Ok(left)
    }

    fn implies(&mut self) -> Result<Formula, FormulaError> {
        let left = self.or()?;
        if self.eat(&Token::Implies) {
            self.deeper()?;
            let right = self.implies()?;
            self.depth -= 1;
            return Ok(Formula::implies(left, right));
        }
        Ok(left)
    }

    fn or(&mut self) -> Result<Formula, FormulaError> {
        let mut xs = vec![self.and()?];
        while self.eat(&Token::Or) {
            xs.push(self.and()?);
        }
        Ok(if xs.len() == 1 {
            xs.pop().unwrap()
        } else {
            Formula::Or(xs)
        })
    }

    fn and(&mut self) -> Result<Formula, FormulaError> {
        let mut xs = vec![self.unary()?];
        while self.eat(&Token::And) {
            xs.push(self.unary()?);
        }
        Ok(if xs.len() == 1 {
            xs.pop().unwrap()
        } else {
            Formula::And(xs)
        })
    }

    fn unary(&mut self) -> Result<Formula, FormulaError> {
        let offset = self.offset();
        match self.tokens.get(self.pos).map(|(t, _)| t.clone()) {
            Some(Token::Not) => {
                self.pos += 1;
                self.deeper()?;
                let inner = self.unary()?;
                self.depth -= 1;
                Ok(Formula::not(inner))
            }
            Some(Token::Open) => {
                self.pos += 1;
                self.deeper()?;
                let inner = self.iff()?;
                self.depth -= 1;
                if !self.eat(&Token::Close) {
                    return Err(FormulaError {
                        message: "expected `)`".into(),
                        offset: self.offset(),
                    });
                }
                Ok(inner)
            }
            Some(Token::Name(n)) => {
                self.pos += 1;
                if self.eat(&Token::Equals) {
                    match self.tokens.get(self.pos) {
                        Some((Token::Number(v), _)) => {
                            let v = *v;
                            self.pos += 1;
                            Ok(Formula::Equals(n, v))
                        }
                        _ => Err(FormulaError {
                            message: format!("expected a value after `{n}=`"),
                            offset: self.offset(),
                        }),
                    }
                } else {
                    Ok(match n.as_str() {
                        "true" => Formula::Const(true),
                        "false" => Formula::Const(false),
                        _ => Formula::Var(n),
                    })
                }
            }
            Some(t) => Err(FormulaError {
                message: format!("unexpected `{t}`"),
                offset,
            }),
            None => Err(FormulaError {
                message: "unexpected end of formula".into(),
                offset,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_associativity() {
        let f = Formula::parse("!a | b & c => d <=> e").unwrap();
        assert_eq!(f.to_string(), "((!a | (b & c)) => d) <=> e");
        let g = Formula::parse("a => b => c").unwrap();
        assert_eq!(g.to_string(), "a => (b => c)");
    }

    #[test]
    fn numeric_atoms_and_round_trip() {
        let f = Formula::parse("level=6 -> !(x && y)").unwrap();
        assert_eq!(f.names(), vec!["level", "x", "y"]);
        let again = Formula::parse(&f.to_string()).unwrap();
        assert_eq!(f, again);
        assert_eq!(
            Formula::parse("t=-1.5").unwrap(),
            Formula::Equals("t".into(), -1.5)
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let cases = [
            format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000)),
            format!("{}a", "!".repeat(100_000)),
            vec!["a"; 100_000].join(" => "),
            vec!["a"; 100_000].join(" <=> "),
        ];
        for text in &cases {
            let e = Formula::parse(text).unwrap_err();
            assert!(e.message.contains("nests more than"), "{}", e.message);
        }
        let fine = format!("{}a{}", "(".repeat(200), ")".repeat(200));
        assert!(Formula::parse(&fine).is_ok());
        assert!(Formula::parse(&vec!["a"; 100].join(" => ")).is_ok());
    }

    #[test]
    fn errors_carry_a_column() {
        let e = Formula::parse("a & (b | c").unwrap_err();
        assert_eq!(e.to_string(), "expected `)` at column 11");
        let e = Formula::parse("a & ").unwrap_err();
        assert!(e.message.contains("end of formula"), "{e}");
        assert!(Formula::parse("a $ b").is_err());
        assert!(Formula::parse("a b").is_err());
    }

    #[test]
    fn evaluation() {
        let f = Formula::parse("a => b").unwrap();
        let val = |a: bool, b: bool| {
            f.eval(&|atom| match atom {
                Formula::Var(n) if n == "a" => a,
                Formula::Var(_) => b,
                _ => unreachable!(),
            })
        };
        assert!(val(false, false) && val(false, true) && !val(true, false) && val(true, true));
    }
}
