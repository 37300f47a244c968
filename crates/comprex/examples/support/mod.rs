//! What the counted examples share: their `main` and one run of a counting build.

use std::path::Path;
use std::process::{Command, Stdio};

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Runs `run` on the command line's arguments, at least `min_args` of them (else `usage`);
/// an error is one line and exit status 1.
pub fn main_with(usage: &str, min_args: usize, run: fn(&[String]) -> Result<()>) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < min_args {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    }
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// One run of a counting build `binary` in `config` on `workload`, its region file written
/// to `file` and read back.
pub fn run_counted(
    spec: &measure::SystemSpec,
    workload: &measure::Workload,
    binary: &Path,
    config: &space::Configuration,
    file: &Path,
) -> Result<runtime::RegionTimes> {
    let invocation = spec.invocation_of(binary.to_path_buf(), config, workload)?;
    let stdin = match &invocation.stdin {
        Some(path) => Stdio::from(std::fs::File::open(path)?),
        None => Stdio::null(),
    };
    let status = Command::new(&invocation.program)
        .args(&invocation.args)
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .env(runtime::ENV_VAR, file)
        .current_dir(&invocation.cwd)
        .stdin(stdin)
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        let shown = spec.space.format_configuration(config);
        return Err(format!("`{shown}`: the counting build exited with {status}").into());
    }
    Ok(runtime::RegionTimes::read(file)?)
}
