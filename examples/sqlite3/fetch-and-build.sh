#!/usr/bin/env bash
# Fetch SQLite from Debian (bookworm: 3.40.1) and build its command-line shell twice from the
# same source:
#
#   build/sqlite3      native, -O2: the program `knobs measure` runs (brute-force ground truth)
#   build/sqlite3.bc   LLVM bitcode of the whole shell (shell.c + the amalgamation sqlite3.c,
#                      ~270k lines), unoptimised: what `knobs crush` analyses and instruments
#                      ([build] bitcode in knobs.toml)
#
# Debian ships SQLite's full source tree, not the amalgamation: `configure` and
# `make sqlite3.c shell.c` generate them (tclsh8.6 runs tool/mksqlite3c.tcl and
# tool/mkshellc.tcl; lemon and mkkeywordhash are built with clang-19 on the way). The shell
# and the library are then compiled directly, two translation units, without libtool.
#
# The bitcode is compiled with `-O2 -g -Xclang -disable-llvm-passes -flto`, as for
# examples/gzip-whitebox: clang's front end at -O2 (TBAA, lifetime markers, no optnone) but no
# LLVM pass, so the IR is as unoptimised as at -O0 and knobs' own mem2reg makes it SSA.
#
# Both builds use the same switches: Debian's (debian/rules) where they change what the core
# does (-fno-strict-aliasing, SECURE_DELETE on by default, no lookaside, LIKE not matching
# blobs, URI file names, the schema-retry and variable limits, rowid in views), but
#   - single-threaded: -DSQLITE_THREADSAFE=0 (no mutexes, no pthread code), where Debian
#     builds with 1;
#   - -DSQLITE_OMIT_LOAD_EXTENSION (no dlopen) and no readline (plain fgets input);
#   - none of the optional extensions Debian adds (FTS3/4/5, R-Tree, sessions, dbstat,
#     stmt vtab, ...): code the workload never runs, and a larger program to analyse.
# SQLite has no assembler (x86 rdtsc in the optional profiling code is inline asm behind
# SQLITE_DEBUG / VDBE_PROFILE, neither defined). So the program knobs instruments is the
# program it measures natively (only the optimisation level differs).
#
# Idempotent: every step is skipped when its result exists; everything lives under
# examples/sqlite3/build/ (git-ignored). Needs network access the first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

# Same switches for both builds (see above).
defines=(
    -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION
    -DSQLITE_SECURE_DELETE -DSQLITE_OMIT_LOOKASIDE=1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS
    -DSQLITE_USE_URI=1 -DSQLITE_MAX_SCHEMA_RETRY=25 -DSQLITE_MAX_VARIABLE_NUMBER=250000
    -DSQLITE_ALLOW_ROWID_IN_VIEW
)
common_cflags=(-fno-strict-aliasing "${defines[@]}")

# --- 1. the source ------------------------------------------------------------------------
# Pinned: this version of Debian's source package, whose .dsc must have this SHA-256.
# bench/subjects.toml pins the same and passes them in the environment.
debian_source sqlite3 "${KNOBS_SOURCE_VERSION:-3.40.1-2+deb12u2}" \
    "${KNOBS_SOURCE_SHA256:-ee3459ae9d00939741c7708fc1b8ce1bde12d8c3fb1dfa005bbbc8651d884e23}" \
    "$build" src/shell.c.in

# --- 2. the amalgamation: sqlite3.c, sqlite3.h and shell.c, generated --------------------
gen="$build/gen"
if [ ! -f "$gen/sqlite3.c" ] || [ ! -f "$gen/shell.c" ]; then
    if ! command -v tclsh8.6 >/dev/null; then
        log "installing tcl8.6 (tclsh generates the amalgamation)"
        sudo_ apt-get install -y tcl8.6
    fi
    rm -rf "$gen" && mkdir -p "$gen"
    log "generating the amalgamation (configure; make sqlite3.c shell.c)"
    (cd "$gen" && "$src/configure" -q CC=clang-19 --disable-tcl --disable-readline \
        >configure.log 2>&1 \
        && make -j2 sqlite3.c shell.c >make.log 2>&1) \
        || { log "generating the amalgamation failed; see $gen/*.log"; exit 1; }
fi

# --- 3. native build (-O2) ----------------------------------------------------------------
if [ ! -x "$build/sqlite3" ]; then
    rm -rf "$build/native" && mkdir -p "$build/native"
    log "native build (clang-19 -O2)"
    # the two translation units in parallel (-j2)
    pids=()
    for s in sqlite3 shell; do
        clang-19 -O2 -g "${common_cflags[@]}" -I"$gen" -c "$gen/$s.c" -o "$build/native/$s.o" &
        pids+=($!)
    done
    wait "${pids[0]}" && wait "${pids[1]}" || { log "native build failed"; exit 1; }
    clang-19 -o "$build/native/sqlite3" "$build/native/shell.o" "$build/native/sqlite3.o" -lm
    cp "$build/native/sqlite3" "$build/sqlite3"
fi

# --- 4. bitcode build (-flto: every object is LLVM bitcode) -------------------------------
bc_cflags="-O2 -g -Xclang -disable-llvm-passes -flto"
if [ ! -f "$build/sqlite3.bc" ] || [ "$(cat "$build/sqlite3.bc.cflags" 2>/dev/null)" != "$bc_cflags" ]; then
    rm -rf "$build/bitcode" && mkdir -p "$build/bitcode"
    log "bitcode build (clang-19 $bc_cflags)"
    pids=()
    for s in sqlite3 shell; do
        # shellcheck disable=SC2086
        clang-19 $bc_cflags "${common_cflags[@]}" -I"$gen" -c "$gen/$s.c" -o "$build/bitcode/$s.o" &
        pids+=($!)
    done
    wait "${pids[0]}" && wait "${pids[1]}" || { log "bitcode build failed"; exit 1; }
    link_program_bitcode "$build/sqlite3.bc" "$build/bitcode/shell.o" "$build/bitcode/sqlite3.o"
    echo "$bc_cflags" > "$build/sqlite3.bc.cflags"
fi
log "native:  $build/sqlite3 ($("$build/sqlite3" -version | cut -d' ' -f1-2))"
log "bitcode: $build/sqlite3.bc ($(du -h "$build/sqlite3.bc" | cut -f1))"
