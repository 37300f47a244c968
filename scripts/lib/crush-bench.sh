# Shared by scripts/bench-crush.sh and scripts/bench-xz-whitebox.sh (source it; needs $knobs,
# $spec and $logs): reading `knobs crush`'s summary, the brute force, and MAPE.

# Sets variant, build_s, analysis_s, peak_mib, interactions, irrelevant, r_after, r_before,
# cc_configs, all_configs and lower_bound from a `knobs crush` log.
read_crush_log() { # LOG
    variant=$(grep -o 'variant configcrusher:[0-9a-f]*' "$1" | cut -d' ' -f2)
    build_s=$(sed -n 's/^built .* in \([0-9.]*\) s$/\1/p' "$1")
    analysis_s=$(sed -n 's/^analysed in \([0-9.]*\) s.*/\1/p' "$1")
    peak_mib=$(sed -n 's/^analysed in .*(peak memory \([0-9]*\) MiB).*/\1/p' "$1")
    interactions=$(sed -n 's/^analysed .*interactions: \(.*\)$/\1/p' "$1")
    irrelevant=$(sed -n 's/^analysed .*irrelevant options: \([^;]*\);.*/\1/p' "$1")
    read -r r_after r_before < <(sed -n 's/^regions: \([0-9]*\) (\([0-9]*\) before.*/\1 \2/p' "$1")
    read -r cc_configs all_configs lower_bound < <(sed -n \
        's/.*configurations to measure: \([0-9]*\) of \([0-9]*\) (lower bound \([0-9]*\)).*/\1 \2 \3/p' "$1")
}

# The native brute force (every configuration); sets measure_elapsed.
brute_force() {
    local t0
    t0=$(date +%s.%N)
    "$knobs" measure --spec "$spec" --sample all > "$logs/measure.log" 2>&1 || { tail -5 "$logs/measure.log"; exit 1; }
    measure_elapsed=$(echo "$(date +%s.%N) - $t0" | bc)
    grep -E '^[0-9]+ of [0-9]+ configurations' "$logs/measure.log" || tail -1 "$logs/measure.log"
}

# MAPE (%) of a model's predictions against a measurements CSV (`knobs results export`).
mape_of() { # MODEL CSV
    "$knobs" predict "$1" "$2" | awk -F, 'NR > 1 { m = $(NF-1); p = $NF; d = p - m; if (d < 0) d = -d; s += d / m; n++ } END { printf "%.1f", 100 * s / n }'
}
