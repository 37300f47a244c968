#!/usr/bin/env bash
# The ifdef bench subject's build: `knobs simulator --check` on the scanner (knobs.toml) into
# .knobs-simulator/: LOGGING, COLOR_SCAN and AUTO_SCAN encoded as run-time reads, the
# simulator compiled, and the real builds (every feature off, each alone, all) counted beside
# it per option (printed). simulator.toml, the subject's spec, is the spec `knobs simulator`
# writes with its paths relative to this directory; the build stops if they differ, so the
# spec the benchmark measures is the one knobs generates.
#
#   bash examples/ifdef/build-simulator.sh      # KNOBS: the knobs binary (default:
#                                               # target/release/knobs)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
knobs="${KNOBS:-$root/target/release/knobs}"
"$knobs" simulator --spec "$here/knobs.toml" --check >&2

# The written spec, its paths made relative to this directory, is simulator.toml (less the
# header comments).
out="$here/.knobs-simulator"
sed "s|$here/||g" "$out/knobs.toml" | grep -v '^#' > "$out/knobs.relative.toml"
grep -v '^#' "$here/simulator.toml" | diff - "$out/knobs.relative.toml" >&2 \
    || { echo "build-simulator.sh: simulator.toml differs from the spec knobs simulator writes (above)" >&2; exit 1; }
