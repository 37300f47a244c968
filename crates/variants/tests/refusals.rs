//! Every annotation the encoding cannot turn into run-time variability is refused with its
//! line and the pattern's name, and its feature stays build-only (with every feature that
//! shares a condition with it); the others are still encoded.

use variants::{Feature, Pattern, SourceFile};

fn refusals(text: &str, features: &[Feature]) -> (Vec<(usize, Pattern, String)>, Vec<String>) {
    let file = SourceFile {
        path: "p.c".into(),
        text: text.into(),
    };
    let simulator = variants::encode(&[file], features);
    let refused = simulator
        .refusals
        .iter()
        .map(|r| (r.line, r.pattern, r.feature.clone()))
        .collect();
    let encoded = simulator
        .encoded
        .iter()
        .map(|f| f.macro_name.clone())
        .collect();
    (refused, encoded)
}

fn a() -> Vec<Feature> {
    vec![
        Feature::defined_when_on("A", "a"),
        Feature::defined_when_on("B", "b"),
    ]
}

/// Refused at each of `lines`, every one listed.
fn refused_alone(text: &str, lines: &[usize], pattern: Pattern) {
    let (refused, encoded) = refusals(text, &a());
    let expected: Vec<_> = lines
        .iter()
        .map(|&l| (l, pattern, "A".to_string()))
        .collect();
    assert_eq!(refused, expected, "{text}");
    assert_eq!(
        encoded,
        vec!["B".to_string()],
        "B is untouched and still encoded"
    );
}

#[test]
fn part_of_an_expression() {
    refused_alone(
        "int f(int x) {\n  return x\n#ifdef A\n  + 1\n#endif\n  ;\n}\n",
        &[3],
        Pattern::PartOfExpression,
    );
    refused_alone(
        "int f(int x) {\n  g(x,\n#ifdef A\n  1\n#else\n  2\n#endif\n  );\n}\n",
        &[3],
        Pattern::PartOfExpression,
    );
}

#[test]
fn a_struct_field_and_an_initializer() {
    refused_alone(
        "struct s {\n  int x;\n#ifdef A\n  int y;\n#endif\n};\n",
        &[3],
        Pattern::StructField,
    );
    refused_alone(
        "int t[] = {\n  1,\n#ifdef A\n  2,\n#endif\n};\n",
        &[3],
        Pattern::PartOfInitializer,
    );
}

#[test]
fn the_unbraced_body_of_an_if() {
    refused_alone(
        "void f(int x) {\n  if (x)\n#ifdef A\n    g();\n#else\n    h();\n#endif\n}\n",
        &[3],
        Pattern::UnbracedBody,
    );
}

#[test]
fn a_branch_that_is_not_whole_statements() {
    refused_alone(
        "void f(int x) {\n#ifdef A\n  if (x) {\n#endif\n    g();\n#ifdef A\n  }\n#endif\n}\n",
        &[4, 8],
        Pattern::Unbalanced,
    );
}

#[test]
fn a_value_in_a_constant_expression() {
    let valued = vec![
        Feature::valued("A", "a"),
        Feature::defined_when_on("B", "b"),
    ];
    let (refused, encoded) = refusals(
        "static int buffer[64 << A];\nint g(void) { return A; }\n",
        &valued,
    );
    assert_eq!(
        refused,
        vec![(1, Pattern::ConstantExpression, "A".to_string())]
    );
    assert_eq!(encoded, vec!["B".to_string()]);
    let (refused, _) = refusals(
        "int g(int x) {\n  switch (x) { case A: return 1; }\n  return 0;\n}\n",
        &valued,
    );
    assert_eq!(
        refused,
        vec![(2, Pattern::ConstantExpression, "A".to_string())]
    );
    // In code, the value is a read of the feature's global.
    let (refused, _) = refusals("int g(void) { return 16 << A; }\n", &valued);
    assert!(refused.is_empty());
}

#[test]
fn a_declaration_used_after_its_block_that_cannot_be_lifted() {
    // Declared in one branch only: the other variant uses an outer `n` (or does not compile).
    refused_alone(
        "int n;\nint f(void) {\n#ifdef A\n  int n = 2;\n#endif\n  return n;\n}\n",
        &[4],
        Pattern::DeclarationUsedAfter,
    );
    // Another type per branch.
    refused_alone(
        "int f(void) {\n#ifdef A\n  long n = 2;\n#else\n  int n = 3;\n#endif\n  return n;\n}\n",
        &[3, 5],
        Pattern::DeclarationUsedAfter,
    );
    // An array.
    refused_alone(
        "int f(void) {\n#ifdef A\n  int n[2] = {1, 2};\n#else\n  int n[2] = {3, 4};\n#endif\n  return n[0];\n}\n",
        &[3, 5],
        Pattern::DeclarationUsedAfter,
    );
    // Used only inside: nothing to lift.
    let (refused, _) = refusals(
        "int f(void) {\n  int r = 0;\n#ifdef A\n  int n = 2;\n  r = n;\n#endif\n  return r;\n}\n",
        &a(),
    );
    assert!(refused.is_empty(), "{refused:?}");
}

#[test]
fn declarations_of_one_variable_in_every_branch_are_lifted_before_the_if() {
    let text = "int f(void) {\n#ifdef A\n  S *p = alloc();\n  if (!p) return 0;\n#else\n  S s;\n  S *const p = &s;\n#endif\n  return use(p);\n}\n";
    let file = SourceFile {
        path: "p.c".into(),
        text: text.into(),
    };
    let simulator = variants::encode(&[file], &a());
    assert!(simulator.refusals.is_empty(), "{:?}", simulator.refusals);
    let encoded = &simulator.files[0].text;
    // `s` goes too: `p` points to it after the group.
    assert!(
        encoded.contains("S *p; S s; if (knobs_feature_A) {"),
        "{encoded}"
    );
    assert!(
        encoded.contains("p = alloc ( );") && encoded.contains("p = & s;"),
        "{encoded}"
    );
}

#[test]
fn a_conditional_label_or_case() {
    refused_alone(
        "int f(int x) {\n#ifdef A\nagain:\n  x--;\n#endif\n  if (x) goto again;\n  return x;\n}\n",
        &[3],
        Pattern::ConditionalLabel,
    );
    refused_alone(
        "int f(int x) {\n  switch (x) {\n  case 0: return 1;\n#ifdef A\n  case 1: return 2;\n#endif\n  }\n  return 0;\n}\n",
        &[5],
        Pattern::ConditionalLabel,
    );
}

#[test]
fn a_label_reached_only_under_its_own_condition_is_encoded() {
    // As lz4's fast decoding loop: gotos in one block under A to labels in other blocks
    // under A, one of them ending its block.
    let text = "int f(int x) {\n#ifdef A\n  if (x > 9) goto fast_end;\n  x++;\nfast_end:\n#endif\n  x *= 2;\n#ifdef A\nlate:\n#endif\n  return x;\n}\n";
    let (refused, encoded) = refusals(text, &a());
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(encoded, vec!["A".to_string(), "B".to_string()]);
    // Under B as well as A the goto is still only where the label exists; under B alone not.
    let nested = "int f(int x) {\n#ifdef B\n#ifdef A\n  goto out;\n#endif\n#endif\n#ifdef A\nout:\n#endif\n  return x;\n}\n";
    assert_eq!(refusals(nested, &a()).0, vec![]);
    let other =
        "int f(int x) {\n#ifdef B\n  goto out;\n#endif\n#ifdef A\nout:\n#endif\n  return x;\n}\n";
    assert_eq!(
        refusals(other, &a()).0,
        vec![(6, Pattern::ConditionalLabel, "A".to_string())]
    );
}

#[test]
fn a_macro_defined_under_a_condition() {
    refused_alone(
        "#ifdef A\n#define LOG(x) puts(x)\n#else\n#define LOG(x)\n#endif\n",
        &[2, 4],
        Pattern::ConditionalMacro,
    );
    // The feature's own macro, set in an undefined-when-off idiom.
    refused_alone(
        "#ifndef A\n#define A 0\n#endif\n",
        &[2],
        Pattern::ConditionalMacro,
    );
    refused_alone("#define SIZE (A * 2)\n", &[1], Pattern::MacroDefinitionUse);
}

#[test]
fn a_condition_over_a_feature_and_other_macros_takes_the_features_it_shares() {
    let (refused, encoded) = refusals(
        "void f(void) {\n#if defined(A) && defined(__x86_64__)\n  g();\n#endif\n#if defined(A) || defined(B)\n  h();\n#endif\n}\n",
        &a(),
    );
    // A is mixed with another macro; B then shares a condition with the build-only A.
    assert_eq!(
        refused,
        vec![
            (2, Pattern::MixedCondition, "A".to_string()),
            (5, Pattern::MixedCondition, "B".to_string())
        ]
    );
    assert!(encoded.is_empty());
}

#[test]
fn globals_or_types_declared_in_two_branches() {
    refused_alone(
        "#ifdef A\nstatic int size = 4;\n#else\nstatic int size = 8;\n#endif\n",
        &[1],
        Pattern::DeclaredInTwoBranches,
    );
    // In one branch only: kept in every variant, encoded.
    let (refused, _) = refusals("#ifdef A\nstatic int extra = 4;\n#endif\n", &a());
    assert!(refused.is_empty());
}

#[test]
fn function_variants_that_cannot_be_dispatched() {
    refused_alone(
        "#ifdef A\nint f(int n, ...) { return n; }\n#else\nint f(int n, ...) { return 0; }\n#endif\n",
        &[1],
        Pattern::FunctionSignature,
    );
}

#[test]
fn refusals_read_as_file_line_feature_and_pattern() {
    let file = SourceFile {
        path: "src/p.c".into(),
        text: "struct s {\n#ifdef A\n int y;\n#endif\n};\n".into(),
    };
    let simulator = variants::encode(&[file], &a());
    assert_eq!(
        simulator.refusals[0].to_string(),
        "src/p.c:2: A stays build-only: a struct, union or enum member"
    );
}

#[test]
fn a_feature_redefined_under_other_macros_stops_the_simulator_build_where_it_applies() {
    let valued = vec![Feature::valued("A", "a")];
    let file = SourceFile {
        path: "h.h".into(),
        text: "#if defined(FREESTANDING)\n#  define A 0\n#endif\nint f(void) { return A; }\n"
            .into(),
    };
    let simulator = variants::encode(&[file], &valued);
    assert!(simulator.refusals.is_empty(), "{:?}", simulator.refusals);
    let text = &simulator.files[0].text;
    assert!(
        text.contains("#error \"h.h:2: this redefines a feature"),
        "{text}"
    );
    assert!(text.contains("return (knobs_feature_A ? 1 : 0);"), "{text}");
}
