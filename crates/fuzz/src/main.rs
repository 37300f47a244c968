//! `knobs-fuzz`: runs each parser of knobs on mutated inputs (see the `fuzz` crate) and
//! keeps every input that crashes, hangs or exhausts memory as a regression input.
//!
//!     cargo run --release -p fuzz -- --inputs 100000                 # a long run
//!     cargo run --release -p fuzz -- --seconds 600 --results docs/results/fuzz/fuzz-DATE.json
//!
//! Inputs run in a child process (`--child`), which writes each input to a file before
//! parsing it: when the child dies (a signal, an abort, a stack overflow, a panic) or stops
//! advancing past `--timeout-ms`, the parent saves that input under
//! `crates/fuzz/regressions/<target>/` and starts a new child on the next seed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;

#[derive(Parser)]
#[command(
    version,
    about = "Fuzz every parser of knobs; crashes become regression inputs"
)]
struct Args {
    /// Only these targets (default: all): system-spec, space-toml, splconqueror-xml,
    /// dimacs, dataset-csv, model-json, configuration, formula, sample-strategy, learner.
    #[arg(long)]
    target: Vec<String>,
    /// Inputs per target (deterministic for --seed); the default unless --seconds is given.
    #[arg(long, default_value_t = 2000)]
    inputs: u64,
    /// Fuzz each target for this long instead of a number of inputs.
    #[arg(long)]
    seconds: Option<u64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// An input that takes longer than this is a hang.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Address-space limit of the child (MiB): a parser allocating more crashes.
    #[arg(long, default_value_t = 4096)]
    memory_mib: u64,
    /// Write the run's numbers (per target: inputs, crashes, seconds) to this JSON file.
    #[arg(long)]
    results: Option<PathBuf>,
    /// Internal: run inputs of TARGET in this process.
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Internal: the file the child writes each input to.
    #[arg(long, hide = true)]
    current: Option<PathBuf>,
    /// Internal: inputs the child skips (already run by its predecessors on this seed).
    #[arg(long, hide = true, default_value_t = 0)]
    skip: u64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(name) = &args.child {
        return child(&args, name);
    }
    let targets: Vec<&fuzz::Target> = if args.target.is_empty() {
        fuzz::TARGETS.iter().collect()
    } else {
        args.target
            .iter()
            .map(|n| fuzz::target(n).with_context(|| format!("no fuzz target `{n}`")))
            .collect::<Result<_>>()?
    };
    let mut rows = Vec::new();
    let mut crashes_total = 0;
    for t in targets {
        let (inputs, crashes, seconds) = fuzz_target(&args, t)?;
        eprintln!(
            "{}: {inputs} inputs in {seconds:.1} s, {} crashes{}",
            t.name,
            crashes.len(),
            if crashes.is_empty() {
                String::new()
            } else {
                format!(": {}", crashes.join(", "))
            }
        );
        crashes_total += crashes.len();
        rows.push(serde_json::json!({
            "target": t.name,
            "inputs": inputs,
            "crashes": crashes,
            "seconds": seconds,
        }));
    }
    if let Some(path) = &args.results {
        let report = serde_json::json!({
            "date_unix": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            "command": std::env::args().collect::<Vec<_>>().join(" "),
            "seed": args.seed,
            "timeout_ms": args.timeout_ms,
            "memory_mib": args.memory_mib,
            "targets": rows,
        });
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if crashes_total > 0 {
        bail!("{crashes_total} crashing inputs, saved under crates/fuzz/regressions/");
    }
    Ok(())
}

/// Fuzzes one target: children run inputs until the budget is spent; each crash is saved.
/// Returns the inputs run, the saved crash files and the seconds spent.
fn fuzz_target(args: &Args, t: &fuzz::Target) -> Result<(u64, Vec<String>, f64)> {
    let started = Instant::now();
    let exe = std::env::current_exe()?;
    let scratch =
        std::env::temp_dir().join(format!("knobs-fuzz-{}-{}", std::process::id(), t.name));
    std::fs::create_dir_all(&scratch)?;
    let current = scratch.join("current");
    let done = |inputs: u64| match args.seconds {
        Some(s) => started.elapsed() >= Duration::from_secs(s),
        None => inputs >= args.inputs,
    };
    let (mut inputs, mut crashes) = (0u64, Vec::new());
    let mut seed = args.seed;
    let mut skip = 0u64;
    while !done(inputs) {
        let batch = match args.seconds {
            Some(_) => 1000,
            None => (args.inputs - inputs).min(1000),
        };
        let _ = std::fs::remove_file(&current);
        let mut child = Command::new(&exe)
            .args(["--child", t.name, "--seed", &seed.to_string()])
            .args(["--inputs", &batch.to_string(), "--skip", &skip.to_string()])
            .args(["--memory-mib", &args.memory_mib.to_string(), "--current"])
            .arg(&current)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        // Watch for a hang: the current input's file stops changing.
        let mut last_change = (Instant::now(), None);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            let modified = std::fs::metadata(&current).and_then(|m| m.modified()).ok();
            if modified != last_change.1 {
                last_change = (Instant::now(), modified);
            } else if last_change.0.elapsed() > Duration::from_millis(args.timeout_ms) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let ran = std::fs::read(current.with_extension("count"))
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        match status {
            Some(s) if s.success() => {
                inputs += batch;
                skip = 0;
                seed += 1;
            }
            _ => {
                // The input in `current` crashed (or hung): keep it, go on after it.
                let kind = match status {
                    None => "hang",
                    Some(_) => "crash",
                };
                if let Ok(input) = std::fs::read(&current) {
                    crashes.push(save_crash(t, &input, kind)?);
                }
                inputs += ran + 1;
                skip = skip + ran + 1;
                if skip >= batch {
                    skip = 0;
                    seed += 1;
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok((inputs, crashes, started.elapsed().as_secs_f64()))
}

/// Saves a crashing input under the target's regressions directory, named by its content.
fn save_crash(t: &fuzz::Target, input: &[u8], kind: &str) -> Result<String> {
    let dir = fuzz::regressions_dir(t);
    std::fs::create_dir_all(&dir)?;
    // FNV-1a: a stable name for the same input.
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in input {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    let path = dir.join(format!("{kind}-{h:016x}"));
    std::fs::write(&path, input)?;
    Ok(path.display().to_string())
}

/// The child: runs `--inputs` inputs of the target from `--seed`, writing each to
/// `--current` (and how many ran before it to `<current>.count`) before parsing it.
fn child(args: &Args, name: &str) -> Result<()> {
    let t = fuzz::target(name).with_context(|| format!("no fuzz target `{name}`"))?;
    let current = args.current.as_deref().context("--current")?;
    limit_memory(args.memory_mib);
    let mut mutator = fuzz::Mutator::new(fuzz::seeds(t), args.seed);
    for k in 0..args.inputs {
        let input = mutator.next_input();
        if k < args.skip {
            continue;
        }
        write_atomically(
            &current.with_extension("count"),
            (k - args.skip).to_string().as_bytes(),
        )?;
        write_atomically(current, &input)?;
        fuzz::run_input(t, &input);
    }
    Ok(())
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn limit_memory(mib: u64) {
    let bytes = mib.saturating_mul(1 << 20);
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit with a valid struct; it only lowers this process's own limit.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &limit);
    }
}
