//! The sampling profiler linked into real programs (clang 19, real runs): a C program calling
//! the API directly with busy loops and sleeps of known length in nested functions, and the
//! running example instrumented at method level through `llvm` (one region per function).
//! How precisely the CPU clock attributes time under contention is a benchmark
//! (`examples/bench_cpu_attribution.rs`), not a test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use ir::InstKind;
use ir::ProgramPoint;
use llvm::{CompileOptions, RegionProbe, compile_c, instrument, link_instrumented};
use runtime::profiler::{self, Profile, ProfileClock};

/// The scenarios (`prog SCENARIO`).
const PROGRAM: &str = include_str!("profiler_scenarios.c");

fn clang() -> &'static Path {
    Path::new("clang-19")
}

fn tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-profiler")
}

/// The test program, linked with the profiler once per test binary.
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = tmp();
        std::fs::create_dir_all(&dir).unwrap();
        let lib = profiler::build(clang(), &dir).unwrap();
        let src = dir.join("prog.c");
        std::fs::write(&src, PROGRAM).unwrap();
        let exe = dir.join(format!("prog-{}", std::process::id()));
        let out = Command::new(clang())
            .args(["-O2", "-Wall", "-Werror"])
            .arg(&src)
            .arg(&lib)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        exe
    })
}

/// Runs a scenario with the given profiler environment; the profile, if one was written.
fn run(scenario: &str, env: &[(&str, &str)]) -> (Output, Option<Profile>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profile.tsv");
    let mut cmd = Command::new(program());
    cmd.arg(scenario)
        .env_remove(profiler::ENV_VAR)
        .env_remove(profiler::PERIOD_VAR)
        .env_remove(profiler::CLOCK_VAR);
    for (k, v) in env {
        cmd.env(k, v.replace("$FILE", file.to_str().unwrap()));
    }
    let out = cmd.output().unwrap();
    assert!(out.stderr.is_empty(), "{out:?}");
    let profile = file.exists().then(|| Profile::read(&file).unwrap());
    (out, profile)
}

/// The program's own measurement of the main thread's self time per region (`None`: base).
fn truth(out: &Output) -> BTreeMap<Option<u32>, f64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (id, s) = l.split_once(' ').unwrap();
            let id: i64 = id.parse().unwrap();
            ((id >= 0).then_some(id as u32), s.parse().unwrap())
        })
        .collect()
}

/// How often a scenario is run before a starved sampler fails the test.
const ATTEMPTS: u32 = 6;

/// Profiled runs of this test binary take turns: parallel tests would otherwise starve each
/// other's samplers on a small machine.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A profiled run of a scenario whose sampler kept up (ran again, with a pause, while the
/// machine is too busy for it; a test fails rather than check nothing).
fn profiled(scenario: &str, extra: &[(&str, &str)]) -> (Output, Profile) {
    let mut env = vec![(profiler::ENV_VAR, "$FILE")];
    env.extend_from_slice(extra);
    for attempt in 1..=ATTEMPTS {
        let (out, p) = {
            let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
            run(scenario, &env)
        };
        let p = p.expect("a profile was written");
        if !starved(&p) {
            return (out, p);
        }
        eprintln!(
            "note: {scenario}: sampler starved ({} of its ticks missed), run {attempt} of {ATTEMPTS}",
            p.missed
        );
        std::thread::sleep(std::time::Duration::from_millis(250 * u64::from(attempt)));
    }
    panic!("{scenario}: the sampler was starved in all {ATTEMPTS} runs: the machine is too busy");
}

/// Whether the wall-clock sampler was starved (missed more than a tenth of its ticks: a
/// loaded machine), so that per-region precision cannot be expected of this run.
fn starved(p: &Profile) -> bool {
    p.missed as f64 * p.period > 0.1 * p.times.wall
}

/// `got` seconds within `slack` samples, 10 % of `want` seconds and 5 ms (how late the
/// sampler may wake) of `want` seconds ([`profiled`] gives only runs whose sampler kept up).
fn near(got: f64, want: f64, p: &Profile, slack: f64, what: &str) {
    let tol = slack * p.weight + 0.1 * want + 0.005;
    assert!(
        (got - want).abs() <= tol,
        "{what}: {got} s, expected {want} ± {tol}: {p:?}"
    );
}

#[test]
fn self_time_per_region_and_base() {
    let (out, p) = profiled("nested", &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(p.clock, ProfileClock::Wall);
    assert_eq!(p.period, 0.001);
    let (t, tr) = (&p.times, truth(&out));
    assert!(tr[&Some(0)] >= 0.060 && tr[&Some(1)] >= 0.040 && tr[&None] >= 0.030);
    near(
        t.region(0).self_seconds,
        tr[&Some(0)],
        &p,
        3.0,
        "f's self time",
    );
    near(
        t.region(1).self_seconds,
        tr[&Some(1)],
        &p,
        3.0,
        "g's self time",
    );
    near(t.base, tr[&None], &p, 3.0, "base");
    assert_eq!((t.region(0).entries, t.region(1).entries), (1, 1));
    assert_eq!(
        (t.threads, t.unmatched_exits, t.open_at_exit, p.unwound),
        (1, 0, 0, 0)
    );
    // Seconds are samples × period; the samples add up; the total is the wall time to
    // within a period (whole periods only are charged).
    assert_eq!(
        p.samples,
        p.base_samples + p.region_samples(0) + p.region_samples(1)
    );
    assert!((t.total - p.samples as f64 * p.weight).abs() < 1e-6);
    assert!((t.base + t.regions_seconds() - t.total).abs() < 1e-6);
    assert!(
        t.wall - t.total >= -1e-9 && t.wall - t.total < p.period,
        "{p:?}"
    );
}

#[test]
fn the_period_is_honoured() {
    for (us, period) in [("5000", 0.005), ("200", 0.0002), ("0", 0.001), ("x", 0.001)] {
        let (out, p) = profiled("nested", &[(profiler::PERIOD_VAR, us)]);
        let tr = truth(&out);
        assert!((p.period - period).abs() < 1e-12, "{us}: {p:?}");
        let expected = (p.times.wall / period).floor() as u64;
        assert_eq!(p.samples + p.missed, expected, "{us}: {p:?}");
        near(p.times.region(0).self_seconds, tr[&Some(0)], &p, 3.0, us);
        near(p.times.region(1).self_seconds, tr[&Some(1)], &p, 3.0, us);
    }
}

#[test]
fn nothing_is_written_without_the_variable() {
    let (out, p) = run("nested", &[]);
    assert!(out.status.success());
    assert!(p.is_none());
    let (out, p) = run("nested", &[(profiler::ENV_VAR, "")]);
    assert!(out.status.success() && p.is_none());
}

#[test]
fn exit_from_deep_inside_still_writes() {
    let (out, p) = profiled("exit-deep", &[]);
    assert_eq!(out.status.code(), Some(3));
    let (t, tr) = (&p.times, truth(&out));
    assert_eq!(t.open_at_exit, 3);
    for id in 0..3 {
        near(
            t.region(id).self_seconds,
            tr[&Some(id)],
            &p,
            3.0,
            &format!("region {id}"),
        );
        assert_eq!(t.region(id).entries, 1);
    }
}

#[test]
fn wall_clock_counts_sleep_without_interrupting_it() {
    // The program exits 7 if its single nanosleep returned early.
    let (out, p) = profiled("cpu-vs-sleep", &[]);
    assert!(out.status.success(), "{out:?}");
    let (t, tr) = (&p.times, truth(&out));
    near(
        t.region(0).self_seconds,
        tr[&Some(0)],
        &p,
        3.0,
        "cpu_work (wall)",
    );
    assert!(tr[&Some(1)] >= 0.060);
    near(
        t.region(1).self_seconds,
        tr[&Some(1)],
        &p,
        3.0,
        "sleeper (wall)",
    );
}

#[test]
fn cpu_clock_counts_cpu_time() {
    // The CPU clock's totals: the 60 ms busy loop and nearly nothing of the 60 ms sleep
    // (attribution per region: `examples/bench_cpu_attribution.rs`).
    let (out, p) = profiled("cpu-vs-sleep", &[(profiler::CLOCK_VAR, "cpu")]);
    assert!(out.status.success(), "{out:?}"); // the sleep was not interrupted
    assert_eq!(p.clock, ProfileClock::Cpu);
    let t = &p.times;
    // Under contention the kernel processes CPU-timer expiries late and loses some: the lower
    // bound is checked only by `cpu_clock_attribution`.
    assert!(
        t.total > 0.0 && t.total <= 0.060 * 1.2 + 5.0 * p.period,
        "{p:?}"
    );
    assert!(t.wall >= 0.120 && t.region(1).entries == 1, "{p:?}");
}

#[test]
fn threads_are_sampled_each_while_alive() {
    let (out, p) = profiled("threads", &[]);
    assert!(out.status.success());
    let (t, tr) = (&p.times, truth(&out));
    assert_eq!(t.threads, 3);
    // Two workers, 40 ms each, at the same time: 80 thread-milliseconds.
    near(t.region(3).self_seconds, 0.080, &p, 6.0, "workers");
    assert_eq!(t.region(3).entries, 2);
    // Main waits in region 4 meanwhile; after the join only main is sampled.
    near(
        t.region(4).self_seconds,
        tr[&Some(4)],
        &p,
        4.0,
        "main joining",
    );
    near(t.base, tr[&None], &p, 3.0, "base after the join");
    let (out, p) = profiled("threads", &[(profiler::CLOCK_VAR, "cpu")]);
    assert!(out.status.success());
    assert_eq!(p.times.threads, 3);
    assert!(p.times.total <= 0.120 * 1.2 + 9.0 * p.period, "{p:?}");
}

#[test]
fn an_exit_below_the_top_pops_what_longjmp_skipped() {
    let (out, p) = profiled("longjmp", &[]);
    assert!(out.status.success());
    assert_eq!((p.unwound, p.times.unmatched_exits), (2, 0));
    assert_eq!(p.times.open_at_exit, 0);
    near(
        p.times.base,
        truth(&out)[&None],
        &p,
        3.0,
        "base after the longjmp",
    );
}

#[test]
fn a_forked_child_does_not_write() {
    let (out, p) = profiled("fork", &[]);
    assert!(out.status.success());
    assert_eq!(p.times.region(9).entries, 0);
    near(
        p.times.region(0).self_seconds,
        truth(&out)[&Some(0)],
        &p,
        3.0,
        "parent",
    );
}

/// The `wall` line of a profile.
fn p_wall(file: &Path) -> f64 {
    Profile::read(file).unwrap().times.wall
}

/// One region per defined function: starts before the entry block's first instruction, ends
/// before every return.
fn method_probes(p: &ir::Program) -> (Vec<RegionProbe>, BTreeMap<String, u32>) {
    let mut probes = Vec::new();
    let mut ids = BTreeMap::new();
    for f in &p.functions {
        let Some(entry) = f.entry() else { continue };
        let id = probes.len() as u32;
        let ends = f
            .blocks
            .iter()
            .flat_map(|&b| p.block(b).insts.iter().copied())
            .filter(|&i| matches!(p.inst(i).kind, InstKind::Return { .. }))
            .map(ProgramPoint::Before)
            .collect();
        probes.push(RegionProbe {
            id,
            start: vec![ProgramPoint::Before(p.block(entry).insts[0])],
            end: ends,
        });
        ids.insert(f.name.clone(), id);
    }
    (probes, ids)
}

#[test]
fn running_example_at_method_level() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/running-example/main.c")
        .canonicalize()
        .unwrap();
    let linked = compile_c(&[source], &CompileOptions::default(), &d.join("bc")).unwrap();
    let ssa = d.join("prog.ssa.bc");
    let translation = llvm::translate_bitcode(&linked, Some(&ssa)).unwrap();
    let (probes, ids) = method_probes(&translation.program);
    let bc = d.join("methods.bc");
    instrument(
        &ssa,
        &translation.program,
        &translation.positions,
        &probes,
        &bc,
    )
    .unwrap();
    let lib = profiler::build(clang(), &tmp()).unwrap();
    let exe = d.join("methods");
    let flags: Vec<String> = profiler::LINK_FLAGS.iter().map(|s| s.to_string()).collect();
    link_instrumented(clang(), &bc, std::slice::from_ref(&lib), &flags, &exe, true).unwrap();

    let unit = 0.010;
    let (foo, main) = (ids["foo"], ids["main"]);
    let file = d.join("profile.tsv");
    for (args, foo_units) in [
        (&[][..], None),
        (&["-B", "-C"][..], None),
        (&["-A"][..], Some(1.0)),
        (&["-A", "-C"][..], Some(4.0)),
    ] {
        let ctx = format!("{args:?}");
        let on = |n: &str| args.contains(&format!("-{n}").as_str());
        let nominal = 1.0
            + [("A", 2.1), ("B", 0.2), ("C", 0.3)]
                .iter()
                .filter(|(n, _)| on(n))
                .map(|(_, u)| u)
                .sum::<f64>()
            + if on("A") && on("B") { 3.0 } else { 0.0 }
            + foo_units.unwrap_or(0.0);
        // main holds the rest of the sleeps; before main (the base) is almost nothing.
        let mut main_units = 1.0 + if on("A") { 2.0 + 0.1 } else { 0.0 };
        if on("B") {
            main_units += 0.2 + if on("A") { 3.0 } else { 0.0 };
        }
        if on("C") {
            main_units += 0.3;
        }
        // The times a run's samples give, within a few sampling periods; what the run took
        // beyond its sleeps (a loaded machine wakes sleepers late) widens the upper bounds.
        let timing = |p: &Profile, late: f64| -> Result<(), String> {
            let t = &p.times;
            if let Some(u) = foo_units {
                let f = t.region(foo).self_seconds;
                if !(f >= u * unit - 3.0 * p.period && f <= u * unit * 1.2 + 5.0 * p.period + late)
                {
                    return Err(format!("foo {f} s, expected {} s", u * unit));
                }
            }
            let m = t.region(main).self_seconds;
            if !(m >= main_units * unit - 3.0 * p.period
                && m <= main_units * unit * 1.2 + 5.0 * p.period + late)
            {
                return Err(format!("main {m} s, expected {} s", main_units * unit));
            }
            // The base is the start-up before main: little, unless the process waited for a
            // CPU (whatever the run took beyond its sleeps bounds it).
            let sleeps = (main_units + foo_units.unwrap_or(0.0)) * unit;
            if t.base > t.wall - sleeps + 3.0 * p.period {
                return Err(format!("base {} s", t.base));
            }
            Ok(())
        };
        // Run again while the machine starves the sampler or its samples miss the expected
        // times (a sample lost to the load moves a period of time elsewhere); fail if every
        // run does.
        let mut attempt = 0;
        let p = loop {
            attempt += 1;
            let _ = std::fs::remove_file(&file);
            let out = {
                let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
                Command::new(&exe)
                    .args(args)
                    .env("FIG2_UNIT_MS", "10")
                    .env(profiler::ENV_VAR, &file)
                    .env_remove(profiler::PERIOD_VAR)
                    .env_remove(profiler::CLOCK_VAR)
                    .output()
                    .unwrap()
            };
            assert!(out.status.success(), "{out:?}");
            let p = Profile::read(&file).unwrap();
            let why = if starved(&p) {
                "sampler starved".to_string()
            } else {
                let late = (p_wall(&file) - nominal * unit).max(0.0);
                match timing(&p, late) {
                    Ok(()) => break p,
                    Err(e) => e,
                }
            };
            assert!(
                attempt < ATTEMPTS,
                "{ctx}: {why} in the last of {ATTEMPTS} runs (the machine is too busy?): {p:?}"
            );
            eprintln!("note: {ctx}: {why}, run {attempt} of {ATTEMPTS}");
            std::thread::sleep(std::time::Duration::from_millis(250 * u64::from(attempt)));
        };
        let t = &p.times;
        match foo_units {
            None => assert_eq!(t.region(foo), Default::default(), "{ctx}: {p:?}"),
            Some(_) => assert_eq!(t.region(foo).entries, 1),
        }
        assert!((t.base + t.regions_seconds() - t.total).abs() < 1e-6);
        assert_eq!((t.unmatched_exits, t.open_at_exit, p.unwound), (0, 0, 0));
    }
}
