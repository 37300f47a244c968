//! The bundled specs whose real builds are compared with their variant simulator: the real
//! builds' recipe must compile as `knobs simulator` compiles the simulator (`-O2`, the same
//! sources, defines and include directories), or the comparison measures the build, not the
//! encoding. lz4's Makefile, for one, takes its `-O2` from `CFLAGS`' default, which a
//! feature's flags in `CFLAGS` replace.

use std::path::Path;

fn spec(relative: &str) -> measure::SystemSpec {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    measure::SystemSpec::load(&root.join(relative)).unwrap()
}

/// `steps` is one clang command that compiles the `[build] sources` (relative to `dir`) as
/// the simulator is compiled.
fn assert_compiled_as_the_simulator(relative: &str) {
    let spec = spec(relative);
    let build = spec.build.as_ref().unwrap();
    let dir = build.dir.as_deref().unwrap_or(".");
    let [step] = build.recipe.as_slice() else {
        panic!(
            "{relative}: one compile step expected, got {:?}",
            build.recipe
        );
    };
    assert!(step[0].starts_with("clang"), "{relative}: {step:?}");
    let has = |arg: &str| step.iter().any(|a| a == arg);
    assert!(
        has("-O2"),
        "{relative}: the simulator is compiled at -O2: {step:?}"
    );
    assert!(has("{cflags}"), "{relative}: the features' flags: {step:?}");
    for source in &build.sources {
        let inside = Path::new(source).strip_prefix(dir).unwrap();
        assert!(
            has(&inside.display().to_string()),
            "{relative}: {source} not compiled"
        );
    }
    for define in &build.defines {
        assert!(
            has(&format!("-D{define}")),
            "{relative}: -D{define} missing"
        );
    }
    for include in &build.include {
        let inside = Path::new(include).strip_prefix(dir).unwrap();
        assert!(
            has(&format!("-I{}", inside.display())),
            "{relative}: -I{include} missing"
        );
    }
    let compiled = step.iter().filter(|a| a.ends_with(".c")).count();
    assert_eq!(compiled, build.sources.len(), "{relative}: {step:?}");
}

#[test]
fn lz4_ifdef_real_builds_compile_as_its_simulator() {
    assert_compiled_as_the_simulator("examples/lz4-ifdef/knobs.toml");
}
