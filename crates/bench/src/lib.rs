//! `knobs-bench`: knobs' benchmarks as declared runs.
//!
//! The subjects are data (`bench/subjects.toml`): a system spec, the command that fetches
//! and builds the program (with its pinned source version and checksum), the workload, the
//! ground truth's sample and the approaches to run — brute force, ConfigCrusher (`knobs
//! crush`), Comprex (`knobs comprex`), SPLat, the family-based approach, the black-box
//! baselines (`knobs learn`, each `SAMPLE/LEARNER` of the subject's runs) and ConfigCrusher's
//! instrumentation overhead (the journal paper's Table 7); then every model is compared with
//! the run's most accurate one. One runner runs them by calling the `knobs` binary with `--json`
//! and reading its stdout; the error of every model is `knobs evaluate --json` against the
//! ground truth. Every number, with the exact commands, the commit, the machine and the load
//! at the start and end of each step, goes to one JSON Lines file per run and subject under
//! `docs/results/rows/`, and `docs/results/rows/latest.md` is regenerated from the newest rows:
//!
//! ```text
//! cargo run --release -p bench -- [SUBJECT...] [--approaches crush,comprex,...] [--list]
//! ```
//!
//! The ground truth, its repetition (*brute force again*) and the white-box approaches measure
//! in rounds interleaved with each other (`--sessions`: one session per step), so a drift of
//! the machine over the run falls on all of them alike.
//!
//! Modules: [`subjects`] (the declarations), [`run`] (the steps and their rounds, Table 7's
//! interleaved runs among them), [`reports`] (what is read from knobs' JSON), [`compare`] (whether an
//! approach is significantly less accurate than the best), [`rows`] (the recorded rows),
//! [`summary`] (their markdown: the summary and the README's headline table), [`data`] (dataset CSVs and statistics).

pub mod compare;
pub mod data;
pub mod reports;
pub mod rows;
pub mod run;
pub mod subjects;
pub mod summary;
