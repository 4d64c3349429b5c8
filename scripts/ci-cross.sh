#!/bin/sh
# CI's board stage: the ARM builds of a Raspberry Pi (or Jetson), made with
# Debian's cross compilers and tested under qemu-user. aarch64 (Raspberry
# Pi OS 64-bit) and armhf (32-bit: size_t is 32 bits, so every size the
# libraries compute in 64 bits is checked before it becomes one) are both
# built with warnings as errors; aarch64 runs the fast suite but its four
# heaviest apps tests and armhf the libraries' part of it, each test
# program and each app it starts running under qemu (binfmt_misc).
# Usage: scripts/ci-cross.sh [aarch64] [armhf]   (default: both)
# Cost: the sysroots about a minute, each cross build about as long as the
# native one. Under qemu the libraries' tests take about 3x the host's time
# (side by side on one machine), the apps tests that run whole models
# 50-100x its CPU time (a report run: 2 s on the host, 200 s): the host
# takes AVX-512 paths, qemu emulates NEON or C. The timeouts are raised
# x10 (x20 on aarch64, whose suite includes training) to match.
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
        # aarch64 runs the rest of the fast suite but the four apps tests
        # that run the most whole models (zoo, report, readme, vocabulary:
        # 60 s of the host's CPU, most of an hour under qemu); the kernels
        # they run are checkkern's under qemu, their apps the native suite's.
        if [ "$t" = armhf ]; then
            meson test -C "$dir" --suite fast --no-suite apps \
                --print-errorlogs --timeout-multiplier 10
        else
            names=$(meson test -C "$dir" --suite fast --list 2>/dev/null |
                sed -n 's|^.* / ||p' |
                grep -vxE 'zoo|report|readme|vocabulary')
            # shellcheck disable=SC2086
            meson test -C "$dir" --print-errorlogs --timeout-multiplier 20 \
                $names
        fi
    ) || status=1
    echo "ci-cross: $t took $(( ($(date +%s) - start) / 60 )) minutes"
done
exit $status
