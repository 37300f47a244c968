//! SPLat on options kept the way zstd keeps them: set through one setter into nested structs
//! of a parameter struct (`params.ldm.enable`, `params.frame.checksum`), copied whole into the
//! context's applied parameters when work starts, and read there, directly or by a function
//! given the nested struct by value (a copy of another type). A source naming the nested
//! struct's field of the parameter struct (`ldm`, `frame`) must be reached by reads of its
//! members in the copy and in the by-value copy; when it was not, SPLat saw only `fast` and
//! explored 2 of 8 configurations.

use std::path::Path;

use instrumented::{Session, Settings, Silent};
use measure::SystemSpec;
use splat::{Options, Reach};

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>

typedef struct { int content_size; int checksum; } frame_params;
/* Larger than two registers, so passed by value as a copy in memory (zstd's ldmParams_t). */
typedef struct { int enable; int window_log; int bucket_log; int min_match; int hash_rate; } ldm_params;
typedef struct { int level; ldm_params ldm; frame_params frame; } params;
typedef struct { params requested; params applied; unsigned long sum; } context;

enum parameter { LEVEL, LONG, CHECKSUM };

static void set_parameter(context *ctx, enum parameter p, int value) {
  switch (p) {
  case LEVEL: ctx->requested.level = value; break;
  case LONG: ctx->requested.ldm.enable = value; break;
  case CHECKSUM: ctx->requested.frame.checksum = value; break;
  }
}

static unsigned long work(unsigned long n, unsigned long seed) {
  for (unsigned long i = 0; i < n; i++) seed = seed * 6364136223846793005UL + i;
  return seed;
}

__attribute__((noinline)) static unsigned long ldm_work(ldm_params ldm, unsigned long seed) {
  if (ldm.enable)
    return work(30000, seed);
  return 0;
}

static void compress(context *ctx) {
  ctx->applied = ctx->requested;
  ctx->sum = work(ctx->applied.level ? 20000 : 40000, 1);
  ctx->sum += ldm_work(ctx->applied.ldm, ctx->sum);
  if (ctx->applied.frame.checksum)
    ctx->sum += work(10000, ctx->sum);
}

int main(int argc, char **argv) {
  int fast = 0, longer = 0, check = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--fast")) fast = 1;
    if (!strcmp(argv[i], "--long")) longer = 1;
    if (!strcmp(argv[i], "--no-check")) check = 0;
  }
  context *ctx = calloc(1, sizeof *ctx);
  set_parameter(ctx, LEVEL, fast);
  set_parameter(ctx, LONG, longer);
  set_parameter(ctx, CHECKSUM, check);
  compress(ctx);
  return ctx->sum == 42;
}
"#;

const SPEC: &str = r#"
name = "nested"

[build]
sources = ["prog.c"]

[run]
program = "./prog"
args = ["{options}"]
timeout = 30

[measure]
repetitions = 1
warmup = 0
metric = "wall"

[[workload]]
name = "default"

[[option]]
name = "fast"
on = ["--fast"]
source = { struct = "params", field = "level" }

[[option]]
name = "long"
on = ["--long"]
source = { struct = "params", field = "ldm" }

[[option]]
name = "nocheck"
on = ["--no-check"]
source = { struct = "params", field = "frame" }
"#;

fn setup(dir: &Path) {
    std::fs::write(dir.join("prog.c"), PROGRAM).unwrap();
    std::fs::write(dir.join("knobs.toml"), SPEC).unwrap();
    let status = std::process::Command::new("clang-19")
        .args(["-O2", "-o", "prog", "prog.c"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn options_in_nested_struct_fields_are_reached_through_a_struct_copy() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    for reach in [Reach::Read, Reach::Decision] {
        let session = Session {
            spec: SystemSpec::load(&dir.path().join("knobs.toml")).unwrap(),
            workload: "default".into(),
            store_path: dir.path().join("knobs.db"),
            settings: Settings::new(dir.path().join(format!("work-{reach:?}"))),
        };
        let options = Options {
            reach,
            model_path: Some(dir.path().join(format!("model-{reach:?}.json"))),
            ..Options::default()
        };
        let report = splat::run(&session, &options, &mut Silent).unwrap();
        let context = format!("{reach:?}: {:?}", report.paths);
        assert_eq!(report.reached, ["fast", "long", "nocheck"], "{context}");
        assert!(report.unreached.is_empty(), "{context}");
        assert_eq!(report.paths.len(), 8, "{context}");
        assert!(report.complete, "{context}");
        // Every path reached every option: flipping the last (nocheck) needs no run.
        assert_eq!(report.taint_runs, 4, "{context}");
        // The program reads (and decides on) the level, then LDM, then the checksum.
        for path in &report.paths {
            let order: Vec<&str> = path
                .reached
                .iter()
                .map(|l| l.split('=').next().unwrap())
                .collect();
            assert_eq!(order, ["fast", "long", "nocheck"], "{context}");
        }
    }
}
