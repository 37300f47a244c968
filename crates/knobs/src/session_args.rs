//! The flags every white-box approach shares: which spec, workload, store and build
//! directory, whether failed runs are retried and where the runs are made; they open an
//! [`instrumented::Session`].

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use instrumented::Session;

#[derive(Args)]
pub struct SessionArgs {
    /// The system spec; it needs a `[build]` section (C sources or bitcode).
    #[arg(long, default_value = "knobs.toml")]
    pub spec: PathBuf,
    /// The workload to measure with (default: the spec's first workload for measurement).
    #[arg(long)]
    pub workload: Option<String>,
    /// The results store (default: knobs.db beside the spec).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Where bitcode and instrumented programs go (default: .knobs/APPROACH beside the spec).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Run configurations whose earlier runs failed again.
    #[arg(long)]
    pub retry_failed: bool,
    /// Recorded runs per configuration (overrides the spec's `[measure] repetitions`).
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// What to measure instead of the spec's `metric`; `instructions` makes the approach
    /// count (docs/region-times.md, "Counting").
    #[arg(long, value_enum)]
    pub metric: Option<crate::measure_cmd::MetricArg>,
    /// Print the report as JSON on stdout (progress stays on stderr).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: crate::backend_args::BackendArgs,
}

impl SessionArgs {
    /// Loads the spec and opens the session for `approach` (its build directory's name).
    pub fn open(&self, approach: &str) -> Result<Session> {
        let mut session = Session::open(
            &self.spec,
            self.workload.as_deref(),
            self.store.clone(),
            self.work_dir.clone(),
            approach,
        )?;
        if let Some(metric) = self.metric {
            session.spec = session.spec.clone().with_metric(metric.into())?;
        }
        session.settings.retry_failed = self.retry_failed;
        session.settings.backend = self.backend.backend(&session.spec, &session.store_path)?;
        if let Some(r) = self.repetitions {
            session.spec.measure.set_repetitions(r)?;
        }
        Ok(session)
    }
}
