#!/usr/bin/env bash
# How steady is this machine? Two fixed amounts of work, each the same instructions every
# run, measured N times each in one knobs session (interleaved rounds): a loop of integer
# arithmetic on a register (no memory traffic) and a pointer chase through 16 MiB (every
# step a cache miss, like a compressor's match finder). Their wall and CPU time's
# coefficient of variation, range and the drift between the halves of the session. Whatever
# spread this shows is the machine's, not the program's or the method's: it is the floor
# under every A/A test on this machine, the chase's for memory-bound programs. The result
# lands in docs/results/studies/.
#
#   bench/measurement/host-noise.sh [--runs N] [--busy N]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=40; busy=0
invoked="bench/measurement/host-noise.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --busy) busy=$2; shift ;;
    *) echo "host-noise.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cargo build --release -q -p knobs
knobs=$PWD/target/release/knobs
work=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cat > "$work/spin.c" <<'C'
#include <stdint.h>
#include <stdlib.h>
/* No argument: 3e8 multiply-adds on a register (no memory traffic, no system calls).
   "chase": a fixed random cycle through 4 Mi entries (16 MiB), followed 2e6 steps. */
int main(int argc, char **argv) {
  if (argc < 2) {
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 300000000UL; i++) x += i * i;
    return (int)(x & 1);
  }
  const uint32_t n = 4u << 20;
  uint32_t *next = malloc(n * sizeof *next);
  if (!next) return 1;
  for (uint32_t i = 0; i < n; i++) next[i] = i;
  uint64_t s = 88172645463325252ULL;
  for (uint32_t i = n - 1; i > 0; i--) { /* Sattolo's shuffle: one cycle */
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    uint32_t j = (uint32_t)(s % i), t = next[i];
    next[i] = next[j];
    next[j] = t;
  }
  volatile uint32_t p = 0;
  uint32_t q = p;
  for (uint32_t k = 0; k < 2000000u; k++) q = next[q];
  p = q;
  return 0;
}
C
cc -O1 -o "$work/spin" "$work/spin.c"
cat > "$work/knobs.toml" <<TOML
name = "spin"
[run]
program = "./spin"
args = ["{options}"]
[measure]
repetitions = $runs
warmup = 1
metric = "cpu"
[[workload]]
name = "fixed"
[[option]]
name = "chase"
on = ["chase"]
TOML
load() { cut -d' ' -f1-3 /proc/loadavg; }
before=$(load)
# Whatever else used a CPU at the start (above 20 %): a quiet machine shows none.
others=$(ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 > 20 { printf "%s%s (%s %%)", sep, $2, $1; sep = ", " }')
for _ in $(seq 1 "$busy"); do (while :; do :; done) & done
"$knobs" measure --spec "$work/knobs.toml" --sample all >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
"$knobs" results export --format json --spec "$work/knobs.toml" > "$work/runs.json"
commit=$(git rev-parse --short HEAD)
day=$(date -u +%Y-%m-%d)
out=docs/results/studies/host-noise-$day-$commit.md
[ "$busy" = 0 ] || out=docs/results/studies/host-noise-$day-$commit-busy$busy.md
python3 - "$work/runs.json" "$out" "$invoked" "$before" "$busy" "$commit" "${others:-none}" <<'PY'
import json, statistics as st, sys, datetime, os
runs, out, invoked, before, busy, commit, others = sys.argv[1:]
rows = [r for r in json.load(open(runs)) if r["status"] == "ok"]
rows.sort(key=lambda r: r["started"])
import random
def line(work, name, xs):
    m = st.mean(xs)
    half = len(xs) // 2
    a, b = st.median(xs[:half]), st.median(xs[half:])
    q = st.quantiles(xs, n=20)
    # Two sessions of 3 rounds each, drawn from these runs: how far apart are their
    # fastest-half means (the minimum of 3)? The A/A error this machine alone causes.
    rng = random.Random(1)
    aa = []
    for _ in range(2000):
        six = rng.sample(xs, 6)
        aa.append(abs(min(six[3:]) / min(six[:3]) - 1) * 100)
    return (f"| {work} | {name} | {len(xs)} | {m:.4f} | {100 * st.pstdev(xs) / m:.1f} | {min(xs):.4f} | "
            f"{max(xs):.4f} | {q[0]:.4f} | {q[-1]:.4f} | {100 * (b - a) / a:+.1f} | {st.mean(aa):.2f} |")
table = []
for work, configuration in (("register loop", ""), ("pointer chase", "chase")):
    mine = [r for r in rows if r["configuration"] == configuration]
    table.append(line(work, "wall", [r["wall"] for r in mine]))
    table.append(line(work, "cpu (user + system)", [r["user"] + r["system_time"] for r in mine]))
table = "\n".join(table)
cores = os.cpu_count()
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
with open(out, "w") as f:
    f.write(f"""# The machine's own noise: two fixed programs measured {len(rows) // 2} times each

- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}; commit: {commit}; machine: {cores} cores, {model}; load before: {before}
- command: `{invoked}`
- busy loops during the session: {busy}; other processes using a CPU at the start: {others}
- what runs, in interleaved rounds of one knobs session (`metric = "cpu"`): a register loop,
  3·10⁸ multiply-adds (no memory traffic, no system calls), and a pointer chase, a fixed
  random cycle through 16 MiB followed 2·10⁶ steps (every step a cache miss); the same
  instructions every run
- A/A at 3 rounds: two sessions' minimum of 3 runs drawn from these runs, their mean
  difference (2000 draws); the error this machine alone puts into a 3-round A/A test

| program | time | runs | mean (s) | CV (%) | min (s) | max (s) | P5 (s) | P95 (s) | second half vs first (median, %) | A/A at 3 rounds (%) |
|---|---|---|---|---|---|---|---|---|---|---|
{table}
""")
print(open(out).read())
PY
