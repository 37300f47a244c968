#!/usr/bin/env bash
# ConfigCrusher on a real C program (XZ Utils 5.4.1 from Debian's source package) against a
# brute-force ground truth and two black-box baselines, in the form of the ConfigCrusher
# paper's Tables 5/6 (configurations measured, measurement time, MAPE), plus analysis time,
# regions before/after propagation (R), region entries per run (RC) and instrumentation
# overhead.
#
#   bash scripts/bench-xz-whitebox.sh                     # builds target/release/knobs
#   KNOBS=/path/to/knobs bash scripts/bench-xz-whitebox.sh  # uses that binary
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
knobs="${KNOBS:-$root/target/release/knobs}"   # KNOBS=path: use that binary, do not build
logs="$dir/build/bench"
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
variant=$(grep -o 'variant configcrusher:[0-9a-f]*' "$logs/crush.log" | cut -d' ' -f2)
build_s=$(sed -n 's/^built .* in \([0-9.]*\) s$/\1/p' "$logs/crush.log")
analysis_s=$(sed -n 's/^analysed in \([0-9.]*\) s.*/\1/p' "$logs/crush.log")
interactions=$(sed -n 's/^analysed .*interactions: \(.*\)$/\1/p' "$logs/crush.log")
irrelevant=$(sed -n 's/^analysed .*irrelevant options: \([^;]*\);.*/\1/p' "$logs/crush.log")
r_after=$(sed -n 's/^regions: \([0-9]*\) (\([0-9]*\) before.*/\1/p' "$logs/crush.log")
r_before=$(sed -n 's/^regions: \([0-9]*\) (\([0-9]*\) before.*/\2/p' "$logs/crush.log")
cc_configs=$(sed -n 's/.*configurations to measure: \([0-9]*\) of \([0-9]*\) (lower bound \([0-9]*\)).*/\1/p' "$logs/crush.log")
all_configs=$(sed -n 's/.*configurations to measure: \([0-9]*\) of \([0-9]*\) (lower bound \([0-9]*\)).*/\2/p' "$logs/crush.log")
lower_bound=$(sed -n 's/.*configurations to measure: \([0-9]*\) of \([0-9]*\) (lower bound \([0-9]*\)).*/\3/p' "$logs/crush.log")

echo "== 4. brute force: knobs measure --sample all (native build)"
t0=$(date +%s.%N)
"$knobs" measure --spec "$spec" --sample all > "$logs/measure.log" 2>&1 || { tail -5 "$logs/measure.log"; exit 1; }
measure_elapsed=$(echo "$(date +%s.%N) - $t0" | bc)
grep -E '^[0-9]+ of [0-9]+ configurations' "$logs/measure.log" || tail -1 "$logs/measure.log"

echo "== 5. MAPE of the ConfigCrusher model"
"$knobs" results export --store "$store" -o "$logs/native.csv"
"$knobs" results export --store "$store" --variant "$variant" -o "$logs/instrumented.csv"
"$knobs" evaluate "$model" "$store" | tee "$logs/evaluate.log"
# The same by hand (predict + awk), and against what the model was built from (the
# instrumented program's own wall times).
mape() { "$knobs" predict "$model" "$1" | awk -F, 'NR > 1 { m = $(NF-1); p = $NF; d = p - m; if (d < 0) d = -d; s += d / m; n++ } END { printf "%.1f", 100 * s / n }'; }
cc_mape=$(mape "$logs/native.csv")
cc_mape_instr=$(mape "$logs/instrumented.csv")
echo "predict + awk: MAPE $cc_mape % against the native brute force, $cc_mape_instr % against the instrumented runs"

echo "== 6. black-box baselines: knobs experiment compare"
"$knobs" experiment compare "$store" --strategies featurewise,pairwise --learners stepwise --reps 5 \
    | tee "$logs/compare.log"

# Σ median wall time over a set of configurations (one run each, as `experiment compare`'s
# measurement column), and the number of configurations.
sum_medians() { awk -F, 'NR > 1 { s += $NF; n++ } END { printf "%d %.1f\n", n, s }' "$1"; }
read -r bf_n bf_t < <(sum_medians "$logs/native.csv")
read -r cc_n cc_t < <(sum_medians "$logs/instrumented.csv")
bb() { # strategy label in compare's output → "configs measurement MAPE"
    awk -v s="$1" '$1 == s { printf "%s %.1f %s\n", $3, $4, $6 " ± " $8 }' "$logs/compare.log"
}
read -r fw_n fw_t fw_mape < <(bb featurewise)
read -r pw_n pw_t pw_mape < <(bb twise:2)

echo "== 7. overhead: region entries per run, instrumented vs native on every configuration"
rc=$(sqlite3 "$store" "select round(avg(e)) from (select sum(rt.entries) e from region_times rt join runs r on r.id = rt.run where r.variant = '$variant' group by r.id)")
rc_max=$(sqlite3 "$store" "select max(e) from (select sum(rt.entries) e from region_times rt join runs r on r.id = rt.run where r.variant = '$variant' group by r.id)")
# Geometric mean over configurations of instrumented median / native median.
overhead=$(awk -F, 'FNR == 1 { next }
    { key = $0; sub(/,[^,]*$/, "", key) }
    NR == FNR { native[key] = $NF; next }
    key in native { s += log($NF / native[key]); n++ }
    END { printf "%.2f", exp(s / n) }' "$logs/native.csv" "$logs/instrumented.csv")
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
echo "xz $("$dir/build/xz" --version | head -1 | awk '{print $NF}') (Debian bookworm source), $all_configs configurations, 1.4 MB text, wall time; MAPE against the native brute force"
echo
echo "| approach | configurations | measurement (s, Σ median) | MAPE (%) |"
echo "|---|---|---|---|"
echo "| brute force | $bf_n | $bf_t | 0 (ground truth) |"
echo "| ConfigCrusher | $cc_configs (lower bound $lower_bound) | $cc_t (instrumented) | $cc_mape (vs its own instrumented runs: $cc_mape_instr) |"
echo "| feature-wise + stepwise | $fw_n | $fw_t | $fw_mape |"
echo "| pair-wise + stepwise | $pw_n | $pw_t | $pw_mape |"
echo
echo "ConfigCrusher: build $build_s s, analysis $analysis_s s; irrelevant: $irrelevant; interactions: $interactions"
echo "regions R: $r_before before propagation, $r_after after; region entries per run RC: mean $rc, max $rc_max"
echo "instrumented / native wall time (geometric mean over the $cc_n configurations): $overhead"
echo "CPU s native / bitcode -O2 without probes / instrumented${decomp}"
echo "elapsed: knobs crush $(printf %.0f "$crush_elapsed") s, knobs measure --sample all $(printf %.0f "$measure_elapsed") s (0 when everything was already in the store)"
