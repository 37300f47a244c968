#!/usr/bin/env bash
# Change points at equal cost: on each synthetic system, the reference implementation runs
# first; knobs then runs twice on the same system with the same parameters, once as it
# stops by itself and once held to the reference's number of measurements
# (`--max-measurements`). All three are scored by `knobs changepoints score` (5-commit
# tolerance, an association is a commit and an option).
#
#   CP_PYTHON=/path/to/venv/bin/python bench/changepoints/equal_cost.sh REF_DIR [SEEDS] [OPTIONS] [CPS] [BUDGETS]
#
# Settings: 8 of Table 1 (8 and 16 options x 2 and 5 change points x 100 and 500
# measurements per iteration; 1,000 commits, p_interaction 0.7, 2 initial configurations per
# option), seeds 1..SEEDS (3); OPTIONS ("8 16"), CPS ("2 5") and BUDGETS ("100 500") run a
# part of them (parts can run side by side, CP_KEEP each, and one run over all with
# CP_REFERENCE_RESULTS gathers them). REF_DIR and the venv as for compare.sh (its header). Results
# land in docs/results/studies/changepoints-equal-cost-DATE-COMMIT.{md,json}. CP_REFERENCE_RESULTS=DIR
# takes the reference's results (NAME.json, NAME.ref.json, NAME.reftime) from an earlier
# run's work directory instead of running it again, and leaves out the systems it has none
# for (CP_KEEP=DIR keeps a run's directory).
set -euo pipefail
ref=${1:?usage: equal_cost.sh REF_DIR [SEEDS] [OPTIONS] [CPS] [BUDGETS]}
seeds=${2:-3}
options_list=${3:-8 16}
cps_list=${4:-2 5}
budget_list=${5:-100 500}
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${CP_PYTHON:-python3}
commit=$(git -C "$here" rev-parse --short HEAD)
if [ -n "$(git -C "$here" status --porcelain -- crates)" ]; then commit="$commit+dirty"; fi
cargo build --release -q -p knobs --manifest-path "$here/Cargo.toml"
knobs="$here/target/release/knobs"
work=$(mktemp -d); trap 'if [ -n "${CP_KEEP:-}" ]; then mkdir -p "$CP_KEEP" && cp "$work"/* "$CP_KEEP"/; fi; rm -rf "$work"' EXIT
for options in $options_list; do
  for cps in $cps_list; do
    for budget in $budget_list; do
      for seed in $(seq 1 "$seeds"); do
        name="o$options-c1000-cp$cps-p0.7-n2-m$budget-s$seed"
        sys="$work/$name.json"
        common=(--seed "$seed" --measurements "$budget" --initial-configurations $((2 * options))
                --commit-share 0.03 --threshold 1%)
        "$knobs" changepoints synthetic --options "$options" --commits 1000 --change-points "$cps" \
          --p-interaction 0.7 --system-seed "$seed" --write-system "$sys" "${common[@]}" --json \
          > "$work/$name.knobs.json"
        stored=${CP_REFERENCE_RESULTS:-}
        if [ -n "$stored" ] && ! { [ -f "$stored/$name.ref.json" ] && [ -f "$stored/$name.reftime" ]; }; then
          echo "$name: no stored result of the reference, left out" >&2
          rm "$sys" "$work/$name.knobs.json"
          continue
        fi
        if [ -n "$stored" ]; then
          # The reference's result on this very system, from an earlier run.
          cmp -s "$sys" "$stored/$name.json" || { echo "$stored/$name.json is another system" >&2; exit 1; }
          cp "$stored/$name.ref.json" "$stored/$name.reftime" "$work/"
          "$knobs" changepoints score "$sys" "$work/$name.ref.json" > "$work/$name.refscore.json" \
            || echo '{"error": "the reference failed"}' > "$work/$name.refscore.json"
        else
          t0=$(date +%s.%N)
          if "$py" -W ignore "$here/bench/changepoints/reference_driver.py" "$ref" "$sys" \
              --seed "$seed" --budget "$budget" --max-iter 30 --initial-configs $((2 * options)) \
              --commit-rate 0.03 --threshold 0.01 > "$work/$name.ref.json" 2> "$work/$name.ref.err"; then
            "$knobs" changepoints score "$sys" "$work/$name.ref.json" > "$work/$name.refscore.json"
          else
            echo '{"error": "the reference failed"}' > "$work/$name.refscore.json"
            echo '{}' > "$work/$name.ref.json"
          fi
          t1=$(date +%s.%N)
          awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' > "$work/$name.reftime"
        fi
        cap=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("measurements") or 0)' "$work/$name.ref.json")
        if [ "$cap" -gt 0 ]; then
          "$knobs" changepoints synthetic --system "$sys" "${common[@]}" --max-measurements "$cap" --json \
            > "$work/$name.capped.json"
        else
          echo '{}' > "$work/$name.capped.json"
        fi
        echo "$name: reference $(tr -d '\n ' < "$work/$name.refscore.json" | cut -c1-60) ($cap measurements)" >&2
      done
    done
  done
done
day=$(date -u +%F)
out="$here/docs/results/studies/changepoints-equal-cost-$day-$commit"
if [ "$options_list$cps_list$budget_list" != "8 162 5100 500" ]; then
  out="$out-o${options_list// /-o}-cp${cps_list// /-cp}-m${budget_list// /-m}"
fi
python3 "$here/bench/changepoints/equal_cost_summary.py" "$work" "$out" "$commit" "$day" "bench/changepoints/equal_cost.sh REF_DIR $seeds '$options_list' '$cps_list' '$budget_list'"
