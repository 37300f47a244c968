//! Instrumenting the running example's regions, linking with a small test runtime, and
//! running the result: region calls are balanced, follow the options, carry source lines.

use std::path::PathBuf;
use std::process::Command;

use analysis::{ResolvedSources, analyse};
use configcrusher::identify_regions;
use ir::ProgramDominance;
use ir::{Callee, InstKind};
use llvm::{RegionProbe, instrument, link_instrumented, translate_bitcode};

/// Prints each event as `+id`/`-id` on stderr.
const TEST_RUNTIME: &str = r#"
#include <stdio.h>
#include <stdint.h>
void __knobs_region_enter(uint32_t id) { fprintf(stderr, "+%u\n", id); }
void __knobs_region_exit(uint32_t id) { fprintf(stderr, "-%u\n", id); }
"#;

#[test]
fn instrumented_running_example_enters_and_exits_its_regions() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/running-example/main.c")
        .canonicalize()
        .unwrap();
    let compiled = llvm::fixture::compile_file(tempfile::tempdir().unwrap(), path);
    let dir = compiled.dir.path();
    let p = &compiled.translation.program;
    let mut space = space::ConfigSpace::new("fig2");
    for n in ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"] {
        space.add_binary(n, None, false).unwrap();
    }
    let resolved = ResolvedSources::from_annotations(p, &space).unwrap();
    let dom = ProgramDominance::new(p);
    let si = analyse(p, &dom, &resolved);
    let plan = identify_regions(p, &dom, si.influence.as_slice(), &[]);
    let probes: Vec<RegionProbe> = plan
        .regions
        .iter()
        .enumerate()
        .map(|(k, r)| RegionProbe {
            id: k as u32,
            start: r.start.clone(),
            end: r.end.clone(),
        })
        .collect();
    let inst_bc = dir.join("prog.inst.bc");
    let stats = instrument(
        &compiled.ssa,
        p,
        &compiled.translation.positions,
        &probes,
        &inst_bc,
    )
    .unwrap();
    let starts: usize = probes.iter().map(|r| r.start.len()).sum();
    let ends: usize = probes.iter().map(|r| r.end.len()).sum();
    assert_eq!(stats.enter_calls, starts);
    assert_eq!(stats.exit_calls, ends);
    assert!(
        stats.split_edges > 0,
        "the example has edges that need a block: {stats:?}"
    );

    // The inserted calls are in the module, with the lines of the code they precede.
    let reread = translate_bitcode(&inst_bc, None).unwrap().program;
    let enter = reread.function_named("__knobs_region_enter").unwrap();
    let enters: Vec<_> = reread
        .insts
        .iter()
        .filter(
            |i| matches!(&i.kind, InstKind::Call { callee: Callee::Direct(f), .. } if *f == enter),
        )
        .collect();
    assert_eq!(enters.len(), starts);
    assert!(
        enters.iter().all(|i| i.loc.line > 0),
        "{:?}",
        enters.iter().map(|i| (i.loc, i.block)).collect::<Vec<_>>()
    );

    let runtime_c = dir.join("runtime.c");
    std::fs::write(&runtime_c, TEST_RUNTIME).unwrap();
    let exe = dir.join("prog.inst");
    link_instrumented(
        std::path::Path::new("clang-19"),
        &inst_bc,
        &[runtime_c],
        &[],
        &exe,
        true,
    )
    .unwrap();

    let run = |args: &[&str]| -> Vec<(bool, u32)> {
        let out = Command::new(&exe)
            .args(args)
            .env("FIG2_UNIT_MS", "0")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stderr)
            .unwrap()
            .lines()
            .map(|l| (l.starts_with('+'), l[1..].parse().unwrap()))
            .collect()
    };
    let region_with = |names: &[&str]| -> Vec<u32> {
        let want = analysis::OptionSet::from_ids(names.iter().map(|n| space.find(n).unwrap()));
        plan.regions
            .iter()
            .enumerate()
            .filter(|(_, r)| si.sets.get(r.options) == &want)
            .map(|(k, _)| k as u32)
            .collect()
    };
    let foo_region = region_with(&["A", "C"]);
    assert_eq!(foo_region.len(), 1);
    for args in [&[][..], &["-A", "-C"], &["-A", "-B", "-D", "-E", "-F"]] {
        let events = run(args);
        // Every exit closes the innermost open region of its id; all are closed at the end.
        let mut open: Vec<u32> = Vec::new();
        for &(is_enter, id) in &events {
            if is_enter {
                open.push(id);
            } else if let Some(k) = open.iter().rposition(|&o| o == id) {
                open.remove(k);
            }
        }
        assert!(
            open.is_empty(),
            "{args:?}: still open {open:?} in {events:?}"
        );
        // foo's region runs exactly when A is selected.
        let foo_entries = events
            .iter()
            .filter(|(e, id)| *e && *id == foo_region[0])
            .count();
        assert_eq!(foo_entries, usize::from(args.contains(&"-A")), "{args:?}");
    }
}

#[test]
fn instrumenting_a_different_module_is_refused() {
    let a = llvm::fixture::compile("a.c", "int main(void) { return 0; }\n");
    let b = llvm::fixture::compile(
        "b.c",
        "int main(int argc, char **argv) { if (argc > 1) return 1; return 0; }\n",
    );
    let p = &b.translation.program;
    let main = p.function_named("main").unwrap();
    let probe = RegionProbe {
        id: 0,
        start: vec![ir::ProgramPoint::Before(
            p.block(p.func(main).blocks[0]).insts[0],
        )],
        end: vec![],
    };
    let err = instrument(
        &a.ssa,
        p,
        &b.translation.positions,
        &[probe],
        &a.dir.path().join("x.bc"),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("does not match") && msg.contains("main"),
        "{msg}"
    );
}
