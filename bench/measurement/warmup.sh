#!/usr/bin/env bash
# Does the warm-up round pay for itself? Four sessions of `knobs measure --sample all` on one
# spec, interleaved so that both settings meet the same machine: warm-up 1, warm-up 0,
# warm-up 1, warm-up 0 (each with the spec's repetitions). Each setting's two sessions are
# compared configuration by configuration (MAPE, 95th-percentile error) as the A/A test does,
# with the spec's metric and with CPU time; each session's time is reported. The result
# lands in docs/results/studies/.
#
#   bench/measurement/warmup.sh SPEC [--name NAME]
set -euo pipefail
cd "$(dirname "$0")/../.."
spec=${1:?usage: warmup.sh SPEC [--name NAME]}; shift
name=$(basename "$(dirname "$spec")")
invoked="bench/measurement/warmup.sh $spec $*"
while [ $# -gt 0 ]; do
  case $1 in
    --name) name=$2; shift ;;
    *) echo "warmup.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cargo build --release -q -p knobs
knobs=$PWD/target/release/knobs
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
before=$(cut -d' ' -f1-3 /proc/loadavg)
times=()
for session in w1a w0a w1b w0b; do
  w=${session:1:1}
  t0=$(date +%s.%N)
  "$knobs" measure --accept-failures --spec "$spec" --sample all --store "$work/$session.db" --warmup "$w" >/dev/null 2>"$work/$session.log"
  t1=$(date +%s.%N)
  times+=("$session=$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')")
  for m in default cpu; do
    flag=(); [ "$m" = default ] || flag=(--metric "$m")
    "$knobs" results export --store "$work/$session.db" "${flag[@]}" -o "$work/$session-$m.csv"
  done
done
after=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo "+changes")
out=docs/results/studies/warmup-$(date +%F)-${commit%+changes}-$name.md
python3 - "$work" "$out" "${times[@]}" <<PY
import csv, sys
work, out, times = sys.argv[1], sys.argv[2], dict(t.split("=") for t in sys.argv[3:])
def read(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0][-1], {tuple(r[:-1]): float(r[-1]) for r in rows[1:]}
lines = []
for w in ("1", "0"):
    for m in ("default", "cpu"):
        label, a = read(f"{work}/w{w}a-{m}.csv")
        _, b = read(f"{work}/w{w}b-{m}.csv")
        keys = sorted(set(a) & set(b))
        errs = sorted(abs(b[k] - a[k]) / a[k] for k in keys)
        p95 = errs[min(len(errs) - 1, round(0.95 * (len(errs) - 1)))]
        metric = f"spec's metric ({label})" if m == "default" else label
        lines.append(f"| {w} | {metric} | {len(keys)} | {100 * sum(errs) / len(errs):.2f} | {100 * p95:.2f} "
                     f"| {times['w' + w + 'a']} | {times['w' + w + 'b']} |")
with open(out, "w") as f:
    f.write(f"""# Warm-up round or not: \`knobs measure --sample all\` on $name

- date: $(date -u +%FT%TZ); commit: $commit; machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load before: $before, after: $after
- command: \`$invoked\`
- sessions in this order: warm-up 1, warm-up 0, warm-up 1, warm-up 0; each setting's two
  sessions compared configuration by configuration

| warm-up rounds | metric | configurations | MAPE (%) | P95 error (%) | first session (s) | second session (s) |
|---|---|---|---|---|---|---|
""" + "\n".join(lines) + "\n")
print(open(out).read())
PY
