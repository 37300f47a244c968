#!/usr/bin/env bash
# Family-based measurement of LZ4 1.9.4's compile-time features through the variant
# simulator, from the lz4-ifdef bench subject's newest counted run:
#
#   cargo run --release -p bench -- lz4-ifdef --metric instructions
#   bench/variants/lz4-family.sh
#
# Per approach (family, SPLat, ...): its model's MAPE against the counted brute force over
# the encoded options (every configuration of the simulator run in the plain counting
# build: the model's unit); per option and per configuration: the simulator against the
# real builds (`knobs simulator --check`, the build step's check.json: every configuration,
# compiled alike, machine instructions); and every annotation the encoding refuses, with
# its line (LZ4_HEAPMODE, LZ4_FAST_DEC_LOOP and LZ4HC_HEAPMODE encoded over lz4's sources).
# The study lands in docs/results/studies/variants-lz4-family-DATE-COMMIT.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
rows=$(ls -t docs/results/rows/metric-instructions/*-lz4-ifdef.jsonl 2>/dev/null | head -1)
check=examples/lz4-ifdef/build/simulator/check.json
[ -n "$rows" ] && [ -f "$check" ] \
    || { echo "lz4-family.sh: run \`cargo run --release -p bench -- lz4-ifdef --metric instructions\` first" >&2; exit 2; }
cargo build --release -q -p variants --example encode
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=examples/lz4-ifdef/build/src
target/release/examples/encode "$work/out" "$src" LZ4_HEAPMODE=1/0 LZ4HC_HEAPMODE=1/0 \
    LZ4_FAST_DEC_LOOP=1/0 -- lib/lz4.c lib/lz4.h lib/lz4hc.c lib/lz4hc.h lib/lz4frame.c \
    lib/lz4frame.h lib/xxhash.c programs/lz4cli.c programs/lz4io.c programs/bench.c \
    programs/datagen.c programs/util.h > "$work/encode.txt"
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+"
out=docs/results/studies/variants-lz4-family-$(date -u +%Y-%m-%d)-${commit%+}.md
python3 - "$out" "$commit" "$rows" "$check" "$work/encode.txt" <<'PY'
import datetime, json, platform, sys
out, commit, rows_file, check_file, encode_file = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
rows = [json.loads(l) for l in open(rows_file)]
check = json.load(open(check_file))
encode = open(encode_file).read().splitlines()
refusals = [l for l in encode if " stays build-only: " in l]
first = rows[0]
lines = ["# LZ4's compile-time features measured through the variant simulator", "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", f"- commit: {commit}",
    f"- machine: {cpu}",
    "- command: `cargo run --release -p bench -- lz4-ifdef --metric instructions`, then `bench/variants/lz4-family.sh`",
    f"- rows: `{rows_file}` (run of {first['started']}, commit {first['commit'][:7]}, knobs `{first['knobs']}`)", "",
    "LZ4 1.9.4 (Debian's source) decompressing 2.7 MB; LZ4_HEAPMODE and LZ4_FAST_DEC_LOOP encoded as",
    "run-time reads (`knobs simulator`, examples/lz4-ifdef). The approaches run on the simulator; their",
    "models are in the counting build's LLVM IR instructions and are compared with the counted brute",
    "force over the encoded options: every configuration of the simulator in the plain counting build.", "",
    "## The approaches on the simulator", "",
    "| approach | status | configurations measured | MAPE (%) | total (s) |", "|---|---|---|---|---|"]
for r in rows:
    if r["approach"] == "comparison":
        continue
    mape = r.get("mape_all_percent")
    mape = "—" if mape is None else f"{mape:.2f}"
    conf = r.get("configurations")
    reason = "" if r["status"] == "ok" else f": {(r.get('reason') or '').splitlines()[0][:120]}"
    lines.append(f"| {r['approach']} | {r['status']}{reason} | {'—' if conf is None else int(conf)} | {mape} | {r['elapsed_seconds']:.0f} |")
lines += ["", f"## The simulator against the real builds (`knobs simulator --check`, {check['check']['counter']})", "",
    "Every configuration of the two features, the real build compiled as the simulator is (clang-19 -O2, the",
    "same sources and defines), each counted beside the simulator in the same configuration on the",
    f"workload `{check['check']['workload']}`.", "",
    "| selected | real build | simulator | simulator − real |", "|---|---|---|---|"]
real_errors = []
for c in check["check"]["configurations"]:
    d = 100 * (c["simulator"] - c["real"]) / c["real"]
    real_errors.append(abs(d))
    lines.append(f"| {', '.join(c['selected']) or '(none)'} | {c['real']:,} | {c['simulator']:,} | {d:+.2f} % |")
lines += ["", f"The simulator's counts as a model of the real builds' counts: MAPE {sum(real_errors) / len(real_errors):.2f} %.", "",
    "Each option's effect: its configuration alone against every feature off.", "",
    "| option | real builds | simulator | apart, in % of the program |", "|---|---|---|---|"]
for e in check["check"]["effects"]:
    lines.append(f"| {e['option']} | {e['real']:+,} | {e['simulator']:+,} | {abs(e['difference_percent']):.2f} |")
lines += ["", "## Refused annotations", "",
    "The encoding over lz4's sources with LZ4HC_HEAPMODE as a third feature (examples/lz4-ifdef leaves",
    "it out: it stays a build option):", "", "```"] + refusals + ["```", ""]
open(out, "w").write("\n".join(lines))
print(out)
PY
