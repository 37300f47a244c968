#!/usr/bin/env bash
# Fetch Zstandard from Debian (bookworm: source package libzstd, zstd 1.5.4) and build the
# zstd command-line program twice from the same source:
#
#   build/zstd      native, -O2 -g: the program `knobs measure` runs (brute-force ground truth)
#   build/zstd.bc   LLVM bitcode of the whole program (programs/*.c and lib/{common,compress,
#                   decompress,dictBuilder}/*.c, what main reaches), unoptimised: what the
#                   white-box approaches analyse and instrument ([build] bitcode in knobs.toml)
#
# The bitcode is compiled with `-O2 -g -Xclang -disable-llvm-passes -flto`, as for
# examples/gzip-whitebox: clang's front end at -O2 (TBAA, lifetime markers, no optnone) but
# no LLVM pass, so the IR is as unoptimised as at -O0 and knobs' own mem2reg makes it SSA.
#
# Both builds use upstream's programs/Makefile (the `zstd` target; Debian builds the same
# sources with CMake) with the same switches, chosen so that the analysed program is one
# single-threaded C program:
#
#   HAVE_THREAD=0           no -DZSTD_MULTITHREAD, no -pthread: no worker pool (zstdmt),
#                           so -T/--adapt/--rsyncable have nothing to run on
#   HAVE_ZLIB/LZMA/LZ4=0    only the .zst format (no --format=gzip/xz/lz4)
#   ZSTD_LEGACY_SUPPORT=0   no decoders of pre-1.0 formats (lib/legacy)
#   ZSTD_NO_ASM=1           -DZSTD_DISABLE_ASM, and decompress/huf_decompress_amd64.S is not
#                           built (the C Huffman decoder; assembler cannot be bitcode)
#   -DZSTD_NOBENCH -DZSTD_NODICT -DZSTD_NOTRACE -DZSTD_TRACE=0
#                           no -b benchmark, no --train, no --trace in the CLI, no trace hooks
#                           in the library (code the workload never runs, left out)
#
# Only the optimisation passes differ between the two, so the program knobs instruments is the
# program it measures natively.
#
# Idempotent: every step is skipped when its result exists; everything lives under
# examples/zstd/build/ (git-ignored). Needs network access the first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

# --- 1. the source ------------------------------------------------------------------------
# Pinned: this version of Debian's source package, whose .dsc must have this SHA-256.
# bench/subjects.toml pins the same and passes them in the environment.
debian_source libzstd "${KNOBS_SOURCE_VERSION:-1.5.4+dfsg2-5}" \
    "${KNOBS_SOURCE_SHA256:-8f602f92b575aa8b5e979196fb6ee82d78f233521dc9636526d3ecba1f63c1b1}" \
    "$build" programs/zstdcli.c

# Same switches for both builds (see above). CFLAGS, CPPFLAGS and LDFLAGS go through the
# environment: programs/Makefile appends its own (-DXXH_NAMESPACE=ZSTD_, -DZSTD_DISABLE_ASM,
# warnings) to them, which command-line variables would replace.
make_vars=(HAVE_THREAD=0 HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 ZSTD_LEGACY_SUPPORT=0 ZSTD_NO_ASM=1)
cppflags="-DZSTD_NOBENCH -DZSTD_NODICT -DZSTD_NOTRACE -DZSTD_TRACE=0"

# make_zstd OBJDIR CFLAGS LDFLAGS: the `zstd` target with its objects in OBJDIR; the program
# is OBJDIR/zstd (the Makefile also copies it to programs/zstd in the source, which we ignore).
make_zstd() {
    local obj="$1" cflags="$2" ldflags="$3"
    CPPFLAGS="$cppflags" CFLAGS="$cflags" LDFLAGS="$ldflags" \
        make -j2 -C "$src/programs" CC=clang-19 "${make_vars[@]}" BUILD_DIR="$obj" zstd
}

# --- 2. native build (-O2) ----------------------------------------------------------------
if [ ! -x "$build/zstd" ]; then
    rm -rf "$build/native" && mkdir -p "$build/native/obj"
    log "native build (clang-19 -O2 -g)"
    make_zstd "$build/native/obj" "-O2 -g" "" >"$build/native/make.log" 2>&1 \
        || { log "native build failed; see $build/native/make.log"; exit 1; }
    grep -q "no threads, building without multithreading" "$build/native/make.log" \
        || { log "native build is multi-threaded; see $build/native/make.log"; exit 1; }
    cp "$build/native/obj/zstd" "$build/zstd"
fi

# --- 3. bitcode build (-flto: every object is LLVM bitcode) -------------------------------
bc_cflags="-O2 -g -Xclang -disable-llvm-passes -flto"
if [ ! -f "$build/zstd.bc" ] || [ "$(cat "$build/zstd.bc.cflags" 2>/dev/null)" != "$bc_cflags" ]; then
    rm -rf "$build/bitcode" && mkdir -p "$build/bitcode/obj"
    log "bitcode build (clang-19 $bc_cflags)"
    # The program is linked too (gold with LLVM's plugin), which checks that the objects make
    # a whole program; what is analysed is the objects linked by llvm-link below.
    make_zstd "$build/bitcode/obj" "$bc_cflags" "-flto -fuse-ld=gold" \
        >"$build/bitcode/make.log" 2>&1 \
        || { log "bitcode build failed; see $build/bitcode/make.log"; exit 1; }
    # Every object the Makefile linked into zstd: the CLI's and the library's (no .S file).
    link_program_bitcode "$build/zstd.bc" "$build"/bitcode/obj/*.o
    if llvm-nm-19 "$build/zstd.bc" | grep -w -e pthread_create -e ZSTDMT_createCCtx >/dev/null; then
        log "$build/zstd.bc has thread code"; exit 1
    fi
    echo "$bc_cflags" > "$build/zstd.bc.cflags"
fi
log "native:  $build/zstd ($("$build/zstd" --version | head -1))"
log "bitcode: $build/zstd.bc ($(du -h "$build/zstd.bc" | cut -f1))"
