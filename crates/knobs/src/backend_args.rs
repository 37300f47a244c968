//! `--backend` and the Slurm flags of commands that measure, and the hidden
//! `knobs slurm-worker` that an array task runs (`measure::slurm`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use measure::SystemSpec;
use measure::campaign::Backend;
use measure::slurm::SlurmBackend;

/// Where runs are made.
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum BackendArg {
    /// On this machine.
    #[default]
    Local,
    /// As Slurm job arrays, a round at a time (see docs/guide/cluster.md).
    Slurm,
}

#[derive(Args)]
pub struct BackendArgs {
    /// Where the runs are made: here, or as Slurm jobs (`sbatch` must work here).
    #[arg(long, value_enum, default_value_t = BackendArg::Local)]
    backend: BackendArg,
    /// Slurm partition (overrides the spec's `[slurm] partition`).
    #[arg(long)]
    partition: Option<String>,
    /// Time limit of each array task, as `sbatch --time` takes it (overrides `time_limit`).
    #[arg(long)]
    time_limit: Option<String>,
    /// CPUs per array task (overrides `cpus_per_task`).
    #[arg(long)]
    cpus_per_task: Option<u32>,
    /// Array tasks per round, each measuring its share and the reference (overrides `tasks`).
    #[arg(long)]
    tasks: Option<u32>,
    /// One more `sbatch` argument (repeatable; added to the spec's `sbatch_args`).
    #[arg(long = "sbatch-arg", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    /// The spool directory every node reads and writes (overrides `spool`; default:
    /// .knobs-slurm beside the store).
    #[arg(long)]
    spool: Option<PathBuf>,
}

impl BackendArgs {
    /// `--tasks` as given: the spec's `tasks` is the number a round is split into, not how
    /// many commits' builds run side by side.
    pub fn tasks_flag(&self) -> Option<u32> {
        self.tasks
    }

    /// The campaign's backend: the spec's `[slurm]` settings with the flags over them.
    pub fn backend(&self, spec: &SystemSpec, store: &Path) -> Result<Backend> {
        if let BackendArg::Local = self.backend {
            return Ok(Backend::Local);
        }
        let mut settings = spec.slurm.clone();
        settings.partition = self.partition.clone().or(settings.partition);
        settings.time_limit = self.time_limit.clone().or(settings.time_limit);
        settings.cpus_per_task = self.cpus_per_task.or(settings.cpus_per_task);
        settings.tasks = self.tasks.or(settings.tasks);
        settings
            .sbatch_args
            .extend(self.sbatch_args.iter().cloned());
        if settings.tasks == Some(0) || settings.cpus_per_task == Some(0) {
            bail!("--tasks and --cpus-per-task must be at least 1");
        }
        let spool = match (&self.spool, &settings.spool) {
            (Some(flag), _) => flag.clone(),
            (None, Some(in_spec)) => spec.dir.join(in_spec),
            (None, None) => measure::spec::beside(store, ".knobs-slurm"),
        };
        std::fs::create_dir_all(&spool).with_context(|| spool.display().to_string())?;
        let spool = std::path::absolute(&spool).with_context(|| spool.display().to_string())?;
        let worker = std::env::current_exe().context("where is this knobs binary")?;
        Ok(Backend::Slurm(SlurmBackend {
            settings,
            spool,
            worker,
        }))
    }
}

#[derive(Args)]
pub struct WorkerArgs {
    /// The round's directory in the spool.
    dir: PathBuf,
    /// The array task (`$SLURM_ARRAY_TASK_ID`).
    task: u32,
}

/// `knobs slurm-worker DIR TASK`: one array task's share of a round.
pub fn slurm_worker(args: WorkerArgs) -> Result<crate::Outcome> {
    // SAFETY: knobs has started no thread yet.
    unsafe { measure::slurm::drop_task_variables() };
    // `scancel` and the time limit send SIGTERM: the run in progress goes with the task.
    measure::runner::kill_runs_on_interrupt();
    measure::slurm::work(&args.dir, args.task)?;
    Ok(crate::Outcome::Done)
}
