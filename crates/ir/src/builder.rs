//! Building function bodies concisely: the API tests use to write programs by hand and the
//! frontend uses to translate bitcode.

use crate::{
    BlockId, Callee, DebugLoc, FileId, FuncId, Inst, InstId, InstKind, IntOp, IntOpKind, OpKind,
    Program, StructId, ValueDef, ValueId,
};

/// Appends blocks and instructions to one function. Instructions go to the current block
/// ([`Self::switch_to`]) with the current debug location ([`Self::at_line`]).
pub struct FunctionBuilder<'p> {
    program: &'p mut Program,
    func: FuncId,
    current: Option<BlockId>,
    loc: DebugLoc,
}

impl<'p> FunctionBuilder<'p> {
    pub(crate) fn new(program: &'p mut Program, func: FuncId) -> Self {
        let file = program.func(func).file;
        let current = program.func(func).blocks.last().copied();
        FunctionBuilder {
            program,
            func,
            current,
            loc: DebugLoc {
                file,
                line: 0,
                column: 0,
            },
        }
    }

    pub fn program(&mut self) -> &mut Program {
        self.program
    }

    pub fn func(&self) -> FuncId {
        self.func
    }

    /// The function's `index`th parameter.
    pub fn param(&self, index: usize) -> ValueId {
        self.program.func(self.func).params[index]
    }

    /// Sets the source file of the function and of the following instructions.
    pub fn in_file(&mut self, name: &str) -> &mut Self {
        let file = self.program.add_file(name);
        self.program.functions[self.func].file = Some(file);
        self.loc.file = Some(file);
        self
    }

    pub fn file(&self) -> Option<FileId> {
        self.loc.file
    }

    /// Sets the line (column 0) of the following instructions and widens the function's line
    /// range to include it.
    pub fn at_line(&mut self, line: u32) -> &mut Self {
        self.at(line, 0)
    }

    pub fn at(&mut self, line: u32, column: u32) -> &mut Self {
        self.loc.line = line;
        self.loc.column = column;
        if line > 0 {
            let f = &mut self.program.functions[self.func];
            f.lines = Some(match f.lines {
                None => (line, line),
                Some((a, b)) => (a.min(line), b.max(line)),
            });
        }
        self
    }

    /// A new empty block (the first one becomes the entry and makes the function defined).
    /// The first block created becomes current.
    pub fn new_block(&mut self) -> BlockId {
        let id = self.program.blocks.next_id();
        let f = &mut self.program.functions[self.func];
        f.is_declaration = false;
        let local = f.blocks.len() as u32;
        f.blocks.push(id);
        self.program.blocks.push(crate::Block {
            func: self.func,
            local,
            insts: Vec::new(),
        });
        if self.current.is_none() {
            self.current = Some(id);
        }
        id
    }

    pub fn switch_to(&mut self, block: BlockId) -> &mut Self {
        self.current = Some(block);
        self
    }

    pub fn current(&self) -> Option<BlockId> {
        self.current
    }

    /// Appends an instruction; `defines` says whether it gets a result value.
    pub fn push(&mut self, kind: InstKind, defines: bool) -> (InstId, Option<ValueId>) {
        let block = match self.current {
            Some(b) => b,
            None => self.new_block(),
        };
        let id = self.program.insts.next_id();
        let result = defines.then(|| self.program.add_value(ValueDef::Inst(id)));
        self.program.insts.push(Inst {
            kind,
            result,
            block,
            loc: self.loc,
        });
        self.program.blocks[block].insts.push(id);
        (id, result)
    }

    fn value(&mut self, kind: InstKind) -> ValueId {
        self.push(kind, true).1.expect("defines a value")
    }

    pub fn op(&mut self, op: OpKind, args: &[ValueId]) -> ValueId {
        self.value(InstKind::Op {
            op,
            args: args.to_vec(),
        })
    }

    pub fn binary(&mut self, a: ValueId, b: ValueId) -> ValueId {
        self.op(OpKind::Binary, &[a, b])
    }

    pub fn compare(&mut self, a: ValueId, b: ValueId) -> ValueId {
        self.op(OpKind::Compare, &[a, b])
    }

    pub fn cast(&mut self, a: ValueId) -> ValueId {
        self.op(OpKind::Cast, &[a])
    }

    /// An operation whose integer semantics are known (`Program::int_ops`): a comparison,
    /// a cast or a binary operation on `bits`-wide integers.
    pub fn int_op(&mut self, kind: IntOpKind, bits: u32, args: &[ValueId]) -> ValueId {
        let op = match kind {
            IntOpKind::Compare(_) => OpKind::Compare,
            IntOpKind::ZExt { .. } | IntOpKind::SExt { .. } | IntOpKind::Trunc { .. } => {
                OpKind::Cast
            }
            IntOpKind::Load => panic!("loads are built with `load_int`"),
            _ => OpKind::Binary,
        };
        let v = self.op(op, args);
        self.know(v, IntOp { kind, bits });
        v
    }

    /// A load of a `bits`-wide integer.
    pub fn load_int(&mut self, ptr: ValueId, bits: u32) -> ValueId {
        let v = self.load(ptr);
        self.know(
            v,
            IntOp {
                kind: IntOpKind::Load,
                bits,
            },
        );
        v
    }

    fn know(&mut self, v: ValueId, op: IntOp) {
        if let ValueDef::Inst(i) = self.program.values[v] {
            self.program.int_ops.insert(i, op);
        }
    }

    pub fn const_int(&mut self, v: i64) -> ValueId {
        self.program.const_int(v)
    }

    pub fn const_str(&mut self, s: &str) -> ValueId {
        self.program.const_str(s)
    }

    /// A phi; more incoming pairs can be added later with [`Self::add_incoming`] (loops).
    pub fn phi(&mut self, incoming: &[(ValueId, BlockId)]) -> ValueId {
        self.value(InstKind::Phi {
            incoming: incoming.to_vec(),
        })
    }

    /// Adds an incoming pair to the phi defining `phi`.
    pub fn add_incoming(&mut self, phi: ValueId, value: ValueId, from: BlockId) {
        if let ValueDef::Inst(i) = *self.program.value(phi)
            && let InstKind::Phi { incoming } = &mut self.program.insts[i].kind
        {
            incoming.push((value, from));
        }
    }

    pub fn select(&mut self, cond: ValueId, if_true: ValueId, if_false: ValueId) -> ValueId {
        self.value(InstKind::Select {
            cond,
            if_true,
            if_false,
        })
    }

    pub fn alloca(&mut self, structure: Option<StructId>) -> ValueId {
        self.value(InstKind::Alloca { structure })
    }

    pub fn load(&mut self, ptr: ValueId) -> ValueId {
        self.value(InstKind::Load { ptr })
    }

    pub fn store(&mut self, value: ValueId, ptr: ValueId) -> InstId {
        self.push(InstKind::Store { value, ptr }, false).0
    }

    pub fn field_addr(&mut self, base: ValueId, structure: StructId, field: u32) -> ValueId {
        self.value(InstKind::FieldAddr {
            base,
            structure,
            field,
        })
    }

    pub fn index_addr(&mut self, base: ValueId, index: ValueId) -> ValueId {
        self.value(InstKind::IndexAddr { base, index })
    }

    /// A direct call; the result value exists even for `void` callees (then unused).
    pub fn call(&mut self, callee: FuncId, args: &[ValueId]) -> ValueId {
        self.value(InstKind::Call {
            callee: Callee::Direct(callee),
            args: args.to_vec(),
        })
    }

    /// A call through a function pointer.
    pub fn call_indirect(&mut self, callee: ValueId, args: &[ValueId]) -> ValueId {
        self.value(InstKind::Call {
            callee: Callee::Indirect(callee),
            args: args.to_vec(),
        })
    }

    /// A direct call to the external function `name`, declared on first use.
    pub fn call_named(&mut self, name: &str, args: &[ValueId]) -> ValueId {
        let f = self.program.function_named_or_declare(name, args.len());
        self.call(f, args)
    }

    pub fn ret(&mut self, value: Option<ValueId>) -> InstId {
        self.push(InstKind::Return { value }, false).0
    }

    pub fn jump(&mut self, target: BlockId) -> InstId {
        self.push(InstKind::Jump { target }, false).0
    }

    pub fn branch(&mut self, cond: ValueId, if_true: BlockId, if_false: BlockId) -> InstId {
        self.push(
            InstKind::Branch {
                cond,
                if_true,
                if_false,
            },
            false,
        )
        .0
    }

    pub fn switch(&mut self, value: ValueId, default: BlockId, cases: &[(i64, BlockId)]) -> InstId {
        self.push(
            InstKind::Switch {
                value,
                default,
                cases: cases.to_vec(),
            },
            false,
        )
        .0
    }

    pub fn unreachable(&mut self) -> InstId {
        self.push(InstKind::Unreachable, false).0
    }
}
