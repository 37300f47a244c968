//! What one taint run reports: the contract between the dynamic taint runtime (which runs the
//! program) and the iterative analysis (which reads the records). Documented for the runtime's
//! authors in `docs/comprex-records.md`.
//!
//! The runtime reports *decision sites* and what it knows about them (their enclosing
//! function and source location); which region a decision belongs to is chosen afterwards by
//! the analysis through a [`Granularity`], so the same records serve method-, statement- and
//! program-level regions.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use space::{ConfigSpace, Configuration};

use crate::Error;

/// Value of [`TaintRun::format`]: identifies a knobs taint-run record.
pub const RECORD_FORMAT: &str = "knobs-taint-run";
/// Version of the record format this build writes and reads.
pub const RECORD_VERSION: u32 = 1;

/// One control-flow decision site (a conditional branch, switch or loop condition).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Decision {
    /// Stable number of the site within one build of the program (the instrumenter's
    /// numbering): the same site has the same id in every run.
    pub id: u32,
    /// The function (method) containing the site: its method-level region.
    pub method: String,
    pub file: String,
    /// 1-based source line of the condition; 0 when unknown.
    pub line: u32,
    /// 1-based column; 0 when unknown (two sites on one line still differ by `id`).
    #[serde(default)]
    pub column: u32,
}

/// How decisions are grouped into regions: a mapping decision → region chosen by the
/// analysis, never by the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Granularity {
    /// Each control-flow statement is its own region (from the statement to its immediate
    /// post-dominator): maximum compression, expensive to time.
    Statement,
    /// Each method is a region (the default: a sampling profiler times methods cheaply).
    Method,
    /// The whole program is one region: no compression.
    Program,
}

impl Granularity {
    pub const ALL: [Granularity; 3] = [
        Granularity::Statement,
        Granularity::Method,
        Granularity::Program,
    ];

    /// The id of the region `decision` belongs to at this granularity. Method regions are
    /// named by the function, so they match a profiler's per-function times.
    pub fn region_of(self, decision: &Decision) -> String {
        match self {
            Granularity::Statement => format!("{}#{}", decision.method, decision.id),
            Granularity::Method => decision.method.clone(),
            Granularity::Program => "program".to_string(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Granularity::Statement => "control-flow statement",
            Granularity::Method => "method",
            Granularity::Program => "program",
        }
    }
}

/// What the taint runtime saw at one decision: reported once per distinct record per run
/// (the same site may appear several times with different taints, e.g. in a loop).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub decision: Decision,
    /// Options that flowed into the condition's value, directly or through implicit flows
    /// (a variable assigned under a tainted branch carries that branch's taint).
    pub data_flow: BTreeSet<String>,
    /// Options that influenced whether the decision was reached at all: the taints of the
    /// conditions of the enclosing (control-dependence) decisions active when it executed.
    pub control_flow: BTreeSet<String>,
}

impl DecisionRecord {
    pub fn new<S: AsRef<str>>(decision: Decision, data_flow: &[S], control_flow: &[S]) -> Self {
        DecisionRecord {
            decision,
            data_flow: data_flow.iter().map(|s| s.as_ref().to_string()).collect(),
            control_flow: control_flow
                .iter()
                .map(|s| s.as_ref().to_string())
                .collect(),
        }
    }
}

/// Everything one taint run reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaintRun {
    pub format: String,
    pub version: u32,
    /// The configuration the program ran in: every option by name, binary options as 0/1,
    /// numeric options as their value (empty from the taint runtime, which does not know the
    /// options' values; the runner knows which configuration it ran).
    pub configuration: BTreeMap<String, f64>,
    pub decisions: Vec<DecisionRecord>,
    /// Per conditional branch site the run executed: `[id, ways]`, ways 1 (only the false
    /// edge), 2 (only the true edge) or 3 (both). Absent from records of other producers.
    #[serde(default)]
    pub branch_ways: Vec<(u32, u8)>,
}

impl TaintRun {
    pub fn new(
        space: &ConfigSpace,
        config: &Configuration,
        decisions: Vec<DecisionRecord>,
    ) -> Self {
        TaintRun {
            format: RECORD_FORMAT.into(),
            version: RECORD_VERSION,
            configuration: space
                .options()
                .iter()
                .zip(&config.0)
                .map(|(o, v)| (o.name.clone(), o.numeric_value(*v)))
                .collect(),
            decisions,
            branch_ways: Vec::new(),
        }
    }

    /// Whether this is a taint run of the format and version this crate reads.
    pub fn check_format(&self) -> Result<(), Error> {
        if self.format != RECORD_FORMAT || self.version != RECORD_VERSION {
            return Err(Error::Invalid(format!(
                "taint run is `{}` version {}, expected `{RECORD_FORMAT}` version {RECORD_VERSION}",
                self.format, self.version
            )));
        }
        Ok(())
    }

    /// The run's configuration in `space`; every option must be given, with a value of its
    /// domain.
    pub fn configuration(&self, space: &ConfigSpace) -> Result<Configuration, Error> {
        self.check_format()?;
        if let Some(name) = self.configuration.keys().find(|n| space.find(n).is_none()) {
            return Err(Error::UnknownOption {
                name: name.clone(),
                context: "the taint run's configuration".into(),
            });
        }
        let values = space
            .options()
            .iter()
            .map(|o| {
                let v = self.configuration.get(&o.name).ok_or_else(|| {
                    Error::Invalid(format!(
                        "taint run's configuration lacks option `{}`",
                        o.name
                    ))
                })?;
                o.value_index(*v).ok_or_else(|| {
                    Error::Invalid(format!(
                        "taint run gives option `{}` the value {v}, not in its domain",
                        o.name
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Configuration(values))
    }
}
