#!/usr/bin/env bash
# What the variant simulator (crates/variants) can encode of real programs' compile-time
# features: LZ4 1.9.4's LZ4_HEAPMODE, LZ4HC_HEAPMODE and LZ4_FAST_DEC_LOOP, and SQLite
# 3.40.1's recommended compile-time options (its amalgamation and shell), from Debian's
# pinned source packages. Per program: the features encoded, those that stay build-only, the
# refused annotations by pattern, each with file:line, and the encoding's time. Nothing is
# built or run. The table lands in docs/results/studies/variants-refusals-DATE-COMMIT.md.
#
#   bench/variants/refusals.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
log() { echo "refusals.sh: $*" >&2; }
. scripts/debian-source.sh
cargo build --release -q -p variants --example encode
encode=$root/target/release/examples/encode
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The pins of bench/subjects.toml (examples/lz4 and examples/sqlite3 fetch the same).
debian_source lz4 1.9.4-1 e16302bca544d08d106efc216541f4a0403c8f8a5fad5eaac7588223a55af263 \
    "$work/lz4" programs/lz4cli.c
lz4_src=$src
debian_source sqlite3 3.40.1-2+deb12u2 \
    ee3459ae9d00939741c7708fc1b8ce1bde12d8c3fb1dfa005bbbc8651d884e23 "$work/sqlite3" src/shell.c.in
command -v tclsh8.6 >/dev/null || { log "SQLite's amalgamation needs tclsh8.6 (apt-get install tcl8.6)"; exit 2; }
mkdir -p "$work/sqlite3/gen"
log "generating SQLite's amalgamation"
(cd "$work/sqlite3/gen" && "$src/configure" -q CC=clang-19 --disable-tcl --disable-readline \
    >configure.log 2>&1 && make -j2 sqlite3.c shell.c >make.log 2>&1)

run() { # NAME ROOT FEATURES... -- FILES...
  local name=$1 dir=$2; shift 2
  mkdir -p "$work/out-$name"
  local start end
  start=$(date +%s.%N)
  "$encode" "$work/out-$name" "$dir" "$@" > "$work/$name.txt"
  end=$(date +%s.%N)
  echo "$end - $start" | bc > "$work/$name.seconds"
}
run lz4 "$lz4_src" LZ4_HEAPMODE=1/0 LZ4HC_HEAPMODE=1/0 LZ4_FAST_DEC_LOOP=1/0 -- \
    lib/lz4.c lib/lz4.h lib/lz4hc.c lib/lz4hc.h lib/lz4frame.c lib/lz4frame.h lib/xxhash.c \
    programs/lz4cli.c programs/lz4io.c programs/bench.c programs/datagen.c programs/util.h
# SQLite's recommended options (https://sqlite.org/compile.html#recommended_compile_time_options)
# that are boolean; the selected value first.
run sqlite3 "$work/sqlite3/gen" SQLITE_DQS=0/3 SQLITE_THREADSAFE=0/1 SQLITE_DEFAULT_MEMSTATUS=0/1 \
    SQLITE_DEFAULT_WAL_SYNCHRONOUS=1/2 SQLITE_LIKE_DOESNT_MATCH_BLOBS SQLITE_MAX_EXPR_DEPTH=0/1000 \
    SQLITE_OMIT_DECLTYPE SQLITE_OMIT_DEPRECATED SQLITE_OMIT_PROGRESS_CALLBACK \
    SQLITE_OMIT_SHARED_CACHE SQLITE_USE_ALLOCA SQLITE_OMIT_AUTOINIT -- sqlite3.c shell.c

commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+"
day=$(date -u +%Y-%m-%d)
out=docs/results/studies/variants-refusals-$day-${commit%+}.md
python3 - "$work" "$out" "$commit" <<'PY'
import collections, datetime, platform, re, sys
work, out, commit = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
lines = [
    "# What the variant simulator encodes of real programs' compile-time features", "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
    f"- commit: {commit}", f"- machine: {cpu}", "- command: `bench/variants/refusals.sh`", "",
    "Each feature is a boolean build option setting one macro; a refused annotation makes its feature",
    "build-only (with every feature sharing a condition with it). Sources: Debian's lz4 1.9.4-1 and",
    "sqlite3 3.40.1-2+deb12u2 (the amalgamation and shell.c, 250 k lines).", "",
]
for name in ("lz4", "sqlite3"):
    text = open(f"{work}/{name}.txt").read().splitlines()
    refusals = [l for l in text if " stays build-only: " in l]
    encoded = next(l for l in text if l.startswith("encoded:")).split(":", 1)[1].strip()
    build_only = next(l for l in text if l.startswith("build-only:")).split(":", 1)[1].strip()
    seconds = float(open(f"{work}/{name}.seconds").read())
    by_pattern = collections.Counter(l.split(" stays build-only: ")[1] for l in refusals)
    lines += [f"## {name}", "", f"- encoded: {encoded}", f"- build-only: {build_only}",
              f"- encoding time: {seconds:.2f} s", "", "| pattern | refused annotations |", "|---|---|"]
    lines += [f"| {p} | {n} |" for p, n in by_pattern.most_common()]
    lines += ["", "<details><summary>every refused annotation</summary>", "", "```"] + refusals + ["```", "", "</details>", ""]
open(out, "w").write("\n".join(lines))
print(out)
PY
