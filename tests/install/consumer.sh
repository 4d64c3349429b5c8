#!/bin/sh
# Install the build into a scratch folder, then build and run a consumer of
# edgefit-memest found through pkg-config alone.
# Usage: consumer.sh BUILD_DIR SOURCE_DIR CC SANITIZE [SYSROOT]
# SYSROOT (a cross build's): the target's own libraries and their .pc
# files are there, not in the build machine's folders.
set -eu
build=$1
src=$2
cc=$3
sanitize=$4
sysroot=${5:-}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
meson install -C "$build" --destdir "$scratch/root" --no-rebuild --quiet

pc=$(find "$scratch/root" -name edgefit-memest.pc | head -n 1)
[ -n "$pc" ] || { echo "edgefit-memest.pc was not installed" >&2; exit 1; }
# The system's own folders stay searched after the installed one: the
# library's private requirements (protobuf-c with the onnx option) are
# system packages.
system_pc=$(pkg-config --variable pc_path pkg-config)
sysflag=""
if [ -n "$sysroot" ]; then
    triplet=$("$cc" -dumpmachine)
    system_pc="$sysroot/usr/lib/$triplet/pkgconfig:$sysroot/usr/share/pkgconfig"
    sysflag="--sysroot=$sysroot"
fi
export PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_SYSROOT_DIR="$scratch/root"
export PKG_CONFIG_LIBDIR="$PKG_CONFIG_PATH:$system_pc"

# The model descriptions the presets are compiled from, installed as text
# to copy from, byte for byte.
models=$(find "$scratch/root" -type d -path '*/share/edgefit/models' | head -n 1)
[ -n "$models" ] || { echo "share/edgefit/models was not installed" >&2; exit 1; }
for m in "$src"/../../libmemest/models/*.txt; do
    cmp "$m" "$models/$(basename "$m")" ||
        { echo "$(basename "$m") was not installed as it is" >&2; exit 1; }
done

flags=$(pkg-config --cflags --libs edgefit-memest)
echo "pkg-config: $flags"
# The one library, nothing else of edgefit.
case "$flags" in
    *edgefit-kernels*|*edgefit-profile*|*edgefit-artifacts*)
        echo "edgefit-memest pulls in another edgefit library" >&2; exit 1 ;;
esac

extra=""
if [ "$sanitize" != "none" ]; then
    extra="-fsanitize=$sanitize"
fi
# shellcheck disable=SC2086
"$cc" $sysflag -std=c11 -Wall -Werror $extra -o "$scratch/consumer" "$src/consumer.c" $flags
libdir=$(pkg-config --variable=libdir edgefit-memest)
# pkgconf prefixes variables with the sysroot, pkg-config does not.
case "$libdir" in
    "$scratch/root"/*) ;;
    *) libdir="$scratch/root$libdir" ;;
esac
LD_LIBRARY_PATH="$libdir" "$scratch/consumer"
