#!/usr/bin/env bash
# The table rows of one compare.sh session (its directory under target/region-clock): each
# of the three models (`--region-clock auto`, `wall`, `cpu`, from the same runs; for comprex
# `--profile-clock`, each clock its own profiled runs) evaluated
# against brute force exported by `auto` (the spec's metric), wall time and CPU time.
#
#   bench/region-clock/evaluate.sh target/region-clock/NAME [BUSY] [LOAD]
set -euo pipefail
work=${1:?usage: evaluate.sh DIR [BUSY] [LOAD]}; busy=${2:-?}; load=${3:-?}
name=$(basename "$work")
knobs=${KNOBS:-$(cd "$(dirname "$0")/../.." && pwd)/target/debug/knobs}
workload=$(awk '/^\[\[workload\]\]/ { w = 1 } w && /^name = / { gsub(/"/, "", $3); print $3; exit }' "$work"/knobs.toml)
for metric in auto wall cpu; do
  [ -f "$work/truth-$metric.csv" ] ||
    "$knobs" results export --store "$work"/truth.db --workload "$workload" --metric "$metric" \
      --format csv -o "$work/truth-$metric.csv" 2>/dev/null
done
mape() { # $1 model, $2 data
  "$knobs" evaluate "$1" "$2" --all --json | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["mape_percent"])'
}
approach=$(cat "$work"/approach 2>/dev/null || echo crush)
for clock in auto wall cpu; do
  # The clock chosen, the configurations measured and the region entries per run (crush),
  # or the profiled runs' clock and configurations (comprex), or the call tree's (family).
  read -r chosen runs rc < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c = r.get("region_clock") or r.get("profile_clock") or r.get("call_tree_clock") or {}
runs = r.get("compressed") or r.get("configurations") or r.get("runs") or []
print(c.get("clock", "?"), len(runs), round((r.get("overhead") or {}).get("region_entries_per_run", 0)))' "$work/crush-$clock.json")
  echo "| $name | $busy | $clock → $chosen | $runs | $rc | $(mape "$work/model-$clock.json" "$work"/truth-auto.csv) | $(mape "$work/model-$clock.json" "$work"/truth-wall.csv) | $(mape "$work/model-$clock.json" "$work"/truth-cpu.csv) | $load |"
done
