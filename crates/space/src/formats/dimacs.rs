//! DIMACS CNF as written by FeatureIDE and KConfig tools: `c <id> <name>` lines name the
//! variables (a trailing `$` on the id marks a generated variable; it is kept as named),
//! `p cnf <vars> <clauses>`, then clauses of non-zero literals ended by `0`.

use crate::Error;
use crate::formula::Formula;
use crate::space::ConfigSpace;

/// The most variables a DIMACS file may declare: each becomes an option, and a header
/// declaring more is a corrupt file, not a space anyone can analyse.
pub const MAX_VARIABLES: usize = 100_000;

pub fn parse_dimacs(text: &str, shown: &str) -> Result<ConfigSpace, Error> {
    // Variable names by id, kept sparse: an id in a comment allocates nothing.
    let mut names: std::collections::BTreeMap<usize, String> = Default::default();
    let mut header: Option<(usize, usize, usize)> = None; // (vars, clauses, line)
    let mut clauses: Vec<(Vec<i64>, usize)> = Vec::new();
    let mut current: Vec<i64> = Vec::new();
    let mut current_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('%') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('c') {
            // `c 12 name` names variable 12; any other comment is ignored.
            let mut parts = rest.split_whitespace();
            if let (Some(id), Some(name)) = (parts.next(), parts.next())
                && let Ok(id) = id.trim_end_matches('$').parse::<usize>()
            {
                if id == 0 {
                    return Err(Error::format(shown, line_no, "variable ids start at 1"));
                }
                if id > MAX_VARIABLES {
                    return Err(Error::format(
                        shown,
                        line_no,
                        format!("variable {id} is beyond the {MAX_VARIABLES} a space may have"),
                    ));
                }
                names.insert(id, name.to_string());
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix('p') {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            let parsed = match parts.as_slice() {
                ["cnf", v, c] => v.parse::<usize>().ok().zip(c.parse::<usize>().ok()),
                _ => None,
            };
            let (v, c) = parsed.ok_or_else(|| {
                Error::format(shown, line_no, "expected `p cnf <variables> <clauses>`")
            })?;
            if header.is_some() {
                return Err(Error::format(shown, line_no, "second `p cnf` line"));
            }
            if v > MAX_VARIABLES {
                return Err(Error::format(
                    shown,
                    line_no,
                    format!("{v} variables: a space may have at most {MAX_VARIABLES}"),
                ));
            }
            header = Some((v, c, line_no));
            continue;
        }
        let Some((vars, _, _)) = header else {
            return Err(Error::format(
                shown,
                line_no,
                "clause before the `p cnf` line",
            ));
        };
        for token in line.split_whitespace() {
            let lit: i64 = token.parse().map_err(|_| {
                Error::format(shown, line_no, format!("`{token}` is not a literal"))
            })?;
            if lit == 0 {
                clauses.push((std::mem::take(&mut current), current_line));
                continue;
            }
            if lit.unsigned_abs() as usize > vars {
                return Err(Error::format(
                    shown,
                    line_no,
                    format!("literal {lit} exceeds the {vars} declared variables"),
                ));
            }
            if current.is_empty() {
                current_line = line_no;
            }
            current.push(lit);
        }
    }
    let Some((vars, expected, header_line)) = header else {
        return Err(Error::format(
            shown,
            0,
            "no `p cnf` line: not a DIMACS file",
        ));
    };
    if !current.is_empty() {
        return Err(Error::format(
            shown,
            current_line,
            "last clause is not terminated by 0",
        ));
    }
    if clauses.len() != expected {
        return Err(Error::format(
            shown,
            header_line,
            format!(
                "header declares {expected} clauses but the file has {}",
                clauses.len()
            ),
        ));
    }
    if let Some((&id, _)) = names.last_key_value()
        && id > vars
    {
        return Err(Error::format(
            shown,
            0,
            format!("a `c` line names variable {id} but only {vars} are declared"),
        ));
    }
    let stem = std::path::Path::new(shown)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("dimacs");
    let mut space = ConfigSpace::new(stem);
    for i in 0..vars {
        let name = names
            .get(&(i + 1))
            .cloned()
            .unwrap_or_else(|| format!("x{}", i + 1));
        space
            .add_binary(&name, None, false)
            .map_err(|e| Error::format(shown, 0, e.to_string()))?;
    }
    for (clause, line) in clauses {
        let literals = clause
            .iter()
            .map(|l| {
                let v = Formula::var(&space.options()[l.unsigned_abs() as usize - 1].name);
                if *l < 0 { Formula::not(v) } else { v }
            })
            .collect();
        space
            .add_formula(Formula::Or(literals), &format!("{shown}:{line}"))
            .map_err(|e| Error::format(shown, line, e.to_string()))?;
    }
    Ok(space)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValidConfigurations;

    #[test]
    fn names_and_clauses() {
        let text = "c 1 root\nc 2 a\nc 3$ b\np cnf 3 3\n1 0\n-2 3\n0\n-3 1 0\n";
        let space = parse_dimacs(text, "m.dimacs").unwrap();
        assert_eq!(space.names(), vec!["root", "a", "b"]);
        let valid = ValidConfigurations::new(&space).unwrap();
        // root forced; a => b: (a,b) in {00, 01, 11}
        assert_eq!(valid.count(), 3u32.into());
    }

    #[test]
    fn malformed_input_names_the_line() {
        for huge in [
            "p cnf 18446744073709551615 0\n",
            "c 1000000000000000000 x\np cnf 2 0\n",
            "p cnf 100001 0\n",
        ] {
            let e = parse_dimacs(huge, "m.cnf").unwrap_err().to_string();
            assert!(e.contains("100000"), "{huge}: {e}");
        }
        let e = parse_dimacs("p cnf 2 1\n1 x 0\n", "m.cnf").unwrap_err();
        assert_eq!(e.to_string(), "m.cnf:2: `x` is not a literal");
        let e = parse_dimacs("p cnf 2 1\n1 3 0\n", "m.cnf").unwrap_err();
        assert!(
            e.to_string().starts_with("m.cnf:2: literal 3 exceeds"),
            "{e}"
        );
        let e = parse_dimacs("p cnf 2 2\n1 0\n", "m.cnf").unwrap_err();
        assert!(
            e.to_string()
                .contains("declares 2 clauses but the file has 1"),
            "{e}"
        );
        assert!(parse_dimacs("1 2 0\n", "m.cnf").is_err());
        let e = parse_dimacs("p cnf 2 2\n1 0\n2\n", "m.cnf").unwrap_err();
        assert_eq!(e.to_string(), "m.cnf:3: last clause is not terminated by 0");
    }
}
