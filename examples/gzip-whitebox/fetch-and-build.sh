#!/usr/bin/env bash
# Fetch GNU gzip from Debian (bookworm: 1.12) and build it twice from the same source:
#
#   build/gzip      native, -O2: the program `knobs measure` runs (brute-force ground truth)
#   build/gzip.bc   LLVM bitcode of the whole gzip program (gzip's own objects, libver.a and
#                   the gnulib code of lib/libgzip.a that main reaches), unoptimised: what
#                   `knobs crush` analyses and instruments ([build] bitcode in knobs.toml)
#
# The bitcode is compiled with `-O2 -g -Xclang -disable-llvm-passes -flto`, as for
# examples/xz-whitebox (see the comment there): clang's front end at -O2 (TBAA, lifetime
# markers, no optnone) but no LLVM pass, so the IR is as unoptimised as at -O0 and knobs'
# own mem2reg makes it SSA.
#
# Both builds use the switches of Debian's own package (debian/rules): DEFS=NO_ASM (the C
# longest_match in deflate.c, not lib/match.c's assembler, which could not be bitcode
# anyway) and -DUNALIGNED_OK on amd64 (longest_match compares two bytes at a time). So the
# program knobs instruments is the program it measures natively (only the optimisation level
# differs).
#
# Idempotent: every step is skipped when its result exists; everything lives under
# examples/gzip-whitebox/build/ (git-ignored). Needs network access the first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

# Same switches for both builds (see above). gzip has no NLS and no optional features.
common_conf=()
export DEFS=NO_ASM
cppflags=""
[ "$(uname -m)" = x86_64 ] && cppflags="-DUNALIGNED_OK"

# --- 1. the source ------------------------------------------------------------------------
# Pinned: this version of Debian's source package, whose .dsc must have this SHA-256.
# bench/subjects.toml pins the same and passes them in the environment.
debian_source gzip "${KNOBS_SOURCE_VERSION:-1.12-1}" \
    "${KNOBS_SOURCE_SHA256:-49a287787a0b4fc816eb576c011c472d1f630ec1778dfa120bd7fce4a844c253}" \
    "$build" configure.ac
# Debian's disable-Werror.patch edits configure.ac (only what --enable-gcc-warnings does; the
# Debian build then runs autoreconf). Without autotools, make would try to run aclocal-1.16
# because configure.ac is newer than what the tarball generated from it: mark the generated
# files as up to date instead (the patch changes nothing they contain for this build).
if [ "$src/configure.ac" -nt "$src/configure" ]; then
    log "marking the generated autotools files newer than the patched configure.ac"
    now="@$(date +%s)"
    (cd "$src" && touch -d "$now" aclocal.m4 configure lib/config.hin \
        Makefile.in lib/Makefile.in doc/Makefile.in tests/Makefile.in)
fi

# Only the gzip program: gnulib (lib/, with its generated headers), the generated version.c
# and version.h (BUILT_SOURCES, which `make gzip` alone would not make), then gzip. A plain
# `make` would also build doc/, and Debian patches doc/gzip.texi (makeinfo needed).
make_gzip() {
    make -j"$(nproc)" -C lib && make version.c version.h && make -j"$(nproc)" gzip
}

# --- 2. native build (-O2) ----------------------------------------------------------------
if [ ! -x "$build/gzip" ]; then
    rm -rf "$build/native" && mkdir -p "$build/native"
    log "native build (clang-19 -O2)"
    (cd "$build/native" && "$src/configure" -q "${common_conf[@]}" \
        CC=clang-19 CPPFLAGS="$cppflags" CFLAGS="-O2 -g" >configure.log 2>&1 \
        && make_gzip >make.log 2>&1) \
        || { log "native build failed; see $build/native/*.log"; exit 1; }
    cp "$build/native/gzip" "$build/gzip"
fi

# --- 3. bitcode build (-flto: every object is LLVM bitcode) -------------------------------
bc_cflags="-O2 -g -Xclang -disable-llvm-passes -flto"
if [ ! -f "$build/gzip.bc" ] || [ "$(cat "$build/gzip.bc.cflags" 2>/dev/null)" != "$bc_cflags" ]; then
    rm -rf "$build/bitcode" && mkdir -p "$build/bitcode"
    log "bitcode build (clang-19 $bc_cflags)"
    (cd "$build/bitcode" && "$src/configure" -q "${common_conf[@]}" \
        CC=clang-19 AR=llvm-ar-19 RANLIB=llvm-ranlib-19 NM=llvm-nm-19 \
        CPPFLAGS="$cppflags" CFLAGS="$bc_cflags" LDFLAGS="-flto -fuse-ld=gold" \
        >configure.log 2>&1 \
        && make_gzip >make.log 2>&1) \
        || { log "bitcode build failed; see $build/bitcode/*.log"; exit 1; }
    b="$build/bitcode"
    # gzip's own objects (gzip_SOURCES in Makefile.am; dfltcc.c is for IBM Z only) ...
    gzip_objs=()
    for s in bits deflate gzip inflate trees unlzh unlzw unpack unzip util zip; do
        gzip_objs+=("$b/$s.o")
    done
    # ... libver.a (version.c) and gnulib's lib/libgzip.a, as the archives' members.
    rm -rf "$b/ver-objs" "$b/gnulib-objs" && mkdir -p "$b/ver-objs" "$b/gnulib-objs"
    (cd "$b/ver-objs" && llvm-ar-19 x "$b/libver.a")
    (cd "$b/gnulib-objs" && llvm-ar-19 x "$b/lib/libgzip.a")
    check_bitcode "${gzip_objs[@]}" "$b"/ver-objs/*.o "$b"/gnulib-objs/*.o
    # gnulib: linked whole (everything main cannot reach is dropped below), except the members
    # that define a symbol gzip itself defines. A linker takes an archive member only for an
    # undefined symbol, so it never takes those (gzip's util.c has its own xalloc_die, and
    # lib/xalloc-die.c is then not linked); llvm-link would report them as multiply defined.
    strong_syms() { llvm-nm-19 --defined-only --extern-only "$@" 2>/dev/null \
                        | awk 'NF == 3 && $2 ~ /^[A-Z]$/ && $2 !~ /^[WVC]$/ { print $3 }' | sort -u; }
    strong_syms "${gzip_objs[@]}" "$b"/ver-objs/*.o > "$b/gzip.syms"
    gnulib_objs=()
    for f in "$b"/gnulib-objs/*.o; do
        clash="$(strong_syms "$f" | comm -12 - "$b/gzip.syms" | tr '\n' ' ')"
        if [ -n "$clash" ]; then log "not linking $(basename "$f") (gzip defines ${clash% })"
        else gnulib_objs+=("$f"); fi
    done
    llvm-link-19 -o "$b/gnulib.bc" "${gnulib_objs[@]}"
    link_program_bitcode "$build/gzip.bc" "${gzip_objs[@]}" "$b"/ver-objs/*.o "$b/gnulib.bc"
    echo "$bc_cflags" > "$build/gzip.bc.cflags"
fi
log "native:  $build/gzip ($("$build/gzip" --version | head -1))"
log "bitcode: $build/gzip.bc ($(du -h "$build/gzip.bc" | cut -f1))"
