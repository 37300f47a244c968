#!/usr/bin/env bash
# What ConfigCrusher plans on the six real programs: `knobs crush --stop-after analyse`
# without and with `--dynamic-confirmation` (the static cover run on the measured workload,
# observing branches and function entries), per program the configurations to measure, the
# tainted decisions, the interactions, what the confirmation found (branches one way, never
# run, functions never entered, interactions dropped) and the analysis time. Nothing is
# measured. Each program must be built first (`bash examples/NAME/fetch-and-build.sh`).
# The table lands in docs/results/studies/analysis-plans-DATE-COMMIT.md.
#
#   bench/analysis/plans.sh [PROGRAM ...]    (default: the six of docs/results)
set -euo pipefail
cd "$(dirname "$0")/../.."
invoked="bench/analysis/plans.sh $*"
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=(gzip-whitebox xz-whitebox bzip2 lz4 zstd sqlite3)
for p in "${programs[@]}"; do
  [ -f "examples/$p/knobs.toml" ] || { echo "plans.sh: no examples/$p/knobs.toml" >&2; exit 2; }
done
cargo build --release -q -p knobs
knobs=$PWD/target/release/knobs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
before=$(cut -d' ' -f1-3 /proc/loadavg)
for p in "${programs[@]}"; do
  for mode in static confirmed; do
    flags=(); [ "$mode" = static ] || flags=(--dynamic-confirmation)
    echo "plans.sh: $p ($mode)" >&2
    "$knobs" crush --spec "examples/$p/knobs.toml" --work-dir "$work/$p-$mode" \
      --store "$work/$p-$mode.db" --stop-after analyse --json "${flags[@]}" \
      > "$work/$p-$mode.json" 2> "$work/$p-$mode.err" \
      || { echo "plans.sh: $p ($mode) failed:" >&2; tail -3 "$work/$p-$mode.err" >&2; exit 1; }
  done
done
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+"
day=$(date -u +%Y-%m-%d)
out=docs/results/studies/analysis-plans-$day-${commit%+}.md
python3 - "$work" "$out" "$invoked" "$before" "$commit" "${programs[@]}" <<'PY'
import datetime, json, os, sys
work, out, invoked, before, commit, *programs = sys.argv[1:]
def load(p, mode):
    return json.load(open(os.path.join(work, f"{p}-{mode}.json")))
def sets(s):
    return " ".join("{" + ",".join(i) + "}" for i in s) or "none"
rows = []
for p in programs:
    s, c = load(p, "static"), load(p, "confirmed")
    conf = c["analysis"]["confirmation"]
    never = conf["functions_never_entered"]
    rows.append(
        f"| {p} | {s['configurations']['total']} | **{s['configurations']['measured']}** | "
        f"{s['analysis']['tainted_decisions']:,} | {s['analysis']['seconds']:.1f} | "
        f"**{c['configurations']['measured']}** | {c['analysis']['tainted_decisions']:,} | "
        f"{conf['branches_observed']:,} / {conf['branches_decided']:,} / {conf['branches_never_run']:,} | "
        f"{len(never):,} of {conf['functions_observed']:,} | {sets(conf['dropped'])} | "
        f"{', '.join(c['analysis']['irrelevant']) or 'none'} | {c['analysis']['seconds']:.0f} |")
cores = os.cpu_count()
model = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
with open(out, "w") as f:
    f.write(f"""# ConfigCrusher's plans on the real programs, without and with dynamic confirmation

- command: `{invoked}`
- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}; commit: {commit}; machine: {cores} cores, {model}; load before: {before}

`knobs crush --spec examples/PROGRAM/knobs.toml --stop-after analyse [--dynamic-confirmation]`:
configurations to measure (of the valid ones), tainted decisions and the analysis time (s;
with confirmation it includes the observed runs of the static cover on the measured
workload). Confirmation: tainted branches observed / went one way in every run / never
ran; functions no run entered; the static interactions it dropped; options that read as
irrelevant after it.

| program | configurations | static: planned | tainted decisions | s | confirmed: planned | tainted decisions | branches observed / one way / never ran | functions never entered | dropped | irrelevant | s |
|---|---|---|---|---|---|---|---|---|---|---|---|
""")
    f.write("\n".join(rows) + "\n")
print(out)
PY
