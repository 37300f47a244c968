//! `knobs crush` in counted instructions (`metric = "instructions"`): a C program with real
//! computation (ConfigCrusher's running example with loops for its sleeps), its model
//! compared with the counted brute force — every configuration run in the counting build with
//! no region. Counts do not depend on the machine, so the bound is tight.

mod common;
mod counted;

use common::knobs;
use counted::{MAIN_C, brute_force, mape, predict, spec, without_term};
use predicates::str::contains;

#[test]
fn a_counted_model_matches_the_counted_brute_force() {
    let (dir, spec) = common::c_subject(MAIN_C, &spec());
    knobs()
        .args(["crush", "--spec"])
        .arg(&spec)
        .assert()
        .success()
        .stderr(contains("instructions (the spec's metric)"))
        .stderr(contains("no native time to scale them by"));
    let model = dir.path().join("loops.configcrusher.json");
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(text.contains("LLVM IR instructions, counted"), "{text}");

    let truth = brute_force(&spec, &dir.path().join("truth"));
    let error = mape(&predict(&model, &truth, dir.path()), &truth);
    eprintln!("MAPE of the counted model: {error:.6} %");
    assert!(
        error <= 0.5,
        "MAPE {error:.4} % against the counted brute force"
    );

    // The bound is tight enough to catch a wrong model: without its D·E·F interaction
    // (5000 iterations in 8 of 64 configurations) the same check fails.
    let broken = dir.path().join("broken.json");
    without_term(&model, "D·E·F", &broken);
    let wrong = mape(&predict(&broken, &truth, dir.path()), &truth);
    eprintln!("MAPE without D·E·F: {wrong:.4} %");
    assert!(wrong > 0.5, "MAPE {wrong:.4} % without D·E·F");
}
