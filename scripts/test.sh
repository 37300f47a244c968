#!/usr/bin/env bash
# Runs every test of the workspace (debug build). The tests read ../shared/datasets, which
# must sit beside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-debian.sh
if [ ! -d ../shared/datasets ]; then
  echo "test: ../shared/datasets is missing; clone the repository next to shared/" >&2
  exit 1
fi
cargo test --workspace --locked
