//! The best published results of DeepPerf's protocol on its six datasets (the scoreboard),
//! read from `data/published.toml`: per system and sample size, the best published mean
//! relative error with who holds it, and DeepPerf's own mean.

use serde::Deserialize;

use crate::Error;

/// The scoreboard as shipped with the crate.
const PUBLISHED: &str = include_str!("../data/published.toml");

/// One cell of the scoreboard.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub size: usize,
    /// The best published mean MRE (%).
    pub best: f64,
    /// Who published it.
    pub holder: String,
    /// DeepPerf's own mean MRE (%).
    pub deepperf: f64,
}

/// A system's row of the scoreboard.
#[derive(Clone, Debug, PartialEq)]
pub struct System {
    pub name: String,
    pub cells: Vec<Cell>,
}

impl System {
    pub fn sizes(&self) -> Vec<usize> {
        self.cells.iter().map(|c| c.size).collect()
    }

    pub fn cell(&self, size: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.size == size)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    system: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    sizes: Vec<usize>,
    best: Vec<f64>,
    holder: Vec<String>,
    deepperf: Vec<f64>,
}

/// The shipped scoreboard.
pub fn scoreboard() -> Vec<System> {
    parse(PUBLISHED).expect("data/published.toml is checked by the crate's tests")
}

/// The system of the shipped scoreboard with this name (case-insensitive).
pub fn system(name: &str) -> Option<System> {
    scoreboard()
        .into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
}

/// Parses a scoreboard: every system's lists must have one entry per size.
pub fn parse(text: &str) -> Result<Vec<System>, Error> {
    let file: File = toml::from_str(text)
        .map_err(|e| Error::Data(format!("published results: {}", e.message())))?;
    file.system
        .into_iter()
        .map(|e| {
            let n = e.sizes.len();
            for (key, len) in [
                ("best", e.best.len()),
                ("holder", e.holder.len()),
                ("deepperf", e.deepperf.len()),
            ] {
                if len != n {
                    return Err(Error::Data(format!(
                        "published results: system `{}` has {n} sizes but {len} values of `{key}`",
                        e.name
                    )));
                }
            }
            let cells = (0..n)
                .map(|i| Cell {
                    size: e.sizes[i],
                    best: e.best[i],
                    holder: e.holder[i].clone(),
                    deepperf: e.deepperf[i],
                })
                .collect();
            Ok(System {
                name: e.name,
                cells,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_scoreboard_reads_as_transcribed() {
        let board = scoreboard();
        let names: Vec<&str> = board.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Apache", "BDBC", "BDBJ", "LLVM", "x264", "Dune"]);
        assert_eq!(board.iter().map(|s| s.cells.len()).sum::<usize>(), 29);
        let llvm = system("llvm").unwrap();
        assert_eq!(llvm.sizes(), [11, 22, 33, 44, 55]);
        let c = llvm.cell(55).unwrap();
        assert_eq!(
            (c.best, c.holder.as_str(), c.deepperf),
            (1.65, "Perf-AL", 1.99)
        );
        let c = system("x264").unwrap().cell(16).unwrap().clone();
        assert_eq!(
            (c.best, c.holder.as_str(), c.deepperf),
            (8.37, "DaL", 10.43)
        );
        let c = system("Dune").unwrap().cell(375).unwrap().clone();
        assert_eq!(
            (c.best, c.holder.as_str(), c.deepperf),
            (6.49, "Perf-AL", 7.20)
        );
        // The best published value is never worse than DeepPerf's own.
        for s in &board {
            for c in &s.cells {
                assert!(c.best <= c.deepperf, "{} {}", s.name, c.size);
            }
        }
        assert!(system("nginx").is_none());
    }

    #[test]
    fn a_list_of_the_wrong_length_is_named() {
        let text = "[[system]]\nname = \"A\"\nsizes = [1, 2]\nbest = [1.0]\nholder = [\"x\", \"y\"]\ndeepperf = [1.0, 2.0]\n";
        let e = parse(text).unwrap_err().to_string();
        assert_eq!(
            e,
            "published results: system `A` has 2 sizes but 1 values of `best`"
        );
        assert!(parse("[[system]]\nname = 3\n").is_err());
    }
}
