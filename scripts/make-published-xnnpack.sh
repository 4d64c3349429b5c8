#!/bin/sh
# Regenerate data/models/xnnpack-*.txt and data/published/xnnpack.csv from
# a git clone of XNNPACK (github.com/google/XNNPACK):
#   sh scripts/make-published-xnnpack.sh PATH/TO/XNNPACK
# The models are the networks of models/fp32-mobilenet-*.cc as of the
# README's latest Raspberry Pi table (their layers did not change between
# the tables copied here; the int8 networks, models/qc8-*.cc, have the same
# layers); the rows are every version of that table since February 2020.
set -eu
repo=$1
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=fd2d933bb8acbe86fd11f9a7da4c0ef4fff38450
for m in v1 v2 v3-large v3-small; do
    git -C "$repo" show "$models:models/fp32-mobilenet-$m.cc" >"$tmp/fp32-mobilenet-$m.cc"
    python3 "$here/scripts/xnnpack-model-to-edgefit.py" "xnnpack-mobilenet-$m" \
        "$tmp/fp32-mobilenet-$m.cc" >"$here/data/models/xnnpack-mobilenet-$m.txt"
done
{
    echo "model,device,runtime,threads,precision,batch,latency_ms,source"
    for c in fd2d933bb8acbe86fd11f9a7da4c0ef4fff38450:2022-02-08 \
             3c6d6b4ad5ec3646f4392aa4dfa5aeb3711da128:2021-10-15 \
             0493fbdfe9ce53e7d412a8301c116a3504c933a6:2020-05-23 \
             74427b5f8f8e12408bf6201802564164fdb9b1fa:2020-02-13; do
        git -C "$repo" show "${c%%:*}:README.md" >"$tmp/README.md"
        python3 "$here/scripts/xnnpack-readme-to-csv.py" "$tmp/README.md" \
            "${c%%:*}" "${c##*:}"
    done
} >"$here/data/published/xnnpack.csv"
