//! The dataset CSVs `knobs results export` writes (one column per option, the metric's
//! median last), and the few statistics the rows need.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use space::formats::dataset::parse_dataset_csv;

/// A dataset CSV: option columns and one performance value per configuration.
#[derive(Clone, Debug, Default)]
pub struct Data {
    pub options: Vec<String>,
    /// The last column's name (e.g. `wall_s`).
    pub metric: String,
    pub rows: Vec<(Vec<f64>, f64)>,
}

impl Data {
    pub fn read(path: &Path) -> Result<Data> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Data::parse_named(&text, &path.display().to_string())
    }

    pub fn parse(text: &str) -> Result<Data> {
        Data::parse_named(text, "dataset CSV")
    }

    /// Reads the CSV with `space`'s dataset reader; `shown` names it in errors.
    fn parse_named(text: &str, shown: &str) -> Result<Data> {
        let d = parse_dataset_csv(text, shown)?;
        Ok(Data {
            options: d.space.names().iter().map(|n| n.to_string()).collect(),
            rows: d
                .configurations
                .iter()
                .map(|c| d.space.values(c))
                .zip(d.performance)
                .collect(),
            metric: d.metric,
        })
    }

    /// Σ of the performance column (Σ values: the measurement time of these configurations).
    pub fn sum(&self) -> f64 {
        self.rows.iter().map(|(_, v)| v).sum()
    }

    /// Whether the performance column is a time in seconds (`wall_s`, `cpu_s`, …), not a
    /// count such as `instructions`.
    pub fn is_seconds(&self) -> bool {
        self.metric.ends_with("_s")
    }

    /// Σ values when they are seconds: what measuring these configurations costs.
    pub fn seconds(&self) -> Option<f64> {
        self.is_seconds().then(|| self.sum())
    }

    /// The performance per configuration, keyed by [`key`].
    pub fn by_configuration(&self) -> HashMap<String, f64> {
        self.rows.iter().map(|(c, v)| (key(c), *v)).collect()
    }

    /// Writes the configurations alone (a header of option names, no performance column):
    /// what `knobs predict` reads.
    pub fn write_configurations(&self, path: &Path) -> Result<()> {
        self.write_csv(path, false)
    }

    /// The same configurations with `f` applied to each performance value.
    pub fn map_values(&self, f: impl Fn(f64) -> f64) -> Data {
        Data {
            rows: self.rows.iter().map(|(c, v)| (c.clone(), f(*v))).collect(),
            ..self.clone()
        }
    }

    /// Writes the dataset CSV [`Data::read`] reads back.
    pub fn write(&self, path: &Path) -> Result<()> {
        self.write_csv(path, true)
    }

    /// The option columns, and the performance column when `with_metric`.
    fn write_csv(&self, path: &Path, with_metric: bool) -> Result<()> {
        let mut text = self.options.join(",");
        if with_metric {
            text.push(',');
            text.push_str(&self.metric);
        }
        text.push('\n');
        for (c, v) in &self.rows {
            text.push_str(&key(c));
            if with_metric {
                text.push(',');
                text.push_str(&v.to_string());
            }
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }

    /// A configuration given by option name, in this data's column order; `None` when an
    /// option of the data is missing.
    pub fn ordered(&self, named: &HashMap<String, f64>) -> Option<Vec<f64>> {
        self.options.iter().map(|o| named.get(o).copied()).collect()
    }
}

/// A configuration's values as a lookup key.
pub fn key(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The last column of `knobs predict`'s CSV (`prediction`), one number per line.
pub fn predictions(csv: &str) -> Result<Vec<f64>> {
    let mut lines = csv.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().context("no header")?;
    if header.rsplit(',').next().map(str::trim) != Some("prediction") {
        bail!("the last column is not `prediction`: {header}");
    }
    lines
        .enumerate()
        .map(|(i, l)| {
            let cell = l.rsplit(',').next().unwrap_or("").trim();
            cell.parse::<f64>()
                .with_context(|| format!("line {}: `{cell}` is not a number", i + 2))
        })
        .collect()
}

/// Per configuration both have, `a / b`: the ratios of one build's medians to another's.
pub fn ratios(a: &Data, b: &Data) -> Vec<f64> {
    let b = b.by_configuration();
    a.rows
        .iter()
        .filter_map(|(c, v)| Some(v / b.get(&key(c))?))
        .collect()
}

/// Per configuration both have, `a`'s absolute percentage error against `b`.
pub fn percentage_errors(a: &Data, b: &Data) -> Vec<f64> {
    ratios(a, b)
        .iter()
        .map(|r| (r - 1.0).abs() * 100.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_export() {
        let d = Data::parse("A,B,level,wall_s\n0,1,6,0.5\n1,1,9,1.5\n").unwrap();
        assert_eq!(d.options, ["A", "B", "level"]);
        assert_eq!(d.metric, "wall_s");
        assert_eq!(d.sum(), 2.0);
        let named: HashMap<String, f64> = [
            ("level".to_string(), 9.0),
            ("A".into(), 1.0),
            ("B".into(), 1.0),
        ]
        .into();
        let c = d.ordered(&named).unwrap();
        assert_eq!(d.by_configuration()[&key(&c)], 1.5);
        assert!(Data::parse("A,wall_s\n0,x\n").is_err());
    }

    #[test]
    fn configurations_and_predictions() {
        let d = Data::parse("A,level,wall_s\n0,6,0.5\n1,9,1.5\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.csv");
        d.write_configurations(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "A,level\n0,6\n1,9\n"
        );
        assert_eq!(
            predictions("A,level,prediction\n0,6,0.25\n1,9,2\n").unwrap(),
            [0.25, 2.0]
        );
        assert!(predictions("A,level\n0,6\n").is_err());
        assert!(predictions("A,prediction\n0,x\n").is_err());
    }

    #[test]
    fn a_mapped_copy_reads_back() {
        let d = Data::parse("A,level,wall_s\n0,6,1.5\n1,9,3\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.csv");
        d.map_values(|t| (t - 0.5) / 2.0).write(&path).unwrap();
        let back = Data::read(&path).unwrap();
        assert_eq!(back.options, d.options);
        assert_eq!(back.metric, "wall_s");
        assert_eq!(back.rows, [(vec![0.0, 6.0], 0.5), (vec![1.0, 9.0], 1.25)]);
    }

    #[test]
    fn ratios_per_configuration() {
        let a = Data::parse("A,wall_s\n0,2\n1,3\n").unwrap();
        let b = Data::parse("A,wall_s\n1,1.5\n").unwrap();
        assert_eq!(ratios(&a, &b), [2.0]);
        assert_eq!(percentage_errors(&a, &b), [100.0]);
        assert_eq!(percentage_errors(&b, &a), [50.0]);
    }
}
