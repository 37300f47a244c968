//! The files the encoding reads: the spec's `[build] sources` and every header they include
//! with quotes (found beside the including file or in `[build] include`), recursively, so a
//! feature tested in a header is encoded there too. Paths stay relative to the spec's
//! directory, as the encoded copies are written under the same relative paths.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use variants::SourceFile;

use crate::Error;

/// The files, and the headers outside the spec's directory (read from where they are, not
/// encoded).
pub fn read(spec: &measure::SystemSpec) -> Result<(Vec<SourceFile>, Vec<SourceFile>), Error> {
    let Some(build) = spec.build.as_ref().filter(|b| !b.sources.is_empty()) else {
        return Err(Error::Invalid(format!(
            "{}: the variant simulator encodes C sources: give [build] sources",
            spec.path.display()
        )));
    };
    let mut seen = BTreeSet::new();
    let mut queue: Vec<PathBuf> = build.sources.iter().map(PathBuf::from).collect();
    let mut files = Vec::new();
    let mut outside = Vec::new();
    while let Some(relative) = queue.pop() {
        if !seen.insert(relative.clone()) {
            continue;
        }
        let path = spec.dir.join(&relative);
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io { path, source })?;
        for include in quoted_includes(&text) {
            let beside = relative.parent().unwrap_or(Path::new("")).join(&include);
            let found = std::iter::once(beside)
                .chain(
                    build
                        .include
                        .iter()
                        .map(|dir| Path::new(dir).join(&include)),
                )
                .find(|candidate| spec.dir.join(candidate).is_file());
            if let Some(found) = found.filter(|f| !f.is_absolute()) {
                queue.push(normalise(&found));
            }
        }
        let file = SourceFile {
            path: relative.display().to_string(),
            text,
        };
        if relative.starts_with("..") {
            outside.push(file);
        } else {
            files.push(file);
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((files, outside))
}

fn quoted_includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line
                .trim_start()
                .strip_prefix('#')?
                .trim_start()
                .strip_prefix("include")?;
            let rest = rest.trim_start().strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

/// `a/./b/../c.h` → `a/c.h`, so one header is read once.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
