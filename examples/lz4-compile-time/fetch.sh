#!/usr/bin/env bash
# Fetch LZ4 1.9.4 from Debian (bookworm's source package, pinned as in examples/lz4) into
# build/src, the directory knobs.toml's [build] recipe builds once per set of build-option
# values. Idempotent; everything lives under examples/lz4-compile-time/build/ (git-ignored).
# Needs network access the first time (apt).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"

. "$here/../../scripts/debian-source.sh"

debian_source lz4 "${KNOBS_SOURCE_VERSION:-1.9.4-1}" \
    "${KNOBS_SOURCE_SHA256:-e16302bca544d08d106efc216541f4a0403c8f8a5fad5eaac7588223a55af263}" \
    "$build" programs/lz4cli.c

# A stable path for [build] dir, holding exactly the (Debian-patched) source.
if [ ! -f "$build/src/programs/lz4cli.c" ]; then
    rm -rf "$build/src" && mkdir -p "$build/src" && cp -a "$src/." "$build/src/"
fi
log "source: $build/src ($(grep -m1 'LZ4_VERSION_MINOR' "$build/src/lib/lz4.h"))"
