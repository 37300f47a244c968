//! A configuration's region times as a Chrome trace (the JSON object format Perfetto and
//! `chrome://tracing` open, and VaRA exports): one track per run, each region a slice as
//! long as its self time, largest first. The store keeps self times per region, not when
//! each entry happened, so slices are laid end to end: their lengths are measured, their
//! order is not.

use std::collections::BTreeMap;

use measure::store::RegionMeasurement;
use serde_json::{Value, json};

/// The trace of one configuration's runs: `runs` are (run id, region times) pairs; `names`
/// maps region ids to the labels shown (a function and place from a model), others are
/// shown by id.
pub fn chrome_trace(
    title: &str,
    runs: &[(i64, Vec<RegionMeasurement>)],
    names: &BTreeMap<String, String>,
) -> Value {
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": { "name": title },
    })];
    for (track, (run, regions)) in runs.iter().enumerate() {
        let tid = track + 1;
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
            "args": { "name": format!("run {run}") },
        }));
        let mut regions: Vec<&RegionMeasurement> = regions.iter().collect();
        regions.sort_by(|a, b| {
            b.seconds
                .total_cmp(&a.seconds)
                .then(a.region.cmp(&b.region))
        });
        let mut start = 0.0;
        for r in regions {
            let duration = r.seconds * 1e6;
            events.push(json!({
                "name": names.get(&r.region).cloned().unwrap_or_else(|| r.region.clone()),
                "cat": "region",
                "ph": "X",
                "ts": start,
                "dur": duration,
                "pid": 1,
                "tid": tid,
                "args": { "region": r.region, "entries": r.entries, "self_seconds": r.seconds },
            }));
            start += duration;
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}

/// Region labels from a model's regions: `r1 compress() toy.c:45-45` (the file without
/// its directories).
pub fn region_names(file: &model::ModelFile) -> BTreeMap<String, String> {
    file.regions
        .iter()
        .map(|r| {
            let label = match &r.location {
                Some(l) => {
                    let function = match &l.function {
                        Some(f) if *f != r.id => format!(" {f}()"),
                        _ => String::new(),
                    };
                    let file = l.file.rsplit('/').next().unwrap_or(&l.file);
                    format!("{}{function} {file}:{}-{}", r.id, l.lines[0], l.lines[1])
                }
                None => r.id.clone(),
            };
            (r.id.clone(), label)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_laid_end_to_end_largest_first() {
        let region = |id: &str, seconds: f64| RegionMeasurement {
            region: id.into(),
            seconds,
            entries: 2,
            cpu_seconds: None,
        };
        let runs = vec![(7, vec![region("a", 0.001), region("b", 0.003)])];
        let names = BTreeMap::from([("b".to_string(), "b foo() x.c:1-2".to_string())]);
        let trace = chrome_trace("xz: level=6", &runs, &names);
        let events = trace["traceEvents"].as_array().unwrap();
        let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 2);
        assert_eq!(slices[0]["name"], "b foo() x.c:1-2");
        assert_eq!(slices[0]["ts"], 0.0);
        assert_eq!(slices[1]["name"], "a");
        assert_eq!(slices[1]["ts"], slices[0]["dur"]);
        assert!((slices[1]["dur"].as_f64().unwrap() - 1000.0).abs() < 1e-9);
        assert_eq!(events[1]["args"]["name"], "run 7");
    }
}
