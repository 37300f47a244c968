//! The textual dump of a program, for debugging and test failure messages.

use std::fmt;

use crate::{Callee, InstKind, Program, ValueDef, ValueId};

struct V<'a>(&'a Program, ValueId);

impl fmt::Display for V<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.value(self.1) {
            ValueDef::Inst(_) => write!(f, "{}", self.1),
            ValueDef::Param { index, .. } => write!(f, "%arg{index}"),
            ValueDef::Global(g) => write!(f, "@{}", self.0.globals[*g].name),
            ValueDef::Function(func) => write!(f, "@{}", self.0.func(*func).name),
            ValueDef::ConstInt(i) => write!(f, "{i}"),
            ValueDef::ConstFloat(x) => write!(f, "{x}"),
            ValueDef::ConstStr(s) => write!(f, "{s:?}"),
            ValueDef::Undef => write!(f, "undef"),
        }
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.structs {
            writeln!(f, "struct {} {{ {} }}", s.name, s.fields.join(", "))?;
        }
        for g in &self.globals {
            write!(f, "global @{}", g.name)?;
            if let Some(s) = g.structure {
                write!(f, ": {}", self.structs[s].name)?;
            }
            for a in &g.annotations {
                write!(f, " #[{a}]")?;
            }
            writeln!(f)?;
        }
        for func in &self.functions {
            let params: Vec<String> = func
                .params
                .iter()
                .map(|p| V(self, *p).to_string())
                .collect();
            if func.is_declaration {
                writeln!(f, "declare @{}({})", func.name, params.join(", "))?;
                continue;
            }
            writeln!(f, "fn @{}({}) {{", func.name, params.join(", "))?;
            for &b in &func.blocks {
                writeln!(f, "{b}:")?;
                for &i in &self.block(b).insts {
                    let inst = self.inst(i);
                    write!(f, "    ")?;
                    if let Some(r) = inst.result {
                        write!(f, "{r} = ")?;
                    }
                    let list = |vs: &[ValueId]| {
                        vs.iter()
                            .map(|v| V(self, *v).to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    match &inst.kind {
                        InstKind::Op { op, args } => write!(f, "{op:?} {}", list(args))?,
                        InstKind::Phi { incoming } => {
                            write!(f, "phi")?;
                            for (v, b) in incoming {
                                write!(f, " [{}, {b}]", V(self, *v))?;
                            }
                        }
                        InstKind::Select {
                            cond,
                            if_true,
                            if_false,
                        } => write!(f, "select {}", list(&[*cond, *if_true, *if_false]))?,
                        InstKind::Alloca { structure } => {
                            write!(f, "alloca")?;
                            if let Some(s) = structure {
                                write!(f, " {}", self.structs[*s].name)?;
                            }
                        }
                        InstKind::Load { ptr } => write!(f, "load {}", V(self, *ptr))?,
                        InstKind::Store { value, ptr } => {
                            write!(f, "store {}, {}", V(self, *value), V(self, *ptr))?
                        }
                        InstKind::FieldAddr {
                            base,
                            structure,
                            field,
                        } => write!(
                            f,
                            "field {}, {}.{field}",
                            V(self, *base),
                            self.structs[*structure].name
                        )?,
                        InstKind::IndexAddr { base, index } => {
                            write!(f, "index {}", list(&[*base, *index]))?
                        }
                        InstKind::Call { callee, args } => match callee {
                            Callee::Direct(c) => {
                                write!(f, "call @{}({})", self.func(*c).name, list(args))?
                            }
                            Callee::Indirect(v) => {
                                write!(f, "call *{}({})", V(self, *v), list(args))?
                            }
                        },
                        InstKind::Return { value } => match value {
                            Some(v) => write!(f, "ret {}", V(self, *v))?,
                            None => write!(f, "ret")?,
                        },
                        InstKind::Jump { target } => write!(f, "jump {target}")?,
                        InstKind::Branch {
                            cond,
                            if_true,
                            if_false,
                        } => write!(f, "br {}, {if_true}, {if_false}", V(self, *cond))?,
                        InstKind::Switch {
                            value,
                            default,
                            cases,
                        } => {
                            write!(f, "switch {}, default {default}", V(self, *value))?;
                            for (c, b) in cases {
                                write!(f, ", {c} => {b}")?;
                            }
                        }
                        InstKind::Unreachable => write!(f, "unreachable")?,
                    }
                    if inst.loc.line > 0 {
                        write!(f, "    ; line {}", inst.loc.line)?;
                    }
                    writeln!(f, "    ; {i}")?;
                }
            }
            writeln!(f, "}}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Program;

    #[test]
    fn builds_verifies_and_dumps_a_diamond() {
        let mut p = Program::new();
        let g = p.add_global("level").unwrap();
        let addr = p.globals[g].address;
        let f = p.add_function("main", 0).unwrap();
        let mut b = p.build(f);
        b.in_file("main.c").at_line(3);
        let entry = b.new_block();
        let then = b.new_block();
        let join = b.new_block();
        b.switch_to(entry);
        let x = b.load(addr);
        let zero = b.const_int(0);
        let c = b.compare(x, zero);
        b.branch(c, then, join);
        b.switch_to(then).at_line(4);
        b.call_named("puts", &[zero]);
        b.jump(join);
        b.switch_to(join).at_line(5);
        b.ret(None);
        p.verify().unwrap();
        let cfg = p.cfg(f);
        assert_eq!(cfg.succs[0], vec![1, 2]);
        assert_eq!(cfg.preds[2], vec![0, 1]);
        assert_eq!(cfg.exits(), vec![2]);
        assert_eq!(p.func(f).lines, Some((3, 5)));
        let text = p.to_string();
        assert!(text.contains("load @level"), "{text}");
        assert!(text.contains("declare @puts"), "{text}");
        assert!(text.contains("br v"), "{text}");
    }

    #[test]
    fn verify_rejects_a_block_without_terminator() {
        let mut p = Program::new();
        let f = p.add_function("f", 0).unwrap();
        let mut b = p.build(f);
        b.new_block();
        b.alloca(None);
        let err = p.verify().unwrap_err().to_string();
        assert!(err.contains("does not end in a terminator"), "{err}");
    }
}
