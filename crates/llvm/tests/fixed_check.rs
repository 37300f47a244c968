//! Value checks for fixed settings: `__knobs_fixed_check` calls inserted after loads of
//! integer globals (i32, i8 from `unsigned char` and `_Bool`, i1 from hand-written IR), linked
//! with the real runtime and run with values that hold and that break the assumption.

use std::path::{Path, PathBuf};
use std::process::Command;

use ir::{Callee, InstId, InstKind, Program, ValueDef};
use llvm::{
    RegionProbe, ValueCheck, instrument, instrument_with_checks, link_instrumented,
    translate_bitcode,
};
use runtime::{FixedViolation, RegionTimes};

const SOURCE: &str = r#"#include <stdlib.h>
#include <string.h>

int mode;
unsigned char level = 200;
_Bool verbose;
long long budget = -5;
double ratio;
int *cursor;

__attribute__((noinline)) int step(int k) {
    if (mode == 3) /* MODE_LOAD */
        return k * 2;
    return k + 1;
}

__attribute__((noinline)) int scale(int k) {
    int l = level; /* LEVEL_LOAD */
    return k + l;
}

__attribute__((noinline)) int chatty(void) {
    return verbose ? 1 : 0; /* VERBOSE_LOAD */
}

__attribute__((noinline)) int wide(void) {
    return budget > 0; /* BUDGET_LOAD */
}

__attribute__((noinline)) int odd(void) {
    int *p = cursor; /* POINTER_LOAD */
    return ratio > 1.0 /* DOUBLE_LOAD */ && p != 0;
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "";
    int loops = argc > 2 ? atoi(argv[2]) : 5;
    if (!strcmp(m, "three")) mode = 3;
    if (argc > 3) level = (unsigned char)atoi(argv[3]);
    if (argc > 4) verbose = 1;
    if (argc > 5) budget = 1LL << 40;
    int s = 0;
    for (int k = 0; k < loops; k++) s += step(k);
    s += scale(1) + chatty() + wide() + odd();
    return s == -1;
}
"#;

fn clang() -> &'static Path {
    Path::new("clang-19")
}

fn runtime_lib() -> PathBuf {
    runtime::build(clang(), &PathBuf::from(env!("CARGO_TARGET_TMPDIR"))).unwrap()
}

/// The one load in function `func` on the line marked `marker`.
fn load_at(p: &Program, func: &str, marker: &str) -> InstId {
    let line = llvm::fixture::line_of(SOURCE, marker);
    let f = p.function_named(func).unwrap();
    let loads: Vec<InstId> = p
        .func(f)
        .blocks
        .iter()
        .flat_map(|&b| p.block(b).insts.iter().copied())
        .filter(|&i| {
            let inst = p.inst(i);
            matches!(inst.kind, InstKind::Load { .. }) && inst.loc.line == line
        })
        .collect();
    assert_eq!(loads.len(), 1, "loads at {marker}: {loads:?}");
    loads[0]
}

/// Runs `exe` with `args`, reading the region-times file it writes.
fn run(exe: &Path, args: &[&str]) -> RegionTimes {
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times.tsv");
    let out = Command::new(exe)
        .args(args)
        .env(runtime::ENV_VAR, &times)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    RegionTimes::read(&times).unwrap()
}

fn violation(value: i64, count: u64) -> FixedViolation {
    FixedViolation { value, count }
}

#[test]
fn a_folded_load_reports_values_other_than_the_assumed_one() {
    let compiled = llvm::fixture::compile("fixed.c", SOURCE);
    let dir = compiled.dir.path();
    let p = &compiled.translation.program;
    let mode_load = load_at(p, "step", "MODE_LOAD");
    let level_load = load_at(p, "scale", "LEVEL_LOAD");
    let verbose_load = load_at(p, "chatty", "VERBOSE_LOAD");
    let budget_load = load_at(p, "wide", "BUDGET_LOAD");
    let checks = [
        ValueCheck {
            inst: mode_load,
            id: 0,
            expected: 0,
        },
        // `unsigned char` 200 is the i8 0xc8: -56 in canonical (sign-extended) form.
        ValueCheck {
            inst: level_load,
            id: 1,
            expected: -56,
        },
        ValueCheck {
            inst: verbose_load,
            id: 2,
            expected: 0,
        },
        ValueCheck {
            inst: budget_load,
            id: 3,
            expected: -5,
        },
    ];
    let bc = dir.join("fixed.inst.bc");
    let stats = instrument_with_checks(
        &compiled.ssa,
        p,
        &compiled.translation.positions,
        &[],
        &checks,
        &bc,
    )
    .unwrap();
    assert_eq!(stats.value_checks, 4);
    assert_eq!((stats.enter_calls, stats.exit_calls), (0, 0));

    // Right after each load: one sign extension (i32 and i8 alike) and the call with the
    // check's id and expected value, at the load's line; an i64 needs no extension.
    let reread = translate_bitcode(&bc, None).unwrap().program;
    let check_fn = reread
        .function_named(llvm::instrument::FIXED_CHECK)
        .unwrap();
    for (check, func, marker) in [
        (&checks[0], "step", "MODE_LOAD"),
        (&checks[1], "scale", "LEVEL_LOAD"),
        (&checks[2], "chatty", "VERBOSE_LOAD"),
        (&checks[3], "wide", "BUDGET_LOAD"),
    ] {
        let load = load_at(&reread, func, marker);
        let block = &reread.block(reread.inst(load).block).insts;
        let k = block.iter().position(|&i| i == load).unwrap();
        let loaded = reread.inst(load).result.unwrap();
        let (value, call) = if marker == "BUDGET_LOAD" {
            (loaded, reread.inst(block[k + 1]))
        } else {
            let ext = reread.inst(block[k + 1]);
            assert!(
                matches!(&ext.kind, InstKind::Op { op: ir::OpKind::Cast, args } if args == &[loaded]),
                "{marker}: {ext:?}"
            );
            (ext.result.unwrap(), reread.inst(block[k + 2]))
        };
        let InstKind::Call {
            callee: Callee::Direct(f),
            args,
        } = &call.kind
        else {
            panic!("{marker}: not a call: {call:?}");
        };
        assert_eq!(*f, check_fn);
        assert_eq!(
            reread.value(args[0]),
            &ValueDef::ConstInt(i64::from(check.id))
        );
        assert_eq!(args[1], value, "{marker}");
        assert_eq!(reread.value(args[2]), &ValueDef::ConstInt(check.expected));
        assert_eq!(
            call.loc.line,
            llvm::fixture::line_of(SOURCE, marker),
            "{marker}"
        );
    }

    let exe = dir.join("fixed.inst");
    link_instrumented(clang(), &bc, &[runtime_lib()], &[], &exe, true).unwrap();
    // Every assumption holds: no violation (zero-extending `level` would report 200).
    let t = run(&exe, &["zero", "5"]);
    assert!(t.fixed_violations.is_empty(), "{t:?}");
    assert!(t.regions.is_empty(), "{t:?}");
    // `mode` is 3: each of the 7 executed loads of it is a violation.
    let t = run(&exe, &["three", "7"]);
    assert_eq!(
        t.fixed_violations.into_iter().collect::<Vec<_>>(),
        vec![(0, violation(3, 7))]
    );
    // `level` 1 and `verbose` true: narrow values, sign-extended (i8 1 is 1).
    let t = run(&exe, &["zero", "4", "1", "v"]);
    assert_eq!(
        t.fixed_violations.into_iter().collect::<Vec<_>>(),
        vec![(1, violation(1, 1)), (2, violation(1, 1))]
    );
    // `level` 255 reads as i8 -1; the loop's loads of `mode` hold (no entry for check 0).
    let t = run(&exe, &["zero", "2", "255"]);
    assert_eq!(
        t.fixed_violations.into_iter().collect::<Vec<_>>(),
        vec![(1, violation(-1, 1))]
    );
    // `budget` 2^40: all 64 bits reach the runtime.
    let t = run(&exe, &["zero", "1", "200", "v", "b"]);
    assert_eq!(
        t.fixed_violations.into_iter().collect::<Vec<_>>(),
        vec![(2, violation(1, 1)), (3, violation(1 << 40, 1))]
    );
}

#[test]
fn checks_and_region_calls_at_the_same_place_both_run() {
    let compiled = llvm::fixture::compile("fixed.c", SOURCE);
    let dir = compiled.dir.path();
    let p = &compiled.translation.program;
    let mode_load = load_at(p, "step", "MODE_LOAD");
    // A region from the instruction after the load to every return of `step`.
    let block = &p.block(p.inst(mode_load).block).insts;
    let after = block[block.iter().position(|&i| i == mode_load).unwrap() + 1];
    let step = p.function_named("step").unwrap();
    let returns: Vec<_> = p
        .func(step)
        .blocks
        .iter()
        .filter_map(|&b| p.terminator(b))
        .filter(|&i| matches!(p.inst(i).kind, InstKind::Return { .. }))
        .map(ir::ProgramPoint::Before)
        .collect();
    assert!(!returns.is_empty());
    let probe = RegionProbe {
        id: 4,
        start: vec![ir::ProgramPoint::Before(after)],
        end: returns.clone(),
    };
    let check = ValueCheck {
        inst: mode_load,
        id: 9,
        expected: 0,
    };
    let bc = dir.join("both.bc");
    let stats = instrument_with_checks(
        &compiled.ssa,
        p,
        &compiled.translation.positions,
        std::slice::from_ref(&probe),
        &[check],
        &bc,
    )
    .unwrap();
    assert_eq!(
        (stats.enter_calls, stats.exit_calls, stats.value_checks),
        (1, returns.len(), 1)
    );
    // The check comes first, right after the load; the region's enter follows it.
    let reread = translate_bitcode(&bc, None).unwrap().program;
    let load = load_at(&reread, "step", "MODE_LOAD");
    let block = &reread.block(reread.inst(load).block).insts;
    let k = block.iter().position(|&i| i == load).unwrap();
    let callee_of = |i: InstId| match &reread.inst(i).kind {
        InstKind::Call {
            callee: Callee::Direct(f),
            ..
        } => Some(reread.func(*f).name.clone()),
        _ => None,
    };
    assert_eq!(
        callee_of(block[k + 2]).as_deref(),
        Some("__knobs_fixed_check")
    );
    assert_eq!(
        callee_of(block[k + 3]).as_deref(),
        Some("__knobs_region_enter")
    );

    let exe = dir.join("both");
    link_instrumented(clang(), &bc, &[runtime_lib()], &[], &exe, true).unwrap();
    let t = run(&exe, &["three", "6"]);
    assert_eq!(t.region(4).entries, 6, "{t:?}");
    assert_eq!((t.unmatched_exits, t.open_at_exit), (0, 0), "{t:?}");
    assert_eq!(
        t.fixed_violations.into_iter().collect::<Vec<_>>(),
        vec![(9, violation(3, 6))]
    );
    let t = run(&exe, &["zero", "6"]);
    assert_eq!(t.region(4).entries, 6, "{t:?}");
    assert!(t.fixed_violations.is_empty(), "{t:?}");

    // Without checks, `instrument` inserts the same region calls and nothing else.
    let plain = dir.join("plain.bc");
    let stats = instrument(
        &compiled.ssa,
        p,
        &compiled.translation.positions,
        &[probe],
        &plain,
    )
    .unwrap();
    assert_eq!(stats.value_checks, 0);
    let reread = translate_bitcode(&plain, None).unwrap().program;
    assert!(reread.function_named("__knobs_fixed_check").is_none());
}

/// An i1 global loaded as i1 (hand-written IR: C loads `_Bool` as i8): `true` is -1.
#[test]
fn an_i1_load_is_sign_extended() {
    let dir = tempfile::tempdir().unwrap();
    let ll = dir.path().join("flag.ll");
    std::fs::write(
        &ll,
        r#"
@flag = global i1 false

define i32 @read_flag() noinline {
entry:
  %v = load i1, ptr @flag
  %r = zext i1 %v to i32
  ret i32 %r
}

define i32 @main(i32 %argc, ptr %argv) {
entry:
  %set = icmp sgt i32 %argc, 1
  store i1 %set, ptr @flag
  %a = call i32 @read_flag()
  %b = call i32 @read_flag()
  %s = add i32 %a, %b
  %bad = icmp eq i32 %s, 7
  %code = zext i1 %bad to i32
  ret i32 %code
}
"#,
    )
    .unwrap();
    let bc = dir.path().join("flag.bc");
    let out = Command::new("llvm-as-19")
        .arg(&ll)
        .arg("-o")
        .arg(&bc)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ssa = dir.path().join("flag.ssa.bc");
    let translation = translate_bitcode(&bc, Some(&ssa)).unwrap();
    let p = &translation.program;
    let f = p.function_named("read_flag").unwrap();
    let load = p.block(p.func(f).blocks[0]).insts[0];
    assert!(matches!(p.inst(load).kind, InstKind::Load { .. }));
    let inst_bc = dir.path().join("flag.inst.bc");
    let check = ValueCheck {
        inst: load,
        id: 0,
        expected: -1,
    };
    let stats =
        instrument_with_checks(&ssa, p, &translation.positions, &[], &[check], &inst_bc).unwrap();
    assert_eq!(stats.value_checks, 1);
    let exe = dir.path().join("flag");
    link_instrumented(clang(), &inst_bc, &[runtime_lib()], &[], &exe, true).unwrap();
    // Set: holds (zero-extension would report 1).
    assert!(run(&exe, &["x"]).fixed_violations.is_empty());
    // Unset: both loads read 0.
    let t = run(&exe, &[]);
    assert_eq!(
        t.fixed_violations.into_iter().collect::<Vec<_>>(),
        vec![(0, violation(0, 2))]
    );
}

#[test]
fn a_check_on_anything_but_an_integer_load_is_refused() {
    let compiled = llvm::fixture::compile("fixed.c", SOURCE);
    let dir = compiled.dir.path();
    let p = &compiled.translation.program;
    let positions = &compiled.translation.positions;
    let step = p.function_named("step").unwrap();
    let not_load = p.terminator(p.func(step).blocks[0]).unwrap();
    let out = dir.join("never.bc");
    let refuse = |inst: InstId| {
        let check = ValueCheck {
            inst,
            id: 5,
            expected: 0,
        };
        let e = instrument_with_checks(&compiled.ssa, p, positions, &[], &[check], &out)
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains("value check 5"), "{e}");
        e
    };
    let e = refuse(not_load);
    assert!(e.contains("not a load"), "{e}");
    for marker in ["POINTER_LOAD", "DOUBLE_LOAD"] {
        let e = refuse(load_at(p, "odd", marker));
        assert!(e.contains("does not load an integer"), "{marker}: {e}");
    }
    let e = refuse(p.insts.next_id());
    assert!(e.contains("only"), "{e}");
    // Nothing is written when a check is refused; the integer loads are accepted.
    assert!(!out.exists());
    let ok = ValueCheck {
        inst: load_at(p, "step", "MODE_LOAD"),
        id: 5,
        expected: 0,
    };
    instrument_with_checks(&compiled.ssa, p, positions, &[], &[ok], &out).unwrap();
    assert!(out.exists());
}
