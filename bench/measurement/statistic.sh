#!/usr/bin/env bash
# Which statistic of a configuration's runs two measurement sessions agree on best: the
# stores of an A/A test (two sessions of the same spec, e.g. kept by `AA_KEEP=DIR aa.sh`)
# read with the median, the mean, the minimum and the mean of the fastest half of each
# configuration's runs, in CPU and in wall time, over the first k rounds of each session
# (k = 3, 5, … up to what both hold), and the fastest-half mean of runs divided by their
# round's speed (a two-way reading: each round's median ratio to the configurations' values):
# MAPE and 95th-percentile error between the sessions.
# knobs reads runs as the fastest-half mean (`measure::Summary::value`); this is the
# evidence for that choice. The result lands in docs/results/studies/.
#
#   bench/measurement/statistic.sh A.db B.db NAME
set -euo pipefail
cd "$(dirname "$0")/../.."
a=${1:?usage: statistic.sh A.db B.db NAME}; b=${2:?usage: statistic.sh A.db B.db NAME}
name=${3:?usage: statistic.sh A.db B.db NAME}
invoked="bench/measurement/statistic.sh $*"
cargo build --release -q -p knobs
knobs=$PWD/target/release/knobs
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$knobs" results export --store "$a" --format json -o "$work/a.json"
"$knobs" results export --store "$b" --format json -o "$work/b.json"
commit=$(git rev-parse --short HEAD)
out=docs/results/studies/statistic-$(date -u +%F)-$commit-$name.md
python3 - "$work/a.json" "$work/b.json" "$out" "$invoked" "$a" "$b" "$commit" <<'PY'
import collections, datetime, json, os, statistics as st, sys
pa, pb, out, invoked, sa, sb, commit = sys.argv[1:]
def load(path):
    runs = collections.defaultdict(list)
    for r in json.load(open(path)):
        if r["status"] == "ok" and r["variant"] == "" and r["round"] is not None:
            runs[r["configuration"]].append((r["round"], r["user"] + r["system_time"], r["wall"]))
    return {c: sorted(v) for c, v in runs.items()}
A, B = load(pa), load(pb)
keys = sorted(set(A) & set(B))
def fastest_half(xs):
    s = sorted(xs)
    return st.mean(s[: max(1, len(s) // 2)])
stats = [("fastest-half mean (knobs)", fastest_half), ("median", st.median), ("mean", st.mean), ("minimum", min)]
most = min(min(len(A[k]), len(B[k])) for k in keys)
ks = sorted({k for k in (3, 5, 7, 10, 15, 20) if k <= most} | {most})
def two_way(S, i, k):
    # Each round's runs divided by the round's speed (the median over configurations of run
    # / the configuration's value), then the fastest-half mean; three passes.
    sub = {c: {r[0]: r[i] for r in S[c][:k]} for c in keys}
    val = {c: fastest_half(list(v.values())) for c, v in sub.items()}
    for _ in range(3):
        rounds = {r for v in sub.values() for r in v}
        speed = {r: st.median([v[r] / val[c] for c, v in sub.items() if r in v]) for r in rounds}
        val = {c: fastest_half([x / speed[r] for r, x in v.items()]) for c, v in sub.items()}
    return val
rows = []
for clock, i in (("cpu", 1), ("wall", 2)):
    for k in ks:
        for label, f in stats:
            errs = sorted(abs(f([r[i] for r in B[c][:k]]) / f([r[i] for r in A[c][:k]]) - 1) for c in keys)
            p95 = errs[min(len(errs) - 1, round(0.95 * (len(errs) - 1)))]
            rows.append(f"| {clock} | {k} | {label} | {100 * st.mean(errs):.2f} | {100 * p95:.2f} |")
        a, b = two_way(A, i, k), two_way(B, i, k)
        errs = sorted(abs(b[c] / a[c] - 1) for c in keys)
        p95 = errs[min(len(errs) - 1, round(0.95 * (len(errs) - 1)))]
        rows.append(f"| {clock} | {k} | fastest-half mean of runs scaled by their round's speed | {100 * st.mean(errs):.2f} | {100 * p95:.2f} |")
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
with open(out, "w") as f:
    f.write(f"""# Which statistic two sessions agree on: {len(keys)} configurations, up to {most} rounds

- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}; commit: {commit}; machine: {os.cpu_count()} cores, {model}
- command: `{invoked}` (stores `{sa}`, `{sb}`)
- each configuration's first k rounds of each session read with each statistic; errors are
  between the two sessions, configuration by configuration

| clock | rounds | statistic | MAPE (%) | P95 error (%) |
|---|---|---|---|---|
""" + "\n".join(rows) + "\n")
print(open(out).read())
PY
