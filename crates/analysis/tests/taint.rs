//! The taint engine on small hand-built programs: each test fails if one kind of flow is
//! lost (or invented).

use analysis::{
    FieldRef, OptionSet, OptionSource, ResolvedSources, SourceKind, StatementInfluence, analyse,
};
use ir::ProgramDominance;
use ir::{FunctionBuilder, InstId, Program, ValueId};
use space::OptionId;

const OPT: OptionId = OptionId(0);
const OTHER: OptionId = OptionId(1);

fn global_source(name: &str, option: OptionId) -> OptionSource {
    OptionSource {
        option,
        kind: SourceKind::Global { name: name.into() },
    }
}

fn run(p: &Program, sources: &[OptionSource]) -> StatementInfluence {
    p.verify().unwrap();
    let dom = ProgramDominance::new(p);
    let resolved = ResolvedSources::resolve(p, sources).unwrap();
    analyse(p, &dom, &resolved)
}

/// `if (cond) work()`: returns the work call, leaves the builder in the join block.
fn if_then_work(b: &mut FunctionBuilder, cond: ValueId) -> InstId {
    let then = b.new_block();
    let join = b.new_block();
    b.branch(cond, then, join);
    b.switch_to(then);
    let zero = b.const_int(0);
    b.call_named("work", &[zero]);
    let work = *b.program().blocks[then].insts.last().unwrap();
    b.jump(join);
    b.switch_to(join);
    work
}

fn opt() -> OptionSet {
    OptionSet::from_ids([OPT])
}

fn empty() -> OptionSet {
    OptionSet::new()
}

fn global(p: &mut Program, name: &str) -> ValueId {
    let g = p.add_global(name).unwrap();
    p.globals[g].address
}

#[test]
fn direct_flow_from_a_global_through_arithmetic() {
    let mut p = Program::new();
    let level = global(&mut p, "level");
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(main);
    b.new_block();
    let x = b.load(level);
    let one = b.const_int(1);
    let y = b.binary(x, one);
    let c = b.compare(y, one);
    let work = if_then_work(&mut b, c);
    let after = b.call_named("after", &[]);
    b.ret(None);
    let si = run(&p, &[global_source("level", OPT)]);
    assert_eq!(si.sets.get(si.value_taint[y]), &opt());
    assert_eq!(si.of(work), &opt());
    let ValueDef::Inst(after) = p.value(after).clone() else {
        panic!()
    };
    assert_eq!(si.of(after), &empty(), "the join is not influenced");
    assert_eq!(si.decisions.len(), 1);
}

use ir::ValueDef;

#[test]
fn implicit_flow_through_a_phi_and_through_memory() {
    let mut p = Program::new();
    let level = global(&mut p, "level");
    let flag = global(&mut p, "flag");
    let reader = p.add_function("reader", 0).unwrap();
    let main = p.add_function("main", 0).unwrap();
    // reader: if (flag) work()
    let mut b = p.build(reader);
    b.new_block();
    let f = b.load(flag);
    let reader_work = if_then_work(&mut b, f);
    b.ret(None);
    // main: v = level ? 1 : 0 by branches; if (v) work(); if (level) flag = 1; reader()
    let mut b = p.build(main);
    let entry = b.new_block();
    let then = b.new_block();
    let join = b.new_block();
    b.switch_to(entry);
    let l = b.load(level);
    let zero = b.const_int(0);
    let one = b.const_int(1);
    b.branch(l, then, join);
    b.switch_to(then);
    b.jump(join);
    b.switch_to(join);
    let v = b.phi(&[(zero, entry), (one, then)]);
    let phi_work = if_then_work(&mut b, v);
    let set = b.new_block();
    let rest = b.new_block();
    b.branch(l, set, rest);
    b.switch_to(set);
    b.store(one, flag);
    b.jump(rest);
    b.switch_to(rest);
    b.call(reader, &[]);
    b.ret(None);
    let si = run(&p, &[global_source("level", OPT)]);
    assert_eq!(si.sets.get(si.value_taint[v]), &opt());
    assert_eq!(si.of(phi_work), &opt());
    assert_eq!(
        si.of(reader_work),
        &opt(),
        "the store under `if (level)` taints flag"
    );
}

#[test]
fn flow_through_a_local_and_a_global() {
    let mut p = Program::new();
    let level = global(&mut p, "level");
    let copy = global(&mut p, "copy");
    let user = p.add_function("user", 0).unwrap();
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(user);
    b.new_block();
    let c = b.load(copy);
    let user_work = if_then_work(&mut b, c);
    b.ret(None);
    let mut b = p.build(main);
    b.new_block();
    let local = b.alloca(None);
    let l = b.load(level);
    b.store(l, local);
    let next = b.new_block();
    b.jump(next);
    b.switch_to(next);
    let back = b.load(local);
    b.store(back, copy);
    let main_work = if_then_work(&mut b, back);
    b.call(user, &[]);
    b.ret(None);
    let si = run(&p, &[global_source("level", OPT)]);
    assert_eq!(si.of(main_work), &opt());
    assert_eq!(si.of(user_work), &opt());
}

#[test]
fn struct_fields_are_kept_apart() {
    let mut p = Program::new();
    let s = p.add_struct("opts", &["mode", "count"]).unwrap();
    let g = p.add_global("settings").unwrap();
    p.globals[g].structure = Some(s);
    let settings = p.globals[g].address;
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(main);
    b.new_block();
    // A local copy of the struct: mode from the option-holding field, count a constant.
    let local = b.alloca(Some(s));
    let src_mode = b.field_addr(settings, s, 0);
    let mode = b.load(src_mode);
    let dst_mode = b.field_addr(local, s, 0);
    b.store(mode, dst_mode);
    let seven = b.const_int(7);
    let dst_count = b.field_addr(local, s, 1);
    b.store(seven, dst_count);
    let m = b.field_addr(local, s, 0);
    let m = b.load(m);
    let mode_work = if_then_work(&mut b, m);
    let c = b.field_addr(local, s, 1);
    let c = b.load(c);
    let count_work = if_then_work(&mut b, c);
    b.ret(None);
    let sources = [OptionSource {
        option: OPT,
        kind: SourceKind::StructField {
            structure: "opts".into(),
            field: FieldRef::Name("mode".into()),
        },
    }];
    let si = run(&p, &sources);
    assert_eq!(si.of(mode_work), &opt());
    assert_eq!(si.of(count_work), &empty(), "field `count` holds no option");
}

#[test]
fn a_callee_writing_through_a_pointer_and_returning_values() {
    let mut p = Program::new();
    let level = global(&mut p, "level");
    let set = p.add_function("set", 1).unwrap();
    let get = p.add_function("get", 0).unwrap();
    let use_it = p.add_function("use_it", 1).unwrap();
    let main = p.add_function("main", 0).unwrap();
    // set(int *out) { *out = level; }
    let mut b = p.build(set);
    b.new_block();
    let out = b.param(0);
    let l = b.load(level);
    b.store(l, out);
    b.ret(None);
    // int get() { return level + 1; }
    let mut b = p.build(get);
    b.new_block();
    let l = b.load(level);
    let one = b.const_int(1);
    let r = b.binary(l, one);
    b.ret(Some(r));
    // use_it(x) { if (x) work(); }
    let mut b = p.build(use_it);
    b.new_block();
    let x = b.param(0);
    let param_work = if_then_work(&mut b, x);
    b.ret(None);
    // main: int v; set(&v); if (v) work(); if (get()) work(); use_it(v)
    let mut b = p.build(main);
    b.new_block();
    let v = b.alloca(None);
    b.call(set, &[v]);
    let loaded = b.load(v);
    let pointer_work = if_then_work(&mut b, loaded);
    let g = b.call(get, &[]);
    let return_work = if_then_work(&mut b, g);
    let use_call = b.call(use_it, &[loaded]);
    b.ret(None);
    let si = run(&p, &[global_source("level", OPT)]);
    assert_eq!(si.of(pointer_work), &opt(), "written through a pointer");
    assert_eq!(si.of(return_work), &opt(), "returned");
    // `use_it` decides only on its parameter: the call site decides, on what it passes, and
    // the work inside runs whenever `use_it` does (`static_taint::bounded`).
    let ValueDef::Inst(use_call) = p.value(use_call).clone() else {
        panic!()
    };
    assert_eq!(si.of(use_call), &opt(), "passed as argument");
    assert_eq!(si.of(param_work), &empty(), "decided at the call site");
}

#[test]
fn an_indirect_call_through_a_function_table() {
    let mut p = Program::new();
    let level = global(&mut p, "level");
    let handler = p.add_function("handler", 1).unwrap();
    let table = p.add_global("table").unwrap();
    let addr = p.func(handler).address;
    p.globals[table].initializer_refs.push(ir::InitializerRef {
        field: None,
        address: addr,
    });
    let table = p.globals[table].address;
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(handler);
    b.new_block();
    let x = b.param(0);
    let work = if_then_work(&mut b, x);
    b.ret(None);
    let mut b = p.build(main);
    b.new_block();
    let fp = b.load(table);
    let l = b.load(level);
    let call = b.call_indirect(fp, &[l]);
    b.ret(None);
    let si = run(&p, &[global_source("level", OPT)]);
    let ValueDef::Inst(call) = p.value(call).clone() else {
        panic!()
    };
    assert_eq!(si.call_graph.targets_of(call), &[handler]);
    // `handler` decides only on its parameter: the call decides (`static_taint::bounded`).
    assert_eq!(si.of(call), &opt());
    assert_eq!(si.of(work), &empty());
}

#[test]
fn a_loop_whose_trip_count_is_an_option() {
    let mut p = Program::new();
    let n = global(&mut p, "threads");
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(main);
    let entry = b.new_block();
    let header = b.new_block();
    let body = b.new_block();
    let exit = b.new_block();
    b.switch_to(entry);
    let limit = b.load(n);
    let zero = b.const_int(0);
    let one = b.const_int(1);
    b.jump(header);
    b.switch_to(header);
    let i = b.phi(&[(zero, entry)]);
    let c = b.compare(i, limit);
    b.branch(c, body, exit);
    b.switch_to(body);
    let work = b.call_named("work", &[i]);
    let next = b.binary(i, one);
    b.add_incoming(i, next, body);
    b.jump(header);
    b.switch_to(exit);
    let done = b.call_named("done", &[]);
    b.ret(None);
    let si = run(&p, &[global_source("threads", OPT)]);
    let inst = |v: ValueId| match p.value(v) {
        ValueDef::Inst(i) => *i,
        _ => panic!(),
    };
    assert_eq!(si.of(inst(work)), &opt());
    assert_eq!(si.of(inst(c)), &opt(), "the header runs once per iteration");
    assert_eq!(si.of(inst(done)), &empty());
}

#[test]
fn irrelevant_options_stay_irrelevant() {
    let mut p = Program::new();
    let level = global(&mut p, "level");
    let unused = global(&mut p, "unused");
    let input = global(&mut p, "input");
    let helper = p.add_function("helper", 1).unwrap();
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(helper);
    b.new_block();
    let x = b.param(0);
    let helper_work = if_then_work(&mut b, x);
    b.ret(Some(x));
    let mut b = p.build(main);
    b.new_block();
    let l = b.load(level);
    let d = b.load(input);
    b.call_named("printf", &[l]); // using an option without deciding on it
    let r = b.call(helper, &[d]);
    let main_work = if_then_work(&mut b, r);
    b.ret(None);
    let _ = unused;
    let si = run(
        &p,
        &[global_source("level", OPT), global_source("unused", OTHER)],
    );
    assert_eq!(si.of(helper_work), &empty());
    assert_eq!(si.of(main_work), &empty());
    assert!(si.relevant_options().is_empty());
    assert!(si.decisions.is_empty());
    assert_eq!(
        analysis::static_taint::irrelevant_options(&si, [OPT, OTHER].into_iter()),
        vec![OPT, OTHER]
    );
}

#[test]
fn getenv_with_a_selector_taints_only_the_selected_call() {
    let mut p = Program::new();
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(main);
    b.new_block();
    let name = b.const_str("XZ_MODE");
    let other = b.const_str("HOME");
    let mode = b.call_named("getenv", &[name]);
    let home = b.call_named("getenv", &[other]);
    let first = b.load(mode); // *getenv("XZ_MODE")
    let mode_work = if_then_work(&mut b, first);
    let h = b.load(home);
    let home_work = if_then_work(&mut b, h);
    b.ret(None);
    let sources = [OptionSource {
        option: OPT,
        kind: SourceKind::FunctionReturn {
            function: "getenv".into(),
            selector: Some(ir::ArgSelector {
                index: 0,
                value: "XZ_MODE".into(),
            }),
        },
    }];
    let si = run(&p, &sources);
    assert_eq!(si.of(mode_work), &opt());
    assert_eq!(si.of(home_work), &empty());
}

#[test]
fn a_source_naming_nothing_in_the_program_is_an_error() {
    let p = Program::new();
    let err = ResolvedSources::resolve(&p, &[global_source("nope", OPT)])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "option source names global `nope`, which the program does not define"
    );
    let err = ResolvedSources::resolve(
        &p,
        &[OptionSource {
            option: OPT,
            kind: SourceKind::StructField {
                structure: "lzma_options_lzma".into(),
                field: FieldRef::Index(3),
            },
        }],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("struct type `lzma_options_lzma`"), "{err}");
}
