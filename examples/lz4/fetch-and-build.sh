#!/usr/bin/env bash
# Fetch LZ4 from Debian (bookworm: 1.9.4) and build its command-line program twice from the
# same source:
#
#   build/lz4      native, -O2: the program `knobs measure` runs (brute-force ground truth)
#   build/lz4.bc   LLVM bitcode of the whole lz4 program (programs/*.c and the library
#                  lib/*.c it is linked from), unoptimised: what the white-box approaches
#                  analyse and instrument ([build] bitcode in knobs.toml)
#
# The bitcode is compiled with `-O2 -g -Xclang -disable-llvm-passes -flto`, as for
# examples/gzip-whitebox (see the comment there): clang's front end at -O2 but no LLVM pass.
#
# Both builds are the upstream Makefile's (top-level `make lz4`: lib/liblz4.a, then
# programs/lz4 from programs/*.c and lib/*.o), with the switches of Debian's package
# (debian/rules: -DLZ4F_PUBLISH_STATIC_FUNCTIONS; Debian's patches only link the program
# against ../lib and set -O2). CFLAGS and CPPFLAGS are passed in the environment, as
# debian/rules does, so that the Makefiles' own `CPPFLAGS += -I../lib -DXXH_NAMESPACE=LZ4_`
# still apply. LZ4 1.9.4 has no multi-threading (no -T, no pthread code; that came with
# 1.10) and no assembler (lib/xxhash.c is plain C), so there is nothing to switch off.
#
# Idempotent: every step is skipped when its result exists; everything lives under
# examples/lz4/build/ (git-ignored). Needs network access the first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

# Same switches for both builds (see above).
export CPPFLAGS="-DLZ4F_PUBLISH_STATIC_FUNCTIONS"

# --- 1. the source ------------------------------------------------------------------------
# Pinned: this version of Debian's source package, whose .dsc must have this SHA-256.
# bench/subjects.toml pins the same and passes them in the environment.
debian_source lz4 "${KNOBS_SOURCE_VERSION:-1.9.4-1}" \
    "${KNOBS_SOURCE_SHA256:-e16302bca544d08d106efc216541f4a0403c8f8a5fad5eaac7588223a55af263}" \
    "$build" programs/lz4cli.c

# The Makefiles build in the source tree (lib/*.o, programs/*.o): each build gets its own
# copy of the (Debian-patched) source.
# make_lz4 DIR CFLAGS [MAKE ARGUMENTS...]: copy the source to DIR and run `make lz4` there.
make_lz4() {
    local dir="$1" cflags="$2"
    shift 2
    rm -rf "$dir" && mkdir -p "$dir" && cp -a "$src/." "$dir/"
    (cd "$dir" && CFLAGS="$cflags" make -j2 V=1 CC=clang-19 "$@" lz4 >make.log 2>&1) \
        || { log "build failed; see $dir/make.log"; exit 1; }
}

# --- 2. native build (-O2) ----------------------------------------------------------------
if [ ! -x "$build/lz4" ]; then
    log "native build (clang-19 -O2)"
    make_lz4 "$build/native" "-O2 -g"
    cp "$build/native/programs/lz4" "$build/lz4"
fi

# --- 3. bitcode build (-flto: every object is LLVM bitcode) -------------------------------
bc_cflags="-O2 -g -Xclang -disable-llvm-passes -flto"
if [ ! -f "$build/lz4.bc" ] || [ "$(cat "$build/lz4.bc.cflags" 2>/dev/null)" != "$bc_cflags" ]; then
    log "bitcode build (clang-19 $bc_cflags)"
    make_lz4 "$build/bitcode" "$bc_cflags" AR=llvm-ar-19 LDFLAGS="-flto -fuse-ld=gold"
    b="$build/bitcode"
    # The objects programs/Makefile links into lz4 (OBJFILES: lib/*.c and programs/*.c).
    link_program_bitcode "$build/lz4.bc" "$b"/lib/*.o "$b"/programs/*.o
    echo "$bc_cflags" > "$build/lz4.bc.cflags"
fi
log "native:  $build/lz4 ($("$build/lz4" --version 2>&1 | head -1))"
log "bitcode: $build/lz4.bc ($(du -h "$build/lz4.bc" | cut -f1))"
