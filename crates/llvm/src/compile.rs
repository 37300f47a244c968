//! Compiling a system's C sources to one LLVM module with clang 19.
//!
//! Each file is compiled with `-O2 -Xclang -disable-llvm-passes -g -emit-llvm`: no LLVM pass
//! runs, so the code keeps the source's shape and debug locations (as at `-O0`), but clang
//! emits it for optimisation (no `optnone`, `-O2` code generation choices), so `mem2reg`
//! works and the instrumented program, linked at `-O2`, runs as fast as a native `-O2` build.
//! (From `-O0` bitcode the instrumented xz ran 1.4× slower than native.) `llvm-link-19` joins
//! the files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{Error, first_line};

/// How to compile: the tools and the user's flags (as the system's build would pass them).
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// `clang-19` unless told otherwise.
    pub clang: PathBuf,
    /// `llvm-link-19` unless told otherwise.
    pub llvm_link: PathBuf,
    /// `-I` directories.
    pub include_dirs: Vec<PathBuf>,
    /// `-D` definitions: name and optional value.
    pub defines: Vec<(String, Option<String>)>,
    /// Any other flags, passed after knobs' own (e.g. `-std=c99`, `-pthread`).
    pub flags: Vec<String>,
    /// Files compiled at once (each clang is one process); at least 1.
    pub jobs: usize,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            clang: "clang-19".into(),
            llvm_link: "llvm-link-19".into(),
            include_dirs: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// The flags knobs always compiles with; the user's come after them.
pub const BASE_FLAGS: &[&str] = &["-O2", "-Xclang", "-disable-llvm-passes", "-g", "-emit-llvm"];

fn run(tool: &Path, command: &mut Command) -> Result<Output, Error> {
    command.output().map_err(|e| Error::ToolMissing {
        tool: tool.display().to_string(),
        message: e.to_string(),
    })
}

/// The line of clang's output that says what is wrong: the first `error:` line, else the
/// first line.
fn first_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("error:"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| first_line(stderr))
}

/// Compiles one C file to bitcode at `output`.
pub fn compile_one(source: &Path, options: &CompileOptions, output: &Path) -> Result<(), Error> {
    let mut command = Command::new(&options.clang);
    command.args(BASE_FLAGS);
    for dir in &options.include_dirs {
        command.arg("-I").arg(dir);
    }
    for (name, value) in &options.defines {
        command.arg(match value {
            Some(v) => format!("-D{name}={v}"),
            None => format!("-D{name}"),
        });
    }
    command
        .args(&options.flags)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(output);
    let out = run(&options.clang, &mut command)?;
    if !out.status.success() {
        return Err(Error::Compile {
            file: source.to_path_buf(),
            first_error: first_error(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(())
}

/// Compiles `sources` into `work_dir` (one `.bc` per file, up to `options.jobs` clang
/// processes at a time) and links them into `work_dir/linked.bc`, which it returns. The
/// first file that does not compile is the error.
pub fn compile_c(
    sources: &[PathBuf],
    options: &CompileOptions,
    work_dir: &Path,
) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(work_dir).map_err(|e| Error::Io {
        path: work_dir.to_path_buf(),
        message: e.to_string(),
    })?;
    // Numbered outputs: two sources may share a file name in different directories.
    let outputs: Vec<PathBuf> = sources
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let stem = s
                .file_stem()
                .map_or("source".into(), |x| x.to_string_lossy());
            work_dir.join(format!("{k:04}-{stem}.bc"))
        })
        .collect();
    let jobs = options.jobs.max(1);
    let work: Vec<(&PathBuf, &PathBuf)> = sources.iter().zip(&outputs).collect();
    for chunk in work.chunks(jobs) {
        let results: Vec<Result<(), Error>> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|(s, o)| scope.spawn(move || compile_one(s, options, o)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("compile thread"))
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>, Error>>()?;
    }
    let linked = work_dir.join("linked.bc");
    if outputs.len() == 1 {
        std::fs::copy(&outputs[0], &linked).map_err(|e| Error::Io {
            path: linked.clone(),
            message: e.to_string(),
        })?;
        return Ok(linked);
    }
    let mut command = Command::new(&options.llvm_link);
    command.args(&outputs).arg("-o").arg(&linked);
    let out = run(&options.llvm_link, &mut command)?;
    if !out.status.success() {
        return Err(Error::Link {
            tool: options.llvm_link.display().to_string(),
            message: first_line(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(linked)
}
