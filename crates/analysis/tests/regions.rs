//! Region placement (Algorithm 2) on hand-built functions.

use analysis::{ProgramDominance, SetId, SetInterner, identify_regions};
use ir::{InstKind, Program};
use space::OptionId;

/// Clang keeps the block after a `return` inside `do { … } while (0)`: it has no
/// predecessors, so a region headed there could never start, yet its end would run at every
/// return (on xz, two such regions made 2.9 M exit calls per run that closed nothing).
#[test]
fn dead_code_gets_no_region() {
    let mut p = Program::new();
    let g = p.add_global("level").unwrap();
    let level = p.globals[g.index()].address;
    let main = p.add_function("main", 0).unwrap();
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
