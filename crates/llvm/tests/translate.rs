//! Small C programs compiled with clang 19 and translated: the structure of the result.

use ir::{Callee, InstKind, Program, ValueDef};

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
struct point { int x; int y; };
struct config { int level; struct point origin; const char *name; };
static int twice(int v) { return 2 * v; }
static int inc(int v) { return v + 1; }
int (*ops[2])(int) = { twice, inc };
struct config cfg = { 1, { 2, 3 }, "fast" };
int sum(int *xs, int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += xs[i]; /* loop body */
    return s;
}
int main(int argc, char **argv) {
    cfg.origin.y = argc; /* nested field */
    int *xs = malloc(4 * sizeof(int));
    memcpy(xs, &cfg, sizeof(int));
    int r = ops[argc & 1](sum(xs, 4)); /* indirect */
    switch (argc) { case 2: r += 1; break; case 5: r += 2; break; default: break; }
    if (getenv("MODE")) r++;
    return r;
}
"#;

fn program() -> (Program, llvm::LlvmPositions) {
    let c = llvm::fixture::compile("prog.c", PROGRAM);
    (c.translation.program, c.translation.positions)
}

fn insts_of<'p>(p: &'p Program, func: &str) -> Vec<&'p ir::Inst> {
    let f = p.function_named(func).unwrap();
    p.func(f)
        .blocks
        .iter()
        .flat_map(|&b| p.block(b).insts.iter().map(|&i| p.inst(i)))
        .collect()
}

#[test]
fn blocks_end_in_one_terminator_and_ids_are_consistent() {
    let (p, positions) = program();
    p.verify().unwrap();
    for func in p.functions.iter().filter(|f| !f.is_declaration) {
        for (local, &b) in func.blocks.iter().enumerate() {
            assert_eq!(p.block(b).local as usize, local);
            let insts = &p.block(b).insts;
            assert!(p.inst(*insts.last().unwrap()).kind.is_terminator());
            assert_eq!(
                insts
                    .iter()
                    .filter(|&&i| p.inst(i).kind.is_terminator())
                    .count(),
                1
            );
        }
    }
    // Every instruction has a position; every defined function a shape.
    assert_eq!(positions.inst_index.len(), p.insts.len());
    assert_eq!(positions.shape.len(), p.functions.len());
    let main = p.function_named("main").unwrap();
    assert_eq!(
        positions.shape[main].blocks as usize,
        p.func(main).blocks.len()
    );
}

#[test]
fn struct_types_keep_field_names_from_debug_information() {
    let (p, _) = program();
    let config = p.struct_named("config").expect("struct config");
    assert_eq!(p.structs[config].fields, ["level", "origin", "name"]);
    let point = p.struct_named("point").expect("struct point");
    assert_eq!(p.structs[point].fields, ["x", "y"]);
    let cfg = p.global_named("cfg").unwrap();
    assert_eq!(p.globals[cfg].structure, Some(config));
    assert_eq!(p.globals[cfg].size, Some(24));
    // `cfg.origin.y = argc`: one field step per struct, then the store.
    let main = insts_of(&p, "main");
    let k = main
        .iter()
        .position(|i| matches!(i.kind, InstKind::FieldAddr { structure, field: 1, .. } if structure == config))
        .expect("field origin of config");
    assert!(matches!(
        main[k + 1].kind,
        InstKind::FieldAddr { structure, field: 1, .. } if structure == point
    ));
    assert!(matches!(main[k + 2].kind, InstKind::Store { .. }));
    assert_eq!(
        main[k].loc.line,
        llvm::fixture::line_of(PROGRAM, "nested field")
    );
}

#[test]
fn calls_strings_and_function_pointer_tables() {
    let (p, _) = program();
    let main = insts_of(&p, "main");
    let direct: Vec<&str> = main
        .iter()
        .filter_map(|i| match &i.kind {
            InstKind::Call {
                callee: Callee::Direct(f),
                ..
            } => Some(p.func(*f).name.as_str()),
            _ => None,
        })
        .collect();
    assert!(direct.contains(&"malloc"), "{direct:?}");
    assert!(
        direct.iter().any(|n| n.starts_with("llvm.memcpy")),
        "{direct:?}"
    );
    assert!(direct.contains(&"sum"));
    let indirect = main
        .iter()
        .find(|i| {
            matches!(
                i.kind,
                InstKind::Call {
                    callee: Callee::Indirect(_),
                    ..
                }
            )
        })
        .expect("an indirect call");
    assert_eq!(
        indirect.loc.line,
        llvm::fixture::line_of(PROGRAM, "indirect")
    );
    // getenv("MODE"): the argument is the constant string.
    let (_, getenv) = llvm::fixture::calls_to(&p, "getenv")[0];
    let InstKind::Call { args, .. } = &p.inst(getenv).kind else {
        unreachable!()
    };
    assert_eq!(p.value(args[0]), &ValueDef::ConstStr("MODE".into()));
    // String constants are values, not globals; the table of function pointers refers to
    // both functions.
    assert!(p.globals.iter().all(|g| !g.name.starts_with(".str")));
    let ops = &p.globals[p.global_named("ops").unwrap()];
    let targets: Vec<&str> = ops
        .initializer_refs
        .iter()
        .filter_map(|r| match p.value(r.address) {
            ValueDef::Function(f) => Some(p.func(*f).name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(targets.len(), 2);
    assert!(targets.contains(&"twice") && targets.contains(&"inc"));
    // The switch keeps its case values.
    let switch = main
        .iter()
        .find_map(|i| match &i.kind {
            InstKind::Switch { cases, .. } => Some(cases.iter().map(|c| c.0).collect::<Vec<_>>()),
            _ => None,
        })
        .expect("a switch");
    assert_eq!(switch, [2, 5]);
}

#[test]
fn loops_become_phis_and_branches_with_source_lines() {
    let (p, _) = program();
    let sum = p.function_named("sum").unwrap();
    let insts = insts_of(&p, "sum");
    assert!(
        insts.iter().any(|i| matches!(i.kind, InstKind::Phi { .. })),
        "mem2reg turned the counters into phis"
    );
    assert!(
        insts
            .iter()
            .all(|i| !matches!(i.kind, InstKind::Alloca { .. }))
    );
    assert!(
        insts
            .iter()
            .any(|i| matches!(i.kind, InstKind::IndexAddr { .. }))
    );
    assert!(insts.iter().any(|i| i.kind.decision().is_some()));
    // A back edge: some block has a successor that is not after it.
    let cfg = p.cfg(sum);
    assert!((0..cfg.len()).any(|b| cfg.succs[b].iter().any(|&s| s as usize <= b)));
    let func = p.func(sum);
    let first = llvm::fixture::line_of(PROGRAM, "int sum(");
    let body = llvm::fixture::line_of(PROGRAM, "loop body");
    assert_eq!(func.lines.map(|l| l.0), Some(first));
    assert!(func.lines.unwrap().1 > body);
    assert!(p.files[func.file.unwrap()].ends_with("prog.c"));
    let loop_body = insts
        .iter()
        .find(|i| matches!(i.kind, InstKind::IndexAddr { .. }))
        .unwrap();
    assert_eq!(loop_body.loc.line, body);
    assert!(loop_body.loc.column > 0);
}

#[test]
fn bitcode_from_the_systems_own_build_without_debug_info_translates() {
    // Optimised, no -g: what a system's build may hand over.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("prog.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let bc = dir.path().join("prog.bc");
    let status = std::process::Command::new("clang-19")
        .args(["-O2", "-emit-llvm", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&bc)
        .status()
        .unwrap();
    assert!(status.success());
    let t = llvm::translate_bitcode(&bc, None).unwrap();
    let p = &t.program;
    p.verify().unwrap();
    let config = p.struct_named("config").unwrap();
    // Without debug information fields are known by index only.
    assert_eq!(p.structs[config].fields, ["", "", ""]);
    assert!(p.insts.iter().all(|i| i.loc.line == 0));
}
