//! The approaches in counted instructions with `--backend slurm`, against the real one-node
//! Slurm cluster on this machine (`scripts/slurm-local.sh start`, which these tests run
//! first): each run's count, read from the region file its array task kept, arrives in the
//! store with the run, and the model is the one a local measurement gives, exactly (counts
//! do not depend on where or how loaded the machine is).

mod common;
mod counted;

use std::path::Path;

use common::{knobs_ok, stored_runs};
use counted::{MAIN_C, spec};
use measure::Selection;

/// The model file without its provenance (which names the store).
fn model(path: &Path) -> serde_json::Value {
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    file.as_object_mut().unwrap().remove("provenance");
    file
}

#[test]
fn counted_approaches_on_slurm_store_the_counts_and_model_as_locally() {
    let _cluster = common::slurm_cluster();
    let spec_text = spec() + "\n[slurm]\ntasks = 2\nspool = \"spool\"\n";
    let (dir, spec) = common::c_subject(MAIN_C, &spec_text);
    // Each approach in stores of its own: SPLat and SPLat-delayed measure the same build.
    for (name, command, extra) in [
        ("crush", "crush", None),
        ("splat", "splat", None),
        ("splat-delayed", "splat", Some("--delayed")),
    ] {
        let run = |backend: &str| {
            let store = dir.path().join(format!("{name}-{backend}.db"));
            let out = dir.path().join(format!("{name}-{backend}.json"));
            let mut args = vec![command, "--backend", backend, "--json"];
            args.extend(extra);
            let (store_arg, out_arg) = (store.display().to_string(), out.display().to_string());
            args.extend(["--store", &store_arg, "-o", &out_arg, "--spec"]);
            let ran = knobs_ok(&args, &spec);
            (ran, store, out)
        };
        let (_, _, local_model) = run("local");
        let (ran, store, slurm_model) = run("slurm");
        assert!(
            ran.stderr.contains("submitted Slurm job"),
            "{name}: {}",
            ran.stderr
        );
        assert_eq!(model(&slurm_model), model(&local_model), "{name}");
        let report = ran.json();
        let variant = report["variant"].as_str().unwrap();
        let selection = Selection {
            variant: variant.to_string(),
            ..Default::default()
        };
        let runs = stored_runs(&store, &selection);
        assert!(!runs.is_empty(), "{name}: no runs under {variant}");
        for run in &runs {
            assert!(run.is_ok(), "{run:?}");
            assert!(run.source.is_some(), "an array task's run: {run:?}");
            assert!(run.instructions.is_some_and(|n| n > 0), "{run:?}");
        }
    }
}
