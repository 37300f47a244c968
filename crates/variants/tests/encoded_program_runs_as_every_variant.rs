//! The simulator of a real C program, built with clang, run in every configuration of its
//! features, prints what the real variant (built with the features' macros) prints.

use std::path::{Path, PathBuf};
use std::process::Command;

use variants::{Feature, SourceFile};

fn clang() -> &'static str {
    "clang-19"
}

fn build(dir: &Path, name: &str, sources: &[PathBuf], defines: &[String]) -> PathBuf {
    let out = dir.join(name);
    let status = Command::new(clang())
        .args(["-O1", "-w", "-o"])
        .arg(&out)
        .args(sources)
        .args(defines)
        .status()
        .expect("clang-19 runs");
    assert!(status.success(), "{name} builds");
    out
}

fn run(binary: &Path, env: &[(String, String)]) -> String {
    let out = Command::new(binary)
        .arg("6")
        .envs(env.iter().cloned())
        .output()
        .expect("runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Every configuration of `features`: the real variant's defines, and the simulator's env.
fn check_every_variant(dir: &Path, source: &Path, features: &[Feature]) -> variants::Simulator {
    let text = std::fs::read_to_string(source).unwrap();
    let path = source.display().to_string();
    let simulator = variants::encode(&[SourceFile { path, text }], features);
    assert!(simulator.refusals.is_empty(), "{:?}", simulator.refusals);
    let encoded = dir.join("encoded.c");
    std::fs::write(&encoded, &simulator.files[0].text).unwrap();
    let features_c = dir.join("features.c");
    std::fs::write(&features_c, simulator.features_source()).unwrap();
    let sim = build(dir, "simulator", &[encoded, features_c], &[]);
    for mask in 0..(1usize << features.len()) {
        let mut defines = Vec::new();
        let mut env = Vec::new();
        for (i, f) in features.iter().enumerate() {
            let on = mask & (1 << i) != 0;
            let value = if on { &f.on } else { &f.off };
            if let variants::MacroValue::Defined(v) = value {
                defines.push(format!("-D{}={v}", f.macro_name));
            }
            env.push((f.env_var(), u8::from(on).to_string()));
        }
        let real = build(
            dir,
            &format!("variant{mask}"),
            &[source.to_path_buf()],
            &defines,
        );
        assert_eq!(
            run(&sim, &env),
            run(&real, &[]),
            "configuration {defines:?}"
        );
    }
    simulator
}

fn temp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_bundled_scanner_is_encoded_whole() {
    let dir = temp("variants-scanner");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ifdef/scanner.c");
    let features = [
        Feature::defined_when_on("LOGGING", "logging"),
        Feature::defined_when_on("COLOR_SCAN", "color_scan"),
        Feature::defined_when_on("AUTO_SCAN", "auto_scan"),
    ];
    let simulator = check_every_variant(&dir, &source, &features);
    assert_eq!(simulator.encoded.len(), 3);
    // Three statement groups in main and one in log_page, three definition groups.
    assert_eq!(simulator.decisions, 7);
    let map: Vec<(String, Vec<String>)> = simulator
        .feature_functions
        .iter()
        .map(|f| (f.function.clone(), f.features.clone()))
        .collect();
    let owned = |f: &str, fs: &[&str]| (f.to_string(), fs.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        map,
        vec![
            owned("scan_colors", &["COLOR_SCAN"]),
            owned("adjust_contrast", &["AUTO_SCAN"]),
            owned("log_adjustment", &["AUTO_SCAN"]),
            owned("log_page", &["LOGGING"]),
        ]
    );
    // The blocks inside main and log_page that run exactly where a feature is selected are
    // traced as its code: marker calls around them (every variant still prints the same).
    let blocks: Vec<(usize, Vec<String>)> = simulator
        .feature_blocks
        .iter()
        .map(|b| (b.line, b.options.clone()))
        .collect();
    let options = |o: &str| vec![o.to_string()];
    assert_eq!(
        blocks,
        vec![
            (41, options("auto_scan")),
            (52, options("auto_scan")),
            (56, options("color_scan")),
            (59, options("logging")),
        ]
    );
    // Each is marked as its feature's for family-based measurement.
    let text = &simulator.files[0].text;
    assert!(
        text.contains(&format!(
            "if (knobs_feature_AUTO_SCAN) {{ {}(2, \"auto_scan\");",
            variants::FEATURE_BLOCK_ENTER
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "; {}(2, \"auto_scan\");}} else {{}}",
            variants::FEATURE_BLOCK_EXIT
        )),
        "{text}"
    );
    assert!(
        text.contains("__attribute__((annotate(\"knobs:feature=color_scan\"))) static unsigned long scan_colors"),
        "{text}"
    );
}

const MIXED: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#ifndef FAST
#  define FAST 0
#endif
static int table[4] = {1, 2, 3, 4};
#if FAST
static int step(int x, int y) { return x * 2 + y; }
#elif defined(WIDE)
static int step(int x, int y) { return x * 3 - y; }
#else
static int step(int x, int y) { return x + y; }
#endif
static void report(int v) { printf("%d\n", v); }
typedef struct { int v[2]; } pair;
static int heap_or_stack(int n) {
#if FAST
    int *p = malloc(sizeof(int) * 2);
    if (!p) return 0;
#else
    pair s;
    int *const p = s.v;
#endif
    p[0] = n;
    p[1] = n * 2;
    int r = p[0] + p[1];
#if FAST
    free(p);
#endif
    return r;
}
int main(int argc, char **argv) {
    int total = argc;
    int chunk = 16 << FAST;
    for (int i = 0; i < 4; i++) {
        total += table[i];
#ifdef WIDE
        switch (i) {
        case 1: total += 100; break;
        default: total += 1;
        }
#endif
#if FAST && defined(WIDE)
        total *= 2;
#elif !FAST
        total += step(i, chunk);
#else
        {
            int local = step(total, i);
            total ^= local;
        }
#endif
    }
#ifdef WIDE
    if (total > 1000) goto wide_done;
    total += 7;
wide_done:
#endif
    report(total + chunk + heap_or_stack(total));
    return 0;
}
"#;

#[test]
fn elif_chains_valued_macros_and_switches_are_encoded() {
    let dir = temp("variants-mixed");
    let source = dir.join("mixed.c");
    std::fs::write(&source, MIXED).unwrap();
    // FAST is -DFAST=1 / -DFAST=0 (the default idiom above is dead in both), WIDE #ifdef style.
    let features = [
        Feature::valued("FAST", "fast"),
        Feature::defined_when_on("WIDE", "wide"),
    ];
    let simulator = check_every_variant(&dir, &source, &features);
    // Traced: the blocks that run exactly where their features are selected, a conjunction
    // as both (nested markers), the switch and the goto with their jumps inside. Not: the
    // `#elif`/`#else` branches (they run where a feature is not selected).
    let blocks: Vec<(usize, Vec<&str>)> = simulator
        .feature_blocks
        .iter()
        .map(|b| (b.line, b.options.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        blocks,
        vec![
            (18, vec!["fast"]),
            (28, vec!["fast"]),
            (38, vec!["wide"]),
            (44, vec!["fast", "wide"]),
            (55, vec!["wide"]),
        ]
    );
}

/// A header with a traced block, included by a file with one of its own: the markers are
/// defined once in the translation unit, and the program builds.
#[test]
fn markers_in_a_header_and_its_includer_build() {
    let dir = temp("variants-header-markers");
    let header =
        "static inline int twice(int x) {\n#ifdef WIDE\n    x *= 2;\n#endif\n    return x;\n}\n";
    let main = "#include <stdio.h>\n#include \"h.h\"\nint main(void) {\n    int v = 1;\n#ifdef WIDE\n    v += 10;\n#endif\n    printf(\"%d\\n\", twice(v));\n    return 0;\n}\n";
    let files = [
        SourceFile {
            path: "h.h".into(),
            text: header.into(),
        },
        SourceFile {
            path: "m.c".into(),
            text: main.into(),
        },
    ];
    let simulator = variants::encode(&files, &[Feature::defined_when_on("WIDE", "wide")]);
    assert_eq!(simulator.feature_blocks.len(), 2, "{simulator:?}");
    for file in &simulator.files {
        std::fs::write(dir.join(&file.path), &file.text).unwrap();
    }
    let features_c = dir.join("features.c");
    std::fs::write(&features_c, simulator.features_source()).unwrap();
    let sim = build(&dir, "simulator", &[dir.join("m.c"), features_c], &[]);
    let out = Command::new(&sim)
        .env("KNOBS_FEATURE_WIDE", "1")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "22\n");
}
