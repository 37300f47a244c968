//! How the spec runs the program: the program, its workloads' files, and the invocation of
//! one configuration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use space::{Configuration, Domain};

use super::*;
use crate::Error;

/// Everything needed to start one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    pub program: PathBuf,
    /// The `argv[0]` the program gets (`None`: `program`'s path). Every build of one program
    /// runs with the native program's, so a program that reads its `argv[0]` (gzip walks it)
    /// counts the same instructions in every build, wherever the build lives.
    pub arg0: Option<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Start from [`crate::runner::steady_environment`] instead of knobs' whole environment: what
    /// counted runs do, so that a count does not depend on how knobs was started.
    pub steady_env: bool,
    pub cwd: PathBuf,
    pub stdin: Option<PathBuf>,
    pub timeout: Duration,
}

impl SystemSpec {
    /// The run section, or an error saying the spec describes only a space.
    pub fn run(&self) -> Result<&RunSpec, Error> {
        self.run.as_ref().ok_or_else(|| {
            Error::Invalid(format!(
                "{}: no [run] section: the spec describes a space but not how to run the program",
                self.path.display()
            ))
        })
    }

    /// The workload with this name, or (`None`) the first one meant for measurement.
    pub fn workload(&self, name: Option<&str>) -> Result<&Workload, Error> {
        match name {
            Some(name) => self
                .workloads
                .iter()
                .find(|w| w.name == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = self.workloads.iter().map(|w| w.name.as_str()).collect();
                    Error::Invalid(format!(
                        "{}: no workload `{name}` (defined: {})",
                        self.path.display(),
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ))
                }),
            None => self
                .workloads
                .iter()
                .find(|w| w.purpose == Purpose::Measure)
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "{}: no workload to measure with; add a [[workload]]",
                        self.path.display()
                    ))
                }),
        }
    }

    /// The workload for analysis runs: the first with purpose "analysis", else the one
    /// measured.
    pub fn analysis_workload(&self) -> Result<&Workload, Error> {
        match self
            .workloads
            .iter()
            .find(|w| w.purpose == Purpose::Analysis)
        {
            Some(w) => Ok(w),
            None => self.workload(None),
        }
    }

    /// The working directory runs start in.
    pub fn cwd(&self) -> PathBuf {
        match self.run.as_ref().and_then(|r| r.cwd.as_deref()) {
            Some(cwd) => self.dir.join(cwd),
            None => self.dir.clone(),
        }
    }

    /// Checks that runs can start: a run section, an existing working directory, and the
    /// program. Returns the program's path.
    pub fn check_runnable(&self) -> Result<PathBuf, Error> {
        self.check_cwd()?;
        self.program()
    }

    /// Checks that there is a run section and its working directory exists.
    pub fn check_cwd(&self) -> Result<(), Error> {
        self.run()?;
        let cwd = self.cwd();
        if !cwd.is_dir() {
            return Err(Error::Invalid(format!(
                "{}: working directory `{}` does not exist",
                self.path.display(),
                cwd.display()
            )));
        }
        Ok(())
    }

    /// The program to run: a path relative to the spec's directory, or found on `PATH`.
    pub fn program(&self) -> Result<PathBuf, Error> {
        let program = &self.run()?.program;
        if program.is_empty() && !self.build_options().is_empty() {
            return Err(self.refuse_build_options("running the spec's one program"));
        }
        if program.is_empty() {
            return Err(Error::Invalid(format!(
                "{}: the program is built from [history] (no run.program); measure it at a commit (--commit REV)",
                self.path.display()
            )));
        }
        if program.contains('/') {
            let path = self.dir.join(program);
            if path.is_file() && !is_executable(&path) {
                return Err(Error::Invalid(format!(
                    "program `{}` is not executable (`chmod +x` it)",
                    path.display()
                )));
            }
            if path.is_file() {
                return Ok(path);
            }
            return Err(Error::Invalid(format!(
                "program `{}` does not exist",
                path.display()
            )));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| is_executable(p))
            .ok_or_else(|| Error::Invalid(format!("program `{program}` is not on PATH")))
    }

    /// Makes sure the workload's files exist, running its `prepare` command when one is
    /// missing — or was left by a `prepare` that did not finish. Returns whether `prepare` ran.
    ///
    /// A workload file is complete or absent: after `prepare` succeeds, a marker beside the
    /// files (`.knobs/prepared-WORKLOAD`) records each file's size and SHA-256; files a
    /// `prepare` made without a matching marker (it was killed, or failed half-way) are
    /// removed and made again. A failing `prepare` removes what it wrote; it dies with knobs.
    pub fn prepare_workload(&self, workload: &Workload) -> Result<bool, Error> {
        let cwd = self.cwd();
        let missing = |w: &Workload| w.files.iter().find(|f| !cwd.join(f).exists()).cloned();
        let Some(prepare) = &workload.prepare else {
            return match missing(workload) {
                None => Ok(false),
                Some(first_missing) => Err(Error::Invalid(format!(
                    "workload `{}`: file `{}` is missing (and the workload has no `prepare` command)",
                    workload.name,
                    cwd.join(&first_missing).display()
                ))),
            };
        };
        if workload.files.is_empty() {
            return Ok(false);
        }
        let marker = cwd
            .join(".knobs")
            .join(format!("prepared-{}", marker_name(&workload.name)));
        let digests = |w: &Workload| self.file_digests(w);
        if missing(workload).is_none()
            && let (Ok(recorded), Some(now)) = (std::fs::read_to_string(&marker), digests(workload))
            && recorded == now
        {
            return Ok(false);
        }
        // Incomplete or unchecked: start from nothing.
        let remove_files = || {
            for f in &workload.files {
                let _ = std::fs::remove_file(cwd.join(f));
            }
        };
        let _ = std::fs::remove_file(&marker);
        remove_files();
        let mut command = std::process::Command::new(&prepare[0]);
        command
            .args(&prepare[1..])
            .current_dir(&cwd)
            .stdin(std::process::Stdio::null());
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: `prctl` is async-signal-safe and touches only this (forked) process;
            // nothing else runs between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        let status = command.status().map_err(|e| {
            Error::Invalid(format!(
                "workload `{}`: cannot run prepare command `{}`: {e}",
                workload.name, prepare[0]
            ))
        })?;
        if !status.success() {
            remove_files();
            return Err(Error::Invalid(format!(
                "workload `{}`: prepare command `{}` failed ({status}); what it wrote was removed",
                workload.name,
                prepare.join(" ")
            )));
        }
        if let Some(still) = missing(workload) {
            remove_files();
            return Err(Error::Invalid(format!(
                "workload `{}`: prepare command ran but `{}` is still missing",
                workload.name,
                cwd.join(still).display()
            )));
        }
        let recorded = digests(workload).ok_or_else(|| {
            Error::Invalid(format!(
                "workload `{}`: cannot read the files `prepare` made",
                workload.name
            ))
        })?;
        let write = std::fs::create_dir_all(cwd.join(".knobs"))
            .and_then(|()| std::fs::write(&marker, recorded));
        write.map_err(|e| {
            Error::Invalid(format!(
                "workload `{}`: cannot record the prepared files in {}: {e}",
                workload.name,
                marker.display()
            ))
        })?;
        Ok(true)
    }

    /// Per listed file of the workload: `name<TAB>size<TAB>sha256`; `None` when one cannot
    /// be read.
    fn file_digests(&self, workload: &Workload) -> Option<String> {
        let cwd = self.cwd();
        let mut out = String::new();
        for f in &workload.files {
            let bytes = std::fs::read(cwd.join(f)).ok()?;
            let hex: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            out.push_str(&format!("{f}\t{}\t{hex}\n", bytes.len()));
        }
        Some(out)
    }

    /// A digest of the workload's files as they are now (the first 16 hex digits of a SHA-256
    /// over each file's size and SHA-256), stored with every run so a changed input is
    /// noticed; `None` when the workload lists no files or one cannot be read.
    pub fn workload_digest(&self, workload: &Workload) -> Option<String> {
        if workload.files.is_empty() {
            return None;
        }
        let all = self.file_digests(workload)?;
        let hex: String = Sha256::digest(all.as_bytes())[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(hex)
    }

    /// The command line, environment and input for one configuration and workload.
    pub fn invocation(
        &self,
        config: &Configuration,
        workload: &Workload,
    ) -> Result<Invocation, Error> {
        self.invocation_of(self.program()?, config, workload)
    }

    /// The same for another program with the spec's arguments (an instrumented build).
    pub fn invocation_of(
        &self,
        program: PathBuf,
        config: &Configuration,
        workload: &Workload,
    ) -> Result<Invocation, Error> {
        let run = self.run()?;
        let mut option_argv = Vec::new();
        let mut env: BTreeMap<String, String> = run.env.clone();
        for (i, (option, how)) in self
            .space
            .options()
            .iter()
            .zip(&self.option_args)
            .enumerate()
        {
            let index = config.0[i];
            let value = option.format_value(index);
            match &option.domain {
                Domain::Binary => {
                    option_argv.extend(if index == 1 { &how.on } else { &how.off }.iter().cloned())
                }
                Domain::Numeric { .. } => {
                    option_argv.extend(how.arg.iter().map(|a| a.replace("{value}", &value)))
                }
            }
            for (k, v) in &how.env {
                env.insert(k.clone(), v.replace("{value}", &value));
            }
        }
        for (k, v) in &workload.env {
            env.insert(k.clone(), v.clone());
        }
        let mut args = Vec::new();
        for a in &run.args {
            match a.as_str() {
                "{options}" => args.extend(option_argv.iter().cloned()),
                "{workload}" => args.extend(workload.args.iter().cloned()),
                _ => args.push(a.clone()),
            }
        }
        let cwd = self.cwd();
        let stdin = workload
            .stdin
            .as_ref()
            .or(run.stdin.as_ref())
            .map(|s| cwd.join(s));
        Ok(Invocation {
            steady_env: false,
            arg0: self.program().ok().map(|p| p.display().to_string()),
            program,
            args,
            env: env.into_iter().collect(),
            cwd,
            stdin,
            timeout: Duration::from_secs_f64(run.timeout.unwrap_or(600.0)),
        })
    }
}

/// A workload name as a file name: anything but letters, digits, `-` and `_` becomes `_`.
pub(super) fn marker_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub(super) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::test_support::*;

    #[test]
    fn invocation_expands_options_and_workload() {
        let spec = parse(SPEC).unwrap();
        assert_eq!(spec.name, "demo");
        assert_eq!(spec.measure.repetitions, 2);
        let config = spec.space.parse_configuration("fast,level=5").unwrap();
        let w = spec.workload(None).unwrap();
        assert_eq!(w.name, "real");
        let inv = spec.invocation(&config, w).unwrap();
        assert_eq!(inv.args, ["-n", "--fast", "-5", "--", "big.txt"]);
        assert!(inv.env.contains(&("LEVEL".into(), "5".into())));
        assert!(inv.env.contains(&("LC_ALL".into(), "C".into())));
        assert_eq!(inv.timeout, Duration::from_secs(5));
        let off = spec.space.parse_configuration("level=9").unwrap();
        let small = spec.workload(Some("small")).unwrap();
        assert_eq!(
            spec.invocation(&off, small).unwrap().args,
            ["-n", "--best", "-9", "--", "small.txt"]
        );
    }

    #[test]
    fn integers_beyond_a_float_reach_the_program_exactly() {
        let text = SPEC
            .replace("constraints = [\"fast => !level=9\"]", "")
            .replace(
                "values = [1, 5, 9]",
                "values = [1, 9007199254740993, 9223372036854775807]",
            );
        let spec = parse(&text).unwrap();
        let w = spec.workload(None).unwrap();
        for (value, arg) in [
            ("9007199254740993", "-9007199254740993"),
            ("9223372036854775807", "-9223372036854775807"),
            ("1", "-1"),
        ] {
            let config = spec
                .space
                .parse_configuration(&format!("level={value}"))
                .unwrap();
            let inv = spec.invocation(&config, w).unwrap();
            assert!(
                inv.args.contains(&arg.to_string()),
                "{value}: {:?}",
                inv.args
            );
            // And the store's text for it is exact too.
            assert!(spec.space.format_configuration(&config).contains(value));
        }
        // Two values a float cannot tell apart are an error, not one value.
        let e = parse(&SPEC.replace(
            "values = [1, 5, 9]",
            "values = [9007199254740992, 9007199254740993]",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("too close"), "{e}");
    }

    #[test]
    fn missing_program_and_workload() {
        let spec = parse(&SPEC.replace("/bin/echo", "no-such-program-knobs")).unwrap();
        let e = spec.program().unwrap_err();
        assert!(e.to_string().contains("not on PATH"), "{e}");
        let e = parse(SPEC).unwrap().workload(Some("huge")).unwrap_err();
        assert!(e.to_string().contains("no workload `huge`"), "{e}");
    }

    #[test]
    fn prepare_creates_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let text = SPEC.replace(
            "args = [\"big.txt\"]",
            "args = [\"big.txt\"]\nfiles = [\"big.txt\"]\nprepare = [\"sh\", \"-c\", \"echo hi > big.txt\"]",
        );
        let spec = SystemSpec::parse(&text, &dir.path().join("knobs.toml")).unwrap();
        let w = spec.workload(None).unwrap();
        assert!(spec.prepare_workload(w).unwrap());
        assert!(!spec.prepare_workload(w).unwrap());
        assert!(dir.path().join("big.txt").exists());
        let small = spec.workload(Some("small")).unwrap();
        assert!(
            spec.prepare_workload(small).is_ok(),
            "no files listed: nothing to check"
        );
    }

    #[test]
    fn a_workload_file_is_complete_or_absent() {
        let dir = tempfile::tempdir().unwrap();
        let with_prepare = |prepare: &str| {
            let text = SPEC.replace(
                "args = [\"big.txt\"]",
                &format!("args = [\"big.txt\"]\nfiles = [\"big.txt\"]\nprepare = {prepare}"),
            );
            SystemSpec::parse(&text, &dir.path().join("knobs.toml")).unwrap()
        };
        let big = dir.path().join("big.txt");
        // A prepare that writes a line, then fails: nothing is left behind, and it is an error.
        let spec = with_prepare(r#"["sh", "-c", "echo half > big.txt; exit 3"]"#);
        let w = spec.workload(None).unwrap();
        let e = spec.prepare_workload(w).unwrap_err().to_string();
        assert!(e.contains("failed") && e.contains("removed"), "{e}");
        assert!(!big.exists(), "the partial file was removed");
        // A file a killed prepare left (no marker): made again, whole.
        std::fs::write(&big, "16 of 40 lines\n").unwrap();
        let spec = with_prepare(r#"["sh", "-c", "seq 40 > big.txt"]"#);
        let w = spec.workload(None).unwrap();
        assert!(spec.prepare_workload(w).unwrap(), "redone");
        assert_eq!(std::fs::read_to_string(&big).unwrap().lines().count(), 40);
        assert!(!spec.prepare_workload(w).unwrap(), "complete now: kept");
        // Changed behind knobs' back: made again.
        std::fs::write(&big, "edited\n").unwrap();
        assert!(spec.prepare_workload(w).unwrap());
        assert_eq!(std::fs::read_to_string(&big).unwrap().lines().count(), 40);
    }
}
