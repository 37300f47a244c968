//! Reading and writing spaces, configurations and datasets.
//!
//! | format | reader |
//! |---|---|
//! | knobs space spec (TOML) | [`spec::parse_spec`] |
//! | SPL Conqueror variability model (XML) | [`splconqueror::parse_variability_model`] |
//! | SPL Conqueror measurements (XML) | [`splconqueror::parse_measurements`] |
//! | DIMACS CNF with `c <id> <name>` lines | [`dimacs::parse_dimacs`] |
//! | dataset CSV (one column per option, performance last) | [`dataset::parse_dataset_csv`] |
//! | configuration CSV (header of option names) | [`read_configurations_csv`], [`write_configurations_csv`] |

pub mod dataset;
pub mod dimacs;
pub mod spec;
pub mod splconqueror;

use std::io::Write;
use std::path::Path;

use crate::Error;
use crate::space::{ConfigSpace, Configuration};
use crate::valid::ValidConfigurations;

/// Most values a numeric option's range or step function may generate: bounds the memory a
/// typo such as a tiny step can take (a space compiles 10^6 values in well under a second).
pub const MAX_GENERATED_VALUES: usize = 1_000_000;

/// A space plus measured configurations: one performance value per configuration.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub space: ConfigSpace,
    pub configurations: Vec<Configuration>,
    pub performance: Vec<f64>,
    /// What was measured (the performance column's name).
    pub metric: String,
}

pub(crate) fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|cause| Error::Io {
        path: path.display().to_string(),
        cause,
    })
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Loads a configuration space, choosing the format by extension: `.toml` (knobs spec),
/// `.xml` (SPL Conqueror variability model), `.dimacs`/`.cnf` (DIMACS), `.csv` (dataset; the
/// space is inferred from its header and values).
pub fn load_space(path: &Path) -> Result<ConfigSpace, Error> {
    let text = read_text(path)?;
    let shown = path.display().to_string();
    let ext = extension(path);
    match ext.as_str() {
        "toml" => spec::parse_spec(&text, &shown),
        "xml" => splconqueror::parse_variability_model(&text, &shown),
        "dimacs" | "cnf" => dimacs::parse_dimacs(&text, &shown),
        "csv" => Ok(dataset::parse_dataset_csv(&text, &shown)?.space),
        _ => Err(Error::format(
            &shown,
            0,
            "unknown space format; expected .toml (knobs spec), .xml (SPL Conqueror), .dimacs/.cnf or .csv (dataset)",
        )),
    }
}

/// Loads measured configurations: a dataset CSV, or SPL Conqueror measurements XML read
/// against the given space.
pub fn load_dataset(path: &Path, space: Option<&ConfigSpace>) -> Result<Dataset, Error> {
    let text = read_text(path)?;
    let shown = path.display().to_string();
    let ext = extension(path);
    match (ext.as_str(), space) {
        ("csv", _) => dataset::parse_dataset_csv(&text, &shown),
        ("xml", Some(space)) => splconqueror::parse_measurements(&text, &shown, space),
        ("xml", None) => Err(Error::format(
            &shown,
            0,
            "SPL Conqueror measurements need their variability model",
        )),
        _ => Err(Error::format(
            &shown,
            0,
            "unknown dataset format; expected .csv or SPL Conqueror .xml",
        )),
    }
}

/// Reads configurations from a CSV whose header names every option of the space (extra
/// columns, such as a performance column, are ignored). Each row must be a valid
/// configuration; the error names the line and the broken rule.
pub fn read_configurations_csv(
    valid: &ValidConfigurations,
    path: &Path,
) -> Result<Vec<Configuration>, Error> {
    let text = read_text(path)?;
    parse_configurations_csv(valid, &text, &path.display().to_string())
}

pub fn parse_configurations_csv(
    valid: &ValidConfigurations,
    text: &str,
    shown: &str,
) -> Result<Vec<Configuration>, Error> {
    let space = valid.space();
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| csv_error(shown, &e))?.clone();
    let columns: Vec<usize> = space
        .options()
        .iter()
        .map(|o| {
            header.iter().position(|h| h == o.name).ok_or_else(|| {
                Error::format(shown, 1, format!("no column for option `{}`", o.name))
            })
        })
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(shown, &e))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let cells = columns
            .iter()
            .map(|&c| {
                let cell = record.get(c).unwrap_or("");
                cell.parse::<f64>().map_err(|_| {
                    Error::format(
                        shown,
                        line,
                        format!("`{cell}` is not a number (column `{}`)", &header[c]),
                    )
                })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        let config = space
            .configuration_from_values(&cells)
            .map_err(|e| Error::format(shown, line, e.to_string()))?;
        if let Some(rule) = space.violations(&config).first() {
            return Err(Error::format(
                shown,
                line,
                format!("invalid configuration: {}", rule.why),
            ));
        }
        out.push(config);
    }
    Ok(out)
}

pub(crate) fn csv_error(shown: &str, e: &csv::Error) -> Error {
    let line = e.position().map_or(0, |p| p.line() as usize);
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            format!("row has {len} fields but the header has {expected_len}")
        }
        _ => e.to_string(),
    };
    Error::format(shown, line, message)
}

/// Writes configurations as CSV: a header of option names, then one row per configuration
/// (0/1 for binary options, the value for numeric ones).
pub fn write_configurations_csv(
    space: &ConfigSpace,
    configs: &[Configuration],
    out: &mut impl Write,
) -> std::io::Result<()> {
    write_rows(space, configs, None, out)
}

/// Writes a dataset in the layout `load_dataset` reads (and the DeepPerf datasets use): the
/// configuration columns and a final performance column named after the metric.
pub fn write_dataset_csv(data: &Dataset, out: &mut impl Write) -> std::io::Result<()> {
    write_rows(
        &data.space,
        &data.configurations,
        Some((&data.metric, &data.performance)),
        out,
    )
}

fn write_rows(
    space: &ConfigSpace,
    configs: &[Configuration],
    performance: Option<(&str, &[f64])>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let mut header = space.names().join(",");
    if let Some((metric, _)) = performance {
        header = format!("{header},{metric}");
    }
    writeln!(out, "{header}")?;
    for (i, c) in configs.iter().enumerate() {
        let mut row: Vec<String> = space
            .options()
            .iter()
            .zip(&c.0)
            .map(|(o, v)| o.format_value(*v))
            .collect();
        if let Some((_, values)) = performance {
            row.push(format!("{}", values[i]));
        }
        writeln!(out, "{}", row.join(","))?;
    }
    Ok(())
}
