//! The constraints a program gives the solver: its roots (globals, stack slots, allocation
//! sites, functions, the outside), and per instruction the copies, loads, stores, field
//! addresses and calls, direct and indirect.

use super::*;

impl<'p> Solver<'p> {
    pub(super) fn new_root(&mut self, root: Root) -> CellId {
        let root = match root {
            Root::Stack(_)
            | Root::Heap(_)
            | Root::Returned(_)
            | Root::Outside(..)
            | Root::Merged
                if self.merge =>
            {
                if let Some(c) = self.merged_root {
                    return c;
                }
                Root::Merged
            }
            other => other,
        };
        let r = self.roots.len() as u32;
        self.roots.push(root);
        self.root_cells.push(Vec::new());
        self.root_refs.push(Vec::new());
        self.copied_to.push(Vec::new());
        let types = match root {
            Root::Global(g) => self.program.globals[g].structure.into_iter().collect(),
            Root::Stack(i) => match self.program.inst(i).kind {
                InstKind::Alloca { structure } => structure.into_iter().collect(),
                _ => Vec::new(),
            },
            Root::Heap(call) => self.allocated_types(call),
            _ => Vec::new(),
        };
        let c = self.new_cell(r, None);
        for &t in &types {
            self.accessed_as.insert((c, t));
        }
        self.root_types.push(types);
        self.strings_only.push(false);
        if root == Root::Merged {
            self.merged_root = Some(c);
        }
        c
    }

    /// The struct types a heap object allocated at `call` is used as in the allocating
    /// function: the field accesses on the call's result (through casts, phis and selects),
    /// provided the call asks for exactly the size of one of them (`malloc (sizeof *p)`):
    /// a larger object may hold data after a header that is viewed as another type,
    /// `(T *)(hdr + 1)`, and arrays are collapsed into one cell. Empty — not known —
    /// otherwise.
    pub(super) fn allocated_types(&self, call: InstId) -> Vec<StructId> {
        let program = self.program;
        let Some(result) = program.inst(call).result else {
            return Vec::new();
        };
        let func = program.func(program.block(program.inst(call).block).func);
        let mut values: FxSet<ValueId> = FxSet::default();
        values.insert(result);
        let mut types = Vec::new();
        // SSA values defined before use except through phis: two passes reach a fixpoint
        // unless phis chain through loops, which a few more passes cover.
        for _ in 0..4 {
            let before = values.len();
            for &b in &func.blocks {
                for &i in &program.block(b).insts {
                    let inst = program.inst(i);
                    let derived = match &inst.kind {
                        InstKind::Op { op, args } if *op == ir::OpKind::Cast => {
                            args.iter().any(|a| values.contains(a))
                        }
                        InstKind::Phi { incoming } => {
                            incoming.iter().any(|(v, _)| values.contains(v))
                        }
                        InstKind::Select {
                            if_true, if_false, ..
                        } => values.contains(if_true) || values.contains(if_false),
                        InstKind::IndexAddr { base, .. } if values.contains(base) => {
                            return Vec::new();
                        }
                        InstKind::FieldAddr {
                            base, structure, ..
                        } => {
                            if values.contains(base) && !types.contains(structure) {
                                types.push(*structure);
                            }
                            false
                        }
                        _ => false,
                    };
                    if derived && let Some(r) = inst.result {
                        values.insert(r);
                    }
                }
            }
            if values.len() == before {
                break;
            }
        }
        // Exactly one object of a found type: some constant argument is its size (`calloc
        // (1, size)` too).
        let InstKind::Call { args, .. } = &program.inst(call).kind else {
            return Vec::new();
        };
        let sizes: Vec<u64> = args
            .iter()
            .filter_map(|&a| match program.value(a) {
                ValueDef::ConstInt(v) => u64::try_from(*v).ok(),
                _ => None,
            })
            .collect();
        let exact = types.iter().any(|t| {
            program.structs[*t]
                .size
                .is_some_and(|size| sizes.contains(&size))
        });
        if exact { types } else { Vec::new() }
    }

    pub(super) fn is_constant(&self, v: ValueId) -> bool {
        matches!(
            self.program.value(v),
            ValueDef::ConstInt(_)
                | ValueDef::ConstFloat(_)
                | ValueDef::ConstStr(_)
                | ValueDef::Undef
        )
    }

    /// `to ⊇ from` for values (constants point nowhere). An integer (a scalar by type) holds
    /// no address of its own; when one is turned into a pointer (`inttoptr` of pointer
    /// arithmetic), the pointers it was computed from flow in.
    pub(super) fn copy_value(&mut self, from: ValueId, to: u32) {
        if self.is_constant(from) {
            return;
        }
        if !self.program.is_scalar(from) {
            self.add_edge(from.as_u32(), to);
            return;
        }
        let mut leaves = Vec::new();
        self.pointers_behind(from, 8, &mut leaves);
        for p in leaves {
            self.add_edge(p.as_u32(), to);
        }
    }

    /// The pointer-typed values an integer was computed from (`ptrtoint` operands), looking
    /// through at most `depth` arithmetic operations.
    pub(super) fn pointers_behind(&self, v: ValueId, depth: u32, out: &mut Vec<ValueId>) {
        let program = self.program;
        if self.is_constant(v) || out.contains(&v) {
            return;
        }
        if !program.is_scalar(v) {
            out.push(v);
            return;
        }
        if depth == 0 {
            return;
        }
        if let ValueDef::Inst(i) = program.value(v)
            && let InstKind::Op { op, args } = &program.inst(*i).kind
            && *op != ir::OpKind::Compare
        {
            for &a in args {
                self.pointers_behind(a, depth - 1, out);
            }
        }
    }

    pub(super) fn call_root(&mut self, call: InstId, kind: Root) -> CellId {
        if let Some(&c) = self.root_of_call.get(&call) {
            return c;
        }
        let c = self.new_root(kind);
        self.root_of_call.insert(call, c);
        c
    }

    pub(super) fn generate(&mut self) {
        let program = self.program;
        for (k, g) in program.globals.iter_enumerated() {
            let c = self.new_root(Root::Global(k));
            self.root_of_value.insert(g.address, c);
        }
        for (k, f) in program.functions.iter_enumerated() {
            let c = self.new_root(Root::Function(k));
            self.root_of_value.insert(f.address, c);
        }
        // A global's initializer puts each address in the cell of the field it is stored in.
        for g in &program.globals {
            let c = self.root_of_value[&g.address];
            for r in &g.initializer_refs {
                let Some(&target) = self.root_of_value.get(&r.address) else {
                    continue;
                };
                let cell = match r.field {
                    None => c,
                    Some((structure, field)) => self.field_cell(c, structure, field),
                };
                let content = self.content(cell);
                self.add_pts(content, &[target]);
            }
        }
        // Addresses of globals and functions used as operands.
        for v in program.values.keys() {
            if let Some(&c) = self.root_of_value.get(&v) {
                self.add_pts(v.as_u32(), &[c]);
            }
        }
        for (fi, func) in program.functions.iter_enumerated() {
            for &b in &func.blocks {
                for &i in &program.block(b).insts {
                    let inst = program.inst(i);
                    // Integers and floats hold no address.
                    let res = inst.result.filter(|&r| !program.is_scalar(r));
                    match &inst.kind {
                        InstKind::Op { op, args } => {
                            if *op != ir::OpKind::Compare
                                && let Some(r) = res
                            {
                                for &a in args {
                                    self.copy_value(a, r.as_u32());
                                }
                            }
                        }
                        InstKind::Phi { incoming } => {
                            if let Some(r) = res {
                                for &(v, _) in incoming {
                                    self.copy_value(v, r.as_u32());
                                }
                            }
                        }
                        InstKind::Select {
                            if_true, if_false, ..
                        } => {
                            if let Some(r) = res {
                                self.copy_value(*if_true, r.as_u32());
                                self.copy_value(*if_false, r.as_u32());
                            }
                        }
                        InstKind::Alloca { .. } => {
                            if let Some(r) = res {
                                let c = self.new_root(Root::Stack(i));
                                self.add_pts(r.as_u32(), &[c]);
                            }
                        }
                        InstKind::Load { ptr } => {
                            if let Some(r) = res
                                && !self.is_constant(*ptr)
                            {
                                self.loads[*ptr].push(r.as_u32());
                            }
                        }
                        InstKind::Store { value, ptr }
                            if !self.is_constant(*value)
                                && !self.is_constant(*ptr)
                                && !program.is_scalar(*value) =>
                        {
                            self.stores[*ptr].push(value.as_u32());
                        }
                        InstKind::FieldAddr {
                            base,
                            structure,
                            field,
                        } => {
                            if let Some(r) = res
                                && !self.is_constant(*base)
                            {
                                self.fields[*base].push((r.as_u32(), *structure, *field));
                            }
                        }
                        InstKind::IndexAddr { base, .. } => {
                            if let Some(r) = res {
                                self.copy_value(*base, r.as_u32());
                            }
                        }
                        InstKind::Call { callee, .. } => match callee {
                            Callee::Direct(g) => self.connect(i, *g),
                            Callee::Indirect(fp) => {
                                if !self.is_constant(*fp) {
                                    self.indirect[*fp].push(i);
                                }
                            }
                        },
                        InstKind::Return { value: Some(v) } if !program.is_scalar(*v) => {
                            let r = self.ret(fi);
                            self.copy_value(*v, r);
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Connects call `call` to function `g`: arguments to parameters, the return value to the
    /// result; what external functions do to pointers.
    pub(super) fn connect(&mut self, call: InstId, g: FuncId) {
        let list = self.connected.entry(call).or_default();
        if list.contains(&g) {
            return;
        }
        list.push(g);
        self.called[g] = true;
        let program = self.program;
        let InstKind::Call { args, .. } = &program.inst(call).kind else {
            return;
        };
        let result = program.inst(call).result.filter(|&r| !program.is_scalar(r));
        let callee = program.func(g);
        let copy = self.wrappers.copy_at(program, call, g);
        if let MemoryCopy::Block { dst, src } = copy {
            self.block_copy(dst, src);
        }
        if callee.is_declaration {
            let name = self.names[g];
            let Some(r) = result else {
                return;
            };
            if ALLOCATORS.contains(&name) {
                let c = self.call_root(call, Root::Heap(call));
                self.add_pts(r.as_u32(), &[c]);
            } else if !returns_first_argument(name) {
                let c = self.call_root(call, Root::Returned(call));
                self.add_pts(r.as_u32(), &[c]);
            }
            if returns_first_argument(name)
                && let Some(&a) = args.first()
            {
                self.copy_value(a, r.as_u32());
            }
            return;
        }
        // Pointers a wrapper only frees flow nowhere; a wrapper's call site is an allocation
        // site of its own (`crate::wrappers`).
        for (k, (&p, &a)) in callee.params.iter().zip(args).enumerate() {
            if !self.wrappers.only_frees(g, k) && !program.is_scalar(p) {
                self.copy_value(a, p.as_u32());
            }
        }
        if let Some(r) = result {
            if self.wrappers.allocates(g) {
                let c = self.call_root(call, Root::Heap(call));
                self.add_pts(r.as_u32(), &[c]);
                if let Some(&a) = self.wrappers.resizes(g).and_then(|k| args.get(k)) {
                    self.copy_value(a, r.as_u32());
                }
                // A duplicating allocator's copy is `copy` (`Wrappers::copy_at`), made above.
            } else if let Some(&a) = self.wrappers.returns_argument(g).and_then(|k| args.get(k)) {
                // Into this call's own argument, not every caller's.
                self.copy_value(a, r.as_u32());
            } else {
                let from = self.ret(g);
                self.add_edge(from, r.as_u32());
            }
        }
    }
}
