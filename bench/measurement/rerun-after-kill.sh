#!/usr/bin/env bash
# How soon a rerun of `knobs measure` starts measuring after the first was killed: the xz
# example (`--sample random:16`) measured into a fresh store, the run killed after 5 s with
# SIGINT (Ctrl-C) and, in a second store, with SIGKILL; then the same command again, timed
# from its start until its first `xz` run starts. The table lands in
# docs/results/studies/rerun-after-kill-DATE-COMMIT.md.
#
#   bench/measurement/rerun-after-kill.sh [KNOBS]     (default: target/release/knobs)
set -euo pipefail
cd "$(dirname "$0")/../.."
invoked="bench/measurement/rerun-after-kill.sh $*"
knobs=$(realpath "${1:-target/release/knobs}")
command -v xz >/dev/null || { echo "rerun-after-kill: needs xz on PATH" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp examples/xz/knobs.toml "$work/"

# Seconds from now until an `xz` process whose parent is PID runs (up to 600 s).
first_run_after() {
  local pid=$1 start=$2
  for _ in $(seq 1 60000); do
    if pgrep -P "$pid" -x xz >/dev/null 2>&1; then
      python3 -c "import time; print(f'{time.time() - $start:.2f}')"
      return
    fi
    sleep 0.01
  done
  echo "none"
}

rows=()
for signal in INT KILL; do
  store="$work/$signal.db"
  "$knobs" measure --spec "$work/knobs.toml" --sample random:16 --store "$store" \
    >"$work/$signal.first.log" 2>&1 &
  first=$!
  sleep 5
  kill -"$signal" "$first"
  wait "$first" 2>/dev/null || true
  start=$(python3 -c "import time; print(time.time())")
  "$knobs" measure --accept-failures --spec "$work/knobs.toml" --sample random:16 --store "$store" \
    >"$work/$signal.rerun.log" 2>&1 &
  rerun=$!
  seconds=$(first_run_after "$rerun" "$start")
  waited=$(grep -c "waiting for" "$work/$signal.rerun.log" || true)
  kill "$rerun" 2>/dev/null || true
  wait "$rerun" 2>/dev/null || true
  rows+=("| SIG$signal | $seconds | $waited |")
done

commit=$(git rev-parse --short HEAD)
out=docs/results/studies/rerun-after-kill-$(date +%F)-$commit.md
{
  echo "# A rerun of \`knobs measure\` after the first was killed"
  echo
  echo "Date $(date -u +%FT%TZ), commit $commit, machine $(hostname) ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)),"
  echo "command \`$invoked\`. The xz example, \`--sample random:16\`, killed 5 s after its start."
  echo
  echo "| signal | seconds until the rerun's first run | lines saying it waits on a claim |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$out"
cat "$out"
