//! A miniature dynamic taint tracker for writing programs as Rust functions: values carry the
//! options they depend on, branches push their condition's taint on a control stack (so an
//! assignment under a tainted branch is tainted by it: an implicit flow), and every decision
//! is recorded with its data-flow taint and the control stack's taint, as the runtime will.
#![allow(dead_code)]

use std::collections::BTreeSet;

use comprex::{Decision, DecisionRecord};
use space::{ConfigSpace, Configuration};

#[derive(Clone, Debug)]
pub struct Val {
    pub v: i64,
    pub taint: BTreeSet<String>,
}

pub struct Tracer<'a> {
    space: &'a ConfigSpace,
    config: &'a Configuration,
    control: Vec<BTreeSet<String>>,
    pub records: Vec<DecisionRecord>,
}

impl<'a> Tracer<'a> {
    pub fn new(space: &'a ConfigSpace, config: &'a Configuration) -> Self {
        Tracer {
            space,
            config,
            control: vec![],
            records: vec![],
        }
    }

    /// Reading an option: its value index, tainted by the option (a source).
    pub fn option(&self, name: &str) -> Val {
        let id = self.space.find(name).expect("option exists");
        Val {
            v: self.config.0[id.index()] as i64,
            taint: [name.to_string()].into(),
        }
    }

    fn context(&self) -> BTreeSet<String> {
        self.control.iter().flatten().cloned().collect()
    }

    /// A value computed from `from` at this point: their taints plus the control context.
    pub fn assign(&self, v: i64, from: &[&Val]) -> Val {
        let mut taint = self.context();
        for f in from {
            taint.extend(f.taint.iter().cloned());
        }
        Val { v, taint }
    }

    /// A decision on `cond` (true when non-zero), recorded.
    pub fn decide(&mut self, id: u32, method: &str, line: u32, cond: &Val) -> bool {
        self.records.push(DecisionRecord {
            decision: Decision {
                id,
                method: method.into(),
                file: "prog.c".into(),
                line,
                column: 0,
            },
            data_flow: cond.taint.clone(),
            control_flow: self.context(),
        });
        cond.v != 0
    }

    /// Entering the code controlled by a decision on `cond`, until [`Self::exit`] (its
    /// immediate post-dominator).
    pub fn enter(&mut self, cond: &Val) {
        self.control.push(cond.taint.clone());
    }

    pub fn exit(&mut self) {
        self.control.pop();
    }
}

pub fn binary_space(names: &[&str]) -> ConfigSpace {
    let mut s = ConfigSpace::new("test");
    for n in names {
        s.add_binary(n, None, false).unwrap();
    }
    s
}

/// The paper's Fig. 2: main reads A–D; `if (a) { foo(b); i = 20 } else { i = 5 }`, then
/// `while (i > 0) { bar(c); i-- }`; foo and bar each branch on their argument.
pub fn fig2(space: &ConfigSpace, config: &Configuration) -> Vec<DecisionRecord> {
    let mut t = Tracer::new(space, config);
    let a = t.option("A");
    let b = t.option("B");
    let c = t.option("C");
    let _d = t.option("D");
    let taken = t.decide(6, "main", 6, &a);
    t.enter(&a);
    let mut i = if taken {
        fig2_branch(&mut t, 17, "foo", &b);
        t.assign(20, &[])
    } else {
        t.assign(5, &[])
    };
    t.exit();
    loop {
        let cond = t.assign((i.v > 0) as i64, &[&i]);
        if !t.decide(13, "main", 13, &cond) {
            break;
        }
        t.enter(&cond);
        fig2_branch(&mut t, 20, "bar", &c);
        i = t.assign(i.v - 1, &[&i]);
        t.exit();
    }
    t.records
}

fn fig2_branch(t: &mut Tracer, line: u32, method: &str, x: &Val) {
    t.decide(line, method, line, x);
}

/// Fig. 2's execution times per method (seconds): main 1 + (A ? 1 : 2); foo, called with A,
/// B ? 4 : 1; bar, called 20 times with A and 5 without, C ? 3 : 1 per call.
pub fn fig2_times(space: &ConfigSpace, config: &Configuration) -> comprex::RegionTimes {
    let on = |n: &str| config.0[space.find(n).unwrap().index()] == 1;
    let mut seconds = std::collections::BTreeMap::new();
    seconds.insert("main".to_string(), if on("A") { 2.0 } else { 3.0 });
    if on("A") {
        seconds.insert("foo".to_string(), if on("B") { 4.0 } else { 1.0 });
    }
    let calls = if on("A") { 20.0 } else { 5.0 };
    seconds.insert("bar".to_string(), calls * if on("C") { 3.0 } else { 1.0 });
    comprex::RegionTimes {
        configuration: config.clone(),
        seconds,
    }
}
