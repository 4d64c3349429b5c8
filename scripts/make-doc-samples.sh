#!/bin/sh
# Write every sample of program output in README.md and docs/*.md anew:
# build the apps, run each sample's command (the line
# "<!-- sample: COMMAND -->" above its block) and put what it printed
# between the markers. tests/apps/test_readme.c checks the same samples
# against the apps' output with the same code (tests/apps/samples.c), so
# run this after changing what an app prints, and commit the docs.
#
# Usage: sh scripts/make-doc-samples.sh [BUILD_DIR]   (default build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || meson setup "$build"
ninja -C "$build"
tool="$build/tests/apps/make-doc-samples"
[ -x "$tool" ] || { echo "$tool: not built (configure with -Dtests=true)" >&2; exit 1; }
apps=
for f in "$build"/apps/*/edgefit-*; do
    if [ -f "$f" ] && [ -x "$f" ]; then
        apps="$apps $f"
    fi
done
# shellcheck disable=SC2086 # one word per app path
"$tool" . $apps
