#!/bin/sh
# Install what a fresh Debian 12 machine lacks to build, test and run edgefit.
# Usage: scripts/setup-debian.sh [--bench] [--clang] [--valgrind] [--cross]
#   --bench adds the BLAS comparison libraries; --clang the second compiler
#   CI builds with (clang 14, also scripts/ci-faults.sh's integer checks);
#   --valgrind valgrind for `meson test --setup valgrind`; --cross the ARM
#   cross builds CI runs under qemu-user (scripts/ci-cross.sh): gcc-aarch64-linux-gnu,
#   gcc-arm-linux-gnueabihf, qemu-user-static, and the arm64 and armhf
#   libraries unpacked into sysroots under /opt/edgefit-cross (never
#   installed, so the host's packages are left as they are)
# (Regenerating the ONNX test fixtures, scripts/make-onnx-test-models.py, also
# takes python3-onnx and python3-torch; the tests themselves need no Python.)
set -eu

pkgs="meson ninja-build pkg-config gcc libc6-dev libcsv-dev libpng-dev libcairo2-dev
fonts-dejavu-core libjansson-dev zlib1g-dev libcmocka-dev dataset-fashion-mnist
protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata"

cross=0
for arg in "$@"; do
    case $arg in
        # libFuzzer (clang -fsanitize=fuzzer, scripts/ci-fuzz.sh) is only
        # recommended by clang 14, so named
        --clang) pkgs="$pkgs clang libclang-rt-14-dev" ;;
        --valgrind) pkgs="$pkgs valgrind" ;;
        --bench) pkgs="$pkgs libopenblas-dev libxsmm-dev libdnnl-dev libxnnpack-dev
    libpthreadpool-dev" ;;
        --cross) pkgs="$pkgs gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf
    qemu-user-static"; cross=1 ;;
        *) echo "setup-debian.sh: unknown option $arg" >&2; exit 2 ;;
    esac
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    $sudo apt-get update -q
    # shellcheck disable=SC2086
    $sudo apt-get install -y -q --no-install-recommends $missing
fi
[ $cross -eq 1 ] || exit 0

# The target sysroots the cross files (scripts/cross/*.ini) name. A finished
# sysroot has its marker; a half-made one is made again.
here=$(dirname "$0")
for arch in arm64 armhf; do
    root=/opt/edgefit-cross/$arch
    if [ ! -e "$root/.complete" ]; then
        $sudo rm -rf "$root" "$root.apt"
        $sudo sh "$here/cross/make-sysroot.sh" "$arch" "$root"
        $sudo touch "$root/.complete"
    fi
done

# A test that starts an app (tests/apps/run.c's execv) runs an ARM binary
# directly: binfmt_misc hands it to qemu, whose default loader prefix is
# /etc/qemu-binfmt/<cpu>. Containers often lack the mount and the
# registration that systemd-binfmt does on a booted system.
$sudo mkdir -p /etc/qemu-binfmt
for pair in aarch64:arm64 arm:armhf; do
    cpu=${pair%%:*}
    arch=${pair#*:}
    [ -e "/etc/qemu-binfmt/$cpu" ] ||
        $sudo ln -s "/opt/edgefit-cross/$arch" "/etc/qemu-binfmt/$cpu"
done
binfmt=/proc/sys/fs/binfmt_misc
[ -e $binfmt/register ] ||
    $sudo mount -t binfmt_misc binfmt_misc $binfmt
for cpu in aarch64 arm; do
    if [ ! -e "$binfmt/qemu-$cpu" ]; then
        # The line Debian's qemu-user-static ships, with the static qemu as
        # interpreter (flag F: opened now, so it works in any mount namespace).
        grep -v '^#' "/usr/lib/binfmt.d/qemu-$cpu.conf" |
            $sudo tee $binfmt/register > /dev/null
    fi
done
