#!/bin/sh
# edgefit's forward pass against ONNX Runtime's through ONNX Runtime's C
# API (bench-vs-ort, tests/profile/bench_vs_ort.c), on the MLPerf Tiny
# models' ONNX files and the LSTM/GRU keyword spotters', or on the files
# given.
#
# usage: scripts/bench-vs-onnxruntime-c.sh [bench-vs-ort options] [MODEL.onnx...]
#   e.g. scripts/bench-vs-onnxruntime-c.sh --threads 2 --layers
#
# Installs the npm package onnxruntime-node (which carries ONNX Runtime's
# shared library libonnxruntime.so.1) into $ORT_PREFIX (default
# ${TMPDIR:-/tmp}/edgefit-ort) when it is not there, configures the build
# folder $BUILD (default build-ort) with -Dort_bench=true and that library,
# builds, and runs bench-vs-ort. ORT_VERSION picks the package's version
# (default 1.30.0). Options before the first model go to bench-vs-ort.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${ORT_PREFIX:-${TMPDIR:-/tmp}/edgefit-ort}
version=${ORT_VERSION:-1.30.0}
build=${BUILD:-build-ort}

case $(uname -m) in
x86_64 | amd64) arch=x64 ;;
aarch64 | arm64) arch=arm64 ;;
*)
    echo "bench-vs-onnxruntime-c: onnxruntime-node ships no library for $(uname -m)" >&2
    exit 2
    ;;
esac

find_lib() {
    # The binding's folder is named after its N-API version (napi-v6 in
    # 1.30); take whichever the installed package has.
    for f in "$prefix"/node_modules/onnxruntime-node/bin/napi-v*/linux/"$arch"/libonnxruntime.so.1; do
        if [ -f "$f" ]; then
            echo "$f"
            return 0
        fi
    done
    return 1
}

if ! lib=$(find_lib); then
    command -v npm >/dev/null || {
        echo "bench-vs-onnxruntime-c: npm is needed to install onnxruntime-node (apt-get install npm)" >&2
        exit 2
    }
    mkdir -p "$prefix"
    # --ignore-scripts: the package carries its CPU library; its install
    # script would only fetch optional GPU parts.
    npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund \
        "onnxruntime-node@$version" >&2
    lib=$(find_lib) || {
        echo "bench-vs-onnxruntime-c: onnxruntime-node@$version has no linux/$arch/libonnxruntime.so.1 under $prefix" >&2
        exit 2
    }
fi

cd "$here"
if [ -d "$build" ]; then
    meson setup --reconfigure "$build" -Dort_bench=true -Dort_lib="$lib" >/dev/null
else
    meson setup "$build" -Dort_bench=true -Dort_lib="$lib" >/dev/null
fi
# The build's log only when it fails, so that stdout is the table alone.
if ! log=$(ninja -C "$build" -j2 tests/profile/bench-vs-ort 2>&1); then
    printf '%s\n' "$log" >&2
    exit 1
fi

# Options (and their values) come first; no model named: the presets'.
have_model=0
for a in "$@"; do
    case $a in
    *.onnx) have_model=1 ;;
    esac
done
if [ $have_model -eq 0 ]; then
    # the MLPerf Tiny models, then the LSTM/GRU keyword spotters
    # (scripts/make-rnn-fixtures.py)
    set -- "$@" tests/data/models/*/model.onnx \
        tests/data/onnx/torch_lstm_kws/model.onnx \
        tests/data/onnx/torch_gru_kws/model.onnx \
        tests/data/onnx/torch_bigru/model.onnx
fi
exec "$build/tests/profile/bench-vs-ort" --ort-lib "$lib" "$@"
