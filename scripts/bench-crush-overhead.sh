#!/usr/bin/env bash
# ConfigCrusher's instrumentation overhead before and after the propagation optimisation, in
# the form of the journal paper's Table 7, for any system spec with a [build] section:
#
#   bash scripts/bench-crush-overhead.sh examples/xz-whitebox/knobs.toml
#   CONFIGS=all bash scripts/bench-crush-overhead.sh SPEC   # every configuration (default: 8)
#   REPS=7 KNOBS=/path/to/knobs bash scripts/bench-crush-overhead.sh SPEC
#
# Prints, per placement (Algorithm 2 alone = `knobs crush --no-optimise`, and with
# Algorithms 3/4 = `knobs crush`): regions R, region entries per run RC (mean and max over
# the configurations run) and instrumented / native time, plus the analysis' time and peak
# memory. The native program is the spec's [run] program; it must exist.
#
# The three programs (native, optimised, unoptimised) run the same configurations
# interleaved — configuration 1 with each program, then configuration 2, …, and all of that
# REPS times — and the ratios are of medians from that one run: on a shared machine, builds
# measured minutes apart differ by more than the overhead we are after.
#
# Everything goes to .knobs/overhead/ beside the spec (git-ignored) and is started afresh on
# every run. A benchmark, not a test: never run in CI.
set -euo pipefail

die() { echo "bench-crush-overhead.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: bash scripts/bench-crush-overhead.sh SPEC (a knobs.toml with a [build] section)"
[ -f "$1" ] || die "no spec at $1"
root="$(cd "$(dirname "$0")/.." && pwd)"
# Absolute: `knobs crush` with a relative --spec starts the instrumented program by a path
# relative to where knobs was started, but from the spec's directory (see bench-xz-whitebox.sh).
spec="$(realpath "$1")"
specdir="$(dirname "$spec")"
reps="${REPS:-5}"
want="${CONFIGS:-8}"
knobs="${KNOBS:-$root/target/release/knobs}"

# A key of one section of the spec (top-level `key = "value"` lines only, which is how
# knobs.toml files are written; quotes and a trailing comment are dropped).
toml_key() { # section key
    awk -v sec="[$1]" -v key="$2" '
        /^[[:space:]]*\[/ { cur = $0; gsub(/[[:space:]]/, "", cur); next }
        cur == sec && $0 ~ "^[[:space:]]*" key "[[:space:]]*=" {
            sub(/^[^=]*=[[:space:]]*/, ""); sub(/[[:space:]]*#.*$/, ""); gsub(/^["'\'']|["'\'']$/, ""); print; exit
        }' "$spec"
}

grep -q '^[[:space:]]*\[build\][[:space:]]*$' "$spec" \
    || die "$1 has no [build] section: ConfigCrusher needs the program's C sources or bitcode"
bitcode="$(toml_key build bitcode)"
if [ -n "$bitcode" ] && [ ! -f "$specdir/$bitcode" ]; then
    die "the bitcode $specdir/$bitcode does not exist; build the program first (see the comments in $1)"
fi
# The native program as `knobs measure` would run it: relative to the spec's directory when
# the name has a slash, else found on PATH.
program="$(toml_key run program)"
[ -n "$program" ] || die "$1 has no [run] program to compare the instrumented builds with"
case "$program" in
    /*) native="$program" ;;
    */*) native="$specdir/$program" ;;
    *) native="$(command -v "$program" || true)" ;;
esac
[ -n "$native" ] && [ -x "$native" ] \
    || die "the native program $program (${native:-not on PATH}) does not exist; build it first (see the comments in $1)"
cwd="$(toml_key run cwd)"
case "$cwd" in
    "") cwd="$specdir" ;;
    /*) ;;
    *) cwd="$specdir/$cwd" ;;
esac

if [ -n "${KNOBS:-}" ]; then
    [ -x "$knobs" ] || die "KNOBS=$KNOBS is not an executable"
elif ! (cd "$root" && cargo build --release -q -p knobs); then
    [ -x "$knobs" ] || exit 1
    echo "warning: cargo build failed; using the existing $knobs" >&2
fi

work="$specdir/.knobs/overhead"
rm -rf "$work"
mkdir -p "$work"

# --- 1. the two instrumented builds -------------------------------------------------------
# `knobs crush` has no "instrument only" switch: it goes on to measure the compressed
# configurations, which for the unoptimised placement can take hours (the paper's Table 7
# has ">1h"). So each build runs in its own work dir and store, and is stopped (SIGTERM,
# which knobs handles like Ctrl-C: it kills the run in progress and exits) as soon as it has
# printed the instrumented binary. SIGINT would not do: a background job ignores it.
build_placement() { # name [crush flags…] → the instrumented binary's path on stdout
    local name="$1" log="$work/$1.crush.log" pid
    shift
    "$knobs" crush --spec "$spec" --work-dir "$work/$name" --store "$work/$name.crush.db" \
        -o "$work/$name.json" "$@" > "$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2> /dev/null && ! grep -q '^instrumented: ' "$log"; do sleep 0.2; done
    kill -TERM "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    grep -q '^instrumented: ' "$log" || { tail -5 "$log" >&2; die "knobs crush $* did not get as far as instrumenting (log: $log)"; }
    sed -n 's/^instrumented: .* → \(.*\)$/\1/p' "$log"
}
echo "== knobs crush (optimised: Algorithms 2-4) and knobs crush --no-optimise (Algorithm 2), up to the instrumented build"
bin_opt="$(build_placement optimised)"
bin_unopt="$(build_placement unoptimised --no-optimise)"
grep -E '^(analysed|regions|instrumented)' "$work/optimised.crush.log" | sed 's/^/  optimised:   /' | cut -c1-200
grep -E '^(regions|instrumented)' "$work/unoptimised.crush.log" | sed 's/^/  unoptimised: /' | cut -c1-200
# regions: R (R0 before propagation); …  — with --no-optimise both numbers are R0.
r_after=$(sed -n 's/^regions: \([0-9]*\) .*/\1/p' "$work/optimised.crush.log")
r_before=$(sed -n 's/^regions: \([0-9]*\) .*/\1/p' "$work/unoptimised.crush.log")
calls() { sed -n 's/^instrumented: \([0-9]*\) region entry and \([0-9]*\) exit calls.*/\1 entry, \2 exit calls/p' "$work/$1.crush.log"; }
analysis_s=$(sed -n 's/^analysed in \([0-9.]*\) s.*/\1/p' "$work/optimised.crush.log")
peak_mib=$(sed -n 's/^analysed in .*(peak memory \([0-9]*\) MiB).*/\1/p' "$work/optimised.crush.log")
build_s=$(sed -n 's/^built .* in \([0-9.]*\) s$/\1/p' "$work/optimised.crush.log")
to_measure=$(sed -n 's/.*configurations to measure: \(.*\)$/\1/p' "$work/optimised.crush.log")

# --- 2. the configurations ----------------------------------------------------------------
total=$("$knobs" space count "$spec")
if [ "$want" = all ] || [ "$want" -ge "$total" ]; then
    sample=all
    how="all $total configurations"
else
    # Distance-based: spread over the number of options selected, not clustered.
    sample="distance:$want"
    how="$want of $total configurations (distance-based sample, seed 1)"
fi
"$knobs" space sample "$spec" --sample "$sample" --seed 1 -o "$work/configs.csv" 2> "$work/sample.log" \
    || { cat "$work/sample.log" >&2; exit 1; }
n=$(($(wc -l < "$work/configs.csv") - 1))
# One CSV per configuration, so that each `knobs measure` below runs exactly one.
for i in $(seq 1 "$n"); do
    sed -n "1p;$((i + 1))p" "$work/configs.csv" > "$work/config-$i.csv"
done

# --- 3. one spec per program --------------------------------------------------------------
# The spec with [run] program (and cwd, made absolute) replaced, so that `knobs measure` runs
# each build with exactly the arguments, environment, workload and timeout knobs uses.
respec() { # name binary
    awk -v prog="$2" -v cwd="$cwd" '
        /^[[:space:]]*\[/ { cur = $0; gsub(/[[:space:]]/, "", cur) }
        cur == "[run]" && /^[[:space:]]*(program|cwd)[[:space:]]*=/ { next }
        { print }
        cur == "[run]" && /^[[:space:]]*\[run\]/ { printf "program = '\''%s'\''\ncwd = '\''%s'\''\n", prog, cwd }
    ' "$spec" > "$work/spec-$1.toml"
}
respec native "$native"
respec optimised "$bin_opt"
respec unoptimised "$bin_unopt"

# --- 4. interleaved runs ------------------------------------------------------------------
# Round r asks every program for r runs of configuration i, so each call adds one run (plus
# the spec's warm-up, if any). The instrumented programs write their region entries to
# KNOBS_REGION_TIMES (docs/region-times.md); RC of a run is the sum of the entries column of
# the `id self entries` lines. Its `unmatched_exits` (exit calls with no open activation of
# their region, which the runtime ignores) are calls too, so they are kept beside RC.
# Configurations are keyed by their CSV row (option values), as in `knobs results export`.
programs="native optimised unoptimised"
echo "== $how, $reps interleaved rounds (native, optimised, unoptimised per configuration)"
for r in $(seq 1 "$reps"); do
    for i in $(seq 1 "$n"); do
        row=$(sed -n 2p "$work/config-$i.csv")
        for p in $programs; do
            rm -f "$work/regions-$p.txt"
            KNOBS_REGION_TIMES="$work/regions-$p.txt" "$knobs" measure --spec "$work/spec-$p.toml" \
                --store "$work/$p.db" --sample "file:$work/config-$i.csv" --repetitions "$r" \
                >> "$work/measure-$p.log" 2>&1 || true
            # A failed run leaves no file (and is not repeated in later rounds).
            if [ "$p" != native ] && [ -f "$work/regions-$p.txt" ]; then
                echo "$row $(awk -F'\t' '$1 ~ /^[0-9]+$/ { s += $3 } $1 == "unmatched_exits" { u = $2 }
                    END { print s + 0, u + 0 }' "$work/regions-$p.txt")" >> "$work/rc-$p.txt"
            fi
        done
    done
    echo "  round $r of $reps done"
done
for p in $programs; do
    "$knobs" results export --store "$work/$p.db" -o "$work/$p.csv"
    # Failed runs (a timeout, say) are not in the export: say so, the ratios cover fewer.
    m=$(($(wc -l < "$work/$p.csv") - 1))
    [ "$m" -eq "$n" ] || echo "warning: $p: only $m of $n configurations ran successfully; see $work/measure-$p.log" >&2
done
metric=$(head -1 "$work/native.csv" | awk -F, '{ m = $NF; sub(/_s$/, "", m); print m }')

# --- 5. the table -------------------------------------------------------------------------
# RC per configuration: the last run's (runs are deterministic for the subjects here).
rc_of() { # program [column: 2 = RC, 3 = unmatched exits] → "mean / max" over the configurations
    awk -v col="${2:-2}" '{ rc[$1] = $col } END { for (c in rc) { s += rc[c]; if (rc[c] > m) m = rc[c]; k++ }
          if (k) printf "%.0f / %.0f", s / k, m; else printf "none (every run failed)" }' "$work/rc-$1.txt"
}
# Over the configurations both measured: geometric mean, min and max of instrumented median /
# native median, and Σ medians of both.
ratio() { # program
    awk -F, 'FNR == 1 { next }
        { key = $0; sub(/,[^,]*$/, "", key) }
        NR == FNR { native[key] = $NF; next }
        key in native { q = $NF / native[key]; s += log(q); n++; t += $NF; tn += native[key]
                        if (n == 1 || q < lo) lo = q; if (q > hi) hi = q }
        END { if (n) printf "%.2f (%.2f – %.2f) | %.2f s vs %.2f s", exp(s / n), lo, hi, t, tn
              else printf "– | no successful runs" }' \
        "$work/native.csv" "$work/$1.csv"
}
median_of() { # program row → median
    awk -F, -v row="$2" 'FNR > 1 { key = $0; sub(/,[^,]*$/, "", key); if (key == row) printf "%.3f", $NF }' "$work/$1.csv"
}
rc_at() { awk -v row="$2" '$1 == row { rc = $2 } END { print rc }' "$work/rc-$1.txt"; }
# The paper's procedure: the configuration with the most region entries after optimisation,
# the slowest natively among those tied, with its native and both instrumented times.
max_rc=$(awk '{ if ($2 > m) m = $2 } END { print m + 0 }' "$work/rc-optimised.txt")
worst=$(awk -v m="$max_rc" '$2 == m { print $1 }' "$work/rc-optimised.txt" | sort -u \
    | while read -r row; do echo "$row $(median_of native "$row")"; done | sort -k2,2g | tail -1 | cut -d' ' -f1)
# Its name: the options selected (`name=value` for numeric ones), leaving out those selected in
# every configuration of the sample (a mandatory grouping such as xz's `level`).
worst_name=$(awk -F, -v row="$worst" '
    NR == 1 { for (k = 1; k <= NF; k++) name[k] = $k; next }
    { for (k = 1; k <= NF; k++) if ($k != "1") varies[k] = 1 }
    END { split(row, v, ",")
          for (k = 1; k <= length(v); k++) if (varies[k] && v[k] != "0")
              s = s (s ? "," : "") (v[k] == "1" ? name[k] : name[k] "=" v[k])
          print (s ? s : "no option selected") }' "$work/configs.csv")
system=$(awk '/^[[:space:]]*\[/ { exit } /^[[:space:]]*name[[:space:]]*=/ { sub(/^[^=]*=[[:space:]]*/, ""); gsub(/"/, ""); print; exit }' "$spec")

echo
echo "Table 7 (ConfigCrusher, journal version) for $system: $how, $reps interleaved runs per program, medians of $metric time; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| placement | R | RC per run (mean / max) | instrumented / native $metric time (geometric mean, min – max) | Σ median, instrumented vs native |"
echo "|---|---|---|---|---|"
echo "| before optimisation (Algorithm 2, \`--no-optimise\`) | $r_before ($(calls unoptimised)) | $(rc_of unoptimised) | $(ratio unoptimised) |"
echo "| after optimisation (Algorithms 2-4) | $r_after ($(calls optimised)) | $(rc_of optimised) | $(ratio optimised) |"
echo
echo "As the paper reports it (the configuration with the most region entries after optimisation: $worst_name): native $(median_of native "$worst") s; before optimisation RC $(rc_at unoptimised "$worst"), $(median_of unoptimised "$worst") s; after RC $(rc_at optimised "$worst"), $(median_of optimised "$worst") s"
echo "Exit calls with no open region per run (ignored by the runtime; mean / max): before optimisation $(rc_of unoptimised 3), after $(rc_of optimised 3)"
echo "Analysis: $analysis_s s, peak memory $peak_mib MiB (knobs crush; building and translating the program before it: $build_s s); configurations ConfigCrusher measures: $to_measure"
