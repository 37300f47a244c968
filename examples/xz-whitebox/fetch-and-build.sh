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

sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
log() { echo "fetch-and-build: $*" >&2; }

# Same switches for both builds. Threads are disabled (single-threaded xz, no pthread code in
# the analysed program; -T is then accepted and ignored), as are the tools and docs we do not
# need. The x86-64 CRC code in 5.4 is C (no assembler), and the CLMUL CRC is disabled so that
# no ifunc resolver sits between the program and its CRC functions.
common_conf=(--disable-shared --enable-static --disable-nls --disable-threads
             --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-lzma-links
             --disable-scripts --disable-doc --disable-clmul-crc)

# --- 1. the source ------------------------------------------------------------------------
# Pinned: this version of Debian's source package, whose .dsc (it lists the checksums of the
# tarballs dpkg-source unpacks and checks) must have this SHA-256. bench/subjects.toml pins
# the same and passes them in the environment; a mismatch stops the script.
version="${KNOBS_SOURCE_VERSION:-5.4.1-1+deb12u1}"
sha256="${KNOBS_SOURCE_SHA256:-38f98e356f7e7e89b0920d39c55dd5f3d1a9f2684bff83c8b4890561e1832e94}"
dsc="$build/xz-utils_${version#*:}.dsc"
verify() {
    local got
    got="$(sha256sum "$dsc" | cut -d' ' -f1)"
    if [ "$got" != "$sha256" ]; then
        log "checksum mismatch: $dsc has sha256 $got, expected $sha256"
        exit 1
    fi
}
src=""
for d in "$build"/xz-utils-*/; do [ -f "$d/configure.ac" ] && src="${d%/}"; done
if [ -n "$src" ] && [ ! -f "$dsc" ]; then
    # Unpacked from another version (or before the pin): start again from the pinned one.
    log "no $dsc: removing the unpacked source and the builds of another version"
    rm -rf "$build"/xz-utils-*/ "$build"/xz-utils_* "$build/native" "$build/bitcode" \
        "$build/xz" "$build/xz.bc" "$build/xz.bc.cflags"
    src=""
fi
if [ -z "$src" ]; then
    if ! command -v dpkg-source >/dev/null; then
        log "installing dpkg-dev (for apt-get source)"
        sudo_ apt-get install -y dpkg-dev
    fi
    if ! apt-cache showsrc xz-utils >/dev/null 2>&1 || [ -z "$(apt-cache showsrc xz-utils 2>/dev/null)" ]; then
        list=/etc/apt/sources.list.d/knobs-deb-src.sources
        log "adding a deb-src entry for bookworm main ($list) and running apt-get update"
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            | sudo_ tee "$list" >/dev/null
        sudo_ apt-get update -qq
    fi
    log "apt-get source --download-only xz-utils=$version"
    (cd "$build" && apt-get source -qq --download-only "xz-utils=$version") \
        || { log "apt-get source xz-utils=$version failed (no longer in the archive? snapshot.debian.org keeps every version)"; exit 1; }
    [ -f "$dsc" ] || { log "apt-get source did not download $dsc"; exit 1; }
    # Verified before anything is unpacked; dpkg-source then checks the tarballs against it.
    verify
    (cd "$build" && dpkg-source -q -x "$dsc") || { log "dpkg-source -x $dsc failed"; exit 1; }
    for d in "$build"/xz-utils-*/; do [ -f "$d/configure.ac" ] && src="${d%/}"; done
    [ -n "$src" ] || { log "apt-get source did not unpack xz-utils"; exit 1; }
fi
verify
log "source: $src"

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
    for f in "${xz_objs[@]}" "$b"/lzma-objs/*.o; do
        case "$(head -c 4 "$f" | od -An -tx1 | tr -d ' ')" in
            4243c0de) ;;   # 'BC' 0xC0DE: raw LLVM bitcode
            *) log "$f is not LLVM bitcode"; exit 1 ;;
        esac
    done
    llvm-link-19 -o "$b/lzma.bc" "$b"/lzma-objs/*.o
    # Link everything, then drop what main cannot reach (internalize + globaldce only: no
    # optimisation). `llvm-link --only-needed` is no substitute: it applies to the first
    # file too and silently drops main.
    llvm-link-19 -o "$b/xz-all.bc" "${xz_objs[@]}" "$b/lzma.bc"
    opt-19 -passes='internalize,globaldce' -internalize-public-api-list=main \
        "$b/xz-all.bc" -o "$build/xz.bc"
    llvm-nm-19 --defined-only "$build/xz.bc" | grep -w main >/dev/null \
        || { log "xz.bc has no main"; exit 1; }
    echo "$bc_cflags" > "$build/xz.bc.cflags"
fi
log "native:  $build/xz ($("$build/xz" --version | head -1))"
log "bitcode: $build/xz.bc ($(du -h "$build/xz.bc" | cut -f1))"
