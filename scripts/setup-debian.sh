#!/bin/sh
# Install what a fresh Debian 12 machine lacks to build, test and run edgefit.
# Usage: scripts/setup-debian.sh [--bench|--clang|--valgrind]
#   --bench adds the BLAS comparison libraries; --clang the second compiler
#   CI builds with (clang 14, also scripts/ci-faults.sh's integer checks);
#   --valgrind valgrind for `meson test --setup valgrind`
# (Regenerating the ONNX test fixtures, scripts/make-onnx-test-models.py, also
# takes python3-onnx and python3-torch; the tests themselves need no Python.)
set -eu

pkgs="meson ninja-build pkg-config gcc libc6-dev libcsv-dev libpng-dev libcairo2-dev
fonts-dejavu-core libjansson-dev zlib1g-dev libcmocka-dev dataset-fashion-mnist
protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata"

if [ "${1:-}" = "--clang" ]; then
    pkgs="$pkgs clang"
fi
if [ "${1:-}" = "--valgrind" ]; then
    pkgs="$pkgs valgrind"
fi
if [ "${1:-}" = "--bench" ]; then
    pkgs="$pkgs libopenblas-dev libxsmm-dev libdnnl-dev libxnnpack-dev
    libpthreadpool-dev"
fi

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        missing="$missing $p"
    fi
done
[ -n "$missing" ] || exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
