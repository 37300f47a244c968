//! The ground truth: brute force over the subject's sample, its export, its noise, and
//! its measurement once more (`repeat`).

use super::*;

impl SubjectRun<'_> {
    pub(super) fn truth(&self) -> Result<&GroundTruth> {
        self.truth
            .as_ref()
            .context("the ground truth has not been measured (run brute-force first)")
    }

    pub(super) fn export(
        &mut self,
        store: &Path,
        variant: Option<&str>,
        out: &Path,
    ) -> Result<Data> {
        let workload = self.workload().map(str::to_string);
        self.export_workload(store, variant, workload.as_deref(), out)
    }

    /// `knobs results export` of one workload's runs (the spec's first without one).
    pub(super) fn export_workload(
        &mut self,
        store: &Path,
        variant: Option<&str>,
        workload: Option<&str>,
        out: &Path,
    ) -> Result<Data> {
        let mut args = vec![
            "results".into(),
            "export".into(),
            "--store".into(),
            path_arg(store),
        ];
        if let Some(w) = workload {
            args.extend(["--workload".into(), w.into()]);
        }
        if let Some(v) = variant {
            args.extend(["--variant".into(), v.into()]);
        }
        args.extend(["--format".into(), "csv".into(), "-o".into(), path_arg(out)]);
        self.knobs(&args)?;
        Data::read(out)
    }

    /// `knobs measure --sample SAMPLE [--seed N]` of the native program into `store`.
    pub(super) fn measure_sample(
        &mut self,
        store: &Path,
        sample: &str,
        seed: Option<u64>,
    ) -> Result<(MeasureReport, Value)> {
        // Failed configurations are in the report; the bench reads them from there.
        let mut args = vec!["measure".into(), "--accept-failures".into()];
        args.extend(self.spec_args());
        args.extend([
            "--store".into(),
            path_arg(store),
            "--sample".into(),
            sample.to_string(),
        ]);
        if let Some(seed) = seed {
            args.extend(["--seed".into(), seed.to_string()]);
        }
        if let Some(metric) = &self.settings.metric {
            args.extend(["--metric".into(), metric.clone()]);
        }
        args.push("--json".into());
        args.extend(self.repetition_args());
        self.knobs_json(&args)
    }

    /// Where the ground truth's sample is measured for step `name` (`ground-truth`, `repeat`).
    pub(super) fn sample_store(&self, name: &str) -> PathBuf {
        self.work.join(format!("{name}.db"))
    }

    /// The ground truth's sample measured into `NAME.db` and exported to `NAME.csv`; the
    /// space's size is left for the caller to count.
    pub(super) fn measure_ground_truth_sample(
        &mut self,
        name: &str,
    ) -> Result<(MeasureReport, Value, GroundTruth)> {
        let store = self.sample_store(name);
        let sample = self.ground_truth.clone();
        let (report, raw) = self.measure_sample(&store, &sample, None)?;
        let csv = self.work.join(format!("{name}.csv"));
        let data = self.export(&store, None, &csv)?;
        let truth = GroundTruth {
            store,
            csv,
            data,
            total: None,
        };
        Ok((report, raw, truth))
    }

    /// The run-to-run noise of a store's native measurements against the options' effect:
    /// the coefficients of variation of the configurations' runs (median and largest, in %)
    /// and the span of their values (fastest, slowest, and their ratio).
    pub(super) fn noise(&mut self, store: &Path) -> Result<Value> {
        let mut args = vec![
            "results".into(),
            "show".into(),
            "--store".into(),
            path_arg(store),
        ];
        if let Some(w) = self.workload() {
            args.extend(["--workload".into(), w.to_string()]);
        }
        args.push("--json".into());
        let (shown, _): (ResultsShow, Value) = self.knobs_json(&args)?;
        let summaries: Vec<&ShownSummary> = shown
            .configurations
            .iter()
            .filter_map(|c| c.summary.as_ref())
            .collect();
        let cvs: Vec<f64> = summaries
            .iter()
            .filter_map(|s| s.cv.map(|cv| cv * 100.0))
            .collect();
        let values: Vec<f64> = summaries.iter().map(|s| s.value).collect();
        let fastest = values.iter().copied().reduce(f64::min);
        let slowest = values.iter().copied().reduce(f64::max);
        Ok(serde_json::json!({
            "cv_median_percent": stats::median(&cvs),
            "cv_max_percent": cvs.iter().copied().reduce(f64::max),
            "configurations": cvs.len(),
            "runs_per_configuration": stats::median(
                &shown.configurations.iter().map(|c| c.runs as f64).collect::<Vec<_>>()
            ),
            "fastest_seconds": fastest,
            "slowest_seconds": slowest,
            "spread": fastest.zip(slowest).filter(|(f, _)| *f > 0.0).map(|(f, s)| s / f),
        }))
    }

    pub(super) fn brute_force(&mut self, row: &mut Row) -> Result<()> {
        let (report, raw, mut truth) = self.measure_ground_truth_sample("ground-truth")?;
        let data = &truth.data;
        data.write_configurations(&self.work.join(CONFIGURATIONS_CSV))?;
        let c = report.campaign();
        let (count, _): (SpaceCount, Value) = self.knobs_json(&[
            "space".into(),
            "count".into(),
            path_arg(&self.spec),
            "--json".into(),
        ])?;
        row.total_configurations = count.valid_configurations.parse().ok();
        row.ground_truth = Some(self.ground_truth.clone());
        row.configurations = Some(data.rows.len() as f64);
        row.measurement_seconds = data.seconds();
        row.detail("sample", &self.ground_truth);
        row.detail("metric", &data.metric);
        row.detail("runs", c.runs);
        row.detail("reused_configurations", c.reused);
        row.detail("failed_configurations", c.failed.len());
        row.detail("noisy_configurations", c.noisy.len());
        row.detail("noise", self.noise(&truth.store)?);
        row.detail("campaign_seconds", c.seconds);
        build_options::build_details(row, &raw);
        row.detail("report", raw);
        if !c.failed.is_empty() {
            self.say(&format!(
                "warning: {} configurations failed; the ground truth lacks them",
                c.failed.len()
            ));
        }
        if data.rows.is_empty() {
            bail!("the ground truth is empty: no configuration was measured");
        }
        truth.total = row.total_configurations;
        self.truth = Some(truth);
        Ok(())
    }

    /// The ground truth's sample measured again into a store of its own, at this point of
    /// the run: its error against the ground truth is the drift between two measurement
    /// sessions of the same native program, the floor under every approach's error. It is
    /// no model, so it takes no part in the comparison.
    pub(super) fn repeat(&mut self, row: &mut Row) -> Result<()> {
        let (report, _, again) = self.measure_ground_truth_sample("repeat")?;
        row.detail("noise", self.noise(&again.store)?);
        let again = again.data;
        let ratios = data::ratios(&again, &self.truth()?.data);
        if ratios.is_empty() {
            bail!("the repeated measurement shares no configuration with the ground truth");
        }
        let errors = data::percentage_errors(&again, &self.truth()?.data);
        row.configurations = Some(again.rows.len() as f64);
        row.total_configurations = self.truth()?.total;
        row.measurement_seconds = again.seconds();
        row.mape_all_percent = stats::mean(&errors);
        row.detail("mape_all_configurations", errors.len());
        row.detail("median_ape_percent", stats::median(&errors));
        row.detail(
            "over_ground_truth_geometric_mean",
            stats::geometric_mean(&ratios),
        );
        row.detail("runs", report.campaign().runs);
        row.detail("metric", &again.metric);
        Ok(())
    }
}

/// The ground truth's configurations alone (no performance column), for `knobs predict`.
pub(super) const CONFIGURATIONS_CSV: &str = "ground-truth-configurations.csv";
