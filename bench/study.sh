#!/usr/bin/env bash
# Runs a benchmark command and keeps what it prints as a study:
#
#   bench/study.sh NAME COMMAND [ARG...]
#
# writes docs/results/studies/NAME-DATE-COMMIT.md with the date (UTC), the commit (a `+`
# when tracked files have changes), the machine (CPU, cores, memory, load at the start and
# the end), the command and its standard output, verbatim. The command's exit status is
# this script's; nothing is written when it fails.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/study.sh NAME COMMAND [ARG...]" >&2; exit 2; }
name=$1
shift
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
output=$("$@")
out=docs/results/studies/$name-$(date -u +%Y-%m-%d)-${commit%+}.md
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
memory=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
{
    echo "# $name"
    echo
    echo "- date: $started"
    echo "- commit: $commit"
    echo "- machine: $cpu, $(nproc) cores, $memory; load $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    printf -- '- command: `%s`\n' "$*"
    echo
    echo '```text'
    echo "$output"
    echo '```'
} > "$out"
echo "$out"
