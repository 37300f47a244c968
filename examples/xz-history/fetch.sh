#!/bin/sh
# Clones XZ Utils' history from the bundle beside the repository (../shared/repos, see its
# README) into ./xz, which knobs.toml's [history] names. Idempotent.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bundle=${1:-$here/../../../shared/repos/xz.bundle}
if [ -d "$here/xz/.git" ]; then
    echo "$here/xz exists"
    exit 0
fi
git -c init.defaultBranch=master clone --quiet "$bundle" "$here/xz"
echo "cloned $(git -C "$here/xz" rev-list --count HEAD) commits into $here/xz"
