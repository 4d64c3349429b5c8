#!/bin/bash
# The bad-input catalogue (tests/bad/cases.tsv, written by
# scripts/make-bad-inputs.py): each case runs one app on a bad input or a
# bad argument and must exit with the expected code, with the expected
# fragment (file:line, ONNX node, argument name) in its stderr, within
# 20 s, never by a signal. With BAD_MEM_KB set (the build without
# sanitizers), each run's address space is limited to it: a hostile size
# must be refused before it is allocated. With BAD_WRAPPER set (meson's
# valgrind setup: the valgrind command), each app runs under it, without
# the address-space limit (valgrind reserves more) and with 600 s: an app
# started by `timeout`, a system program, is not traced otherwise.
#
# Usage: run.sh CASES.tsv BAD_DIR DATA_DIR APP=PATH...
set -u
cases=$1 bad=$2 data=$3
shift 3
declare -A app
for a in "$@"; do
    app[${a%%=*}]=${a#*=}
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/edgefit-bad.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
skipped=0
while IFS=$'\t' read -r name args want frag; do
    case "$name" in '#'*|'') continue ;; esac
    n=$((n + 1))
    exe=${app[$name]:-}
    if [ -z "$exe" ]; then
        # an app this build does not have (edgefit-bench without SIMD)
        skipped=$((skipped + 1))
        continue
    fi
    run="$tmp/$n"
    mkdir -p "$run"
    args=${args//@BAD@/$bad}
    args=${args//@DATA@/$data}
    args=${args//@TMP@/$run}
    # shellcheck disable=SC2086
    (
        cd "$run" || exit 125
        if [ -n "${BAD_WRAPPER:-}" ]; then
            exec timeout 600 $BAD_WRAPPER "$exe" $args
        fi
        if [ -n "${BAD_MEM_KB:-}" ]; then
            ulimit -v "$BAD_MEM_KB"
        fi
        exec timeout 20 "$exe" $args
    ) >"$run/out" 2>"$run/err" </dev/null
    got=$?
    if [ "$got" != "$want" ] || ! grep -qF -- "$frag" "$run/err"; then
        failed=$((failed + 1))
        echo "FAIL case $n: $name $args"
        echo "  exit $got (want $want); stderr must hold: $frag"
        sed 's/^/  | /' "$run/err" | head -n 5
    fi
    rm -rf "$run"
done <"$cases"
echo "$n cases, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$n" -ge 200 ]
