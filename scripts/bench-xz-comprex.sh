#!/usr/bin/env bash
# Comprex on xz side by side with brute force, ConfigCrusher and the black-box baselines:
# the same run as bench-xz-whitebox.sh (one table; see its header for the knobs).
#
#   bash scripts/bench-xz-comprex.sh
exec bash "$(dirname "$0")/bench-xz-whitebox.sh" "$@"
