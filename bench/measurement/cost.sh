#!/usr/bin/env bash
# What a measurement session costs against another knobs build: `knobs measure --sample all`
# of SPEC into fresh stores, alternately with this checkout's release build and OTHER_KNOBS
# (e.g. a build of an earlier commit), PAIRS times, side by side so the machine's drift
# touches both alike. Writes the session times and their ratio to docs/results/studies/.
#
#   bench/measurement/cost.sh OTHER_KNOBS SPEC [PAIRS] [OTHER_SPEC]
#
# OTHER_SPEC: the spec the other build reads (default SPEC), for a build that does not know
# every key of this one's (the same runs and workload, e.g. the spec at that commit).
set -euo pipefail
cd "$(dirname "$0")/../.."
other=${1:?usage: cost.sh OTHER_KNOBS SPEC [PAIRS]}; spec=${2:?usage: cost.sh OTHER_KNOBS SPEC [PAIRS]}
pairs=${3:-2}; other_spec=${4:-$spec}
invoked="bench/measurement/cost.sh $*"
cargo build --release -q -p knobs
this=$PWD/target/release/knobs
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
session() { # $1: knobs binary, $2: spec; prints seconds
  rm -f "$work"/s.db*
  local t0; t0=$(date +%s.%N)
  # Exit 3: everything stored, some configurations failed (older builds exit 0 then): a
  # session's cost all the same.
  local rc=0
  "$1" measure --spec "$2" --sample all --store "$work/s.db" >/dev/null 2>"$work/log" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { cat "$work/log" >&2; exit 1; }
  awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.3f\n", a - b }'
}
rows=()
for p in $(seq 1 "$pairs"); do
  a=$(session "$this" "$spec"); b=$(session "$other" "$other_spec")
  rows+=("| $p | $(printf %.1f "$a") | $(printf %.1f "$b") | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }') |")
done
name=$(basename "$(dirname "$spec")")
commit=$(git rev-parse --short HEAD)
out=docs/results/studies/measure-cost-$(date +%F)-$commit-$name.md
{
  echo "# Cost of a measurement session: \`knobs measure --sample all\` on $name"
  echo
  echo "- date: $(date -u +%FT%TZ); commit: $commit; machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- command: \`$invoked\`; other build: $("$other" --version 2>/dev/null || echo "$other")"
  echo
  echo "| pair | this build (s) | other build (s) | ratio |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} > "$out"
cat "$out"
