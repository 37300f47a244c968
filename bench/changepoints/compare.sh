#!/usr/bin/env bash
# Change points across versions: knobs against the reference implementation
# (AI-4-SE/Changepoints-Across-Variants-And-Versions) on the same synthetic systems, side by
# side in one run: F1, precision, recall (both scored by `knobs changepoints score`, the
# paper's unit with a 5-commit tolerance) and wall time.
#
#   bench/changepoints/compare.sh REF_DIR [--full] [--seeds N]
#
# REF_DIR holds the reference's change_point_identification.py (its `implementation/`).
# Python: a venv with the reference's dependencies at $CP_PYTHON (default: python3); the
# reference needs numpy<2, pandas<2 (pandas 3 silently generates no change points), scipy,
# scikit-learn, seaborn, matplotlib and z3-solver, e.g.
#   python3 -m venv /tmp/cpvenv && /tmp/cpvenv/bin/pip install numpy==1.26.4 pandas==1.5.3 \
#     scipy==1.11.4 scikit-learn==1.3.2 seaborn==0.13.2 matplotlib z3-solver
#   CP_PYTHON=/tmp/cpvenv/bin/python bench/changepoints/compare.sh REF_DIR
# The reference as published crashes in its first iteration (its z3 sampler returns one
# configuration); reference_driver.py runs its algorithm with the initial configurations
# drawn outside it (see the driver's header). Results land in docs/results/studies/.
set -euo pipefail
ref=${1:?usage: compare.sh REF_DIR [--full] [--seeds N]}; shift
invoked="bench/changepoints/compare.sh REF_DIR $*"
grid=(); seeds=2
while [ $# -gt 0 ]; do
  case $1 in
    --full) grid=(--full) ;;
    --seeds) seeds=$2; shift ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${CP_PYTHON:-python3}
commit=$(git -C "$here" rev-parse --short HEAD)
if [ -n "$(git -C "$here" status --porcelain -- crates)" ]; then commit="$commit+dirty"; fi
cargo build --release -q -p knobs --manifest-path "$here/Cargo.toml"
knobs="$here/target/release/knobs"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
start=$(date +%s.%N)
"$knobs" changepoints grid "${grid[@]}" --seeds "$seeds" --systems-dir "$work/systems" --json \
  > "$work/knobs.json" 2> "$work/knobs.err"
for sys in "$work"/systems/*.json; do
  name=$(basename "$sys" .json)
  t0=$(date +%s.%N)
  if "$py" -W ignore "$here/bench/changepoints/reference_driver.py" "$ref" "$sys" \
      > "$work/$name.ref.json" 2> "$work/$name.ref.err"; then
    "$knobs" changepoints score "$sys" "$work/$name.ref.json" > "$work/$name.score.json"
  else
    echo '{"error": "the reference failed"}' > "$work/$name.score.json"
  fi
  t1=$(date +%s.%N)
  echo "$name $(echo "$t1 - $t0" | bc)" >> "$work/ref.times"
  echo "reference on $name: $(tr -d '\n ' < "$work/$name.score.json" | cut -c1-80)" >&2
done
day=$(date -u +%F)
out="$here/docs/results/studies/changepoints-$day-$commit"
python3 - "$work" "$out" "$commit" "$day" "$invoked" <<'PY'
import json, os, sys, platform
work, out, commit, day, command = sys.argv[1:]
knobs = json.load(open(f"{work}/knobs.json"))
times = dict(l.split() for l in open(f"{work}/ref.times"))
rows = []
for r in knobs:
    p = r["point"]
    name = f"o{p['options']}-c{p['commits']}-cp{p['change_points']}-p{p['p_interaction']}-n{p['initial_per_option']}-m{p['measurements']}-s{r['seed']}"
    ref = json.load(open(f"{work}/{name}.score.json"))
    refrun = {}
    try:
        refrun = json.load(open(f"{work}/{name}.ref.json"))
    except Exception:
        pass
    rows.append({"system": name, "knobs": {"f1": r["score"]["f1"], "precision": r["score"]["precision"],
                 "recall": r["score"]["recall"], "iterations": r["iterations"], "measurements": r["measurements"],
                 "seconds": r["seconds"]},
                 "reference": {**{k: ref.get(k) for k in ("f1", "precision", "recall", "error")},
                               "iterations": refrun.get("iterations"), "measurements": refrun.get("measurements"),
                               "seconds": float(times.get(name, "nan")),
                               "algorithm_seconds": refrun.get("algorithm_time_s")}})
meta = {"date": day, "commit": commit, "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "load": os.getloadavg(), "command": command}
json.dump({"meta": meta, "rows": rows}, open(out + ".json", "w"), indent=1)
PY
python3 "$here/bench/changepoints/summarise.py" "$out.json"
