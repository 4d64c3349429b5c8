#!/bin/sh
# Set up a fresh Debian machine, build edgefit, and run the main job:
# edgefit-report on the default model (mlp:784-64-10) and data
# (Fashion-MNIST) for the default device (rpi4), writing into out/.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh
[ -d build ] || meson setup build
ninja -C build
./build/apps/report/edgefit-report --out out "$@"
