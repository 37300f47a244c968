//! A counted model's error against the counted brute force: every valid configuration of a
//! spec run once in the counting build with no region
//! (`instrumented::counting::plain_counting_build`, the unit a counted white-box model is in),
//! and the model's MAPE over them, with the worst configurations.
//!
//!     cargo run -p comprex --example counted_error -- SPEC MODEL [WORK_DIR]
//!
//! The spec's measured workload (its first with the default purpose) is run; the counts are
//! deterministic, so one run per configuration is the truth.

mod support;

use std::path::PathBuf;

fn main() {
    support::main_with("counted_error SPEC MODEL [WORK_DIR]", 2, run);
}

fn run(args: &[String]) -> support::Result<()> {
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
        let times = support::run_counted(&spec, workload, &binary, &config, &file)?;
        let shown = spec.space.format_configuration(&config);
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
