//! C programs given as text, compiled with the real clang 19 and translated in a temporary
//! directory of their own: what tests, examples and benchmarks across the workspace start from.

use std::path::PathBuf;

use crate::{CompileOptions, Translation, compile_c, translate_bitcode};

/// A C program compiled and translated in its own temporary directory (removed on drop).
pub struct Compiled {
    pub dir: tempfile::TempDir,
    pub source: PathBuf,
    /// The SSA bitcode the translation wrote, which the instrumentation passes rewrite.
    pub ssa: PathBuf,
    pub translation: Translation,
}

/// Compiles `source` saved as `name`; panics with clang's message on a compile error, as a
/// test should.
pub fn compile(name: &str, source: &str) -> Compiled {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join(name);
    std::fs::write(&path, source).expect("write the C source");
    compile_file(dir, path)
}

/// Compiles a C file already in `dir`.
pub fn compile_file(dir: tempfile::TempDir, path: PathBuf) -> Compiled {
    let linked = compile_c(
        std::slice::from_ref(&path),
        &CompileOptions::default(),
        &dir.path().join("bc"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let ssa = dir.path().join("prog.ssa.bc");
    let translation = translate_bitcode(&linked, Some(&ssa)).unwrap_or_else(|e| panic!("{e}"));
    Compiled {
        dir,
        source: path,
        ssa,
        translation,
    }
}

/// The calls to `callee` in a program with their source line, in program order.
pub fn calls_to(program: &ir::Program, callee: &str) -> Vec<(u32, ir::InstId)> {
    let Some(f) = program.function_named(callee) else {
        return Vec::new();
    };
    program
        .insts
        .iter_enumerated()
        .filter(|(_, inst)| {
            matches!(&inst.kind, ir::InstKind::Call { callee: ir::Callee::Direct(g), .. } if *g == f)
        })
        .map(|(k, inst)| (inst.loc.line, k))
        .collect()
}

/// The number of the first line of `source` containing `marker` (1-based).
pub fn line_of(source: &str, marker: &str) -> u32 {
    source
        .lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line contains {marker:?}")) as u32
        + 1
}
