//! The white-box rows' ground truth under `--metric instructions`: the ground truth's
//! configurations run in the plain counting build
//! (`instrumented::counting::plain_counting_build`: the program as the spec builds it,
//! counting its own LLVM IR instructions, no region), the unit every counted white-box model
//! is in. The black-box rows keep the native program's count (`perf` or cachegrind:
//! machine instructions, libc and the loader included), which a counted white-box model
//! does not count, so the two truths are not interchangeable.

use measure::{Metric, SystemSpec};

use super::*;

impl SubjectRun<'_> {
    /// The ground truth a white-box row is compared with: the counted one under
    /// `--metric instructions` (measured on first use), else the ground truth.
    pub(super) fn white_box_truth(&mut self) -> Result<&GroundTruth> {
        if self.settings.metric.as_deref() != Some("instructions") {
            return self.truth();
        }
        if self.counted_truth.is_none() {
            let counted = self.measure_counted_truth()?;
            self.counted_truth = Some(counted);
        }
        Ok(self.counted_truth.as_ref().expect("measured above"))
    }

    /// The ground truth's configurations measured in the plain counting build into
    /// `counted-ground-truth.db`, in the ground truth's order (`counted-ground-truth.csv`).
    fn measure_counted_truth(&mut self) -> Result<GroundTruth> {
        self.say("measuring the counted ground truth (the plain counting build)");
        let spec = SystemSpec::load(&self.spec)?.with_metric(Metric::Instructions)?;
        let workload = spec.workload(self.workload())?;
        let (truth, total) = (self.truth()?.data.clone(), self.truth()?.total);
        let configurations = truth
            .rows
            .iter()
            .map(|(cells, _)| {
                let named: Vec<(String, f64)> =
                    truth.options.iter().cloned().zip(cells.clone()).collect();
                spec.space.configuration_from_named(&named)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let store_path = self.work.join("counted-ground-truth.db");
        let store = measure::Store::open(&store_path)?;
        let settings = instrumented::Settings::new(self.work.join("counted-ground-truth"));
        let (report, variant) = instrumented::counting::measure_plain_counted(
            &store,
            &settings,
            &spec,
            workload,
            &configurations,
            &mut |_| {},
        )?;
        self.record(format!(
            "(in the runner) instrumented::counting::measure_plain_counted: {} configurations \
             of the plain counting build into {} (variant {variant})",
            configurations.len(),
            store_path.display()
        ));
        if !report.failed.is_empty() {
            bail!(
                "{} configurations failed in the plain counting build (the first: {})",
                report.failed.len(),
                report.failed[0].1
            );
        }
        let selection = instrumented::selection(&spec, workload, &variant);
        let counts: HashMap<String, f64> = store
            .summaries(&selection, Metric::Instructions)?
            .into_iter()
            .filter_map(|s| Some((s.configuration, s.summary?.value)))
            .collect();
        let rows = truth
            .rows
            .iter()
            .zip(&configurations)
            .map(|((cells, _), c)| {
                let text = spec.space.format_configuration(c);
                let count = counts.get(&text).with_context(|| {
                    format!("the plain counting build has no count of `{text}`")
                })?;
                Ok((cells.clone(), *count))
            })
            .collect::<Result<Vec<_>>>()?;
        let data = Data {
            options: truth.options.clone(),
            metric: "instructions".into(),
            rows,
        };
        let csv = self.work.join("counted-ground-truth.csv");
        data.write(&csv)?;
        Ok(GroundTruth {
            store: store_path,
            csv,
            data,
            total,
        })
    }
}
