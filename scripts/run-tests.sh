#!/bin/sh
# Set up a fresh Debian machine, build edgefit with warnings as errors and
# run every test suite, the slow exhaustive ones included.
# Usage: scripts/run-tests.sh [BUILD_DIR] [extra meson setup options...]
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" -Dwerror=true "$@"
else
    meson setup "$dir" -Dwerror=true "$@"
fi
ninja -C "$dir"
meson test -C "$dir" --setup all --print-errorlogs
