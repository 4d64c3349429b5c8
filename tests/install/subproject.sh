#!/bin/sh
# Build a tiny outside project that takes edgefit as a Meson subproject (a
# link to this source tree) and uses dependency('edgefit-memest') alone,
# then run its program. No network: the wrap only names the folder.
# Usage: subproject.sh SOURCE_ROOT TEST_DIR
set -eu
root=$1
here=$2

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/project/subprojects"
cp "$here/subproject/meson.build" "$here/consumer.c" "$scratch/project/"
cp "$here/subproject/edgefit.wrap" "$scratch/project/subprojects/"
ln -s "$root" "$scratch/project/subprojects/edgefit"

cd "$scratch/project"
meson setup --wrap-mode=nodownload build >setup.log 2>&1 || {
    cat setup.log >&2; exit 1; }
grep -q "edgefit-memest found: YES" setup.log || {
    echo "dependency('edgefit-memest') was not answered by the subproject" >&2
    cat setup.log >&2; exit 1; }
# Only what the consumer needs is built: libmemest, not the rest of edgefit.
meson compile -C build consumer >compile.log 2>&1 || {
    cat compile.log >&2; exit 1; }
if find build/subprojects -type f -name 'libedgefit-*.so.*' | grep -v memest | grep -q .; then
    echo "building the consumer built another edgefit library" >&2; exit 1
fi
if command -v readelf >/dev/null 2>&1; then
    needed=$(readelf -d build/consumer | grep NEEDED)
    echo "$needed"
    case "$needed" in
        *edgefit-kernels*|*edgefit-profile*|*edgefit-artifacts*)
            echo "the consumer links another edgefit library" >&2; exit 1 ;;
    esac
fi
./build/consumer
