//! Calls into the C library on C compiled by clang-19: what a library function is given
//! decides its result, except a buffer it only fills.

use analysis::{OptionSet, OptionSource, ResolvedSources, SourceKind, analyse};
use ir::ProgramDominance;
use space::OptionId;

const READER: &str = r#"
#include <stdio.h>
extern void work(int);
int level, noname;                                  /* options */
int main(void) {
    static char buf[4096];
    buf[0] = (char)level;                           /* the buffer holds the level */
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
        work(1);                                    /* w1 */
    if (noname) work(2);                            /* w2 */
    return 0;
}
"#;

/// `fread` fills its buffer without reading it: how much it read is the file's, not what
/// the buffer held (the level), so the loop on it depends on no option.
#[test]
fn a_buffer_the_library_only_fills_does_not_decide_its_result() {
    let p = llvm::fixture::compile("reader.c", READER)
        .translation
        .program;
    let option = |k: u32, name: &str| OptionSource {
        option: OptionId(k),
        kind: SourceKind::Global { name: name.into() },
    };
    let sources = ResolvedSources::resolve(&p, &[option(0, "level"), option(1, "noname")]).unwrap();
    let si = analyse(&p, &ProgramDominance::new(&p), &sources);
    let calls = llvm::fixture::calls_to(&p, "work");
    let of = |marker: &str| {
        let line = llvm::fixture::line_of(READER, marker);
        let (_, call) = calls.iter().find(|(l, _)| *l == line).unwrap();
        si.of(*call).clone()
    };
    assert_eq!(of("w1"), OptionSet::new());
    assert_eq!(of("w2"), OptionSet::from_ids([OptionId(1)]));
}
