//! What several CLI tests share.

use std::path::Path;
use std::process::Command;

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
