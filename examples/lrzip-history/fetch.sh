#!/bin/sh
# Clones lrzip's history from the bundle beside the repository (../shared/repos, see its
# README) into ./lrzip, which knobs.toml's [history] names. Idempotent.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bundle=${1:-$here/../../../shared/repos/lrzip.bundle}
if [ -d "$here/lrzip/.git" ]; then
    echo "$here/lrzip exists"
    exit 0
fi
git -c init.defaultBranch=master clone --quiet "$bundle" "$here/lrzip"
echo "cloned $(git -C "$here/lrzip" rev-list --count HEAD) commits into $here/lrzip"
