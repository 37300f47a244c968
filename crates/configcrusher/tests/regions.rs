//! Region placement (Algorithm 2) on hand-built functions.

use analysis::{SetId, SetInterner};
use configcrusher::identify_regions;
use ir::ProgramDominance;
use ir::{InstKind, Program};
use space::OptionId;

/// A program with a global `level` (its address) and an empty `main`.
fn main_with_global() -> (Program, ir::ValueId, ir::FuncId) {
    let mut p = Program::new();
    let g = p.add_global("level").unwrap();
    let level = p.globals[g].address;
    let main = p.add_function("main", 0).unwrap();
    (p, level, main)
}

/// Clang keeps the block after a `return` inside `do { … } while (0)`: it has no
/// predecessors, so a region headed there could never start, yet its end would run at every
/// return (on xz, two such regions made 2.9 M exit calls per run that closed nothing).
#[test]
fn dead_code_gets_no_region() {
    let (mut p, level, main) = main_with_global();
    let mut b = p.build(main);
    b.new_block();
    let then = b.new_block();
    let dead = b.new_block();
    let exit = b.new_block();
    let x = b.load(level);
    b.branch(x, then, exit);
    b.switch_to(then);
    b.call_named("work", &[]);
    b.jump(exit);
    b.switch_to(dead);
    b.call_named("work", &[]);
    b.jump(exit);
    b.switch_to(exit);
    b.ret(None);
    p.verify().unwrap();
    let dominance = ProgramDominance::new(&p);
    // Every statement of the `then` and dead blocks is influenced by the option.
    let mut sets = SetInterner::new();
    let opt = sets.singleton(OptionId(0));
    let mut influence = vec![SetId::EMPTY; p.insts.len()];
    for block in [then, dead] {
        for &i in &p.block(block).insts {
            influence[i.index()] = opt;
        }
    }
    let plan = identify_regions(&p, &dominance, &influence, &[]);
    assert_eq!(plan.regions.len(), 1, "{:?}", plan.regions);
    let region = &plan.regions[0];
    assert_eq!(p.inst(region.head).block, then);
    assert!(!region.start.is_empty() && !region.end.is_empty());
    assert!(matches!(p.inst(region.head).kind, InstKind::Call { .. }));
}

/// A region headed in a loop body whose post-dominators keep its influence up to the loop's
/// header must end on the back edge: walking on to the loop's exit would put the back edge
/// inside the region, entered again each iteration and left once (on gzip's `deflate_fast`,
/// 128 K nested entries per run and a 400-fold slowdown).
#[test]
fn a_region_in_a_loop_body_ends_on_the_back_edge() {
    let (mut p, level, main) = main_with_global();
    let mut b = p.build(main);
    let entry = b.new_block();
    let header = b.new_block();
    let body = b.new_block();
    let exit = b.new_block();
    b.jump(header);
    b.switch_to(header);
    let x = b.load(level);
    b.branch(x, body, exit);
    b.switch_to(body);
    b.call_named("first", &[]);
    b.call_named("second", &[]);
    b.jump(header);
    b.switch_to(exit);
    b.ret(None);
    p.verify().unwrap();
    let dominance = ProgramDominance::new(&p);
    // `first` depends on option 0; `second`, the latch and the header's decision on option 1.
    let mut sets = SetInterner::new();
    let (a, c) = (sets.singleton(OptionId(0)), sets.singleton(OptionId(1)));
    let mut influence = vec![SetId::EMPTY; p.insts.len()];
    let body_insts = &p.block(body).insts;
    influence[body_insts[0].index()] = a;
    for &i in &body_insts[1..] {
        influence[i.index()] = c;
    }
    for &i in &p.block(header).insts {
        influence[i.index()] = c;
    }
    let plan = identify_regions(&p, &dominance, &influence, &[]);
    let second = plan
        .regions
        .iter()
        .find(|r| r.head == body_insts[1])
        .unwrap_or_else(|| panic!("{:?}", plan.regions));
    assert_eq!(
        second.end,
        vec![ir::ProgramPoint::Edge {
            from: body,
            to: header
        }],
        "{second:?}"
    );
    let _ = entry;
}

/// An end the head does not dominate runs on paths that bypass the head too (gzip's
/// `ct_tally`: a region in an `if` whose post-dominators keep its influence into the `return`
/// shared with the `else` path gave 700 K exits per run that closed nothing). The region ends
/// where the paths from its head leave the blocks the head dominates.
#[test]
fn a_region_ends_where_paths_leave_what_its_head_dominates() {
    let (mut p, level, main) = main_with_global();
    let mut b = p.build(main);
    b.new_block();
    let then = b.new_block();
    let join = b.new_block();
    let x = b.load(level);
    b.branch(x, then, join);
    b.switch_to(then);
    b.call_named("inside", &[]);
    b.jump(join);
    b.switch_to(join);
    b.call_named("shared", &[]);
    b.call_named("after", &[]);
    b.ret(None);
    p.verify().unwrap();
    let dominance = ProgramDominance::new(&p);
    // `inside` and `shared` have the influence of option 1 (`shared` through data, say), the
    // branch that of option 0, `after` none.
    let mut sets = SetInterner::new();
    let (a, c) = (sets.singleton(OptionId(0)), sets.singleton(OptionId(1)));
    let mut influence = vec![SetId::EMPTY; p.insts.len()];
    let entry_insts = &p.block(p.func(main).blocks[0]).insts;
    influence[entry_insts.last().unwrap().index()] = a;
    for &i in &p.block(then).insts {
        influence[i.index()] = c;
    }
    influence[p.block(join).insts[0].index()] = c;
    let plan = identify_regions(&p, &dominance, &influence, &[]);
    let region = plan
        .regions
        .iter()
        .find(|r| p.inst(r.head).block == then)
        .unwrap_or_else(|| panic!("{:?}", plan.regions));
    assert_eq!(
        region.end,
        vec![ir::ProgramPoint::Edge {
            from: then,
            to: join
        }],
        "{region:?}"
    );
}
