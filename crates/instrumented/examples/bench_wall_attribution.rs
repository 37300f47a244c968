//! How precisely the profiler's wall clock (the default: a sampler thread) attributes real
//! time to regions, on this machine as loaded as it is now.
//!
//! `cargo run --release -p instrumented --example bench_wall_attribution [RUNS] [PERIOD_US]`
//!
//! Runs the profiler's scenarios (`tests/profiler_scenarios.c`, real build: busy loops and
//! sleeps of so many milliseconds, the program measuring its own main thread's self time per
//! region) RUNS times each (default 10) with `KNOBS_PROFILE_PERIOD_US=PERIOD_US` (default
//! 1000), and the running example (`examples/running-example/main.c`, one region per
//! function through `llvm::instrument`, `FIG2_UNIT_MS=10`) in four configurations. Prints,
//! per region, the time the program measured (or, for the two workers and the running
//! example, what it was meant to take) and the error of the profiler's charge against it, in
//! sampling periods (median, min, max over the runs), with the share of periods the sampler
//! missed and the load average before and after. On an idle machine the errors stay within a
//! few periods; a starved sampler (`missed`) loses precision, not time. This is what
//! `tests/profiler.rs` checks exactly on the test clock, measured on real hardware: a
//! measurement, not a test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ir::{InstKind, ProgramPoint};
use llvm::{CompileOptions, RegionProbe, compile_c, instrument, link_instrumented};
use runtime::profiler::{self, Profile};

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The program's own measurement of the main thread's self time per region (`None`: base).
fn truth(stdout: &[u8]) -> BTreeMap<Option<u32>, f64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| {
            let (id, s) = l.split_once(' ')?;
            let id: i64 = id.parse().ok()?;
            Some(((id >= 0).then_some(id as u32), s.parse().ok()?))
        })
        .collect()
}

/// What one row of the table accumulates over the runs.
#[derive(Default)]
struct Row {
    truth: Vec<f64>,
    error_periods: Vec<f64>,
}

fn median_min_max(v: &[f64]) -> (f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn print_row(what: &str, row: &Row, missed: &[f64]) {
    let (t, _, _) = median_min_max(&row.truth);
    let (e, lo, hi) = median_min_max(&row.error_periods);
    let (m, _, _) = median_min_max(missed);
    println!(
        "| {what} | {:.1} | {e:+.1} | {lo:+.1} | {hi:+.1} | {:.1} |",
        t * 1e3,
        m * 100.0
    );
}

/// One region per defined function: starts before the entry block's first instruction, ends
/// before every return (as `tests/profiler.rs` instruments the running example).
fn method_probes(p: &ir::Program) -> (Vec<RegionProbe>, BTreeMap<String, u32>) {
    let mut probes = Vec::new();
    let mut ids = BTreeMap::new();
    for f in &p.functions {
        let Some(entry) = f.entry() else { continue };
        let id = probes.len() as u32;
        let ends = f
            .blocks
            .iter()
            .flat_map(|&b| p.block(b).insts.iter().copied())
            .filter(|&i| matches!(p.inst(i).kind, InstKind::Return { .. }))
            .map(ProgramPoint::Before)
            .collect();
        probes.push(RegionProbe {
            id,
            start: vec![ProgramPoint::Before(p.block(entry).insts[0])],
            end: ends,
        });
        ids.insert(f.name.clone(), id);
    }
    (probes, ids)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10);
    let period_us: String = args.next().unwrap_or_else(|| "1000".into());
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let clang = PathBuf::from("clang-19");
    let lib = profiler::build(&clang, d)?;
    let src = d.join("prog.c");
    std::fs::write(&src, include_str!("../tests/profiler_scenarios.c"))?;
    let exe = d.join("prog");
    let built = Command::new(&clang)
        .args(["-O2"])
        .arg(&src)
        .arg(&lib)
        .arg("-o")
        .arg(&exe)
        .status()?;
    if !built.success() {
        return Err("clang-19 failed to build the scenarios".into());
    }
    let file = d.join("profile.tsv");
    let profile = |exe: &Path, args: &[&str]| -> Result<(Vec<u8>, Profile), String> {
        let _ = std::fs::remove_file(&file);
        let out = Command::new(exe)
            .args(args)
            .env("FIG2_UNIT_MS", "10")
            .env(profiler::ENV_VAR, &file)
            .env(profiler::PERIOD_VAR, &period_us)
            .env_remove(profiler::CLOCK_VAR)
            .output()
            .map_err(|e| e.to_string())?;
        let p = Profile::read(&file).map_err(|e| format!("{args:?}: {e}: {out:?}"))?;
        Ok((out.stdout, p))
    };

    println!("load average before: {}", load());
    println!("period: {period_us} µs, {runs} runs");
    println!(
        "| scenario, region | truth, median (ms) | error, median (periods) | min | max | missed, median (% of periods) |"
    );
    println!("|---|---|---|---|---|---|");
    // Regions (`None`: the base) and, where the program does not measure it, the nominal time.
    type Regions = &'static [(Option<u32>, &'static str, Option<f64>)];
    let scenarios: [(&str, Regions); 7] = [
        (
            "nested",
            &[
                (Some(0), "f", None),
                (Some(1), "g", None),
                (None, "base", None),
            ],
        ),
        (
            "exit-deep",
            &[
                (Some(0), "0", None),
                (Some(1), "1", None),
                (Some(2), "2", None),
            ],
        ),
        (
            "cpu-vs-sleep",
            &[(Some(0), "busy loop", None), (Some(1), "sleep", None)],
        ),
        (
            "recursion",
            &[(Some(5), "4 activations", None), (None, "base", None)],
        ),
        (
            "threads",
            &[
                (Some(3), "two workers", Some(0.080)),
                (Some(4), "main joining", None),
                (None, "base", None),
            ],
        ),
        (
            "longjmp",
            &[
                (Some(0), "0", None),
                (Some(1), "1", None),
                (Some(2), "2, abandoned", None),
                (None, "base", None),
            ],
        ),
        ("fork", &[(Some(0), "parent", None)]),
    ];
    for (scenario, regions) in scenarios {
        let mut rows: Vec<Row> = regions.iter().map(|_| Row::default()).collect();
        let mut missed = Vec::new();
        for _ in 0..runs {
            let (stdout, p) = profile(&exe, &[scenario])?;
            let tr = truth(&stdout);
            missed.push(p.missed as f64 / (p.samples + p.missed).max(1) as f64);
            for (row, (id, _, nominal)) in rows.iter_mut().zip(regions.iter()) {
                let want = nominal.unwrap_or_else(|| tr.get(id).copied().unwrap_or(0.0));
                let got = match id {
                    Some(id) => p.times.region(*id).self_seconds,
                    None => p.times.base,
                };
                row.truth.push(want);
                row.error_periods.push((got - want) / p.period);
            }
        }
        for (row, (_, what, _)) in rows.iter().zip(regions.iter()) {
            print_row(&format!("{scenario}, {what}"), row, &missed);
        }
    }

    // The running example at method level: main and foo against their nominal sleeps.
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/running-example/main.c")
        .canonicalize()?;
    let linked = compile_c(&[source], &CompileOptions::default(), &d.join("bc"))?;
    let ssa = d.join("prog.ssa.bc");
    let translation = llvm::translate_bitcode(&linked, Some(&ssa))?;
    let (probes, ids) = method_probes(&translation.program);
    let bc = d.join("methods.bc");
    instrument(
        &ssa,
        &translation.program,
        &translation.positions,
        &probes,
        &bc,
    )?;
    let methods = d.join("methods");
    let flags: Vec<String> = profiler::LINK_FLAGS.iter().map(|s| s.to_string()).collect();
    link_instrumented(
        &clang,
        &bc,
        std::slice::from_ref(&lib),
        &flags,
        &methods,
        true,
    )?;
    let (foo_id, main_id) = (ids["foo"], ids["main"]);
    // Units of 10 ms: (arguments, foo's, main's).
    for (args, foo_units, main_units) in [
        (&[][..], 0.0, 1.0),
        (&["-B", "-C"][..], 0.0, 1.5),
        (&["-A"][..], 1.0, 3.1),
        (&["-A", "-C"][..], 4.0, 3.4),
    ] {
        let mut rows = [Row::default(), Row::default()];
        let mut missed = Vec::new();
        for _ in 0..runs {
            let (_, p) = profile(&methods, args)?;
            missed.push(p.missed as f64 / (p.samples + p.missed).max(1) as f64);
            for (row, (id, units)) in rows
                .iter_mut()
                .zip([(main_id, main_units), (foo_id, foo_units)])
            {
                let want = units * 0.010;
                row.truth.push(want);
                row.error_periods
                    .push((p.times.region(id).self_seconds - want) / p.period);
            }
        }
        print_row(
            &format!("running example {args:?}, main"),
            &rows[0],
            &missed,
        );
        if foo_units > 0.0 {
            print_row(&format!("running example {args:?}, foo"), &rows[1], &missed);
        }
    }
    println!("load average after: {}", load());
    Ok(())
}
