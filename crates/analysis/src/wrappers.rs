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
//! A function that returns a pointer into one of its arguments (`gzip_base_name(name)`,
//! `last_component`, like `strchr`) would otherwise hand every caller's argument to every
//! caller: its call sites' results point where their own argument does.
//!
//! A copy wrapper (`lzma_bufcpy(in, &in_pos, in_size, out, &out_pos, out_size)`, or the
//! inline `strcpy` of `_FORTIFY_SOURCE` around `__strcpy_chk`: a `memcpy` or string copy
//! between what two parameters point to, and no other pointer stored) is the same problem for
//! an inclusion analysis that is not context-sensitive: every caller's source would be copied
//! into every caller's destination. Its call sites are block copies of their own arguments
//! instead, and the copy inside it is left out.

use ir::{Callee, FuncId, IdVec, InstKind, OpKind, Program, ValueDef, ValueId};

use crate::pointsto::{ALLOCATORS, is_block_copy, libc_name, returns_first_argument};

/// Every use of each value, as (instruction, operand position).
type Uses = IdVec<ValueId, Vec<(ir::InstId, usize)>>;

/// External functions that release what their first argument points to.
const DEALLOCATORS: &[&str] = &["free", "cfree"];

/// The wrappers of a program.
#[derive(Clone, Debug, Default)]
pub struct Wrappers {
    /// Per function: it returns fresh memory from an allocator (or another wrapper) or null.
    pub allocates: IdVec<FuncId, bool>,
    /// Per allocating function: the parameter whose object it may return resized instead
    /// (`realloc`'s first; `xrealloc(ptr, size)` passing `ptr` on to `realloc`).
    pub resizes: IdVec<FuncId, Option<u32>>,
    /// Per allocating function: the parameter whose object it copies into the fresh one
    /// (`xmemdup(p, n)` returning `memcpy (xmalloc (n), p, n)`, `xstrdup`).
    pub duplicates: IdVec<FuncId, Option<u32>>,
    /// Per function and parameter: the parameter is only freed, compared or passed on to
    /// another such parameter (or to a call through a pointer: a deallocation hook).
    pub only_frees: IdVec<FuncId, Vec<bool>>,
    /// Per function: it copies memory from what one parameter points to into what another
    /// points to and stores no pointer, as (destination, source) parameter indices.
    pub copies: IdVec<FuncId, Option<(u32, u32)>>,
    /// Per function: every pointer it returns is null or points into what this parameter
    /// points to.
    pub returns_argument: IdVec<FuncId, Option<u32>>,
}

/// How a call copies memory (see [`Wrappers::copy_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryCopy {
    /// Not a copy.
    None,
    /// A block copy from what `src` points to into what `dst` points to: `memcpy` and friends,
    /// a call of a copy wrapper (with the wrapper's arguments), or of a duplicating allocator
    /// (into its result).
    Block { dst: ValueId, src: ValueId },
    /// The copy inside a copy wrapper, which its call sites stand for.
    InWrapper,
}

impl Wrappers {
    pub fn find(program: &Program) -> Wrappers {
        let names: IdVec<FuncId, &str> =
            program.functions.iter().map(|f| f.name.as_str()).collect();
        let mut allocates: IdVec<FuncId, bool> = names
            .iter_enumerated()
            .map(|(k, name)| program.functions[k].is_declaration && ALLOCATORS.contains(name))
            .collect();
        let mut resizes: IdVec<FuncId, Option<u32>> = names
            .iter_enumerated()
            .map(|(k, name)| {
                (program.functions[k].is_declaration && *name == "realloc").then_some(0)
            })
            .collect();
        // `strdup`'s fresh object holds a copy of its argument's.
        let mut duplicates: IdVec<FuncId, Option<u32>> = program
            .functions
            .iter()
            .map(|f| {
                (f.is_declaration && matches!(libc_name(&f.name), "strdup" | "strndup"))
                    .then_some(0)
            })
            .collect();
        let mut only_frees: IdVec<FuncId, Vec<bool>> = program
            .functions
            .iter_enumerated()
            .map(|(k, f)| {
                vec![f.is_declaration && DEALLOCATORS.contains(&names[k]); f.params.len()]
            })
            .collect();
        // Every use of each parameter value, as (instruction, operand position).
        let mut uses: Uses = IdVec::with_default(program.values.len());
        for (k, inst) in program.insts.iter_enumerated() {
            let mut pos = 0;
            inst.kind.for_each_use(|v| {
                if matches!(program.value(v), ValueDef::Param { .. } | ValueDef::Inst(_)) {
                    uses[v].push((k, pos));
                }
                pos += 1;
            });
        }
        let copies: IdVec<FuncId, Option<(u32, u32)>> = program
            .functions
            .keys()
            .map(|k| copy_shape(program, k, &names))
            .collect();
        // A least fixpoint: a function returning what such a function returns of its own
        // parameter is one too.
        let mut returns_argument = IdVec::from_elem(None, program.functions.len());
        loop {
            let mut changed = false;
            for f in program.functions.keys() {
                if returns_argument[f].is_none() && !program.func(f).is_declaration {
                    returns_argument[f] = returned_parameter(program, f, &returns_argument);
                    changed |= returns_argument[f].is_some();
                }
            }
            if !changed {
                break;
            }
        }
        // Both properties are greatest fixpoints over the call graph's direct edges: start
        // optimistic for defined functions, drop until stable.
        for (k, f) in program.functions.iter_enumerated() {
            if !f.is_declaration {
                allocates[k] = returns_pointer(program, k);
                only_frees[k].iter_mut().for_each(|b| *b = true);
            }
        }
        loop {
            let mut changed = false;
            for (k, f) in program.functions.iter_enumerated() {
                if f.is_declaration {
                    continue;
                }
                if allocates[k] {
                    let known = Known {
                        allocates: &allocates,
                        resizes: &resizes,
                        duplicates: &duplicates,
                        returns_argument: &returns_argument,
                        copies: &copies,
                    };
                    match returns_fresh(program, k, &known, &uses) {
                        Some(fresh) => {
                            resizes[k] = fresh.resized;
                            duplicates[k] = fresh.duplicated;
                        }
                        None => {
                            allocates[k] = false;
                            resizes[k] = None;
                            duplicates[k] = None;
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
        // Externals keep their own handling in the points-to phase (`strdup` keeps its copy).
        for (k, f) in program.functions.iter_enumerated() {
            if f.is_declaration {
                allocates[k] = false;
                resizes[k] = None;
            }
        }
        Wrappers {
            allocates,
            resizes,
            duplicates,
            only_frees,
            copies,
            returns_argument,
        }
    }

    /// For a function returning a pointer into an argument, which argument.
    pub fn returns_argument(&self, f: FuncId) -> Option<usize> {
        self.returns_argument
            .get(f)
            .copied()
            .flatten()
            .map(|k| k as usize)
    }

    /// How the call `call` (in a function of `program`) copies memory when it calls `g`.
    pub fn copy_at(&self, program: &Program, call: ir::InstId, g: FuncId) -> MemoryCopy {
        let InstKind::Call { args, .. } = &program.inst(call).kind else {
            return MemoryCopy::None;
        };
        let callee = program.func(g);
        if let (Some(k), Some(r)) = (self.duplicates(g), program.inst(call).result)
            && k < args.len()
        {
            return MemoryCopy::Block {
                dst: r,
                src: args[k],
            };
        }
        if callee.is_declaration {
            let copies = is_block_copy(&callee.name) || is_string_copy(&callee.name);
            if !copies || args.len() < 2 {
                return MemoryCopy::None;
            }
            if self.copies(program.func_of(call)).is_some() {
                return MemoryCopy::InWrapper;
            }
            // A string copy moves no pointers: it is a copier (`taint::is_copier`).
            if !is_block_copy(&callee.name) {
                return MemoryCopy::None;
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
            .get(f)
            .copied()
            .flatten()
            .map(|(d, s)| (d as usize, s as usize))
    }

    /// Whether a call to `f` with these argument positions creates a fresh object.
    pub fn allocates(&self, f: FuncId) -> bool {
        self.allocates.get(f).copied().unwrap_or(false)
    }

    /// For an allocation wrapper that may return its argument's object resized, which argument.
    pub fn resizes(&self, f: FuncId) -> Option<usize> {
        self.resizes.get(f).copied().flatten().map(|k| k as usize)
    }

    /// For an allocating function that copies an argument's object into the fresh one,
    /// which argument.
    pub fn duplicates(&self, f: FuncId) -> Option<usize> {
        self.duplicates
            .get(f)
            .copied()
            .flatten()
            .map(|k| k as usize)
    }

    /// Whether the `index`th parameter of `f` is only freed.
    pub fn only_frees(&self, f: FuncId, index: usize) -> bool {
        self.only_frees
            .get(f)
            .and_then(|p| p.get(index))
            .copied()
            .unwrap_or(false)
    }
}

/// `Some((dst, src))` if `f` block-copies between what two of its parameters point to (at
/// an offset), calls nothing else but intrinsics, stores only scalars and returns no pointer.
fn copy_shape(program: &Program, f: FuncId, names: &IdVec<FuncId, &str>) -> Option<(u32, u32)> {
    let func = program.func(f);
    if func.is_declaration {
        return None;
    }
    let mut shape = None;
    let mut returned = Vec::new();
    for &b in &func.blocks {
        for &i in &program.block(b).insts {
            match &program.inst(i).kind {
                InstKind::Call {
                    callee: Callee::Direct(g),
                    args,
                } => {
                    let name = names[*g];
                    if (is_block_copy(name) || is_string_copy(name))
                        && program.func(*g).is_declaration
                        && args.len() >= 2
                    {
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
                // `memcpy` returns its destination; a wrapper may pass that on.
                InstKind::Return { value: Some(v) } if !program.is_scalar(*v) => returned.push(*v),
                _ => {}
            }
        }
    }
    let (dst, src) = shape.filter(|(d, s)| d != s)?;
    let known = IdVec::from_elem(None, program.functions.len());
    if !returned.is_empty() && returned_parameter(program, f, &known) != Some(dst) {
        return None;
    }
    Some((dst, src))
}

/// `Some(k)` if every value `f` returns is null or an offset of parameter `k` — through
/// casts, pointer arithmetic, field addresses, phis, selects and calls of functions known
/// (`known`) to return an offset of an argument given such a value — and it returns at
/// least one pointer.
fn returned_parameter(
    program: &Program,
    f: FuncId,
    known: &IdVec<FuncId, Option<u32>>,
) -> Option<u32> {
    let mut found: Option<u32> = None;
    let mut ok = true;
    for_each_return(program, f, |v| {
        if program.is_scalar(v) {
            ok = false;
            return;
        }
        let mut stack = vec![v];
        let mut seen = Vec::new();
        while let Some(v) = stack.pop() {
            if !ok || seen.contains(&v) {
                continue;
            }
            seen.push(v);
            match program.value(v) {
                ValueDef::ConstInt(0) | ValueDef::Undef => {}
                ValueDef::Param { func, index } if *func == f => {
                    if found.is_some_and(|k| k != *index) {
                        ok = false;
                    }
                    found = Some(*index);
                }
                ValueDef::Inst(i) => match &program.inst(*i).kind {
                    InstKind::IndexAddr { base, .. } | InstKind::FieldAddr { base, .. } => {
                        stack.push(*base)
                    }
                    kind if copied_operands(kind).is_some() => {
                        stack.extend(copied_operands(kind).expect("checked"))
                    }
                    InstKind::Call {
                        callee: Callee::Direct(g),
                        args,
                    } => match known[*g]
                        .or_else(|| {
                            let callee = program.func(*g);
                            (callee.is_declaration && returns_first_argument(&callee.name))
                                .then_some(0)
                        })
                        .and_then(|k| args.get(k as usize))
                    {
                        Some(&a) => stack.push(a),
                        None => ok = false,
                    },
                    _ => ok = false,
                },
                _ => ok = false,
            }
        }
    });
    if ok { found } else { None }
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

/// The values an instruction's result is a plain copy of: a cast's operand, a phi's incoming
/// values, a select's two values; `None` for any other instruction.
fn copied_operands(kind: &InstKind) -> Option<Vec<ValueId>> {
    match kind {
        InstKind::Op {
            op: OpKind::Cast,
            args,
        } if args.len() == 1 => Some(args.clone()),
        InstKind::Phi { incoming } => Some(incoming.iter().map(|(x, _)| *x).collect()),
        InstKind::Select {
            if_true, if_false, ..
        } => Some(vec![*if_true, *if_false]),
        _ => None,
    }
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
fn returns_fresh(program: &Program, f: FuncId, known: &Known, uses: &Uses) -> Option<Fresh> {
    let Known {
        allocates,
        resizes,
        duplicates,
        returns_argument,
        copies,
    } = *known;
    let mut ok = true;
    let mut direct = false;
    let mut resized = None;
    let mut duplicated = None;
    // The object copied into the fresh one must be one parameter's.
    let mut copied_from = |v: ValueId, ok: &mut bool| match parameter_behind(program, f, v) {
        Some(p) if duplicated.is_none_or(|d| d == p) => duplicated = Some(p),
        _ => *ok = false,
    };
    for_each_return(program, f, |v| {
        let mut stack = vec![v];
        let mut seen = Vec::new();
        while let Some(v) = stack.pop() {
            if seen.contains(&v) {
                continue;
            }
            seen.push(v);
            if !only_checked_or_zeroed(program, v, returns_argument, uses) {
                ok = false;
            }
            // Filled by a copy (`memcpy (p, s, n); return p;`): from which parameter.
            for &(i, pos) in &uses[v] {
                let InstKind::Call {
                    callee: Callee::Direct(g),
                    args,
                } = &program.inst(i).kind
                else {
                    continue;
                };
                let callee = program.func(*g);
                let from = if callee.is_declaration && is_filling_copy(&callee.name) && pos == 0 {
                    args.get(1)
                } else {
                    match copies[*g] {
                        Some((d, from)) if d as usize == pos => args.get(from as usize),
                        _ => None,
                    }
                };
                if let Some(&a) = from {
                    copied_from(a, &mut ok);
                }
            }
            match program.value(v) {
                ValueDef::ConstInt(0) | ValueDef::Undef => {}
                ValueDef::Inst(i) => match &program.inst(*i).kind {
                    InstKind::Call {
                        callee: Callee::Direct(g),
                        args,
                    } if allocates[*g] => {
                        direct = true;
                        if let Some(&a) = duplicates[*g].and_then(|k| args.get(k as usize)) {
                            copied_from(a, &mut ok);
                        }
                        if let Some(k) = resizes[*g] {
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
                    // Filled with a copy of a parameter's object (`memcpy (xmalloc (n), p, n)`).
                    InstKind::Call {
                        callee: Callee::Direct(g),
                        args,
                    } if program.func(*g).is_declaration
                        && is_filling_copy(&program.func(*g).name)
                        && args.len() >= 2 =>
                    {
                        stack.push(args[0]);
                        copied_from(args[1], &mut ok);
                    }
                    // Passed through (`nonnull (malloc (n))`).
                    InstKind::Call {
                        callee: Callee::Direct(g),
                        args,
                    } if returns_argument[*g].is_some() => {
                        let k = returns_argument[*g].expect("checked") as usize;
                        match args.get(k) {
                            Some(&a) => stack.push(a),
                            None => ok = false,
                        }
                        // A copy wrapper filling it (`memcpy` behind `_FORTIFY_SOURCE`).
                        if let Some((d, from)) = copies[*g]
                            && d as usize == k
                        {
                            match args.get(from as usize) {
                                Some(&a) => copied_from(a, &mut ok),
                                None => ok = false,
                            }
                        }
                    }
                    kind if copied_operands(kind).is_some() => {
                        stack.extend(copied_operands(kind).expect("checked"))
                    }
                    _ => ok = false,
                },
                _ => ok = false,
            }
        }
    });
    (ok && direct).then_some(Fresh {
        resized,
        duplicated,
    })
}

/// What is known of the program's functions while looking for allocation wrappers.
#[derive(Clone, Copy)]
struct Known<'a> {
    allocates: &'a IdVec<FuncId, bool>,
    resizes: &'a IdVec<FuncId, Option<u32>>,
    duplicates: &'a IdVec<FuncId, Option<u32>>,
    returns_argument: &'a IdVec<FuncId, Option<u32>>,
    copies: &'a IdVec<FuncId, Option<(u32, u32)>>,
}

/// An allocation wrapper's shape ([`Wrappers::resizes`], [`Wrappers::duplicates`]).
struct Fresh {
    resized: Option<u32>,
    duplicated: Option<u32>,
}

/// External functions that copy a string from what the second argument points to into
/// what the first points to (and return the first).
fn is_string_copy(name: &str) -> bool {
    matches!(
        libc_name(name),
        "strcpy" | "strncpy" | "stpcpy" | "stpncpy" | "strcat" | "strncat"
    )
}

/// External functions that fill their first argument with a copy of what the second points
/// to and return the first.
fn is_filling_copy(name: &str) -> bool {
    is_block_copy(name) || matches!(libc_name(name), "strcpy" | "stpcpy")
}

/// Every use of `v` is a comparison, a step towards the return (cast, phi, select, return),
/// zeroing the memory (`memset`) or passing it through a function that returns it and does
/// only these things with it (gnulib's `xmalloc` returns `nonnull (malloc (n))`).
fn only_checked_or_zeroed(
    program: &Program,
    v: ValueId,
    returns_argument: &IdVec<FuncId, Option<u32>>,
    uses: &Uses,
) -> bool {
    only_checked_within(program, v, returns_argument, uses, 4)
}

fn only_checked_within(
    program: &Program,
    v: ValueId,
    returns_argument: &IdVec<FuncId, Option<u32>>,
    uses: &Uses,
    depth: u32,
) -> bool {
    uses[v].iter().all(|&(i, pos)| match &program.inst(i).kind {
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
            let zeroes = pos == 0
                && (libc_name(name) == "memset"
                    || name.starts_with("llvm.memset")
                    || program.func(*g).is_declaration && is_filling_copy(name));
            // Asking its size (`_FORTIFY_SOURCE`) or marking its lifetime.
            let inspects = name.starts_with("llvm.objectsize") || name.starts_with("llvm.lifetime");
            let passes_through = depth > 0
                && returns_argument[*g] == Some(pos as u32)
                && only_checked_within(
                    program,
                    program.func(*g).params[pos],
                    returns_argument,
                    uses,
                    depth - 1,
                );
            zeroes || inspects || passes_through
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
    uses: &Uses,
    only_frees: &IdVec<FuncId, Vec<bool>>,
) -> bool {
    let mut stack = vec![p];
    let mut seen = Vec::new();
    let mut freed = false;
    while let Some(v) = stack.pop() {
        if seen.contains(&v) {
            continue;
        }
        seen.push(v);
        for &(i, pos) in &uses[v] {
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
                    if !only_frees[*g].get(pos).copied().unwrap_or(false) {
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
