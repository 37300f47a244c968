#!/usr/bin/env bash
# Are the effects knobs prints effects? A spec's every configuration measured once, a linear
# and a log stepwise model learned from them, and for each: the model's own spread over the
# valid configurations (from `knobs predict --top`, every prediction listed), the largest
# effect `knobs model show --spec` prints (per option and per term) and the report's
# headline option. No printed effect may exceed the spread (a ratio for the log model).
# The table lands in docs/results/studies/effects-DATE-COMMIT-NAME.md.
#
#   bench/models/effects.sh [SPEC] [KNOBS]   (default: examples/xz/knobs.toml, target/release/knobs)
set -euo pipefail
cd "$(dirname "$0")/../.."
invoked="bench/models/effects.sh $*"
spec=$(realpath "${1:-examples/xz/knobs.toml}")
knobs=$(realpath "${2:-target/release/knobs}")
name=$(basename "$(dirname "$spec")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$spec" "$work/knobs.toml"
"$knobs" measure --accept-failures --spec "$work/knobs.toml" --sample all --repetitions 1 \
  --store "$work/s.db" >"$work/measure.log" 2>&1
count=$("$knobs" space count "$work/knobs.toml" 2>/dev/null || echo 10000)
rows=()
for learner in stepwise stepwise:log; do
  model="$work/${learner/:/-}.json"
  "$knobs" learn "$work/s.db" --learner "$learner" -o "$model" >/dev/null
  "$knobs" model show "$model" --spec "$work/knobs.toml" >"$model.show"
  "$knobs" predict "$model" --spec "$work/knobs.toml" --top "$count" >"$model.top"
  "$knobs" report --spec "$work/knobs.toml" --store "$work/s.db" --model "$model" -o "$model.html" >/dev/null 2>&1
  rows+=("$(python3 - "$learner" "$model" <<'PY'
import re, sys
learner, model = sys.argv[1], sys.argv[2]
unit = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
def seconds(text):
    v, u = text.split()
    return float(v) * unit[u]
preds = [seconds(" ".join(l.split()[:2])) for l in open(model + ".top") if l.strip()]
log = learner.endswith(":log")
spread = max(preds) / min(preds) if log else max(preds) - min(preds)
def size(text):
    text = text.strip()
    if text.startswith("×"):
        x = float(text[1:])
        return max(x, 1 / x)
    return abs(seconds(text))
effects = []
for line in open(model + ".show"):
    m = re.match(r"\s+(option|term)\s+(\S+)\s+(×[\d.]+|-?[\d.]+ (?:s|ms|µs|ns))", line)
    if m:
        effects.append((size(m.group(3)), m.group(1), m.group(2), m.group(3)))
largest = max(effects)
html = re.sub(r"<[^>]+>", " ", open(model + ".html").read())
head = re.search(r"Most influential option:\s+(\S+)\s+\(([^,]+),", html)
headline = f"{head.group(1)} {head.group(2).strip()}" if head else "none"
hsize = size(head.group(2).strip().lstrip("+")) if head else 0
shown = lambda v: f"×{v:.2f}" if log else f"{v * 1e3:.2f} ms"
ok = largest[0] <= spread * (1 + 1e-3) and hsize <= spread * (1 + 1e-3)
print(f"| {learner} | {shown(spread)} | {largest[1]} {largest[2]} {largest[3]} | {headline} | {'yes' if ok else 'NO'} |")
PY
)")
done
commit=$(git rev-parse --short HEAD)
out=docs/results/studies/effects-$(date +%F)-$commit-$name.md
{
  echo "# Effects against the model's own spread: $name"
  echo
  echo "Date $(date -u +%FT%TZ), commit $commit, machine $(hostname) ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)),"
  echo "command \`$invoked\`. Every configuration measured once; the models learned from all of them."
  echo
  echo "| learner | spread of the predictions (valid configurations) | largest effect \`model show --spec\` prints | report's headline option | every effect within the spread |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$out"
cat "$out"
