//! Dataset CSV in the DeepPerf layout: a header with one column per option and a final
//! performance column; one row per measured configuration. The space is inferred: a column
//! holding only 0 and 1 is a binary option, any other column a numeric option whose values
//! are the distinct values seen. Nothing is known about constraints, so the inferred space
//! has none.

use crate::Error;
use crate::formats::{Dataset, csv_error};
use crate::space::{ConfigSpace, Configuration};

pub fn parse_dataset_csv(text: &str, shown: &str) -> Result<Dataset, Error> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| csv_error(shown, &e))?.clone();
    if header.len() < 2 {
        return Err(Error::format(
            shown,
            1,
            "a dataset needs at least one option column and a performance column",
        ));
    }
    let n = header.len() - 1;
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(shown, &e))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let row = record
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                cell.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| {
                        Error::format(
                            shown,
                            line,
                            format!("`{cell}` is not a number (column `{}`)", &header[i]),
                        )
                    })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(Error::format(shown, 0, "the dataset has no rows"));
    }
    let stem = std::path::Path::new(shown)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("dataset");
    let mut space = ConfigSpace::new(stem);
    for (i, name) in header.iter().take(n).enumerate() {
        let values: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        let result = if values.iter().all(|v| *v == 0.0 || *v == 1.0) {
            space.add_binary(name, None, false)
        } else {
            space.add_numeric(name, &values)
        };
        result.map_err(|e| Error::format(shown, 1, e.to_string()))?;
    }
    let configurations = rows
        .iter()
        .map(|r| space.configuration_from_values(&r[..n]))
        .collect::<Result<Vec<Configuration>, _>>()?;
    let performance = rows.iter().map(|r| r[n]).collect();
    Ok(Dataset {
        space,
        configurations,
        performance,
        metric: header[n].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infers_binary_and_numeric_options() {
        let d = parse_dataset_csv("a,b,level,PERF\n0,1,3,10.5\n1,0,6.5,2\n", "d.csv").unwrap();
        assert_eq!(d.space.names(), vec!["a", "b", "level"]);
        assert!(d.space.options()[0].is_binary());
        assert!(!d.space.options()[2].is_binary());
        assert_eq!(d.performance, vec![10.5, 2.0]);
        assert_eq!(d.metric, "PERF");
        assert_eq!(d.configurations[1].0, vec![1, 0, 1]);
    }

    #[test]
    fn bad_rows_name_the_line() {
        let e = parse_dataset_csv("a,PERF\n0,1\n1\n", "d.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.csv:3: row has 1 fields but the header has 2"
        );
        let e = parse_dataset_csv("a,PERF\n0,1\nx,2\n", "d.csv").unwrap_err();
        assert_eq!(e.to_string(), "d.csv:3: `x` is not a number (column `a`)");
    }
}
