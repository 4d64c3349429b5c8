#!/bin/sh
# Instructions executed per multiply-add of the conv, depthwise, sgemm and
# int8 GEMM kernels on AArch64 (per window cell or value for the pools,
# softmax, layer norm, layout and q8s families: kernrun's unit), NEON paths
# against the C path, counted
# under qemu-user (speed cannot be measured under emulation; instruction
# counts can). Each instruction is its own translation block (-singlestep)
# and logged as it executes (-d exec,nochain); tests/kernels/kernrun runs a
# family's fixed workload 1 and 2 times and the difference, divided by the
# workload's multiply-adds, is the figure (start-up, operand set-up and
# first-call costs cancel out).
#
# The NEON path is counted on a Cortex-A72 model (ARMv8.0: no dot
# product, as on a Raspberry Pi 4 or a Jetson Nano), the dot-product int8
# path on qemu's "max" CPU, the C path with KERN_CPU_MASK=0.
#
# Usage: scripts/insn-per-mac.sh [BUILD_DIR [FAMILY...]]
#   (families: default conv dwconv sgemm q8gemm; `all` adds maxpool
#   maxpool2 avgpool gavgpool softmax layernorm layout q8requant q8quant
#   q8add q8maxpool q8im2col q8im2col1 dwconv8c
#   dwconv8cdil q8dwconv maxpool8c avgpool8c, see
#   tests/kernels/kernrun.c; BUILD_DIR default build-aarch64, made with
#   --cross-file scripts/cross/aarch64.ini; `ninja -C BUILD_DIR
#   tests/kernels/kernrun` is enough). SYSROOT (default
#   /opt/edgefit-cross/arm64) holds the target's loader and libc.
# Takes a few minutes: the C paths log tens of millions of lines.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-aarch64}
[ $# -gt 0 ] && shift
families=${*:-conv dwconv sgemm q8gemm}
if [ "$families" = all ]; then
    families="conv dwconv sgemm q8gemm maxpool maxpool2 avgpool gavgpool
        softmax layernorm layout q8requant q8quant q8add q8maxpool
        q8im2col q8im2col1 dwconv8c dwconv8cdil q8dwconv maxpool8c
        avgpool8c"
fi
sysroot=${SYSROOT:-/opt/edgefit-cross/arm64}
run=$build/tests/kernels/kernrun
if [ ! -x "$run" ]; then
    echo "insn-per-mac: $run not built (ninja -C $build tests/kernels/kernrun)" >&2
    exit 2
fi

# count CPU MASK FAMILY REPS: instructions the whole process executes.
count() {
    env KERN_CPU_MASK="$2" qemu-aarch64-static -L "$sysroot" -cpu "$1" \
        -singlestep -d exec,nochain -D /dev/stdout "$run" "$3" "$4" |
        grep -c '^Trace'
}

macs() {
    qemu-aarch64-static -L "$sysroot" "$run" "$1" 0 |
        sed -n 's/.*macs_per_run \([0-9]*\).*/\1/p'
}

# per_mac CPU MASK FAMILY: instructions per multiply-add of one run.
per_mac() {
    one=$(count "$1" "$2" "$3" 1)
    two=$(count "$1" "$2" "$3" 2)
    awk -v a="$one" -v b="$two" -v m="$(macs "$3")" \
        'BEGIN { printf "%.3f", (b - a) / m }'
}

printf '%-10s %-14s %-14s %-14s %s\n' family c_insn_per_mac \
    neon_insn_per_mac dotprod_insn_per_mac c_to_neon
for fam in $families; do
    # 0x1b0: every ARM bit but the dot product (KERN_CPU_ARM_DOTPROD).
    c=$(per_mac max 0 "$fam")
    neon=$(per_mac cortex-a72 0x1b0 "$fam")
    dp=-
    if [ "$fam" = q8gemm ]; then
        dp=$(per_mac max 0x1f0 "$fam")
    fi
    ratio=$(awk -v c="$c" -v n="$neon" 'BEGIN { printf "%.1f", c / n }')
    printf '%-10s %-14s %-14s %-14s %s\n' "$fam" "$c" "$neon" "$dp" "$ratio"
done
