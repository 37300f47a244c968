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

/// An output directory given relative to the working directory (`knobs simulator --out
/// build/sim`) is not relative to the spec's directory, where the written spec's paths are
/// read from: they are written absolute, and the simulator's spec runs it.
#[test]
fn a_relative_output_directory_writes_a_spec_that_finds_its_simulator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let spec = spec("examples/ifdef/knobs.toml");
    let out = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cwd = std::env::current_dir().unwrap();
    let root = root.canonicalize().unwrap();
    let up = cwd.strip_prefix(&root).unwrap().components().count();
    let relative = std::iter::repeat_n("..", up)
        .collect::<std::path::PathBuf>()
        .join(
            out.path()
                .canonicalize()
                .unwrap()
                .strip_prefix(&root)
                .unwrap(),
        );
    assert!(relative.is_relative() && relative.join("..").exists());
    let options = simulator::Options {
        out_dir: relative,
        clang: "clang-19".into(),
    };
    let built = simulator::build(&spec, &options).unwrap();
    let written = measure::SystemSpec::load(&built.spec).unwrap();
    let config = written.space.parse_configuration("logging").unwrap();
    let workload = written.workload(None).unwrap();
    let run = written.invocation(&config, workload).unwrap();
    assert!(run.program.is_file(), "{}", run.program.display());
    let build = written.build.as_ref().unwrap();
    for source in &build.sources {
        assert!(Path::new(source).is_absolute(), "{source}");
    }
}
