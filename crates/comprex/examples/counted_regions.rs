//! Where a counted Comprex model goes wrong, region by region: the pipeline's exploration
//! (with callee partitions), its counting build with a probe per method region, and every
//! valid configuration run in that build. Each region's local model is the mean of its
//! explored configurations' counts in the subspace a configuration lies in (what
//! `comprex::build_model` computes); the regions whose counts differ most from it, summed over
//! the configurations, are printed with their partitions and a configuration where they are off.
//!
//!     cargo run --release -p comprex --example counted_regions -- SPEC WORK_DIR [WORKLOAD] [LIMIT]
//!
//! WORKLOAD is measured and explored (default: the spec's first with the default purpose);
//! LIMIT caps the configurations run (default: all valid ones).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use comprex::{Encoding, Granularity};

fn main() {
    support::main_with("counted_regions SPEC WORK_DIR [WORKLOAD] [LIMIT]", 2, run);
}

type Counts = BTreeMap<String, f64>;

fn run(args: &[String]) -> support::Result<()> {
    let spec = measure::SystemSpec::load(&PathBuf::from(&args[0]))?
        .with_metric(measure::Metric::Instructions)?;
    let work = std::path::absolute(PathBuf::from(&args[1]))?;
    let settings = instrumented::Settings::new(work.clone());
    let workload = spec.workload(args.get(2).map(String::as_str))?.clone();
    let limit: usize = args.get(3).map_or(Ok(usize::MAX), |l| l.parse())?;
    spec.prepare_workload(&workload)?;
    let mut explored = comprex::pipeline::explore(
        &spec,
        &settings,
        &workload,
        Granularity::Method,
        1024,
        &mut |_, _| {},
    )?;
    comprex::pipeline::partition_by_callers(&spec, &workload, &mut explored, 1024, &mut |_, _| {})?;
    let profiled = comprex::pipeline::instrument_methods(&spec, &settings, &explored)?;
    let file = work.join("regions.tsv");
    let count = |config: &space::Configuration| -> support::Result<Counts> {
        counts_of(&spec, &workload, &profiled, config, &file)
    };
    let explored_counts: Vec<Counts> = explored
        .exploration
        .configurations
        .iter()
        .map(count)
        .collect::<Result<_, _>>()?;
    let valid = space::ValidConfigurations::new(&spec.space)?;
    let enc = Encoding::new(&valid);
    let regions = explored.exploration.regions(Granularity::Method);
    // Per region: summed |error|, and the configuration where it is largest.
    let mut errors: BTreeMap<String, (f64, f64, String)> = BTreeMap::new();
    let (mut total_error, mut n) = (0.0, 0usize);
    for config in valid.iter().take(limit) {
        let actual = count(&config)?;
        let total: f64 = actual.values().sum();
        let mut predicted_total = 0.0;
        let mut names: Vec<&String> = actual.keys().collect();
        names.extend(regions.iter().map(|r| &r.id));
        names.sort();
        names.dedup();
        for name in names {
            let runs: Vec<usize> = match regions.iter().find(|r| &r.id == name) {
                Some(r) => r
                    .subspaces
                    .iter()
                    .find(|s| enc.contains(s.subspace.bdd(), &config))
                    .map(|s| s.explored_by.clone())
                    .unwrap_or_default(),
                None => (0..explored_counts.len()).collect(),
            };
            let mean = runs
                .iter()
                .map(|&r| explored_counts[r].get(name).copied().unwrap_or(0.0))
                .sum::<f64>()
                / runs.len().max(1) as f64;
            predicted_total += mean;
            let off = mean - actual.get(name).copied().unwrap_or(0.0);
            let entry = errors
                .entry(name.clone())
                .or_insert((0.0, 0.0, String::new()));
            entry.0 += off.abs();
            if off.abs() > entry.1.abs() {
                entry.1 = off;
                entry.2 = spec.space.format_configuration(&config);
            }
        }
        total_error += (predicted_total - total).abs() / total;
        n += 1;
    }
    println!(
        "{}: MAPE {:.3} % over {n} configurations ({} explored), against the probed counting build",
        spec.name,
        100.0 * total_error / n as f64,
        explored.exploration.configurations.len()
    );
    let mut worst: Vec<_> = errors.into_iter().collect();
    worst.sort_by(|a, b| b.1.0.total_cmp(&a.1.0));
    for (name, (sum, off, at)) in worst.iter().take(12) {
        let partition = regions
            .iter()
            .find(|r| &r.id == name)
            .map_or("(not a region)".to_string(), |r| r.texts().join(" | "));
        let shown: String = partition.chars().take(300).collect();
        println!(
            "  {name}: {:.0} off per configuration on average; {off:+.0} at `{at}`\n    partition: {shown}",
            sum / n as f64
        );
    }
    Ok(())
}

/// One run of the probed counting build: per method its self count, and the base.
fn counts_of(
    spec: &measure::SystemSpec,
    workload: &measure::Workload,
    profiled: &comprex::pipeline::Profiled,
    config: &space::Configuration,
    file: &Path,
) -> support::Result<Counts> {
    let times = support::run_counted(spec, workload, &profiled.binary, config, file)?;
    let mut counts = Counts::new();
    counts.insert(instrumented::BASE.to_string(), times.base);
    for (id, region) in &times.regions {
        let name = profiled
            .methods
            .get(id)
            .cloned()
            .unwrap_or_else(|| format!("r{id}"));
        *counts.entry(name).or_default() += region.self_seconds;
    }
    Ok(counts)
}
