//! A C lexer just deep enough for variability encoding: code tokens with their lines, and
//! preprocessor directives as logical lines. Comments, strings and character literals never
//! yield identifiers or punctuation, so a brace in a string cannot unbalance a block.

/// One token of code (never of a directive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub text: String,
    /// 1-based line of the token's first character.
    pub line: usize,
    /// Byte offset of the token in the source.
    pub offset: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Ident,
    Number,
    /// A string or character literal.
    Literal,
    Punct,
}

/// A preprocessor directive: `#` first on a line, with its continuation lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// `if`, `ifdef`, `define`, … (empty for a null directive).
    pub name: String,
    /// What follows the name, continuations joined, comments removed.
    pub body: String,
    pub first_line: usize,
    pub last_line: usize,
}

/// A source file split into code tokens and directives, each in source order.
#[derive(Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub directives: Vec<Directive>,
}

/// Splits `source` into code tokens and directives.
pub fn lex(source: &str) -> Lexed {
    let bytes = source.as_bytes();
    let mut lexed = Lexed::default();
    let mut i = 0;
    let mut line = 1;
    let mut at_line_start = true;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\n' => {
                line += 1;
                at_line_start = true;
                i += 1;
            }
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => i += 1,
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => {
                line += 1;
                i += 2;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = skip_line_comment(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = skip_block_comment(bytes, i);
                line += count_newlines(&bytes[i..end]);
                i = end;
            }
            b'#' if at_line_start => {
                let (directive, end) = read_directive(source, i, line);
                line = directive.last_line;
                lexed.directives.push(directive);
                i = end;
            }
            _ => {
                at_line_start = false;
                let (kind, end) = read_token(bytes, i);
                let text = source[i..end].to_string();
                lexed.tokens.push(Token {
                    kind,
                    text,
                    line,
                    offset: i,
                });
                line += count_newlines(&bytes[i..end]);
                i = end;
            }
        }
    }
    lexed
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

fn skip_line_comment(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i] != b'\n' {
        // A backslash-newline continues a line comment too.
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
            i += 1;
        }
        i += 1;
    }
    i
}

fn skip_block_comment(bytes: &[u8], i: usize) -> usize {
    let mut j = i + 2;
    while j + 1 < bytes.len() && !(bytes[j] == b'*' && bytes[j + 1] == b'/') {
        j += 1;
    }
    (j + 2).min(bytes.len())
}

fn skip_literal(bytes: &[u8], i: usize) -> usize {
    let quote = bytes[i];
    let mut j = i + 1;
    while j < bytes.len() && bytes[j] != quote && bytes[j] != b'\n' {
        if bytes[j] == b'\\' {
            j += 1;
        }
        j += 1;
    }
    (j + 1).min(bytes.len())
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

fn read_token(bytes: &[u8], i: usize) -> (TokenKind, usize) {
    let c = bytes[i];
    if c == b'"' || c == b'\'' {
        return (TokenKind::Literal, skip_literal(bytes, i));
    }
    if is_ident_byte(c) && !c.is_ascii_digit() {
        let mut j = i;
        while j < bytes.len() && is_ident_byte(bytes[j]) {
            j += 1;
        }
        // A prefixed literal: L"…", u8"…", U'…'.
        if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') && j - i <= 2 {
            return (TokenKind::Literal, skip_literal(bytes, j));
        }
        return (TokenKind::Ident, j);
    }
    if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
        let mut j = i + 1;
        while j < bytes.len()
            && (is_ident_byte(bytes[j])
                || bytes[j] == b'.'
                || ((bytes[j] == b'+' || bytes[j] == b'-')
                    && matches!(bytes[j - 1], b'e' | b'E' | b'p' | b'P')))
        {
            j += 1;
        }
        return (TokenKind::Number, j);
    }
    const THREE: [&[u8]; 3] = [b"...", b"<<=", b">>="];
    const TWO: [&[u8]; 19] = [
        b"->", b"++", b"--", b"<<", b">>", b"<=", b">=", b"==", b"!=", b"&&", b"||", b"+=", b"-=",
        b"*=", b"/=", b"%=", b"&=", b"|=", b"^=",
    ];
    for p in THREE {
        if bytes[i..].starts_with(p) {
            return (TokenKind::Punct, i + 3);
        }
    }
    for p in TWO {
        if bytes[i..].starts_with(p) {
            return (TokenKind::Punct, i + 2);
        }
    }
    // One byte, or one whole UTF-8 character outside the C character set.
    let mut j = i + 1;
    while j < bytes.len() && (bytes[j] & 0xC0) == 0x80 {
        j += 1;
    }
    (TokenKind::Punct, j)
}

/// Reads the directive starting at the `#` at `i`: its name, its body with comments removed
/// and continuation lines joined, and the offset just past its last line.
fn read_directive(source: &str, i: usize, line: usize) -> (Directive, usize) {
    let bytes = source.as_bytes();
    let mut j = i + 1;
    let mut last_line = line;
    let mut text = String::new();
    while j < bytes.len() && bytes[j] != b'\n' {
        match bytes[j] {
            b'\\' if bytes.get(j + 1) == Some(&b'\n') => {
                last_line += 1;
                text.push(' ');
                j += 2;
            }
            b'/' if bytes.get(j + 1) == Some(&b'/') => j = skip_line_comment(bytes, j),
            b'/' if bytes.get(j + 1) == Some(&b'*') => {
                let end = skip_block_comment(bytes, j);
                last_line += count_newlines(&bytes[j..end]);
                text.push(' ');
                j = end;
            }
            b'"' | b'\'' => {
                let end = skip_literal(bytes, j);
                text.push_str(&source[j..end]);
                j = end;
            }
            _ => {
                let start = j;
                j += 1;
                while j < bytes.len() && (bytes[j] & 0xC0) == 0x80 {
                    j += 1;
                }
                text.push_str(&source[start..j]);
            }
        }
    }
    let trimmed = text.trim_start();
    let name_len = trimmed
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let directive = Directive {
        name: trimmed[..name_len].to_string(),
        body: trimmed[name_len..].trim().to_string(),
        first_line: line,
        last_line,
    };
    (directive, j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_in_comments_and_strings_are_not_tokens() {
        let lexed = lex("int a = '{'; /* { */ char *s = \"}\"; // {\n{ }");
        let braces: Vec<usize> = lexed
            .tokens
            .iter()
            .filter(|t| t.text == "{" || t.text == "}")
            .map(|t| t.line)
            .collect();
        assert_eq!(braces, vec![2, 2]);
    }

    #[test]
    fn directives_join_continuations_and_keep_their_lines() {
        let lexed = lex("x;\n  #  if defined(A) \\\n  && B /* c\n */\nfoo();\n#endif\n");
        assert_eq!(lexed.directives.len(), 2);
        let d = &lexed.directives[0];
        assert_eq!((d.name.as_str(), d.first_line, d.last_line), ("if", 2, 4));
        assert!(
            d.body.starts_with("defined(A)") && d.body.contains("&& B"),
            "{}",
            d.body
        );
        assert_eq!(
            lexed.tokens.iter().find(|t| t.text == "foo").unwrap().line,
            5
        );
        assert_eq!(lexed.directives[1].first_line, 6);
    }

    #[test]
    fn a_hash_inside_code_is_not_a_directive() {
        let lexed = lex("a = b # c;\n");
        assert!(lexed.directives.is_empty());
    }
}
