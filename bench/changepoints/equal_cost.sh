#!/usr/bin/env bash
# Change points at equal cost: on each synthetic system, the reference implementation runs
# first; knobs then runs twice on the same system with the same parameters, once as it
# stops by itself and once held to the reference's number of measurements
# (`--max-measurements`). All three are scored by `knobs changepoints score` (5-commit
# tolerance, an association is a commit and an option).
#
#   CP_PYTHON=/path/to/venv/bin/python bench/changepoints/equal_cost.sh REF_DIR [SEEDS]
#
# Settings: 8 of Table 1 (8 and 16 options x 2 and 5 change points x 100 and 500
# measurements per iteration; 1,000 commits, p_interaction 0.7, 2 initial configurations per
# option), seeds 1..SEEDS (3). REF_DIR and the venv as for compare.sh (its header). Results
# land in docs/results/changepoints-equal-cost-DATE-COMMIT.{md,json}.
set -euo pipefail
ref=${1:?usage: equal_cost.sh REF_DIR [SEEDS]}
seeds=${2:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${CP_PYTHON:-python3}
commit=$(git -C "$here" rev-parse --short HEAD)
if [ -n "$(git -C "$here" status --porcelain -- crates)" ]; then commit="$commit+dirty"; fi
cargo build --release -q -p knobs --manifest-path "$here/Cargo.toml"
knobs="$here/target/release/knobs"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for options in 8 16; do
  for cps in 2 5; do
    for budget in 100 500; do
      for seed in $(seq 1 "$seeds"); do
        name="o$options-c1000-cp$cps-p0.7-n2-m$budget-s$seed"
        sys="$work/$name.json"
        common=(--seed "$seed" --measurements "$budget" --initial-configurations $((2 * options))
                --commit-share 0.03 --threshold 1%)
        "$knobs" changepoints synthetic --options "$options" --commits 1000 --change-points "$cps" \
          --p-interaction 0.7 --system-seed "$seed" --write-system "$sys" "${common[@]}" --json \
          > "$work/$name.knobs.json"
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
out="$here/docs/results/changepoints-equal-cost-$day-$commit"
python3 - "$work" "$out" "$commit" "$day" "bench/changepoints/equal_cost.sh REF_DIR $seeds" <<'PY'
import glob, json, os, platform, sys
work, out, commit, day, command = sys.argv[1:]
rows = []
for path in sorted(glob.glob(f"{work}/*.knobs.json")):
    name = os.path.basename(path)[: -len(".knobs.json")]
    own = json.load(open(path))
    capped = json.load(open(f"{work}/{name}.capped.json"))
    ref = json.load(open(f"{work}/{name}.ref.json"))
    refscore = json.load(open(f"{work}/{name}.refscore.json"))
    pick = lambda d: {k: d.get("score", {}).get(k) for k in ("f1", "precision", "recall")} | {
        "measurements": d.get("measurements"), "seconds": d.get("seconds")}
    rows.append({"system": name, "knobs": pick(own), "knobs_capped": pick(capped),
                 "reference": {**{k: refscore.get(k) for k in ("f1", "precision", "recall", "error")},
                               "measurements": ref.get("measurements"),
                               "seconds": float(open(f"{work}/{name}.reftime").read()),
                               "algorithm_seconds": ref.get("algorithm_time_s")}})
meta = {"date": day, "commit": commit, "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "load": os.getloadavg(), "command": command}
json.dump({"meta": meta, "rows": rows}, open(out + ".json", "w"), indent=1)
f = lambda x, d=2: "n/a" if x is None else f"{x:.{d}f}"
mean = lambda xs: (sum(xs) / len(xs)) if xs else None
L = [f"# Change points at equal cost: knobs and the reference implementation, {day} ({commit})", "",
     f"Machine {meta['machine']}, load {meta['load'][0]:.1f}; `{command}`. Same systems, same parameters; "
     "\"knobs capped\" is held to the reference's measurements on that system (`--max-measurements`). "
     "Scored by `knobs changepoints score` (5-commit tolerance).", "",
     "| system | reference F1 (P / R) | knobs capped F1 (P / R) | knobs F1 (P / R) | reference measurements | knobs capped | knobs | reference s (algorithm) | knobs capped s |",
     "|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    a, c, k = r["reference"], r["knobs_capped"], r["knobs"]
    L.append(f"| {r['system']} | {f(a['f1'])} ({f(a['precision'])} / {f(a['recall'])}) | {f(c['f1'])} ({f(c['precision'])} / {f(c['recall'])}) | "
             f"{f(k['f1'])} ({f(k['precision'])} / {f(k['recall'])}) | {a['measurements']} | {c['measurements']} | {k['measurements']} | "
             f"{f(a['seconds'], 1)} ({f(a['algorithm_seconds'], 1)}) | {f(c['seconds'], 1)} |")
L += ["", "Per setting (mean over seeds):", "",
      "| setting | reference F1 | knobs capped F1 | knobs F1 | reference measurements | knobs capped | knobs |", "|---|---|---|---|---|---|---|"]
settings = {}
for r in rows:
    settings.setdefault(r["system"].rsplit("-s", 1)[0], []).append(r)
for s, rs in settings.items():
    g = lambda who, k: mean([r[who][k] for r in rs if r[who].get(k) is not None])
    L.append(f"| {s} | {f(g('reference', 'f1'))} | {f(g('knobs_capped', 'f1'))} | {f(g('knobs', 'f1'))} | "
             f"{f(g('reference', 'measurements'), 0)} | {f(g('knobs_capped', 'measurements'), 0)} | {f(g('knobs', 'measurements'), 0)} |")
g = lambda who, k: mean([r[who][k] for r in rows if r[who].get(k) is not None])
L += ["", f"Mean F1: reference {f(g('reference', 'f1'))}, knobs capped {f(g('knobs_capped', 'f1'))}, knobs {f(g('knobs', 'f1'))}. "
      f"Mean measurements: reference {f(g('reference', 'measurements'), 0)}, knobs capped {f(g('knobs_capped', 'measurements'), 0)}, "
      f"knobs {f(g('knobs', 'measurements'), 0)}."]
open(out + ".md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
