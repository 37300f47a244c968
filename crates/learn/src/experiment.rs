//! Evaluation protocols: DeepPerf's (random samples of growing size, predict everything
//! else, repeat) and Comprex's Tables II/III (sampling strategies × learners: cost and error).

use std::collections::HashMap;
use std::time::Instant;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use space::{Dataset, Strategy, ValidConfigurations};

use crate::{Error, Learner, Table, train};

/// The rows of the dataset a sampling strategy picks. `random:N` draws N distinct measured
/// rows uniformly (every configuration of the published datasets is measured, so this is
/// uniform over the valid ones there); `all` takes every row; other strategies sample the
/// dataset's space and look each configuration up among the measured rows.
pub fn sample_rows(data: &Dataset, strategy: &Strategy, seed: u64) -> Result<Vec<usize>, Error> {
    let total = data.configurations.len();
    match strategy {
        Strategy::All => Ok((0..total).collect()),
        Strategy::Random(n) => {
            if *n > total {
                return Err(Error::Sample(format!(
                    "sample `{strategy}` asks for {n} configurations, but the dataset has only {total}"
                )));
            }
            Ok(random_rows(total, *n, seed))
        }
        _ => {
            let valid = ValidConfigurations::new(&data.space)?;
            let sample = space::sample(&valid, strategy, seed)?;
            let mut index: HashMap<&space::Configuration, usize> = HashMap::new();
            for (r, c) in data.configurations.iter().enumerate() {
                index.entry(c).or_insert(r);
            }
            sample
                .configurations
                .iter()
                .map(|c| {
                    index.get(c).copied().ok_or_else(|| {
                        let hint = if data.space.constraints().is_empty()
                            && data.space.groups().is_empty()
                        {
                            " (this dataset's space has no constraints, so the sampler may pick configurations nobody measured; use random:N, or give the variability model)"
                        } else {
                            ""
                        };
                        Error::Sample(format!(
                            "sample `{strategy}` picks configuration `{}`, which the dataset has not measured{hint}",
                            data.space.format_configuration(c)
                        ))
                    })
                })
                .collect()
        }
    }
}

/// `n` distinct row indices out of `total`, uniformly at random (seeded).
fn random_rows(total: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..total).collect();
    rows.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    rows.truncate(n);
    rows
}

/// Results of one sample size of the DeepPerf protocol.
#[derive(Clone, Debug)]
pub struct SizeResult {
    pub size: usize,
    /// MRE (%) of every repetition.
    pub errors: Vec<f64>,
    pub mean_mre: f64,
    /// Median MRE (%) over the repetitions (DaL reports medians).
    pub median_mre: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student's t).
    pub margin: f64,
    /// Wall time of one experiment (learn on the sample, predict the rest), mean.
    pub seconds: f64,
    /// CPU time of the same (this thread's, so other jobs on a shared machine do not count),
    /// mean; `None` where the system does not report it.
    pub cpu_seconds: Option<f64>,
    /// Mean number of terms (linear models) or leaves (trees).
    pub mean_size: f64,
}

/// DeepPerf's protocol: for each size, `reps` times draw a random sample of that many
/// configurations, learn, and compute the MRE on all remaining configurations. Repetition
/// r of a size uses the same sample for every learner (given the seed).
pub fn deepperf(
    table: &Table,
    sizes: &[usize],
    learner: &Learner,
    reps: usize,
    seed: u64,
) -> Result<Vec<SizeResult>, Error> {
    let total = table.rows.len();
    let mut out = Vec::new();
    for &size in sizes {
        if size == 0 || size >= total {
            return Err(Error::Sample(format!(
                "sample size {size} must be between 1 and {} (the dataset has {total} configurations and some must remain to test on)",
                total - 1
            )));
        }
        let mut errors = Vec::with_capacity(reps);
        let mut seconds = 0.0;
        let mut cpu_seconds = Some(0.0);
        let mut sizes_sum = 0.0;
        for r in 0..reps {
            let rep_seed = repetition_seed(seed, size, r);
            let (sample, rest) = deepperf_split(total, size, rep_seed);
            let start = Instant::now();
            let cpu_start = thread_cpu_seconds();
            let trained = train(table, &sample, learner, rep_seed)?;
            let predicted = trained.predict(table, &rest);
            seconds += start.elapsed().as_secs_f64();
            cpu_seconds = match (cpu_seconds, cpu_start, thread_cpu_seconds()) {
                (Some(sum), Some(a), Some(b)) => Some(sum + (b - a)),
                _ => None,
            };
            let actual: Vec<f64> = rest.iter().map(|&r| table.performance[r]).collect();
            errors.push(stats::mape(&predicted, &actual)?);
            sizes_sum += trained.size() as f64;
        }
        let (mean_mre, margin) = mean_and_margin(&errors);
        let median_mre = stats::median(&errors).unwrap_or(f64::NAN);
        out.push(SizeResult {
            size,
            errors,
            mean_mre,
            median_mre,
            margin,
            seconds: seconds / reps.max(1) as f64,
            cpu_seconds: cpu_seconds.map(|c| c / reps.max(1) as f64),
            mean_size: sizes_sum / reps.max(1) as f64,
        });
    }
    Ok(out)
}

/// One repetition's split of DeepPerf's protocol: `size` rows drawn at random (seeded) to
/// train on, and every other row of `0..total` to test on.
pub fn deepperf_split(total: usize, size: usize, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let mut rows: Vec<usize> = (0..total).collect();
    rows.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let rest = rows.split_off(size.min(total));
    (rows, rest)
}

/// The seed of repetition `r` at sample size `size` of an experiment seeded with `seed`.
pub fn repetition_seed(seed: u64, size: usize, r: usize) -> u64 {
    mix(seed, size as u64, r as u64)
}

/// CPU time this thread has used, in seconds (`CLOCK_THREAD_CPUTIME_ID`); `None` if the
/// system does not report it.
fn thread_cpu_seconds() -> Option<f64> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the struct it is given, which lives for the call.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then_some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
}

/// The mean of repeated errors with the half-width of its 95 % confidence interval
/// (Student's t); the margin is 0 for a single value, and both are NaN for none.
fn mean_and_margin(values: &[f64]) -> (f64, f64) {
    match stats::mean(values) {
        Some(mean) => (mean, stats::ci95_half_width(values).unwrap_or(0.0)),
        None => (f64::NAN, f64::NAN),
    }
}

/// A seed for repetition `r` of size `size` (SplitMix64 finaliser over the three).
fn mix(seed: u64, size: u64, r: u64) -> u64 {
    let mut z = seed
        .wrapping_add(size.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(r.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One row of the strategies × learners comparison (Comprex Tables II/III), averaged over
/// the repetitions (each with its own seed for sampling and learning).
#[derive(Clone, Debug)]
pub struct CompareRow {
    pub strategy: String,
    pub learner: String,
    pub repetitions: usize,
    /// Configurations in the sample (mean over repetitions).
    pub configurations: f64,
    /// Sum of the sampled configurations' performance: the measurement time when the
    /// performance is a time (mean over repetitions).
    pub measurement: f64,
    pub learn_seconds: f64,
    /// Mean MAPE (%) on every configuration not in the sample and its 95 % margin over the
    /// repetitions; `None` if no configuration is left.
    pub mape: Option<(f64, f64)>,
    /// Terms of the model (intercept included) and leaves of its trees (means).
    pub terms: f64,
    pub leaves: f64,
}

/// One repetition of one strategy × learner.
#[derive(Clone)]
struct Trial {
    configurations: f64,
    measurement: f64,
    learn_seconds: f64,
    mape: Option<f64>,
    terms: f64,
    leaves: f64,
}

/// Every strategy × learner: sample, learn, and evaluate on the configurations not sampled,
/// `reps` times with different seeds (the first is `seed` itself).
pub fn compare(
    data: &Dataset,
    strategies: &[Strategy],
    learners: &[Learner],
    seed: u64,
    reps: usize,
) -> Result<Vec<CompareRow>, Error> {
    let table = Table::new(data);
    let reps = reps.max(1);
    let mut out = Vec::new();
    for strategy in strategies {
        // Per learner: one trial per repetition.
        let mut runs: Vec<Vec<Trial>> = vec![Vec::new(); learners.len()];
        for r in 0..reps {
            let seed = if r == 0 { seed } else { mix(seed, 0, r as u64) };
            let sample = sample_rows(data, strategy, seed)?;
            let mut in_sample = vec![false; table.rows.len()];
            for &row in &sample {
                in_sample[row] = true;
            }
            let rest: Vec<usize> = (0..table.rows.len()).filter(|r| !in_sample[*r]).collect();
            let measurement: f64 = sample.iter().map(|&r| table.performance[r]).sum();
            for (l, learner) in learners.iter().enumerate() {
                let start = Instant::now();
                let trained = train(&table, &sample, learner, seed)?;
                let learn_seconds = start.elapsed().as_secs_f64();
                let mape = if rest.is_empty() {
                    None
                } else {
                    let actual: Vec<f64> = rest.iter().map(|&r| table.performance[r]).collect();
                    Some(stats::mape(&trained.predict(&table, &rest), &actual)?)
                };
                runs[l].push(Trial {
                    configurations: sample.len() as f64,
                    measurement,
                    learn_seconds,
                    mape,
                    terms: trained.terms() as f64,
                    leaves: trained.leaves() as f64,
                });
            }
        }
        for (learner, runs) in learners.iter().zip(runs) {
            let mean = |f: fn(&Trial) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
            let mapes: Option<Vec<f64>> = runs.iter().map(|r| r.mape).collect();
            out.push(CompareRow {
                strategy: strategy.to_string(),
                learner: learner.to_string(),
                repetitions: runs.len(),
                configurations: mean(|r| r.configurations),
                measurement: mean(|r| r.measurement),
                learn_seconds: mean(|r| r.learn_seconds),
                mape: mapes.map(|m| mean_and_margin(&m)),
                terms: mean(|r| r.terms),
                leaves: mean(|r| r.leaves),
            });
        }
    }
    Ok(out)
}
