#!/usr/bin/env bash
# The main job on the bundled examples: xz's configuration space (show, count, sample
# pairwise, explain an invalid configuration) and the ConfigCrusher running example's model
# (print, predict every configuration, convert a region between subspace and influence form).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-debian.sh
cargo build --release --locked -q
knobs() { ./target/release/knobs "$@"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
step() { printf '\n\033[1m$ knobs %s\033[0m\n' "$*"; knobs "$@"; }

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
