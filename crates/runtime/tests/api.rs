//! The runtime linked into a C program that calls the API directly, with `nanosleep`s of
//! known length: self times, nested-time subtraction, entry counts, recursion, exit paths,
//! unmatched exits, threads, fork and fixed-setting checks — real clang 19, real runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use runtime::RegionTimes;

const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);
void __knobs_fixed_check(uint32_t id, int64_t value, int64_t expected);
#define ENTER __knobs_region_enter
#define EXIT __knobs_region_exit

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {}
}

static void rec(int n) {
    ENTER(2);
    sleep_ms(5);
    if (n > 1) rec(n - 1);
    EXIT(2);
}

static void deep(void) {
    sleep_ms(10);
    exit(3);
}

static void *violator(void *arg) {
    (void)arg;
    for (int k = 0; k < 100; k++)
        __knobs_fixed_check(4, 20 + k, 1); /* never the first: main violated 4 before */
    return NULL;
}

static void *worker(void *arg) {
    (void)arg;
    ENTER(3);
    sleep_ms(20);
    EXIT(3);
    return NULL;
}

int main(int argc, char **argv) {
    const char *s = argc > 1 ? argv[1] : "";
    if (!strcmp(s, "nested")) {
        sleep_ms(10);          /* base */
        ENTER(0);
        sleep_ms(30);          /* 0 */
        ENTER(1);
        sleep_ms(20);          /* 1 */
        EXIT(1);
        sleep_ms(10);          /* 0 */
        EXIT(0);
        ENTER(1);
        sleep_ms(10);          /* 1 */
        EXIT(1);
    } else if (!strcmp(s, "recursion")) {
        ENTER(0);
        sleep_ms(5);           /* 0 */
        rec(3);                /* 2: 3 x 5 ms, entered 3 times */
        EXIT(0);
    } else if (!strcmp(s, "exit-nested")) {
        ENTER(0);
        sleep_ms(10);          /* 0 */
        ENTER(1);
        deep();                /* 1: 10 ms, then exit(3) with both open */
    } else if (!strcmp(s, "unmatched")) {
        EXIT(5);               /* nothing open: ignored */
        ENTER(0);
        sleep_ms(10);
        EXIT(1);               /* 1 is not open: ignored, 0 stays open */
        sleep_ms(10);
        EXIT(0);
        EXIT(0);               /* closed already: ignored */
    } else if (!strcmp(s, "overlap")) {
        ENTER(0);
        ENTER(1);
        sleep_ms(10);          /* 1 */
        EXIT(0);               /* closes 0 beneath 1; 1 stays open */
        sleep_ms(10);          /* 1 */
        EXIT(1);
    } else if (!strcmp(s, "threads")) {
        ENTER(4);
        pthread_t a, b;
        pthread_create(&a, NULL, worker, NULL);
        pthread_create(&b, NULL, worker, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        EXIT(4);
    } else if (!strcmp(s, "fork")) {
        int fds[2];
        if (pipe(fds)) return 1;
        ENTER(0);
        pid_t child = fork();
        if (child == 0) {
            close(fds[1]);
            ENTER(9);
            EXIT(9);
            char c;
            while (read(fds[0], &c, 1) > 0) {}   /* until the parent has exited */
            sleep_ms(20);
            exit(0);                              /* must not overwrite the parent's file */
        }
        sleep_ms(10);
        EXIT(0);
    } else if (!strcmp(s, "fixed") || !strcmp(s, "fixed-exit")) {
        /* No region is ever entered. */
        for (int k = 0; k < 3; k++)
            __knobs_fixed_check(0, 5, 5);     /* holds */
        __knobs_fixed_check(1, 3, 0);         /* first value 3 */
        __knobs_fixed_check(1, 4, 0);
        __knobs_fixed_check(1, 0, 0);         /* holds: not counted */
        __knobs_fixed_check(2, -1, 1);
        __knobs_fixed_check(2, INT64_MIN, 1);
        __knobs_fixed_check(300, INT64_MAX, 8);  /* beyond the first table */
        __knobs_fixed_check(4, 10, 1);
        pthread_t a, b;
        pthread_create(&a, NULL, violator, NULL);
        pthread_create(&b, NULL, violator, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        if (!strcmp(s, "fixed-exit"))
            exit(4);
    } else if (!strcmp(s, "many")) {
        for (uint32_t id = 0; id < 5000; id++) { ENTER(id); EXIT(id); }
        for (int d = 0; d < 3000; d++) ENTER(7);
        for (int d = 0; d < 3000; d++) EXIT(7);
    }
    return 0;
}
"#;

fn clang() -> &'static Path {
    Path::new("clang-19")
}

/// The test program, linked with the runtime once per test binary.
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-api");
        std::fs::create_dir_all(&dir).unwrap();
        let lib = runtime::build(clang(), &dir).unwrap();
        let src = dir.join("prog.c");
        std::fs::write(&src, PROGRAM).unwrap();
        let exe = dir.join(format!("prog-{}", std::process::id()));
        let out = Command::new(clang())
            .args(["-O2", "-pthread", "-Wall", "-Werror"])
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

/// Runs a scenario with `KNOBS_REGION_TIMES` set (or not); the runtime prints nothing.
fn run(scenario: &str, times: Option<&Path>) -> Output {
    run_with(scenario, times, &[])
}

fn run_with(scenario: &str, times: Option<&Path>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program());
    cmd.arg(scenario)
        .env_remove(runtime::ENV_VAR)
        .env_remove("KNOBS_REGION_COMPENSATE")
        .envs(env.iter().copied());
    if let Some(path) = times {
        cmd.env(runtime::ENV_VAR, path);
    }
    let out = cmd.output().unwrap();
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    out
}

fn measure(scenario: &str) -> (Output, RegionTimes) {
    measure_with(scenario, &[])
}

fn measure_with(scenario: &str, env: &[(&str, &str)]) -> (Output, RegionTimes) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("times.tsv");
    let out = run_with(scenario, Some(&path), env);
    let times = RegionTimes::read(&path).unwrap();
    // Every instant is charged once: base and self times add up to the total, but for the
    // file's rounding to whole nanoseconds, up to half of one per value written.
    let rounding = 0.5e-9 * (times.regions.len() + 2) as f64;
    assert!(
        (times.base + times.regions_seconds() - times.total).abs() <= rounding + 1e-12,
        "{} s apart: {times:?}",
        times.base + times.regions_seconds() - times.total
    );
    (out, times)
}

/// `seconds` is `ms` of sleep: never less (nanosleep sleeps at least that long), and more by
/// at most the run's excess over all its sleeps (`sleeps_ms`), scheduling delays on a busy
/// machine included.
fn close_to(t: &RegionTimes, seconds: f64, ms: f64, sleeps_ms: f64) -> bool {
    let got = seconds * 1e3;
    let over = (t.total * 1e3 - sleeps_ms).max(0.0);
    got >= ms - 0.05 && got <= ms + over + 0.05
}

#[test]
fn nested_time_is_subtracted_from_the_enclosing_region() {
    let (out, t) = measure("nested");
    assert!(out.status.success());
    assert!(close_to(&t, t.region(0).self_seconds, 40.0, 80.0), "{t:?}");
    assert!(close_to(&t, t.region(1).self_seconds, 30.0, 80.0), "{t:?}");
    assert_eq!(t.region(0).entries, 1);
    assert_eq!(t.region(1).entries, 2);
    assert!(close_to(&t, t.base, 10.0, 80.0), "{t:?}");
    assert!(close_to(&t, t.total, 80.0, 80.0), "{t:?}");
    assert!(t.total <= t.wall + 1e-6, "{t:?}");
    assert_eq!(t.regions.len(), 2);
    assert_eq!((t.threads, t.unmatched_exits, t.open_at_exit), (1, 0, 0));
}

#[test]
fn recursion_counts_every_entry_and_time_once() {
    let (_, t) = measure("recursion");
    assert_eq!(t.region(2).entries, 3);
    assert!(close_to(&t, t.region(2).self_seconds, 15.0, 20.0), "{t:?}");
    assert!(close_to(&t, t.region(0).self_seconds, 5.0, 20.0), "{t:?}");
    assert!(close_to(&t, t.total, 20.0, 20.0), "{t:?}");
    assert_eq!(t.open_at_exit, 0);
}

#[test]
fn exit_from_inside_nested_regions_still_writes_the_totals() {
    let (out, t) = measure("exit-nested");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(t.open_at_exit, 2);
    assert!(close_to(&t, t.region(0).self_seconds, 10.0, 20.0), "{t:?}");
    assert!(close_to(&t, t.region(1).self_seconds, 10.0, 20.0), "{t:?}");
    assert_eq!((t.region(0).entries, t.region(1).entries), (1, 1));
}

#[test]
fn exits_for_regions_that_are_not_open_are_ignored() {
    let (_, t) = measure("unmatched");
    assert_eq!(t.unmatched_exits, 3);
    assert!(close_to(&t, t.region(0).self_seconds, 20.0, 20.0), "{t:?}");
    assert_eq!(t.regions.keys().copied().collect::<Vec<_>>(), vec![0]);
    assert_eq!(t.open_at_exit, 0);
}

#[test]
fn an_exit_beneath_the_innermost_region_leaves_the_inner_one_open() {
    let (_, t) = measure("overlap");
    assert!(close_to(&t, t.region(1).self_seconds, 20.0, 20.0), "{t:?}");
    // Region 0 holds only the gap between two calls: no more than the run's excess over its
    // sleep, whatever the machine's load (which would also lengthen that excess).
    assert!(close_to(&t, t.region(0).self_seconds, 0.0, 20.0), "{t:?}");
    assert_eq!(t.region(0).entries, 1);
    assert_eq!(t.unmatched_exits, 0);
}

#[test]
fn threads_are_charged_separately_and_summed() {
    let (_, t) = measure("threads");
    assert_eq!(t.threads, 3);
    assert_eq!(t.region(3).entries, 2);
    // Two threads sleeping 20 ms in region 3 at the same time: 40 thread-milliseconds.
    assert!(close_to(&t, t.region(3).self_seconds, 40.0, 60.0), "{t:?}");
    assert!(close_to(&t, t.region(4).self_seconds, 20.0, 60.0), "{t:?}");
    assert!(t.total > t.wall, "thread-seconds exceed wall time: {t:?}");
}

#[test]
fn a_forked_child_does_not_overwrite_the_parents_file() {
    let (_, t) = measure("fork");
    assert_eq!(t.region(9), runtime::RegionTime::default(), "{t:?}");
    assert!(close_to(&t, t.region(0).self_seconds, 10.0, 10.0), "{t:?}");
}

#[test]
fn tables_and_stacks_grow_on_demand() {
    let (_, t) = measure("many");
    assert_eq!(t.regions.len(), 5000);
    assert_eq!(t.region(4999).entries, 1);
    assert_eq!(t.region(7).entries, 3001);
    assert_eq!((t.unmatched_exits, t.open_at_exit), (0, 0));
}

#[test]
fn fixed_setting_violations_are_counted_with_their_first_value() {
    let want = |v: i64, n: u64| runtime::FixedViolation { value: v, count: n };
    for scenario in ["fixed", "fixed-exit"] {
        let (out, t) = measure(scenario);
        assert_eq!(
            out.status.code(),
            Some(if scenario == "fixed" { 0 } else { 4 })
        );
        assert_eq!(
            t.fixed_violations
                .iter()
                .map(|(k, v)| (*k, *v))
                .collect::<Vec<_>>(),
            vec![
                (1, want(3, 2)),
                (2, want(-1, 2)),
                (4, want(10, 201)),
                (300, want(i64::MAX, 1)),
            ],
            "{scenario}"
        );
        assert!(t.regions.is_empty(), "{t:?}");
        assert_eq!(t.threads, 3);
    }
    // The file's `fixed` lines come after the header lines, ids ascending.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("times.tsv");
    run("fixed", Some(&path));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], runtime::HEADER);
    assert_eq!(lines[6], "open_at_exit\t0");
    assert!(lines[7].starts_with("probes\t"), "{text}");
    assert!(lines[8].starts_with("startup\t"), "{text}");
    assert!(lines[9].starts_with("event_cost_ns\t"), "{text}");
    for (line, key) in lines[10..16].iter().zip([
        "cpu_total\t",
        "cpu_base\t",
        "cpu_startup\t",
        "cpu_reads\t",
        "cpu_read_ns\t",
        "cpu_interval_us\t",
    ]) {
        assert!(line.starts_with(key), "{text}");
    }
    assert_eq!(
        &lines[16..],
        [
            "fixed\t1\t3\t2",
            "fixed\t2\t-1\t2",
            "fixed\t4\t10\t201",
            "fixed\t300\t9223372036854775807\t1"
        ]
    );
    // Checks that hold leave no line.
    let (_, t) = measure("nested");
    assert!(t.fixed_violations.is_empty());
}

#[test]
fn nothing_is_written_without_the_environment_variable() {
    let dir = tempfile::tempdir().unwrap();
    let out = run("nested", None);
    assert!(out.status.success());
    let empty = Command::new(program())
        .arg("exit-nested")
        .env(runtime::ENV_VAR, "")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(empty.status.code(), Some(3));
    assert!(empty.stdout.is_empty() && empty.stderr.is_empty());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn the_library_is_cached_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let a = runtime::build(clang(), dir.path()).unwrap();
    let modified = std::fs::metadata(&a).unwrap().modified().unwrap();
    let b = runtime::build(clang(), dir.path()).unwrap();
    assert_eq!(a, b);
    assert_eq!(std::fs::metadata(&b).unwrap().modified().unwrap(), modified);
    assert!(a.ends_with("libknobs_runtime.a"));
    // Only the library is left behind, no temporary object or archive.
    let files: Vec<_> = std::fs::read_dir(a.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, vec![std::ffi::OsString::from("libknobs_runtime.a")]);
}

#[test]
fn a_missing_compiler_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = runtime::build(Path::new("/nonexistent/clang-19"), dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/nonexistent/clang-19") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn a_program_without_regions_still_writes_base_and_total_with_the_link_flags() {
    let dir = tempfile::tempdir().unwrap();
    let lib = runtime::build(clang(), &PathBuf::from(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let src = dir.path().join("plain.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let exe = dir.path().join("plain");
    let out = Command::new(clang())
        .arg("-O2")
        .arg(&src)
        .arg(&lib)
        .args(runtime::LINK_FLAGS)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let times = dir.path().join("times.tsv");
    let run = Command::new(&exe)
        .env(runtime::ENV_VAR, &times)
        .output()
        .unwrap();
    assert!(run.status.success() && run.stdout.is_empty() && run.stderr.is_empty());
    let t = RegionTimes::read(&times).unwrap();
    assert!(t.regions.is_empty());
    assert_eq!(t.base, t.total);
    assert_eq!(t.threads, 1);
}
