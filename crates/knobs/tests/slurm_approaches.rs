//! The white-box approaches with `--backend slurm` against the real one-node Slurm cluster
//! on this machine (`scripts/slurm-local.sh start`, which these tests run first): the region
//! times of an instrumented build measured by array tasks arrive in the store with their runs,
//! and the model is the one a local measurement gives.
//!
//! The exact comparison runs the program on the region timers' test clock (time is the work
//! the program counts, not the machine's): its region times are the same on the cluster and
//! here, to the nanosecond, however loaded the machine is.

mod common;
mod counted;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{knobs_ok, stored_runs};
use measure::campaign::Backend;
use measure::slurm::{SlurmBackend, SlurmSettings};
use measure::{Selection, Store, SystemSpec};

/// A program of three options whose regions do 1 + 2A + 3AB + 1.5C units of work (ms),
/// counted on the test clock when built with `COUNTED`, slept otherwise; its spec, with two
/// array tasks a round. With a `gate`, every run first waits until that file exists.
fn subject(dir: &Path, counted: bool, gate: Option<&Path>) -> PathBuf {
    const MAIN_C: &str = r#"#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static bool name
OPTION(A);
OPTION(B);
OPTION(C);

#ifdef COUNTED
void __knobs_test_work(uint64_t ns);
#define WORK(ms) __knobs_test_work((uint64_t)((ms) * 1e6 + 0.5))
#else
#define WORK(ms)                                                   \
    do {                                                           \
        struct timespec t_ = {0, (long)((ms) * 1e6)};              \
        nanosleep(&t_, NULL);                                      \
    } while (0)
#endif

int main(int argc, char **argv) {
    const char *gate = getenv("GATE");
    while (gate && access(gate, F_OK) != 0) {
        struct timespec t = {0, 10000000};
        nanosleep(&t, NULL);
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-') continue;
        if (argv[i][1] == 'A') A = true;
        if (argv[i][1] == 'B') B = true;
        if (argv[i][1] == 'C') C = true;
    }
    WORK(1);
    if (A) WORK(2);
    if (A && B) WORK(3);
    if (C) WORK(1.5);
    return 0;
}
"#;
    let defines = if counted {
        "defines = [\"COUNTED\"]\n"
    } else {
        ""
    };
    let env = gate
        .map(|g| format!("env = {{ GATE = \"{}\" }}\n", g.display()))
        .unwrap_or_default();
    common::write_c_subject(
        dir,
        MAIN_C,
        &format!(
            r#"name = "regions"
[build]
sources = ["main.c"]
{defines}
[run]
program = "./prog"
args = ["{{options}}"]
{env}timeout = 60
[measure]
repetitions = 2
warmup = 1
metric = "wall"
[slurm]
tasks = 2
spool = "spool"
[[workload]]
name = "w"
[[option]]
name = "A"
on = ["-A"]
[[option]]
name = "B"
on = ["-B"]
[[option]]
name = "C"
on = ["-C"]
"#
        ),
    )
}

/// ConfigCrusher through the library, on the test clock, building in `dir/work`.
fn crush(dir: &Path, store: &str, backend: Backend) -> configcrusher::Report {
    let mut session = instrumented::Session::open(
        &dir.join("knobs.toml"),
        None,
        Some(dir.join(store)),
        Some(dir.join("work")),
        "configcrusher",
    )
    .unwrap();
    session.settings.test_clock = true;
    session.settings.backend = backend;
    let options = configcrusher::Options {
        model_path: Some(dir.join(format!("{store}.model.json"))),
        ..Default::default()
    };
    let report = configcrusher::run(&session, &options, &mut instrumented::Silent).unwrap();
    let measured = report.measurement.as_ref().expect("measured");
    assert!(measured.failed.is_empty(), "{:?}", measured.failed);
    report
}

/// The ids of the runs that have region times under `selection`.
fn timed_runs(store: &Path, selection: &Selection) -> BTreeSet<i64> {
    Store::open_existing(store)
        .unwrap()
        .region_times(selection)
        .unwrap()
        .into_iter()
        .map(|(_, run, _)| run)
        .collect()
}

/// Each configuration's distinct region times (region, seconds, entries) over its runs.
fn region_times(
    store: &Path,
    selection: &Selection,
) -> BTreeMap<String, BTreeSet<(String, u64, u64)>> {
    let mut by = BTreeMap::<String, BTreeSet<(String, u64, u64)>>::new();
    for (configuration, _, r) in Store::open_existing(store)
        .unwrap()
        .region_times(selection)
        .unwrap()
    {
        by.entry(configuration)
            .or_default()
            .insert((r.region, r.seconds.to_bits(), r.entries));
    }
    by
}

/// The model file without its provenance (which names the store).
fn model(path: &Path) -> serde_json::Value {
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    file.as_object_mut().unwrap().remove("provenance");
    file
}

#[test]
fn crush_on_slurm_stores_the_region_times_and_models_as_locally() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let spec_path = subject(dir.path(), true, None);
    let local = crush(dir.path(), "local.db", Backend::Local);
    let slurm = Backend::Slurm(SlurmBackend {
        settings: SlurmSettings {
            tasks: Some(2),
            ..SlurmSettings::default()
        },
        spool: dir.path().join("spool"),
        worker: assert_cmd::cargo::cargo_bin("knobs"),
    });
    let on_slurm = crush(dir.path(), "slurm.db", slurm);
    // The same build: the same variant, measured into two stores.
    let variant = local.output.as_ref().unwrap().variant.clone();
    assert_eq!(on_slurm.output.as_ref().unwrap().variant, variant);
    let spec = SystemSpec::load(&spec_path).unwrap();
    let selection = instrumented::selection(&spec, spec.workload(None).unwrap(), &variant);
    let (here, there) = (
        region_times(&dir.path().join("local.db"), &selection),
        region_times(&dir.path().join("slurm.db"), &selection),
    );
    assert_eq!(here.len(), local.compressed.len(), "{here:?}");
    assert_eq!(
        here, there,
        "the test clock's region times, here and on the cluster"
    );
    // Every run on the cluster came from a result file of an array task, with its times.
    let runs = stored_runs(&dir.path().join("slurm.db"), &selection);
    let timed = timed_runs(&dir.path().join("slurm.db"), &selection);
    assert!(runs.len() >= 2 * local.compressed.len(), "{runs:?}");
    for run in &runs {
        assert!(run.is_ok() && timed.contains(&run.id), "{run:?}");
        assert!(!run.node.is_empty(), "{run:?}");
        assert!(
            run.source.as_deref().unwrap_or("").starts_with("slurm:"),
            "{run:?}"
        );
    }
    assert_eq!(
        model(&dir.path().join("slurm.db.model.json")),
        model(&dir.path().join("local.db.model.json"))
    );
    // The spool holds nothing once every round is stored.
    assert_eq!(
        std::fs::read_dir(dir.path().join("spool")).unwrap().count(),
        0
    );
}

#[test]
fn knobs_crush_takes_the_backend_flags_and_resumes_from_the_store() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let spec = subject(dir.path(), false, None);
    let ran = knobs_ok(
        &[
            "crush",
            "--backend",
            "slurm",
            "--tasks",
            "1",
            "--json",
            "--spec",
        ],
        &spec,
    );
    let stderr = &ran.stderr;
    assert!(stderr.contains("submitted Slurm job"), "{stderr}");
    assert!(
        stderr.contains("(1 tasks"),
        "--tasks over the spec's 2: {stderr}"
    );
    let report = ran.json();
    let variant = report["variant"].as_str().unwrap();
    assert!(variant.starts_with("configcrusher:"), "{report}");
    let store = dir.path().join("knobs.db");
    let all = Selection {
        variant: variant.to_string(),
        ..Default::default()
    };
    let runs = stored_runs(&store, &all);
    let timed = timed_runs(&store, &all);
    assert!(!runs.is_empty());
    for run in &runs {
        assert!(run.is_ok() && timed.contains(&run.id), "{run:?}");
        assert!(!run.node.is_empty() && run.source.is_some(), "{run:?}");
    }
    // Everything is in the store: a second run submits nothing.
    let again = knobs_ok(&["crush", "--backend", "slurm", "--spec"], &spec).stderr;
    assert!(!again.contains("submitted"), "{again}");
    assert!(again.contains("0 new runs"), "{again}");
}

/// A `knobs crush` killed while its first round waits on the cluster: started again, it finds
/// the round, stores its runs with their region times and submits only the second round.
#[test]
fn a_crush_killed_while_waiting_resumes_its_round_with_the_region_times() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let spec = subject(dir.path(), false, Some(&gate));
    let crush = || common::spawn_knobs(&["crush", "--backend", "slurm", "--json", "--spec"], &spec);
    let mut first = crush();
    common::wait_until("a round submitted", || {
        common::submitted(&dir.path().join("spool")).pop()
    });
    first.kill().unwrap(); // SIGKILL, while its runs wait at the gate
    first.wait().unwrap();
    let second = crush();
    std::fs::write(&gate, "").unwrap();
    let ran = common::finish(second);
    let stderr = &ran.stderr;
    assert!(stderr.contains("found round 1 again"), "{stderr}");
    assert_eq!(stderr.matches("submitted Slurm job").count(), 1, "{stderr}");
    let selection = Selection {
        variant: ran.json()["variant"].as_str().unwrap().to_string(),
        ..Default::default()
    };
    let store = dir.path().join("knobs.db");
    let runs = stored_runs(&store, &selection);
    let timed = timed_runs(&store, &selection);
    let rounds: BTreeSet<Option<i64>> = runs.iter().map(|r| r.round).collect();
    assert_eq!(rounds.len(), 2, "{runs:?}");
    for run in &runs {
        assert!(run.is_ok() && timed.contains(&run.id), "{run:?}");
    }
}

/// `knobs family` on the printer driver: the variant simulator's runs and the native
/// program's (the overhead correction) are both array tasks', and the simulator's call trees
/// arrive as region times.
#[test]
fn family_measures_both_its_campaigns_on_the_cluster() {
    let _cluster = common::slurm_cluster();
    let dir = tempfile::tempdir().unwrap();
    common::copy_example("printer", &["main.c", "knobs.toml"], dir.path());
    common::native_build(dir.path(), "printer", &[]);
    let report = knobs_ok(
        &["family", "--backend", "slurm", "--json", "--spec"],
        &dir.path().join("knobs.toml"),
    )
    .json();
    let store = dir.path().join("knobs.db");
    for (variant, timed) in [(report["variant"].as_str().unwrap(), true), ("", false)] {
        let selection = Selection {
            variant: variant.to_string(),
            ..Default::default()
        };
        let runs = stored_runs(&store, &selection);
        let with_times = timed_runs(&store, &selection);
        assert!(!runs.is_empty(), "no runs of `{variant}`");
        for run in &runs {
            assert!(run.is_ok(), "{run:?}");
            assert!(
                run.source.as_deref().unwrap_or("").starts_with("slurm:"),
                "{run:?}"
            );
            assert_eq!(with_times.contains(&run.id), timed, "{run:?}");
        }
    }
    let model = dir.path().join("printer.family.json");
    let terms =
        common::term_labels(&serde_json::from_slice(&std::fs::read(&model).unwrap()).unwrap());
    assert!(terms.iter().any(|t| t == "ColorScan"), "{terms:?}");
}

/// The approaches in counted instructions (`counted::MAIN_C`, a program with real
/// computation): each run's count, read from the region file its array task kept, arrives
/// in the store with the run, and the model is the one a local measurement gives, exactly
/// (counts do not depend on where or how loaded the machine is).
#[test]
fn counted_approaches_on_slurm_store_the_counts_and_model_as_locally() {
    let _cluster = common::slurm_cluster();
    let spec_text = counted::spec() + "\n[slurm]\ntasks = 2\nspool = \"spool\"\n";
    let (dir, spec) = common::c_subject(counted::MAIN_C, &spec_text);
    // Each approach in stores of its own: SPLat and SPLat-delayed measure the same build.
    for (name, command, extra) in [
        ("crush", "crush", None),
        ("splat", "splat", None),
        ("splat-delayed", "splat", Some("--delayed")),
    ] {
        let run = |backend: &str| {
            let store = dir.path().join(format!("{name}-{backend}.db"));
            let out = dir.path().join(format!("{name}-{backend}.json"));
            let mut args = vec![command, "--backend", backend, "--json"];
            args.extend(extra);
            let (store_arg, out_arg) = (store.display().to_string(), out.display().to_string());
            args.extend(["--store", &store_arg, "-o", &out_arg, "--spec"]);
            let ran = knobs_ok(&args, &spec);
            (ran, store, out)
        };
        let (_, _, local_model) = run("local");
        let (ran, store, slurm_model) = run("slurm");
        assert!(
            ran.stderr.contains("submitted Slurm job"),
            "{name}: {}",
            ran.stderr
        );
        assert_eq!(model(&slurm_model), model(&local_model), "{name}");
        let report = ran.json();
        let variant = report["variant"].as_str().unwrap();
        let selection = Selection {
            variant: variant.to_string(),
            ..Default::default()
        };
        let runs = stored_runs(&store, &selection);
        assert!(!runs.is_empty(), "{name}: no runs under {variant}");
        for run in &runs {
            assert!(run.is_ok(), "{run:?}");
            assert!(run.source.is_some(), "an array task's run: {run:?}");
            assert!(run.instructions.is_some_and(|n| n > 0), "{run:?}");
        }
    }
}
