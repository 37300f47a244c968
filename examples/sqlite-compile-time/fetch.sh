#!/usr/bin/env bash
# Fetch SQLite 3.40.1 from Debian (bookworm's source package, pinned as in examples/sqlite3)
# and generate its amalgamation into build/src: sqlite3.c, sqlite3.h and shell.c, the three
# files knobs.toml's [build] recipe compiles once per set of build-option values. Idempotent;
# everything lives under examples/sqlite-compile-time/build/ (git-ignored). Needs network
# access the first time (apt) and tclsh8.6 (installed when missing: the amalgamation's
# generators are Tcl scripts).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

debian_source sqlite3 "${KNOBS_SOURCE_VERSION:-3.40.1-2+deb12u2}" \
    "${KNOBS_SOURCE_SHA256:-ee3459ae9d00939741c7708fc1b8ce1bde12d8c3fb1dfa005bbbc8651d884e23}" \
    "$build" src/shell.c.in

# build/src holds exactly the three generated files: knobs copies it for each build.
if [ ! -f "$build/src/sqlite3.c" ] || [ ! -f "$build/src/shell.c" ]; then
    if ! command -v tclsh8.6 >/dev/null; then
        log "installing tcl8.6 (tclsh generates the amalgamation)"
        sudo_ apt-get install -y tcl8.6
    fi
    gen="$build/gen"
    rm -rf "$gen" "$build/src" && mkdir -p "$gen" "$build/src"
    log "generating the amalgamation (configure; make sqlite3.c shell.c)"
    (cd "$gen" && "$src/configure" -q CC=clang-19 --disable-tcl --disable-readline \
        >configure.log 2>&1 \
        && make -j2 sqlite3.c shell.c >make.log 2>&1) \
        || { log "generating the amalgamation failed; see $gen/*.log"; exit 1; }
    cp "$gen/sqlite3.c" "$gen/sqlite3.h" "$gen/shell.c" "$build/src/"
    rm -rf "$gen"
fi
log "source: $build/src ($(grep -m1 '#define SQLITE_VERSION ' "$build/src/sqlite3.h"))"
