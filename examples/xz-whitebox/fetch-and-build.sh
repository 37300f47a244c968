#!/usr/bin/env bash
# Fetch XZ Utils from Debian (bookworm: 5.4.1) and build it twice from the same source:
#
#   build/xz        native, -O2: the program `knobs measure` runs (brute-force ground truth)
#   build/xz.bc     LLVM bitcode of the whole xz program (src/xz + the liblzma code main
#                   reaches), unoptimised: what `knobs crush` analyses and instruments
#                   ([build] bitcode in knobs.toml)
#
# The bitcode is compiled with `-O2 -Xclang -disable-llvm-passes -flto`: clang's front end at
# -O2 (type-based alias metadata, lifetime markers, no optnone) but no LLVM pass at all, so
# the IR is as unoptimised as at -O0 (every local in an alloca, no inlining) and knobs' own
# mem2reg makes it SSA. With `-O0 -Xclang -disable-O0-optnone` instead, the program knobs
# links from it (clang-19 -O2) was 1.4x slower than the native -O2 build (CPU time, -6,
# no probes): -O0 IR has no TBAA, so the late -O2 cannot optimise liblzma's match finder
# as well. That gap would count as "instrumentation overhead" and as model error against
# the native ground truth.
#
# Both builds use the same configure switches, so the program knobs instruments is the
# program it measures natively (only the optimisation level differs).
#
# Idempotent: every step is skipped when its result exists; everything lives under
# examples/xz-whitebox/build/ (git-ignored). Needs network access the first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

# Same switches for both builds. Threads are disabled (single-threaded xz, no pthread code in
# the analysed program; -T is then accepted and ignored), as are the tools and docs we do not
# need. The x86-64 CRC code in 5.4 is C (no assembler), and the CLMUL CRC is disabled so that
# no ifunc resolver sits between the program and its CRC functions.
common_conf=(--disable-shared --enable-static --disable-nls --disable-threads
             --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-lzma-links
             --disable-scripts --disable-doc --disable-clmul-crc)

# --- 1. the source ------------------------------------------------------------------------
# Pinned: this version of Debian's source package, whose .dsc must have this SHA-256.
# bench/subjects.toml pins the same and passes them in the environment.
debian_source xz-utils "${KNOBS_SOURCE_VERSION:-5.4.1-1+deb12u1}" \
    "${KNOBS_SOURCE_SHA256:-38f98e356f7e7e89b0920d39c55dd5f3d1a9f2684bff83c8b4890561e1832e94}" \
    "$build" configure.ac

# --- 2. native build (-O2) ----------------------------------------------------------------
if [ ! -x "$build/xz" ]; then
    rm -rf "$build/native" && mkdir -p "$build/native"
    log "native build (clang-19 -O2)"
    (cd "$build/native" && "$src/configure" -q "${common_conf[@]}" \
        CC=clang-19 CFLAGS="-O2 -g" >configure.log 2>&1 \
        && make -j"$(nproc)" >make.log 2>&1) \
        || { log "native build failed; see $build/native/*.log"; exit 1; }
    cp "$build/native/src/xz/xz" "$build/xz"
fi

# --- 3. bitcode build (-flto: every object is LLVM bitcode) -------------------------------
bc_cflags="-O2 -g -Xclang -disable-llvm-passes -flto"
if [ ! -f "$build/xz.bc" ] || [ "$(cat "$build/xz.bc.cflags" 2>/dev/null)" != "$bc_cflags" ]; then
    rm -rf "$build/bitcode" && mkdir -p "$build/bitcode"
    log "bitcode build (clang-19 $bc_cflags)"
    (cd "$build/bitcode" && "$src/configure" -q "${common_conf[@]}" \
        CC=clang-19 AR=llvm-ar-19 RANLIB=llvm-ranlib-19 NM=llvm-nm-19 \
        CFLAGS="$bc_cflags" LDFLAGS="-flto -fuse-ld=gold" \
        >configure.log 2>&1 \
        && make -j"$(nproc)" >make.log 2>&1) \
        || { log "bitcode build failed; see $build/bitcode/*.log"; exit 1; }
    b="$build/bitcode"
    # The xz program's own objects (src/xz/*.c and the tuklib files it compiles in) ...
    mapfile -t xz_objs < <(ls "$b"/src/xz/*.o)
    # ... and liblzma, as the static archive's members.
    rm -rf "$b/lzma-objs" && mkdir -p "$b/lzma-objs"
    (cd "$b/lzma-objs" && llvm-ar-19 x "$b/src/liblzma/.libs/liblzma.a")
    check_bitcode "$b"/lzma-objs/*.o
    llvm-link-19 -o "$b/lzma.bc" "$b"/lzma-objs/*.o
    link_program_bitcode "$build/xz.bc" "${xz_objs[@]}" "$b/lzma.bc"
    echo "$bc_cflags" > "$build/xz.bc.cflags"
fi
log "native:  $build/xz ($("$build/xz" --version | head -1))"
log "bitcode: $build/xz.bc ($(du -h "$build/xz.bc" | cut -f1))"
