#!/bin/sh
# Build a target sysroot of Debian's own arm64/armhf packages for the cross
# builds (scripts/cross/*.ini), without touching the host's packages: a
# private apt state (its own lists, cache and an empty dpkg status) resolves
# the target libraries' dependencies, `apt-get download`s them and
# `dpkg-deb -x` unpacks each into the sysroot. Nothing is installed, so the
# host's own packages are never upgraded or replaced.
# Usage: scripts/cross/make-sysroot.sh ARCH DIR   (ARCH: arm64 | armhf)
set -eu

arch=$1
root=$2
# The target's -dev packages the project links with, and the C library.
pkgs="libc6-dev libcsv-dev libpng-dev libcairo2-dev libjansson-dev zlib1g-dev
libcmocka-dev libprotobuf-c-dev"

state=$root.apt
mkdir -p "$state/lists/partial" "$state/archives/partial" "$root"
: > "$state/status"
aptopts="-o APT::Architecture=$arch -o APT::Architectures::=$arch
-o Dir::State=$state -o Dir::State::Lists=$state/lists
-o Dir::State::status=$state/status -o Dir::Cache=$state
-o Dir::Cache::Archives=$state/archives -o Debug::NoLocking=1
-o APT::Install-Recommends=0 -o APT::Get::AllowUnauthenticated=0"
# A mirror in mid-sync fails one index now and then: try again, and then go
# on with the indexes that did arrive (the download below fails loudly if a
# package is really missing).
n=0
# shellcheck disable=SC2086
until apt-get -q $aptopts update; do
    n=$((n + 1))
    if [ $n -ge 3 ]; then
        echo "make-sysroot.sh: some $arch indexes failed; going on" >&2
        break
    fi
    sleep 10
done
# Every package the -dev packages need, by name, for the target architecture
# (the empty status means nothing counts as installed already).
# shellcheck disable=SC2086
apt-get -q -y $aptopts --download-only install $pkgs
for deb in "$state"/archives/*.deb; do
    dpkg-deb -x "$deb" "$root"
done
# Absolute symbolic links inside the sysroot (/lib/... in the -dev packages)
# would point at the host's files: point them into the sysroot.
find "$root" -type l | while read -r link; do
    target=$(readlink "$link")
    case $target in
        /*) ln -sfn "$root$target" "$link" ;;
    esac
done
rm -rf "$state/archives"
