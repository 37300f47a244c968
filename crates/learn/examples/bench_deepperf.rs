//! DeepPerf's protocol on its six datasets: for each sample size, 30 random samples, learn,
//! predict every other configuration, mean relative error (MRE, %) with its 95 % margin and
//! the median — for every learner, next to the best published mean of each cell, who holds
//! it and DeepPerf's own (`data/published.toml`).
//!
//!     cargo run --release -p learn --example bench_deepperf [-- --reps 30]
//!         [--learners stepwise,lasso,cart,rf,boost,auto] [--datasets x264,LLVM]
//!         [--sizes 16,32] [--write DIR]
//!
//! `--write DIR` also writes the table as `DIR/deepperf-<date>-<commit>.md`, with the date,
//! commit, machine and command in it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use learn::experiment::{SizeResult, deepperf};
use learn::published::{System, scoreboard};
use learn::{Learner, Table};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let reps: usize = value("--reps").map_or(30, |v| v.parse().expect("--reps N"));
    let seed: u64 = value("--seed").map_or(1, |v| v.parse().expect("--seed S"));
    let learners = Learner::parse_list(
        &value("--learners").unwrap_or_else(|| "stepwise,lasso,cart,rf,boost,auto".into()),
    )
    .expect("learners");
    let only: Option<Vec<String>> =
        value("--datasets").map(|v| v.split(',').map(str::to_string).collect());
    // Only the cells of these sizes (in every system that has them), to explore a few cells.
    let sizes: Option<Vec<usize>> = value("--sizes").map(|v| {
        v.split(',')
            .map(|s| s.trim().parse().expect("--sizes N,N"))
            .collect()
    });
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/deepperf");
    assert!(dir.exists(), "{} not found", dir.display());

    let mut text = String::new();
    let mut line = |s: String| {
        println!("{s}");
        text.push_str(&s);
        text.push('\n');
    };
    line(format!(
        "DeepPerf's protocol: {reps} random samples per size (seed {seed}), learn, MRE (%) on all other configurations: mean ± 95 % margin, median; s/model = seconds to learn one model (search included) and predict the rest, as CPU time of the one thread that does it (wall time on a shared machine also counts other jobs) and, in parentheses, wall time."
    ));
    line("Published: the best published mean of the cell (holder) and DeepPerf's own mean (crates/learn/data/published.toml), not measured here.".into());
    line(String::new());
    line("| system | N | learner | mean MRE (%) | median | best published (holder) | DeepPerf | s/model, CPU (wall) |".into());
    line("|---|---|---|---|---|---|---|---|".into());
    let started = Instant::now();
    // Per learner: cells at or below the best, at or below DeepPerf, all cells, slowest.
    let mut tally = vec![(0, 0, 0, 0.0f64); learners.len()];
    let systems: Vec<System> = scoreboard()
        .into_iter()
        .filter(|s| only.as_ref().is_none_or(|o| o.contains(&s.name)))
        .map(|mut s| {
            s.cells
                .retain(|c| sizes.as_ref().is_none_or(|z| z.contains(&c.size)));
            s
        })
        .filter(|s| !s.cells.is_empty())
        .collect();
    for system in &systems {
        let path = dir.join(format!("{}.csv", system.name));
        let data = space::formats::load_dataset(&path, None).expect("dataset loads");
        let table = Table::new(&data);
        let cells: Vec<Vec<SizeResult>> = learners
            .iter()
            .map(|l| deepperf(&table, &system.sizes(), l, reps, seed).expect("experiment runs"))
            .collect();
        for (s, published) in system.cells.iter().enumerate() {
            for (l, learner) in learners.iter().enumerate() {
                let r = &cells[l][s];
                // Compared at the printed precision, as the published numbers are.
                let mean = (r.mean_mre * 100.0).round() / 100.0;
                let t = &mut tally[l];
                t.0 += (mean <= published.best) as usize;
                t.1 += (mean <= published.deepperf) as usize;
                t.2 += 1;
                let cpu = r.cpu_seconds.unwrap_or(r.seconds);
                t.3 = t.3.max(cpu);
                let mark = if mean <= published.best { " ✓" } else { "" };
                line(format!(
                    "| {} | {} | {} | {:.2} ± {:.2}{mark} | {:.2} | {:.2} ({}) | {:.2} | {cpu:.3} ({:.3}) |",
                    system.name,
                    published.size,
                    learner.name(),
                    r.mean_mre,
                    r.margin,
                    r.median_mre,
                    published.best,
                    published.holder,
                    published.deepperf,
                    r.seconds
                ));
            }
        }
    }
    line(String::new());
    for (learner, (best, deep, all, slowest)) in learners.iter().zip(&tally) {
        line(format!(
            "{learner}: at or below the best published mean in {best} of {all} cells (✓), at or below DeepPerf's in {deep} of {all}; slowest cell {slowest:.3} s (CPU) per model"
        ));
    }
    line(format!(
        "total time: {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if let Some(out) = value("--write") {
        let path = write_results(Path::new(&out), &text, &args);
        println!("wrote {}", path.display());
    }
}

/// Writes the table with its date, commit, machine and command as
/// `dir/deepperf-<date>-<commit>.md`; returns the path.
fn write_results(dir: &Path, table: &str, args: &[String]) -> PathBuf {
    let run = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into())
    };
    let date = run("date", &["-u", "+%Y-%m-%d"]);
    let commit = run("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = !run("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut doc = String::new();
    writeln!(doc, "# DeepPerf's protocol on the six published datasets").unwrap();
    writeln!(doc).unwrap();
    writeln!(doc, "- date: {date}").unwrap();
    writeln!(
        doc,
        "- commit: {commit}{}",
        if dirty {
            " (with uncommitted changes)"
        } else {
            ""
        }
    )
    .unwrap();
    writeln!(
        doc,
        "- machine: {cpu}, {cores} cores shared with other jobs; one model at a time, on one core"
    )
    .unwrap();
    writeln!(
        doc,
        "- command: `cargo run --release -p learn --example bench_deepperf -- {}`",
        args.join(" ")
    )
    .unwrap();
    writeln!(doc).unwrap();
    doc.push_str(table);
    std::fs::create_dir_all(dir).expect("results directory");
    let path = dir.join(format!("deepperf-{date}-{commit}.md"));
    std::fs::write(&path, doc).expect("results file written");
    path
}
