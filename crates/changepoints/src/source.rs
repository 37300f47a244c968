//! Where measurements come from. The search asks a [`MeasurementSource`] for the performance of a
//! configuration at some commits; three sources answer: a synthetic system
//! ([`crate::synthetic`]), a recorded history ([`RecordedHistory`], a CSV of commit ×
//! configuration measurements, replayed as the paper replays its pre-study), and real
//! builds and runs through the results store (in the `knobs` binary, which owns building).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use space::{ConfigSpace, Configuration};

use crate::Error;

/// One measured commit of a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Observation {
    pub commit: usize,
    pub value: f64,
}

/// What a commit is, for reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CommitInfo {
    pub id: String,
    pub date: String,
    pub subject: String,
}

pub trait MeasurementSource {
    fn space(&self) -> &ConfigSpace;

    /// Commits on the analysed line, numbered `0..commits()` oldest first.
    fn commits(&self) -> usize;

    /// What the source calls commit 0 of the search: a recorded history starts where its
    /// records do. A [`crate::Detection`] reports commits in the source's numbering.
    fn first_commit(&self) -> usize {
        0
    }

    /// The configuration to measure in place of `wanted`, which the search has not used
    /// yet: `wanted` itself where any configuration can be measured; `None` when nothing
    /// is left to measure.
    fn substitute(
        &mut self,
        wanted: &Configuration,
        used: &HashSet<Configuration>,
    ) -> Option<Configuration> {
        (!used.contains(wanted)).then(|| wanted.clone())
    }

    /// The only configurations this source can measure, when it has a fixed set (a recorded
    /// history); `None`: any valid configuration.
    fn measurable(&self) -> Option<&[Configuration]> {
        None
    }

    /// The performance of `config` at each of `commits` (distinct, in range).
    fn measure(
        &mut self,
        config: &Configuration,
        commits: &[usize],
    ) -> Result<Vec<Observation>, Error>;

    /// The performance of each configuration at its commits: everything one step of the
    /// search wants, asked for at once, so that a source with a queue (a cluster) can submit
    /// it as one batch. One list of observations per request, in order; the default asks
    /// [`MeasurementSource::measure`] request by request, in order.
    fn measure_batch(
        &mut self,
        requests: &[(Configuration, Vec<usize>)],
    ) -> Result<Vec<Vec<Observation>>, Error> {
        requests
            .iter()
            .map(|(config, commits)| self.measure(config, commits))
            .collect()
    }

    /// `commit` is a commit of the search (`0..commits()`).
    fn commit_info(&self, commit: usize) -> CommitInfo {
        CommitInfo {
            id: (commit + self.first_commit()).to_string(),
            ..CommitInfo::default()
        }
    }
}

/// A recorded history: measurements of some configurations at some commits, from a CSV
/// with a `commit` column (commit index, 0 = oldest), one column per option (0/1 for binary
/// options, values for numeric ones) and a performance column: `perf` where there is one,
/// otherwise the last column. An optional `commit_id` column names the commits; a
/// `config_id` column and an unnamed first column (a row index, as pandas writes it) are
/// skipped. An empty performance cell is a missing measurement. The reference
/// implementation's published `realworld/data/*_performance.csv` reads as it is.
///
/// The history searched is the recorded range, from the first commit with a measurement to
/// the last; [`MeasurementSource::first_commit`] says where it starts. A requested configuration that
/// was not recorded is replaced by the closest recorded one not used yet (Hamming distance
/// over option values, §4.2.2); a commit not recorded for a configuration takes the closest
/// earlier recorded commit (as the pre-study reports the last commit that built for one that
/// did not, §4.2.1).
pub struct RecordedHistory {
    space: ConfigSpace,
    /// The first recorded commit: commit `c` of the search is commit `first + c` of the file.
    first: usize,
    commits: usize,
    /// Per recorded configuration, its measurements by commit (of the search).
    histories: HashMap<Configuration, BTreeMap<usize, f64>>,
    /// Recorded configurations in file order (for deterministic substitution).
    order: Vec<Configuration>,
    ids: BTreeMap<usize, String>,
}

/// Where the columns of a recorded history are.
struct Columns {
    commit: usize,
    commit_id: Option<usize>,
    performance: usize,
    options: Vec<usize>,
}

impl Columns {
    fn find(header: &csv::StringRecord) -> Result<Columns, String> {
        let named = |name: &str| header.iter().position(|h| h == name);
        let commit = named("commit").ok_or("a `commit` column is needed")?;
        let commit_id = named("commit_id");
        let skipped = |i: usize| (i == 0 && header[0].is_empty()) || Some(i) == named("config_id");
        let performance = match named("perf") {
            Some(p) => p,
            None => (0..header.len())
                .rev()
                .find(|i| *i != commit && Some(*i) != commit_id && !skipped(*i))
                .ok_or("a performance column is needed")?,
        };
        let options: Vec<usize> = (0..header.len())
            .filter(|i| *i != commit && Some(*i) != commit_id && *i != performance && !skipped(*i))
            .collect();
        if options.is_empty() {
            return Err("no option columns (expected commit, options…, performance)".into());
        }
        Ok(Columns {
            commit,
            commit_id,
            performance,
            options,
        })
    }
}

impl RecordedHistory {
    pub fn parse(text: &str, shown: &str) -> Result<RecordedHistory, Error> {
        let err = |line: usize, m: String| Error::Invalid(format!("{shown}:{line}: {m}"));
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let header = reader.headers().map_err(|e| err(1, e.to_string()))?.clone();
        let columns = Columns::find(&header).map_err(|m| err(1, m))?;
        // The commit columns are read here; the rest is a dataset CSV, which `space` reads
        // (and infers the options of) as it reads any other.
        let mut rest = csv::Writer::from_writer(Vec::new());
        let io = |e: csv::Error| err(0, e.to_string());
        let kept = |r: &csv::StringRecord| -> Vec<String> {
            columns
                .options
                .iter()
                .chain([&columns.performance])
                .map(|i| r.get(*i).unwrap_or("").to_string())
                .collect()
        };
        rest.write_record(kept(&header)).map_err(io)?;
        let mut row_commits = Vec::new();
        let mut ids = BTreeMap::new();
        for record in reader.records() {
            let record = record.map_err(io)?;
            let line = record.position().map_or(0, |p| p.line() as usize);
            let cell = &record[columns.commit];
            let commit: usize = cell
                .parse()
                .map_err(|_| err(line, format!("`{cell}` is not a commit index")))?;
            if commit > 10_000_000 {
                return Err(err(line, format!("commit index {commit} is too large")));
            }
            if let Some(i) = columns.commit_id {
                ids.insert(commit, record[i].to_string());
            }
            if record[columns.performance].is_empty() {
                continue;
            }
            row_commits.push(commit);
            rest.write_record(kept(&record)).map_err(io)?;
        }
        let rest = rest.into_inner().map_err(|e| err(0, e.to_string()))?;
        let options_only = String::from_utf8(rest).map_err(|e| err(0, e.to_string()))?;
        let data = space::formats::dataset::parse_dataset_csv(&options_only, shown)?;
        let first = row_commits.iter().copied().min().unwrap_or(0);
        let last = row_commits.iter().copied().max().unwrap_or(0);
        let mut histories: HashMap<Configuration, BTreeMap<usize, f64>> = HashMap::new();
        let mut order = Vec::new();
        for ((config, value), commit) in data
            .configurations
            .into_iter()
            .zip(data.performance)
            .zip(&row_commits)
        {
            let history = histories.entry(config.clone()).or_insert_with(|| {
                order.push(config);
                BTreeMap::new()
            });
            history.insert(commit - first, value);
        }
        Ok(RecordedHistory {
            space: data.space,
            first,
            commits: last - first + 1,
            histories,
            order,
            ids,
        })
    }

    /// Recorded configurations, in file order.
    pub fn configurations(&self) -> &[Configuration] {
        &self.order
    }
}

fn hamming(a: &Configuration, b: &Configuration) -> usize {
    a.0.iter().zip(&b.0).filter(|(x, y)| x != y).count()
}

impl MeasurementSource for RecordedHistory {
    fn space(&self) -> &ConfigSpace {
        &self.space
    }

    fn commits(&self) -> usize {
        self.commits
    }

    fn substitute(
        &mut self,
        wanted: &Configuration,
        used: &HashSet<Configuration>,
    ) -> Option<Configuration> {
        self.order
            .iter()
            .filter(|c| !used.contains(*c))
            .min_by_key(|c| hamming(c, wanted))
            .cloned()
    }

    fn measure(
        &mut self,
        config: &Configuration,
        commits: &[usize],
    ) -> Result<Vec<Observation>, Error> {
        let history = self.histories.get(config).ok_or_else(|| {
            Error::Invalid(format!(
                "configuration `{}` is not in the recorded history",
                self.space.format_configuration(config)
            ))
        })?;
        let mut out = Vec::new();
        for &commit in commits {
            // The closest earlier recorded commit stands for one not recorded; before the
            // first recorded one there is nothing to replay.
            if let Some((_, v)) = history.range(..=commit).next_back() {
                out.push(Observation { commit, value: *v });
            }
        }
        Ok(out)
    }

    fn first_commit(&self) -> usize {
        self.first
    }

    fn measurable(&self) -> Option<&[Configuration]> {
        Some(&self.order)
    }

    fn commit_info(&self, commit: usize) -> CommitInfo {
        let commit = commit + self.first;
        CommitInfo {
            id: self
                .ids
                .get(&commit)
                .cloned()
                .unwrap_or_else(|| commit.to_string()),
            ..CommitInfo::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_history_substitutes_the_closest_unused_configuration() {
        let csv = "commit,a,b,c,time\n0,0,0,0,1\n5,0,0,0,2\n0,1,1,0,3\n9,1,1,0,4\n";
        let mut h = RecordedHistory::parse(csv, "h.csv").unwrap();
        assert_eq!(h.commits(), 10);
        let wanted = h.space().parse_configuration("a,b,c").unwrap();
        let mut used = HashSet::new();
        let first = h.substitute(&wanted, &used).unwrap();
        assert_eq!(h.space().format_configuration(&first), "a,b");
        used.insert(first.clone());
        let second = h.substitute(&wanted, &used).unwrap();
        assert_eq!(h.space().format_configuration(&second), "");
        used.insert(second.clone());
        assert!(h.substitute(&wanted, &used).is_none());
        let obs = h.measure(&second, &[0, 3, 7]).unwrap();
        assert_eq!(
            obs.iter().map(|o| o.value).collect::<Vec<_>>(),
            vec![1.0, 1.0, 2.0]
        );
        let obs = h.measure(&first, &[8]).unwrap();
        assert_eq!(obs[0].value, 3.0);
    }

    #[test]
    fn the_published_format_reads_as_it_is_and_only_its_recorded_range_is_searched() {
        // The reference's realworld/data/*_performance.csv: a pandas index column, options,
        // commit, perf (empty: not measured), config_id.
        let csv = ",a,b,commit,perf,config_id\n\
                   0,0,1,0,,0\n1,0,1,3,,0\n2,0,1,4,2.5,0\n3,0,1,6,3.5,0\n\
                   4,1,0,5,7,1\n5,1,0,7,8,1\n6,1,1,7,,2\n";
        let mut h = RecordedHistory::parse(csv, "p.csv").unwrap();
        assert_eq!((h.first_commit(), h.commits()), (4, 4));
        let names: Vec<&str> = h
            .space()
            .options()
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        // Configuration 2 has no measurement: it is not a recorded configuration.
        assert_eq!(h.configurations().len(), 2);
        let b = h.configurations()[0].clone();
        assert_eq!(h.space().format_configuration(&b), "b");
        // Search commit 1 is file commit 5, not recorded for `b`: commit 4 stands in.
        let obs = h.measure(&b, &[0, 1, 2, 3]).unwrap();
        assert_eq!(
            obs.iter().map(|o| o.value).collect::<Vec<_>>(),
            vec![2.5, 2.5, 3.5, 3.5]
        );
        assert_eq!(h.commit_info(1).id, "5");
    }

    #[test]
    fn bad_rows_are_one_line_errors() {
        for bad in [
            "a,b,time\n0,1,1\n",
            "commit,time\n0,1\n",
            ",a,commit,perf\n0,1,2,\n",
            "commit,a,time\nx,1,1\n",
            "commit,a,time\n0,1,fast\n",
            "commit,a,time\n",
        ] {
            let e = RecordedHistory::parse(bad, "h.csv")
                .err()
                .unwrap()
                .to_string();
            assert!(!e.contains('\n') && e.starts_with("h.csv"), "{e}");
        }
    }
}
