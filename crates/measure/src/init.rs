//! `knobs init`: a starting system spec for a command line. Arguments that name existing
//! files become the workload; the program's `--help` output, when it has one, is mined for
//! flags, which are written as commented-out option suggestions for the user to pick from.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A flag found in `--help` output.
#[derive(Clone, Debug, PartialEq)]
pub struct HelpFlag {
    /// The flag as written on the command line, e.g. `--extreme` or `-e`.
    pub flag: String,
    /// The placeholder of a flag that takes a value (`--threads=NUM` → `NUM`).
    pub value: Option<String>,
    pub help: String,
}

/// Flags listed in GNU-style help text: lines starting with `-x, --long[=VALUE]  text`.
pub fn parse_help(text: &str) -> Vec<HelpFlag> {
    let mut flags: Vec<HelpFlag> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('-') || line.len() == trimmed.len() {
            continue;
        }
        // The flag part ends at the first run of two spaces (or the end of the line).
        let (names, help) = match trimmed.find("  ") {
            Some(i) => (&trimmed[..i], trimmed[i..].trim()),
            None => (trimmed, ""),
        };
        let mut best: Option<(String, Option<String>)> = None;
        for part in names.split([',', ' ']).filter(|p| p.starts_with('-')) {
            let (flag, value) = match part.split_once(['=', '[']) {
                Some((f, v)) => (
                    f.to_string(),
                    Some(v.trim_matches(|c| "[]=<>".contains(c)).to_string()),
                ),
                None => (part.to_string(), None),
            };
            let valid = flag.len() > 1
                && flag
                    .trim_start_matches('-')
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-');
            // Prefer the long form: it says what it does.
            if valid
                && best
                    .as_ref()
                    .is_none_or(|(f, _)| flag.starts_with("--") && !f.starts_with("--"))
            {
                let value = value.or_else(|| best.as_ref().and_then(|(_, v)| v.clone()));
                best = Some((flag, value));
            }
        }
        if let Some((flag, value)) = best
            && !["--help", "--version", "-h", "-V"].contains(&flag.as_str())
            && !flags.iter().any(|f| f.flag == flag)
        {
            flags.push(HelpFlag {
                flag,
                value: value.filter(|v| !v.is_empty()),
                help: help.to_string(),
            });
        }
    }
    flags
}

/// The program's `--help` output (standard output, else standard error), if it prints one
/// within two seconds.
pub fn help_text(program: &str) -> Option<String> {
    let mut child = Command::new(program)
        .arg("--help")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut out = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let stdout = reader.join().ok()?;
    if !stdout.trim().is_empty() {
        return Some(stdout);
    }
    let mut err = String::new();
    child.stderr.take()?.read_to_string(&mut err).ok()?;
    (!err.trim().is_empty()).then_some(err)
}

use std::os::unix::process::CommandExt;

/// A TOML basic string on one line: every control character escaped (a JSON string is one),
/// so it also fits in a comment.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| toml_string(s)).collect();
    format!("[{}]", quoted.join(", "))
}

/// An option name from a flag: `--block-size` → `block_size`.
fn option_name(flag: &str) -> String {
    flag.trim_start_matches('-').replace('-', "_")
}

/// Writes the text of a starting spec for `command` (program and arguments), run from
/// `dir`. `help` is the program's help text, if any.
pub fn starting_spec(command: &[String], dir: &Path, help: Option<&str>) -> String {
    let program = &command[0];
    let name = Path::new(program)
        .file_name()
        .map_or("program".into(), |n| n.to_string_lossy().into_owned());
    let mut args = vec!["{options}".to_string()];
    let mut files = Vec::new();
    for a in &command[1..] {
        if dir.join(a).is_file() {
            if !files.is_empty() {
                // Consecutive inputs share the one `{workload}` placeholder.
                files.push(a.clone());
                continue;
            }
            files.push(a.clone());
            args.push("{workload}".into());
        } else {
            args.push(a.clone());
        }
    }
    let mut out = String::new();
    out.push_str(&format!(
        "# knobs system spec for `{}`, written by `knobs init`.\n\
         # Edit the options below, then: knobs space show knobs.toml; knobs measure --sample pairwise\n\
         # Every key is described in docs/system-spec.md.\n\n\
         name = {}\n\n\
         # Cross-tree constraints between options, e.g. \"a => !b\", \"level=9 => !fast\".\n\
         constraints = []\n\n",
        command.join(" ").escape_debug(),
        toml_string(&name)
    ));
    out.push_str(&format!(
        "[run]\n\
         # Started directly, never through a shell. `{{options}}` expands to the arguments of the\n\
         # selected options, `{{workload}}` to the workload's arguments.\n\
         program = {}\n\
         args = {}\n\
         # stdin = \"input.txt\"         # feed a file to standard input\n\
         # cwd = \".\"                   # working directory, relative to this file\n\
         # env = {{ LC_ALL = \"C\" }}\n\
         timeout = 600                  # seconds; the whole process group is killed\n\n",
        toml_string(program),
        toml_list(&args)
    ));
    out.push_str(
        "[measure]\n\
         repetitions = 3                # recorded runs per configuration\n\
         warmup = 0                     # unrecorded rounds first\n\
         max_cv = 0.05                  # flag configurations noisier than this\n\
         metric = \"auto\"                # auto (CPU time if CPU-bound, else wall), wall, cpu, ...\n\
         # adaptive = true              # repeat until the 95 % CI is within `ci` of the mean\n\
         # ci = 0.02\n\
         # max_repetitions = 10\n\n",
    );
    out.push_str(&format!(
        "[[workload]]\n\
         name = \"real\"                  # measured by `knobs measure`\n\
         args = {}\n\
         files = {}\n\
         # prepare = [\"sh\", \"make-input.sh\"]   # creates missing files\n\n\
         # [[workload]]\n\
         # name = \"small\"\n\
         # purpose = \"analysis\"          # a quick input for analysis runs\n\
         # args = [\"small-input\"]\n\n",
        toml_list(&files),
        toml_list(&files)
    ));
    out.push_str(
        "# Options. A binary option has `on` (and optionally `off`) arguments; a numeric option\n\
         # lists `values` (or a `range`) and an `arg` with `{value}`. `env` sets variables instead.\n\
         # Structure: `parent = \"x\"`, `mandatory = true`, and [[group]] kind = \"alternative\".\n",
    );
    let flags = help.map(parse_help).unwrap_or_default();
    if flags.is_empty() {
        out.push_str(
            "\n# [[option]]\n# name = \"fast\"\n# on = [\"--fast\"]\n\n\
             # [[option]]\n# name = \"level\"\n# values = [1, 5, 9]\n# arg = [\"-{value}\"]\n",
        );
    } else {
        out.push_str(&format!(
            "# Suggestions from `{name} --help` (uncomment what you want to study):\n"
        ));
        for f in &flags {
            out.push_str(&format!(
                "\n# [[option]]\n# name = {}\n",
                toml_string(&option_name(&f.flag))
            ));
            if !f.help.is_empty() {
                out.push_str(&format!("# help = {}\n", toml_string(&f.help)));
            }
            match &f.value {
                None => out.push_str(&format!("# on = [{}]\n", toml_string(&f.flag))),
                Some(v) => {
                    let joined = if f.flag.starts_with("--") {
                        format!("{}={{value}}", f.flag)
                    } else {
                        format!("{}{{value}}", f.flag)
                    };
                    out.push_str(&format!(
                        "# values = []                 # the values of {v} to study\n# arg = [{}]\n",
                        toml_string(&joined)
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SystemSpec;

    const HELP: &str = "Usage: xz [OPTION]... [FILE]...
Compress or decompress FILEs in the .xz format.

  -z, --compress      force compression
  -k, --keep          keep (don't delete) input files
  -0 ... -9           compression preset; default is 6
  -e, --extreme       try to improve compression ratio by using more CPU time
  -T, --threads=NUM   use at most NUM threads; the default is 1
      --block-size=SIZE
                      start a new .xz block after every SIZE bytes of input
  -h, --help          display this short help and exit
";

    #[test]
    fn finds_flags_in_gnu_help() {
        let flags = parse_help(HELP);
        let names: Vec<&str> = flags.iter().map(|f| f.flag.as_str()).collect();
        assert_eq!(
            names,
            [
                "--compress",
                "--keep",
                "-0",
                "--extreme",
                "--threads",
                "--block-size"
            ]
        );
        let threads = &flags[4];
        assert_eq!(threads.value.as_deref(), Some("NUM"));
        assert!(threads.help.starts_with("use at most"));
    }

    #[test]
    fn starting_spec_parses_and_runs_the_command() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("input.txt"), "data").unwrap();
        let command: Vec<String> = ["xz", "-c", "input.txt"].map(String::from).to_vec();
        let text = starting_spec(&command, dir.path(), Some(HELP));
        let path = dir.path().join("knobs.toml");
        let spec = SystemSpec::parse(&text, &path).unwrap();
        assert_eq!(spec.name, "xz");
        let run = spec.run().unwrap();
        assert_eq!(run.args, ["{options}", "-c", "{workload}"]);
        let w = spec.workload(None).unwrap();
        assert_eq!(w.args, ["input.txt"]);
        assert!(text.contains("# on = [\"--extreme\"]"), "{text}");
        assert!(text.contains("# arg = [\"--threads={value}\"]"), "{text}");
        // Uncommenting a suggestion gives a working option.
        let edited = text
            .replace(
                "# [[option]]\n# name = \"extreme\"",
                "[[option]]\nname = \"extreme\"",
            )
            .replace("# help = \"try to improve", "help = \"try to improve")
            .replace("# on = [\"--extreme\"]", "on = [\"--extreme\"]");
        let spec = SystemSpec::parse(&edited, &path).unwrap();
        assert_eq!(spec.space.len(), 1);
    }
}
