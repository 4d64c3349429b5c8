#!/usr/bin/env bash
# Seconds per epoch of edgefit-train's default run (mlp:784-64-10, 5 epochs,
# alpha 0.1, batch 32, seed 42, real Fashion-MNIST) side by side with the
# same training in numpy (scripts/train-numpy.py) and PyTorch
# (scripts/train-torch.py), at 1 and 2 threads.
#
# The three run interleaved, round after round, so that a machine whose
# speed drifts slows them alike; each one's figure is the median of its
# per-epoch seconds over every round, and only the ratios between them are
# meant to be compared. Python serves these reference scripts only.
# Multi-threaded runs need idle cores: on a machine busier than its cores a
# thread waiting at a barrier for a descheduled peer measures the scheduler
# (PyTorch's small per-step operators suffer most).
#
# usage: scripts/bench-train.sh [--build DIR] [--rounds N] [--threads "1 2"]
#                               [--data DIR] [--epochs N]
# PYTHON names the interpreter (default: a python3 with numpy and torch).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=build
rounds=3
threads_list="1 2"
data=/usr/share/datasets/fashion-mnist
epochs=5

die() {
    echo "bench-train: $*" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --threads) threads_list=${2:?--threads needs a list}; shift 2 ;;
    --data) data=${2:?--data needs a folder}; shift 2 ;;
    --epochs) epochs=${2:?--epochs needs a number}; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
case "$rounds" in ''|*[!0-9]*|0) die "--rounds: '$rounds' is not a positive integer" ;; esac
case "$epochs" in ''|*[!0-9]*|0) die "--epochs: '$epochs' is not a positive integer" ;; esac
for t in $threads_list; do
    case "$t" in ''|*[!0-9]*|0) die "--threads: '$t' is not a positive integer" ;; esac
done

train=$build/apps/train/edgefit-train
[ -x "$train" ] || die "$train: not built (meson setup $build && ninja -C $build)"
[ -d "$data" ] || die "--data $data: no such folder (package dataset-fashion-mnist)"

# A python3 that has numpy and torch: $PYTHON, python3 on PATH, or the
# system's own.
pick_python() {
    for p in ${PYTHON:-} python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null 2>&1 &&
            "$p" -c 'import numpy, torch' >/dev/null 2>&1; then
            echo "$p"
            return 0
        fi
    done
    return 1
}
python=$(pick_python) || die "no python3 with numpy and torch (packages python3-numpy, python3-torch)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Per-epoch seconds go to $work/<tool>-<threads>.s, one a line; the last
# test accuracy to $work/<tool>-<threads>.acc.
run_edgefit() {
    local t=$1 out=$work/out-edgefit
    rm -rf "$out"
    "$train" --model mlp:784-64-10 --epochs "$epochs" --alpha 0.1 \
        --batch 32 --seed 42 --threads "$t" --data "$data" --out "$out" \
        --quiet >"$work/edgefit.log" 2>&1 ||
        { cat "$work/edgefit.log" >&2; die "edgefit-train failed"; }
    # The columns are found by name: the epoch's seconds and the test
    # accuracy of training_history.csv.
    awk -F, -v s="$work/edgefit-$t.s" -v a="$work/edgefit-$t.acc" '
        NR == 1 {
            for (i = 1; i <= NF; i++) {
                if ($i == "epoch_time_s" || $i == "epoch_seconds" ||
                    $i == "seconds") { sc = i }
                if ($i == "test_accuracy") { ac = i }
            }
            if (!sc || !ac) { print "no seconds or test_accuracy column" > "/dev/stderr"; exit 1 }
            next
        }
        { print $sc >> s; acc = $ac }
        END { if (acc != "") print acc > a }' "$out/training_history.csv"
}

run_python() {
    local tool=$1 t=$2
    "$python" "$here/train-$tool.py" --threads "$t" --epochs "$epochs" \
        --data "$data" >"$work/$tool.log" 2>&1 ||
        { cat "$work/$tool.log" >&2; die "train-$tool.py failed"; }
    awk -v s="$work/$tool-$t.s" -v a="$work/$tool-$t.acc" '
        $1 == "epoch" { for (i = 1; i < NF; i++) if ($i == "seconds") print $(i + 1) >> s }
        $1 == "final" { for (i = 1; i < NF; i++) if ($i == "test_accuracy") print $(i + 1) > a }
        ' "$work/$tool.log"
}

median() {
    sort -g "$1" | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

tools="edgefit numpy torch"
for t in $threads_list; do
    for r in $(seq 1 "$rounds"); do
        # Rotate the order every round so no tool always runs first.
        set -- $tools
        case $(( (r - 1) % 3 )) in
        0) order="$1 $2 $3" ;;
        1) order="$2 $3 $1" ;;
        2) order="$3 $1 $2" ;;
        esac
        for tool in $order; do
            echo "threads $t round $r/$rounds: $tool" >&2
            if [ "$tool" = edgefit ]; then
                run_edgefit "$t"
            else
                run_python "$tool" "$t"
            fi
        done
    done
done

echo "# median seconds per epoch over $rounds rounds of $epochs epochs" \
    "(mlp:784-64-10, batch 32, alpha 0.1, seed 42)"
printf '%-8s %-8s %14s %14s\n' threads tool epoch_median_s test_accuracy
for t in $threads_list; do
    for tool in $tools; do
        printf '%-8s %-8s %14.4f %14s\n' "$t" "$tool" \
            "$(median "$work/$tool-$t.s")" "$(cat "$work/$tool-$t.acc")"
    done
done
echo
printf '%-8s %22s %22s\n' threads edgefit_over_numpy edgefit_over_torch
for t in $threads_list; do
    e=$(median "$work/edgefit-$t.s")
    n=$(median "$work/numpy-$t.s")
    p=$(median "$work/torch-$t.s")
    printf '%-8s %22.3f %22.3f\n' "$t" \
        "$(awk -v a="$e" -v b="$n" 'BEGIN { print a / b }')" \
        "$(awk -v a="$e" -v b="$p" 'BEGIN { print a / b }')"
done
