//! Encodes C files and writes the variant simulator's sources beside them, for trying the
//! encoding on a program by hand:
//!
//!   cargo run -p variants --example encode -- OUT_DIR ROOT FEATURE... -- FILE...
//!
//! FEATURE is `NAME` (`-DNAME` when selected, undefined when not) or `NAME=ON/OFF`, the
//! macro's value when selected and when not, `-` for undefined (`FAST=1/0`,
//! `SQLITE_THREADSAFE=0/1`); FILE paths are relative to ROOT and written to the same place under
//! OUT_DIR, with `knobs_features.c`. Refusals go to standard output.

use std::path::Path;

use variants::{Feature, MacroValue, SourceFile};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args
        .iter()
        .position(|a| a == "--")
        .expect("FEATURE... -- FILE...");
    let (out, root) = (Path::new(&args[0]), Path::new(&args[1]));
    let features: Vec<Feature> = args[2..split]
        .iter()
        .map(|f| {
            let Some((name, values)) = f.split_once('=') else {
                return Feature::defined_when_on(f, &f.to_lowercase());
            };
            let value = |v: &str| match v {
                "-" => MacroValue::Undefined,
                v => MacroValue::Defined(v.parse().expect("an integer or -")),
            };
            let (on, off) = values.split_once('/').expect("NAME=ON/OFF");
            Feature {
                macro_name: name.into(),
                option: name.to_lowercase(),
                on: value(on),
                off: value(off),
            }
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
