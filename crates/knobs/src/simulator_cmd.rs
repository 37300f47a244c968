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
    /// The system spec: options with `build = { define = "NAME" }` and [build] sources.
    #[arg(long, default_value = "knobs.toml")]
    spec: PathBuf,
    /// Where the encoded sources, the simulator and its spec go (default: `.knobs-simulator`
    /// beside the spec).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The C compiler.
    #[arg(long, default_value = "clang-19")]
    clang: PathBuf,
    /// Print what was built as JSON on stdout.
    #[arg(long)]
    json: bool,
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
    if args.json {
        crate::print_json(&built)?;
        return Ok(Outcome::Done);
    }
    println!(
        "encoded: {} ({} conditional groups now decided at run time)",
        built.encoded.join(", "),
        built.decisions
    );
    for f in &built.feature_functions {
        println!(
            "  {} ({}:{}) exists only with {}",
            f.function,
            f.file,
            f.line,
            f.features.join(" and ")
        );
    }
    println!("simulator: {}", built.program.display());
    println!("its spec:  {}", built.spec.display());
    eprintln!(
        "the simulator's costs are not the real builds' (encoding removes their constant folding): \
         compare with `knobs measure --spec {}`",
        args.spec.display()
    );
    Ok(Outcome::Done)
}
