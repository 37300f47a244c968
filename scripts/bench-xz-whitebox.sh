#!/usr/bin/env bash
# ConfigCrusher and Comprex on a real C program (XZ Utils 5.4.1 from Debian's source package)
# against a brute-force ground truth and two black-box baselines, side by side in the form of
# the ConfigCrusher paper's Tables 5/6 (configurations measured, measurement time, MAPE),
# plus ConfigCrusher's analysis time and peak memory and its Table 7 (regions R, region
# entries per run RC and instrumented / native time, before and after the propagation
# optimisation; scripts/bench-crush-overhead.sh), and Comprex's taint-run slowdown, probes,
# profiler overhead and §V.A overhead correction.
#
#   bash scripts/bench-xz-whitebox.sh                     # builds target/release/knobs
#   KNOBS=/path/to/knobs bash scripts/bench-xz-whitebox.sh  # uses that binary
#   ALL_PROBES=0 bash scripts/bench-xz-whitebox.sh        # skip the `--all-probes` Comprex row
#   OVERHEAD_CONFIGS=all bash scripts/bench-xz-whitebox.sh  # Table 7 on all 48 configurations
#                                                           # (default 8: about 2 minutes)
#
# scripts/bench-xz-comprex.sh runs the same.
#
# Downloads and builds xz-utils the first time (examples/xz-whitebox/fetch-and-build.sh,
# cached under examples/xz-whitebox/build/). Rerunnable: the results store
# (examples/xz-whitebox/knobs.db) keeps every run, so a rerun measures only what is missing.
# A benchmark, not a test: never run in CI.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/examples/xz-whitebox"
spec="$dir/knobs.toml"          # absolute: see the note at `knobs crush` below
store="$dir/knobs.db"
model="$dir/xz-whitebox.configcrusher.json"
cx_model="$dir/xz-whitebox.comprex.json"
knobs="${KNOBS:-$root/target/release/knobs}"   # KNOBS=path: use that binary, do not build
logs="$dir/build/bench"
# Reading the crush log, the brute force, MAPE.
source "$root/scripts/lib/crush-bench.sh"
mkdir -p "$dir/build" "$logs"

echo "== 1. fetch and build xz-utils (native -O2 and LLVM bitcode)"
bash "$dir/fetch-and-build.sh"

echo "== 2. build knobs"
if [ -n "${KNOBS:-}" ]; then
    echo "using KNOBS=$KNOBS"
elif ! (cd "$root" && cargo build --release -q -p knobs); then
    [ -x "$knobs" ] || exit 1
    echo "warning: cargo build failed; using the existing $knobs" >&2
fi

echo "== 3. ConfigCrusher: knobs crush"
# The spec path must be absolute: with a relative --spec, knobs runs the instrumented binary
# by a path relative to the directory knobs was started in, but from the spec's directory
# (run.cwd), and every run fails with "could not start".
t0=$(date +%s.%N)
"$knobs" crush --spec "$spec" > "$logs/crush.log" 2>&1 || { tail -5 "$logs/crush.log"; exit 1; }
crush_elapsed=$(echo "$(date +%s.%N) - $t0" | bc)
# The first lines are the summary; the rest are the (long) per-region local models.
grep -E '^(built|analysed|regions|instrumented|[0-9]+ of [0-9]+ configurations)' "$logs/crush.log" | cut -c1-220
read_crush_log "$logs/crush.log"

echo "== 4. brute force: knobs measure --sample all (native build)"
brute_force

echo "== 4b. Comprex: knobs comprex (after the brute force, so the overhead correction reuses its native runs)"
# Three models from one exploration: the default (hot tiny methods unprobed, §V.A overhead
# correction), the same without the correction, and (ALL_PROBES=1, the default) a probe on
# every method region, as before probe selection.
t0=$(date +%s.%N)
"$knobs" comprex --spec "$spec" -o "$cx_model" > "$logs/comprex.log" 2>&1 || { tail -5 "$logs/comprex.log"; exit 1; }
cx_elapsed=$(echo "$(date +%s.%N) - $t0" | bc)
grep -E '^(dynamic taint|probes:|partitions with|[0-9]+ of [0-9]+ configurations|overhead correction|model written)' "$logs/comprex.log" | cut -c1-220
cx_variant=$(grep -o 'variant comprex:[0-9a-f]*' "$logs/comprex.log" | tail -1 | cut -d' ' -f2)
cx_explored=$(sed -n 's/^dynamic taint analysis .*: \([0-9]*\) configurations of [0-9]* in \([0-9.]*\) s.*/\1/p' "$logs/comprex.log")
cx_taint_s=$(sed -n 's/^dynamic taint analysis .*: [0-9]* configurations of [0-9]* in \([0-9.]*\) s.*/\1/p' "$logs/comprex.log")
cx_sites=$(sed -n 's/^dynamic taint analysis .*; \([0-9]*\) decision sites.*/\1/p' "$logs/comprex.log")
cx_configs=$(sed -n 's/^partitions with unprobed methods folded into their callers: \([0-9]*\) configurations.*/\1/p' "$logs/comprex.log")
cx_configs=${cx_configs:-$cx_explored}
cx_probes=$(sed -n 's/^probes: \([0-9]* of [0-9]*\) method regions.*/\1/p' "$logs/comprex.log")
cx_unprobed=$(grep '^  unprobed' "$logs/comprex.log" | awk '{ sub(/:$/, "", $2); print $2 }' | paste -sd' ')
cx_correction=$(sed -n 's/^overhead correction (§V.A, \([0-9]*\) configurations.*profiled = \([0-9.]*\) · native.*/\2 (from \1 configurations)/p' "$logs/comprex.log")
cx_native_k=$(sed -n 's/^overhead correction (§V.A, \([0-9]*\) configurations.*/\1/p' "$logs/comprex.log")
"$knobs" comprex --spec "$spec" --overhead-correction 0 -o "$logs/comprex-uncorrected.json" > "$logs/comprex-uncorrected.log" 2>&1 \
    || { tail -5 "$logs/comprex-uncorrected.log"; exit 1; }
if [ "${ALL_PROBES:-1}" = 1 ]; then
    "$knobs" comprex --spec "$spec" --all-probes --overhead-correction 0 -o "$logs/comprex-all-probes.json" \
        > "$logs/comprex-all-probes.log" 2>&1 || { tail -5 "$logs/comprex-all-probes.log"; exit 1; }
    cx_all_variant=$(grep -o 'variant comprex:[0-9a-f]*' "$logs/comprex-all-probes.log" | tail -1 | cut -d' ' -f2)
fi

echo "== 5. MAPE of the ConfigCrusher model"
"$knobs" results export --store "$store" -o "$logs/native.csv"
"$knobs" results export --store "$store" --variant "$variant" -o "$logs/instrumented.csv"
"$knobs" evaluate "$model" "$store" | tee "$logs/evaluate.log"
# The same by hand (predict + awk), and against what the model was built from (the
# instrumented program's own wall times).
cc_mape=$(mape_of "$model" "$logs/native.csv")
cc_mape_instr=$(mape_of "$model" "$logs/instrumented.csv")
echo "predict + awk: MAPE $cc_mape % against the native brute force, $cc_mape_instr % against the instrumented runs"

echo "== 5b. MAPE of the Comprex models"
"$knobs" results export --store "$store" --variant "$cx_variant" -o "$logs/comprex.csv"
cx_mape=$(mape_of "$cx_model" "$logs/native.csv")
cx_mape_uncorrected=$(mape_of "$logs/comprex-uncorrected.json" "$logs/native.csv")
cx_mape_instr=$(mape_of "$logs/comprex-uncorrected.json" "$logs/comprex.csv")
echo "Comprex: MAPE $cx_mape % (corrected), $cx_mape_uncorrected % (uncorrected) against the native brute force; $cx_mape_instr % (uncorrected) against its own profiled runs"
if [ -n "${cx_all_variant:-}" ]; then
    "$knobs" results export --store "$store" --variant "$cx_all_variant" -o "$logs/comprex-all-probes.csv"
    cx_all_mape=$(mape_of "$logs/comprex-all-probes.json" "$logs/native.csv")
    echo "Comprex with a probe on every method: MAPE $cx_all_mape % against the native brute force"
fi

echo "== 6. black-box baselines: knobs experiment compare"
"$knobs" experiment compare "$store" --strategies featurewise,pairwise --learners stepwise --reps 5 \
    | tee "$logs/compare.log"

# Σ median wall time over a set of configurations (one run each, as `experiment compare`'s
# measurement column), and the number of configurations.
sum_medians() { awk -F, 'NR > 1 { s += $NF; n++ } END { printf "%d %.1f\n", n, s }' "$1"; }
read -r bf_n bf_t < <(sum_medians "$logs/native.csv")
read -r cc_n cc_t < <(sum_medians "$logs/instrumented.csv")
read -r cx_n cx_t < <(sum_medians "$logs/comprex.csv")
cx_all_t=""
[ -n "${cx_all_variant:-}" ] && read -r cx_all_n cx_all_t < <(sum_medians "$logs/comprex-all-probes.csv")
bb() { # strategy label in compare's output → "configs measurement MAPE"
    awk -v s="$1" '$1 == s { printf "%s %.1f %s\n", $3, $4, $6 " ± " $8 }' "$logs/compare.log"
}
read -r fw_n fw_t fw_mape < <(bb featurewise)
read -r pw_n pw_t pw_mape < <(bb twise:2)

echo "== 7. overhead: region entries per run, instrumented vs native on every configuration"
# From the runs above: the optimised placement only, and the native and instrumented medians
# measured minutes apart.
rc=$(sqlite3 "$store" "select round(avg(e)) from (select sum(rt.entries) e from region_times rt join runs r on r.id = rt.run where r.variant = '$variant' group by r.id)")
rc_max=$(sqlite3 "$store" "select max(e) from (select sum(rt.entries) e from region_times rt join runs r on r.id = rt.run where r.variant = '$variant' group by r.id)")
# Geometric mean over configurations of instrumented median / native median.
ratio() { awk -F, 'FNR == 1 { next }
    { key = $0; sub(/,[^,]*$/, "", key) }
    NR == FNR { native[key] = $NF; next }
    key in native { s += log($NF / native[key]); n++ }
    END { printf "%.2f", exp(s / n) }' "$logs/native.csv" "$1"; }
overhead=$(ratio "$logs/instrumented.csv")
cx_overhead=$(ratio "$logs/comprex.csv")
cx_all_overhead=""
[ -n "${cx_all_variant:-}" ] && cx_all_overhead=$(ratio "$logs/comprex-all-probes.csv")
entries() { sqlite3 "$store" "select round(avg(e)) from (select sum(rt.entries) e from region_times rt join runs r on r.id = rt.run where r.variant = '$1' group by r.id)"; }
cx_rc=$(entries "$cx_variant")
cx_all_rc=""
[ -n "${cx_all_variant:-}" ] && cx_all_rc=$(entries "$cx_all_variant")

echo "== 7b. Table 7: before and after optimisation, native and both instrumented builds interleaved"
KNOBS="$knobs" CONFIGS="${OVERHEAD_CONFIGS:-8}" bash "$root/scripts/bench-crush-overhead.sh" "$spec" \
    > "$logs/overhead.log" 2>&1 || { tail -5 "$logs/overhead.log"; exit 1; }
sed -n '/^|/p' "$logs/overhead.log"

echo "== 8. Comprex: taint runs vs the native program on the analysis workload"
# The taint-instrumented build knobs comprex ran (its exploration), against the native build,
# wall time, median of 5 interleaved runs per preset on the analysis workload (small.txt,
# 35 KB) and one run each on the real one (input.txt) at -6.
taint_bin="$dir/.knobs/comprex/xz-whitebox.comprex-taint"
wall() { local t0; t0=$(date +%s%N); "$@" > /dev/null 2>&1; echo "$(( $(date +%s%N) - t0 ))"; }
taint_slowdown=""
for p in -0 -6 -6e; do
    for _ in 1 2 3 4 5; do
        n=$(wall "$dir/build/xz" --compress --stdout --keep --no-warn "$p" "$dir/small.txt")
        t=$(KNOBS_TAINT_OUT="$logs/taint-run.json" wall "$taint_bin" --compress --stdout --keep --no-warn "$p" "$dir/small.txt")
        echo "$n $t"
    done > "$logs/taint$p.txt"
    r=$(for k in 1 2; do cut -d' ' -f$k "$logs/taint$p.txt" | sort -n | sed -n 3p; done | paste -sd' ' \
        | awk '{ printf "%.3f s / %.3f s = %.0fx", $1 / 1e9, $2 / 1e9, $2 / $1 }')
    echo "  xz $p on small.txt, native / taint: $r"
    taint_slowdown="$taint_slowdown | $p: $r"
done
n=$(wall "$dir/build/xz" --compress --stdout --keep --no-warn -6 "$dir/input.txt")
t=$(KNOBS_TAINT_OUT="$logs/taint-run.json" wall "$taint_bin" --compress --stdout --keep --no-warn -6 "$dir/input.txt")
taint_real=$(echo "$n $t" | awk '{ printf "%.2f s / %.1f s = %.0fx", $1 / 1e9, $2 / 1e9, $2 / $1 }')
echo "  xz -6 on input.txt, native / taint: $taint_real"
# Where the difference comes from: the same bitcode without probes (clang-19 -O2, as knobs
# links the instrumented program) against the native build and the instrumented binary, CPU
# time (user + system, less sensitive to a loaded machine than wall time), median of 7
# interleaved runs.
plain="$dir/build/xz-from-bitcode"
[ "$plain" -nt "$dir/build/xz.bc" ] || clang-19 -O2 "$dir/build/xz.bc" -o "$plain"
instrumented=$(sed -n 's/^instrumented: .* → \(.*\)$/\1/p' "$logs/crush.log")   # as knobs crush reports it
cpu() { # preset → "native plain instrumented": median CPU seconds of 7 interleaved runs each
    for _ in 1 2 3 4 5 6 7; do
        for b in "$dir/build/xz" "$plain" "$instrumented"; do
            /usr/bin/time -f '%U %S' "$b" --compress --stdout --keep --no-warn "$1" --check=crc32 \
                --format=xz "$dir/input.txt" 2>&1 >/dev/null | awk '{ print $1 + $2 }'
        done | paste -sd' '
    done > "$logs/cpu$1.txt"
    for k in 1 2 3; do cut -d' ' -f$k "$logs/cpu$1.txt" | sort -n | sed -n 4p; done | paste -sd' ' \
        | awk '{ printf "%.2f / %.2f / %.2f", $1, $2, $3 }'
}
echo "CPU seconds (user + system), median of 7 interleaved runs (native / same bitcode, no probes / instrumented):"
decomp=""
for p in -0 -3 -6 -6e; do
    r=$(cpu "$p")
    echo "  xz $p: $r"
    decomp="$decomp | $p: $r"
done

echo
echo "xz $("$dir/build/xz" --version | head -1 | awk '{print $NF}') (Debian bookworm source), $all_configs configurations, 1.4 MB text, wall time; MAPE against the native brute force (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| approach | configurations | measurement (s, Σ median) | MAPE (%) |"
echo "|---|---|---|---|"
echo "| brute force | $bf_n | $bf_t | 0 (ground truth) |"
echo "| ConfigCrusher | $cc_configs (lower bound $lower_bound) | $cc_t (instrumented) | $cc_mape (vs its own instrumented runs: $cc_mape_instr) |"
echo "| Comprex | $cx_configs + $cx_native_k native (correction) | $cx_t (profiled) | $cx_mape (uncorrected $cx_mape_uncorrected; vs its own profiled runs: $cx_mape_instr) |"
[ -n "$cx_all_t" ] && echo "| Comprex, a probe on every method (--all-probes, uncorrected) | $cx_all_n | $cx_all_t (profiled) | $cx_all_mape |"
echo "| feature-wise + stepwise | $fw_n | $fw_t | $fw_mape |"
echo "| pair-wise + stepwise | $pw_n | $pw_t | $pw_mape |"
echo
echo "ConfigCrusher: build $build_s s, analysis $analysis_s s (peak memory $peak_mib MiB); irrelevant: $irrelevant; interactions: $interactions"
echo "regions R: $r_before before propagation, $r_after after; region entries per run RC: mean $rc, max $rc_max"
echo "instrumented / native wall time from the runs above (geometric mean over the $cc_n configurations, measured minutes apart): $overhead"
echo "CPU s native / bitcode -O2 without probes / instrumented${decomp}"
echo "Comprex: taint analysis $cx_taint_s s ($cx_explored configurations on small.txt, $cx_sites decision sites); probes on $cx_probes method regions, unprobed: $cx_unprobed"
echo "Comprex: profiled / native wall time (geometric mean over the $cx_n configurations): $cx_overhead, region entries per run $cx_rc${cx_all_overhead:+ (every method probed: $cx_all_overhead, $cx_all_rc entries per run)}; overhead correction: profiled = ${cx_correction:-none} · native"
echo "Comprex: taint run vs native, wall, median of 5 on small.txt${taint_slowdown}; one run on input.txt at -6: $taint_real"
echo "elapsed: knobs crush $(printf %.0f "$crush_elapsed") s, knobs comprex $(printf %.0f "$cx_elapsed") s, knobs measure --sample all $(printf %.0f "$measure_elapsed") s (0 when everything was already in the store)"
echo
# Last: the Table 7 block of bench-crush-overhead.sh, as it printed it.
sed -n '/^Table 7/,$p' "$logs/overhead.log"
