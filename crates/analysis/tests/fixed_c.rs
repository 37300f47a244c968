//! Fixed settings (`analysis::specialise`) on C compiled by clang-19: globals the workload
//! never changes decide branches, and what only the code they rule out does no longer
//! reaches the code that runs.

use analysis::{
    FixedGlobal, FixedValue, OptionSet, OptionSource, ResolvedSources, SourceKind,
    StatementInfluence, analyse, specialise, specialise_with,
};
use ir::Program;
use ir::ProgramDominance;
use space::OptionId;

/// gzip in miniature: a member loop whose exit and per-file state come from the
/// decompressor, which a compressing workload never runs.
const GZIP_LIKE: &str = r#"
#include <stdlib.h>
extern void work(int);
int level, noname;                      /* options */
int decompress, recursive, to_stdout;   /* fixed by the workload's command line */
int state;                              /* left behind by one file for the next */
static int input_eof(void) {
    if (!decompress)
        return 1;
    return state == 0;
}
static void unpack(void) {
    if (noname)
        state = 1;
}
static void compress(void) {
    if (level > 3) work(1);             /* w1 */
}
static void treat(int depth) {
    if (state) work(2);                 /* w2 */
    for (;;) {
        if (decompress) unpack(); else compress();
        if (input_eof()) break;
    }
    if (recursive && depth < 3)
        treat(depth + 1);
    if (to_stdout) work(3);             /* w3 */
}
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        switch (argv[i][0]) {
        case 'l': level = atoi(argv[i] + 1); break;
        case 'n': noname = 1; break;
        case 'd': decompress = 1; break;
        case 'r': recursive = 1; break;
        case 'c': to_stdout = 1; break;
        }
    }
    treat(0);
    return 0;
}
"#;

fn sources(p: &Program) -> ResolvedSources {
    let option = |k: u32, name: &str| OptionSource {
        option: OptionId(k),
        kind: SourceKind::Global { name: name.into() },
    };
    ResolvedSources::resolve(p, &[option(0, "level"), option(1, "noname")]).unwrap()
}

fn taint(p: &Program) -> StatementInfluence {
    analyse(p, &ProgramDominance::new(p), &sources(p))
}

fn work(p: &Program, si: &StatementInfluence, marker: &str) -> OptionSet {
    let line = llvm::fixture::line_of(GZIP_LIKE, marker);
    let calls = llvm::fixture::calls_to(p, "work");
    let (_, call) = calls.iter().find(|(l, _)| *l == line).unwrap();
    si.of(*call).clone()
}

fn set(ids: &[u32]) -> OptionSet {
    OptionSet::from_ids(ids.iter().map(|&k| OptionId(k)))
}

fn fixed(p: &Program, settings: &[(&str, i64)]) -> Vec<FixedGlobal> {
    settings
        .iter()
        .map(|(name, value)| FixedGlobal {
            global: p.global_named(name).unwrap(),
            value: *value,
        })
        .collect()
}

#[test]
fn code_the_fixed_settings_rule_out_no_longer_makes_options_interact() {
    let p = llvm::fixture::compile("gzip_like.c", GZIP_LIKE)
        .translation
        .program;
    // Without fixed settings the decompressor's state reaches the loop exit and the next
    // file: `noname` seems to interact with `level`.
    let si = taint(&p);
    assert_eq!(work(&p, &si, "w1"), set(&[0, 1]));
    assert_eq!(work(&p, &si, "w2"), set(&[1]));

    let s = specialise(
        &p,
        &fixed(&p, &[("decompress", 0), ("recursive", 0), ("to_stdout", 1)]),
    );
    s.program.verify().unwrap();
    let si = taint(&s.program);
    assert_eq!(work(&s.program, &si, "w1"), set(&[0]));
    assert_eq!(work(&s.program, &si, "w2"), set(&[]));
    assert_eq!(work(&s.program, &si, "w3"), set(&[]));
    // `unpack` is unreachable; `input_eof` returns 1 on every path that runs, so the loop
    // exit and `if (decompress)`, `if (recursive …)`, `if (to_stdout)` are decided.
    assert_eq!(s.dead_functions, 1);
    assert!(s.decided >= 4, "{} decided", s.decided);
    let folded: Vec<&str> = s
        .folded_loads
        .iter()
        .map(|f| p.globals[f.global].name.as_str())
        .collect();
    for name in ["decompress", "recursive", "to_stdout"] {
        assert!(folded.contains(&name), "{folded:?}");
    }
    assert!(s.folded_loads.iter().all(|f| {
        let name = &p.globals[f.global].name;
        f.expected == i64::from(name == "to_stdout")
    }));
}

#[test]
fn settings_that_decide_nothing_change_nothing() {
    let p = llvm::fixture::compile("gzip_like.c", GZIP_LIKE)
        .translation
        .program;
    // With decompression fixed *on*, the decompressor runs and the interaction is real.
    let s = specialise(&p, &fixed(&p, &[("decompress", 1)]));
    let si = taint(&s.program);
    assert_eq!(s.dead_functions, 1, "compress is what cannot run now");
    assert_eq!(work(&s.program, &si, "w2"), set(&[1]));
    // No settings: the same program, the same influence.
    let s = specialise(&p, &[]);
    assert_eq!((s.decided, s.dead_blocks, s.dead_functions), (0, 0, 0));
    assert!(s.folded_loads.is_empty());
    let (a, b) = (taint(&p), taint(&s.program));
    for i in p.insts.keys() {
        assert_eq!(a.of(i), b.of(i));
    }
}

/// The condition of the conditional branch on the line of `marker`.
fn condition(p: &Program, marker: &str) -> ir::InstId {
    let line = llvm::fixture::line_of(GZIP_LIKE, marker);
    p.insts
        .iter()
        .filter(|inst| inst.loc.line == line)
        .find_map(|inst| match p.value(inst.kind.control_decision()?) {
            ir::ValueDef::Inst(c) => Some(*c),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no branch on an instruction at line {line}"))
}

/// Branch conditions observed on a workload (`configcrusher`'s dynamic confirmation) fold
/// as fixed settings do: one way in every run (`if (decompress)` false, the loop's exit
/// true) decides the branch, never run (`if (recursive …)`) reaches nothing.
#[test]
fn observed_conditions_decide_their_branches() {
    let p = llvm::fixture::compile("gzip_like.c", GZIP_LIKE)
        .translation
        .program;
    let values = [
        FixedValue {
            inst: condition(&p, "if (decompress) unpack"),
            value: Some(0),
        },
        FixedValue {
            inst: condition(&p, "if (input_eof()) break"),
            value: Some(-1),
        },
        FixedValue {
            inst: condition(&p, "if (recursive && depth"),
            value: None,
        },
    ];
    let s = specialise_with(&p, &[], &values, &[]);
    s.program.verify().unwrap();
    let si = taint(&s.program);
    assert_eq!(work(&s.program, &si, "w1"), set(&[0]));
    assert_eq!(work(&s.program, &si, "w2"), set(&[]));
    assert_eq!(s.dead_functions, 1, "unpack");
    assert!(s.decided >= 2, "{} decided", s.decided);
    assert!(s.folded_loads.is_empty());
}

/// A function no run entered (`configcrusher`'s dynamic confirmation observes entries) is
/// code that never runs: what it writes (`state`, under `noname`) reaches nothing, and its
/// call ends the block it is in.
#[test]
fn a_function_no_run_entered_writes_nothing() {
    let p = llvm::fixture::compile("gzip_like.c", GZIP_LIKE)
        .translation
        .program;
    let before = taint(&p);
    assert_eq!(
        work(&p, &before, "w2"),
        set(&[1]),
        "state written under noname"
    );
    let unpack = p.function_named("unpack").expect("unpack is defined");
    let s = specialise_with(&p, &[], &[], &[unpack]);
    s.program.verify().unwrap();
    let si = taint(&s.program);
    assert_eq!(work(&s.program, &si, "w1"), set(&[0]));
    assert_eq!(work(&s.program, &si, "w2"), set(&[]));
    assert_eq!(s.dead_functions, 1, "unpack");
    let treat = p.function_named("treat").expect("treat is defined");
    let call_ends_block = s.program.insts.iter_enumerated().any(|(i, inst)| {
        matches!(inst.kind, ir::InstKind::Unreachable)
            && !matches!(p.inst(i).kind, ir::InstKind::Unreachable)
            && p.func_of(i) == treat
    });
    assert!(call_ends_block, "the block calling unpack ends there");
}
