//! What a report shows of a results store: each configuration's measurements and noise, the
//! runs under other variants, and the values across `[history]` commits.

use std::path::Path;

use measure::store::{BuildsSummary, ConfigurationSummary, Selection, Store};
use measure::{Metric, Summary, SystemSpec};
use space::ConfigSpace;

use crate::Error;

/// One measured configuration.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The store's text of it (`level=6,extreme`; empty: nothing selected).
    pub configuration: String,
    /// Each option's value, in the space's order (0/1, or the number).
    pub values: Vec<f64>,
    pub summary: Summary,
    pub runs: usize,
    pub failed: usize,
}

/// The measurements of one spec and workload, as a report reads them.
#[derive(Clone, Debug)]
pub struct Measurements {
    pub system: String,
    pub spec_hash: String,
    pub store: String,
    /// The variant read (`""`: the program as the spec runs it).
    pub variant: String,
    /// The metric read, and why (`cpu (auto: …)`).
    pub metric: String,
    /// Whether the metric is a time in seconds.
    pub seconds: bool,
    pub space: ConfigSpace,
    /// By value (the fastest-half mean of the runs), fastest first.
    pub configurations: Vec<Measured>,
    /// Other variants of the system with runs, and how many configurations each.
    pub variants: Vec<(String, usize)>,
    /// Per `[history]` commit with runs (oldest first), each configuration's value.
    pub history: Vec<(String, Vec<(String, f64)>)>,
    /// The builds of a spec with build options (one per set of their values), whose time
    /// is apart from the runs'.
    pub builds: Option<BuildsSummary>,
}

impl Measurements {
    /// Reads the selection's measurements (the spec the selection designates, its latest
    /// version for an edited spec), `metric` resolved as `knobs results show` does.
    pub fn load(store: &Store, selection: &Selection, metric: Metric) -> Result<Self, Error> {
        let stored = store.spec(selection)?;
        let spec = SystemSpec::parse(&stored.text, Path::new(&stored.path))?;
        let selection = Selection {
            system: Some(stored.system.clone()),
            spec_hash: Some(stored.hash.clone()),
            ..selection.clone()
        };
        let (metric, why) = store.resolve_metric(&selection, metric)?;
        let summaries = store.summaries(&selection, metric)?;
        let mut configurations = measured(&spec.space, summaries)?;
        configurations.sort_by(|a, b| a.summary.value.total_cmp(&b.summary.value));
        let variants = other_variants(store, &selection)?;
        let builds = store.builds_summary(&selection)?;
        let mut history = Vec::new();
        for commit in store.commits(&selection)? {
            let at = selection.clone().at_commit(&commit);
            let values = store
                .summaries(&at, metric)?
                .into_iter()
                .filter_map(|s| Some((s.configuration, s.summary?.value)))
                .collect();
            history.push((commit, values));
        }
        Ok(Measurements {
            system: stored.system,
            spec_hash: stored.hash,
            store: store.path().display().to_string(),
            variant: selection.variant.clone(),
            metric: why,
            seconds: !matches!(metric, Metric::MaxRss | Metric::Instructions),
            space: spec.space,
            configurations,
            variants,
            history,
            builds,
        })
    }

    /// The measured configuration with this store text, if any.
    pub fn find(&self, configuration: &str) -> Option<&Measured> {
        self.configurations
            .iter()
            .find(|m| m.configuration == configuration)
    }
}

fn measured(
    space: &ConfigSpace,
    summaries: Vec<ConfigurationSummary>,
) -> Result<Vec<Measured>, Error> {
    let mut out = Vec::new();
    for s in summaries {
        let Some(summary) = s.summary else { continue };
        let config = space.parse_configuration(&s.configuration)?;
        out.push(Measured {
            values: space.values(&config),
            configuration: s.configuration,
            summary,
            runs: s.runs,
            failed: s.failed,
        });
    }
    Ok(out)
}

/// The variants other than the selection's with runs of the same spec, and how many
/// configurations each measured (white-box approaches measure under a variant of their own).
fn other_variants(store: &Store, selection: &Selection) -> Result<Vec<(String, usize)>, Error> {
    let mut out = Vec::new();
    for variant in store.variants(selection)? {
        if variant == selection.variant {
            continue;
        }
        let of_variant = Selection {
            variant: variant.clone(),
            ..selection.clone()
        };
        out.push((variant, store.runs_by_configuration(&of_variant)?.len()));
    }
    Ok(out)
}
