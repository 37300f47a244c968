//! Bad input gives one clear line naming what is wrong.

use llvm::{CompileOptions, Error, compile_c, translate_bitcode};

#[test]
fn c_that_does_not_compile_names_the_file_and_clangs_first_error() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.c");
    let bad = dir.path().join("bad.c");
    std::fs::write(&good, "int ok(void) { return 1; }\n").unwrap();
    std::fs::write(&bad, "int main(void) {\n  return undeclared + 1;\n}\n").unwrap();
    let err = compile_c(&[good, bad.clone()], &CompileOptions::default(), dir.path()).unwrap_err();
    assert!(
        matches!(err, Error::Compile { ref file, .. } if *file == bad),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains("bad.c"), "{msg}");
    assert!(
        msg.contains("error:") && msg.contains("undeclared"),
        "{msg}"
    );
    assert!(msg.contains("bad.c:2:"), "clang's line and column: {msg}");
}

#[test]
fn several_files_are_linked_into_one_module() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.c");
    let b = dir.path().join("b.c");
    std::fs::write(
        &a,
        "int helper(int x);\nint main(void) { return helper(2); }\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "#ifndef K\n#error K undefined\n#endif\nint helper(int x) { return x * K; }\n",
    )
    .unwrap();
    let options = CompileOptions {
        defines: vec![("K".into(), Some("3".into()))],
        ..CompileOptions::default()
    };
    let linked = compile_c(&[a, b], &options, &dir.path().join("out")).unwrap();
    let t = translate_bitcode(&linked, None).unwrap();
    let helper = t.program.function_named("helper").unwrap();
    assert!(!t.program.func(helper).is_declaration, "defined by b.c");
    assert_eq!(t.program.files.len(), 2);
}

#[test]
fn a_file_that_is_not_bitcode_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prog.bc");
    std::fs::write(&path, "this is not bitcode").unwrap();
    let err = translate_bitcode(&path, None).unwrap_err();
    assert!(matches!(err, Error::BadBitcode { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("prog.bc") && msg.contains("not LLVM bitcode"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");

    let missing = dir.path().join("missing.bc");
    let msg = translate_bitcode(&missing, None).unwrap_err().to_string();
    assert!(
        msg.contains("missing.bc") && msg.contains("no such file"),
        "{msg}"
    );
}

#[test]
fn a_missing_compiler_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("x.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let options = CompileOptions {
        clang: "clang-does-not-exist".into(),
        ..CompileOptions::default()
    };
    let msg = compile_c(&[src], &options, dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("clang-does-not-exist") && msg.contains("install LLVM 19"),
        "{msg}"
    );
}
