//! Where measurements come from. The search asks a [`Backend`] for the performance of a
//! configuration at some commits; three backends answer: a synthetic system
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

pub trait Backend {
    fn space(&self) -> &ConfigSpace;

    /// Commits on the analysed line, numbered `0..commits()` oldest first.
    fn commits(&self) -> usize;

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

    /// The performance of `config` at each of `commits` (distinct, in range).
    fn measure(
        &mut self,
        config: &Configuration,
        commits: &[usize],
    ) -> Result<Vec<Observation>, Error>;

    fn commit_info(&self, commit: usize) -> CommitInfo {
        CommitInfo {
            id: commit.to_string(),
            ..CommitInfo::default()
        }
    }
}

/// A recorded history: measurements of some configurations at some commits, from a CSV
/// with a `commit` column (commit index, 0 = oldest), one column per option (0/1 for binary
/// options, values for numeric ones) and a final performance column; an optional
/// `commit_id` column right after `commit` names the commits.
///
/// A requested configuration that was not recorded is replaced by the closest recorded one
/// not used yet (Hamming distance over option values, §4.2.2); a commit not recorded for a
/// configuration takes the closest earlier recorded commit (as a commit that did not build
/// takes the last one that did).
pub struct RecordedHistory {
    space: ConfigSpace,
    commits: usize,
    /// Per recorded configuration, its measurements by commit.
    histories: HashMap<Configuration, BTreeMap<usize, f64>>,
    /// Recorded configurations in file order (for deterministic substitution).
    order: Vec<Configuration>,
    ids: BTreeMap<usize, String>,
}

impl RecordedHistory {
    pub fn parse(text: &str, shown: &str) -> Result<RecordedHistory, Error> {
        let err = |line: usize, m: String| Error::Invalid(format!("{shown}:{line}: {m}"));
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let header = reader.headers().map_err(|e| err(1, e.to_string()))?.clone();
        if header.get(0) != Some("commit") {
            return Err(err(1, "the first column must be `commit`".into()));
        }
        let with_ids = header.get(1) == Some("commit_id");
        let first_option = if with_ids { 2 } else { 1 };
        // The commit columns are read here; the rest is a dataset CSV, which `space` reads
        // (and infers the options of) as it reads any other.
        let mut rest = csv::Writer::from_writer(Vec::new());
        let io = |e: csv::Error| err(0, e.to_string());
        rest.write_record(header.iter().skip(first_option))
            .map_err(io)?;
        let mut row_commits = Vec::new();
        let mut ids = BTreeMap::new();
        for record in reader.records() {
            let record = record.map_err(io)?;
            let line = record.position().map_or(0, |p| p.line() as usize);
            let commit: usize = record[0]
                .parse()
                .map_err(|_| err(line, format!("`{}` is not a commit index", &record[0])))?;
            if commit > 10_000_000 {
                return Err(err(line, format!("commit index {commit} is too large")));
            }
            if with_ids {
                ids.insert(commit, record[1].to_string());
            }
            row_commits.push(commit);
            rest.write_record(record.iter().skip(first_option))
                .map_err(io)?;
        }
        let rest = rest.into_inner().map_err(|e| err(0, e.to_string()))?;
        let options_only = String::from_utf8(rest).map_err(|e| err(0, e.to_string()))?;
        let data = space::formats::dataset::parse_dataset_csv(&options_only, shown)?;
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
            history.insert(*commit, value);
        }
        Ok(RecordedHistory {
            space: data.space,
            commits: row_commits.iter().max().map_or(0, |c| c + 1),
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

impl Backend for RecordedHistory {
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

    fn commit_info(&self, commit: usize) -> CommitInfo {
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
    fn bad_rows_are_one_line_errors() {
        for bad in [
            "a,b,time\n0,1,1\n",
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
