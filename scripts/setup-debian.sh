#!/usr/bin/env bash
# Installs what knobs needs to build on Debian 12, when it is missing:
# a C compiler (for bundled C code in dependencies), LLVM 19 (for the white-box approaches),
# Chromium (the tests render `knobs report`'s HTML in it, headless), valgrind (instruction
# counts where the machine has no hardware counters) and a
# Rust toolchain with rustfmt and clippy (rustup; Debian's own cargo is too old for edition 2024). Safe to run again: it only installs what is absent.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
# LLVM 19 for the white-box approaches (crates/llvm compiles C with clang-19 and links
# libLLVM through inkwell; .cargo/config.toml points LLVM_SYS_191_PREFIX at /usr/lib/llvm-19).
if ! command -v clang-19 >/dev/null 2>&1 || ! command -v llvm-config-19 >/dev/null 2>&1; then
  need_apt+=(clang-19 llvm-19-dev libclang-rt-19-dev libpolly-19-dev libzstd-dev zlib1g-dev
    libxml2-dev libffi-dev libedit-dev libncurses-dev)
fi
# Headless Chromium: crates/knobs/tests/report_browser.rs renders reports and screenshots them.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# `metric = "instructions"` counts with valgrind's cachegrind on machines without a PMU.
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  command -v curl >/dev/null 2>&1 || need_apt+=(curl ca-certificates)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    echo "setup: installing the Rust toolchain with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >&2
    # The minimal profile has neither rustfmt nor clippy, which scripts/test.sh runs.
    "$HOME/.cargo/bin/rustup" component add rustfmt clippy >&2
  fi
  export PATH="$HOME/.cargo/bin:$PATH"
fi

# A toolchain without rustfmt or clippy (an older minimal install): add them when rustup
# manages it.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null 2>&1; then
    echo "setup: adding the rustfmt and clippy components" >&2
    rustup component add rustfmt clippy >&2 ||
      echo "setup: could not add rustfmt and clippy; cargo fmt and cargo clippy will fail" >&2
  else
    echo "setup: cargo fmt or cargo clippy is missing and rustup is not there to add them" >&2
  fi
fi
