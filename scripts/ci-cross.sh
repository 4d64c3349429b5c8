#!/bin/sh
# CI's board stage: the ARM builds of a Raspberry Pi (or Jetson), made with
# Debian's cross compilers and tested under qemu-user. aarch64 (Raspberry
# Pi OS 64-bit) and armhf (32-bit: size_t is 32 bits, so every size the
# libraries compute in 64 bits is checked before it becomes one) are both
# built with warnings as errors; aarch64 runs the whole fast suite and
# armhf the libraries' part of it, each test program and each app it
# starts running under qemu (binfmt_misc).
# Usage: scripts/ci-cross.sh [aarch64] [armhf]   (default: both)
# Cost: the sysroots about a minute, each cross build about as long as the
# native one. Under qemu the libraries' tests take about 3x the host's time
# (side by side on one machine), the apps tests that run whole models
# 50-100x its CPU time (a report run: 2 s on the host, 200 s): the host
# takes the SIMD paths, qemu the C ones until ARM paths are built. The zoo,
# report and README tests (24, 10 and 5 s of host CPU) are most of the
# aarch64 suite. The timeouts are raised x10 to match.
set -u
cd "$(dirname "$0")/.."

sh scripts/setup-debian.sh --cross || exit 1
targets=${*:-aarch64 armhf}
status=0
for t in $targets; do
    start=$(date +%s)
    (
        set -e
        dir=build-$t
        if [ -d "$dir" ]; then
            meson setup --reconfigure "$dir" -Dwerror=true \
                --cross-file "scripts/cross/$t.ini"
        else
            meson setup "$dir" -Dwerror=true \
                --cross-file "scripts/cross/$t.ini"
        fi
        ninja -C "$dir"
        # armhf runs the libraries' fast suites, where 32-bit sizes matter;
        # its apps tests run whole models on the C kernels, the same code
        # as aarch64 runs them, at about 100x the host's CPU time.
        skip=""
        [ "$t" = armhf ] && skip="--no-suite apps"
        # shellcheck disable=SC2086
        meson test -C "$dir" --suite fast $skip --print-errorlogs \
            --timeout-multiplier 10
    ) || status=1
    echo "ci-cross: $t took $(( ($(date +%s) - start) / 60 )) minutes"
done
exit $status
