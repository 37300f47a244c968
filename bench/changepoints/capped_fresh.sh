#!/usr/bin/env bash
# Knobs held to a measurement budget on synthetic systems the equal-cost comparison has not
# seen: for each setting of an equal-cost run (its JSON), seeds FIRST..LAST (4..6) of that
# setting are generated anew and knobs runs on each as it stops by itself and held to the
# reference's mean measurements on that setting (`--max-measurements`). The capped run is
# scored twice: as reported (the associations its cache confirmed) and with the
# associations it left out unconfirmed added back (the whole cache, as knobs reported before
# the confirmed-only rule). Knobs only; no reference run.
#
#   bench/changepoints/capped_fresh.sh EQUAL_COST.json [FIRST] [LAST]
#
# Results land in docs/results/studies/changepoints-capped-fresh-DATE-COMMIT.{md,json}.
set -euo pipefail
equal=${1:?usage: capped_fresh.sh EQUAL_COST.json [FIRST] [LAST]}
first=${2:-4}
last=${3:-6}
here=$(cd "$(dirname "$0")/../.." && pwd)
commit=$(git -C "$here" rev-parse --short HEAD)
if [ -n "$(git -C "$here" status --porcelain -- crates)" ]; then commit="$commit+dirty"; fi
cargo build --release -q -p knobs --manifest-path "$here/Cargo.toml"
knobs="$here/target/release/knobs"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# setting and the reference's mean measurements on it, one a line
python3 - "$equal" > "$work/settings" <<'PY'
import json, sys, collections
by = collections.defaultdict(list)
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["reference"].get("measurements"):
        by[r["system"].rsplit("-s", 1)[0]].append(r["reference"]["measurements"])
for s, ms in sorted(by.items()):
    print(s, round(sum(ms) / len(ms)))
PY
while read -r setting cap; do
  options=$(echo "$setting" | sed -E 's/^o([0-9]+)-.*/\1/')
  commits=$(echo "$setting" | sed -E 's/.*-c([0-9]+)-.*/\1/')
  cps=$(echo "$setting" | sed -E 's/.*-cp([0-9]+)-.*/\1/')
  p=$(echo "$setting" | sed -E 's/.*-p([0-9.]+)-.*/\1/')
  per=$(echo "$setting" | sed -E 's/.*-n([0-9]+)-.*/\1/')
  budget=$(echo "$setting" | sed -E 's/.*-m([0-9]+)$/\1/')
  for seed in $(seq "$first" "$last"); do
    name="$setting-s$seed"
    common=(--seed "$seed" --measurements "$budget" --initial-configurations $((per * options))
            --commit-share 0.03 --threshold 1%)
    "$knobs" changepoints synthetic --options "$options" --commits "$commits" --change-points "$cps" \
      --p-interaction "$p" --system-seed "$seed" --write-system "$work/$name.system.json" \
      "${common[@]}" --json > "$work/$name.free.json"
    "$knobs" changepoints synthetic --system "$work/$name.system.json" "${common[@]}" \
      --max-measurements "$cap" --json > "$work/$name.capped.json"
    # The whole cache of the capped run, scored by knobs itself.
    python3 - "$work/$name.capped.json" > "$work/$name.whole.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pair = lambda a: ([a["commit"]] if a["affects"] == "Unattributed"
                  else [a["commit"], -1 if a["affects"] == "All" else a["affects"]["Feature"]])
print(json.dumps({"associations": [pair(a) for a in d["associations"] + d["unconfirmed"]]}))
PY
    "$knobs" changepoints score "$work/$name.system.json" "$work/$name.whole.json" > "$work/$name.wholescore.json"
    echo "$name $cap" >> "$work/runs"
  done
done < "$work/settings"
day=$(date -u +%F)
out="$here/docs/results/studies/changepoints-capped-fresh-$day-$commit"
python3 - "$work" "$out" "$commit" "$day" "bench/changepoints/capped_fresh.sh $(basename "$equal") $first $last" <<'PY'
import collections, json, os, platform, sys
work, out, commit, day, command = sys.argv[1:]
rows = []
for line in open(f"{work}/runs"):
    name, cap = line.split()
    free = json.load(open(f"{work}/{name}.free.json"))
    capped = json.load(open(f"{work}/{name}.capped.json"))
    whole = json.load(open(f"{work}/{name}.wholescore.json"))
    rows.append({"system": name, "cap": int(cap),
                 "free": {"f1": free["score"]["f1"], "measurements": free["measurements"], "stopped": free["stopped"]},
                 "capped": {"f1": capped["score"]["f1"], "precision": capped["score"]["precision"],
                            "recall": capped["score"]["recall"], "measurements": capped["measurements"],
                            "stopped": capped["stopped"], "unconfirmed": len(capped["unconfirmed"])},
                 "capped_whole_cache": {k: whole[k] for k in ("f1", "precision", "recall")}})
meta = {"date": day, "commit": commit, "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "load": os.getloadavg(), "command": command}
json.dump({"meta": meta, "rows": rows}, open(out + ".json", "w"), indent=1)
mean = lambda xs: sum(xs) / len(xs)
L = [f"# Change points held to a budget on fresh seeds, {day} ({commit})", "",
     f"Machine {meta['machine']}, load {meta['load'][0]:.1f}; `{command}`. Knobs only: each setting's "
     "systems of these seeds are new; \"capped\" is held to the reference's mean measurements on the "
     "setting in the equal-cost run, and reports the associations its cache confirmed; \"whole cache\" "
     "adds back those it left out unconfirmed.", "",
     "| system | cap | capped F1 (P / R) | whole cache F1 (P / R) | left out | knobs F1 | knobs measurements | knobs stopped at |",
     "|---|---|---|---|---|---|---|---|"]
for r in rows:
    c, w, fr = r["capped"], r["capped_whole_cache"], r["free"]
    L.append(f"| {r['system']} | {r['cap']} | {c['f1']:.2f} ({c['precision']:.2f} / {c['recall']:.2f}) | "
             f"{w['f1']:.2f} ({w['precision']:.2f} / {w['recall']:.2f}) | {c['unconfirmed']} | {fr['f1']:.2f} | "
             f"{fr['measurements']} | {fr['stopped'].split(' (')[0]} |")
by = collections.defaultdict(list)
for r in rows:
    by[r["system"].rsplit("-s", 1)[0]].append(r)
L += ["", "Per setting (mean over seeds):", "",
      "| setting | cap | capped F1 | whole cache F1 | knobs F1 | knobs measurements |", "|---|---|---|---|---|---|"]
for s, rs in sorted(by.items()):
    L.append(f"| {s} | {rs[0]['cap']} | {mean([r['capped']['f1'] for r in rs]):.2f} | "
             f"{mean([r['capped_whole_cache']['f1'] for r in rs]):.2f} | {mean([r['free']['f1'] for r in rs]):.2f} | "
             f"{mean([r['free']['measurements'] for r in rs]):.0f} |")
L += ["", f"Mean F1: capped {mean([r['capped']['f1'] for r in rows]):.2f}, whole cache "
      f"{mean([r['capped_whole_cache']['f1'] for r in rows]):.2f}, knobs {mean([r['free']['f1'] for r in rows]):.2f}."]
open(out + ".md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
