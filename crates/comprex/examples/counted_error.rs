//! A counted model's error against the counted brute force: every valid configuration of a
//! spec run once in the counting build with no region
//! (`instrumented::counting::plain_counting_build`, the unit a counted white-box model is in),
//! and the model's MAPE over them, with the worst configurations.
//!
//!     cargo run -p comprex --example counted_error -- SPEC MODEL [WORK_DIR]
//!
//! The spec's measured workload (its first with the default purpose) is run; the counts are
//! deterministic, so one run per configuration is the truth.

use std::path::PathBuf;
use std::process::{Command, Stdio};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: counted_error SPEC MODEL [WORK_DIR]");
        std::process::exit(2);
    }
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let spec = measure::SystemSpec::load(&PathBuf::from(&args[0]))?;
    let model = model::ModelFile::load(&PathBuf::from(&args[1]))?;
    let work = args
        .get(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| spec.dir.join(".knobs").join("counted-truth"));
    let settings = instrumented::Settings::new(work.clone());
    let (binary, _) = instrumented::counting::plain_counting_build(&spec, &settings)?;
    let workload = spec.workload(None)?;
    spec.prepare_workload(workload)?;
    let bound = model.bind(&spec.space.names())?;
    let valid = space::ValidConfigurations::new(&spec.space)?;
    let file = std::path::absolute(work.join("truth.tsv"))?;
    let mut rows = Vec::new();
    for config in valid.iter() {
        let invocation = spec.invocation_of(binary.clone(), &config, workload)?;
        let stdin = match &invocation.stdin {
            Some(path) => Stdio::from(std::fs::File::open(path)?),
            None => Stdio::null(),
        };
        let status = Command::new(&invocation.program)
            .args(&invocation.args)
            .envs(invocation.env.iter().map(|(k, v)| (k, v)))
            .env(runtime::ENV_VAR, &file)
            .current_dir(&invocation.cwd)
            .stdin(stdin)
            .stdout(Stdio::null())
            .status()?;
        let shown = spec.space.format_configuration(&config);
        if !status.success() {
            return Err(format!("`{shown}`: the counting build exited with {status}").into());
        }
        let times = runtime::RegionTimes::read(&file)?;
        let predicted = bound.predict(&spec.space.values(&config));
        rows.push((shown, times.total, predicted));
    }
    let error = |(_, truth, predicted): &(String, f64, f64)| (predicted - truth).abs() / truth;
    let mape = 100.0 * rows.iter().map(error).sum::<f64>() / rows.len() as f64;
    let mut text = format!(
        "{}: MAPE {mape:.3} % over {} configurations (counted brute force)\n",
        spec.name,
        rows.len()
    );
    rows.sort_by(|a, b| error(b).total_cmp(&error(a)));
    for row in rows.iter().take(5) {
        text.push_str(&format!(
            "  {:>7.3} %  `{}`: {:.0} counted, {:.0} predicted\n",
            100.0 * error(row),
            row.0,
            row.1,
            row.2
        ));
    }
    // A closed pipe (`| head`) is not an error of the measurement.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    Ok(())
}
