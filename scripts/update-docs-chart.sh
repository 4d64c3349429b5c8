#!/bin/sh
# Regenerate the chart the README shows, docs/roofline.png, from a fresh
# run of the main job on the default model, data and device.
set -eu
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build
ninja -C build
./build/apps/report/edgefit-report --out build/docs-report --quiet >/dev/null
mkdir -p docs
cp build/docs-report/roofline.png docs/roofline.png
echo "docs/roofline.png updated"
