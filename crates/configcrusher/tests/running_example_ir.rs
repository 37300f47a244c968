//! ConfigCrusher's running example (journal paper, Fig. 2, lines 1–32) built by hand in the
//! IR: the statement-influence map, the regions, their optimisation and compression.

#![allow(clippy::disallowed_names)] // `foo` is the paper's name

use analysis::{OptionSet, OptionSource, ResolvedSources, SetId, SourceKind, analyse};
use configcrusher::{compress, identify_regions, optimise_influence};
use ir::{ArgSelector, ProgramDominance};
use ir::{FuncId, InstId, Program};
use space::{ConfigSpace, OptionId, ValidConfigurations};

const NAMES: [&str; 10] = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];

struct Example {
    program: Program,
    foo: FuncId,
    /// The `work` call of each commented line, by line number.
    work: Vec<(u32, InstId)>,
}

fn set(names: &[&str]) -> OptionSet {
    OptionSet::from_ids(
        names
            .iter()
            .map(|n| OptionId(NAMES.iter().position(|m| m == n).unwrap() as u32)),
    )
}

fn build() -> Example {
    let mut p = Program::new();
    let foo = p.add_function("foo", 1).unwrap();
    let main = p.add_function("main", 0).unwrap();
    let work_fn = p.add_function("work", 1).unwrap(); // external: takes time
    let getopt = p.add_function("getopt", 1).unwrap();
    let mut work = Vec::new();

    // 1 def foo(boolean x): 3 if(x) ... 4s; 4 else ... 1s
    let mut b = p.build(foo);
    b.in_file("example.c").at_line(1);
    let entry = b.new_block();
    let then = b.new_block();
    let els = b.new_block();
    let exit = b.new_block();
    b.switch_to(entry).at_line(3);
    let x = b.param(0);
    b.branch(x, then, els);
    b.switch_to(then).at_line(3);
    let four = b.const_int(4);
    work.push((3, b.push_call(work_fn, four)));
    b.jump(exit);
    b.switch_to(els).at_line(4);
    let one = b.const_int(1);
    work.push((4, b.push_call(work_fn, one)));
    b.jump(exit);
    b.switch_to(exit).at_line(5);
    b.ret(None);

    // 6 def main
    let mut b = p.build(main);
    b.in_file("example.c").at_line(6);
    let entry = b.new_block();
    b.switch_to(entry).at_line(7);
    let opts: Vec<_> = NAMES
        .iter()
        .map(|n| {
            let s = b.const_str(n);
            b.call(getopt, &[s])
        })
        .collect();
    let [a, bb, c, d, e, f, g, h, i, _j] = opts[..] else {
        unreachable!()
    };
    b.at_line(12);
    let one = b.const_int(1);
    work.push((12, b.push_call(work_fn, one)));
    b.at_line(13);
    let fals = b.const_int(0);
    let tru = b.const_int(1);
    // 15 if(a) { 16 work 2s; 17 foo(c); 18 x = true }
    let then15 = b.new_block();
    let join = b.new_block();
    b.at_line(15);
    b.branch(a, then15, join);
    b.switch_to(then15).at_line(16);
    let two = b.const_int(2);
    work.push((16, b.push_call(work_fn, two)));
    b.at_line(17);
    b.call(foo, &[c]);
    b.at_line(18);
    b.jump(join);
    // 21 if(b && x) 3s
    b.switch_to(join).at_line(21);
    let xv = b.phi(&[(fals, entry), (tru, then15)]);
    let check_x = b.new_block();
    let body21 = b.new_block();
    let after21 = b.new_block();
    b.branch(bb, check_x, after21);
    b.switch_to(check_x).at_line(21);
    b.branch(xv, body21, after21);
    b.switch_to(body21).at_line(21);
    let three = b.const_int(3);
    work.push((21, b.push_call(work_fn, three)));
    b.jump(after21);
    // 23 if(d && e && f) 5s
    b.switch_to(after21).at_line(23);
    let check_e = b.new_block();
    let check_f = b.new_block();
    let body23 = b.new_block();
    let after23 = b.new_block();
    b.branch(d, check_e, after23);
    b.switch_to(check_e).at_line(23);
    b.branch(e, check_f, after23);
    b.switch_to(check_f).at_line(23);
    b.branch(f, body23, after23);
    b.switch_to(body23).at_line(23);
    let five = b.const_int(5);
    work.push((23, b.push_call(work_fn, five)));
    b.jump(after23);
    // 24–32 if(a) … if(i)
    let mut current = after23;
    for (k, cond) in [a, bb, c, d, e, f, g, h, i].into_iter().enumerate() {
        let line = 24 + k as u32;
        let body = b.new_block();
        let after = b.new_block();
        b.switch_to(current).at_line(line);
        b.branch(cond, body, after);
        b.switch_to(body).at_line(line);
        let t = b.const_int(k as i64 + 1);
        work.push((line, b.push_call(work_fn, t)));
        b.jump(after);
        current = after;
    }
    b.switch_to(current).at_line(33);
    b.ret(None);
    p.verify().unwrap();
    Example {
        program: p,
        foo,
        work,
    }
}

/// `push_call`: a call to `work(secs)` returning its instruction.
trait PushCall {
    fn push_call(&mut self, f: FuncId, arg: ir::ValueId) -> InstId;
}

impl PushCall for ir::FunctionBuilder<'_> {
    fn push_call(&mut self, f: FuncId, arg: ir::ValueId) -> InstId {
        self.push(
            ir::InstKind::Call {
                callee: ir::Callee::Direct(f),
                args: vec![arg],
            },
            true,
        )
        .0
    }
}

fn space() -> ConfigSpace {
    let mut s = ConfigSpace::new("fig2");
    for n in NAMES {
        s.add_binary(n, None, false).unwrap();
    }
    s
}

fn sources() -> Vec<OptionSource> {
    NAMES
        .iter()
        .enumerate()
        .map(|(k, n)| OptionSource {
            option: OptionId(k as u32),
            kind: SourceKind::FunctionReturn {
                function: "getopt".into(),
                selector: Some(ArgSelector {
                    index: 0,
                    value: n.to_string(),
                }),
            },
        })
        .collect()
}

/// The call `foo(C)` in main.
fn foo_call(ex: &Example) -> ir::InstId {
    let call = ex.program.insts.iter().position(|inst| {
        matches!(&inst.kind, ir::InstKind::Call { callee: ir::Callee::Direct(g), .. } if *g == ex.foo)
    });
    ir::InstId::new(call.expect("main calls foo"))
}

#[test]
fn statement_influence_matches_the_paper() {
    let ex = build();
    let dom = ProgramDominance::new(&ex.program);
    let resolved = ResolvedSources::resolve(&ex.program, &sources()).unwrap();
    let si = analyse(&ex.program, &dom, &resolved);
    let of = |line: u32| {
        let (_, i) = ex.work.iter().find(|(l, _)| *l == line).unwrap();
        si.of(*i).clone()
    };
    // foo decides only on its parameter: the call `foo(C)` decides, with the paper's
    // {A, C} for lines 3–4, and foo's lines run whenever foo does
    // (`analysis::static_taint::bounded`).
    assert_eq!(of(3), set(&[]), "line 3");
    assert_eq!(of(4), set(&[]), "line 4");
    assert_eq!(si.of(foo_call(&ex)), &set(&["A", "C"]), "the call foo(C)");
    assert_eq!(of(12), set(&[]), "line 12");
    assert_eq!(of(16), set(&["A"]), "line 16");
    assert_eq!(of(21), set(&["A", "B"]), "line 21");
    assert_eq!(of(23), set(&["D", "E", "F"]), "line 23");
    for (k, n) in ["A", "B", "C", "D", "E", "F", "G", "H", "I"]
        .iter()
        .enumerate()
    {
        assert_eq!(of(24 + k as u32), set(&[n]), "line {}", 24 + k);
    }
    // J is irrelevant; D–I only matter where lines 23–32 use them.
    let relevant = si.relevant_options();
    assert!(!relevant.contains(OptionId(9)));
    assert_eq!(relevant.len(), 9);
    // foo runs only under A.
    assert_eq!(si.sets.get(si.context[ex.foo]), &set(&["A"]));
    // Tainted decisions carry locations.
    assert!(
        si.decisions
            .iter()
            .any(|d| d.loc.line == 15 && si.sets.get(d.options) == &set(&["A"]))
    );
    assert!(
        si.decisions
            .iter()
            .any(|d| d.loc.line == 21 && si.sets.get(d.options) == &set(&["A"]))
    );
}

#[test]
fn regions_match_figure_two_and_shrink_after_optimisation() {
    let ex = build();
    let p = &ex.program;
    let dom = ProgramDominance::new(p);
    let resolved = ResolvedSources::resolve(p, &sources()).unwrap();
    let mut si = analyse(p, &dom, &resolved);
    let plan = identify_regions(p, &dom, si.influence.as_slice(), &[]);
    let with = |f: FuncId, s: &OptionSet| {
        plan.regions
            .iter()
            .filter(|r| r.function == f && si.sets.get(r.options) == s)
            .collect::<Vec<_>>()
    };
    // R1: the call foo(C) under {A, C} (the paper's foo lines 3–4, decided at the call).
    let main = p.function_named("main").unwrap();
    assert!(with(ex.foo, &set(&["A", "C"])).is_empty(), "{plan:?}");
    let r1 = with(main, &set(&["A", "C"]));
    assert_eq!(r1.len(), 1, "{plan:?}");
    assert_eq!(r1[0].head, foo_call(&ex));
    // R2: main lines 15–18 under {A}, ended on both edges into the join.
    let r2: Vec<_> = with(main, &set(&["A"]))
        .into_iter()
        .filter(|r| r.lines.is_some_and(|(a, _)| a == 15))
        .collect();
    assert_eq!(r2.len(), 1, "{plan:?}");
    assert_eq!(r2[0].lines, Some((15, 18)));
    assert_eq!(r2[0].end.len(), 2);
    assert!(matches!(r2[0].start[..], [ir::ProgramPoint::Before(_)]));
    // R3: line 21 under {A, B}.
    let r3 = with(main, &set(&["A", "B"]));
    assert_eq!(r3.len(), 1);
    assert_eq!(r3[0].lines, Some((21, 21)));

    let before = plan.regions.len();
    let (opt, pulled) =
        optimise_influence(p, &mut si.sets, si.influence.as_slice(), &si.call_graph);
    // Invariants 1 and 2: the optimised influence contains the original and is an interaction.
    let interactions = si.interactions();
    for (i, (&orig, &new)) in si.influence.iter().zip(&opt).enumerate() {
        assert!(si.sets.is_subset(orig, new), "instruction {i}");
        assert!(
            new == SetId::EMPTY || interactions.contains(&new),
            "instruction {i}"
        );
    }
    let after = identify_regions(p, &dom, &opt, &pulled).regions.len();
    assert!(!pulled.contains(&ex.foo), "foo has no regions to pull out");
    assert!(after < before, "{before} regions before, {after} after");
}

#[test]
fn compression_measures_at_most_8_of_1024() {
    let ex = build();
    let dom = ProgramDominance::new(&ex.program);
    let resolved = ResolvedSources::resolve(&ex.program, &sources()).unwrap();
    let si = analyse(&ex.program, &dom, &resolved);
    let space = space();
    let valid = ValidConfigurations::new(&space).unwrap();
    assert_eq!(valid.count(), 1024u32.into());
    let interactions: Vec<OptionSet> = si
        .interactions()
        .iter()
        .map(|s| si.sets.get(*s).clone())
        .collect();
    let c = compress(&valid, &interactions, 1 << 20).unwrap();
    assert!(c.maximal.contains(&set(&["A", "B"])));
    assert!(c.maximal.contains(&set(&["A", "C"])));
    assert!(c.maximal.contains(&set(&["D", "E", "F"])));
    assert!(!c.maximal.contains(&set(&["A"])), "subsets are removed");
    assert_eq!(c.lower_bound, 8);
    assert!(c.configurations.len() <= 8, "{}", c.configurations.len());
    // Every combination of every interaction is covered.
    for m in &c.maximal {
        let ids: Vec<OptionId> = m.iter().collect();
        for bits in 0..(1u32 << ids.len()) {
            assert!(
                c.configurations.iter().any(|cfg| ids
                    .iter()
                    .enumerate()
                    .all(|(k, o)| cfg.0[o.index()] == (bits >> k) & 1)),
                "{m:?} combination {bits:b}"
            );
        }
    }
    // J never varies.
    assert!(c.configurations.iter().all(|cfg| cfg.0[9] == 0));
}
