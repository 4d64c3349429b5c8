#!/bin/sh
# Set up a fresh Debian machine, build edgefit, and run the main job:
# edgefit-memfit on the default model (mlp:784-64-10), writing into out/.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh
[ -d build ] || meson setup build
ninja -C build
./build/apps/memfit/edgefit-memfit --model mlp:784-64-10 --batch 32 \
    --precision fp16 --max-memory-mb 1 --batch-limit 64 --out out "$@"
echo "artifacts written to out/"
