#!/usr/bin/env bash
# What the CPU clock costs the region timers' probes: ns per enter/exit pair (best of 5 runs
# of a loop of PAIRS pairs inside an open region, each timing itself by its thread's CPU
# clock, so that the machine's load (time the loop waits for a CPU) stays out of it) for
# the runtime at REV (default: the commit before the CPU clock) and the current one
# with the CPU clock off, as by default (read for intervals of 100 us or more: never in this
# loop), and read at every event (KNOBS_REGION_CPU_US=0).
#
# RUNTIME `calltree`: the same for the family-based call tree (knobs_calltree.c), whose
# enter/exit pairs are the function calls themselves.
#
#   bench/region-clock/probe_cost.sh [PAIRS] [REV] [runtime|calltree]
set -euo pipefail
cd "$(dirname "$0")/../.."
pairs=${1:-2000000}
source_file=crates/runtime/c/knobs_${3:-runtime}.c
# The commit before the one that brought the CPU clock in (the last commit, before it is).
first=$(git log --format=%H -S KNOBS_REGION_CPU_US -- "$source_file" | tail -1)
rev=${2:-${first:+$first~1}}
rev=${rev:-HEAD}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
git show "$rev:$source_file" > "$work"/old.c
cp "$source_file" "$work"/new.c
cat > "$work"/loop.c <<'C'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
void __knobs_region_enter(uint32_t id);
void __knobs_region_exit(uint32_t id);
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    __knobs_region_enter(100);
    double t0 = now();
    for (long i = 0; i < n; i++) {
        __knobs_region_enter((uint32_t)(i & 7));
        __knobs_region_exit((uint32_t)(i & 7));
    }
    double t1 = now();
    __knobs_region_exit(100);
    printf("%.2f\n", (t1 - t0) / (double)n * 1e9);
    return 0;
}
C
for v in old new; do
  clang-19 -O2 -fPIC -std=c11 -c "$work/$v.c" -o "$work/$v.o"
  clang-19 -O2 "$work"/loop.c "$work/$v.o" -o "$work/loop-$v"
done
best() { # $1 exe, then env assignments
  local exe=$1; shift
  for _ in 1 2 3 4 5; do env KNOBS_REGION_TIMES="$work/t" KNOBS_CALL_TREE="$work/t" "$@" "$exe" "$pairs"; done | sort -g | head -1
}
echo "load $(cut -d' ' -f1-3 /proc/loadavg); $pairs pairs; CPU ns per enter/exit pair, best of 5"
echo "| runtime | CPU clock | ns/pair |"
echo "|---|---|---|"
echo "| $(git rev-parse --short "$rev") (before) | none | $(best "$work"/loop-old) |"
echo "| current | off | $(best "$work"/loop-new KNOBS_REGION_CPU_US=off) |"
echo "| current | default (intervals ≥ 100 µs) | $(best "$work"/loop-new) |"
echo "| current | every event (KNOBS_REGION_CPU_US=0) | $(best "$work"/loop-new KNOBS_REGION_CPU_US=0) |"
KNOBS_REGION_TIMES="$work"/t KNOBS_CALL_TREE="$work"/t KNOBS_REGION_CPU_US=0 "$work"/loop-new 100000 >/dev/null
echo "read cost the runtime measured at start (cpu_read_ns): $(grep cpu_read_ns "$work"/t | tr '\t' ' ' | cut -d' ' -f2) ns"
