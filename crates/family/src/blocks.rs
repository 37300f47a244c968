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

/// The blocks the variant simulator encodes but does not mark as features' code
/// (`variants::UNTRACED_BLOCK`: an `#else`, a block a jump can leave): one run with every
/// feature does not see their cost where they run, so each is listed with why.
pub fn untraced(program: &Program) -> Vec<UnseenInfluence> {
    let mut out = Vec::new();
    for (f, func) in program.functions.iter_enumerated() {
        for i in program.instructions_of(f) {
            let inst = program.inst(i);
            let InstKind::Call {
                callee: Callee::Direct(g),
                args,
            } = &inst.kind
            else {
                continue;
            };
            if !program.func(*g).name.starts_with(variants::UNTRACED_BLOCK) {
                continue;
            }
            let text = |k: usize| match args.get(k).map(|a| program.value(*a)) {
                Some(ValueDef::ConstStr(s)) => s.clone(),
                _ => String::new(),
            };
            let unseen = UnseenInfluence {
                function: func.name.clone(),
                file: inst
                    .loc
                    .file
                    .map(|file| program.files[file].clone())
                    .unwrap_or_default(),
                line: inst.loc.line,
                options: text(1).split(',').map(String::from).collect(),
                why: format!("a block the variant simulator does not trace: {}", text(2)),
            };
            if !out.contains(&unseen) {
                out.push(unseen);
            }
        }
    }
    out
}

/// The marked blocks of `program`, in the program's order. A marker that names no option of
/// the space is an error.
pub fn feature_blocks(program: &Program, space: &ConfigSpace) -> Result<Vec<FeatureBlock>, Error> {
    let mut found: BTreeMap<(FuncId, i64, OptionId), FeatureBlock> = BTreeMap::new();
    for (f, func) in program.functions.iter_enumerated() {
        if func.is_declaration {
            continue;
        }
        for i in program.instructions_of(f) {
            let inst = program.inst(i);
            let InstKind::Call {
                callee: Callee::Direct(g),
                args,
            } = &inst.kind
            else {
                continue;
            };
            let name = &program.func(*g).name;
            let enter = name.starts_with(variants::FEATURE_BLOCK_ENTER);
            if !enter && !name.starts_with(variants::FEATURE_BLOCK_EXIT) {
                continue;
            }
            let (Some(ValueDef::ConstInt(block)), Some(ValueDef::ConstStr(option))) = (
                args.first().map(|a| program.value(*a)),
                args.get(1).map(|a| program.value(*a)),
            ) else {
                return Err(Error::Invalid(format!(
                    "`{}`: a call of `{name}` without a constant block number and option name",
                    func.name
                )));
            };
            let o = space.find(option).ok_or_else(|| {
                Error::Invalid(format!(
                    "`{}`: a feature block's marker names `{option}`, no option of the space",
                    func.name
                ))
            })?;
            let line = inst.loc.line;
            let entry = found.entry((f, *block, o)).or_insert_with(|| FeatureBlock {
                label: String::new(),
                function: f,
                option: o,
                start: Vec::new(),
                end: Vec::new(),
                file: inst
                    .loc
                    .file
                    .map(|file| program.files[file].clone())
                    .unwrap_or_default(),
                lines: (line, line),
            });
            entry.lines = (entry.lines.0.min(line), entry.lines.1.max(line));
            match enter {
                true => entry.start.push(i),
                false => entry.end.push(i),
            }
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
