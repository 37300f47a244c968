//! Every crashing input the fuzzer ever found still parses without a crash, and a short,
//! deterministic fuzz run of every parser finds nothing new (CI's bounded run; the long run
//! is `cargo run --release -p fuzz -- --seconds 600`).

use std::process::Command;

#[test]
fn saved_crashes_no_longer_crash() {
    for t in fuzz::TARGETS {
        let Ok(entries) = std::fs::read_dir(fuzz::regressions_dir(t)) else {
            continue;
        };
        for entry in entries.flatten() {
            let input = std::fs::read(entry.path()).unwrap();
            let outcome = std::panic::catch_unwind(|| fuzz::run_input(t, &input));
            assert!(outcome.is_ok(), "{}: {}", t.name, entry.path().display());
        }
    }
}

#[test]
fn a_bounded_fuzz_run_of_every_parser_finds_nothing() {
    let results = tempfile_path();
    let out = Command::new(env!("CARGO_BIN_EXE_knobs-fuzz"))
        .args([
            "--inputs",
            "4000",
            "--seed",
            "7",
            "--timeout-ms",
            "20000",
            "--results",
        ])
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    let targets = report["targets"].as_array().unwrap();
    assert_eq!(targets.len(), fuzz::TARGETS.len());
    for t in targets {
        assert!(t["inputs"].as_u64().unwrap() >= 4000, "{t}");
        assert_eq!(t["crashes"], serde_json::json!([]), "{t}");
    }
    let _ = std::fs::remove_file(&results);
}

fn tempfile_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("knobs-fuzz-test-{}.json", std::process::id()))
}
