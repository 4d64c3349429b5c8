#!/bin/sh
# CI's board stage: the ARM builds of a Raspberry Pi (or Jetson), made with
# Debian's cross compilers and tested under qemu-user. aarch64 (Raspberry
# Pi OS 64-bit) and armhf (32-bit: size_t is 32 bits, so every size the
# libraries compute in 64 bits is checked before it becomes one) are both
# built with warnings as errors, both with their NEON paths (armhf's for
# ARMv7-A NEON with VFPv4, chosen at run time); both run the whole fast
# suite (checkkern's NEON rows included), each test program and each app it
# starts running under qemu (binfmt_misc).
# Usage: scripts/ci-cross.sh [aarch64] [armhf]   (default: both)
# Cost: the sysroots about a minute, each cross build about as long as the
# native one. Under qemu the libraries' tests take about 3x the host's time
# (side by side on one machine), the apps tests that run whole models
# 50-100x its CPU time (a report run: 2 s on the host, 200 s): the host
# takes AVX-512 paths, qemu emulates NEON or C. The timeouts are raised
# x10 (x20 on aarch64, whose suite includes training) to match. CPU time
# under qemu with the NEON paths: checkkern 44 s (aarch64), 49 s (armhf);
# zoo with EDGEFIT_ZOO_APPS=lenet5 21 s (lenet5's layerwise 3 s, sweep 6 s,
# report 7 s; mobilenetv3-small's sweep alone takes 27 s, so all fifteen
# models through the apps would take several minutes more).
# EDGEFIT_EMULATED=1 makes the three apps tests that ran the most whole
# models take the smallest that print the same sentences and columns:
# vocabulary 65 s of CPU (308 s with resnet8 and ds-cnn), report (more than
# 10 min with the eleven MLPerf Tiny runs), readme without the samples that
# train (the README's first run trains five epochs on Fashion-MNIST).
# armhf's apps tests, measured under qemu-arm at load 5-7 with two at a
# time: report 414 s, out-faults 206 s, layerwise 57 s, device 55 s, the
# other 46 under 35 s each; about 10 minutes of wall time in all.
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
        # Both run the whole fast suite. zoo runs: every model's import,
        # exact counts, outputs against PyTorch and refusals, and lenet5
        # (the smallest) through layerwise, sweep and report
        # (EDGEFIT_ZOO_APPS; the native suite takes all fifteen through);
        # report, readme and vocabulary take their smallest models, and
        # profile-train-graph trains on fewer images (EDGEFIT_EMULATED,
        # above; the native suite runs them all). On armhf, size_t is 32
        # bits: the apps' refusals of huge batches and sizes are checked
        # where they differ from a 64-bit build's.
        EDGEFIT_ZOO_APPS=lenet5 EDGEFIT_EMULATED=1 meson test -C "$dir" \
            --suite fast --print-errorlogs --timeout-multiplier 20
    ) || status=1
    echo "ci-cross: $t took $(( ($(date +%s) - start) / 60 )) minutes"
done
exit $status
