//! ConfigCrusher's instrumentation overhead before and after the propagation optimisation,
//! the journal paper's Table 7.
//!
//! `knobs crush --stop-after instrument --json` builds the two instrumented programs
//! (Algorithm 2 alone with `--no-optimise`, and with Algorithms 3/4) without measuring
//! anything and reports their paths and region counts. The runner then runs the native
//! program and both builds itself on the same configurations, *interleaved* — each
//! configuration with the three programs in turn, and all of that for a number of rounds —
//! because on a shared machine builds measured minutes apart differ by more than the
//! overhead measured. Each run is started exactly as `knobs measure` starts it: the spec's
//! invocation (`measure::SystemSpec::invocation_of`, the function `knobs measure` uses; knobs
//! has no command that prints a configuration's argv) run by `measure::runner::run` (no
//! shell, its own process group, the spec's timeout). The instrumented builds write their
//! region entries to `KNOBS_REGION_TIMES` (docs/region-times.md); RC is their sum per run.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use runtime::RegionTimes;
use serde_json::{Value, json};

use super::{SubjectRun, command_line};
use crate::reports::CrushReport;
use crate::rows::Row;
use crate::subjects::Count;

/// What Table 7 reads of one run's region-times file (`runtime::RegionTimes`,
/// docs/region-times.md).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RegionFile {
    /// Region entries (RC), summed over regions.
    pub entries: u64,
    /// Exits of regions that were not open.
    pub unmatched_exits: u64,
    /// Fixed-setting checks that failed (each failed check's count).
    pub fixed_violations: u64,
    /// Seconds of the probes' own cost the runtime took out of the regions (`probes`; 0 when
    /// it did not compensate).
    pub probes: f64,
}

impl RegionFile {
    pub fn of(times: &RegionTimes) -> RegionFile {
        RegionFile {
            entries: times.entries(),
            unmatched_exits: times.unmatched_exits,
            fixed_violations: times.fixed_violations.values().map(|v| v.count).sum(),
            probes: times.probes,
        }
    }

    pub fn read(path: &Path) -> Result<RegionFile> {
        Ok(RegionFile::of(&RegionTimes::read(path)?))
    }
}

/// A program's runs in one configuration.
#[derive(Clone, Debug, Default)]
struct Runs {
    times: Vec<f64>,
    /// Each time less the probes' cost its run took out of the regions: what a model from
    /// the region times carries.
    without_probes: Vec<f64>,
    failures: Vec<String>,
    /// The last successful run's region file (runs are deterministic for these subjects).
    regions: Option<RegionFile>,
    violations: u64,
}

impl Runs {
    fn median(&self) -> Option<f64> {
        stats::median(&self.times)
    }

    fn median_without_probes(&self) -> Option<f64> {
        stats::median(&self.without_probes)
    }
}

const PROGRAMS: [&str; 3] = ["native", "before", "after"];

pub fn table7(run: &mut SubjectRun, row: &mut Row) -> Result<()> {
    let dir = run.work.join("overhead");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    // 1. The two instrumented builds, nothing measured.
    let build = |run: &mut SubjectRun, name: &str, extra: &[&str]| {
        let mut args = vec!["crush".to_string()];
        args.extend(run.spec_args());
        args.extend([
            "--store".into(),
            dir.join(format!("{name}.db")).display().to_string(),
            "--work-dir".into(),
            dir.join(name).display().to_string(),
            "-o".into(),
            dir.join(format!("{name}.model.json")).display().to_string(),
            "--stop-after".into(),
            "instrument".into(),
            "--json".into(),
        ]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let (r, raw): (CrushReport, Value) = run.knobs_json(&args)?;
        let binary = r
            .instrumentation
            .as_ref()
            .map(|i| i.binary.clone())
            .filter(|b| !b.as_os_str().is_empty())
            .context(
                "`knobs crush --stop-after instrument --json` reported no instrumented binary",
            )?;
        anyhow::Ok((r, raw, binary))
    };
    let (after, after_raw, after_bin) = build(run, "after", &[])?;
    let (before, before_raw, before_bin) = build(run, "before", &["--no-optimise"])?;

    // 2. The configurations: a distance-based sample (spread over the number of options
    // selected), or all.
    let total = after.configurations.total;
    let settings = run.overhead_settings();
    let sample = match settings.configurations {
        Count::Some(n) if (n as f64) < total => format!("distance:{n}"),
        _ => "all".to_string(),
    };
    let configs_csv = dir.join("configurations.csv");
    run.knobs(&[
        "space".into(),
        "sample".into(),
        run.spec.display().to_string(),
        "--sample".into(),
        sample.clone(),
        "--seed".into(),
        "1".into(),
        "-o".into(),
        configs_csv.display().to_string(),
    ])?;
    // 3. The invocations, as the spec describes them.
    let spec = measure::SystemSpec::load(&run.spec)?;
    let workload = spec.workload(run.workload())?;
    spec.prepare_workload(workload)?;
    let native = spec.program().context(
        "Table 7 needs the native program the spec runs; build it first (the subject's `build`)",
    )?;
    let valid = space::ValidConfigurations::new(&spec.space)?;
    let configurations = space::formats::read_configurations_csv(&valid, &configs_csv)?;
    let names: Vec<String> = configurations
        .iter()
        .map(|c| spec.space.format_configuration(c))
        .collect();
    let binaries: [PathBuf; 3] = [native, before_bin, after_bin];
    let mut invocations = Vec::new();
    for c in &configurations {
        let mut per_program = Vec::new();
        for (p, bin) in PROGRAMS.iter().zip(&binaries) {
            let mut inv = spec.invocation_of(bin.clone(), c, workload)?;
            if *p != "native" {
                let file = dir.join(format!("regions-{p}.txt"));
                inv.env
                    .push((runtime_env().into(), file.display().to_string()));
            }
            run.record(format!(
                "(cd {} && {})",
                super::shell_quote(&inv.cwd.display().to_string()),
                command_line(&inv.env, &inv.program, &inv.args)
            ));
            per_program.push(inv);
        }
        invocations.push(per_program);
    }

    // 4. Interleaved runs: the spec's warm-up rounds (not recorded), then the rounds.
    measure::runner::kill_runs_on_interrupt();
    let metric = spec.measure.metric.of_region_timers();
    let rounds = settings.rounds.max(1);
    let warmup = spec.measure.warmup as usize;
    let mut runs: Vec<[Runs; 3]> = vec![Default::default(); configurations.len()];
    for round in 0..warmup + rounds {
        run.check_deadline()?;
        let recorded = round >= warmup;
        for (c, per_program) in invocations.iter().enumerate() {
            for (p, inv) in per_program.iter().enumerate() {
                let file = inv
                    .env
                    .iter()
                    .find(|(k, _)| k == runtime_env())
                    .map(|(_, v)| PathBuf::from(v));
                if let Some(f) = &file {
                    let _ = std::fs::remove_file(f);
                }
                let result = measure::runner::run(inv);
                if !recorded {
                    continue;
                }
                let slot = &mut runs[c][p];
                if !result.outcome.is_ok() {
                    let last = result.stderr_tail.lines().last().unwrap_or("").to_string();
                    slot.failures
                        .push(format!("{}: {last}", result.outcome.describe()));
                    continue;
                }
                let time = result.metric(metric);
                slot.times.push(time);
                if let Some(f) = &file {
                    let regions = RegionFile::read(f).with_context(|| {
                        format!("{} wrote no region times to {}", PROGRAMS[p], f.display())
                    })?;
                    slot.violations += regions.fixed_violations;
                    slot.without_probes.push(time - regions.probes);
                    slot.regions = Some(regions);
                }
            }
        }
        if recorded {
            eprintln!("  round {} of {rounds} done", round - warmup + 1);
        } else {
            eprintln!("  warm-up round {} of {warmup} done", round + 1);
        }
    }

    // 5. Medians, ratios, RC.
    let medians: Vec<[Option<f64>; 3]> = runs
        .iter()
        .map(|r| [r[0].median(), r[1].median(), r[2].median()])
        .collect();
    for (p, name) in PROGRAMS.iter().enumerate() {
        if runs.iter().all(|r| r[p].times.is_empty()) {
            let why = runs
                .iter()
                .find_map(|r| r[p].failures.first())
                .cloned()
                .unwrap_or_default();
            bail!("every run of the {name} program failed: {why}");
        }
    }
    let placement = |p: usize, r: &CrushReport| {
        let pairs: Vec<(f64, f64)> = medians
            .iter()
            .filter_map(|m| Some((m[p]?, m[0]?)))
            .collect();
        let ratios: Vec<f64> = pairs.iter().map(|(i, n)| i / n).collect();
        let without_probes: Vec<f64> = runs
            .iter()
            .zip(&medians)
            .filter_map(|(x, m)| Some(x[p].median_without_probes()? / m[0]?))
            .collect();
        let rc: Vec<f64> = runs
            .iter()
            .filter_map(|x| x[p].regions.map(|f| f.entries as f64))
            .collect();
        let unmatched: Vec<f64> = runs
            .iter()
            .filter_map(|x| x[p].regions.map(|f| f.unmatched_exits as f64))
            .collect();
        let instr = r.instrumentation.clone().unwrap_or_default();
        json!({
            "regions": r.regions.count,
            "regions_before_propagation": r.regions.before_propagation,
            "enter_calls": instr.enter_calls,
            "exit_calls": instr.exit_calls,
            "value_checks": instr.value_checks,
            "binary": instr.binary,
            "rc_mean": stats::mean(&rc),
            "rc_max": rc.iter().copied().reduce(f64::max),
            "unmatched_exits_mean": stats::mean(&unmatched),
            "unmatched_exits_max": unmatched.iter().copied().reduce(f64::max),
            "fixed_violations": runs.iter().map(|x| x[p].violations).sum::<u64>(),
            "ratio_geometric_mean": stats::geometric_mean(&ratios),
            "ratio_min": ratios.iter().copied().reduce(f64::min),
            "ratio_max": ratios.iter().copied().reduce(f64::max),
            "without_probes_ratio_geometric_mean": stats::geometric_mean(&without_probes),
            "without_probes_ratio_min": without_probes.iter().copied().reduce(f64::min),
            "without_probes_ratio_max": without_probes.iter().copied().reduce(f64::max),
            "configurations_compared": ratios.len(),
            "sum_medians": pairs.iter().map(|(i, _)| i).sum::<f64>(),
            "native_sum_medians": pairs.iter().map(|(_, n)| n).sum::<f64>(),
            "failed_runs": runs.iter().map(|x| x[p].failures.len()).sum::<usize>(),
        })
    };
    let before_d = placement(1, &before);
    let after_d = placement(2, &after);
    // The paper's procedure: the configuration with the most region entries after
    // optimisation, the slowest natively among those tied.
    let worst = (0..configurations.len())
        .filter(|&c| runs[c][2].regions.is_some() && medians[c][0].is_some())
        .max_by(|&a, &b| {
            let rc = |c: usize| runs[c][2].regions.map_or(0, |f| f.entries);
            rc(a)
                .cmp(&rc(b))
                .then(medians[a][0].partial_cmp(&medians[b][0]).expect("finite"))
        })
        .map(|c| {
            json!({
                "configuration": names[c],
                "native_median": medians[c][0],
                "before_rc": runs[c][1].regions.map(|f| f.entries),
                "before_median": medians[c][1],
                "after_rc": runs[c][2].regions.map(|f| f.entries),
                "after_median": medians[c][2],
            })
        });
    let per_configuration: Vec<Value> = (0..configurations.len())
        .map(|c| {
            json!({
                "configuration": names[c],
                "native_median": medians[c][0],
                "before_median": medians[c][1],
                "after_median": medians[c][2],
                "before_rc": runs[c][1].regions.map(|f| f.entries),
                "after_rc": runs[c][2].regions.map(|f| f.entries),
                "failures": PROGRAMS.iter().enumerate()
                    .flat_map(|(p, name)| runs[c][p].failures.iter().map(move |f| format!("{name}: {f}")))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();

    row.configurations = Some(configurations.len() as f64);
    row.total_configurations = Some(total);
    row.measurement_seconds = None;
    row.detail("sample", &sample);
    row.detail("rounds", rounds);
    row.detail("warmup_rounds", warmup);
    row.detail("metric", metric.name());
    row.detail("before", before_d);
    row.detail("after", after_d);
    row.detail("worst", worst);
    row.detail("analysis_seconds", after.analysis.seconds);
    row.detail("peak_memory_mib", after.analysis.peak_memory_mib);
    row.detail("crush_measures", after.configurations.measured);
    row.detail("lower_bound", after.configurations.lower_bound);
    row.detail("per_configuration", per_configuration);
    row.detail(
        "reports",
        json!({ "before": before_raw, "after": after_raw }),
    );
    Ok(())
}

/// The variable the instrumented program's runtime writes its region times to.
fn runtime_env() -> &'static str {
    "KNOBS_REGION_TIMES"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_region_times_file() {
        let parse = |text: &str| {
            RegionTimes::parse(text, Path::new("regions.txt")).map(|t| RegionFile::of(&t))
        };
        let r = parse(
            "knobs-region-times 1\ntotal\t0.08\nbase\t0.01\nwall\t0.08\nthreads\t1\n\
             unmatched_exits\t2\nopen_at_exit\t0\nfixed\t0\t3\t7\n0\t0.04\t1\n1\t0.03\t2\n",
        )
        .unwrap();
        assert_eq!(
            r,
            RegionFile {
                entries: 3,
                unmatched_exits: 2,
                fixed_violations: 7,
                probes: 0.0,
            }
        );
        let r = parse("knobs-region-times 1\ntotal\t0.08\nbase\t0.01\nprobes\t0.25\n0\t0.07\t9\n")
            .unwrap();
        assert_eq!((r.entries, r.probes), (9, 0.25));
        assert!(parse("hello").is_err());
    }
}
