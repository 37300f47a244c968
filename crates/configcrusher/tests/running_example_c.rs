//! ConfigCrusher's running example (journal paper, Fig. 2, lines 1–32) as a real C program,
//! `examples/running-example/main.c`: compiled with clang 19, translated, analysed. The
//! expected results are the paper's, as in the hand-built version of the same program in
//! `crates/analysis/tests/running_example.rs`.

use std::path::PathBuf;

use analysis::{OptionSet, ResolvedSources, analyse};
use configcrusher::{compress, identify_regions, optimise_influence};
use ir::ProgramDominance;
use space::{ConfigSpace, OptionId, ValidConfigurations};

const NAMES: [&str; 10] = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];

fn set(names: &[&str]) -> OptionSet {
    OptionSet::from_ids(
        names
            .iter()
            .map(|n| OptionId(NAMES.iter().position(|m| m == n).unwrap() as u32)),
    )
}

fn space() -> ConfigSpace {
    let mut s = ConfigSpace::new("fig2");
    for n in NAMES {
        s.add_binary(n, None, false).unwrap();
    }
    s
}

fn example() -> (llvm::fixture::Compiled, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/running-example/main.c")
        .canonicalize()
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    (
        llvm::fixture::compile_file(tempfile::tempdir().unwrap(), path),
        text,
    )
}

#[test]
fn the_c_port_has_the_papers_influence_regions_and_compression() {
    let (compiled, source) = example();
    let p = &compiled.translation.program;
    let space = space();
    let resolved = ResolvedSources::from_annotations(p, &space).unwrap();
    assert_eq!(
        resolved.sources.len(),
        10,
        "one annotated global per option"
    );
    let dom = ProgramDominance::new(p);
    let mut si = analyse(p, &dom, &resolved);

    // The statement influence of each sleep, by the paper's line numbers.
    let sleeps = llvm::fixture::calls_to(p, "nanosleep");
    let of = |paper_line: u32| {
        let line = llvm::fixture::line_of(&source, &format!("paper line {paper_line} "));
        let (_, call) = sleeps
            .iter()
            .find(|(l, _)| *l == line)
            .unwrap_or_else(|| panic!("no sleep for paper line {paper_line}"));
        si.of(*call).clone()
    };
    // foo decides only on its parameter: the call `foo(C)` decides instead (the paper's
    // {A, C} for lines 3–4 is the call's influence below), and foo's own lines run whenever
    // foo does (`analysis::static_taint::bounded`).
    assert_eq!(of(3), set(&[]), "line 3");
    assert_eq!(of(4), set(&[]), "line 4");
    let foo = p.function_named("foo").unwrap();
    let call = p.insts.iter().position(|inst| {
        matches!(&inst.kind, ir::InstKind::Call { callee: ir::Callee::Direct(g), .. } if *g == foo)
    });
    let call = ir::InstId::new(call.expect("main calls foo"));
    assert_eq!(si.of(call), &set(&["A", "C"]), "the call foo(C)");
    assert_eq!(of(12), set(&[]), "line 12");
    assert_eq!(of(16), set(&["A"]), "line 16");
    assert_eq!(of(21), set(&["A", "B"]), "line 21");
    assert_eq!(of(23), set(&["D", "E", "F"]), "line 23");
    for (k, n) in NAMES[..9].iter().enumerate() {
        assert_eq!(of(24 + k as u32), set(&[n]), "line {}", 24 + k);
    }
    let relevant = si.relevant_options();
    assert!(!relevant.contains(OptionId(9)), "J is irrelevant");
    assert_eq!(relevant.len(), 9);
    // Option parsing is not influenced by options.
    let parse = p.function_named("parse_options").unwrap();
    assert_eq!(si.sets.get(si.context[parse]), &set(&[]));

    // Regions: the call foo(C) under {A, C}; lines 15–18 under {A}; line 21 under {A, B}.
    let plan = identify_regions(p, &dom, si.influence.as_slice(), &[]);
    let main = p.function_named("main").unwrap();
    let with = |f, s: &OptionSet| {
        plan.regions
            .iter()
            .filter(|r| r.function == f && si.sets.get(r.options) == s)
            .count()
    };
    assert_eq!(with(foo, &set(&["A", "C"])), 0, "{plan:?}");
    assert_eq!(with(main, &set(&["A", "C"])), 1, "{plan:?}");
    assert!(with(main, &set(&["A"])) >= 1);
    assert_eq!(with(main, &set(&["A", "B"])), 1);
    let before = plan.regions.len();
    let (optimised, pulled) =
        optimise_influence(p, &mut si.sets, si.influence.as_slice(), &si.call_graph);
    let after = identify_regions(p, &dom, &optimised, &pulled).regions.len();
    // foo has no regions left to pull out, and the call keeps its {A, C} (it is not widened
    // to {A, B} by the region after it).
    assert!(!pulled.contains(&foo), "{pulled:?}");
    assert_eq!(si.sets.get(optimised[call.index()]), &set(&["A", "C"]));
    assert!(after < before, "{before} regions before, {after} after");

    // Compression: at most 8 of the 1,024 configurations, J never varied.
    let valid = ValidConfigurations::new(&space).unwrap();
    assert_eq!(valid.count(), 1024u32.into());
    let interactions: Vec<OptionSet> = si
        .interactions()
        .iter()
        .map(|s| si.sets.get(*s).clone())
        .collect();
    let c = compress(&valid, &interactions, 1 << 20).unwrap();
    for m in [set(&["A", "B"]), set(&["A", "C"]), set(&["D", "E", "F"])] {
        assert!(c.maximal.contains(&m), "{m:?} in {:?}", c.maximal);
    }
    assert_eq!(c.lower_bound, 8);
    assert!(c.configurations.len() <= 8, "{}", c.configurations.len());
    assert!(c.configurations.iter().all(|cfg| cfg.0[9] == 0));
}
