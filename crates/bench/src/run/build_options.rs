//! Subjects with build options (options that act on the build): their builds' count and
//! time in the brute-force row, apart from the runs' measurement time.

use super::*;

/// The builds `knobs measure --json` reported (its `builds`) as details of `row`; nothing for
/// a subject without build options.
pub(super) fn build_details(row: &mut Row, measured: &Value) {
    let Some(builds) = measured.get("builds") else {
        return;
    };
    row.detail("builds", &builds["variants"]);
    row.detail("builds_made", &builds["built"]);
    row.detail("builds_cached", &builds["cached"]);
    row.detail("builds_failed", &builds["failed"]);
    row.detail("build_seconds", &builds["build_seconds"]);
}
