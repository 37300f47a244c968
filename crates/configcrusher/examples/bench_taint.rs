//! Benchmark: the whole static pipeline (dominance, taint, regions, propagation) on a
//! generated program of the size of a large C code base (the real frontend does not exist
//! yet). `cargo run --release -p analysis --example bench_taint [FUNCTIONS]`
//! (default 25 000 functions, about 2 M instructions).

use std::time::Instant;

use analysis::{OptionSource, ResolvedSources, SourceKind, analyse};
use configcrusher::{identify_regions, optimise_influence};
use ir::ProgramDominance;
use ir::{FuncId, Program, ValueId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use space::OptionId;

const OPTIONS: usize = 100;
const GLOBALS: usize = 2000;

fn generate(functions: usize, rng: &mut ChaCha8Rng) -> Program {
    let mut p = Program::new();
    let s = p
        .add_struct("state", &["a", "b", "c", "d"])
        .expect("fresh struct");
    let globals: Vec<ValueId> = (0..GLOBALS)
        .map(|g| {
            let id = p.add_global(&format!("g{g}")).expect("fresh global");
            p.globals[id].address
        })
        .collect();
    let funcs: Vec<FuncId> = (0..functions)
        .map(|k| p.add_function(&format!("f{k}"), 2).expect("fresh function"))
        .collect();
    for (k, &f) in funcs.iter().enumerate() {
        let mut b = p.build(f);
        b.in_file(&format!("file{}.c", k / 50));
        let entry = b.new_block();
        let header = b.new_block();
        let body = b.new_block();
        let then = b.new_block();
        let latch = b.new_block();
        let exit = b.new_block();
        b.switch_to(entry).at_line(10);
        let st = b.alloca(Some(s));
        let x = b.param(0);
        let fa = b.field_addr(st, s, 0);
        b.store(x, fa);
        let limit = b.load(globals[rng.gen_range(0..GLOBALS)]);
        let zero = b.const_int(0);
        let one = b.const_int(1);
        for _ in 0..6 {
            let g = b.load(globals[rng.gen_range(0..GLOBALS)]);
            let v = b.binary(g, x);
            let fb = b.field_addr(st, s, rng.gen_range(1..4));
            b.store(v, fb);
        }
        b.jump(header);
        b.switch_to(header).at_line(11);
        let i = b.phi(&[(zero, entry)]);
        let c = b.compare(i, limit);
        b.branch(c, body, exit);
        b.switch_to(body).at_line(12);
        let mut acc = i;
        for _ in 0..8 {
            let fld = b.field_addr(st, s, rng.gen_range(0..4));
            let v = b.load(fld);
            acc = b.binary(acc, v);
            let y = b.param(1);
            acc = b.binary(acc, y);
        }
        if k > 0 {
            for _ in 0..2 {
                let callee = funcs[rng.gen_range(0..k)];
                b.call(callee, &[acc, i]);
            }
        }
        let g = b.load(globals[rng.gen_range(0..GLOBALS)]);
        let cond = b.compare(g, acc);
        b.branch(cond, then, latch);
        b.switch_to(then).at_line(13);
        for _ in 0..4 {
            let fld = b.field_addr(st, s, rng.gen_range(0..4));
            b.store(acc, fld);
        }
        b.store(acc, globals[rng.gen_range(0..GLOBALS)]);
        b.call_named("work", &[acc]);
        b.jump(latch);
        b.switch_to(latch).at_line(14);
        let next = b.binary(i, one);
        b.add_incoming(i, next, latch);
        b.jump(header);
        b.switch_to(exit).at_line(15);
        let fr = b.field_addr(st, s, 1);
        let r = b.load(fr);
        b.ret(Some(r));
    }
    p
}

fn peak_rss_mb() -> f64 {
    measure::runner::peak_memory_mib().unwrap_or(f64::NAN)
}

fn main() {
    let functions: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(25_000);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let t = Instant::now();
    let program = generate(functions, &mut rng);
    println!(
        "generated: {} functions, {} blocks, {} instructions, {} values in {:.2?} (peak RSS {:.0} MB)",
        program.functions.len(),
        program.blocks.len(),
        program.insts.len(),
        program.values.len(),
        t.elapsed(),
        peak_rss_mb()
    );
    // Options: the first OPTIONS globals (only a few percent of loads read them).
    let sources: Vec<OptionSource> = (0..OPTIONS)
        .map(|k| OptionSource {
            option: OptionId(k as u32),
            kind: SourceKind::Global {
                name: format!("g{k}"),
            },
        })
        .collect();
    let resolved = ResolvedSources::resolve(&program, &sources).expect("globals exist");
    let t = Instant::now();
    let dominance = ProgramDominance::new(&program);
    println!("dominance: {:.2?}", t.elapsed());
    let t = Instant::now();
    let mut si = analyse(&program, &dominance, &resolved);
    let tainted = si
        .influence
        .iter()
        .filter(|s| **s != analysis::SetId::EMPTY)
        .count();
    println!(
        "taint: {:.2?}; {} memory cells, {} function visits, {} interned sets, \
         {} tainted decisions, {}/{} instructions influenced, {} relevant options",
        t.elapsed(),
        si.cells,
        si.function_visits,
        si.sets.len(),
        si.decisions.len(),
        tainted,
        si.influence.len(),
        si.relevant_options().len()
    );
    let t = Instant::now();
    let before = identify_regions(&program, &dominance, si.influence.as_slice(), &[]);
    println!("regions: {} in {:.2?}", before.regions.len(), t.elapsed());
    let t = Instant::now();
    let (opt, pulled) = optimise_influence(
        &program,
        &mut si.sets,
        si.influence.as_slice(),
        &si.call_graph,
    );
    let after = identify_regions(&program, &dominance, &opt, &pulled);
    println!(
        "optimised: {} regions ({} functions pulled out) in {:.2?}",
        after.regions.len(),
        pulled.len(),
        t.elapsed()
    );
    println!("peak RSS: {:.0} MB", peak_rss_mb());
}
