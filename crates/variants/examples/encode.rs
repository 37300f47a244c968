//! Encodes C files and writes the variant simulator's sources beside them, for trying the
//! encoding on a program by hand:
//!
//!   cargo run -p variants --example encode -- OUT_DIR ROOT FEATURE... -- FILE...
//!
//! FEATURE is `NAME` (`-DNAME` when selected, undefined when not) or `NAME=0/1` (`-DNAME=1`
//! and `-DNAME=0`); FILE paths are relative to ROOT and written to the same place under
//! OUT_DIR, with `knobs_features.c`. Refusals go to standard output.

use std::path::Path;

use variants::{Feature, SourceFile};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").expect("FEATURE... -- FILE...");
    let (out, root) = (Path::new(&args[0]), Path::new(&args[1]));
    let features: Vec<Feature> = args[2..split]
        .iter()
        .map(|f| match f.strip_suffix("=0/1") {
            Some(name) => Feature::valued(name, &name.to_lowercase()),
            None => Feature::defined_when_on(f, &f.to_lowercase()),
        })
        .collect();
    let files: Vec<SourceFile> = args[split + 1..]
        .iter()
        .map(|p| SourceFile {
            path: p.clone(),
            text: std::fs::read_to_string(root.join(p)).expect("a readable file"),
        })
        .collect();
    let simulator = variants::encode(&files, &features);
    for file in &simulator.files {
        let path = out.join(&file.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &file.text).unwrap();
    }
    std::fs::write(out.join("knobs_features.c"), simulator.features_source()).unwrap();
    for r in &simulator.refusals {
        println!("{r}");
    }
    let names = |fs: &[Feature]| fs.iter().map(|f| f.macro_name.clone()).collect::<Vec<_>>();
    println!("encoded: {:?}", names(&simulator.encoded));
    println!("build-only: {:?}", names(&simulator.build_only));
    println!("decisions: {}", simulator.decisions);
}
