//! Configurations whose runs failed (crashed, timed out). A white-box model is built from
//! tables of measured cells; a cell that only failed configurations fall in has no time, and
//! a model that counted it as zero would answer for configurations that never ran. So a
//! failed configuration is an error by default; with [`crate::Settings::allow_failed`] the
//! model is built without the terms that rest on such cells, and records which
//! ([`Unmeasured`]).

use measure::campaign::CampaignReport;
use model::ModelFile;
use serde::{Deserialize, Serialize};

use crate::Error;

/// The provenance key under which a model records what rests on unmeasured cells.
pub const PROVENANCE_KEY: &str = "unmeasured";

/// The flag that accepts failed configurations, as the error names it.
pub const ALLOW_FLAG: &str = "--allow-failed";

/// Failed configurations in one line: each with the first line of why it failed.
pub fn listed(failed: &[(String, String)]) -> String {
    failed
        .iter()
        .map(|(config, why)| {
            format!(
                "`{}` ({})",
                space::shown_configuration(config),
                why.lines().next().unwrap_or("failed")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A campaign's failed configurations: `Ok(None)` when none failed; an error naming them
/// unless `allow`; with `allow`, a note naming them.
pub fn check(report: &CampaignReport, allow: bool) -> Result<Option<String>, Error> {
    if report.failed.is_empty() {
        return Ok(None);
    }
    let which = format!(
        "{} of {} configurations failed: {}",
        report.failed.len(),
        report.configurations,
        listed(&report.failed)
    );
    if allow {
        Ok(Some(format!(
            "{which}; the model leaves out the terms that rest on cells only they measure \
             (listed under `unmeasured`)"
        )))
    } else {
        Err(Error::Invalid(format!(
            "{which}; no model is built from the cells they leave unmeasured (fix them, or \
             pass {ALLOW_FLAG} to build it without the terms that rest on them)"
        )))
    }
}

/// Part of a model that rests on cells no successful run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unmeasured {
    /// The region whose table has the cells (`base` or the region's id).
    pub region: String,
    /// The cells: the region's options' values in each.
    pub cells: Vec<String>,
    /// The terms that depend on those cells, left out of the model.
    pub terms_left_out: Vec<String>,
}

impl std::fmt::Display for Unmeasured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "region {}: no successful run in {}; left out: {}",
            self.region,
            self.cells.join("; "),
            if self.terms_left_out.is_empty() {
                "no term".to_string()
            } else {
                self.terms_left_out.join(", ")
            }
        )
    }
}

/// Records `unmeasured` in the model's provenance (nothing when it is empty).
pub fn record(file: &mut ModelFile, unmeasured: &[Unmeasured]) {
    if !unmeasured.is_empty() {
        file.provenance.insert(
            PROVENANCE_KEY.into(),
            serde_json::to_value(unmeasured).expect("strings serialise"),
        );
    }
}

/// What a model records as resting on unmeasured cells ([`record`]).
pub fn recorded(file: &ModelFile) -> Vec<Unmeasured> {
    file.provenance
        .get(PROVENANCE_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campaign(failed: &[(&str, &str)]) -> CampaignReport {
        CampaignReport {
            configurations: 4,
            reused: 0,
            runs: 4,
            failed: failed
                .iter()
                .map(|(c, w)| (c.to_string(), w.to_string()))
                .collect(),
            noisy: Vec::new(),
            seconds: 0.0,
            notes: Vec::new(),
            metric: String::new(),
        }
    }

    #[test]
    fn failed_configurations_are_an_error_unless_allowed() {
        assert!(check(&campaign(&[]), false).unwrap().is_none());
        let failed = [
            ("HEAVY ITER=8", "killed by signal 11 (SIGSEGV)\nstderr"),
            ("ITER=4", "timed out"),
        ];
        let e = check(&campaign(&failed), false).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.starts_with("2 of 4 configurations failed: `HEAVY ITER=8` (killed by signal 11 (SIGSEGV)), `ITER=4` (timed out)"), "{e}");
        assert!(e.contains(ALLOW_FLAG), "{e}");
        let note = check(&campaign(&failed), true).unwrap().unwrap();
        assert!(note.contains("`ITER=4` (timed out)"), "{note}");
    }

    #[test]
    fn a_model_records_what_rests_on_unmeasured_cells() {
        let mut file = ModelFile::compose(model::InfluenceModel::new(), Vec::new());
        assert!(recorded(&file).is_empty());
        let u = Unmeasured {
            region: "r1".into(),
            cells: vec!["HEAVY, ITER=8".into()],
            terms_left_out: vec!["HEAVY·ITER=8".into()],
        };
        record(&mut file, std::slice::from_ref(&u));
        assert_eq!(recorded(&file), std::slice::from_ref(&u));
        assert_eq!(
            u.to_string(),
            "region r1: no successful run in HEAVY, ITER=8; left out: HEAVY·ITER=8"
        );
    }
}
