#!/usr/bin/env bash
# The ifdef bench subject's build: `knobs simulator --check` on the scanner (knobs.toml) into
# .knobs-simulator/: LOGGING, COLOR_SCAN and AUTO_SCAN encoded as run-time reads, the
# simulator compiled, and the real builds (every feature off, each alone, all) counted beside
# it per option (printed). The subject measures the spec knobs writes there.
#
#   bash examples/ifdef/build-simulator.sh      # KNOBS: the knobs binary (default:
#                                               # target/release/knobs)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
knobs="${KNOBS:-$root/target/release/knobs}"
"$knobs" simulator --spec "$here/knobs.toml" --check >&2
