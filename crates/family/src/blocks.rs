//! Feature blocks: code inside a function that belongs to a feature, as the variant simulator
//! marks it (`variants::FEATURE_BLOCK_ENTER` and `FEATURE_BLOCK_EXIT` calls around an encoded
//! `#ifdef` block, each naming the block and an option). The paper traces annotated code, not
//! only whole methods: each block becomes a node of the call tree, between its markers,
//! mapped to its option as a feature's function is, so its own cost and its callees' are the
//! option's, and a block inside another feature's code (or a nested block) is their
//! interaction. A block left by `return` is closed by its function's exit.

use std::collections::{BTreeMap, BTreeSet};

use ir::{BlockId, Callee, FuncId, InstId, InstKind, Program, ProgramPoint, ValueDef};
use space::{ConfigSpace, OptionId};

use crate::{Error, UnseenInfluence};

/// One marked block of one option in one function.
#[derive(Clone, Debug)]
pub struct FeatureBlock {
    /// Its name in calling contexts: `function:line#option`.
    pub label: String,
    pub function: FuncId,
    pub option: OptionId,
    /// The enter markers' calls (where it starts) and the exit markers' (where it ends).
    pub start: Vec<InstId>,
    pub end: Vec<InstId>,
    pub file: String,
    /// The first and last line of the markers.
    pub lines: (u32, u32),
}

/// Whether `f` is a marker (also under the `.N` name a module link gives a second file's
/// copy): it does nothing, and counts nothing.
pub fn is_marker(program: &Program, f: FuncId) -> bool {
    program.func(f).name.starts_with(llvm::MARKER_PREFIX)
}

/// One call of a marker: where it is, which marker (its name), its arguments.
struct MarkerCall<'a> {
    function: FuncId,
    inst: InstId,
    name: &'a str,
    args: &'a [ir::ValueId],
}

/// Every call of a marker whose name starts with one of `markers`, in the program's order.
fn marker_calls<'a>(program: &'a Program, markers: &[&str]) -> Vec<MarkerCall<'a>> {
    let mut out = Vec::new();
    for (f, _) in program.functions.iter_enumerated() {
        for i in program.instructions_of(f) {
            let InstKind::Call {
                callee: Callee::Direct(g),
                args,
            } = &program.inst(i).kind
            else {
                continue;
            };
            let name = program.func(*g).name.as_str();
            if markers.iter().any(|m| name.starts_with(m)) {
                out.push(MarkerCall {
                    function: f,
                    inst: i,
                    name,
                    args,
                });
            }
        }
    }
    out
}

/// The file of an instruction's debug location.
fn file_of(program: &Program, inst: InstId) -> String {
    program
        .inst(inst)
        .loc
        .file
        .map(|file| program.files[file].clone())
        .unwrap_or_default()
}

/// The blocks the variant simulator encodes but does not mark as features' code
/// (`variants::UNTRACED_BLOCK`: an `#else`, a block a jump can leave): one run with every
/// feature does not see their cost where they run, so each is listed with why.
pub fn untraced(program: &Program) -> Vec<UnseenInfluence> {
    let mut out = Vec::new();
    for call in marker_calls(program, &[variants::UNTRACED_BLOCK]) {
        let text = |k: usize| match call.args.get(k).map(|a| program.value(*a)) {
            Some(ValueDef::ConstStr(s)) => s.clone(),
            _ => String::new(),
        };
        let unseen = UnseenInfluence {
            function: program.func(call.function).name.clone(),
            file: file_of(program, call.inst),
            line: program.inst(call.inst).loc.line,
            options: text(1).split(',').map(String::from).collect(),
            why: format!("a block the variant simulator does not trace: {}", text(2)),
        };
        if !out.contains(&unseen) {
            out.push(unseen);
        }
    }
    out
}

/// The marked blocks of `program`, in the program's order. A marker that names no option of
/// the space is an error.
pub fn feature_blocks(program: &Program, space: &ConfigSpace) -> Result<Vec<FeatureBlock>, Error> {
    let mut found: BTreeMap<(FuncId, i64, OptionId), FeatureBlock> = BTreeMap::new();
    let markers = [variants::FEATURE_BLOCK_ENTER, variants::FEATURE_BLOCK_EXIT];
    for call in marker_calls(program, &markers) {
        let function = &program.func(call.function).name;
        let (Some(ValueDef::ConstInt(block)), Some(ValueDef::ConstStr(option))) = (
            call.args.first().map(|a| program.value(*a)),
            call.args.get(1).map(|a| program.value(*a)),
        ) else {
            return Err(Error::Invalid(format!(
                "`{function}`: a call of `{}` without a constant block number and option name",
                call.name
            )));
        };
        let o = space.find(option).ok_or_else(|| {
            Error::Invalid(format!(
                "`{function}`: a feature block's marker names `{option}`, no option of the space"
            ))
        })?;
        let line = program.inst(call.inst).loc.line;
        let entry = found
            .entry((call.function, *block, o))
            .or_insert_with(|| FeatureBlock {
                label: String::new(),
                function: call.function,
                option: o,
                start: Vec::new(),
                end: Vec::new(),
                file: file_of(program, call.inst),
                lines: (line, line),
            });
        entry.lines = (entry.lines.0.min(line), entry.lines.1.max(line));
        match call.name.starts_with(variants::FEATURE_BLOCK_ENTER) {
            true => entry.start.push(call.inst),
            false => entry.end.push(call.inst),
        }
    }
    let mut blocks: Vec<FeatureBlock> = found
        .into_values()
        .filter(|b| !b.start.is_empty())
        .collect();
    for b in &mut blocks {
        b.label = format!(
            "{}:{}#{}",
            program.func(b.function).name,
            b.lines.0,
            space.option(b.option).name
        );
    }
    Ok(blocks)
}

impl FeatureBlock {
    /// Where its node opens: before each enter marker.
    pub fn start_points(&self) -> Vec<ProgramPoint> {
        self.start
            .iter()
            .map(|i| ProgramPoint::Before(*i))
            .collect()
    }

    /// Where its node closes: before each exit marker (the jump after it, which ends the
    /// block's code, is the enclosing code's: the encoding gives the other way round the
    /// block an `else` jump to match).
    pub fn end_points(&self) -> Vec<ProgramPoint> {
        self.end.iter().map(|i| ProgramPoint::Before(*i)).collect()
    }
}

/// The program's basic blocks inside marked blocks: those an enter marker reaches before its
/// exit marker (the exit's own included).
pub fn inside(program: &Program, blocks: &[FeatureBlock]) -> BTreeSet<BlockId> {
    let mut out = BTreeSet::new();
    for b in blocks {
        let cfg = program.cfg(b.function);
        let ends: BTreeSet<BlockId> = b.end.iter().map(|i| program.inst(*i).block).collect();
        let mut queue: Vec<BlockId> = b.start.iter().map(|i| program.inst(*i).block).collect();
        let mut seen = BTreeSet::new();
        while let Some(at) = queue.pop() {
            if !seen.insert(at) || ends.contains(&at) {
                continue;
            }
            let local = program.block(at).local as usize;
            queue.extend(cfg.succs[local].iter().map(|s| cfg.blocks[*s as usize]));
        }
        out.extend(seen);
    }
    out
}
