//! Compiling C source text with the real clang 19 and translating it.

#![allow(dead_code)]

use std::path::PathBuf;

use frontend::{CompileOptions, Translation, compile_c, translate_bitcode};

/// A C program compiled and translated in its own temporary directory.
pub struct Compiled {
    pub dir: tempfile::TempDir,
    pub source: PathBuf,
    pub ssa: PathBuf,
    pub translation: Translation,
}

pub fn compile(name: &str, source: &str) -> Compiled {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, source).unwrap();
    compile_file(dir, path)
}

pub fn compile_file(dir: tempfile::TempDir, path: PathBuf) -> Compiled {
    let linked = compile_c(
        std::slice::from_ref(&path),
        &CompileOptions::default(),
        &dir.path().join("bc"),
    )
    .unwrap();
    let ssa = dir.path().join("prog.ssa.bc");
    let translation = translate_bitcode(&linked, Some(&ssa)).unwrap();
    Compiled {
        dir,
        source: path,
        ssa,
        translation,
    }
}
