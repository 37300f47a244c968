#!/usr/bin/env bash
# CI: checks formatting (rustfmt), lints (clippy, warnings are errors), that the API docs build
# without broken links (rustdoc, warnings are errors) and runs every test of
# the workspace (debug build). The tests read ../shared/datasets, which must sit beside the
# repository. The Slurm tests (crates/knobs/tests/slurm_cli.rs) start a one-node cluster with
# scripts/slurm-local.sh, which needs root and apt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-debian.sh
if [ ! -d ../shared/datasets ]; then
  echo "test: ../shared/datasets is missing; clone the repository next to shared/" >&2
  exit 1
fi
# Formatting and lints first: they fail in seconds, the tests take minutes.
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
cargo test --workspace --locked --no-fail-fast
