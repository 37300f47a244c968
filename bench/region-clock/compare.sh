#!/usr/bin/env bash
# ConfigCrusher's region times read by the CPU clock against the wall clock, from the SAME
# instrumented runs (the runtime records both in every run): one `knobs crush` measures, two
# more rebuild the model from the stored runs with `--region-clock wall` and `cpu`, and the
# default (`auto`) says what the chooser picks. Each model is evaluated against brute force
# (every configuration of the plain program, `knobs measure --sample all`), exported by the
# spec's metric (`auto`), by wall time and by CPU time (evaluate.sh). `--busy N` keeps N busy loops on the cores for the
# whole session; `--spin` turns the example's nanosleeps into busy loops on the thread's CPU
# clock (the same time units, now CPU-bound); `--unit-ms MS` sets FIG2_UNIT_MS/UNIT_MS.
#
# `--approach comprex`: the same with `knobs comprex --profile-clock wall`, `cpu` and `auto`
# (the sampling profiler samples one clock per run, so each clock has its own profiled runs,
# measured one after the other in the same session; `auto` reuses the runs of the clock it
# picks). `--approach family`: `knobs family --region-clock auto`, `wall` and `cpu`, from the
# same runs (the call tree records both clocks, as the region timers do).
#
#   bench/region-clock/compare.sh SPEC [--approach crush|comprex|family] [--spin] [--busy N]
#                                      [--unit-ms MS] [--name NAME]
#
# Prints one Markdown table row per model; the stores stay in target/region-clock/NAME.
set -euo pipefail
cd "$(dirname "$0")/../.."
spec=${1:?usage: compare.sh SPEC [--spin] [--busy N] [--unit-ms MS] [--name NAME]}; shift
busy=0; spin=0; unit=""; approach=crush; name=$(basename "$(dirname "$spec")")
while [ $# -gt 0 ]; do
  case $1 in
    --busy) busy=$2; shift ;;
    --spin) spin=1 ;;
    --unit-ms) unit=$2; shift ;;
    --name) name=$2; shift ;;
    --approach) approach=$2; shift ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
knobs=${KNOBS:-$PWD/target/debug/knobs}
[ -x "$knobs" ] || cargo build -q -p knobs
work=$PWD/target/region-clock/$name
rm -rf "$work"; mkdir -p "$work"
src=$(dirname "$spec")
cp "$src"/main.c "$work"/main.c
# The spec as bundled, but measured with the default metric (`auto`) and the unit asked for.
sed -E -e '/^metric = /d' \
  -e "${unit:+s/(FIG2_UNIT_MS|PRINTER_UNIT_MS|UNIT_MS) = \"[0-9.]+\"/\\1 = \"$unit\"/}" \
  "$spec" > "$work"/knobs.toml
if [ "$spin" = 1 ]; then
  # After <time.h>: every nanosleep becomes a busy loop until the thread's CPU clock has
  # advanced as long (a macro, like the example's WORK: no helper for the analysis to merge).
  awk '{ print } /#include <time.h>/ { print "#define nanosleep(ts, rem) ({ struct timespec s0_, s1_; double w_ = (double)(ts)->tv_sec * 1e9 + (double)(ts)->tv_nsec; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &s0_); do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &s1_); while ((double)(s1_.tv_sec - s0_.tv_sec) * 1e9 + (double)(s1_.tv_nsec - s0_.tv_nsec) < w_); 0; })" }' \
    "$src"/main.c > "$work"/main.c
  grep -q "define nanosleep" "$work"/main.c || { echo "compare.sh: no <time.h> include in $src/main.c" >&2; exit 2; }
fi
program=$(sed -nE 's/^program = "\.\/([^"]+)"/\1/p' "$work"/knobs.toml | head -1)
clang-19 -O2 -o "$work/$program" "$work"/main.c
workload=$(awk '/^\[\[workload\]\]/ { w = 1 } w && /^name = / { gsub(/"/, "", $3); print $3; exit }' "$work"/knobs.toml)

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq 1 "$busy"); do (while :; do :; done) & pids+=($!); done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
"$knobs" measure --accept-failures --spec "$work"/knobs.toml --workload "$workload" --sample all \
  --store "$work"/truth.db >/dev/null 2>"$work"/truth.log
echo "$approach" > "$work"/approach
case $approach in
  crush) clocks="auto wall cpu"; flag=--region-clock ;;
  comprex) clocks="wall cpu auto"; flag=--profile-clock ;;
  family) clocks="auto wall cpu"; flag=--region-clock ;;
  *) echo "compare.sh: unknown approach $approach" >&2; exit 2 ;;
esac
for clock in $clocks; do
  "$knobs" "$approach" --spec "$work"/knobs.toml --workload "$workload" --store "$work"/crush.db \
    --work-dir "$work"/crush -o "$work/model-$clock.json" ${flag:+$flag "$clock"} --json \
    > "$work/crush-$clock.json" 2>"$work/crush-$clock.log"
done
t1=$(date +%s)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cleanup; pids=()

decision=$(grep -h "^metric:" "$work"/truth.log | head -1 | cut -c1-110 || true)
echo "<!-- $name: spin=$spin busy=$busy unit=${unit:-spec} load ${load_before} -> ${load_after}, $((t1 - t0)) s; truth $decision -->"
KNOBS=$knobs bench/region-clock/evaluate.sh "$work" "$busy" "${load_before%% *}–${load_after%% *}"
