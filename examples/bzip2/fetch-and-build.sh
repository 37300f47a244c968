#!/usr/bin/env bash
# Fetch bzip2 from Debian (bookworm: 1.0.8) and build it twice from the same source:
#
#   build/bzip2      native, -O2: the program `knobs measure` runs (brute-force ground truth)
#   build/bzip2.bc   LLVM bitcode of the whole bzip2 program (bzip2.c and libbz2's C files:
#                    blocksort, huffman, crctable, randtable, compress, decompress, bzlib),
#                    unoptimised: what `knobs crush` analyses and instruments ([build]
#                    bitcode in knobs.toml)
#
# The bitcode is compiled with `-O2 -g -Xclang -disable-llvm-passes -flto`, as for
# examples/gzip-whitebox (see the comment there): clang's front end at -O2 (TBAA, lifetime
# markers, no optnone) but no LLVM pass, so the IR is as unoptimised as at -O0 and knobs'
# own mem2reg makes it SSA.
#
# bzip2 has a plain Makefile (no configure), no threads and no assembler. Both builds run
# the Makefile's own object rules (`make libbz2.a bzip2.o`, with Debian's CPPFLAGS from
# debian/rules: -D_REENTRANT -D_FILE_OFFSET_BITS=64; not the hardening flags) in a copy of
# the source each, and link bzip2.o with libbz2's objects statically, as upstream's
# Makefile does (Debian's makefile.diff links bzip2 against the shared libbz2.so instead,
# which the native program would then need at run time). So the program knobs instruments
# is the program it measures natively (only the optimisation level differs).
#
# Idempotent: every step is skipped when its result exists; everything lives under
# examples/bzip2/build/ (git-ignored). Needs network access the first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

# Debian's switches (debian/rules: DEB_CPPFLAGS_MAINT_APPEND); -Wall -Winline as there.
cppflags="-D_REENTRANT -D_FILE_OFFSET_BITS=64"
warn="-Wall -Winline"
# libbz2's objects (OBJS in the Makefile) and the program's own.
objs="blocksort.o huffman.o crctable.o randtable.o compress.o decompress.o bzlib.o"

# --- 1. the source ------------------------------------------------------------------------
# Pinned: this version of Debian's source package, whose .dsc must have this SHA-256.
# bench/subjects.toml pins the same and passes them in the environment.
debian_source bzip2 "${KNOBS_SOURCE_VERSION:-1.0.8-5}" \
    "${KNOBS_SOURCE_SHA256:-ed9c40f4de3f9e064535e15eac1c61a0f606763db98f4579dbc04067b94a8944}" \
    "$build" bzlib.c

# make_objects DIR CFLAGS: a fresh copy of the source in DIR, then the Makefile's rules for
# libbz2's objects and bzip2.o (the Makefile builds in the source directory).
make_objects() {
    local dir="$1" cflags="$2"
    rm -rf "$dir" && mkdir -p "$dir"
    cp "$src"/*.c "$src"/*.h "$src"/Makefile "$dir"/
    # shellcheck disable=SC2086
    make -C "$dir" -j2 CC=clang-19 CFLAGS="$warn $cflags" CPPFLAGS="$cppflags" \
        $objs bzip2.o >"$dir/make.log" 2>&1 \
        || { log "build failed; see $dir/make.log"; exit 1; }
}

# --- 2. native build (-O2) ----------------------------------------------------------------
if [ ! -x "$build/bzip2" ]; then
    log "native build (clang-19 -O2)"
    make_objects "$build/native" "-O2 -g"
    (cd "$build/native" && clang-19 -O2 -g -o bzip2 bzip2.o $objs)
    cp "$build/native/bzip2" "$build/bzip2"
fi

# --- 3. bitcode build (-flto: every object is LLVM bitcode) -------------------------------
bc_cflags="-O2 -g -Xclang -disable-llvm-passes -flto"
if [ ! -f "$build/bzip2.bc" ] || [ "$(cat "$build/bzip2.bc.cflags" 2>/dev/null)" != "$bc_cflags" ]; then
    log "bitcode build (clang-19 $bc_cflags)"
    make_objects "$build/bitcode" "$bc_cflags"
    bc_objs=("$build/bitcode/bzip2.o")
    for o in $objs; do bc_objs+=("$build/bitcode/$o"); done
    link_program_bitcode "$build/bzip2.bc" "${bc_objs[@]}"
    echo "$bc_cflags" > "$build/bzip2.bc.cflags"
fi
log "native:  $build/bzip2 ($("$build/bzip2" --version 2>&1 < /dev/null | head -1))"
log "bitcode: $build/bzip2.bc ($(du -h "$build/bzip2.bc" | cut -f1))"
