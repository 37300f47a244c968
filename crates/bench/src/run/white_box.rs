//! The white-box steps: ConfigCrusher, Comprex (and its granularity table), SPLat and the
//! family-based approach, each through its `knobs` command's `--json` report.

use super::*;

impl SubjectRun<'_> {
    /// The measured configurations' Σ values and the model's error against the ground
    /// truth and against the build's own runs; shared by the white-box approaches. With a
    /// profiler `correction` (Comprex's §V.A line), the own runs are compared as the model
    /// sees them, corrected, so that error is the model's alone and not the overhead's.
    pub(super) fn white_box_numbers(
        &mut self,
        row: &mut Row,
        model: &Path,
        store: &Path,
        variant: Option<&str>,
        name: &str,
        correction: Option<&Correction>,
    ) -> Result<()> {
        let own_csv = self.work.join(format!("{name}.csv"));
        let own = self.export(store, variant, &own_csv)?;
        let own_as_modelled = match correction {
            Some(c) => {
                let path = self.work.join(format!("{name}-corrected.csv"));
                own.map_values(|t| (t - c.intercept) / c.slope)
                    .write(&path)?;
                path
            }
            None => own_csv.clone(),
        };
        row.measurement_seconds = own.seconds();
        let truth = self.white_box_truth()?;
        let (truth_csv, truth) = (truth.csv.clone(), truth.data.clone());
        if self.counted_truth.is_some() {
            row.detail(
                "ground_truth_build",
                "the plain counting build (the program's own LLVM IR instructions, counted; \
                 counted-ground-truth.db), not the native program the brute-force row counts",
            );
        }
        let e = self.evaluate_both(model, &truth_csv)?;
        row.mape_all_percent = Some(e.all.0);
        row.detail("mape_all_configurations", e.all.1);
        let truth_rows = truth.rows.len() as f64;
        if row.configurations.is_some_and(|c| c < truth_rows)
            && let Some((m, n)) = e.unmeasured
        {
            row.mape_percent = Some(m);
            row.detail("mape_configurations", n);
        }
        let (own_mape, _) = self.evaluate(model, &own_as_modelled, true)?;
        row.detail(
            if correction.is_some() {
                "mape_own_runs_corrected"
            } else {
                "mape_own_runs"
            },
            own_mape,
        );
        self.model_numbers(row, std::slice::from_ref(&model.to_path_buf()), &truth)?;
        // Instrumented (or profiled) over native medians, measured minutes apart (Table 7's
        // interleaved runs are the `overhead` approach).
        let ratios = data::ratios(&own, &truth);
        row.detail("over_native_geometric_mean", stats::geometric_mean(&ratios));
        row.detail("over_native_configurations", ratios.len());
        Ok(())
    }

    /// A white-box command's arguments for a step: its own store, build directory and model
    /// file, `--json`, then the step's own arguments; with the store and model paths.
    pub(super) fn white_box_args(
        &self,
        command: &str,
        step: &Step,
    ) -> (Vec<String>, PathBuf, PathBuf) {
        let store = self.work.join(format!("{}.db", step.name));
        let model = self.work.join(format!("{}.model.json", step.name));
        let mut args = vec![command.to_string()];
        args.extend(self.spec_args());
        args.extend([
            "--store".into(),
            path_arg(&store),
            "--work-dir".into(),
            path_arg(&self.work.join(&step.name)),
            "-o".into(),
            path_arg(&model),
            "--json".into(),
        ]);
        args.extend(self.repetition_args());
        // Every white-box command takes the run's metric (`instructions`: its counting build).
        if let Some(metric) = &self.settings.metric {
            args.extend(["--metric".into(), metric.clone()]);
        }
        args.extend(step.args.iter().cloned());
        (args, store, model)
    }

    pub(super) fn crush(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (args, store, model) = self.white_box_args("crush", step);
        let (r, raw): (CrushReport, Value) = self.knobs_json(&args)?;
        let model = r.model_path.clone().unwrap_or(model);
        let variant = reported_variant(
            "crush",
            r.variant
                .clone()
                .or_else(|| r.instrumentation.as_ref().map(|i| i.variant.clone())),
        )?;
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.configurations.measured);
        row.total_configurations = Some(r.configurations.total);
        row.lower_bound = Some(r.configurations.lower_bound);
        self.white_box_numbers(row, &model, &store, Some(&variant), &step.name, None)?;
        // Corrected to the native program, the model is of its runs in the same store.
        if let Some(ratio) = raw
            .pointer("/native_correction/ratio")
            .and_then(Value::as_f64)
        {
            row.detail("native_correction_ratio", ratio);
            self.own_native_runs(row, &model, &store, &step.name)?;
        }
        row.detail("variant", &variant);
        row.detail("regions", r.regions.count);
        row.detail("regions_before_propagation", r.regions.before_propagation);
        row.analysis_seconds = Some(r.analysis.seconds);
        row.detail("analysis", "static taint analysis and region optimisation");
        row.detail("peak_memory_mib", r.analysis.peak_memory_mib);
        row.detail("tainted_decisions", r.analysis.tainted_decisions);
        row.detail("interactions", &r.analysis.interactions);
        row.detail("irrelevant", &r.analysis.irrelevant);
        row.detail("build_seconds", r.build.seconds);
        if let Some(i) = &r.instrumentation {
            row.detail("enter_calls", i.enter_calls);
            row.detail("exit_calls", i.exit_calls);
        }
        if let Some(o) = &r.overhead {
            row.detail("rc_mean", o.region_entries_per_run);
        }
        row.detail("report", raw);
        Ok(())
    }

    /// The model against the native runs its correction measured in the same store
    /// (`mape_own_native_runs`), and those runs against the ground truth
    /// (`mape_own_native_runs_vs_truth`: the drift between this approach's measurement
    /// session and the ground truth's, which its model, scaled to its own native runs,
    /// inherits whatever its accuracy; *brute force again* is the same drift for a third
    /// session).
    fn own_native_runs(
        &mut self,
        row: &mut Row,
        model: &Path,
        store: &Path,
        name: &str,
    ) -> Result<()> {
        let native_csv = self.work.join(format!("{name}-native.csv"));
        self.export(store, None, &native_csv)?;
        let (own, _) = self.evaluate(model, &native_csv, true)?;
        row.detail("mape_own_native_runs", own);
        let native = Data::read(&native_csv)?;
        let errors = data::percentage_errors(&native, &self.truth()?.data);
        if let Some(drift) = stats::mean(&errors) {
            row.detail("mape_own_native_runs_vs_truth", drift);
        }
        Ok(())
    }

    pub(super) fn comprex(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (args, store, model) = self.white_box_args("comprex", step);
        let (r, mut raw): (ComprexReport, Value) = self.knobs_json(&args)?;
        // Each region's partition as formulas is about 200 KB on xz: the row keeps their
        // number (the whole report stays in the work directory, logs/NN-comprex.stdout).
        if let Some(regions) = raw.pointer_mut("/exploration/regions")
            && let Some(n) = regions.as_array().map(Vec::len)
        {
            *regions = Value::from(n);
        }
        let model = r.model_path.clone().unwrap_or(model);
        let variant = reported_variant("comprex", r.variant.clone())?;
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.configurations.len() as f64);
        row.total_configurations = Some(r.total_configurations);
        // Scaled per configuration to the native runs, the model is of those runs, in the
        // same store (as ConfigCrusher's); a fitted line is applied to the profiled runs.
        let per_configuration = r
            .overhead_correction
            .as_ref()
            .is_some_and(|c| c.fit == "native");
        let line = r
            .overhead_correction
            .as_ref()
            .filter(|_| !per_configuration);
        self.white_box_numbers(row, &model, &store, Some(&variant), &step.name, line)?;
        if per_configuration {
            self.own_native_runs(row, &model, &store, &step.name)?;
        }
        row.detail("variant", &variant);
        if let Some(e) = &r.exploration {
            row.detail("taint_runs", e.configurations);
            row.detail("taint_seconds", e.seconds);
            row.analysis_seconds = Some(e.seconds);
            row.detail("analysis", "dynamic taint exploration");
            row.detail("decision_sites", e.decision_sites);
        }
        if let Some(p) = &r.probes {
            row.detail("probed_methods", p.probed);
            row.detail("methods", p.methods);
        }
        self.taint_slowdown(row, &raw)?;
        if let Some(c) = &r.overhead_correction {
            row.detail("correction_slope", c.slope);
            row.detail("correction_intercept", c.intercept);
            row.detail("correction_configurations", c.pairs.len());
        }
        row.detail("report", raw);
        Ok(())
    }

    /// Comprex's Table IV: one taint exploration tracking the regions of every granularity,
    /// and per granularity its regions and the fewest configurations covering them.
    pub(super) fn granularity(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (mut args, _, _) = self.white_box_args("comprex", step);
        args.push("--granularity-table".into());
        let (r, _): (ComprexReport, Value) = self.knobs_json(&args)?;
        let table: Vec<Value> = r
            .granularity_table
            .iter()
            .map(|g| {
                serde_json::json!({
                    "granularity": g.granularity,
                    "regions": g.regions.len(),
                    "configurations": g.cover,
                    "cover_minimal": g.cover_minimal,
                })
            })
            .collect();
        if table.is_empty() {
            bail!("`knobs comprex --granularity-table --json` reported no table");
        }
        let first = &r.granularity_table[0];
        row.total_configurations = Some(r.total_configurations);
        row.analysis_seconds = Some(first.seconds);
        row.detail("analysis", "dynamic taint exploration");
        row.detail("taint_runs", first.configurations);
        row.detail("decision_sites", first.decision_sites);
        row.detail("table", table);
        Ok(())
    }

    /// The taint runs' slowdown, roughly: Comprex's exploration seconds per taint run (taint
    /// recording included) over the native program's median on the same analysis workload,
    /// a distance-based sample of 4 configurations (not the explored ones).
    pub(super) fn taint_slowdown(&mut self, row: &mut Row, report: &Value) -> Result<()> {
        let (Some(workload), Some(runs), Some(seconds)) = (
            report.get("analysis_workload").and_then(Value::as_str),
            report
                .pointer("/exploration/configurations")
                .and_then(Value::as_f64),
            report
                .pointer("/exploration/seconds")
                .and_then(Value::as_f64),
        ) else {
            return Ok(());
        };
        let store = self.work.join("native-analysis-workload.db");
        let mut args = vec![
            "measure".into(),
            "--accept-failures".into(),
            "--spec".into(),
            path_arg(&self.spec),
            "--workload".into(),
            workload.to_string(),
            "--store".into(),
            path_arg(&store),
            "--sample".into(),
            "distance:4".into(),
            "--json".into(),
        ];
        args.extend(self.repetition_args());
        let _: (MeasureReport, Value) = self.knobs_json(&args)?;
        let csv = self.work.join("native-analysis-workload.csv");
        let native = self.export_workload(&store, None, Some(workload), &csv)?;
        let medians: Vec<f64> = native.rows.iter().map(|(_, v)| *v).collect();
        if let Some(native) = stats::mean(&medians).filter(|m| *m > 0.0)
            && runs > 0.0
        {
            row.detail("native_analysis_workload_seconds", native);
            row.detail("taint_run_seconds", seconds / runs);
            row.detail("taint_slowdown", seconds / runs / native);
        }
        Ok(())
    }

    pub(super) fn splat(&mut self, row: &mut Row, step: &Step, delayed: bool) -> Result<()> {
        let (mut args, store, model) = self.white_box_args("splat", step);
        if delayed {
            args.push("--delayed".into());
        }
        let (r, raw): (SplatReport, Value) = self.knobs_json(&args)?;
        let model = r.model_path.clone().unwrap_or(model);
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.paths.len() as f64);
        row.total_configurations = Some(r.total_configurations);
        // SPLat measures the program as the spec runs it (the store's unnamed variant), or
        // under `--metric instructions` the plain counting build (the variant it reports).
        let variant = raw
            .get("variant")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        self.white_box_numbers(row, &model, &store, variant.as_deref(), &step.name, None)?;
        row.detail("exploration_seconds", r.exploration_seconds);
        row.analysis_seconds = Some(r.exploration_seconds);
        row.detail("analysis", "taint runs of the exploration");
        row.detail("complete", r.complete);
        row.detail("reached", &r.reached);
        row.detail("unreached", &r.unreached);
        row.detail("report", raw);
        Ok(())
    }

    pub(super) fn family(&mut self, row: &mut Row, step: &Step) -> Result<()> {
        let (args, store, model) = self.white_box_args("family", step);
        let (r, raw): (FamilyReport, Value) = self.knobs_json(&args)?;
        let model = r.model_path.clone().unwrap_or(model);
        let variant = reported_variant("family", r.variant.clone())?;
        let store = r.store.clone().unwrap_or(store);
        row.configurations = Some(r.measured() as f64);
        row.total_configurations = Some(r.total_configurations);
        self.white_box_numbers(row, &model, &store, Some(&variant), &step.name, None)?;
        row.detail("variant", &variant);
        if let Some(d) = &r.cost_dependence {
            row.detail("cost_dependent_functions", &d.functions);
            row.detail("cost_dependent_options", &d.options);
        }
        row.detail("mapped_functions", r.features.len());
        row.detail("unmapped_options", &r.unmapped_options);
        row.detail("unseen_decisions", r.unseen.len());
        row.detail("instrumented_functions", r.instrumented_functions);
        row.detail("report", raw);
        Ok(())
    }
}

/// The build a white-box command measured, as its `--json` report names it.
fn reported_variant(command: &str, variant: Option<String>) -> Result<String> {
    variant
        .filter(|v| !v.is_empty())
        .with_context(|| format!("`knobs {command} --json` reported no variant"))
}
