#!/usr/bin/env bash
# A/A test of the measurement: the same spec measured in two sessions (two fresh stores, one
# after the other, all valid configurations), each exported with the spec's metric and with
# wall and CPU time, and read against the reference configuration of each round (--drift
# rounds, relative), compared configuration by configuration: MAPE, 95th-percentile error,
# Kendall's tau of the two rankings, and each session's time. `--busy N` keeps N busy loops
# on the cores during the second session. The result lands in docs/results/studies/.
#
#   bench/measurement/aa.sh SPEC [--busy N] [--name NAME] [--metric M] [--workload W]
#                                [--repetitions N] [--warmup N]
#
# The two stores are then read with other statistics than knobs' (statistic.sh, its own
# file in docs/results/studies/). --metric measures with another metric than the spec's (a copy of the spec beside it, e.g.
# `instructions`, whose counts need only one repetition); --workload, --repetitions and
# --warmup are passed to `knobs measure`.
set -euo pipefail
cd "$(dirname "$0")/../.."
spec=${1:?usage: aa.sh SPEC [--busy N] [--name NAME] [--metric M] [--workload W] [--repetitions N]}; shift
busy=0; name=$(basename "$(dirname "$spec")"); metric=""; extra=()
invoked="bench/measurement/aa.sh $spec $*"
while [ $# -gt 0 ]; do
  case $1 in
    --busy) busy=$2; shift ;;
    --name) name=$2; shift ;;
    --metric) metric=$2; shift ;;
    --workload|--repetitions|--warmup) extra+=("$1" "$2"); shift ;;
    *) echo "aa.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cargo build --release -q -p knobs
if [ -n "$metric" ]; then
  copy="$(dirname "$spec")/knobs.aa-$metric.toml"
  sed -E "s/^metric = \"[a-z_]+\"/metric = \"$metric\"/" "$spec" > "$copy"
  grep -q "^metric = \"$metric\"" "$copy" || { echo "aa.sh: $spec sets no metric to replace" >&2; exit 2; }
  spec=$copy; name="$name-$metric"
fi
knobs=$PWD/target/release/knobs
# The two stores are kept in $AA_KEEP when it names a directory.
work=${AA_KEEP:-$(mktemp -d)}; mkdir -p "$work"; rm -f "$work"/[ab].db*
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  [ -n "${AA_KEEP:-}" ] || rm -rf "$work"
  [ -z "${copy:-}" ] || rm -f "$copy"
}
trap cleanup EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
session() { # $1: store, $2: busy loops
  local pids=()
  for _ in $(seq 1 "$2"); do (while :; do :; done) & pids+=($!); done
  local t0; t0=$(date +%s.%N)
  "$knobs" measure --accept-failures --spec "$spec" --sample all --store "$1" "${extra[@]}" >/dev/null 2>"$1.log"
  local t1; t1=$(date +%s.%N)
  for p in "${pids[@]}"; do kill "$p"; done
  awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.3f\n", a - b }'
}
before=$(load)
s1=$(session "$work/a.db" 0)
s2=$(session "$work/b.db" "$busy")
decision=$(grep -h "^metric:" "$work/a.db.log" | head -1 || true)
readings=(default wall cpu default:rounds default:relative cpu:relative)
[ -z "$metric" ] || readings=(default)
for m in "${readings[@]}"; do
  metric=${m%%:*}; drift=none; [ "$m" = "$metric" ] || drift=${m#*:}
  flag=(--drift "$drift"); [ "$metric" = default ] || flag+=(--metric "$metric")
  for s in a b; do "$knobs" results export --store "$work/$s.db" "${flag[@]}" -o "$work/$s-$m.csv"; done
done
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo "+changes")
day=$(date +%F)
suffix=""; [ "$busy" = 0 ] || suffix="-busy$busy"
out=docs/results/studies/aa-$day-${commit%+changes}-$name$suffix.md
python3 - "$work" "$out" <<PY
import csv, sys, itertools
work, out = sys.argv[1], sys.argv[2]
def read(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    head = rows[0]
    return head[-1], {tuple(r[:-1]): float(r[-1]) for r in rows[1:]}
lines = []
for m in "${readings[*]}".split():
    label, a = read(f"{work}/a-{m}.csv")
    _, b = read(f"{work}/b-{m}.csv")
    keys = sorted(set(a) & set(b))
    errs = sorted(abs(b[k] - a[k]) / a[k] for k in keys)
    mape = 100 * sum(errs) / len(errs)
    p95 = 100 * errs[min(len(errs) - 1, int(round(0.95 * (len(errs) - 1))))]
    conc = disc = 0
    for x, y in itertools.combinations(keys, 2):
        s = (a[x] - a[y]) * (b[x] - b[y])
        conc += s > 0; disc += s < 0
    tau = (conc - disc) / max(1, conc + disc)
    metric, _, drift = m.partition(":")
    name = f"spec's metric ({label})" if metric == "default" else label
    name += f", drift {drift}" if drift else ""
    lines.append(f"| {name} | {len(keys)} | {mape:.2f} | {p95:.2f} | {tau:.3f} |")
with open(out, "w") as f:
    f.write(f"""# A/A: two sessions of \`knobs measure --sample all\` on $name

- date: $(date -u +%FT%TZ); commit: $commit; machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load before: $before
- command: \`$invoked\`
- spec: \`$spec\`; busy loops during the second session: $busy
- session times: {float("$s1"):.1f} s and {float("$s2"):.1f} s
- auto metric decision (first session): $decision

| metric | configurations | MAPE (%) | P95 error (%) | Kendall tau |
|---|---|---|---|---|
""" + "\n".join(lines) + "\n")
print(open(out).read())
PY
[ -n "${copy:-}" ] || bench/measurement/statistic.sh "$work/a.db" "$work/b.db" "$name$suffix" >/dev/null
