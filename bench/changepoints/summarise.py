#!/usr/bin/env python3
"""The markdown table of a change-point comparison (compare.sh's JSON): RESULT.json -> RESULT.md."""
import json
import sys

path = sys.argv[1]
data = json.load(open(path))
meta, rows = data["meta"], data["rows"]


def mean(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return sum(xs) / len(xs) if xs else float("nan")


def fmt(x, digits=2):
    return "n/a" if x is None else f"{x:.{digits}f}"


lines = [
    f"# Change points: knobs and the reference implementation, {meta['date']} ({meta['commit']})",
    "",
    f"Machine {meta['machine']}, load {meta['load'][0]:.1f}; `{meta['command']}`. Both are scored by "
    "`knobs changepoints score` (an association is a commit and an option; correct within 5 commits "
    "of a true one). The reference's wall time includes its synthetic oracle (pandas) and its z3 "
    "configuration sampler; its algorithm alone (likelihoods, KDE, LASSO, acquisition) is the "
    "\"reference algorithm s\" column.",
    "",
    "| system | knobs F1 | reference F1 | knobs P / R | reference P / R | knobs measurements | reference measurements | knobs s | reference s | reference algorithm s |",
    "|---|---|---|---|---|---|---|---|---|---|",
]
for r in rows:
    k, f = r["knobs"], r["reference"]
    lines.append(
        f"| {r['system']} | {k['f1']:.2f} | {fmt(f.get('f1'))} | {k['precision']:.2f} / {k['recall']:.2f} | "
        f"{fmt(f.get('precision'))} / {fmt(f.get('recall'))} | {k['measurements']} | {f.get('measurements') or 'n/a'} | "
        f"{k['seconds']:.1f} | {f['seconds']:.1f} | {fmt(f.get('algorithm_seconds'), 1)} |"
    )
lines += [
    "",
    f"Mean F1: knobs {mean([r['knobs']['f1'] for r in rows]):.2f}, reference "
    f"{mean([r['reference'].get('f1') for r in rows]):.2f}. Mean measurements: knobs "
    f"{mean([r['knobs']['measurements'] for r in rows]):.0f}, reference "
    f"{mean([r['reference'].get('measurements') for r in rows]):.0f}. Mean wall time: knobs "
    f"{mean([r['knobs']['seconds'] for r in rows]):.1f} s, reference {mean([r['reference']['seconds'] for r in rows]):.1f} s "
    f"(algorithm alone {mean([r['reference'].get('algorithm_seconds') for r in rows]):.1f} s).",
    "",
]
open(path[: -len(".json")] + ".md", "w").write("\n".join(lines))
print("\n".join(lines))
