//! The precision choices of the taint engine (see `analysis::taint`), each on a small
//! hand-built program: what is no longer tainted, and what must stay tainted.

use analysis::{OptionSet, OptionSource, ResolvedSources, SourceKind, StatementInfluence, analyse};
use ir::ProgramDominance;
use ir::{InstId, Program, ValueDef, ValueId};
use space::OptionId;

const OPT: OptionId = OptionId(0);
const OTHER: OptionId = OptionId(1);

fn run(p: &Program) -> StatementInfluence {
    p.verify().unwrap();
    let dom = ProgramDominance::new(p);
    let sources: Vec<OptionSource> = [("opt", OPT), ("other", OTHER)]
        .iter()
        .filter(|(n, _)| p.global_named(n).is_some())
        .map(|(n, o)| OptionSource {
            option: *o,
            kind: SourceKind::Global { name: (*n).into() },
        })
        .collect();
    let resolved = ResolvedSources::resolve(p, &sources).unwrap();
    analyse(p, &dom, &resolved)
}

fn global(p: &mut Program, name: &str) -> ValueId {
    let g = p.add_global(name).unwrap();
    p.globals[g].address
}

fn inst_of(p: &Program, v: ValueId) -> InstId {
    match p.value(v) {
        ValueDef::Inst(i) => *i,
        other => panic!("{other:?} is not an instruction"),
    }
}

fn set(ids: &[OptionId]) -> OptionSet {
    OptionSet::from_ids(ids.iter().copied())
}

#[test]
fn a_helper_called_under_a_tainted_decision_and_outside_one_has_regions_only_where_it_decides() {
    let mut p = Program::new();
    let opt = global(&mut p, "opt");
    let other = global(&mut p, "other");
    let helper = p.add_function("helper", 0).unwrap();
    let main = p.add_function("main", 0).unwrap();
    // helper() { work(); if (other) work(); }
    let mut b = p.build(helper);
    let entry = b.new_block();
    let then = b.new_block();
    let exit = b.new_block();
    b.switch_to(entry);
    let plain = b.call_named("work", &[]);
    let o = b.load(other);
    b.branch(o, then, exit);
    b.switch_to(then);
    let decided = b.call_named("work", &[]);
    b.jump(exit);
    b.switch_to(exit);
    b.ret(None);
    // main() { if (opt) helper(); helper(); }
    let mut b = p.build(main);
    let entry = b.new_block();
    let then = b.new_block();
    let join = b.new_block();
    b.switch_to(entry);
    let x = b.load(opt);
    b.branch(x, then, join);
    b.switch_to(then);
    let tainted_call = b.call(helper, &[]);
    b.jump(join);
    b.switch_to(join);
    let plain_call = b.call(helper, &[]);
    b.ret(None);
    let si = run(&p);

    // The helper's unconditional work runs whenever it is called: its time belongs to the
    // caller's region, so it has no influence of its own.
    assert_eq!(si.of(inst_of(&p, plain)), &set(&[]));
    // Its own decision makes a region, which also depends on whether it is called at all.
    assert_eq!(si.of(inst_of(&p, decided)), &set(&[OPT, OTHER]));
    assert_eq!(si.sets.get(si.context[helper]), &set(&[OPT]));
    // The call sites: one in the region of `opt`, one outside any.
    assert_eq!(si.of(inst_of(&p, tainted_call)), &set(&[OPT]));
    assert_eq!(si.of(inst_of(&p, plain_call)), &set(&[]));
}

#[test]
fn fields_stay_apart_in_a_class_that_unification_collapsed() {
    let mut p = Program::new();
    let opt = global(&mut p, "opt");
    let s = p.add_struct("state", &["head", "size", "level"]).unwrap();
    // A memset-like helper taking `void *`: called with the struct and with one of its
    // fields, unification puts the struct and that field in one class.
    let clear = p.add_function("clear", 1).unwrap();
    let main = p.add_function("main", 0).unwrap();
    let mut b = p.build(clear);
    b.new_block();
    let zero = b.const_int(0);
    let ptr = b.param(0);
    b.store(zero, ptr);
    b.ret(None);
    let mut b = p.build(main);
    let entry = b.new_block();
    b.switch_to(entry);
    let st = b.alloca(Some(s));
    let size = b.field_addr(st, s, 1);
    b.call(clear, &[st]);
    b.call(clear, &[size]);
    let level = b.field_addr(st, s, 2);
    let o = b.load(opt);
    b.store(o, level);
    let n = b.const_int(64);
    b.store(n, size);
    // Reads of the untainted field, of the tainted one, and of the whole object.
    let size_again = b.field_addr(st, s, 1);
    let read_size = b.load(size_again);
    let level_again = b.field_addr(st, s, 2);
    let read_level = b.load(level_again);
    let bytes = b.cast(st);
    let read_bytes = b.call_named("checksum", &[bytes]);
    b.ret(None);
    let si = run(&p);
    let taint = |v: ValueId| si.sets.get(si.value_taint[v]).clone();
    assert_eq!(taint(read_size), set(&[]), "st->size is not st->level");
    assert_eq!(taint(read_level), set(&[OPT]));
    assert_eq!(
        taint(read_bytes),
        set(&[OPT]),
        "a read of the whole object sees every field"
    );
}

#[test]
fn an_indirect_call_only_reaches_functions_of_its_arity() {
    let mut p = Program::new();
    let opt = global(&mut p, "opt");
    let one = p.add_function("one_param", 1).unwrap();
    let two = p.add_function("two_params", 2).unwrap();
    let main = p.add_function("main", 0).unwrap();
    for f in [one, two] {
        let mut b = p.build(f);
        b.new_block();
        b.ret(None);
    }
    let (one_addr, two_addr) = (p.func(one).address, p.func(two).address);
    let mut b = p.build(main);
    b.new_block();
    let x = b.load(opt);
    // Both addresses flow into one pointer variable.
    let fp = b.select(x, one_addr, two_addr);
    let arg = b.const_int(1);
    let call = b.call_indirect(fp, &[arg]);
    b.ret(None);
    let si = run(&p);
    let call = inst_of(&p, call);
    assert_eq!(si.call_graph.targets_of(call), &[one]);
    // Which function runs depends on `opt`: the callee's context says so.
    assert_eq!(si.sets.get(si.context[one]), &set(&[OPT]));
}
