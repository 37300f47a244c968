#!/usr/bin/env bash
# How steady is this machine? A fixed amount of work (a loop of integer arithmetic that
# touches no memory: the same instructions every run) measured N times in one knobs session,
# its wall and CPU time's coefficient of variation, range and the drift between the halves
# of the session. Whatever spread this shows is the machine's, not the program's or the
# method's: it is the floor under every A/A test on this machine. The result lands in
# docs/results/.
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
/* 3e8 multiply-adds on a register: no memory traffic, no system calls. */
int main(void) {
  volatile unsigned long x = 0;
  for (unsigned long i = 0; i < 300000000UL; i++) x += i * i;
  return (int)(x & 1);
}
C
cc -O1 -o "$work/spin" "$work/spin.c"
cat > "$work/knobs.toml" <<TOML
name = "spin"
[run]
program = "./spin"
[measure]
repetitions = $runs
warmup = 1
metric = "cpu"
[[workload]]
name = "fixed"
TOML
load() { cut -d' ' -f1-3 /proc/loadavg; }
before=$(load)
# Whatever else used a CPU at the start (above 20 %): a quiet machine shows none.
others=$(ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 > 20 { printf "%s%s (%s %%)", sep, $2, $1; sep = ", " }')
for _ in $(seq 1 "$busy"); do (while :; do :; done) & done
"$knobs" measure --spec "$work/knobs.toml" >/dev/null 2>"$work/log"
"$knobs" results export --format json --spec "$work/knobs.toml" > "$work/runs.json"
commit=$(git rev-parse --short HEAD)
day=$(date -u +%Y-%m-%d)
out=docs/results/host-noise-$day-$commit.md
[ "$busy" = 0 ] || out=docs/results/host-noise-$day-$commit-busy$busy.md
python3 - "$work/runs.json" "$out" "$invoked" "$before" "$busy" "$commit" "${others:-none}" <<'PY'
import json, statistics as st, sys, datetime, os
runs, out, invoked, before, busy, commit, others = sys.argv[1:]
rows = [r for r in json.load(open(runs)) if r["status"] == "ok"]
rows.sort(key=lambda r: r["started"])
def line(name, xs):
    m = st.mean(xs)
    half = len(xs) // 2
    a, b = st.median(xs[:half]), st.median(xs[half:])
    q = st.quantiles(xs, n=20)
    return (f"| {name} | {len(xs)} | {m:.4f} | {100 * st.pstdev(xs) / m:.1f} | {min(xs):.4f} | "
            f"{max(xs):.4f} | {q[0]:.4f} | {q[-1]:.4f} | {100 * (b - a) / a:+.1f} |")
wall = [r["wall"] for r in rows]
cpu = [r["user"] + r["system_time"] for r in rows]
cores = os.cpu_count()
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
with open(out, "w") as f:
    f.write(f"""# The machine's own noise: a fixed loop measured {len(rows)} times

- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}; commit: {commit}; machine: {cores} cores, {model}; load before: {before}
- command: `{invoked}`
- busy loops during the session: {busy}; other processes using a CPU at the start: {others}
- what runs: 3·10⁸ multiply-adds on a register (the same instructions every run, no memory
  traffic, no system calls), one knobs session, `metric = "cpu"`

| time | runs | mean (s) | CV (%) | min (s) | max (s) | P5 (s) | P95 (s) | second half vs first (median, %) |
|---|---|---|---|---|---|---|---|---|
{line("wall", wall)}
{line("cpu (user + system)", cpu)}
""")
print(open(out).read())
PY
