#!/bin/sh
# CI's board stage: the ARM builds of a Raspberry Pi (or Jetson), made with
# Debian's cross compilers and tested under qemu-user. aarch64 (Raspberry
# Pi OS 64-bit) and armhf (32-bit: size_t is 32 bits, so every size the
# libraries compute in 64 bits is checked before it becomes one) are both
# built with warnings as errors, both with their NEON paths (armhf's for
# ARMv7-A NEON with VFPv4, chosen at run time); aarch64 runs the fast suite
# but three of its heaviest apps tests and armhf the libraries' part of it
# (checkkern's NEON rows included), each test program and each app it
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
# models through the apps would take several minutes more); the report
# test had used 8.3 min of CPU before its eleven whole-model report runs
# (test_models) were done, so it stays native-only with readme and
# vocabulary.
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
        # its apps tests run the whole models aarch64's run, at about 100x
        # the host's CPU time.
        # aarch64 runs the rest of the fast suite but the three apps tests
        # that time the most whole models (report, readme, vocabulary: each
        # app's timed sweeps at several precisions and batches, most of an
        # hour under qemu); the kernels they run are checkkern's under
        # qemu, their apps the native suite's. zoo runs: every model's
        # import, exact counts, outputs against PyTorch and refusals, and
        # lenet5 (the smallest) through layerwise, sweep and report
        # (EDGEFIT_ZOO_APPS; the native suite takes all fifteen through).
        if [ "$t" = armhf ]; then
            meson test -C "$dir" --suite fast --no-suite apps \
                --print-errorlogs --timeout-multiplier 10
        else
            names=$(meson test -C "$dir" --suite fast --list 2>/dev/null |
                sed -n 's|^.* / ||p' |
                grep -vxE 'report|readme|vocabulary')
            # shellcheck disable=SC2086
            EDGEFIT_ZOO_APPS=lenet5 meson test -C "$dir" --print-errorlogs \
                --timeout-multiplier 20 $names
        fi
    ) || status=1
    echo "ci-cross: $t took $(( ($(date +%s) - start) / 60 )) minutes"
done
exit $status
