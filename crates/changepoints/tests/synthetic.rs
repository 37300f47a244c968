//! The search on synthetic systems with known change points.

use changepoints::evaluation::{self, GridPoint, TOLERANCE};
use changepoints::likelihood::Threshold;
use changepoints::synthetic::{SyntheticSettings, SyntheticSource, SyntheticSystem};
use changepoints::{Settings, detect};

#[test]
fn finds_the_change_points_of_small_synthetic_systems() {
    let base = Settings {
        threshold: Threshold::Relative(0.01),
        ..Settings::default()
    };
    let point = GridPoint {
        options: 8,
        commits: 1000,
        change_points: 2,
        p_interaction: 0.7,
        initial_per_option: 2,
        measurements: 500,
    };
    let mut f1 = Vec::new();
    for seed in 1..=5 {
        let row = evaluation::run_point(&point, seed, &base, 0.0).unwrap();
        eprintln!(
            "seed {seed}: F1 {:.2} P {:.2} R {:.2}, {} iterations, {} measurements, {:.2} s ({})",
            row.score.f1,
            row.score.precision,
            row.score.recall,
            row.iterations,
            row.measurements,
            row.seconds,
            row.stopped
        );
        f1.push(row.score.f1);
    }
    let mean = f1.iter().sum::<f64>() / f1.len() as f64;
    assert!(mean >= 0.6, "mean F1 {mean:.2}: {f1:?}");
}

#[test]
fn a_single_option_change_is_found_at_its_commit() {
    let system = SyntheticSystem::generate(&SyntheticSettings {
        options: 8,
        commits: 600,
        change_points: 1,
        seed: 11,
        ..SyntheticSettings::default()
    })
    .unwrap();
    let truth = evaluation::truth(&system);
    let mut source = SyntheticSource::new(system, 1);
    let settings = Settings {
        threshold: Threshold::Relative(0.01),
        initial_configurations: 16,
        ..Settings::default()
    };
    let d = detect(&mut source, &settings).unwrap();
    let s = evaluation::score(&truth, &d.associations, TOLERANCE);
    eprintln!("{truth:?}\n{:?}\n{s:?} {}", d.associations, d.stopped);
    assert!(
        s.recall > 0.0,
        "nothing of {truth:?} found: {:?}",
        d.associations
    );
}

/// A recorded history (every configuration of a 6-option synthetic system at every commit,
/// written as the CSV `replay` reads) finds what the synthetic source finds.
#[test]
fn a_recorded_history_replays_to_the_same_change_points() {
    let system = SyntheticSystem::generate(&SyntheticSettings {
        options: 6,
        commits: 300,
        change_points: 2,
        seed: 5,
        ..SyntheticSettings::default()
    })
    .unwrap();
    let mut csv = String::from("commit,o0,o1,o2,o3,o4,o5,time\n");
    for commit in 0..300 {
        for bits in 0..64u32 {
            let selected: Vec<bool> = (0..6).map(|o| bits >> o & 1 == 1).collect();
            let cells: Vec<String> = selected.iter().map(|s| u8::from(*s).to_string()).collect();
            csv.push_str(&format!(
                "{commit},{},{}\n",
                cells.join(","),
                system.performance(&selected, commit)
            ));
        }
    }
    let mut recorded = changepoints::RecordedHistory::parse(&csv, "history.csv").unwrap();
    let settings = Settings {
        threshold: Threshold::Relative(0.01),
        initial_configurations: 12,
        commit_share: 0.05,
        ..Settings::default()
    };
    let d = detect(&mut recorded, &settings).unwrap();
    let truth = evaluation::truth(&system);
    let s = evaluation::score(&truth, &d.associations, TOLERANCE);
    eprintln!("{truth:?}\n{:?}\n{s:?}", d.associations);
    assert!(s.recall >= 0.5, "{s:?}: {:?} vs {truth:?}", d.associations);
    // Only recorded configurations were measured, each once.
    assert!(d.configurations <= 64);
}

/// A recorded history in the reference's published format, measured from commit 200 on, of
/// 16 configurations of 4 options: `perf(bits, commit)` for each.
fn published_csv(perf: impl Fn(&[u32], u32, usize) -> f64) -> String {
    let mut csv = String::from(",o0,o1,o2,o3,commit,perf,config_id\n");
    let mut row = 0;
    for bits in 0..16u32 {
        let o: Vec<u32> = (0..4).map(|b| bits >> b & 1).collect();
        for commit in 0..500usize {
            let cell = if commit < 200 {
                String::new()
            } else {
                perf(&o, bits, commit).to_string()
            };
            let cells: Vec<String> = o.iter().map(u32::to_string).collect();
            csv.push_str(&format!(
                "{row},{},{commit},{cell},{bits}\n",
                cells.join(",")
            ));
            row += 1;
        }
    }
    csv
}

/// Every configuration slows down at 300, those with `o1` twice as much again at 306.
fn two_close_changes(o: &[u32], commit: usize) -> f64 {
    let mut perf = 10.0 + 2.0 * f64::from(o[0]) + 3.0 * f64::from(o[2]);
    if commit >= 300 {
        perf *= 1.3;
    }
    if commit >= 306 && o[1] == 1 {
        perf *= 2.0;
    }
    perf
}

type Found = Vec<(usize, bool, Vec<String>)>;

fn replay(csv: &str, settings: &Settings) -> (changepoints::Detection, Found) {
    let mut recorded = changepoints::RecordedHistory::parse(csv, "history.csv").unwrap();
    let d = detect(&mut recorded, settings).unwrap();
    let found = d
        .change_points
        .iter()
        .map(|c| (c.commit, c.all_configurations, c.options.clone()))
        .collect();
    (d, found)
}

/// The search covers only the recorded commits, reports them in the file's numbering, and
/// keeps two changes six commits apart as two change points.
#[test]
fn a_recorded_range_with_close_changes() {
    let csv = published_csv(|o, _, commit| two_close_changes(o, commit));
    let settings = Settings {
        initial_configurations: 8,
        ..Settings::default()
    };
    let (d, found) = replay(&csv, &settings);
    assert_eq!((d.first_commit, d.commits), (200, 300));
    assert!(d.sample.iter().all(|s| s.history.keys().all(|c| *c >= 200)));
    let near = |at: usize| {
        found
            .iter()
            .filter(|c| c.0.abs_diff(at) <= 2)
            .collect::<Vec<_>>()
    };
    assert!(near(300).iter().any(|c| c.1), "{found:?}");
    assert!(
        near(306).iter().any(|c| c.2 == ["o1"]),
        "the change of o1 six commits after: {found:?}"
    );
}

/// Half the configurations have one noisy measurement each (+40 %, each at its own commit
/// from 340 on): no option explains one, so only the intercept could, and it must not read
/// as a change of all configurations.
#[test]
fn one_configurations_noise_is_not_a_change_of_all() {
    let csv = published_csv(|o, bits, commit| {
        let spike = bits % 2 == 0 && commit == 340 + 10 * bits as usize;
        two_close_changes(o, commit) * if spike { 1.4 } else { 1.0 }
    });
    let settings = Settings {
        initial_configurations: 8,
        ..Settings::default()
    };
    let (_, found) = replay(&csv, &settings);
    assert!(
        found.iter().any(|c| c.0.abs_diff(300) <= 2 && c.1),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|c| c.0 >= 325 && c.1),
        "noise read as a change of all: {found:?}"
    );
}

/// `max_measurements` is a hard limit, the sizes of the change points included, so a
/// comparison at equal cost holds the search to no more than the other tool used.
#[test]
fn the_measurement_limit_is_never_passed() {
    let point = GridPoint {
        options: 8,
        commits: 1000,
        change_points: 2,
        p_interaction: 0.7,
        initial_per_option: 2,
        measurements: 500,
    };
    for limit in [150, 998, 1349] {
        let system = evaluation::grid_system(&point, 2, 0.0).unwrap();
        let mut source = SyntheticSource::new(system, 2);
        let mut settings = evaluation::grid_settings(
            &point,
            &Settings {
                threshold: Threshold::Relative(0.01),
                ..Settings::default()
            },
            2,
        );
        settings.max_measurements = limit;
        let d = detect(&mut source, &settings).unwrap();
        assert!(d.measurements <= limit, "{} > {limit}", d.measurements);
        let measured: usize = d.sample.iter().map(|s| s.history.len()).sum();
        assert_eq!(measured, d.measurements);
    }
}

/// A source that answers a batch as a cluster would measure it: every request's commits
/// gathered, then measured commit by commit (each commit's configurations together), the
/// answers put back in the order asked. It counts the batches and the requests.
struct ByCommit {
    inner: SyntheticSource,
    batches: usize,
    requests: usize,
}

impl changepoints::MeasurementSource for ByCommit {
    fn space(&self) -> &space::ConfigSpace {
        self.inner.space()
    }

    fn commits(&self) -> usize {
        self.inner.commits()
    }

    fn measure(
        &mut self,
        _: &space::Configuration,
        _: &[usize],
    ) -> Result<Vec<changepoints::Observation>, changepoints::Error> {
        unreachable!("the search asks for batches")
    }

    fn measure_batch(
        &mut self,
        requests: &[(space::Configuration, Vec<usize>)],
    ) -> Result<Vec<Vec<changepoints::Observation>>, changepoints::Error> {
        self.batches += 1;
        self.requests += requests.len();
        let mut by_commit: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (r, (_, commits)) in requests.iter().enumerate() {
            for &c in commits {
                by_commit.entry(c).or_default().push(r);
            }
        }
        let mut answers = vec![Vec::new(); requests.len()];
        for (commit, asking) in by_commit {
            for r in asking {
                answers[r].extend(self.inner.measure(&requests[r].0, &[commit])?);
            }
        }
        for a in &mut answers {
            a.sort_by_key(|o| o.commit);
        }
        Ok(answers)
    }
}

/// The search asks for one batch per step (the initial sample, each acquisition round, the
/// change points' sizes), and a source that measures a batch in its own order finds what
/// one asked request by request finds, to the bit.
#[test]
fn a_batch_measured_commit_by_commit_is_the_search_measured_one_by_one() {
    let system = SyntheticSystem::generate(&SyntheticSettings {
        options: 6,
        commits: 300,
        change_points: 2,
        seed: 5,
        ..SyntheticSettings::default()
    })
    .unwrap();
    let settings = Settings {
        threshold: Threshold::Relative(0.01),
        initial_configurations: 12,
        ..Settings::default()
    };
    let one_by_one = detect(&mut SyntheticSource::new(system.clone(), 1), &settings).unwrap();
    let mut batched = ByCommit {
        inner: SyntheticSource::new(system, 1),
        batches: 0,
        requests: 0,
    };
    let by_commit = detect(&mut batched, &settings).unwrap();
    let without_time = |d: &changepoints::Detection| {
        let mut v = serde_json::to_value(d).unwrap();
        v["seconds"] = serde_json::Value::Null;
        for i in v["iterations"].as_array_mut().unwrap() {
            i["seconds"] = serde_json::Value::Null;
        }
        v
    };
    assert_eq!(without_time(&one_by_one), without_time(&by_commit));
    assert!(!by_commit.change_points.is_empty());
    assert_eq!(batched.batches, by_commit.batches);
    assert!(
        by_commit.batches <= by_commit.iterations.len() + 1,
        "{} batches in {} iterations",
        by_commit.batches,
        by_commit.iterations.len()
    );
    assert!(
        batched.requests > by_commit.batches,
        "batches of one request"
    );
}

/// Cut off by its measurement limit before its cache settles, the search reports only the
/// associations of its latest candidate solution that an earlier one had too, and names
/// the rest; left to stop by itself on the same system, it leaves nothing out.
#[test]
fn a_search_cut_off_by_its_measurement_limit_reports_only_confirmed_associations() {
    let system = SyntheticSystem::generate(&SyntheticSettings {
        options: 8,
        commits: 600,
        change_points: 2,
        p_interaction: 0.7,
        seed: 3,
        ..SyntheticSettings::default()
    })
    .unwrap();
    let settings = Settings {
        threshold: Threshold::Relative(0.01),
        initial_configurations: 16,
        max_measurements: 16 * 20 + 150,
        ..Settings::default()
    };
    let mut source = SyntheticSource::new(system.clone(), 1);
    let d = detect(&mut source, &settings).unwrap();
    assert!(d.stopped.contains("measurement limit"), "{}", d.stopped);
    let near = |a: &changepoints::Association, b: &changepoints::Association| {
        a.affects == b.affects && a.commit.abs_diff(b.commit) <= settings.cache.tolerance
    };
    let (last, earlier) = d.iterations.split_last().unwrap();
    for a in &d.associations {
        assert!(
            last.candidate_solution.iter().any(|c| near(a, c)),
            "{a:?} not seen last"
        );
        assert!(
            earlier
                .iter()
                .any(|i| i.candidate_solution.iter().any(|c| near(a, c))),
            "{a:?} seen only last"
        );
    }
    assert!(
        !d.unconfirmed.is_empty(),
        "nothing left out: pick a harder cut"
    );
    assert!(d.unconfirmed.iter().all(|u| !d.associations.contains(u)));
    let reported: Vec<usize> = d.associations.iter().map(|a| a.commit).collect();
    assert!(d.change_points.iter().all(|c| reported.contains(&c.commit)));

    let mut source = SyntheticSource::new(system, 1);
    let free = detect(
        &mut source,
        &Settings {
            max_measurements: usize::MAX,
            ..settings.clone()
        },
    )
    .unwrap();
    assert!(free.stopped.contains("settled"), "{}", free.stopped);
    assert!(free.unconfirmed.is_empty());
}
