#!/bin/sh
# edgefit's forward pass against ONNX Runtime's through ONNX Runtime's C
# API (bench-vs-ort, tests/profile/bench_vs_ort.c), on the MLPerf Tiny
# models' ONNX files and the LSTM/GRU keyword spotters', or on the files
# given.
#
# usage: scripts/bench-vs-onnxruntime-c.sh [bench-vs-ort options] [MODEL.onnx...]
#   e.g. scripts/bench-vs-onnxruntime-c.sh --threads 2 --layers
#        scripts/bench-vs-onnxruntime-c.sh --table [bench-vs-ort options]
#
# --table prints one ratio table (edgefit ms / ONNX Runtime ms, medians of
# runs alternated in one process; below 1 edgefit is faster) for the
# MLPerf Tiny models and ImageNet-size networks (MobileNetV2, ResNet-18,
# SqueezeNet 1.1, RegNetX-400MF's grouped convolutions, MobileNetV1),
# columns batch 1, batch 8, 2 threads batch 1 and 2 threads batch 8, and
# edgefit's own 2-thread speed-up at batch 1 and 8 (1-thread ms over
# 2-thread ms, from the same runs). The ImageNet-size files (free batch
# dimension, so ONNX Runtime runs batch 8 too) are written by
# scripts/make-imagenet-onnx.py with /usr/bin/python3 and torchvision into
# $EDGEFIT_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/edgefit/imagenet)
# the first time. The table then takes 5-15 minutes on a 2-core machine.
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

if [ "${1:-}" = --table ]; then
    shift
    cache=${EDGEFIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgefit/imagenet}
    /usr/bin/python3 scripts/make-imagenet-onnx.py "$cache" >/dev/null
    models="tests/data/models/resnet8/model.onnx
tests/data/models/ds-cnn/model.onnx
tests/data/models/mobilenetv1-0.25/model.onnx
tests/data/models/fc-autoencoder/model.onnx
$cache/mobilenetv2/model.onnx
$cache/mobilenetv1/model.onnx
$cache/resnet18/model.onnx
$cache/squeezenet1_1/model.onnx
$cache/regnetx400mf/model.onnx"
    # TABLE_RAW=DIR keeps bench-vs-ort's own output of each column there
    if [ -n "${TABLE_RAW:-}" ]; then
        out=$TABLE_RAW
        mkdir -p "$out"
    else
        out=$(mktemp -d)
        trap 'rm -rf "$out"' EXIT
    fi
    for cfg in "1 1" "8 1" "1 2" "8 2"; do
        set -- $cfg "$@"
        b=$1 t=$2
        shift 2
        # shellcheck disable=SC2086 # one model a word
        "$build/tests/profile/bench-vs-ort" --ort-lib "$lib" --batch "$b" \
            --threads "$t" "$@" $models >"$out/b$b-t$t" ||
            echo "bench-vs-onnxruntime-c: batch $b, $t threads: a model failed (see above)" >&2
        grep '^#' "$out/b$b-t$t" | head -1 >&2
    done
    echo "# load: $(uptime | sed 's/.*load average: //') (1, 5, 15 min)"
    # rows: LABEL EDGEFIT_MS ORT_MS RATIO MAX_DIFF RUNS; the folder names
    # the model (label_of)
    awk 'FNR == 1 { f++ }
         NF == 6 && $1 != "model" && $1 !~ /^#/ && $5 ~ /e[-+]/ {
             if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
             r[$1, f] = $4; ms[$1, f] = $2
         }
         function cell(m, i) { return ((m, i) in r) ? r[m, i] : "-" }
         function up(m, a, b) {
             # no line break after a "?": mawk refuses it
             if ((m, a) in ms && (m, b) in ms && ms[m, b] > 0)
                 return sprintf("%.2f", ms[m, a] / ms[m, b])
             return "-"
         }
         END {
             printf "| model | batch 1 | batch 8 | 2 threads, batch 1 | 2 threads, batch 8 | 2t_speedup_b1 | 2t_speedup_b8 |\n"
             printf "|---|---|---|---|---|---|---|\n"
             for (i = 1; i <= n; i++) {
                 m = order[i]
                 printf "| %s | %s | %s | %s | %s | %s | %s |\n", m,
                     cell(m, 1), cell(m, 2), cell(m, 3), cell(m, 4),
                     up(m, 1, 3), up(m, 2, 4)
             }
         }' "$out/b1-t1" "$out/b8-t1" "$out/b1-t2" "$out/b8-t2"
    exit 0
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
