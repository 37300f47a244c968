//! A model's error against the ground truth (`knobs evaluate`), the numbers of the models a
//! step built, and the configurations a model was trained on.

use super::ground_truth::CONFIGURATIONS_CSV;
use super::*;

impl SubjectRun<'_> {
    /// Whether `knobs evaluate` has `--all` (evaluate on every configuration of the data,
    /// training configurations included).
    pub(super) fn evaluate_has_all(&mut self) -> bool {
        if let Some(has) = self.evaluate_has_all {
            return has;
        }
        let has = Command::new(&self.settings.knobs)
            .args(["evaluate", "--help"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--all"));
        self.evaluate_has_all = Some(has);
        has
    }

    /// `knobs evaluate MODEL DATA --json`: MAPE (%) on the configurations the model was not
    /// built from (`None` when it was built from all of them) and on all, with how many
    /// configurations each is over. An older knobs that prints one error is asked twice.
    pub(super) fn evaluate_both(&mut self, model: &Path, data: &Path) -> Result<Evaluation> {
        let args = vec![
            "evaluate".into(),
            path_arg(model),
            path_arg(data),
            "--json".into(),
            "--all".into(),
        ];
        if self.evaluate_has_all()
            && let Ok((r, _)) = self.knobs_json::<EvaluateReport>(&args)
            && let Some(all) = r.mape_all
        {
            let of = r.of.or(r.configurations);
            let unmeasured_count = match (of, r.training_configurations) {
                (Some(of), Some(t)) => Some(of.saturating_sub(t)),
                _ => None,
            };
            return Ok(Evaluation {
                unmeasured: r.mape_unmeasured.map(|m| (m, unmeasured_count)),
                all: (all, of),
            });
        }
        let all = self.evaluate(model, data, true)?;
        let unmeasured = self.evaluate(model, data, false).ok();
        Ok(Evaluation { unmeasured, all })
    }

    /// `knobs evaluate MODEL DATA --json [--all]`: MAPE (%) and the configurations it is over.
    pub(super) fn evaluate(
        &mut self,
        model: &Path,
        data: &Path,
        all: bool,
    ) -> Result<(f64, Option<u64>)> {
        let mut args = vec![
            "evaluate".into(),
            path_arg(model),
            path_arg(data),
            "--json".into(),
        ];
        if all && self.evaluate_has_all() {
            args.push("--all".into());
        }
        let (r, raw): (EvaluateReport, Value) = self.knobs_json(&args)?;
        let mape = r
            .mape
            .with_context(|| format!("`knobs evaluate --json` printed no MAPE: {raw}"))?;
        Ok((mape, r.configurations))
    }

    /// A step run `again`: its model's predictions against those of the `first` run's model,
    /// configuration by configuration — the drift the approach's own measurement carries
    /// from one session to the next (the ground truth's is *brute force again*).
    pub(super) fn against_first_run(&mut self, row: &mut Row, first: &str) -> Result<()> {
        let (Some(again), Some(before)) = (
            self.predictions.get(&row.approach),
            self.predictions.get(first),
        ) else {
            bail!("`{first}` has no model to compare with (run it in the same run)");
        };
        let errors: Vec<f64> = again
            .iter()
            .zip(before)
            .map(|(a, b)| ((a - b) / b).abs() * 100.0)
            .collect();
        row.detail("again_of", first);
        row.detail("mape_against_first_run_percent", stats::mean(&errors));
        Ok(())
    }

    /// The models' shape (terms, regions, trees; a mean over several) and their absolute
    /// percentage error on every configuration of `truth` (the ground truth's, in its order;
    /// a mean over several models), kept for the comparison.
    pub(super) fn model_numbers(
        &mut self,
        row: &mut Row,
        models: &[PathBuf],
        truth: &Data,
    ) -> Result<()> {
        let configurations = self.work.join(CONFIGURATIONS_CSV);
        let actual: Vec<f64> = truth.rows.iter().map(|(_, v)| *v).collect();
        let mut shapes = Vec::new();
        let mut sum = vec![0.0; actual.len()];
        let mut predictions = vec![0.0; actual.len()];
        for model in models {
            shapes.push(ModelShape::read(model)?);
            let out =
                self.knobs(&["predict".into(), path_arg(model), path_arg(&configurations)])?;
            let predicted = data::predictions(&String::from_utf8_lossy(&out))
                .context("reading `knobs predict`'s output")?;
            if predicted.len() != actual.len() {
                bail!(
                    "`knobs predict` gave {} predictions for {} configurations",
                    predicted.len(),
                    actual.len()
                );
            }
            for ((s, p), a) in sum.iter_mut().zip(&predicted).zip(&actual) {
                *s += ((p - a) / a).abs() * 100.0;
            }
            for (mean, p) in predictions.iter_mut().zip(&predicted) {
                *mean += p / models.len() as f64;
            }
        }
        self.predictions.insert(row.approach.clone(), predictions);
        let n = models.len().max(1) as f64;
        let mean = |f: fn(&ModelShape) -> f64| shapes.iter().map(f).sum::<f64>() / n;
        row.terms = Some(mean(|s| s.terms));
        row.regions = Some(mean(|s| s.regions));
        row.detail("trees", mean(|s| s.trees));
        self.errors.push((
            row.approach.clone(),
            sum.into_iter().map(|s| s / n).collect(),
        ));
        Ok(())
    }
}

/// How big a model is: global terms, code regions with local models, trees.
pub(super) struct ModelShape {
    pub(super) terms: f64,
    pub(super) regions: f64,
    pub(super) trees: f64,
}

impl ModelShape {
    pub(super) fn read(model: &Path) -> Result<ModelShape> {
        let text = std::fs::read_to_string(model)
            .with_context(|| format!("reading {}", model.display()))?;
        let v: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not JSON", model.display()))?;
        let count = |k: &str| v.get(k).and_then(Value::as_array).map_or(0, Vec::len) as f64;
        Ok(ModelShape {
            terms: count("terms"),
            regions: count("regions"),
            trees: count("trees"),
        })
    }
}

/// The configurations a learned model was trained on (its provenance's `training`), as
/// keys of `data` ([`data::key`]).
pub fn training_configurations(model: &Path, data: &Data) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(model).with_context(|| format!("reading {}", model.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", model.display()))?;
    let training = v
        .get("provenance")
        .and_then(|p| p.get("training"))
        .with_context(|| format!("{}: no provenance.training", model.display()))?;
    let columns: Vec<String> = training
        .get("columns")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let rows = training
        .get("rows")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for r in rows {
        let values: Vec<f64> = r
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let named: HashMap<String, f64> = columns.iter().cloned().zip(values).collect();
        let ordered = data.ordered(&named).with_context(|| {
            format!(
                "{}: a training configuration lacks options of the data",
                model.display()
            )
        })?;
        out.push(data::key(&ordered));
    }
    Ok(out)
}

/// A model's error against the ground truth: on the configurations it was not built from
/// (with how many), and on all of them.
pub(super) struct Evaluation {
    pub(super) unmeasured: Option<(f64, Option<u64>)>,
    pub(super) all: (f64, Option<u64>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_configurations_are_keyed_like_the_data() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.json");
        std::fs::write(
            &model,
            r#"{"provenance": {"training": {"columns": ["B", "A"], "rows": [[1, 0], [0, 1]]}}}"#,
        )
        .unwrap();
        let data = Data::parse("A,B,wall_s\n0,1,2.0\n1,0,3.0\n1,1,4.0\n").unwrap();
        let keys = training_configurations(&model, &data).unwrap();
        let by = data.by_configuration();
        assert_eq!(keys.iter().map(|k| by[k]).sum::<f64>(), 5.0);
    }
}
