#!/usr/bin/env bash
# Fetch LZ4 1.9.4 from Debian (bookworm's source package, pinned as in examples/lz4) into
# build/src: the sources knobs.toml's [build] reads and its recipe builds. Idempotent;
# everything lives under examples/lz4-ifdef/build/ (git-ignored). Needs network access the
# first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

debian_source lz4 "${KNOBS_SOURCE_VERSION:-1.9.4-1}" \
    "${KNOBS_SOURCE_SHA256:-e16302bca544d08d106efc216541f4a0403c8f8a5fad5eaac7588223a55af263}" \
    "$build" programs/lz4cli.c

if [ ! -f "$build/src/programs/lz4cli.c" ]; then
    rm -rf "$build/src" && mkdir -p "$build/src" && cp -a "$src/." "$build/src/"
fi
[ -f "$here/input.lz4" ] || {
    seq 1 400000 > "$build/input.txt"
    (cd "$build/src" && make -s -j2 CC=clang-19 lz4 >/dev/null)
    "$build/src/lz4" -q -c -1 "$build/input.txt" > "$here/input.lz4"
}
log "source: $build/src; workload: input.lz4"
