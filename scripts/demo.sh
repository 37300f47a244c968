#!/usr/bin/env bash
# The main job on the bundled examples: measure Debian's `xz` in every configuration of a
# 48-configuration space (ground truth, about a minute and a half; the results store
# examples/xz/knobs.db is kept, so a second run resumes or reuses it), learn models from a
# pair-wise and random samples and report their error against the ground truth; ConfigCrusher
# (white-box) on the paper's running example, SPLat and family-based measurement on theirs;
# then the foundation: xz's larger configuration
# space and a hand-written model of the running example.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-debian.sh
cargo build --release --locked -q
knobs() { ./target/release/knobs "$@"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
step() { printf '\n\033[1m$ knobs %s\033[0m\n' "$*"; knobs "$@"; }

# Black-box modelling of a real program, end to end.
step space show examples/xz/knobs.toml
step measure --spec examples/xz/knobs.toml --sample all
step results show --spec examples/xz/knobs.toml
step experiment compare examples/xz/knobs.db --sample featurewise,pairwise,random:12,random:24 --learners "stepwise:log;rf;auto" --repetitions 10
step learn examples/xz/knobs.db --learner stepwise:log --sample pairwise -o "$out/xz-model.json"
step model show "$out/xz-model.json"
step evaluate "$out/xz-model.json" examples/xz/knobs.db
if [ -d ../shared/datasets/deepperf ]; then
  # DeepPerf's protocol on a published dataset (5 repetitions here; the benchmark runs 30).
  step experiment deepperf ../shared/datasets/deepperf/x264.csv --learner auto --n 16 --repetitions 5
fi

# White-box: ConfigCrusher on the paper's running example (compile with clang-19, taint
# analysis, 8 of 1,024 configurations measured with region timers, local models).
step crush --spec examples/running-example/knobs.toml --store "$out/fig2.db" --work-dir "$out/fig2" -o "$out/fig2.json"

# The white-box approaches the papers compare with, on their examples (the native builds are
# what SPLat measures and what the family-based approach's overhead correction compares with).
clang-19 -O2 -o examples/splat/fig2 examples/splat/main.c
step splat --spec examples/splat/knobs.toml --store "$out/splat.db" --work-dir "$out/splat" -o "$out/splat.json"
clang-19 -O2 -o examples/printer/printer examples/printer/main.c
step family --spec examples/printer/knobs.toml --store "$out/printer.db" --work-dir "$out/printer" -o "$out/printer.json"

# The foundation: configuration spaces and models.
step space show examples/xz/space.toml
step space count examples/xz/space.toml
step space sample examples/xz/space.toml --sample pairwise --seed 1 -o "$out/pairwise.csv"
echo "(first rows of $out/pairwise.csv)"; head -4 "$out/pairwise.csv"
step space check examples/xz/space.toml --csv "$out/pairwise.csv" | tail -2
# An invalid configuration: exit status 1 and the rules it breaks.
step space check examples/xz/space.toml "format,format_lzma,check_crc64,level=6,threads=2" || true

step model show examples/running-example/model.json
knobs space sample examples/running-example/space.toml --sample all -o "$out/all.csv" 2>/dev/null
step predict examples/running-example/model.json "$out/all.csv"
# Region OR1 measured in the four cells of {A, C} (0 s, 3 s with A, 0 s with C, 6 s with both):
step model from-subspaces --options A,C 0 3 0 6
