#!/bin/sh
# On-host calibration check: does a device model fitted on this machine
# predict the measured latency of models it never saw?
#
#  1. edgefit-device --measure: the fixed micro-suite of layers of each class,
#     1 to N threads, fp32, fp16, int8, fitted as device "host", runtime
#     edgefit;
#  2. every preset and ONNX fixture (tests/data/zoo) at batch 1 and 8, 1
#     and 2 threads, timed here and predicted by that model
#     (--check-host): the micro-suite row of the table;
#  3. the same timings as measurements, fitted leave-one-model-out: each
#     model predicted by a model fitted on the other models' timings
#     only (the cv row of the table).
#
# usage: scripts/check-host-device-model.sh [OUTDIR]
# BUILD is the build folder (default build). Every host timing, of the
# micro-suite (the calibration) and of the models (the check) alike, is
# the calling thread's CPU time, the median of samples (the caller runs a
# share of every split product and sleeps while it waits for the rest),
# so that other work on a shared machine, which stretches wall-clock time
# several times over, does not count.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
exe="$here/$build/apps/device/edgefit-device"
out=${1:-$(mktemp -d)}
mkdir -p "$out"
if [ ! -x "$exe" ]; then
    echo "check-host-device-model: build first (ninja -C $build)" >&2
    exit 2
fi
models="smallcnn resnet8 ds-cnn mobilenetv1-0.25 fc-autoencoder kwt lstm-kws"
for f in "$here"/tests/data/zoo/*/model.onnx; do
    models="$models $f"
done

"$exe" --measure --out "$out/suite" --quiet >/dev/null
# shellcheck disable=SC2086
"$exe" --check-host --devices "$out/suite/devices.csv" --batches 1,8 \
    --threads 1,2 --repeats 7 --format csv --quiet $models >"$out/check.csv"

# the timings as measurements of device host, runtime edgefit
awk -F, 'NR == 1 { print "model,device,runtime,threads,precision,batch,latency_ms,source"; next }
         { print $1 ",host,edgefit," $4 "," $5 "," $6 "," $7 ",edgefit-device --check-host on this machine" }' \
    "$out/check.csv" >"$out/host.csv"
"$exe" --fit "$out/host.csv" --pool-sigma 0 --out "$out/lomo" --quiet \
    --format csv >/dev/null

# one table: model, batch, threads, measured, micro-suite prediction and
# error, leave-one-model-out prediction and error
awk -F, -v root="$here/" '
    FNR == 1 { file++; next }
    file == 1 { key = $1 "|" $6 "|" $4; meas[key] = $7; pred[key] = $8; order[n++] = key; next }
    file == 2 { key = $1 "|" $6 "|" $4; cv[key] = $9 }
    END {
        printf "%-20s %5s %7s %11s %10s %8s %10s %8s\n", "model", "batch",
               "threads", "measured_ms", "suite_ms", "error", "lomo_ms", "error"
        for (i = 0; i < n; i++) {
            k = order[i]; split(k, p, "|")
            name = p[1]; sub(root "tests/data/zoo/", "", name); sub("/model.onnx", "", name)
            e1 = (pred[k] - meas[k]) / meas[k]; e2 = (cv[k] - meas[k]) / meas[k]
            in1 += (e1 <= 0.25 && e1 >= -0.25); in2 += (e2 <= 0.25 && e2 >= -0.25)
            printf "%-20s %5s %7s %11.4g %10.4g %+7.0f%% %10.4g %+7.0f%%\n", name,
                   p[2], p[3], meas[k], pred[k], 100 * e1, cv[k], 100 * e2
        }
        printf "within +-25%%: micro-suite %d of %d, leave-one-model-out %d of %d\n",
               in1, n, in2, n
    }' "$out/check.csv" "$out/lomo/fit_residuals.csv"
echo "(files in $out)"
