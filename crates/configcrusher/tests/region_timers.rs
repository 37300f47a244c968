//! The whole pipeline on ConfigCrusher's running example (`examples/running-example/main.c`):
//! compile with clang 19, translate, analyse, find regions (as Algorithm 2 gives them and
//! after the propagation of Algorithms 3/4), instrument, link with the runtime, run in a few
//! configurations and read the region times back. The runtime is its test-clock build and
//! the program's unit of work is counted on it (`common::running_example_with_test_clock`)
//! instead of slept, so every time is checked exactly whatever the machine is doing; the
//! timers with real sleeps on real hardware are the benchmark runner's (`cargo run --release
//! -p bench`, ConfigCrusher's Table 7).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use analysis::{OptionSet, ResolvedSources, analyse};
use configcrusher::{identify_regions, optimise_influence};
use ir::ProgramDominance;
use llvm::{CompileOptions, RegionProbe, compile_c, instrument, link_instrumented};
use runtime::RegionTimes;

const NAMES: [&str; 10] = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];

/// One unit of work, in milliseconds (main.c reads FIG2_UNIT_MS).
const UNIT_MS: f64 = 4.0;

/// Rounding: times are exact to the nanosecond the runtime writes them in.
const NS: f64 = 1e-9;

/// An instrumented binary and each region's options (by region id).
struct Instrumented {
    exe: PathBuf,
    options: Vec<BTreeSet<&'static str>>,
}

/// The example's time in units of work for a configuration (main.c's comment, term by term).
fn expected_units(on: &BTreeSet<&str>) -> f64 {
    let o = |n: &str| on.contains(n);
    let mut units = 1.0;
    if o("A") {
        units += 2.0 + if o("C") { 4.0 } else { 1.0 };
    }
    if o("A") && o("B") {
        units += 3.0;
    }
    if o("D") && o("E") && o("F") {
        units += 5.0;
    }
    for (k, n) in NAMES[..9].iter().enumerate() {
        if o(n) {
            units += 0.1 * (k + 1) as f64;
        }
    }
    units
}

fn build(dir: &Path) -> (Instrumented, Instrumented) {
    let source = common::running_example_with_test_clock(&dir.join("src"));
    let linked = compile_c(&[source], &CompileOptions::default(), &dir.join("bc")).unwrap();
    let ssa = dir.join("prog.ssa.bc");
    let translation = llvm::translate_bitcode(&linked, Some(&ssa)).unwrap();
    let p = &translation.program;
    let mut space = space::ConfigSpace::new("fig2");
    for n in NAMES {
        space.add_binary(n, None, false).unwrap();
    }
    let resolved = ResolvedSources::from_annotations(p, &space).unwrap();
    let dom = ProgramDominance::new(p);
    let mut si = analyse(p, &dom, &resolved);
    let clang = Path::new("clang-19");
    let lib =
        runtime::build_test_clock(clang, &PathBuf::from(env!("CARGO_TARGET_TMPDIR"))).unwrap();

    let plan = identify_regions(p, &dom, si.influence.as_slice(), &[]);
    let names = |s: &OptionSet| -> BTreeSet<&'static str> {
        NAMES
            .iter()
            .enumerate()
            .filter(|(k, _)| s.contains(space::OptionId(*k as u32)))
            .map(|(_, n)| *n)
            .collect()
    };
    let make = |name: &str, regions: &[configcrusher::Region], sets: &analysis::SetInterner| {
        let probes: Vec<RegionProbe> = regions
            .iter()
            .enumerate()
            .map(|(k, r)| RegionProbe {
                id: k as u32,
                start: r.start.clone(),
                end: r.end.clone(),
            })
            .collect();
        let bc = dir.join(format!("{name}.bc"));
        instrument(&ssa, p, &translation.positions, &probes, &bc).unwrap();
        let exe = dir.join(name);
        link_instrumented(clang, &bc, std::slice::from_ref(&lib), &[], &exe, true).unwrap();
        Instrumented {
            exe,
            options: regions.iter().map(|r| names(sets.get(r.options))).collect(),
        }
    };
    let unoptimised = make("unoptimised", &plan.regions, &si.sets);
    let (optimised, pulled) =
        optimise_influence(p, &mut si.sets, si.influence.as_slice(), &si.call_graph);
    let plan = identify_regions(p, &dom, &optimised, &pulled);
    let optimised = make("optimised", &plan.regions, &si.sets);
    (unoptimised, optimised)
}

fn run(exe: &Path, on: &BTreeSet<&str>, dir: &Path) -> RegionTimes {
    let times = dir.join("times.tsv");
    let _ = std::fs::remove_file(&times);
    let out = Command::new(exe)
        .args(on.iter().map(|n| format!("-{n}")))
        .env("FIG2_UNIT_MS", UNIT_MS.to_string())
        .env(runtime::ENV_VAR, &times)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    RegionTimes::read(&times).unwrap()
}

#[test]
fn region_times_add_up_and_follow_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let (unoptimised, optimised) = build(dir.path());
    let unit = UNIT_MS * 1e-3;
    let configurations: [&[&str]; 5] = [
        &[],
        &["A"],
        &["A", "B", "C"],
        &["D", "E", "F", "J"],
        &["A", "B", "C", "D", "E", "F", "G", "H", "I"],
    ];
    let mut rc = [0u64; 2];
    for (which, inst) in [&unoptimised, &optimised].into_iter().enumerate() {
        let mut default: Option<RegionTimes> = None;
        for cfg in configurations {
            let on: BTreeSet<&str> = cfg.iter().copied().collect();
            let t = run(&inst.exe, &on, dir.path());
            let ctx = format!("{} {on:?}: {t:?}", ["unoptimised", "optimised"][which]);
            rc[which] = rc[which].max(t.entries());
            // Base plus regions is the total; the total is the program's work (the base may
            // lose what it loses at the thread's ends, `common::BASE_ENDS`); the runtime's
            // wall time holds it and the probes' cost, which the runtime takes out (and, on
            // the test clock, its calibration's probes).
            assert!((t.base + t.regions_seconds() - t.total).abs() < NS, "{ctx}");
            let want = expected_units(&on) * unit;
            assert!(
                t.total <= want + NS && t.total >= want - common::BASE_ENDS - NS,
                "expected {want} s: {ctx}"
            );
            assert!(t.total + t.probes <= t.wall + NS, "{ctx}");
            assert_eq!((t.unmatched_exits, t.open_at_exit, t.threads), (0, 0, 1));
            // Line 12's unit is outside every region of Algorithm 2; the propagation may
            // expand a region over it (the optimised plan's region at main's entry).
            assert!(t.base <= unit + NS, "base: {ctx}");
            if which == 0 {
                assert!(t.base >= unit - common::BASE_ENDS - NS, "base: {ctx}");
            }
            // A region's time depends on its options only: with all of them off, it holds
            // exactly what it holds in the default configuration — nothing for every region
            // of Algorithm 2; the optimised plan's expanded region keeps line 12's unit.
            let default = default.get_or_insert_with(|| t.clone()).clone();
            for (id, opts) in inst.options.iter().enumerate() {
                let (r, r0) = (t.region(id as u32), default.region(id as u32));
                if which == 0 {
                    assert!(r0.self_seconds < NS, "region {id}: {ctx}");
                }
                if opts.is_disjoint(&on) {
                    assert!(
                        (r.self_seconds - r0.self_seconds).abs() < NS,
                        "region {id} {opts:?} has {} s, {} s by default: {ctx}",
                        r.self_seconds,
                        r0.self_seconds
                    );
                }
            }
            // Each option's own work (lines 24–32) shows up in a region that has it.
            for n in &on {
                let k = NAMES.iter().position(|m| m == n).unwrap();
                if k == 9 {
                    continue; // J is irrelevant: no region, no time
                }
                let with: f64 = inst
                    .options
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| o.contains(n))
                    .map(|(id, _)| t.region(id as u32).self_seconds)
                    .sum();
                assert!(with >= 0.1 * (k + 1) as f64 * unit - NS, "{n}: {ctx}");
            }
            assert!(!inst.options.iter().any(|o| o.contains("J")));
        }
    }
    // Table 7's dynamic overhead: the optimisation does not add region entries.
    assert!(rc[1] <= rc[0], "RC before {}, after {}", rc[0], rc[1]);
    assert!(optimised.options.len() <= unoptimised.options.len());
}
