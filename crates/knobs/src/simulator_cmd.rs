//! `knobs simulator`: the variant simulator of a spec whose options act on the build — its
//! `#ifdef` features encoded as run-time reads, compiled, and a run-time spec written beside
//! it for every approach (`simulator::build`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use measure::SystemSpec;

use crate::Outcome;

#[derive(Args)]
#[command(after_help = "Example:\n  \
    knobs simulator --spec examples/ifdef/knobs.toml\n  \
    knobs family --spec examples/ifdef/.knobs-simulator/knobs.toml")]
pub struct SimulatorArgs {
    /// The system spec: options with `build = { define = "NAME" }` and `[build] sources`.
    #[arg(long, default_value = "knobs.toml")]
    spec: PathBuf,
    /// Where the encoded sources, the simulator and its spec go (default: `.knobs-simulator`
    /// beside the spec).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The C compiler.
    #[arg(long, default_value = "clang-19")]
    clang: PathBuf,
    /// Also build real variants (every feature off, each alone, all), count their
    /// instructions beside the simulator's on the spec's workload, and compare each option's
    /// effect in both.
    #[arg(long)]
    check: bool,
    /// Print what was built (and checked) as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize)]
struct SimulatorReport<'a> {
    built: &'a simulator::Built,
    check: Option<&'a simulator::Check>,
}

pub fn simulator(args: SimulatorArgs) -> Result<Outcome> {
    let spec = SystemSpec::load(&args.spec)?;
    let out_dir = args
        .out
        .unwrap_or_else(|| spec.dir.join(".knobs-simulator"));
    let options = simulator::Options {
        out_dir,
        clang: args.clang,
    };
    let built = simulator::build(&spec, &options)?;
    let check = if args.check {
        Some(simulator::check(&spec, &built, &options)?)
    } else {
        None
    };
    if args.json {
        crate::print_json(&SimulatorReport {
            built: &built,
            check: check.as_ref(),
        })?;
        return Ok(Outcome::Done);
    }
    print_built(&built);
    match &check {
        Some(check) => print_check(check),
        None => eprintln!(
            "the simulator's costs are not the real builds' (encoding removes their constant \
             folding): --check compares them"
        ),
    }
    Ok(Outcome::Done)
}

fn print_built(built: &simulator::Built) {
    println!(
        "encoded: {} ({} conditional groups now decided at run time)",
        built.encoded.join(", "),
        built.decisions
    );
    for f in &built.feature_functions {
        let features = f.features.join(" and ");
        println!(
            "  {} ({}:{}) exists only with {features}",
            f.function, f.file, f.line
        );
    }
    for b in &built.feature_blocks {
        let options = b.options.join(" and ");
        println!("  a block at {}:{} is {options}'s code", b.file, b.line);
    }
    for refusal in &built.refusals {
        println!("  {refusal}");
    }
    if !built.build_only.is_empty() {
        println!(
            "build options of the simulator (a simulator per set of their values): {}",
            built.build_only.join(", ")
        );
    }
    println!("simulator: {}", built.program.display());
    println!("its spec:  {}", built.spec.display());
}

fn print_check(check: &simulator::Check) {
    println!(
        "real builds against the simulator, workload `{}` ({}):",
        check.workload, check.counter
    );
    for c in &check.configurations {
        let shown = if c.selected.is_empty() {
            "(none)".into()
        } else {
            c.selected.join(",")
        };
        let difference = 100.0 * (c.simulator as f64 - c.real as f64) / c.real as f64;
        println!(
            "  {shown}: real {} simulator {} ({difference:+.2} %)",
            c.real, c.simulator
        );
    }
    for e in &check.effects {
        println!(
            "  effect of {}: real {:+} simulator {:+} (differs by {:.2} % of the program)",
            e.option,
            e.real,
            e.simulator,
            e.difference_percent.abs()
        );
    }
    for text in &check.invalid {
        println!("  {text}: not a valid configuration, left out");
    }
}
