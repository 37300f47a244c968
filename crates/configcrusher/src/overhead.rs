//! The paper's Table 7 from the store: region entries per run (RC) and the instrumented
//! program's time against the plain program's on the configurations both measured.

use measure::store::Store;
use measure::{Selection, SystemSpec, Workload};
use serde::Serialize;

use crate::Error;

/// Instrumentation cost of one instrumented build, as measured.
#[derive(Clone, Debug, Serialize)]
pub struct Overhead {
    /// Region entries per run (the runtime's `entries`, summed over regions; the paper counts
    /// entries and exits, so its RC is about twice this).
    pub region_entries_per_run: f64,
    /// Geometric mean over configurations of instrumented / plain median time, on the
    /// configurations the plain program was also measured in (`knobs measure`); `None` when
    /// there are none.
    pub instrumented_over_plain: Option<f64>,
    /// How many configurations the ratio is over.
    pub configurations_compared: usize,
    /// The metric compared (wall, user, …).
    pub metric: String,
}

/// Reads the overhead of the build whose runs are stored as `variant`.
pub fn overhead(
    store: &Store,
    spec: &SystemSpec,
    workload: &Workload,
    variant: &str,
) -> Result<Overhead, Error> {
    let selection = |variant: &str| Selection {
        system: Some(spec.name.clone()),
        spec_hash: Some(spec.hash.clone()),
        workload: Some(workload.name.clone()),
        variant: variant.to_string(),
        commit: String::new(),
    };
    let times = store.region_times(&selection(variant))?;
    let runs: std::collections::BTreeSet<i64> = times.iter().map(|(_, run, _)| *run).collect();
    let entries: u64 = times
        .iter()
        .filter(|(_, _, r)| r.region != instrumented::BASE && r.region != instrumented::PROBES)
        .map(|(_, _, r)| r.entries)
        .sum();
    let metric = spec.measure.metric.of_region_timers();
    let plain: std::collections::HashMap<String, f64> = store
        .summaries(&selection(""), metric)?
        .into_iter()
        .filter_map(|s| Some((s.configuration, s.summary?.value)))
        .collect();
    let ratios: Vec<f64> = store
        .summaries(&selection(variant), metric)?
        .iter()
        .filter_map(|s| Some(s.summary.as_ref()?.value / *plain.get(&s.configuration)?))
        .collect();
    Ok(Overhead {
        region_entries_per_run: entries as f64 / runs.len().max(1) as f64,
        // The geometric mean: a 2× and a 0.5× run average to 1×, not 1.25×.
        instrumented_over_plain: (!ratios.is_empty())
            .then(|| (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp()),
        configurations_compared: ratios.len(),
        metric: metric.name().to_string(),
    })
}

impl std::fmt::Display for Overhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "region entries per run (RC): {:.0}",
            self.region_entries_per_run
        )?;
        match self.instrumented_over_plain {
            Some(ratio) => write!(
                f,
                "; instrumented / plain {}: {ratio:.3} (geometric mean over {} configurations)",
                self.metric, self.configurations_compared
            ),
            None => write!(
                f,
                "; overhead unknown (measure the plain program with `knobs measure` too)"
            ),
        }
    }
}
