//! The black-box steps: a sample measured in the black-box store, then a model learned from
//! it per seed.

use super::*;

impl SubjectRun<'_> {
    /// A black-box baseline (`SAMPLE/LEARNER`): for each seed, learn from the sample of
    /// the measured configurations and evaluate on the ground truth's others.
    pub(super) fn blackbox(&mut self, row: &mut Row, run: &str) -> Result<()> {
        let (sample, learner) = split_run(run).context("a black-box run is SAMPLE/LEARNER")?;
        let learner = learner.to_string();
        row.detail("learner", &learner);
        row.detail("sample", sample);
        let sample = match self.sample_to_measure(sample) {
            Ok(sample) => sample,
            Err(why) => {
                row.status = Status::NotApplicable;
                row.reason = Some(why);
                return Ok(());
            }
        };
        row.detail("measured_sample", &sample);
        // The samples are measured in a session of their own, as every other approach's
        // configurations are: learning from the ground truth's own runs would spare the
        // black-box models the drift between sessions that every other model carries.
        let store = self.work.join("blackbox.db");
        row.detail("store", path_arg(&store));
        let truth_csv = self.truth()?.csv.clone();
        let stem = file_stem(run);
        let mut learned = Vec::new();
        for seed in self.seeds() {
            self.measure_sample(&store, &sample, Some(seed))?;
            let model = self.work.join(format!("{stem}-{seed}.model.json"));
            let t0 = Instant::now();
            let (_, learned_report): (serde::de::IgnoredAny, Value) = self.knobs_json(&[
                "learn".into(),
                path_arg(&store),
                "--learner".into(),
                learner.clone(),
                "--sample".into(),
                sample.clone(),
                "--seed".into(),
                seed.to_string(),
                "-o".into(),
                path_arg(&model),
                "--json".into(),
            ])?;
            let learn_seconds = t0.elapsed().as_secs_f64();
            let e = self.evaluate_both(&model, &truth_csv)?;
            learned.push((seed, model, e, learned_report, learn_seconds));
        }
        // What each model was trained on, from its provenance, and their Σ values.
        let export = self.work.join(format!("{stem}-store.csv"));
        let measured = self.export(&store, None, &export)?;
        let by = measured.by_configuration();
        let mut per_seed = Vec::new();
        let (mut mapes, mut alls, mut counts, mut seconds, mut learning) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut models = Vec::new();
        for (seed, model, e, learned_report, learn_seconds) in learned {
            let (mape, n) = e.unmeasured.unwrap_or(e.all);
            let training = training_configurations(&model, &measured)?;
            let secs: f64 = training.iter().filter_map(|k| by.get(k)).sum();
            per_seed.push(serde_json::json!({
                "seed": seed,
                "configurations": training.len(),
                "measurement_seconds": secs,
                "learning_seconds": learn_seconds,
                "mape_percent": mape,
                "mape_configurations": n,
                "mape_all_percent": e.all.0,
                "learned": learned_report,
            }));
            mapes.push(mape);
            alls.push(e.all.0);
            counts.push(training.len() as f64);
            seconds.push(secs);
            learning.push(learn_seconds);
            models.push(model);
        }
        row.configurations = stats::mean(&counts);
        row.total_configurations = None;
        row.measurement_seconds = stats::mean(&seconds).filter(|_| measured.is_seconds());
        row.mape_percent = stats::mean(&mapes);
        row.mape_all_percent = stats::mean(&alls);
        row.analysis_seconds = stats::mean(&learning);
        row.detail("analysis", "learning (`knobs learn`, wall time)");
        row.detail("mape_sd", stats::sample_sd(&mapes));
        row.detail("seeds", per_seed);
        let truth = self.truth()?.data.clone();
        self.model_numbers(row, &models, &truth)
    }

    /// The sample a black-box run measures: `random:as:STEP` becomes `random:N` with the
    /// configurations STEP measured in this run; an error says why the run does not apply
    /// (the step did not run, or a random sample of that size would be the whole space).
    pub(super) fn sample_to_measure(&self, sample: &str) -> Result<String, String> {
        let total = self.truth.as_ref().and_then(|t| t.total);
        let (n, sample) = match sample.strip_prefix(RANDOM_AS) {
            Some(step) => {
                let Some(&c) = self.measured.get(step) else {
                    return Err(format!(
                        "`{step}` did not measure anything earlier in this run"
                    ));
                };
                let n = c.round().max(1.0) as u64;
                (Some(n), format!("random:{n}"))
            }
            None => (random_size(sample), sample.to_string()),
        };
        match (n, total) {
            (Some(n), Some(total)) if n as f64 >= total => Err(format!(
                "{n} random configurations need a space of more than {} valid ones",
                crate::summary::number(total)
            )),
            _ => Ok(sample),
        }
    }
}

/// `random:N`'s N.
pub(super) fn random_size(sample: &str) -> Option<u64> {
    sample.strip_prefix("random:")?.parse().ok()
}

/// A step name as part of a file name.
pub(super) fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}
