#!/bin/bash
# CI's fuzzing stage: every fuzz target of tests/fuzz built by clang with
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# (-Dfuzzing=true), then fuzzed for a fixed time each, two at a time,
# starting from copies of its corpus (the files meson test replays, taken
# from the build's test list) in a scratch folder, so the tree is left as it
# was. A crash, a leak, a timeout (an input that takes over 10 s), a single
# allocation of 64 MiB or more or a process above 1.5 GiB is a failure: the
# script prints the reproducer's path and the command that replays it, and
# exits 1. It prints each target's executions.
#
# Usage: scripts/ci-fuzz.sh [BUILD_DIR]   (default build-fuzz)
#
# A CI run is reproducible: libFuzzer starts from FUZZ_SEED (default 1) and
# each target stops at its number of executions below (10^6 for the
# parsers; for the targets that run a model, about what 200 s give it on a
# 2-core x86-64), so the same commit fuzzes the same inputs on every
# machine and a crash CI reports is a crash anyone can replay; a new
# commit changes the binaries and with them the inputs tried. FUZZ_SECONDS
# (default 200) bounds each target's time on a slower machine, and
# FUZZ_SECONDS_FAST (default twice that) the parsers'. To explore
# beyond CI's inputs, give FUZZ_SEED=0 (a new seed each run), FUZZ_RUNS=-1
# (no bound on executions) and the time you can spare in FUZZ_SECONDS.
# FUZZ_JOBS (default 2) is how many targets run at once; FUZZ_ONLY (names
# such as "fuzz-csv fuzz-npy") fuzzes only those targets.
set -u
cd "$(dirname "$0")/.."

build=${1:-build-fuzz}
seconds=${FUZZ_SECONDS:-200}
jobs=${FUZZ_JOBS:-2}
seed=${FUZZ_SEED:-1}

# Executions per target in a CI run (FUZZ_RUNS overrides all of them).
runs_for() {
    if [ -n "${FUZZ_RUNS:-}" ]; then
        echo "$FUZZ_RUNS"
        return
    fi
    case $1 in
    fuzz-onnx-exec) echo 40000 ;;
    fuzz-onnx) echo 110000 ;;
    fuzz-model-exec) echo 160000 ;;
    fuzz-qdq) echo 380000 ;;
    fuzz-csv) echo 400000 ;;
    *) echo 1000000 ;;
    esac
}

# Seconds a target may take at most: the fast ones (parsers alone, about
# 3,000-5,000 executions a second under CI's load) up to 400 s so that they
# reach their 10^6 executions; the ones that run a model (and the CSV
# reader's) stop at FUZZ_SECONDS.
seconds_for() {
    case $1 in
    fuzz-model|fuzz-safetensors|fuzz-idx|fuzz-npy|fuzz-devices|fuzz-calib)
        echo "${FUZZ_SECONDS_FAST:-$((seconds * 2))}" ;;
    *) echo "$seconds" ;;
    esac
}

sh scripts/setup-debian.sh --clang || exit 1
if [ ! -f "$build/build.ninja" ]; then
    # -fsanitize=fuzzer-no-link: the libraries report coverage to
    # libFuzzer; the targets link it (tests/fuzz/meson.build). The kernels
    # run their C references (-Dsimd=disabled): what a hostile model
    # reaches is the executor's plan and the reference kernels' indexing,
    # and clang takes minutes per SIMD file under ASan and UBSan (checkkern
    # holds the SIMD paths to the references).
    CC=clang meson setup "$build" -Dfuzzing=true -Dwerror=true \
        -Db_sanitize=address,undefined -Db_lundef=false -Dsimd=disabled \
        -Dbuildtype=debugoptimized -Dc_args=-fsanitize=fuzzer-no-link \
        >/dev/null || exit 1
fi

# Each fuzz test's name and the corpus files it replays, one per line:
# "NAME FILE FILE ...", from Meson's test list.
list=$(meson introspect --tests "$build" | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if "fuzz" in t["suite"] or any(s.endswith(":fuzz") for s in t["suite"]):
        print(" ".join([t["name"], t["cmd"][0]] + t["cmd"][1:]))
') || exit 1
if [ -n "${FUZZ_ONLY:-}" ]; then
    list=$(echo "$list" | awk -v only=" $FUZZ_ONLY " 'index(only, " " $1 " ")')
fi
[ -n "$list" ] || { echo "ci-fuzz: no fuzz targets in $build"; exit 1; }

targets=$(echo "$list" | awk '{print $2}' | sed "s|^$(pwd)/$build/||")
# shellcheck disable=SC2086
ninja -C "$build" -j2 $targets || exit 1

scratch=$(mktemp -d "${TMPDIR:-/tmp}/edgefit-fuzz.XXXXXX")
echo "ci-fuzz: $(echo "$list" | wc -l) targets, seed $seed, each up to its executions or ${seconds} s (parsers $(seconds_for fuzz-npy) s), $jobs at a time; corpora and findings in $scratch"

# Fuzz one target: "NAME BINARY FILE..." on its own line.
fuzz_one() {
    set -- $1
    local name=$1 bin=$2
    shift 2
    local dir="$scratch/$name"
    mkdir -p "$dir/corpus" "$dir/found"
    local i=0
    for f in "$@"; do
        # numbered: two corpus files may share a base name
        cp "$f" "$dir/corpus/$i-$(basename "$f")"
        i=$((i + 1))
    done
    # The devices reader reports each refusal on stderr: closed (2) so the
    # log stays small; a crash is replayed below with stderr open.
    local mask=0
    [ "$name" = fuzz-devices ] && mask=2
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ASAN_OPTIONS=detect_leaks=1 \
    LSAN_OPTIONS=suppressions=$(pwd)/tests/lsan.supp \
        "$bin" "$dir/corpus" -seed="$seed" -runs="$(runs_for "$name")" \
        -max_total_time="$(seconds_for "$name")" -timeout=10 \
        -rss_limit_mb=1536 -malloc_limit_mb=64 -print_final_stats=1 \
        -close_fd_mask=$mask -artifact_prefix="$dir/found/" \
        >"$dir/log" 2>&1
    echo $? >"$dir/rc"
}

running=0
while read -r line; do
    fuzz_one "$line" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done <<<"$list"
wait

status=0
while read -r line; do
    set -- $line
    name=$1 bin=$2
    dir="$scratch/$name"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
    rc=$(cat "$dir/rc" 2>/dev/null || echo 1)
    printf '%-22s %12s executions  exit %s\n' "$name" "${execs:-?}" "$rc"
    if [ "$rc" != 0 ]; then
        status=1
        grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error)" "$dir/log" | head -n 5
        for f in "$dir"/found/*; do
            [ -e "$f" ] || continue
            echo "  reproducer: $f"
            echo "  replay: $bin $f"
        done
        tail -n 40 "$dir/log"
    fi
done <<<"$list"
if [ $status -ne 0 ]; then
    echo "ci-fuzz: FAILED (reproducers above; add each as a regression file under tests/fuzz/)"
else
    echo "ci-fuzz: no crash"
fi
exit $status
