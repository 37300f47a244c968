#!/usr/bin/env bash
# Change points in lrzip's measured history, as the paper's authors published it: the
# reference implementation's realworld/data/lrzip_performance.csv (commits 300-734 of the
# first-parent history x 40 configurations), replayed by `knobs changepoints replay` with
# default settings for seeds 1-5, each detection scored against the change points the
# authors identified by hand (realworld/README.md: 521 529 539 628 669 675 683) and 497,
# which the data show in 32 of the 40 configurations at the 10 % threshold.
#
#   bench/changepoints/lrzip.sh REF_REPO [SEEDS] [-- REPLAY FLAGS…]
#
# REF_REPO: a clone (or the bare git directory) of AI-4-SE/Changepoints-Across-Variants-And-
# Versions, or the CSV itself. A detected change point matches a true one within 5 commits,
# each at most once; the rest are false. Results land in docs/results/studies/.
set -euo pipefail
src=${1:?usage: lrzip.sh REF_REPO [SEEDS] [-- REPLAY FLAGS…]}; shift
seeds=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then seeds=$1; shift; fi
if [ $# -gt 0 ]; then shift; fi
flags=("$@")
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
csv="$work/lrzip_performance.csv"
if [ -f "$src" ]; then
  cp "$src" "$csv"
elif [ -f "$src/realworld/data/lrzip_performance.csv" ]; then
  cp "$src/realworld/data/lrzip_performance.csv" "$csv"
else
  git --git-dir="$src" show HEAD:realworld/data/lrzip_performance.csv > "$csv" 2>/dev/null \
    || git -C "$src" show HEAD:realworld/data/lrzip_performance.csv > "$csv"
fi
commit=$(git -C "$here" rev-parse --short HEAD)
if [ -n "$(git -C "$here" status --porcelain -- crates)" ]; then commit="$commit+dirty"; fi
cargo build --release -q -p knobs --manifest-path "$here/Cargo.toml"
knobs="$here/target/release/knobs"
for seed in $(seq 1 "$seeds"); do
  "$knobs" changepoints replay "$csv" --seed "$seed" "${flags[@]}" --json > "$work/seed-$seed.json"
done
day=$(date -u +%F)
suffix=""
if [ ${#flags[@]} -gt 0 ]; then suffix="-$(echo "${flags[*]}" | tr -c 'a-zA-Z0-9.' '-' | tr -s '-' | sed 's/^-//; s/-$//')"; fi
if [ "$seeds" != 5 ]; then suffix="-seeds-$seeds$suffix"; fi
out="$here/docs/results/studies/changepoints-lrzip-replay-$day-$commit$suffix"
python3 - "$work" "$out" "$commit" "$day" "$seeds" "bench/changepoints/lrzip.sh REF_REPO $seeds${flags:+ -- ${flags[*]}}" <<'PY'
import json, os, platform, statistics, sys
work, out, commit, day, seeds, command = sys.argv[1:]
truth = [497, 521, 529, 539, 628, 669, 675, 683]
rows = []
for seed in range(1, int(seeds) + 1):
    d = json.load(open(f"{work}/seed-{seed}.json"))
    cps = sorted(d["change_points"], key=lambda c: c["commit"])
    used, found = set(), {}
    for t in truth:  # one-to-one, in order: optimal for equal windows on a line
        m = [c["commit"] for c in cps if abs(c["commit"] - t) <= 5 and c["commit"] not in used]
        if m:
            used.add(m[0]); found[t] = m[0]
    def what(c):
        groups = c["option_groups"]  # alternatives within, an interaction across
        opts = " & ".join(("(%s)" if len(g) > 1 and len(groups) > 1 else "%s") % " or ".join(g) for g in groups)
        if c.get("unattributed"):
            return "some configurations, which no option explains"
        return ("all configurations" + (f" and {opts}" if opts else "")) if c["all_configurations"] else opts
    rows.append({"seed": seed, "found": found, "false": [c["commit"] for c in cps if c["commit"] not in used],
                 "change_points": [{"commit": c["commit"], "what": what(c), "weight": c["weight"]} for c in cps],
                 "measurements": d["measurements"], "configurations": d["configurations"],
                 "iterations": len(d["iterations"]), "stopped": d["stopped"],
                 "commits": [d["first_commit"], d["first_commit"] + d["commits"] - 1]})
meta = {"date": day, "commit": commit, "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "load": os.getloadavg(), "command": command}
json.dump({"meta": meta, "truth": truth, "rows": rows}, open(out + ".json", "w"), indent=1)
L = [f"# lrzip's published history replayed, {day} ({commit})", "",
     f"Machine {meta['machine']}, load {meta['load'][0]:.1f}; `{command}`: "
     f"`knobs changepoints replay lrzip_performance.csv --seed N` (commits {rows[0]['commits'][0]}–{rows[0]['commits'][1]}). "
     "True: " + ", ".join(map(str, truth)) + " (a detection within 5 commits, each used once).", "",
     "| seed | found | missed | false | measurements | configurations | iterations |", "|---|---|---|---|---|---|---|"]
for r in rows:
    missed = [t for t in truth if t not in r["found"]]
    L.append(f"| {r['seed']} | {len(r['found'])} ({', '.join(f'{t}→{c}' for t, c in r['found'].items())}) | "
             f"{', '.join(map(str, missed)) or '-'} | {len(r['false'])} ({', '.join(map(str, r['false'])) or '-'}) | "
             f"{r['measurements']} | {r['configurations']} | {r['iterations']} |")
L += ["", f"Median found {statistics.median(len(r['found']) for r in rows)} of {len(truth)}, "
      f"median false {statistics.median(len(r['false']) for r in rows)}.", "",
      "Commit by commit: the seeds that find each true change point, where, and what they associate it with.", "",
      "| true commit | seeds | detected at | associated with |", "|---|---|---|---|"]
for t in truth:
    hits = [(r["seed"], r["found"][t]) for r in rows if t in r["found"]]
    whats = sorted({c["what"] for r in rows for c in r["change_points"] if t in r["found"] and c["commit"] == r["found"][t]})
    L.append(f"| {t} | {len(hits)} of {len(rows)} | {', '.join(str(c) for _, c in hits) or '-'} | {'; '.join(whats) or '-'} |")
L += ["", "Change points per seed:", ""]
for r in rows:
    L.append(f"- seed {r['seed']}: " + "; ".join(f"{c['commit']} {c['what']} (weight {c['weight']:.2f})" for c in r["change_points"]))
open(out + ".md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
