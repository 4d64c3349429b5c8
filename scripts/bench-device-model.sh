#!/bin/sh
# The device model, evaluated honestly: leave-one-model-out
# cross-validation over the published measurements (data/published/*.csv)
# per device and runtime: the share of predictions within +-10%, +-25%
# and 2x, beside the plain roofline's share within +-25%.
#
# usage: scripts/bench-device-model.sh [edgefit-device options]
#   e.g. scripts/bench-device-model.sh --pool-sigma 0 --out /tmp/fit
#
# BUILD is the build folder (default build); DEVICES, when set, is a
# devices CSV for boards the catalogue lacks. Every fit that predicts a
# network was made without that network's measurements, on any board.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
exe="$here/$build/apps/device/edgefit-device"
if [ ! -x "$exe" ]; then
    echo "bench-device-model: build first (ninja -C $build)" >&2
    exit 2
fi
set -- --fit "$here"/data/published/*.csv --quiet "$@"
if [ -n "${DEVICES:-}" ]; then
    set -- "$@" --devices "$DEVICES"
fi
"$exe" "$@"
