//! The dynamic taint runtime (Comprex): `c/knobs_taint.c`, linked into programs instrumented
//! by `llvm::taint_pass`, built by [`build`] into `libknobs_taint.a` (cached by content hash,
//! like the region runtime).
//!
//! What the C file implements (its header comment is the full statement): 32-bit labels of
//! sets of options (bit sets for the first 31 options, interned sets beyond: any number of
//! options; a union cache), shadow memory with one label per byte in a two-level page table,
//! the thread-local control taint and argument/return label slots, the slow paths of what the
//! instrumented code does inline (`llvm::taint_pass`), and the decision records written at exit
//! as a `knobs-taint-run` JSON object (`docs/comprex-records.md`) to the file named by
//! [`ENV_VAR`], with an empty `configuration` for the caller to fill in and an extra `options`
//! array (the registered option names).
//!
//! Architecture invariant: the C runtime depends on libc only and never prints; nothing is
//! written when [`ENV_VAR`] is unset or empty.

use std::path::{Path, PathBuf};

use crate::{CFLAGS, Error};

/// The taint runtime's C source, compiled by [`build`].
pub const SOURCE: &str = include_str!("../c/knobs_taint.c");

/// The environment variable naming the output file.
pub const ENV_VAR: &str = "KNOBS_TAINT_OUT";

/// The environment variable naming a file of decision site ids whose conditional branches
/// open no control entry (they went one way in every run of an exploration; the records'
/// `branch_ways` say which way each branch went). A run given an unreadable file or an id
/// past the build's sites exits with status 125.
pub const ONE_WAY_VAR: &str = "KNOBS_TAINT_ONE_WAY";

/// Compiles the taint runtime with `clang` into `out_dir/knobs-taint-<hash>/libknobs_taint.a`
/// and returns that path; a built library is reused, concurrent builds are safe.
pub fn build(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    crate::build_library(clang, out_dir, "taint", SOURCE, CFLAGS)
}
