//! The dynamic taint runtime (Comprex): `c/knobs_taint.c`, linked into programs instrumented
//! by `frontend::taint`, built by [`build`] into `libknobs_taint.a` (cached by content hash,
//! like the region runtime).
//!
//! What the C file implements (its header comment is the full statement): 32-bit label ids
//! interned into sets of options (any number of options; a union cache), shadow memory with one
//! label per byte in a two-level page table, the per-thread control-taint stack with frames,
//! the thread-local argument/return label slots, and the decision records written at exit as a
//! `knobs-taint-run` JSON object (`docs/comprex-records.md`) to the file named by
//! [`ENV_VAR`], with an empty `configuration` for the caller to fill in and an extra
//! `options` array (the registered option names).
//!
//! Architecture invariant: the C runtime depends on libc only and never prints; nothing is
//! written when [`ENV_VAR`] is unset or empty.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Error, archivers, first_line, fnv1a, io};

/// The taint runtime's C source, compiled by [`build`].
pub const SOURCE: &str = include_str!("../c/knobs_taint.c");

/// The environment variable naming the output file.
pub const ENV_VAR: &str = "KNOBS_TAINT_OUT";

const CFLAGS: &[&str] = &[
    "-O2", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-Werror", "-g0",
];

/// Compiles the taint runtime with `clang` into `out_dir/knobs-taint-<hash>/libknobs_taint.a`
/// and returns that path; a built library is reused, concurrent builds are safe.
pub fn build(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    let hash = fnv1a(&[
        SOURCE.as_bytes(),
        CFLAGS.join(" ").as_bytes(),
        clang.as_os_str().as_encoded_bytes(),
    ]);
    let dir = out_dir.join(format!("knobs-taint-{hash:016x}"));
    let lib = dir.join("libknobs_taint.a");
    if lib.is_file() {
        return Ok(lib);
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let unique = format!(
        "{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let object = dir.join(format!("knobs_taint.{unique}.o"));
    let tool = clang.display().to_string();
    let mut child = Command::new(clang)
        .args(CFLAGS)
        .args(["-x", "c", "-c", "-", "-o"])
        .arg(&object)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::ToolMissing {
            tool: tool.clone(),
            message: e.to_string(),
        })?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin
            .write_all(SOURCE.as_bytes())
            .map_err(|e| Error::Compile {
                tool: tool.clone(),
                message: e.to_string(),
            })?;
    }
    let out = child.wait_with_output().map_err(|e| Error::Compile {
        tool: tool.clone(),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&object);
        return Err(Error::Compile {
            tool,
            message: first_line(&out.stderr),
        });
    }
    let staged = dir.join(format!("libknobs_taint.{unique}.a"));
    let mut last_error = None;
    for ar in archivers(clang) {
        match Command::new(&ar)
            .arg("rcs")
            .arg(&staged)
            .arg(&object)
            .output()
        {
            Ok(o) if o.status.success() => {
                last_error = None;
                break;
            }
            Ok(o) => {
                last_error = Some(Error::Archive {
                    tool: ar.display().to_string(),
                    message: first_line(&o.stderr),
                });
                break;
            }
            Err(e) => {
                last_error = Some(Error::ToolMissing {
                    tool: ar.display().to_string(),
                    message: e.to_string(),
                })
            }
        }
    }
    let _ = std::fs::remove_file(&object);
    if let Some(e) = last_error {
        return Err(e);
    }
    std::fs::rename(&staged, &lib).map_err(io(&lib))?;
    Ok(lib)
}
