//! What several CLI tests share.
#![allow(dead_code)] // each test uses its own part

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Runs git in `dir` with a fixed author, asserting it succeeds.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=knobs",
            "-c",
            "user.email=knobs@example.org",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A model file's terms as labels (`PACKED·MODE=2`; the intercept is ``).
pub fn term_labels(file: &serde_json::Value) -> Vec<String> {
    file["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("·")
        })
        .collect()
}

/// Starts the local Slurm cluster (`scripts/slurm-local.sh start`) once, and lets one test
/// at a time use it (the tests count jobs and cancel tasks; their jobs would also wait on
/// each other's on two CPUs).
pub fn slurm_cluster() -> MutexGuard<'static, ()> {
    static STARTED: OnceLock<()> = OnceLock::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    STARTED.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-local.sh");
        let out = Command::new("bash")
            .arg(script)
            .arg("start")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "slurm-local.sh start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
    guard
}
