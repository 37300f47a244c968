//! Control taint: decisions (conditional branches and switches, and the decisions inside
//! blocks: selects, indirect and library calls) numbered as sites, the
//! frame of a function with decisions (a slot per decision, the union of the open ones), and
//! the static analysis of which decisions may be open at each block.

use std::collections::HashMap;

use ir::FunctionDominance;
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMBasicBlockRef, LLVMTypeRef, LLVMValueRef};

use super::{Label, Pass};
use crate::bitcode;

/// A function with decisions whose frame union (see [`Frame`]) would read more slots than this
/// in total keeps its slots in memory, and recomputes the union with one call: slots in SSA
/// cost code (and registers) per read, and one xz function (lzma_decode: 242 decisions in a
/// loop) needs 38,000 reads, which made clang take minutes.
const MAX_SLOT_READS: usize = 1024;

/// A set of a function's decisions (by their index in the function), as bits.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct DecisionSet(Vec<u64>);

impl DecisionSet {
    pub(super) fn new(n: usize) -> DecisionSet {
        DecisionSet(vec![0; n.div_ceil(64)])
    }
    pub(super) fn insert(&mut self, k: usize) {
        self.0[k / 64] |= 1 << (k % 64);
    }
    pub(super) fn contains(&self, k: usize) -> bool {
        self.0[k / 64] & (1 << (k % 64)) != 0
    }
    pub(super) fn remove(&mut self, k: usize) {
        self.0[k / 64] &= !(1 << (k % 64));
    }
    pub(super) fn union_with(&mut self, other: &DecisionSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
    pub(super) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

/// The control taint of one instrumented function with decisions (a frame): the caller's
/// control taint at entry, per decision of the function a stack slot holding the label of its
/// open entry (0 when not open), and a slot holding the union of the open entries; the
/// optimiser promotes the slots to SSA values.
pub(super) struct Frame {
    /// `__knobs_taint_ctrl` at entry.
    pub(super) base: LLVMValueRef,
    /// Per decision of the function (by index): its slot.
    pub(super) slots: Vec<LLVMValueRef>,
    /// The union of the slots (kept up to date at decisions and pops).
    pub(super) open: LLVMValueRef,
    /// In functions where recomputing the union from the open slots would take more than
    /// [`MAX_SLOT_READS`] reads, the slots are the elements of this array in memory, and the
    /// runtime's `__knobs_taint_union_all` unions them all (closed slots are 0).
    pub(super) array: Option<LLVMValueRef>,
    /// Per block: the decisions that may be open after its pops (their slots may be non-zero).
    pub(super) open_in: Vec<DecisionSet>,
    /// Per block: the decision ending it (its index), if any.
    pub(super) decision: Vec<Option<usize>>,
}

/// The CFG of an LLVM function over block indices: the index of each block, successors and
/// predecessors (each edge once).
pub(super) struct LlvmCfg {
    pub index: HashMap<LLVMBasicBlockRef, u32>,
    pub succs: Vec<Vec<u32>>,
    pub preds: Vec<Vec<u32>>,
}

impl LlvmCfg {
    pub(super) fn new(blocks: &[LLVMBasicBlockRef]) -> LlvmCfg {
        let index: HashMap<LLVMBasicBlockRef, u32> = blocks
            .iter()
            .enumerate()
            .map(|(k, &b)| (b, k as u32))
            .collect();
        let n = blocks.len();
        let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (k, &bb) in blocks.iter().enumerate() {
            // SAFETY: `bb` is a block of the live module (the handle rule); its terminator is
            // null (checked) or a terminator, whose successors are read below their count and
            // are blocks of the same function (so in `index`).
            unsafe {
                let term = c::LLVMGetBasicBlockTerminator(bb);
                if term.is_null() {
                    continue;
                }
                for s in 0..c::LLVMGetNumSuccessors(term) {
                    let t = index[&c::LLVMGetSuccessor(term, s)];
                    if !succs[k].contains(&t) {
                        succs[k].push(t);
                        preds[t as usize].push(k as u32);
                    }
                }
            }
        }
        LlvmCfg {
            index,
            succs,
            preds,
        }
    }
}

/// A function's decisions: per block the decision ending it (its index in the function) and
/// the decisions popped at its start; ids are `first_id + index`. Then the decisions inside
/// blocks (selects, indirect calls, library calls: [`point_decision`]), which open no entry,
/// each with its id.
pub(super) struct Decisions {
    pub first_id: usize,
    pub count: usize,
    pub decision: Vec<Option<usize>>,
    pub pops: Vec<Vec<usize>>,
    pub points: HashMap<LLVMValueRef, u64>,
}

/// What an instruction that is not a terminator decides, if it is a decision (as
/// `ir::InstKind::decision` and the static analysis' library calls say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PointDecision {
    /// A `select`: which value flows on (its condition).
    Select,
    /// A call through a pointer: which function runs (the pointer).
    IndirectCall,
    /// A call into the C library: how much work it does (what it is given).
    LibraryCall,
}

/// Whether instruction `i` is a decision inside its block ([`PointDecision`]).
pub(super) fn point_decision(i: LLVMValueRef) -> Option<PointDecision> {
    // SAFETY: `i` is an instruction of the live module (the handle rule); the called value is
    // asked only of a call, blocks are counted only of a function.
    unsafe {
        match c::LLVMGetInstructionOpcode(i) {
            Op::LLVMSelect => Some(PointDecision::Select),
            Op::LLVMCall => {
                let callee = c::LLVMGetCalledValue(i);
                if !c::LLVMIsAInlineAsm(callee).is_null() {
                    return None;
                }
                if c::LLVMIsAFunction(callee).is_null() {
                    return Some(PointDecision::IndirectCall);
                }
                let name = bitcode::value_name(callee);
                let library = c::LLVMCountBasicBlocks(callee) == 0
                    && !bitcode::is_ignored_intrinsic(&name)
                    && !name.starts_with("__knobs_")
                    && !ir::library::is_negligible_work(&name);
                library.then_some(PointDecision::LibraryCall)
            }
            _ => None,
        }
    }
}

impl Pass {
    /// Numbers the decisions of a function (`name`, with `blocks`) as sites, in block order
    /// after the module's earlier ones; each is popped at the start of its branch's immediate
    /// post-dominator.
    pub(super) fn number_decisions(
        &mut self,
        name: &str,
        blocks: &[LLVMBasicBlockRef],
        dom: &FunctionDominance,
    ) -> Decisions {
        let n = blocks.len();
        let first_id = self.sites.len();
        let mut decision: Vec<Option<usize>> = vec![None; n];
        let mut pops: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (k, &bb) in blocks.iter().enumerate() {
            if !dom.dom.is_reachable(k as u32) {
                continue;
            }
            // SAFETY: `bb` is a block of the live module (the handle rule).
            let term = unsafe { c::LLVMGetBasicBlockTerminator(bb) };
            if term.is_null() || !is_decision(term) {
                continue;
            }
            let d = self.sites.len() - first_id;
            self.sites.push(site_text(name, term));
            decision[k] = Some(d);
            if let Some(p) = dom.ipdom(k as u32) {
                pops[p as usize].push(d);
            }
        }
        let count = self.sites.len() - first_id;
        let mut points = HashMap::new();
        for (k, &bb) in blocks.iter().enumerate() {
            if !dom.dom.is_reachable(k as u32) {
                continue;
            }
            for i in bitcode::instructions(bb) {
                if point_decision(i).is_some() {
                    points.insert(i, self.sites.len() as u64);
                    self.sites.push(site_text(name, i));
                }
            }
        }
        Decisions {
            first_id,
            count,
            decision,
            pops,
            points,
        }
    }

    /// Reports decision `id` with its data and control labels to the runtime (unless the
    /// site's last record has the same pair, or `only_tainted` and the data label is 0), at
    /// the builder's position.
    pub(super) fn record_decision(
        &self,
        id: u64,
        data: LLVMValueRef,
        ctrl: LLVMValueRef,
        only_tainted: bool,
    ) {
        let last = self.site_element(self.last, self.i64t, id);
        let decide = if only_tainted {
            self.decide_tainted
        } else {
            self.decide
        };
        self.call(decide, &[last, self.konst(id), data, ctrl]);
    }

    /// Site `id`'s element of a per-site array (`self.last`, `self.ways`: replaced by arrays
    /// with an element per site in `init_in_main`), at the builder's position.
    pub(super) fn site_element(
        &self,
        array: LLVMValueRef,
        element: LLVMTypeRef,
        id: u64,
    ) -> LLVMValueRef {
        let mut idx = [self.size(id)];
        // SAFETY: the builder is positioned inside a function of the live module (the
        // invariant of [`Pass`]); `array` is one of the pass's per-site globals, of elements of
        // type `element`, and `idx` a live local array of the one index passed.
        unsafe {
            c::LLVMBuildInBoundsGEP2(self.b, element, array, idx.as_mut_ptr(), 1, c"".as_ptr())
        }
    }

    /// Site `id`'s byte of the branch ways, at the builder's position.
    pub(super) fn branch_way(&self, id: u64) -> LLVMValueRef {
        // SAFETY: the context is live (the invariant of [`Pass`]).
        let i8t = unsafe { c::LLVMInt8TypeInContext(self.ctx) };
        self.site_element(self.ways, i8t, id)
    }

    /// The frame of a function with decisions, built at the builder's position (the start of
    /// its entry block).
    pub(super) fn frame(
        &self,
        dom: &FunctionDominance,
        preds: &[Vec<u32>],
        decisions: &Decisions,
    ) -> Frame {
        let (decision, pops, ndecisions) = (&decisions.decision, &decisions.pops, decisions.count);
        let n = decision.len();
        let open_in = open_decisions(dom, preds, decision, pops, ndecisions);
        // The slot reads recomputing the union: at pops and at decisions that may
        // replace their own entry.
        let reads: usize = (0..n)
            .filter(|&k| !pops[k].is_empty() || decision[k].is_some_and(|d| open_in[k].contains(d)))
            .map(|k| open_in[k].iter().count())
            .sum();
        // SAFETY: the builder is positioned at the start of the function's entry block (the
        // invariant of [`Pass`]); the array type, the `i8` zero and the sizes are of the
        // module's context; the memset covers exactly the array's `4 * ndecisions` bytes.
        let array = (reads > MAX_SLOT_READS).then(|| unsafe {
            let ty = c::LLVMArrayType2(self.i32t, ndecisions as u64);
            let a = c::LLVMBuildAlloca(self.b, ty, c"".as_ptr());
            c::LLVMBuildMemSet(
                self.b,
                a,
                c::LLVMConstInt(c::LLVMInt8TypeInContext(self.ctx), 0, 0),
                self.size(4 * ndecisions as u64),
                4,
            );
            a
        });
        let slots: Vec<LLVMValueRef> = (0..ndecisions)
            .map(|d| match array {
                Some(a) => {
                    let mut idx = [self.size(d as u64)];
                    // SAFETY: as above; `d` indexes the `ndecisions`-element array `a`, and
                    // `idx` is a live local array of the one index passed.
                    unsafe {
                        c::LLVMBuildInBoundsGEP2(
                            self.b,
                            self.i32t,
                            a,
                            idx.as_mut_ptr(),
                            1,
                            c"".as_ptr(),
                        )
                    }
                }
                // SAFETY: as above: an `i32` slot, initialised to 0.
                None => unsafe {
                    let s = c::LLVMBuildAlloca(self.b, self.i32t, c"".as_ptr());
                    c::LLVMBuildStore(self.b, self.konst(0), s);
                    s
                },
            })
            .collect();
        // SAFETY: as above: the `i32` slot of the union, initialised to 0.
        let open = unsafe {
            let open = c::LLVMBuildAlloca(self.b, self.i32t, c"".as_ptr());
            c::LLVMBuildStore(self.b, self.konst(0), open);
            open
        };
        let base = self.load_tls(self.ctrl);
        Frame {
            base,
            slots,
            array,
            open,
            open_in,
            decision: decision.clone(),
        }
    }

    /// The union of the open entries of `frame` among `set` (the frame's control taint), at
    /// the builder's position.
    pub(super) fn frame_label(
        &self,
        frame: &Frame,
        set: &DecisionSet,
        except: Option<usize>,
    ) -> Label {
        if let Some(array) = frame.array {
            // The closed slots are 0: the union of all but `except`'s (which its decision
            // is about to replace).
            if let Some(d) = except {
                // SAFETY: the builder is positioned in the frame's function (the invariant of
                // [`Pass`]), where the slot (an `i32` pointer) was allocated at entry.
                unsafe { c::LLVMBuildStore(self.b, self.konst(0), frame.slots[d]) };
            }
            let n = self.size(frame.slots.len() as u64);
            return Some(self.call(self.union_all, &[array, n]));
        }
        let labels: Vec<LLVMValueRef> = set
            .iter()
            .filter(|&k| Some(k) != except)
            .map(|k| self.load_i32(frame.slots[k]))
            .collect();
        match labels.len() {
            0 => None,
            1 => Some(labels[0]),
            n => Some(self.call(self.union_n(n), &labels)),
        }
    }
}

/// Per block: the decisions (of `decision`, by block) that may be open after the block's pops
/// (`pops`): those with a path from their branch to the block that does not enter the block
/// that pops them. A forward data-flow fixpoint over the reachable blocks.
pub(super) fn open_decisions(
    dom: &FunctionDominance,
    preds: &[Vec<u32>],
    decision: &[Option<usize>],
    pops: &[Vec<usize>],
    ndecisions: usize,
) -> Vec<DecisionSet> {
    let mut open_in = vec![DecisionSet::new(ndecisions); preds.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for &k in dom.dom.reverse_post_order() {
            let k = k as usize;
            let mut s = DecisionSet::new(ndecisions);
            for &p in &preds[k] {
                let p = p as usize;
                s.union_with(&open_in[p]);
                if let Some(d) = decision[p] {
                    s.insert(d);
                }
            }
            for &d in &pops[k] {
                s.remove(d);
            }
            if s != open_in[k] {
                open_in[k] = s;
                changed = true;
            }
        }
    }
    open_in
}

/// A conditional branch or a switch.
fn is_decision(term: LLVMValueRef) -> bool {
    // SAFETY: `term` is a non-null terminator of the live module (the handle rule); whether a
    // branch is conditional is asked only of a branch.
    unsafe {
        match c::LLVMGetInstructionOpcode(term) {
            Op::LLVMBr => c::LLVMIsConditional(term) != 0,
            Op::LLVMSwitch => true,
            _ => false,
        }
    }
}

/// "method\tfile\tline\tcolumn" for a decision (its own location, else the nearest one in its
/// block).
fn site_text(method: &str, term: LLVMValueRef) -> String {
    // SAFETY: `term` is an instruction of the live module (the handle rule); the walk back
    // calls `LLVMGetPreviousInstruction` only on non-null instructions of its block; the
    // debug-location accessors take any instruction, and the file name is null or `len`
    // bytes owned by the metadata, copied at once.
    unsafe {
        let mut at = term;
        let mut i = term;
        while !i.is_null() {
            if c::LLVMGetDebugLocLine(i) > 0 {
                at = i;
                break;
            }
            i = c::LLVMGetPreviousInstruction(i);
        }
        let mut len = 0u32;
        let p = c::LLVMGetDebugLocFilename(at, &mut len);
        let file = if p.is_null() {
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize))
                .into_owned()
        };
        let clean = |s: &str| s.replace(['\t', '\n'], " ");
        format!(
            "{}\t{}\t{}\t{}",
            clean(method),
            clean(&file),
            c::LLVMGetDebugLocLine(at),
            c::LLVMGetDebugLocColumn(at)
        )
    }
}
