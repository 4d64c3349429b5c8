#!/bin/sh
# Static int8 whole-model latency: edgefit at MEMEST_INT8 against ONNX
# Runtime on a QDQ file of the same network and against edgefit's fp32
# (bench-vs-ort --int8, tests/profile/bench_vs_ort.c), batch and threads
# as given.
#
# usage: scripts/bench-int8-vs-onnxruntime.sh [bench-vs-ort options] [MODEL.onnx...]
#   e.g. scripts/bench-int8-vs-onnxruntime.sh --batch 8
#
# For each fp32 model (default: the MLPerf Tiny presets of
# tests/data/models and MobileNetV2 at 224 x 224, which
# scripts/make-imagenet-onnx.py exports into $EDGEFIT_CACHE, as
# bench-vs-onnxruntime-c.sh --table does) it writes the QDQ file $QDQ_DIR/LABEL.onnx (default
# ${TMPDIR:-/tmp}/edgefit-ort/qdq) the way ONNX Runtime's quantize_static
# does: scripts/qdq_onnx.py exposes every activation, ONNX Runtime
# (onnxruntime-node) collects their min-max ranges over CALIB_SAMPLES
# (default 32) inputs uniform in [-1, 1] (scripts/onnx_ranges.mjs), and
# qdq_onnx.py writes the Q/DQ pairs and the int8 weights. edgefit
# calibrates on inputs drawn the same way. Then
# scripts/bench-vs-onnxruntime-c.sh runs the benchmark (it installs
# onnxruntime-node when missing and builds bench-vs-ort).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${ORT_PREFIX:-${TMPDIR:-/tmp}/edgefit-ort}
qdq=${QDQ_DIR:-$prefix/qdq}
samples=${CALIB_SAMPLES:-32}
py=${PYTHON:-python3}

# Options (with their values) first, then the models.
opts=""
models=""
for a in "$@"; do
    case $a in
    *.onnx) models="$models $a" ;;
    *) opts="$opts $a" ;;
    esac
done
if [ -z "$models" ]; then
    cache=${EDGEFIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgefit/imagenet}
    /usr/bin/python3 "$here/scripts/make-imagenet-onnx.py" "$cache" >/dev/null
    models="$(ls "$here"/tests/data/models/*/model.onnx) $cache/mobilenetv2/model.onnx"
fi

# ONNX Runtime's node package (bench-vs-onnxruntime-c.sh installs the same)
if [ ! -d "$prefix/node_modules/onnxruntime-node" ]; then
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund \
        "onnxruntime-node@${ORT_VERSION:-1.30.0}" >&2
fi

mkdir -p "$qdq"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in $models; do
    # the label bench-vs-ort gives: the folder of a model.onnx, else the
    # file's name without .onnx
    case $(basename "$m") in
    model.onnx) label=$(basename "$(dirname "$m")") ;;
    *) label=$(basename "$m" .onnx) ;;
    esac
    "$py" "$here/scripts/qdq_onnx.py" augment "$m" "$tmp/aug.onnx" "$tmp/meta.json"
    node "$here/scripts/onnx_ranges.mjs" "$prefix/node_modules/onnxruntime-node" \
        "$tmp/aug.onnx" "$tmp/meta.json" "$tmp/ranges.json" "$samples"
    "$py" "$here/scripts/qdq_onnx.py" write "$m" "$tmp/ranges.json" "$qdq/$label.onnx"
done

# shellcheck disable=SC2086 # word splitting of the option list is wanted
exec "$here/scripts/bench-vs-onnxruntime-c.sh" $opts --int8 "$qdq" \
    --calibration-samples "$samples" $models
