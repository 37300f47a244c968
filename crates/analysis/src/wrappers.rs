//! Allocation, deallocation and copy wrappers (`xmalloc`, `lzma_alloc`, `sqlite3Malloc`,
//! `lzma_free`, `lzma_bufcpy`, …), found from the code so that points-to does not glue a
//! program's heap into one class through them.
//!
//! Unification points-to gives a function one class per parameter and one for its result, so
//! every object allocated through `void *xmalloc(size_t)` would be one object, and every
//! pointer passed to `void my_free(void *)` would be unified with every other. For these two
//! shapes the merge says nothing true about the program: a wrapper's call site returns a fresh
//! object (it is an allocation site of its own), and a pointer that is only freed, compared or
//! handed to a custom deallocation hook does not flow anywhere.
//!
//! A copy wrapper (`lzma_bufcpy(in, &in_pos, in_size, out, &out_pos, out_size)`: a `memcpy`
//! between what two parameters point to, and no other pointer stored) is the same problem for
//! an inclusion analysis that is not context-sensitive: every caller's source would be copied
//! into every caller's destination. Its call sites are block copies of their own arguments
//! instead, and the copy inside it is left out.

use ir::{Callee, FuncId, InstKind, OpKind, Program, ValueDef, ValueId};

use crate::pointsto::{ALLOCATORS, is_block_copy};

/// External functions that release what their first argument points to.
const DEALLOCATORS: &[&str] = &["free", "cfree"];

/// The wrappers of a program.
#[derive(Clone, Debug, Default)]
pub struct Wrappers {
    /// Per function: it returns fresh memory from an allocator (or another wrapper) or null.
    pub allocates: Vec<bool>,
    /// Per allocating function: the parameter whose object it may return resized instead
    /// (`realloc`'s first; `xrealloc(ptr, size)` passing `ptr` on to `realloc`).
    pub resizes: Vec<Option<u32>>,
    /// Per function and parameter: the parameter is only freed, compared or passed on to
    /// another such parameter (or to a call through a pointer: a deallocation hook).
    pub only_frees: Vec<Vec<bool>>,
    /// Per function: it copies memory from what one parameter points to into what another
    /// points to and stores no pointer, as (destination, source) parameter indices.
    pub copies: Vec<Option<(u32, u32)>>,
}

/// How a call copies memory (see [`Wrappers::copy_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryCopy {
    /// Not a copy.
    None,
    /// A block copy from what `src` points to into what `dst` points to: `memcpy` and friends,
    /// or a call of a copy wrapper (with the wrapper's arguments).
    Block { dst: ValueId, src: ValueId },
    /// The copy inside a copy wrapper, which its call sites stand for.
    InWrapper,
}

impl Wrappers {
    pub fn find(program: &Program) -> Wrappers {
        let n = program.functions.len();
        let names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
        let mut allocates: Vec<bool> = names
            .iter()
            .enumerate()
            .map(|(k, name)| program.functions[k].is_declaration && ALLOCATORS.contains(name))
            .collect();
        let mut resizes: Vec<Option<u32>> = names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                (program.functions[k].is_declaration && *name == "realloc").then_some(0)
            })
            .collect();
        let mut only_frees: Vec<Vec<bool>> = program
            .functions
            .iter()
            .enumerate()
            .map(|(k, f)| {
                vec![f.is_declaration && DEALLOCATORS.contains(&names[k]); f.params.len()]
            })
            .collect();
        // Every use of each parameter value, as (instruction, operand position).
        let mut uses: Vec<Vec<(ir::InstId, usize)>> = vec![Vec::new(); program.values.len()];
        for (k, inst) in program.insts.iter().enumerate() {
            let mut pos = 0;
            inst.kind.for_each_use(|v| {
                if matches!(program.value(v), ValueDef::Param { .. } | ValueDef::Inst(_)) {
                    uses[v.index()].push((ir::InstId(k as u32), pos));
                }
                pos += 1;
            });
        }
        // Both properties are greatest fixpoints over the call graph's direct edges: start
        // optimistic for defined functions, drop until stable.
        for (k, f) in program.functions.iter().enumerate() {
            if !f.is_declaration {
                allocates[k] = returns_pointer(program, FuncId(k as u32));
                only_frees[k].iter_mut().for_each(|b| *b = true);
            }
        }
        loop {
            let mut changed = false;
            for k in 0..n {
                let f = &program.functions[k];
                if f.is_declaration {
                    continue;
                }
                if allocates[k] {
                    match returns_fresh(program, FuncId(k as u32), &allocates, &resizes, &uses) {
                        Some(resized) => resizes[k] = resized,
                        None => {
                            allocates[k] = false;
                            resizes[k] = None;
                            changed = true;
                        }
                    }
                }
                for (j, &p) in f.params.iter().enumerate() {
                    if only_frees[k][j] && !only_freed(program, p, &uses, &only_frees) {
                        only_frees[k][j] = false;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        // Externals keep their own handling in the points-to phase.
        for (k, f) in program.functions.iter().enumerate() {
            if f.is_declaration {
                allocates[k] = false;
                resizes[k] = None;
            }
        }
        let copies = (0..n)
            .map(|k| copy_shape(program, FuncId(k as u32), &names))
            .collect();
        Wrappers {
            allocates,
            resizes,
            only_frees,
            copies,
        }
    }

    /// How the call `call` (in a function of `program`) copies memory when it calls `g`.
    pub fn copy_at(&self, program: &Program, call: ir::InstId, g: FuncId) -> MemoryCopy {
        let InstKind::Call { args, .. } = &program.inst(call).kind else {
            return MemoryCopy::None;
        };
        let callee = program.func(g);
        if callee.is_declaration {
            if !is_block_copy(&callee.name) || args.len() < 2 {
                return MemoryCopy::None;
            }
            if self.copies(program.func_of(call)).is_some() {
                return MemoryCopy::InWrapper;
            }
            return MemoryCopy::Block {
                dst: args[0],
                src: args[1],
            };
        }
        match self.copies(g) {
            Some((d, s)) if d < args.len() && s < args.len() => MemoryCopy::Block {
                dst: args[d],
                src: args[s],
            },
            _ => MemoryCopy::None,
        }
    }

    /// For a copy wrapper, its (destination, source) parameter indices.
    pub fn copies(&self, f: FuncId) -> Option<(usize, usize)> {
        self.copies
            .get(f.index())
            .copied()
            .flatten()
            .map(|(d, s)| (d as usize, s as usize))
    }

    /// Whether a call to `f` with these argument positions creates a fresh object.
    pub fn allocates(&self, f: FuncId) -> bool {
        self.allocates.get(f.index()).copied().unwrap_or(false)
    }

    /// For an allocation wrapper that may return its argument's object resized, which argument.
    pub fn resizes(&self, f: FuncId) -> Option<usize> {
        self.resizes
            .get(f.index())
            .copied()
            .flatten()
            .map(|k| k as usize)
    }

    /// Whether the `index`th parameter of `f` is only freed.
    pub fn only_frees(&self, f: FuncId, index: usize) -> bool {
        self.only_frees
            .get(f.index())
            .and_then(|p| p.get(index))
            .copied()
            .unwrap_or(false)
    }
}

/// `Some((dst, src))` if `f` block-copies between what two of its parameters point to (at
/// an offset), calls nothing else but intrinsics, stores only scalars and returns no pointer.
fn copy_shape(program: &Program, f: FuncId, names: &[&str]) -> Option<(u32, u32)> {
    let func = program.func(f);
    if func.is_declaration {
        return None;
    }
    let mut shape = None;
    for &b in &func.blocks {
        for &i in &program.block(b).insts {
            match &program.inst(i).kind {
                InstKind::Call {
                    callee: Callee::Direct(g),
                    args,
                } => {
                    let name = names[g.index()];
                    if is_block_copy(name) && program.func(*g).is_declaration && args.len() >= 2 {
                        let dst = parameter_behind(program, f, args[0])?;
                        let src = parameter_behind(program, f, args[1])?;
                        if shape.is_some_and(|s| s != (dst, src)) {
                            return None;
                        }
                        shape = Some((dst, src));
                    } else if !name.starts_with("llvm.") {
                        return None;
                    }
                }
                InstKind::Call { .. } => return None,
                InstKind::Store { value, .. } if !program.is_scalar(*value) => return None,
                InstKind::Return { value: Some(v) } if !program.is_scalar(*v) => return None,
                _ => {}
            }
        }
    }
    shape.filter(|(d, s)| d != s)
}

/// The parameter of `f` a pointer is an offset of (through casts, pointer arithmetic and
/// field addresses).
fn parameter_behind(program: &Program, f: FuncId, mut v: ValueId) -> Option<u32> {
    for _ in 0..16 {
        match program.value(v) {
            ValueDef::Param { func, index } if *func == f => return Some(*index),
            ValueDef::Inst(i) => match &program.inst(*i).kind {
                InstKind::IndexAddr { base, .. } | InstKind::FieldAddr { base, .. } => v = *base,
                InstKind::Op {
                    op: OpKind::Cast,
                    args,
                } if args.len() == 1 => v = args[0],
                _ => return None,
            },
            _ => return None,
        }
    }
    None
}

fn returns_pointer(program: &Program, f: FuncId) -> bool {
    let mut any = false;
    for_each_return(program, f, |_| any = true);
    any
}

fn for_each_return(program: &Program, f: FuncId, mut each: impl FnMut(ValueId)) {
    for &b in &program.func(f).blocks {
        if let Some(t) = program.terminator(b)
            && let InstKind::Return { value: Some(v) } = &program.inst(t).kind
        {
            each(*v);
        }
    }
}

/// Every value `f` returns is fresh memory (through casts, phis and selects) or null, at
/// least one comes from an allocator or wrapper called directly, and the wrapper does nothing
/// with the memory but check it for null and zero it (a constructor that stores into the new
/// object is not a wrapper: its call sites must see those stores). `Some(resized)` if so,
/// with the parameter of `f` passed on as the object to resize (`realloc(ptr, …)`), if any;
/// resizing anything else (a global buffer) is not a wrapper.
fn returns_fresh(
    program: &Program,
    f: FuncId,
    allocates: &[bool],
    resizes: &[Option<u32>],
    uses: &[Vec<(ir::InstId, usize)>],
) -> Option<Option<u32>> {
    let mut ok = true;
    let mut direct = false;
    let mut resized = None;
    for_each_return(program, f, |v| {
        let mut stack = vec![v];
        let mut seen = Vec::new();
        while let Some(v) = stack.pop() {
            if seen.contains(&v) {
                continue;
            }
            seen.push(v);
            if !only_checked_or_zeroed(program, v, uses) {
                ok = false;
            }
            match program.value(v) {
                ValueDef::ConstInt(0) | ValueDef::Undef => {}
                ValueDef::Inst(i) => match &program.inst(*i).kind {
                    InstKind::Call {
                        callee: Callee::Direct(g),
                        args,
                    } if allocates[g.index()] => {
                        direct = true;
                        if let Some(k) = resizes[g.index()] {
                            match args.get(k as usize).map(|&a| program.value(a)) {
                                Some(ValueDef::ConstInt(0) | ValueDef::Undef) => {}
                                Some(ValueDef::Param { func, index }) if *func == f => {
                                    if resized.is_some_and(|r| r != *index) {
                                        ok = false;
                                    }
                                    resized = Some(*index);
                                }
                                _ => ok = false,
                            }
                        }
                    }
                    // A custom allocation hook (`allocator->alloc(…)`), beside a direct call.
                    InstKind::Call {
                        callee: Callee::Indirect(_),
                        ..
                    } => {}
                    InstKind::Op {
                        op: OpKind::Cast,
                        args,
                    } if args.len() == 1 => stack.push(args[0]),
                    InstKind::Phi { incoming } => stack.extend(incoming.iter().map(|(x, _)| *x)),
                    InstKind::Select {
                        if_true, if_false, ..
                    } => stack.extend([*if_true, *if_false]),
                    _ => ok = false,
                },
                _ => ok = false,
            }
        }
    });
    (ok && direct).then_some(resized)
}

/// Every use of `v` is a comparison, a step towards the return (cast, phi, select, return)
/// or zeroing the memory (`memset`).
fn only_checked_or_zeroed(
    program: &Program,
    v: ValueId,
    uses: &[Vec<(ir::InstId, usize)>],
) -> bool {
    uses[v.index()]
        .iter()
        .all(|&(i, pos)| match &program.inst(i).kind {
            InstKind::Op {
                op: OpKind::Compare | OpKind::Cast,
                ..
            }
            | InstKind::Phi { .. }
            | InstKind::Select { .. }
            | InstKind::Return { .. } => true,
            InstKind::Call {
                callee: Callee::Direct(g),
                ..
            } => {
                let name = program.func(*g).name.as_str();
                pos == 0 && (name == "memset" || name.starts_with("llvm.memset"))
            }
            _ => false,
        })
}

/// The parameter (or a cast of it) is only compared, passed to a deallocator or an
/// only-freeing parameter, or to a call through a pointer (a deallocation hook), and at least
/// once to a deallocator.
fn only_freed(
    program: &Program,
    p: ValueId,
    uses: &[Vec<(ir::InstId, usize)>],
    only_frees: &[Vec<bool>],
) -> bool {
    let mut stack = vec![p];
    let mut seen = Vec::new();
    let mut freed = false;
    while let Some(v) = stack.pop() {
        if seen.contains(&v) {
            continue;
        }
        seen.push(v);
        for &(i, pos) in &uses[v.index()] {
            let inst = program.inst(i);
            match &inst.kind {
                InstKind::Op {
                    op: OpKind::Compare,
                    ..
                } => {}
                InstKind::Op {
                    op: OpKind::Cast, ..
                } => stack.extend(inst.result),
                InstKind::Call {
                    callee: Callee::Direct(g),
                    ..
                } => {
                    if !only_frees[g.index()].get(pos).copied().unwrap_or(false) {
                        return false;
                    }
                    freed = true;
                }
                // Argument of a call through a pointer (`allocator->free(opaque, ptr)`): the
                // function pointer itself is operand 0 there only if it is the pointer.
                InstKind::Call {
                    callee: Callee::Indirect(fp),
                    ..
                } if *fp != v => {}
                _ => return false,
            }
        }
    }
    freed
}
