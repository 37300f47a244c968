#!/usr/bin/env python3
"""The tables of an equal-cost run (equal_cost.sh's work directory): WORK OUT COMMIT DAY COMMAND
-> OUT.json, OUT.md."""
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
