//! SPL Conqueror's XML formats: the variability model (`<vm>`) and measurements
//! (`<results><row><data columname="...">`).
//!
//! Semantics follow SPL Conqueror's solver encoding:
//! - every option implies its parent; an empty parent (or `root`) means the top level;
//! - a binary option with `<optional>False</optional>` and no excluded options is mandatory;
//! - a non-optional option whose excluded options include non-optional siblings forms an
//!   alternative group with them (exactly one when the parent is selected);
//! - every other excluded option is a mutual exclusion; an implied-options entry `a | b`
//!   means "implies a or b";
//! - boolean constraints use `!`/`-` for negation, `|` and `&` (knobs accepts the whole
//!   formula language of [`crate::Formula`]);
//! - numeric options enumerate `<values>` (`;`-separated) or `minValue`, then the step
//!   function (`n + 2`, `n * 2`, or with the option's name) while the value is at most
//!   `maxValue`.
//!
//! Deliberate differences: SPL Conqueror drops an exclusion between a mandatory-looking and
//! an optional sibling, ignores excluded entries with `|`, and adds one value past
//! `maxValue`; knobs keeps the exclusions (as written) and stops at `maxValue`. Non-boolean
//! and mixed constraints are rejected with an error rather than ignored.

use std::collections::{BTreeSet, HashMap};

use roxmltree::{Document, Node};

use crate::Error;
use crate::formats::Dataset;
use crate::formula::Formula;
use crate::space::{ConfigSpace, Configuration, GroupKind, OptionId};

/// Parses XML; an unterminated document is reported at its last line, not where the
/// parser gives up (roxmltree says 1:1 for an unclosed root).
fn parse_xml<'i>(text: &'i str, shown: &str) -> Result<Document<'i>, Error> {
    Document::parse(text).map_err(|e| {
        let line = match e {
            roxmltree::Error::UnclosedRootNode | roxmltree::Error::UnexpectedEndOfStream => {
                text.lines().count().max(1)
            }
            _ => e.pos().row as usize,
        };
        Error::format(shown, line, e.to_string())
    })
}

fn line_of(doc: &Document, node: Node) -> usize {
    doc.text_pos_at(node.range().start).row as usize
}

fn child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| c.has_tag_name(name))
}

fn child_text(node: Node, name: &str) -> String {
    child(node, name)
        .and_then(|c| c.text())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Entries of `<impliedOptions>`/`<excludedOptions>`: each child element is one
/// disjunction, `a | b`.
fn option_lists(node: Node, name: &str) -> Vec<Vec<String>> {
    let Some(list) = child(node, name) else {
        return vec![];
    };
    list.children()
        .filter(|c| c.is_element())
        .map(|c| {
            c.text()
                .unwrap_or("")
                .split('|')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|v| !v.is_empty())
        .collect()
}

struct BinaryEntry {
    name: String,
    parent: String,
    optional: bool,
    implied: Vec<Vec<String>>,
    excluded: Vec<Vec<String>>,
    line: usize,
}

pub fn parse_variability_model(text: &str, shown: &str) -> Result<ConfigSpace, Error> {
    let doc = parse_xml(text, shown)?;
    let root = doc.root_element();
    if root.has_tag_name("results") {
        return Err(Error::format(
            shown,
            1,
            "this is an SPL Conqueror measurements file, not a variability model",
        ));
    }
    if !root.has_tag_name("vm") {
        return Err(Error::format(
            shown,
            1,
            format!(
                "expected a <vm> root element, found <{}>",
                root.tag_name().name()
            ),
        ));
    }
    let err = |line: usize, m: String| Error::format(shown, line, m);
    let mut space = ConfigSpace::new(root.attribute("name").unwrap_or("vm"));

    let options_of = |section: &str| -> Vec<Node> {
        child(root, section)
            .map(|s| {
                s.children()
                    .filter(|c| c.has_tag_name("configurationOption"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut binaries = Vec::new();
    for node in options_of("binaryOptions") {
        let line = line_of(&doc, node);
        let name = child_text(node, "name");
        if name.is_empty() {
            return Err(err(line, "binary option without a <name>".into()));
        }
        if name == "root" {
            continue; // SPL Conqueror's implicit root: always selected, not an option.
        }
        binaries.push(BinaryEntry {
            parent: child_text(node, "parent"),
            optional: child_text(node, "optional") == "True",
            implied: option_lists(node, "impliedOptions"),
            excluded: option_lists(node, "excludedOptions"),
            name,
            line,
        });
    }
    // Declare first, then link parents (files may list children before parents).
    for b in &binaries {
        space
            .add_binary(&b.name, None, false)
            .map_err(|e| err(b.line, e.to_string()))?;
    }
    for node in options_of("numericOptions") {
        let line = line_of(&doc, node);
        let name = child_text(node, "name");
        let values = numeric_values(node, &name).map_err(|m| err(line, m))?;
        space
            .add_numeric(&name, &values)
            .map_err(|e| err(line, e.to_string()))?;
    }
    let id_of =
        |space: &ConfigSpace, name: &str, line: usize, what: &str| -> Result<OptionId, Error> {
            space
                .find(name)
                .ok_or_else(|| err(line, format!("unknown option `{name}` in {what}")))
        };
    for b in &binaries {
        if !b.parent.is_empty() && b.parent != "root" {
            let child = space.find(&b.name).expect("declared above");
            let parent = id_of(&space, &b.parent, b.line, "<parent>")?;
            space
                .set_parent(child, parent)
                .map_err(|e| err(b.line, e.to_string()))?;
        }
    }
    let parent_of =
        |space: &ConfigSpace, name: &str| space.find(name).and_then(|id| space.option(id).parent);
    let optional: HashMap<&str, bool> = binaries
        .iter()
        .map(|b| (b.name.as_str(), b.optional))
        .collect();
    let mut grouped: BTreeSet<Vec<OptionId>> = BTreeSet::new();
    for b in &binaries {
        let id = space.find(&b.name).expect("declared");
        let parent = space.option(id).parent;
        if !b.optional && b.excluded.is_empty() {
            space.set_mandatory(id, true);
        }
        for alternatives in &b.implied {
            let mut disjuncts = Vec::new();
            for a in alternatives {
                let target = id_of(&space, a, b.line, "<impliedOptions>")?;
                if !space.option(target).is_binary() {
                    return Err(err(
                        b.line,
                        format!("<impliedOptions> names numeric option `{a}`"),
                    ));
                }
                disjuncts.push(Formula::var(a));
            }
            let f = Formula::implies(Formula::var(&b.name), Formula::Or(disjuncts));
            space.add_formula(f, &format!("{shown}:{} (impliedOptions)", b.line))?;
        }
        // Alternative group: this non-optional option and its non-optional excluded siblings.
        let mut group = vec![id];
        for excluded in &b.excluded {
            for e in excluded {
                id_of(&space, e, b.line, "<excludedOptions>")?;
            }
            if let [single] = excluded.as_slice() {
                let sibling = parent_of(&space, single) == parent;
                if !b.optional && sibling && optional.get(single.as_str()) == Some(&false) {
                    group.push(space.find(single).expect("checked"));
                    continue;
                }
            }
            let f = Formula::implies(
                Formula::var(&b.name),
                Formula::not(Formula::Or(
                    excluded.iter().map(|e| Formula::var(e)).collect(),
                )),
            );
            space.add_formula(f, &format!("{shown}:{} (excludedOptions)", b.line))?;
        }
        if group.len() > 1 {
            group.sort();
            if grouped.insert(group.clone()) {
                space
                    .add_group(GroupKind::Alternative, parent, group)
                    .map_err(|e| err(b.line, e.to_string()))?;
            }
        }
    }
    if let Some(section) = child(root, "booleanConstraints") {
        for c in section.children().filter(|c| c.is_element()) {
            let line = line_of(&doc, c);
            let text = c.text().unwrap_or("").trim();
            if !text.is_empty() {
                space.add_constraint(text, &format!("{shown}:{line}"))?;
            }
        }
    }
    for section in ["nonBooleanConstraints", "mixedConstraints"] {
        if let Some(s) = child(root, section)
            && let Some(c) = s.children().find(|c| c.is_element())
        {
            return Err(err(
                line_of(&doc, c),
                format!(
                    "<{section}> are not supported yet (arithmetic constraints over numeric options)"
                ),
            ));
        }
    }
    Ok(space)
}

/// Values of a numeric option: an explicit `<values>` list, or min, max and step function.
fn numeric_values(node: Node, name: &str) -> Result<Vec<f64>, String> {
    let number = |field: &str| -> Result<f64, String> {
        let t = child_text(node, field).replace(',', ".");
        t.parse::<f64>()
            .map_err(|_| format!("numeric option `{name}`: <{field}> `{t}` is not a number"))
    };
    let listed = child_text(node, "values");
    if !listed.is_empty() {
        return listed
            .trim_matches(|c| c == '(' || c == ')')
            .split(';')
            .map(|v| {
                let v = v.trim().replace(',', ".");
                v.parse::<f64>()
                    .map_err(|_| format!("numeric option `{name}`: value `{v}` is not a number"))
            })
            .collect();
    }
    let (min, max) = (number("minValue")?, number("maxValue")?);
    if min > max {
        return Err(format!(
            "numeric option `{name}`: minValue {min} exceeds maxValue {max}"
        ));
    }
    let step_text = child_text(node, "stepFunction");
    let step_text = if step_text.is_empty() {
        "n + 1".to_string()
    } else {
        step_text
    };
    let mut values = vec![min];
    let mut current = min;
    loop {
        let next = eval_step(&step_text, name, current)
            .map_err(|m| format!("numeric option `{name}`: stepFunction `{step_text}`: {m}"))?;
        let next = (next * 1000.0).round() / 1000.0;
        if next <= current {
            return Err(format!(
                "numeric option `{name}`: stepFunction `{step_text}` does not increase {current}"
            ));
        }
        if next > max + 1e-9 {
            break;
        }
        values.push(next);
        current = next;
        if values.len() > super::MAX_GENERATED_VALUES {
            return Err(format!(
                "numeric option `{name}` has more than {} values",
                super::MAX_GENERATED_VALUES
            ));
        }
    }
    Ok(values)
}

/// Evaluates a step function such as `n * 2` or `level + 1` at `n`.
fn eval_step(text: &str, name: &str, n: f64) -> Result<f64, String> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
        name: &'a str,
        n: f64,
        /// Open parentheses: bounded, so a deep expression is an error, not a stack overflow.
        depth: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn sum(&mut self) -> Result<f64, String> {
            let mut v = self.product()?;
            loop {
                self.ws();
                match self.s.get(self.i) {
                    Some(b'+') => {
                        self.i += 1;
                        v += self.product()?;
                    }
                    Some(b'-') => {
                        self.i += 1;
                        v -= self.product()?;
                    }
                    _ => return Ok(v),
                }
            }
        }
        fn product(&mut self) -> Result<f64, String> {
            let mut v = self.atom()?;
            loop {
                self.ws();
                match self.s.get(self.i) {
                    Some(b'*') => {
                        self.i += 1;
                        v *= self.atom()?;
                    }
                    Some(b'/') => {
                        self.i += 1;
                        v /= self.atom()?;
                    }
                    _ => return Ok(v),
                }
            }
        }
        fn atom(&mut self) -> Result<f64, String> {
            self.ws();
            let start = self.i;
            if self.s.get(self.i) == Some(&b'(') {
                self.i += 1;
                self.depth += 1;
                if self.depth > crate::formula::MAX_DEPTH {
                    return Err(format!(
                        "parentheses nest more than {} levels deep",
                        crate::formula::MAX_DEPTH
                    ));
                }
                let v = self.sum()?;
                self.depth -= 1;
                self.ws();
                if self.s.get(self.i) != Some(&b')') {
                    return Err("expected `)`".into());
                }
                self.i += 1;
                return Ok(v);
            }
            while self.i < self.s.len()
                && (self.s[self.i].is_ascii_alphanumeric() || b"._".contains(&self.s[self.i]))
            {
                self.i += 1;
            }
            let word = std::str::from_utf8(&self.s[start..self.i]).unwrap();
            if word == "n" || word == self.name {
                Ok(self.n)
            } else {
                word.parse::<f64>()
                    .map_err(|_| format!("unexpected `{word}`"))
            }
        }
    }
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
        name,
        n,
        depth: 0,
    };
    let v = p.sum()?;
    p.ws();
    if p.i != text.len() {
        return Err(format!("unexpected `{}`", &text[p.i..]));
    }
    Ok(v)
}

/// Reads measurements against a space: `Configuration`/`BinaryOptions` list the selected
/// binary options, `Variable Features`/`NumericOptions` list `name;value` pairs, and the
/// first other column (`Performance` preferred) is the measured value.
pub fn parse_measurements(text: &str, shown: &str, space: &ConfigSpace) -> Result<Dataset, Error> {
    let doc = parse_xml(text, shown)?;
    let root = doc.root_element();
    if !root.has_tag_name("results") {
        return Err(Error::format(
            shown,
            1,
            format!(
                "expected a <results> root element, found <{}>",
                root.tag_name().name()
            ),
        ));
    }
    let mut configurations = Vec::new();
    let mut performance = Vec::new();
    let mut metric: Option<String> = None;
    for row in root.children().filter(|c| c.has_tag_name("row")) {
        let line = line_of(&doc, row);
        let err = |m: String| Error::format(shown, line, m);
        let mut values: Vec<Option<u32>> = space
            .options()
            .iter()
            .map(|o| if o.is_binary() { Some(0) } else { None })
            .collect();
        let mut measured: Vec<(String, String)> = Vec::new();
        for data in row.children().filter(|c| c.has_tag_name("data")) {
            // SPL Conqueror reads the first attribute whatever its name (`columname`, `column`).
            let key = data
                .attributes()
                .next()
                .map(|a| a.value().to_string())
                .unwrap_or_default();
            let text = data.text().unwrap_or("").trim();
            match key.as_str() {
                "Configuration" | "BinaryOptions" => {
                    for name in text
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty() && *s != "root")
                    {
                        let id = space
                            .find(name)
                            .ok_or_else(|| err(format!("unknown option `{name}`")))?;
                        if !space.option(id).is_binary() {
                            return Err(err(format!(
                                "numeric option `{name}` listed as a binary option"
                            )));
                        }
                        values[id.index()] = Some(1);
                    }
                }
                "Variable Features" | "NumericOptions" => {
                    for pair in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        let (name, value) = pair
                            .split_once(';')
                            .or_else(|| pair.split_once(' '))
                            .ok_or_else(|| {
                            err(format!("expected `name;value`, found `{pair}`"))
                        })?;
                        let id = space
                            .find(name.trim())
                            .ok_or_else(|| err(format!("unknown option `{name}`")))?;
                        let v: f64 = value
                            .trim()
                            .parse()
                            .map_err(|_| err(format!("`{value}` is not a number")))?;
                        let index = space.option(id).value_index(v).ok_or_else(|| {
                            err(format!("`{value}` is not a value of option `{name}`"))
                        })?;
                        values[id.index()] = Some(index);
                    }
                }
                _ => measured.push((key, text.to_string())),
            }
        }
        let mut config = Vec::with_capacity(values.len());
        for (i, v) in values.into_iter().enumerate() {
            config.push(v.ok_or_else(|| {
                err(format!(
                    "numeric option `{}` has no value",
                    space.options()[i].name
                ))
            })?);
        }
        let metric_name = metric.get_or_insert_with(|| {
            measured
                .iter()
                .find(|(k, _)| k == "Performance")
                .or(measured.first())
                .map(|(k, _)| k.clone())
                .unwrap_or_default()
        });
        let value = measured
            .iter()
            .find(|(k, _)| k == metric_name)
            .ok_or_else(|| err(format!("row has no `{metric_name}` value")))?;
        let v: f64 = value
            .1
            .replace(',', ".")
            .parse()
            .map_err(|_| err(format!("`{}` is not a number", value.1)))?;
        configurations.push(Configuration(config));
        performance.push(v);
    }
    if configurations.is_empty() {
        return Err(Error::format(shown, 0, "no <row> elements"));
    }
    Ok(Dataset {
        space: space.clone(),
        configurations,
        performance,
        metric: metric.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValidConfigurations;

    const VM: &str = r#"<vm name="t">
      <binaryOptions>
        <configurationOption><name>root</name><parent></parent><optional>False</optional></configurationOption>
        <configurationOption><name>a</name><parent></parent><optional>True</optional>
          <impliedOptions><options>b | c</options></impliedOptions></configurationOption>
        <configurationOption><name>b</name><parent></parent><optional>True</optional></configurationOption>
        <configurationOption><name>c</name><parent></parent><optional>True</optional></configurationOption>
        <configurationOption><name>g</name><parent></parent><optional>False</optional></configurationOption>
        <configurationOption><name>g1</name><parent>g</parent><optional>False</optional>
          <excludedOptions><options>g2</options></excludedOptions></configurationOption>
        <configurationOption><name>g2</name><parent>g</parent><optional>False</optional>
          <excludedOptions><options>g1</options></excludedOptions></configurationOption>
      </binaryOptions>
      <numericOptions>
        <configurationOption><name>level</name><minValue>1</minValue><maxValue>10</maxValue><stepFunction>level * 2</stepFunction></configurationOption>
        <configurationOption><name>k</name><values>3;1;2</values></configurationOption>
      </numericOptions>
      <booleanConstraints><constraint>!b | -c</constraint></booleanConstraints>
    </vm>"#;

    #[test]
    fn semantics_of_a_small_model() {
        let space = parse_variability_model(VM, "t.xml").unwrap();
        assert_eq!(
            space.names(),
            vec!["a", "b", "c", "g", "g1", "g2", "level", "k"]
        );
        let level = &space.options()[6];
        assert_eq!(
            level.domain,
            crate::Domain::Numeric {
                values: vec![1.0, 2.0, 4.0, 8.0]
            }
        );
        let valid = ValidConfigurations::new(&space).unwrap();
        // a,b,c: a => b|c, !(b&c): {000, 010, 001, 110, 101} = 5; g mandatory; g1 xor g2: 2;
        // level: 4 values; k: 3 values.
        assert_eq!(valid.count(), (5u32 * 2 * 4 * 3).into());
    }

    #[test]
    fn errors_have_lines() {
        let bad = VM.replace(
            "<name>g2</name><parent>g</parent>",
            "<name>g2</name><parent>nope</parent>",
        );
        let e = parse_variability_model(&bad, "t.xml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.xml:11: unknown option `nope` in <parent>"),
            "{e}"
        );
        let e = parse_variability_model("<vm><binaryOptions>", "t.xml").unwrap_err();
        assert!(e.to_string().starts_with("t.xml:1: "), "{e}");
        let bad = VM.replace("!b | -c", "b | zz");
        let e = parse_variability_model(&bad, "t.xml").unwrap_err();
        assert!(e.to_string().contains("unknown option `zz`"), "{e}");
    }

    #[test]
    fn measurements_read_binary_and_numeric_values() {
        let space = parse_variability_model(VM, "t.xml").unwrap();
        let m = r#"<results><row><data columname="Configuration">root,a,b,g,g1,</data>
            <data columname="Variable Features">level;4,k;2</data><data columname="Performance">1,5</data></row></results>"#;
        let d = parse_measurements(m, "m.xml", &space).unwrap();
        assert_eq!(d.performance, vec![1.5]);
        assert_eq!(d.configurations[0].0, vec![1, 1, 0, 1, 1, 0, 2, 1]);
        let m2 = m.replace("k;2", "k;7");
        assert!(
            parse_measurements(&m2, "m.xml", &space)
                .unwrap_err()
                .to_string()
                .contains("`7` is not a value of option `k`")
        );
    }
}
