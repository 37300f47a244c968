//! Instrumenting one function: argument labels and the frame at entry, shadow phis, pops at
//! the start of blocks, each instruction's label (loads and stores through shadow memory,
//! returns, decisions), and the phis' incoming labels with the control taint of their edge.

use std::collections::HashMap;

use ir::FunctionDominance;
use llvm_sys::LLVMOpcode as Op;
use llvm_sys::core as c;
use llvm_sys::prelude::{LLVMBasicBlockRef, LLVMValueRef};

use super::control::{Frame, LlvmCfg, PointDecision, point_decision};
use super::{Label, MAX_ARGS, Pass};
use crate::bitcode;

impl Pass {
    /// Instruments function `f` (defined, of the pass's module).
    pub(super) fn function(&mut self, f: LLVMValueRef) {
        let name = bitcode::value_name(f);
        let blocks = bitcode::blocks(f);
        let insts: Vec<Vec<LLVMValueRef>> =
            blocks.iter().map(|&b| bitcode::instructions(b)).collect();
        let cfg = LlvmCfg::new(&blocks);
        let dom = FunctionDominance::from_graph(&cfg.succs, &cfg.preds);
        // Decision sites, numbered now (module order, block order); each is popped at the
        // start of its branch's immediate post-dominator.
        let decisions = self.number_decisions(&name, &blocks, &dom);
        let (first_id, pops) = (decisions.first_id, &decisions.pops);
        let mut shadow: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new();

        // Entry: argument labels, then the frame.
        let first = insts[0][0];
        // SAFETY: `first` is the first instruction of `f`'s entry block and `f` a function of
        // the live module (the invariant of [`Pass`]); its parameters are read below their
        // count.
        let params = unsafe {
            c::LLVMPositionBuilderBefore(self.b, first);
            let n = c::LLVMCountParams(f).min(MAX_ARGS);
            (0..n)
                .map(|k| (k, c::LLVMGetParam(f, k)))
                .collect::<Vec<_>>()
        };
        for (k, param) in params {
            let slot = self.arg_slot(k);
            let l = self.load_i32(slot);
            shadow.insert(param, l);
        }
        let frame = (decisions.count > 0).then(|| self.frame(&dom, &cfg.preds, &decisions));

        // Shadow phis first (their incoming values are filled at the end).
        let mut phis: Vec<(LLVMValueRef, LLVMValueRef)> = Vec::new();
        for (k, block) in insts.iter().enumerate() {
            if !dom.dom.is_reachable(k as u32) {
                continue;
            }
            for &i in block {
                if opcode(i) != Op::LLVMPHI {
                    break;
                }
                // SAFETY: `block[0]` is an instruction of `f` (the invariant of [`Pass`]); the
                // phi gets the context's `i32` type.
                let p = unsafe {
                    c::LLVMPositionBuilderBefore(self.b, block[0]);
                    c::LLVMBuildPhi(self.b, self.i32t, c"".as_ptr())
                };
                shadow.insert(i, p);
                phis.push((i, p));
            }
        }

        let label = |shadow: &HashMap<LLVMValueRef, LLVMValueRef>, v: LLVMValueRef| -> Label {
            shadow.get(&v).copied()
        };
        for &k in dom.dom.reverse_post_order() {
            let block = &insts[k as usize];
            let body: Vec<LLVMValueRef> = block
                .iter()
                .copied()
                .filter(|&i| opcode(i) != Op::LLVMPHI)
                .collect();
            if body.is_empty() {
                continue;
            }
            // Pops at the block's start (after the phis): the entries are cleared, the
            // control taint is the frame's remaining open entries over the caller's.
            if let Some(frame) = &frame
                && !pops[k as usize].is_empty()
            {
                // SAFETY: `body[0]` is an instruction of `f` and the slots (`i32` pointers)
                // were allocated at its entry (the invariant of [`Pass`]).
                unsafe {
                    c::LLVMPositionBuilderBefore(self.b, body[0]);
                    for &d in &pops[k as usize] {
                        c::LLVMBuildStore(self.b, self.konst(0), frame.slots[d]);
                    }
                }
                let open = self.frame_label(frame, &frame.open_in[k as usize], None);
                // SAFETY: the builder is still before `body[0]`; an `i32` label stored to the
                // frame's `i32` union slot.
                unsafe {
                    c::LLVMBuildStore(self.b, open.unwrap_or_else(|| self.konst(0)), frame.open)
                };
                let ctrl = self.union(Some(frame.base), open).unwrap();
                // SAFETY: as above; to the `i32` thread-local control taint.
                unsafe { c::LLVMBuildStore(self.b, ctrl, self.ctrl) };
            }
            for (j, &i) in body.iter().enumerate() {
                let next = body.get(j + 1).copied();
                let at = frame.as_ref().map(|f| (f, k as usize));
                let point = decisions.points.get(&i).copied();
                self.instruction(i, next, &mut shadow, at, first_id, point);
            }
        }

        // Phi incoming values: the value's label ∪ the frame's control taint at the end of
        // the incoming block (after its own decision).
        let mut edge_ctrl: HashMap<LLVMBasicBlockRef, Label> = HashMap::new();
        for (phi, sp) in phis {
            let mut done: HashMap<LLVMBasicBlockRef, LLVMValueRef> = HashMap::new();
            // SAFETY: `phi` is a phi of `f` (the invariant of [`Pass`]), whose incoming pairs
            // are read below their count.
            let incoming: Vec<(LLVMBasicBlockRef, LLVMValueRef)> = unsafe {
                (0..c::LLVMCountIncoming(phi))
                    .map(|k| {
                        (
                            c::LLVMGetIncomingBlock(phi, k),
                            c::LLVMGetIncomingValue(phi, k),
                        )
                    })
                    .collect()
            };
            for (pred, v) in incoming {
                let mut lv = if let Some(&l) = done.get(&pred) {
                    l
                } else {
                    let reachable = cfg
                        .index
                        .get(&pred)
                        .is_some_and(|&p| dom.dom.is_reachable(p));
                    let l = if reachable {
                        // SAFETY: `pred` is a block of `f`; a well-formed block ends in a
                        // terminator (asserted), which the builder is positioned before.
                        unsafe {
                            let term = c::LLVMGetBasicBlockTerminator(pred);
                            assert!(!term.is_null(), "a predecessor without a terminator");
                            c::LLVMPositionBuilderBefore(self.b, term);
                        }
                        let fc = match &frame {
                            Some(frame) => *edge_ctrl
                                .entry(pred)
                                .or_insert_with(|| Some(self.load_i32(frame.open))),
                            None => None,
                        };
                        self.union(label(&shadow, v), fc)
                            .unwrap_or_else(|| self.konst(0))
                    } else {
                        self.konst(0)
                    };
                    done.insert(pred, l);
                    l
                };
                let mut pb = pred;
                // SAFETY: `sp` is the `i32` shadow phi of `phi`, `lv` an `i32` label and `pb`
                // its predecessor block; both are live locals of the one pair passed.
                unsafe { c::LLVMAddIncoming(sp, &mut lv, &mut pb, 1) };
            }
        }
    }

    /// Instruments one non-phi instruction: its label goes into `shadow`. Code for before it
    /// goes before `i`, code after it before `next` (the next original instruction). `frame`:
    /// the function's frame and the instruction's block, when the function has decisions
    /// (numbered from `first_id`). `point`: the id of the decision `i` is, if it is one inside
    /// its block ([`point_decision`]).
    fn instruction(
        &self,
        i: LLVMValueRef,
        next: Option<LLVMValueRef>,
        shadow: &mut HashMap<LLVMValueRef, LLVMValueRef>,
        frame: Option<(&Frame, usize)>,
        first_id: usize,
        point: Option<u64>,
    ) {
        let label = |v: LLVMValueRef| -> Label { shadow.get(&v).copied() };
        // SAFETY: `i` is an instruction of the live module (the invariant of [`Pass`]).
        let before = || unsafe { c::LLVMPositionBuilderBefore(self.b, i) };
        // SAFETY: `next` is the instruction after `i` in its block, and `i` has a parent block
        // (the invariant of [`Pass`]).
        let after = || unsafe {
            match next {
                Some(n) => c::LLVMPositionBuilderBefore(self.b, n),
                None => c::LLVMPositionBuilderAtEnd(self.b, c::LLVMGetInstructionParent(i)),
            }
        };
        // SAFETY: `i` is an instruction (hence a user, with a type) of the live module; the
        // operand reads below each check its count or the opcode's operands.
        let (op, nops, ty) = unsafe {
            (
                c::LLVMGetInstructionOpcode(i),
                c::LLVMGetNumOperands(i) as u32,
                c::LLVMTypeOf(i),
            )
        };
        let operand = |k: u32| {
            assert!(k < nops, "operand {k} of an instruction with {nops}");
            // SAFETY: `i` is a user and `k` is below its operand count (asserted).
            unsafe { c::LLVMGetOperand(i, k) }
        };
        let source = self.sources.get(&i).cloned().unwrap_or_default();
        // A decision inside the block is recorded before it runs. The function an indirect
        // call chooses runs under that choice (its decisions and stores carry it), and what
        // it returns depends on it: `(pointer label, control taint to restore)`.
        let mut chosen: Option<(LLVMValueRef, LLVMValueRef)> = None;
        if let Some(id) = point {
            let kind = point_decision(i).expect("numbered as a decision");
            before();
            let data = match kind {
                PointDecision::Select => label(operand(0)),
                // A call's last operand is the called value.
                PointDecision::IndirectCall => label(operand(nops - 1)),
                PointDecision::LibraryCall => self.library_input(i, &label),
            };
            // Only when tainted by more than the control taint: a select or call whose
            // input is untainted, or tainted only by the decisions that led to it (what a
            // helper stores and passes on under its callers' branches), changes nothing the
            // branches around it do not say already (the static analysis' rule too).
            if let Some(d) = data {
                let ctrl = self.load_tls(self.ctrl);
                let news = self.beyond(d, ctrl);
                self.record_decision(id, news, ctrl, true);
                if kind == PointDecision::IndirectCall {
                    let now = self.union(Some(ctrl), Some(d)).unwrap();
                    // SAFETY: the builder is before `i` (above); an `i32` label stored to the
                    // `i32` thread-local control taint.
                    unsafe { c::LLVMBuildStore(self.b, now, self.ctrl) };
                    chosen = Some((d, ctrl));
                }
            }
        }
        let result: Label = match op {
            Op::LLVMLoad => {
                after();
                let ptr = operand(0);
                let size = self.store_size(ty);
                let mem = self.shadow_load(ptr, size);
                let l = self.union(Some(mem), label(ptr));
                let s = self.source_label(&source);
                self.union(l, s)
            }
            Op::LLVMStore => {
                before();
                let v = operand(0);
                let ptr = operand(1);
                // SAFETY: `v` is a value of the live module; any value has a type.
                let size = self.store_size(unsafe { c::LLVMTypeOf(v) });
                let ctrl = self.load_tls(self.ctrl);
                let l = self.union(label(v), Some(ctrl)).unwrap();
                self.shadow_store(ptr, size, l);
                None
            }
            Op::LLVMAlloca => {
                // SAFETY: `i` is an alloca, which has an allocated type and its element count
                // as operand 0; the count's value is read only of a `ConstantInt`.
                let (allocated, count) = unsafe {
                    let count = operand(0);
                    let count = (!c::LLVMIsAConstantInt(count).is_null())
                        .then(|| c::LLVMConstIntGetZExtValue(count));
                    (c::LLVMGetAllocatedType(i), count)
                };
                if let Some(count) = count {
                    let n = count * self.store_size(allocated);
                    after();
                    self.shadow_store(i, n, self.konst(0));
                }
                None
            }
            Op::LLVMCall => self.call_site(i, &before, &after, &label, &source),
            Op::LLVMRet => {
                before();
                let v = if nops > 0 { label(operand(0)) } else { None };
                // A value returned under this frame's open tainted decisions carries them;
                // the caller's control taint is restored.
                let l = match frame {
                    Some((frame, _)) => {
                        let open = self.load_i32(frame.open);
                        // SAFETY: the builder is before `i` (above); `frame.base` is an `i32`
                        // label and `self.ctrl` the `i32` thread-local.
                        unsafe { c::LLVMBuildStore(self.b, frame.base, self.ctrl) };
                        self.union(v, Some(open))
                    }
                    None => v,
                };
                if nops > 0 {
                    // SAFETY: as above; `self.ret` is the `i32` thread-local.
                    unsafe {
                        c::LLVMBuildStore(self.b, l.unwrap_or_else(|| self.konst(0)), self.ret)
                    };
                }
                None
            }
            Op::LLVMBr | Op::LLVMSwitch => {
                if let Some((frame, k)) = frame
                    && let Some(d) = frame.decision[k]
                {
                    // The decision replaces its own open entry (a loop header is not
                    // control dependent on its previous outcome): its control taint is
                    // the other open entries over the caller's. Recorded unless the site's
                    // last record has the same taints; then its entry is open.
                    before();
                    let id = (first_id + d) as u64;
                    // A decision's operand 0 is its condition (switch value).
                    let cond = label(operand(0)).unwrap_or_else(|| self.konst(0));
                    // The union of the other open entries: the frame's union, unless this
                    // decision's own entry may be open.
                    let others = if frame.open_in[k].contains(d) {
                        self.frame_label(frame, &frame.open_in[k], Some(d))
                    } else {
                        Some(self.load_i32(frame.open))
                    };
                    let ctrl = self.union(Some(frame.base), others).unwrap();
                    self.record_decision(id, cond, ctrl, false);
                    // A conditional branch notes the way it went; one the runtime was told
                    // went one way in every run opens no entry (`docs/comprex-records.md`).
                    let cond = if op == Op::LLVMBr {
                        let way = self.branch_way(id);
                        self.call(self.branch, &[way, operand(0), cond])
                    } else {
                        cond
                    };
                    // SAFETY: as above; `i32` labels stored to the decision's `i32` slot.
                    unsafe { c::LLVMBuildStore(self.b, cond, frame.slots[d]) };
                    let open = self.union(others, Some(cond)).unwrap();
                    // SAFETY: as above; to the frame's `i32` union slot.
                    unsafe { c::LLVMBuildStore(self.b, open, frame.open) };
                    let now = self.union(Some(ctrl), Some(cond)).unwrap();
                    // SAFETY: as above; to the `i32` thread-local control taint.
                    unsafe { c::LLVMBuildStore(self.b, now, self.ctrl) };
                }
                None
            }
            Op::LLVMInvoke
            | Op::LLVMUnreachable
            | Op::LLVMIndirectBr
            | Op::LLVMResume
            | Op::LLVMFence
            | Op::LLVMLandingPad
            | Op::LLVMCallBr => None,
            _ => {
                // SAFETY: `ty` is a type of the live context; any type has a kind.
                if unsafe { c::LLVMGetTypeKind(ty) } == llvm_sys::LLVMTypeKind::LLVMVoidTypeKind {
                    None
                } else {
                    after();
                    let mut l = None;
                    for k in 0..nops {
                        l = self.union(l, label(operand(k)));
                    }
                    l
                }
            }
        };
        let result = match chosen {
            Some((pointer, ctrl)) => {
                after();
                // SAFETY: the builder is after the call (`after`); an `i32` label stored to
                // the `i32` thread-local control taint.
                unsafe { c::LLVMBuildStore(self.b, ctrl, self.ctrl) };
                result.map(|r| self.union(Some(r), Some(pointer)).unwrap())
            }
            None => result,
        };
        if let Some(l) = result {
            shadow.insert(i, l);
        }
    }

    /// `data`, or 0 when it holds no option beyond `ctrl`'s (known only for labels that are
    /// plain bit sets; an interned label is kept), at the builder's position.
    fn beyond(&self, data: LLVMValueRef, ctrl: LLVMValueRef) -> LLVMValueRef {
        // SAFETY: the builder is positioned inside a function of the live module (the
        // invariant of [`Pass`]); `data` and `ctrl` are `i32` labels of it.
        unsafe {
            let both = c::LLVMBuildOr(self.b, data, ctrl, c"".as_ptr());
            let within = c::LLVMBuildICmp(
                self.b,
                llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                both,
                ctrl,
                c"".as_ptr(),
            );
            let plain = c::LLVMBuildICmp(
                self.b,
                llvm_sys::LLVMIntPredicate::LLVMIntSGE,
                both,
                self.konst(0),
                c"".as_ptr(),
            );
            let covered = c::LLVMBuildAnd(self.b, within, plain, c"".as_ptr());
            c::LLVMBuildSelect(self.b, covered, self.konst(0), data, c"".as_ptr())
        }
    }

    /// The label of what a call into the C library is given (at the builder's position): its
    /// arguments' labels, and the contents of the small local and global objects they point
    /// to directly (a `struct timespec` for `nanosleep`). Larger objects (buffers) are left
    /// out: the work done on a buffer depends on its size, an argument, not on its bytes.
    fn library_input(&self, call: LLVMValueRef, label: &dyn Fn(LLVMValueRef) -> Label) -> Label {
        // SAFETY: `call` is a call of the live module (the invariant of [`Pass`]); its
        // argument operands are read below their count; sizes are asked of an alloca's
        // allocated type and a global's value type, both types of the live context.
        unsafe {
            let mut l = None;
            for k in 0..c::LLVMGetNumArgOperands(call) {
                let a = c::LLVMGetOperand(call, k);
                l = self.union(l, label(a));
                let size = if !c::LLVMIsAAllocaInst(a).is_null() {
                    let count = c::LLVMGetOperand(a, 0);
                    let one = !c::LLVMIsAConstantInt(count).is_null()
                        && c::LLVMConstIntGetZExtValue(count) == 1;
                    if one {
                        self.store_size(c::LLVMGetAllocatedType(a))
                    } else {
                        0
                    }
                } else if !c::LLVMIsAGlobalVariable(a).is_null() {
                    self.store_size(c::LLVMGlobalGetValueType(a))
                } else {
                    0
                };
                if (1..=MAX_LIBRARY_OBJECT).contains(&size) {
                    l = self.union(l, Some(self.shadow_load(a, size)));
                }
            }
            l
        }
    }
}

/// The largest object behind a library call's argument whose contents count as its input
/// (bytes): structs of settings, not buffers.
const MAX_LIBRARY_OBJECT: u64 = 64;

/// The opcode of an instruction.
fn opcode(i: LLVMValueRef) -> Op {
    // SAFETY: `i` is an instruction of the live module (the handle rule).
    unsafe { c::LLVMGetInstructionOpcode(i) }
}
