//! What several CLI tests share.
#![allow(dead_code)] // each test uses its own part

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
