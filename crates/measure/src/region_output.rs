//! How an instrumented program's region times reach a run: the file it writes them to,
//! and the reader of that file.

use std::path::Path;

use crate::runner::{Outcome, RunResult};
use crate::store::RegionMeasurement;

/// How an instrumented program reports region times: it writes them to the file named by
/// the environment variable `env`, and `read` parses that file (an error fails the run with
/// its message).
#[derive(Clone)]
pub struct RegionOutput {
    pub env: String,
    pub read: std::sync::Arc<ReadRegions>,
}

impl std::fmt::Debug for RegionOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionOutput")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

/// Reads a region-times file.
pub type ReadRegions = dyn Fn(&Path) -> Result<Vec<RegionMeasurement>, String> + Send + Sync;

/// The region times a run wrote to `file`, read with `read`; none for a failed run. A
/// successful run whose file `read` rejects (or that wrote none: the instrumentation did not
/// work) becomes a failed run saying why.
pub(crate) fn read_regions(
    read: &ReadRegions,
    result: &mut RunResult,
    file: &Path,
) -> Vec<RegionMeasurement> {
    if !result.outcome.is_ok() {
        return Vec::new();
    }
    read(file).unwrap_or_else(|why| {
        result.outcome = Outcome::SpawnFailed(format!("no region times: {why}"));
        Vec::new()
    })
}

/// A counting build's run (`Campaign::counted_regions`): its instructions are what its
/// region file adds up to (the program counts itself; no counter wraps it). A failed run
/// has none.
pub(crate) fn count_from_regions(result: &mut RunResult, regions: &[RegionMeasurement]) {
    if result.outcome.is_ok() {
        let total: f64 = regions.iter().map(|r| r.seconds).sum();
        result.instructions = Some(total.round() as u64);
    }
}
