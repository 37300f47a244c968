//! The real source: a spec's `[history]`, each commit built on demand (cached by
//! `history`), each configuration measured at a commit through the results store (so a
//! killed detection resumes: what was measured is read back, not rerun). A batch of the
//! search is one measurement campaign across its commits' builds: on Slurm, one job array
//! per round, whatever the number of commits and configurations, after one job array that
//! builds the batch's commits the cache does not have.
//!
//! A commit that does not build takes the closest earlier commit that did, as the paper
//! treats them; its runs are stored under that commit.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use history::{Build, Commit, History, Variants};
use measure::spec::BuildValues;
use measure::{AtCommit, Campaign, Event, Selection, Store, SystemSpec, Workload};
use serde::Serialize;
use space::{ConfigSpace, Configuration};

use crate::regions::{RegionSettings, RegionsReport};
use crate::source::{CommitInfo, MeasurementSource, Observation};
use crate::{Detection, Error, Settings};

/// What the real source spent.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Effort {
    /// Commits built now, and found in the build cache.
    pub builds: usize,
    pub cached_builds: usize,
    /// Commits that did not build (each stood in for by the closest earlier one that did).
    pub failed_builds: Vec<FailedBuild>,
    pub build_seconds: f64,
    /// Runs made now (repetitions and warm-ups included), and measurements read back from
    /// the store.
    pub runs: usize,
    pub reused: usize,
    pub measure_seconds: f64,
    /// Measurement campaigns, one per batch of the search (on Slurm, each round of one is a
    /// job array).
    pub campaigns: usize,
    /// Callgrind profiles made now for `--regions` (cached ones not counted).
    pub profiles: usize,
    pub profile_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FailedBuild {
    pub commit: String,
    pub why: String,
    pub log: String,
}

/// A detection over a spec's history: the search, the regions of its change points when
/// asked, what both cost, and the store the runs are in.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryDetection {
    #[serde(flatten)]
    pub detection: Detection,
    pub effort: Effort,
    pub store: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<RegionsReport>,
}

pub struct StoreSource<'a> {
    spec: &'a SystemSpec,
    workload: &'a Workload,
    store: &'a Store,
    history: History,
    commits: Vec<Commit>,
    /// Per commit index and set of build-option values, the build that stands for it (its
    /// own or an earlier commit's with the same values), once known.
    builds: HashMap<(usize, BuildValues), Option<(String, std::path::PathBuf)>>,
    effort: Effort,
    progress: Box<dyn FnMut(String) + 'a>,
    /// The metric every commit is read by: the spec's, with `auto` resolved once from the
    /// first runs, so that no commit is read by another metric than the rest.
    metric: Option<measure::Metric>,
    /// Where the runs (and on Slurm, the builds) are made.
    runs_on: measure::campaign::Backend,
    /// Commits the cluster built for this detection: their builds are new, not cached.
    built_on_cluster: HashSet<String>,
    /// Job arrays of builds submitted, for their names.
    build_arrays: usize,
}

impl<'a> StoreSource<'a> {
    pub fn new(
        spec: &'a SystemSpec,
        workload: &'a Workload,
        store: &'a Store,
        progress: Box<dyn FnMut(String) + 'a>,
    ) -> Result<StoreSource<'a>, Error> {
        let history = History::open(spec).map_err(|e| Error::Invalid(e.to_string()))?;
        let commits = history
            .commits()
            .map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(StoreSource {
            spec,
            workload,
            store,
            history,
            commits,
            builds: HashMap::new(),
            effort: Effort::default(),
            progress,
            metric: None,
            runs_on: measure::campaign::Backend::Local,
            built_on_cluster: HashSet::new(),
            build_arrays: 0,
        })
    }

    /// Makes the runs on `backend` (here by default); on Slurm, the builds too.
    pub fn runs_on(mut self, backend: measure::campaign::Backend) -> Self {
        self.runs_on = backend;
        self
    }

    pub fn effort(&self) -> &Effort {
        &self.effort
    }

    /// Runs the search over the history, then, with `regions`, profiles its change points.
    pub fn detect(
        mut self,
        settings: &Settings,
        regions: Option<&RegionSettings>,
    ) -> Result<HistoryDetection, Error> {
        let detection = crate::detect(&mut self, settings)?;
        let regions = regions
            .map(|r| crate::regions::regions(&detection, &mut self, r))
            .transpose()?;
        Ok(HistoryDetection {
            effort: self.effort.clone(),
            store: self.store.path().display().to_string(),
            detection,
            regions,
        })
    }

    /// The build standing for commit `index` with a configuration's build-option values:
    /// its own, else the closest earlier one's with the same values. Without build options
    /// (no values) it is the commit's build as `knobs history build` makes it.
    fn build(
        &mut self,
        index: usize,
        values: &BuildValues,
    ) -> Result<Option<(String, std::path::PathBuf)>, Error> {
        if let Some(b) = self.builds.get(&(index, values.clone())) {
            return Ok(b.clone());
        }
        let commit = self.commits[index].id.clone();
        let started = Instant::now();
        let build = Variants::at_commit(&self.history, &commit)
            .build(values, false)
            .map_err(|e| Error::Measure(e.to_string()))?;
        let shown = match values.describe().as_str() {
            "defaults" => String::new(),
            v => format!(" ({v})"),
        };
        self.effort.build_seconds += started.elapsed().as_secs_f64();
        let standing = match build {
            Build::Built(b) => {
                if b.cached && !self.built_on_cluster.contains(&commit) {
                    self.effort.cached_builds += 1;
                } else {
                    self.effort.builds += 1;
                    (self.progress)(format!(
                        "built {}{shown} in {:.0} s",
                        &commit[..12.min(commit.len())],
                        b.seconds
                    ));
                }
                Some((b.commit, b.program))
            }
            Build::Failed(f) => {
                if self.built_on_cluster.contains(&commit) {
                    self.effort.builds += 1;
                }
                (self.progress)(format!(
                    "commit {}{shown} does not build ({}); the closest earlier build stands for it",
                    &commit[..12.min(commit.len())],
                    f.why
                ));
                self.effort.failed_builds.push(FailedBuild {
                    commit: commit.clone(),
                    why: f.why.clone(),
                    log: f.log.display().to_string(),
                });
                // Earlier commits are built on demand until one builds.
                let mut found = None;
                for earlier in (0..index).rev() {
                    if let Some(b) = self.build(earlier, values)? {
                        found = Some(b);
                        break;
                    }
                }
                found
            }
        };
        self.builds
            .insert((index, values.clone()), standing.clone());
        Ok(standing)
    }

    /// On Slurm, builds the commits of `indices` that the cache has neither a build nor a
    /// failure of as one job array (`knobs history build` per commit, into the cache on the
    /// shared file system), and waits for it. Earlier commits standing in for one that
    /// failed are built here, on demand.
    fn build_on_cluster(&mut self, indices: &[usize]) -> Result<(), Error> {
        let measure::campaign::Backend::Slurm(slurm) = &self.runs_on else {
            return Ok(());
        };
        // The job array builds commits as `knobs history build` does; builds of build
        // options are made here, on demand, before the runs are submitted.
        if !self.spec.build_options().is_empty() {
            return Ok(());
        }
        let mut pending: Vec<String> = Vec::new();
        for &i in indices {
            let id = &self.commits[i].id;
            if !self.builds.contains_key(&(i, BuildValues::default()))
                && !pending.contains(id)
                && self.history.status(id).is_none()
            {
                pending.push(id.clone());
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        let spec = std::path::absolute(&self.spec.path)
            .map_err(|e| Error::Invalid(format!("{}: {e}", self.spec.path.display())))?;
        let commands = self
            .history
            .slurm_commands(&slurm.worker, &spec, &pending, None, false);
        (self.progress)(format!(
            "building {} commits as {} Slurm array tasks",
            pending.len(),
            commands.len()
        ));
        self.build_arrays += 1;
        let name = format!("knobs-build-{}-{}", std::process::id(), self.build_arrays);
        let progress = &mut self.progress;
        let unfinished = slurm
            .run_commands(&name, &commands, &mut |line| progress(line.to_string()))
            .map_err(|e| Error::Measure(e.to_string()))?;
        for (task, log) in unfinished {
            (self.progress)(format!(
                "task {task} of the builds ended without finishing (failed, cancelled or out \
                 of time; its log: {}): its commits are built here",
                log.display()
            ));
        }
        self.effort.build_seconds += started.elapsed().as_secs_f64();
        self.built_on_cluster.extend(pending);
        Ok(())
    }
}

impl MeasurementSource for StoreSource<'_> {
    fn space(&self) -> &ConfigSpace {
        &self.spec.space
    }

    fn commits(&self) -> usize {
        self.commits.len()
    }

    fn measure(
        &mut self,
        config: &Configuration,
        commits: &[usize],
    ) -> Result<Vec<Observation>, Error> {
        let mut answers = self.measure_batch(&[(config.clone(), commits.to_vec())])?;
        Ok(answers.pop().unwrap_or_default())
    }

    /// Builds every commit the batch needs (here, or found in the build cache), then
    /// measures every (commit, configuration) pair as one campaign; each pair's runs are
    /// stored under the commit of its build, as a campaign at that commit stores them.
    fn measure_batch(
        &mut self,
        requests: &[(Configuration, Vec<usize>)],
    ) -> Result<Vec<Vec<Observation>>, Error> {
        let wanted: Vec<usize> = requests
            .iter()
            .flat_map(|(_, c)| c.iter().copied())
            .collect();
        self.build_on_cluster(&wanted)?;
        // Per request, its commits by the build that stands for them (failed builds share
        // the closest earlier one's, and its measurement).
        let mut by_build: Vec<BTreeMap<String, Vec<usize>>> = Vec::new();
        let mut pairs = Vec::new();
        for (config, commits) in requests {
            let values = self.spec.build_values(config);
            let mut builds: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for &c in commits {
                if let Some((id, program)) = self.build(c, &values)? {
                    let indices = builds.entry(id.clone()).or_insert_with(|| {
                        pairs.push(AtCommit {
                            commit: id,
                            program,
                            configuration: config.clone(),
                            failed_build: None,
                        });
                        Vec::new()
                    });
                    indices.push(c);
                }
            }
            by_build.push(builds);
        }
        if pairs.is_empty() {
            return Ok(vec![Vec::new(); requests.len()]);
        }
        let started = Instant::now();
        let campaign = Campaign {
            backend: self.runs_on.clone(),
            ..Campaign::new(self.spec, self.workload)
        };
        let progress = &mut self.progress;
        let mut runs = 0usize;
        let report = campaign
            .run_at_commits(self.store, &pairs, &mut |e| match e {
                Event::Ran { .. } => runs += 1,
                Event::Note(note) => progress(note.to_string()),
                _ => {}
            })
            .map_err(|e| Error::Measure(e.to_string()))?;
        self.effort.measure_seconds += started.elapsed().as_secs_f64();
        self.effort.campaigns += 1;
        self.effort.reused += report.reused;
        self.effort.runs += runs;
        let at = |commit: &str| -> Selection { campaign.selection().at_commit(commit) };
        let metric = match self.metric {
            Some(m) => m,
            None => {
                let (m, why) = self
                    .store
                    .resolve_metric(&at(&pairs[0].commit), self.spec.measure.metric)
                    .map_err(|e| Error::Measure(e.to_string()))?;
                (self.progress)(format!("metric: {why}"));
                *self.metric.insert(m)
            }
        };
        let mut answers = Vec::new();
        for ((config, _), builds) in requests.iter().zip(by_build) {
            let text = self.spec.space.format_configuration(config);
            let mut out = Vec::new();
            for (id, indices) in builds {
                // This configuration's runs only: the store holds every other one at the
                // commit.
                let values: Vec<f64> = self
                    .store
                    .runs_of(&at(&id), &text)
                    .map_err(|e| Error::Measure(e.to_string()))?
                    .iter()
                    .filter(|r| r.is_ok())
                    .map(|r| r.metric(metric))
                    .collect();
                match measure::Summary::of(&values).map(|s| s.value) {
                    Some(value) => out.extend(
                        indices
                            .into_iter()
                            .map(|commit| Observation { commit, value }),
                    ),
                    None => (self.progress)(format!(
                        "`{text}` failed at commit {}; it is left out there",
                        &id[..12.min(id.len())]
                    )),
                }
            }
            answers.push(out);
        }
        Ok(answers)
    }

    fn commit_info(&self, commit: usize) -> CommitInfo {
        let c = &self.commits[commit];
        CommitInfo {
            id: c.id.clone(),
            date: c.date.clone(),
            subject: c.subject.clone(),
        }
    }
}

/// How much longer a run under callgrind may take than the spec's timeout allows.
const CALLGRIND_SLOWDOWN: u32 = 100;

impl crate::regions::Profiler for StoreSource<'_> {
    /// The configuration run once under `valgrind --tool=callgrind` at the build standing
    /// for `commit`; the output is kept under the build cache (`.knobs-builds/profiles/`,
    /// keyed by the build, the command line, environment and workload files), so a profile
    /// is made once.
    fn profile(
        &mut self,
        config: &Configuration,
        commit: usize,
    ) -> Result<crate::regions::Profile, Error> {
        let values = self.spec.build_values(config);
        let Some((id, program)) = self.build(commit, &values)? else {
            return Err(Error::Measure(format!(
                "no build stands for commit {} (it and every earlier one failed)",
                self.commits[commit].id
            )));
        };
        let invocation = self
            .spec
            .invocation_of(program.clone(), config, self.workload)
            .map_err(|e| Error::Measure(e.to_string()))?;
        let key = profile_key(
            &id,
            &invocation,
            self.spec.workload_digest(self.workload).as_deref(),
        );
        let dir = self.history.builds_dir().join("profiles");
        let path = dir.join(format!("{key}.callgrind"));
        let stripped_marker = dir.join(format!("{key}.stripped"));
        let unreadable = "valgrind cannot read this build's debug information (DWARF 5 of a \
                          newer compiler?): functions are named from the symbol table, without \
                          file:line";
        let builds_dir = std::fs::canonicalize(self.history.builds_dir())
            .unwrap_or_else(|_| self.history.builds_dir().to_path_buf());
        let parse = |text: &str| {
            crate::regions::parse_callgrind(text)
                .map(|p| within_build(p, &builds_dir))
                .map_err(Error::Measure)
        };
        if let Ok(text) = std::fs::read_to_string(&path) {
            let mut p = parse(&text)?;
            if stripped_marker.exists() {
                p.note = Some(unreadable.to_string());
            }
            return Ok(p);
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::Measure(format!("{}: {e}", dir.display())))?;
        (self.progress)(format!(
            "profiling `{}` at {} under callgrind",
            self.spec.space.format_configuration(config),
            &id[..12.min(id.len())]
        ));
        let started = Instant::now();
        let mut result = callgrind(&invocation, &dir, &key);
        let mut stripped = false;
        if let Err(why) = &result
            && measure::instructions::debuginfo_unreadable(why)
        {
            let copy =
                measure::instructions::stripped_copy(&program, &dir.join(format!("{key}.strip")))
                    .map_err(Error::Measure)?;
            let inv = measure::Invocation {
                program: copy,
                ..invocation.clone()
            };
            result = callgrind(&inv, &dir, &key);
            stripped = true;
        }
        self.effort.profiles += 1;
        self.effort.profile_seconds += started.elapsed().as_secs_f64();
        let text = result.map_err(|why| {
            Error::Measure(format!(
                "profiling `{}` at {}: {why}",
                self.spec.space.format_configuration(config),
                &id[..12.min(id.len())]
            ))
        })?;
        let mut p = parse(&text)?;
        if stripped {
            let _ = std::fs::write(&stripped_marker, "");
            p.note = Some(unreadable.to_string());
        }
        // Written last and renamed, so a killed profile leaves nothing that reads as done.
        let partial = dir.join(format!("{key}.callgrind.partial"));
        std::fs::write(&partial, &text)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|e| Error::Measure(format!("{}: {e}", path.display())))?;
        let _ = std::fs::remove_dir_all(dir.join(&key));
        let _ = std::fs::remove_dir_all(dir.join(format!("{key}.strip")));
        Ok(p)
    }
}

/// Source files named relative to their build's directory: every commit is built in a
/// directory of its own, and a function is the same function before and after a change.
fn within_build(
    mut p: crate::regions::Profile,
    builds_dir: &std::path::Path,
) -> crate::regions::Profile {
    for f in &mut p.functions {
        if let Some(file) = &f.file
            && let Ok(rest) = std::path::Path::new(file).strip_prefix(builds_dir)
        {
            // Without the build's own directory, and `a/../` read as nothing (the compiler
            // names some headers `src/liblzma/../../src/liblzma/…`).
            let mut parts: Vec<std::path::Component> = Vec::new();
            for c in rest.components().skip(1) {
                match c {
                    std::path::Component::ParentDir
                        if matches!(parts.last(), Some(std::path::Component::Normal(_))) =>
                    {
                        parts.pop();
                    }
                    std::path::Component::CurDir => {}
                    c => parts.push(c),
                }
            }
            let path: std::path::PathBuf = parts.iter().collect();
            f.file = Some(path.display().to_string());
        }
    }
    p
}

/// The cache key of a profile: the build, the command line, the environment and the
/// workload's files.
fn profile_key(build: &str, inv: &measure::Invocation, workload_digest: Option<&str>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [build.to_string(), format!("{:?}", inv.args)]
        .into_iter()
        .chain([format!("{:?}", inv.env), format!("{:?}", inv.stdin)])
        .chain(workload_digest.map(str::to_string))
    {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let hex: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}-{hex}", &build[..12.min(build.len())])
}

/// The invocation run once under callgrind (its files in `dir/key/`); the output's text, or
/// what went wrong (valgrind's own complaints included).
fn callgrind(
    inv: &measure::Invocation,
    dir: &std::path::Path,
    key: &str,
) -> Result<String, String> {
    let scratch = dir.join(key);
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let out = scratch.join("callgrind.out");
    let mut args = vec![
        "--tool=callgrind".to_string(),
        format!("--callgrind-out-file={}", out.display()),
        format!("--log-file={}/valgrind.log", scratch.display()),
        "--".to_string(),
        inv.cwd.join(&inv.program).display().to_string(),
    ];
    args.extend(inv.args.iter().cloned());
    let wrapped = measure::Invocation {
        program: "valgrind".into(),
        arg0: None,
        args,
        timeout: inv.timeout.saturating_mul(CALLGRIND_SLOWDOWN),
        ..inv.clone()
    };
    let result = measure::runner::run(&wrapped);
    let complaint = measure::instructions::counter_complaint(&scratch);
    if !result.outcome.is_ok() {
        return Err(format!(
            "{:?}{}",
            result.outcome,
            complaint.map(|c| format!(": {c}")).unwrap_or_default()
        ));
    }
    std::fs::read_to_string(&out).map_err(|e| format!("no callgrind output ({e})"))
}
