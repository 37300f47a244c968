#!/usr/bin/env bash
# The lz4-ifdef bench subject's build: the pinned source (fetch.sh), then `knobs simulator
# --check` into build/simulator/: LZ4 1.9.4's LZ4_HEAPMODE and LZ4_FAST_DEC_LOOP encoded as
# run-time reads, the simulator compiled, and the real builds (every feature off, each alone,
# all: every configuration here) counted beside it per option (build/simulator/check.json,
# and printed). simulator.toml, the subject's spec, is the spec `knobs simulator` writes with
# its paths relative to this directory; the build stops if they differ, so the spec the
# benchmark measures is the one knobs generates.
#
#   bash examples/lz4-ifdef/build-simulator.sh        # KNOBS: the knobs binary (default:
#                                                     # target/release/knobs)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
knobs="${KNOBS:-$root/target/release/knobs}"
KNOBS_SOURCE_VERSION="${KNOBS_SOURCE_VERSION:-1.9.4-1}" \
KNOBS_SOURCE_SHA256="${KNOBS_SOURCE_SHA256:-e16302bca544d08d106efc216541f4a0403c8f8a5fad5eaac7588223a55af263}" \
    bash "$here/fetch.sh"

out="$here/build/simulator"
"$knobs" simulator --spec "$here/knobs.toml" --out "$out" --check --json > "$out.json.tmp"
mv "$out.json.tmp" "$out/check.json"
python3 - "$out/check.json" <<'PY' >&2
import json, sys
r = json.load(open(sys.argv[1]))
b, c = r["built"], r["check"]
print(f"encoded: {', '.join(b['encoded'])} ({b['decisions']} conditional groups decided at run time)")
for x in b["refusals"]:
    print(f"  refused: {x}")
print(f"real builds against the simulator, workload `{c['workload']}` ({c['counter']}):")
for k in c["configurations"]:
    d = 100 * (k["simulator"] - k["real"]) / k["real"]
    print(f"  {','.join(k['selected']) or '(none)'}: real {k['real']} simulator {k['simulator']} ({d:+.2f} %)")
for e in c["effects"]:
    print(f"  effect of {e['option']}: real {e['real']:+} simulator {e['simulator']:+} "
          f"(differs by {abs(e['difference_percent']):.2f} % of the program)")
PY

# The written spec, its paths made relative to this directory, is simulator.toml (less the
# header comments).
sed "s|$here/||g" "$out/knobs.toml" | grep -v '^#' > "$out/knobs.relative.toml"
grep -v '^#' "$here/simulator.toml" | diff - "$out/knobs.relative.toml" >&2 \
    || { echo "build-simulator.sh: simulator.toml differs from the spec knobs simulator writes (above)" >&2; exit 1; }
