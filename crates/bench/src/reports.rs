//! What the runner reads from `knobs … --json` (stdout): only the fields it needs, all with
//! defaults, so that fields added to the reports change nothing here. The whole report is
//! kept in the row beside what is read from it.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// A measurement campaign (`knobs measure --json`, and the `measurement` of the white-box
/// reports): `measure::campaign::CampaignReport`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Campaign {
    /// Configurations asked for.
    pub configurations: u64,
    /// Configurations that needed no new runs.
    pub reused: u64,
    /// Runs made.
    pub runs: u64,
    /// (configuration, why) of the configurations that failed.
    pub failed: Vec<Value>,
    pub noisy: Vec<Value>,
    pub seconds: f64,
}

/// `knobs results show --json`: per configuration, the summary of its runs.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ResultsShow {
    pub configurations: Vec<ShownConfiguration>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ShownConfiguration {
    pub configuration: String,
    pub runs: u64,
    pub summary: Option<ShownSummary>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ShownSummary {
    /// The fastest-half mean of the runs: what a configuration is read as.
    pub value: f64,
    /// Coefficient of variation over the runs (`None` with fewer than two, or a zero mean).
    pub cv: Option<f64>,
}

/// `knobs measure --json`: the campaign, at the top level or under `measurement`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct MeasureReport {
    #[serde(flatten)]
    pub top: Campaign,
    pub measurement: Option<Campaign>,
}

impl MeasureReport {
    pub fn campaign(&self) -> &Campaign {
        self.measurement.as_ref().unwrap_or(&self.top)
    }
}

/// `knobs crush --json`: `configcrusher::Report`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CrushReport {
    pub build: CrushBuild,
    pub analysis: CrushAnalysis,
    pub regions: Regions,
    pub configurations: CrushConfigurations,
    pub instrumentation: Option<Instrumentation>,
    pub measurement: Option<Campaign>,
    pub overhead: Option<CrushOverhead>,
    pub model_path: Option<PathBuf>,
    pub store: Option<PathBuf>,
    pub variant: Option<String>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CrushBuild {
    pub functions: u64,
    pub instructions: u64,
    pub seconds: f64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CrushAnalysis {
    pub seconds: f64,
    pub peak_memory_mib: Option<f64>,
    pub tainted_decisions: u64,
    pub irrelevant: Vec<String>,
    pub interactions: Vec<Vec<String>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Regions {
    /// R: regions placed.
    pub count: u64,
    /// R before the propagation of Algorithms 3/4.
    pub before_propagation: u64,
}

/// Counts of configurations; `f64` because the totals may exceed 64 bits.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CrushConfigurations {
    pub measured: f64,
    pub total: f64,
    pub lower_bound: f64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Instrumentation {
    pub binary: PathBuf,
    pub variant: String,
    pub enter_calls: u64,
    pub exit_calls: u64,
    pub value_checks: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CrushOverhead {
    pub region_entries_per_run: f64,
    pub instrumented_over_plain: Option<f64>,
}

/// `knobs comprex --json`: `comprex::Report`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ComprexReport {
    pub total_configurations: f64,
    pub exploration: Option<Exploration>,
    /// Table IV (`--granularity-table`): one exploration's regions at each granularity.
    pub granularity_table: Vec<Exploration>,
    pub probes: Option<Probes>,
    /// The configurations measured with the profiler.
    pub configurations: Vec<String>,
    pub measurement: Option<Campaign>,
    pub overhead_correction: Option<Correction>,
    pub model_path: Option<PathBuf>,
    pub store: Option<PathBuf>,
    pub variant: Option<String>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Exploration {
    /// `program`, `method` or `statement`.
    pub granularity: String,
    /// Configurations the taint runs explored.
    pub configurations: u64,
    /// The fewest configurations covering every subspace of every region (Table IV), and
    /// whether that is proven minimal.
    pub cover: Option<u64>,
    pub cover_minimal: Option<bool>,
    pub seconds: f64,
    pub decision_sites: u64,
    /// Each region's partition; only their number is kept.
    pub regions: Vec<Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Probes {
    pub probed: u64,
    pub methods: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Correction {
    /// `native` (each configuration scaled to its native runs, stored beside the profiled
    /// ones), or the paper's fitted `ratio` or `line`.
    pub fit: String,
    pub slope: f64,
    pub intercept: f64,
    pub pairs: Vec<Value>,
}

/// `knobs space count --json`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct SpaceCount {
    /// A decimal string: counts exceed JSON's numbers for large spaces.
    pub valid_configurations: String,
}

/// `knobs evaluate --json`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct EvaluateReport {
    /// Mean absolute percentage error, in percent.
    #[serde(alias = "mape_percent")]
    pub mape: Option<f64>,
    /// Configurations evaluated on.
    #[serde(alias = "evaluated")]
    pub configurations: Option<u64>,
    /// On the configurations the model was not built from (knobs after schema 2 of the rows).
    #[serde(alias = "mape_unmeasured_percent")]
    pub mape_unmeasured: Option<f64>,
    /// On every configuration.
    #[serde(alias = "mape_all_percent")]
    pub mape_all: Option<f64>,
    /// How many configurations the model was built from, when it records them.
    pub training_configurations: Option<u64>,
    /// All configurations of the data.
    pub of: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crush_report_reads_with_what_it_has() {
        let r: CrushReport = serde_json::from_str(
            r#"{"regions": {"count": 10, "before_propagation": 16},
                "configurations": {"measured": 8, "total": 1024, "lower_bound": 8},
                "instrumentation": {"binary": "/x/fig2.instrumented", "enter_calls": 10,
                                    "exit_calls": 12, "split_edges": 0},
                "something_new": [1, 2]}"#,
        )
        .unwrap();
        assert_eq!(r.regions.count, 10);
        assert_eq!(r.configurations.total, 1024.0);
        assert_eq!(r.instrumentation.unwrap().exit_calls, 12);
        assert!(r.model_path.is_none());
    }

    #[test]
    fn a_measure_report_may_nest_the_campaign() {
        let top: MeasureReport =
            serde_json::from_str(r#"{"configurations": 48, "runs": 288, "seconds": 90.5}"#)
                .unwrap();
        assert_eq!(top.campaign().configurations, 48);
        let nested: MeasureReport = serde_json::from_str(
            r#"{"sample": "all", "measurement": {"configurations": 48, "runs": 288}}"#,
        )
        .unwrap();
        assert_eq!(nested.campaign().runs, 288);
    }

    #[test]
    fn a_family_report_counts_the_constant_cost_checks_runs_once() {
        let r: FamilyReport = serde_json::from_str(
            r#"{"configurations": ["a", "b"],
                "cost_dependence": {"configurations": ["b", "c", "d"], "functions": ["f"],
                                    "options": ["level"], "contexts": []}}"#,
        )
        .unwrap();
        assert_eq!(r.measured(), 4);
        let paper: FamilyReport = serde_json::from_str(r#"{"configurations": ["a"]}"#).unwrap();
        assert_eq!(paper.measured(), 1);
    }
}

/// `knobs splat --json`: `splat::Report`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct SplatReport {
    pub total_configurations: f64,
    /// The explored configurations (the whole entries are kept in the row's report).
    pub paths: Vec<Value>,
    pub complete: bool,
    pub reached: Vec<String>,
    pub unreached: Vec<String>,
    pub exploration_seconds: f64,
    pub model_path: Option<PathBuf>,
    pub store: Option<PathBuf>,
}

/// `knobs family --json`: `family::Report`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct FamilyReport {
    pub total_configurations: f64,
    pub features: Vec<Value>,
    pub unmapped_options: Vec<String>,
    pub configurations: Vec<String>,
    pub instrumented_functions: u64,
    pub unseen: Vec<Value>,
    pub model_path: Option<PathBuf>,
    pub store: Option<PathBuf>,
    pub variant: Option<String>,
    pub cost_dependence: Option<CostDependence>,
}

/// `family::CostDependence`: the further runs of the constant-cost check and what broke it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CostDependence {
    pub configurations: Vec<String>,
    pub functions: Vec<String>,
    pub options: Vec<String>,
}

impl FamilyReport {
    /// Every configuration measured: the paper's runs and the constant-cost check's further
    /// ones.
    pub fn measured(&self) -> usize {
        let mut all: Vec<&String> = self.configurations.iter().collect();
        if let Some(d) = &self.cost_dependence {
            all.extend(&d.configurations);
        }
        all.sort_unstable();
        all.dedup();
        all.len()
    }
}
