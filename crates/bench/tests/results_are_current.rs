//! The numbers users read are the recorded ones: `docs/results/rows/latest.md`,
//! `docs/results/rows/metric-instructions/latest.md` and README.md's headline tables are what
//! the runner generates from the rows in `docs/results/rows/` and its `metric-instructions/`
//! (after adding rows, `cargo run --release -p bench -- --summary-only` regenerates
//! README.md's tables and the timed latest.md, with `--metric instructions` the counted one).

use std::path::Path;

use bench::subjects::{SUBJECTS_FILE, SubjectsFile};
use bench::{rows, summary};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn order() -> Vec<String> {
    SubjectsFile::load(&root().join(SUBJECTS_FILE))
        .unwrap()
        .subjects
        .into_iter()
        .map(|s| s.name)
        .collect()
}

#[test]
fn latest_md_is_generated_from_the_rows() {
    let dir = root().join(rows::RESULTS_DIR);
    let all = rows::read_all(&dir).unwrap();
    assert!(!all.is_empty(), "no rows in {}", dir.display());
    let want = summary::summary(&all, &order(), false);
    let have = std::fs::read_to_string(dir.join(summary::LATEST)).unwrap();
    assert!(
        want == have,
        "docs/results/rows/latest.md is not what the rows give: run \
         `cargo run --release -p bench -- --summary-only`"
    );
}

#[test]
fn the_counted_latest_md_is_generated_from_the_counted_rows() {
    let dir = root().join(rows::RESULTS_DIR).join(summary::COUNTED_DIR);
    let all = rows::read_all(&dir).unwrap();
    assert!(!all.is_empty(), "no rows in {}", dir.display());
    let want = summary::summary(&all, &order(), false);
    let have = std::fs::read_to_string(dir.join(summary::LATEST)).unwrap();
    assert!(
        want == have,
        "docs/results/rows/metric-instructions/latest.md is not what its rows give: run \
         `cargo run --release -p bench -- --summary-only --metric instructions`"
    );
}

#[test]
fn the_readme_table_is_generated_from_the_rows() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let want =
        summary::readme_with_table(&readme, &root().join(rows::RESULTS_DIR), &order()).unwrap();
    assert!(
        want == readme,
        "README.md's results table is not what docs/results/rows gives: run \
         `cargo run --release -p bench -- --summary-only`"
    );
    assert!(readme.contains(summary::README_BEGIN) && readme.contains(summary::README_END));
}
