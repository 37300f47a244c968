//! Terms against a reference: a model over the members of an exclusive choice (an
//! alternative group's members, a numeric option's values) can carry a term for every member
//! beside the intercept, and products of two members. No configuration selects such a product,
//! and the intercept already stands for one member; the printed terms then mean nothing a user
//! can select. Rewriting the reference member as `given − Σ others` (`1 − Σ others` when the
//! choice always applies) and dropping products of two members gives the same predictions on
//! every valid configuration with terms that each name something selectable.

use std::collections::BTreeMap;

use crate::{Error, Factor, InfluenceModel, ModelFile, Term};

/// Factors of which exactly one holds whenever `given` does (and none otherwise); the first
/// member is the reference, which terms are rewritten against.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub members: Vec<Factor>,
    pub given: Option<Factor>,
}

impl Choice {
    /// A choice from factors as text (`A`, `level=6`), as `space::ExclusiveChoice` lists them.
    pub fn parse<S: AsRef<str>>(members: &[S], given: Option<&str>) -> Result<Choice, Error> {
        Ok(Choice {
            members: members
                .iter()
                .map(|m| m.as_ref().parse())
                .collect::<Result<_, _>>()?,
            given: given.map(str::parse).transpose()?,
        })
    }
}

/// Rewriting steps allowed per term before giving up (each step removes one reference
/// factor, so a model needs at most as many as it has choices per term).
const MAX_STEPS: usize = 100_000;

impl InfluenceModel {
    /// The same model with no term holding a reference member or two members of one choice
    /// (see the module documentation). Predictions on configurations that respect the
    /// choices are unchanged.
    pub fn against_reference(&self, choices: &[Choice]) -> InfluenceModel {
        self.try_against_reference(choices)
            .unwrap_or_else(|| self.clone())
    }

    /// [`InfluenceModel::against_reference`], or `None` when rewriting would take more than
    /// [`MAX_STEPS`] steps (the model is then best kept as it is: its predictions are right,
    /// only its terms are not against the reference members).
    pub fn try_against_reference(&self, choices: &[Choice]) -> Option<InfluenceModel> {
        let mut out: BTreeMap<Vec<String>, Term> = BTreeMap::new();
        let mut work: Vec<Term> = self.terms().to_vec();
        let mut steps = 0;
        while let Some(term) = work.pop() {
            steps += 1;
            if steps > MAX_STEPS {
                return None;
            }
            let mut factors = term.options.clone();
            // Two members of one choice never hold together.
            if choices
                .iter()
                .any(|c| c.members.iter().filter(|m| factors.contains(m)).count() > 1)
            {
                continue;
            }
            // A member implies the choice's condition.
            for c in choices {
                if let Some(g) = &c.given
                    && c.members.iter().any(|m| factors.contains(m))
                {
                    factors.retain(|f| f != g);
                }
            }
            let reference = choices
                .iter()
                .find(|c| c.members.len() > 1 && factors.contains(&c.members[0]));
            match reference {
                Some(c) => {
                    let rest: Vec<Factor> = factors
                        .iter()
                        .filter(|f| **f != c.members[0])
                        .cloned()
                        .collect();
                    let mut with = |extra: Option<&Factor>, value: f64| {
                        let mut f = rest.clone();
                        f.extend(extra.cloned());
                        work.push(Term::from_factors(f, value));
                    };
                    with(c.given.as_ref(), term.value);
                    for m in &c.members[1..] {
                        with(Some(m), -term.value);
                    }
                }
                None => {
                    let t = Term::from_factors(factors, term.value);
                    let key: Vec<String> = t.options.iter().map(|f| f.to_string()).collect();
                    match out.get_mut(&key) {
                        Some(existing) => existing.value += t.value,
                        None => {
                            out.insert(key, t);
                        }
                    }
                }
            }
        }
        let scale = out.values().map(|t| t.value.abs()).fold(0.0, f64::max);
        let mut terms: Vec<Term> = out
            .into_values()
            .filter(|t| t.options.is_empty() || t.value.abs() > 1e-12 * scale)
            .collect();
        // Keep the original order of the surviving terms where there is one.
        let position = |t: &Term| {
            self.terms()
                .iter()
                .position(|o| o.options == t.options)
                .unwrap_or(usize::MAX)
        };
        terms.sort_by_key(position);
        Some(InfluenceModel::from_terms(terms))
    }
}

impl ModelFile {
    /// [`InfluenceModel::against_reference`] applied to the global terms and every region's.
    /// Models too large to rewrite are kept as they are and listed (`"global"` or the region's
    /// id) in the provenance's `not_against_reference`.
    pub fn express_against_reference(&mut self, choices: &[Choice]) {
        let mut kept = Vec::new();
        match self.terms.try_against_reference(choices) {
            Some(t) => self.terms = t,
            None => kept.push(serde_json::Value::from("global")),
        }
        for r in &mut self.regions {
            match r.terms.try_against_reference(choices) {
                Some(t) => r.terms = t,
                None => kept.push(serde_json::Value::from(r.id.clone())),
            }
        }
        if !kept.is_empty() {
            self.provenance
                .insert("not_against_reference".into(), kept.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(terms: &[(&[&str], f64)]) -> InfluenceModel {
        InfluenceModel::from_terms(
            terms.iter().map(|(o, v)| {
                Term::from_factors(o.iter().map(|f| f.parse().unwrap()).collect(), *v)
            }),
        )
    }

    fn labels(m: &InfluenceModel) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = m
            .terms()
            .iter()
            .map(|t| (t.label(), (t.value * 1e9).round() / 1e9))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn every_member_and_the_intercept_become_the_reference_and_differences() {
        let choice = Choice::parse(&["MODE=0", "MODE=1", "MODE=2"], None).unwrap();
        let m = model(&[
            (&[], 1.0),
            (&["MODE=0"], 3.0),
            (&["MODE=1"], 4.0),
            (&["MODE=2"], 7.0),
            (&["LONG", "MODE=0"], 2.0),
        ]);
        let r = m.against_reference(&[choice]);
        // MODE=0 ↦ 1 − MODE=1 − MODE=2.
        assert_eq!(
            labels(&r),
            [
                (String::new(), 4.0),
                ("LONG".into(), 2.0),
                ("LONG·MODE=1".into(), -2.0),
                ("LONG·MODE=2".into(), -2.0),
                ("MODE=1".into(), 1.0),
                ("MODE=2".into(), 4.0),
            ]
        );
        let bound_old = m.bind(&["MODE", "LONG"]).unwrap();
        let bound_new = r.bind(&["MODE", "LONG"]).unwrap();
        for mode in [0.0, 1.0, 2.0] {
            for long in [0.0, 1.0] {
                let (a, b) = (
                    bound_old.predict(&[mode, long]),
                    bound_new.predict(&[mode, long]),
                );
                assert!((a - b).abs() < 1e-9, "MODE={mode} LONG={long}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn products_of_two_members_go_and_members_imply_their_condition() {
        let choice = Choice::parse(&["LZ", "HUFF"], Some("CODEC")).unwrap();
        let m = model(&[
            (&["CODEC"], 1.0),
            (&["LZ"], 2.0),
            (&["HUFF"], 5.0),
            (&["HUFF", "LZ", "TRACE"], 9.0),
            (&["CODEC", "HUFF"], 1.0),
        ]);
        let r = m.against_reference(&[choice]);
        // LZ ↦ CODEC − HUFF; CODEC·HUFF = HUFF; HUFF·LZ·TRACE never holds.
        assert_eq!(labels(&r), [("CODEC".into(), 3.0), ("HUFF".into(), 4.0)]);
    }

    #[test]
    fn a_model_too_large_to_rewrite_is_kept_and_said_so() {
        // One term on the reference member of each of nine four-member choices expands into
        // 4^9 terms, more steps than the rewriting allows.
        let choices: Vec<Choice> = (0..9)
            .map(|c| {
                let members: Vec<String> = (0..4).map(|v| format!("C{c}={v}")).collect();
                Choice::parse(&members, None).unwrap()
            })
            .collect();
        let factors: Vec<String> = (0..9).map(|c| format!("C{c}=0")).collect();
        let factors: Vec<&str> = factors.iter().map(String::as_str).collect();
        let m = model(&[(&[], 1.0), (&factors, 2.0)]);
        assert!(m.try_against_reference(&choices).is_none());
        assert_eq!(labels(&m.against_reference(&choices)), labels(&m));
        let mut file = ModelFile::new(m.clone());
        file.express_against_reference(&choices);
        assert_eq!(labels(&file.terms), labels(&m));
        assert_eq!(
            file.provenance["not_against_reference"],
            serde_json::json!(["global"])
        );
        // A model that can be rewritten leaves no such entry.
        let mut small = ModelFile::new(model(&[(&[], 1.0), (&["C0=0"], 2.0)]));
        small.express_against_reference(&choices[..1]);
        assert!(!small.provenance.contains_key("not_against_reference"));
    }
}
