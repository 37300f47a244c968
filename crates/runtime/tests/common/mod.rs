//! Set-up shared by the runtime's tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `source` compiled with clang-19 and linked with the runtime's test-clock build, in a
/// directory `name` of the tests' scratch space; the executable's path.
pub fn test_clock_program(name: &str, source: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let clang = Path::new("clang-19");
    let lib = runtime::build_test_clock(clang, &dir).unwrap();
    let src = dir.join("prog.c");
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(format!("prog-{}", std::process::id()));
    let out = Command::new(clang)
        .args(["-O2", "-Wall", "-Werror"])
        .arg(&src)
        .arg(&lib)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    exe
}
