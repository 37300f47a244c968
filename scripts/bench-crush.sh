#!/usr/bin/env bash
# ConfigCrusher on any real program against its brute-force ground truth, in the form of the
# journal paper's Tables 5/6 (configurations measured, measurement time, MAPE) plus the
# analysis' time and peak memory and Table 7 (scripts/bench-crush-overhead.sh):
#
#   bash examples/gzip-whitebox/fetch-and-build.sh     # build the subject first
#   bash scripts/bench-crush.sh examples/gzip-whitebox/knobs.toml
#   KNOBS=/path/to/knobs CONFIGS=all bash scripts/bench-crush.sh SPEC
#
# The spec needs a [build] section (sources or bitcode) and a built [run] program (the
# native ground truth). Rerunnable: the results store beside the spec keeps every run, so a
# rerun measures only what is missing. scripts/bench-xz-whitebox.sh is the xz version with
# Comprex and the black-box baselines beside it. A benchmark, not a test: never run in CI.
set -euo pipefail

die() { echo "bench-crush.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: bash scripts/bench-crush.sh SPEC (a knobs.toml with a [build] section)"
[ -f "$1" ] || die "no spec at $1"
root="$(cd "$(dirname "$0")/.." && pwd)"
# Absolute, as bench-crush-overhead.sh explains.
spec="$(realpath "$1")"
specdir="$(dirname "$spec")"
store="$specdir/knobs.db"
logs="$specdir/.knobs/bench"
mkdir -p "$logs"
knobs="${KNOBS:-$root/target/release/knobs}"
# Reading the crush log, the brute force, MAPE.
source "$root/scripts/lib/crush-bench.sh"
if [ -z "${KNOBS:-}" ]; then
    (cd "$root" && cargo build --release -q -p knobs) || die "cargo build failed"
fi

echo "== 1. ConfigCrusher: knobs crush"
t0=$(date +%s.%N)
"$knobs" crush --spec "$spec" > "$logs/crush.log" 2>&1 || { tail -5 "$logs/crush.log"; exit 1; }
crush_elapsed=$(echo "$(date +%s.%N) - $t0" | bc)
grep -E '^(built|analysed|regions|note|instrumented|[0-9]+ of [0-9]+ configurations|region entries)' \
    "$logs/crush.log" | cut -c1-220
name=$(sed -n 's/^built \([^:]*\):.*/\1/p' "$logs/crush.log")
model="$specdir/$name.configcrusher.json"
read_crush_log "$logs/crush.log"

echo "== 2. brute force: knobs measure --sample all (native build)"
brute_force

echo "== 3. MAPE of the ConfigCrusher model"
"$knobs" results export --store "$store" --system "$name" -o "$logs/native.csv"
"$knobs" results export --store "$store" --system "$name" --variant "$variant" -o "$logs/instrumented.csv"
sum_medians() { awk -F, 'NR > 1 { s += $NF } END { printf "%.2f", s }' "$1"; }
cc_mape=$(mape_of "$model" "$logs/native.csv")
cc_mape_instr=$(mape_of "$model" "$logs/instrumented.csv")
echo "MAPE $cc_mape % against the native brute force, $cc_mape_instr % against the instrumented runs"

echo "== 4. Table 7: before and after optimisation, native and both instrumented builds interleaved"
KNOBS="$knobs" bash "$root/scripts/bench-crush-overhead.sh" "$spec" | tee "$logs/overhead.log"

echo
echo "$name, $all_configs configurations, wall time; MAPE against the native brute force (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| approach | configurations | measurement (s, Σ median) | MAPE (%) |"
echo "|---|---|---|---|"
echo "| brute force | $all_configs | $(sum_medians "$logs/native.csv") | 0 (ground truth) |"
echo "| ConfigCrusher | $cc_configs (lower bound $lower_bound) | $(sum_medians "$logs/instrumented.csv") (instrumented) | $cc_mape (vs its own instrumented runs: $cc_mape_instr) |"
echo
echo "ConfigCrusher: analysis $analysis_s s (peak memory $peak_mib MiB); interactions: $interactions"
echo "elapsed: knobs crush $(printf '%.0f' "$crush_elapsed") s, knobs measure --sample all $(printf '%.0f' "$measure_elapsed") s (0 when everything was already in the store)"
