//! `llvm`: from C sources or LLVM bitcode to knobs' language-neutral [`ir::Program`], and
//! back into the bitcode to instrument it.
//!
//! The white-box approaches read programs through this crate. It compiles a system's C
//! sources with clang 19 ([`compile::compile_c`]: one `clang-19 -O2 -Xclang -disable-llvm-passes -g -emit-llvm` per file,
//! `llvm-link-19` into one module) or takes the bitcode the system's own build produced,
//! promotes stack slots to SSA (`mem2reg`), and translates the module into an `ir::Program`
//! ([`translate::translate_bitcode`]) following the rules of `docs/ir.md`. The translation
//! also returns [`LlvmPositions`], a side table from ir ids back to positions in the LLVM
//! module, which [`instrument::instrument`] uses to insert region enter/exit calls at
//! `ir::ProgramPoint`s ([`instrument::instrument_with_checks`] also checks that loads
//! the analysis folded read the value it assumed); [`instrument::link_instrumented`] links the result with the
//! runtime.
//!
//! Architecture invariant: all inkwell and llvm-sys code lives here and only here; nothing of
//! LLVM (no `Context`, no `Module`, no raw pointer) crosses this crate's API, which speaks in
//! paths, `ir::Program` and ids.
//!
//! Architecture invariant: an LLVM module is identified across processes by the SSA bitcode
//! file the translation wrote; instrumenting reloads that file and checks it still has the
//! shape the positions describe, so ids are never applied to a different module.

mod bitcode;
pub mod compile;
pub mod fixture;
pub mod instruction_counters;
pub mod instrument;
mod memory_effects;
pub mod taint_pass;
pub mod translate;

pub use compile::{CompileOptions, compile_c};

pub use instruction_counters::{
    CounterStats, MARKER_PREFIX, add_instruction_counters, instrument_counting,
};
pub use instrument::{
    InstrumentStats, Observing, RegionProbe, ValueCheck, instrument, instrument_observing,
    instrument_with_checks, link_instrumented,
};
pub use taint_pass::{TaintStats, instrument_taint};
pub use translate::{FunctionShape, LlvmPositions, Translation, translate_bitcode};

use std::path::PathBuf;

/// Everything that can go wrong between C sources and an instrumented binary; each message is
/// one line naming the file or tool at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{tool}` not found; install LLVM 19 (scripts/setup-debian.sh): {message}")]
    ToolMissing { tool: String, message: String },
    #[error("{file}: does not compile: {first_error}")]
    Compile { file: PathBuf, first_error: String },
    #[error("linking bitcode with `{tool}` failed: {message}")]
    Link { tool: String, message: String },
    #[error("{path}: not LLVM bitcode that LLVM 19 can load: {message}")]
    BadBitcode { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("running `{passes}` on the module failed: {message}")]
    Passes { passes: String, message: String },
    #[error("the translated program is malformed: {0}")]
    Ir(#[from] ir::Error),
    #[error("{path} does not match the translated program: {message}")]
    StaleBitcode { path: PathBuf, message: String },
    #[error("value check {id} on instruction {inst}: {message}")]
    ValueCheck {
        id: u32,
        inst: ir::InstId,
        message: String,
    },
    #[error("the instrumented module does not verify: {0}")]
    Verify(String),
    #[error("linking the instrumented program with `{tool}` failed: {message}")]
    LinkBinary { tool: String, message: String },
}

/// The first non-empty line of a tool's or LLVM's message, so errors stay one line.
pub(crate) fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no message)")
        .to_string()
}
