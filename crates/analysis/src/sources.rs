//! Where a program keeps its options: the description the system spec gives (or the frontend
//! reads from source annotations), and its resolution against a [`Program`].

use ir::{ArgSelector, Place, Program};
use space::{ConfigSpace, OptionId};

use crate::Error;

/// A field of a struct type, by position or by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldRef {
    Index(u32),
    Name(String),
}

/// One way a program holds an option's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A global variable, by name.
    Global { name: String },
    /// A field of every object of a struct type (e.g. `lzma_options_lzma.mode`).
    StructField { structure: String, field: FieldRef },
    /// The return value of a named function (and what it points to), optionally only for
    /// calls with a given constant string argument.
    FunctionReturn {
        function: String,
        selector: Option<ArgSelector>,
    },
}

/// An option and where its value lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionSource {
    pub option: OptionId,
    pub kind: SourceKind,
}

/// Sources resolved against one program; what the taint analysis seeds from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvedSources {
    pub sources: Vec<(OptionId, Place)>,
}

impl ResolvedSources {
    /// Resolves each source; a name the program does not have is an error naming it.
    pub fn resolve(program: &Program, sources: &[OptionSource]) -> Result<Self, Error> {
        let mut out = Vec::new();
        for s in sources {
            let resolved = match &s.kind {
                SourceKind::Global { name } => Place::Global(
                    program
                        .global_named(name)
                        .ok_or_else(|| Error::UnknownGlobal(name.clone()))?,
                ),
                SourceKind::StructField { structure, field } => {
                    let id = program
                        .struct_named(structure)
                        .ok_or_else(|| Error::UnknownStruct(structure.clone()))?;
                    let fields = &program.structs[id].fields;
                    let index = match field {
                        FieldRef::Index(i) if (*i as usize) < fields.len() => *i,
                        FieldRef::Name(n) => {
                            fields.iter().position(|f| f == n).ok_or_else(|| {
                                Error::UnknownField {
                                    structure: structure.clone(),
                                    field: n.clone(),
                                }
                            })? as u32
                        }
                        FieldRef::Index(i) => {
                            return Err(Error::UnknownField {
                                structure: structure.clone(),
                                field: i.to_string(),
                            });
                        }
                    };
                    Place::Field(id, index)
                }
                SourceKind::FunctionReturn { function, selector } => Place::Return(
                    program
                        .function_named(function)
                        .ok_or_else(|| Error::UnknownFunction(function.clone()))?,
                    selector.clone(),
                ),
            };
            out.push((s.option, resolved));
        }
        Ok(ResolvedSources { sources: out })
    }

    /// Sources from globals annotated `knobs:option=NAME` in the source; an annotation
    /// naming an option the space lacks is an error.
    pub fn from_annotations(program: &Program, space: &ConfigSpace) -> Result<Self, Error> {
        let mut out = Vec::new();
        for (i, g) in program.globals.iter_enumerated() {
            for a in &g.annotations {
                if let Some(name) = a.strip_prefix("knobs:option=") {
                    let option = space.find(name).ok_or_else(|| Error::UnknownOption {
                        name: name.to_string(),
                        context: format!("the annotation of global `{}`", g.name),
                    })?;
                    out.push((option, Place::Global(i)));
                }
            }
        }
        Ok(ResolvedSources { sources: out })
    }

    /// Each source as its option's index and place: what the dynamic taint pass takes.
    pub fn by_index(&self) -> Vec<(usize, Place)> {
        self.sources
            .iter()
            .map(|(o, place)| (o.index(), place.clone()))
            .collect()
    }

    pub fn extend(&mut self, other: ResolvedSources) {
        self.sources.extend(other.sources);
    }
}
