//! How precisely the profiler's CPU clock attributes time to regions, on this machine as
//! loaded as it is now.
//!
//! `cargo run --release -p instrumented --example bench_cpu_attribution [RUNS]`
//!
//! Runs the profiler's test scenarios (`tests/profiler_scenarios.c`, real build) with
//! `KNOBS_PROFILE_CLOCK=cpu` RUNS times (default 10): `cpu-vs-sleep` (a 60 ms busy loop in
//! region 0, a 60 ms sleep in region 1) and `threads` (two 40 ms workers in region 3, the
//! main thread joining them in region 4), and prints, per region, the CPU seconds the
//! profiler charged against what the program did (median, min, max over the runs) with the
//! load average before and after, for the default timer (each thread's `task-clock` perf
//! event where allowed) and the POSIX CPU timers (`KNOBS_PROFILE_TIMER=posix`), at periods of
//! 1 ms and 100 µs. POSIX CPU timers fire at scheduler ticks; under contention any signal is
//! delivered late and charged late, so this is a measurement, not a test.

use std::path::PathBuf;
use std::process::Command;

use runtime::profiler::{self, Profile};

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10);
    let dir = tempfile::tempdir()?;
    let clang = PathBuf::from("clang-19");
    let lib = profiler::build(&clang, dir.path())?;
    let src = dir.path().join("prog.c");
    std::fs::write(&src, include_str!("../tests/profiler_scenarios.c"))?;
    let exe = dir.path().join("prog");
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
    println!("load average before: {}", load());
    println!(
        "| timer | period (µs) | scenario | region | truth (s) | charged, median (s) | min | max |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // The default timer (a task-clock perf event where allowed) and the POSIX CPU timers it
    // falls back to, side by side, at the runtime's default period and at Comprex's.
    for (timer, period_us) in [("", 1000), ("", 100), ("posix", 1000), ("posix", 100)] {
        for (scenario, regions) in [
            ("cpu-vs-sleep", [(0, "busy loop", 0.060), (1, "sleep", 0.0)]),
            (
                "threads",
                [(3, "two workers", 0.080), (4, "main joining", 0.0)],
            ),
        ] {
            let mut charged: Vec<Vec<f64>> = vec![Vec::new(); regions.len()];
            let mut used = None;
            for _ in 0..runs {
                let file = dir.path().join("profile.tsv");
                let out = Command::new(&exe)
                    .arg(scenario)
                    .env(profiler::ENV_VAR, &file)
                    .env(profiler::CLOCK_VAR, "cpu")
                    .env(profiler::PERIOD_VAR, period_us.to_string())
                    .env(profiler::TIMER_VAR, timer)
                    .output()?;
                if !out.status.success() {
                    return Err(format!("{scenario} failed: {out:?}").into());
                }
                let p = Profile::read(&file)?;
                used = p.timer;
                for (k, (id, _, _)) in regions.iter().enumerate() {
                    charged[k].push(p.times.region(*id).self_seconds);
                }
            }
            for (k, (id, what, truth)) in regions.iter().enumerate() {
                let mut v = charged[k].clone();
                v.sort_by(f64::total_cmp);
                println!(
                    "| {used:?} | {period_us} | {scenario} | {id} ({what}) | {truth:.4} | {:.4} | {:.4} | {:.4} |",
                    v[v.len() / 2],
                    v[0],
                    v[v.len() - 1]
                );
            }
        }
    }
    println!("load average after: {}", load());
    Ok(())
}
