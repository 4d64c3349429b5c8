#!/bin/sh
# edgefit-device: exit codes and messages naming file:line for bad
# measurement and devices files; a fit's devices file read back by
# --devices predicts what the fit's own table says (a round trip through
# the CSV at 6 significant digits); --predict names the interval and the
# roofline bound; edgefit-layerwise with the written file gives the same
# prediction, its interval and runtime, in its table and on the terminal.
# usage: test_device.sh EDGEFIT-DEVICE FIXTURE.csv EDGEFIT-LAYERWISE
set -u
exe=$1
fixture=$2
layerwise=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0
check() { # description, then a command that must succeed
    n=$((n + 1))
    d=$1
    shift
    if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; fails=$((fails + 1)); fi
}
expect() { # exit code, text the message must hold, then the arguments
    code=$1 text=$2
    shift 2
    "$exe" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    n=$((n + 1))
    if [ "$rc" -eq "$code" ] && grep -qF -- "$text" "$tmp/err"; then
        echo "ok $n - exit $code and '$text' for $*"
    else
        echo "not ok $n - exit $rc (want $code), stderr: $(cat "$tmp/err")"
        fails=$((fails + 1))
    fi
}
echo "1..17"
head -1 "$fixture" >"$tmp/bad1.csv"
echo "smallcnn,rpi4,ncnn,0,fp32,1,1.0,x" >>"$tmp/bad1.csv"
expect 2 "bad1.csv:2: threads" --fit "$tmp/bad1.csv"
head -1 "$fixture" >"$tmp/bad2.csv"
echo "" >>"$tmp/bad2.csv"
echo "nosuchnet,rpi4,ncnn,1,fp32,1,1.0,x" >>"$tmp/bad2.csv"
expect 2 "bad2.csv:3: model: 'nosuchnet'" --fit "$tmp/bad2.csv"
head -1 "$fixture" >"$tmp/bad3.csv"
echo "smallcnn,nosuchboard,ncnn,1,fp32,1,1.0,x" >>"$tmp/bad3.csv"
expect 2 "bad3.csv:2: device: 'nosuchboard'" --fit "$tmp/bad3.csv"
printf 'model,device,runtime\nsmallcnn,rpi4,ncnn\n' >"$tmp/bad4.csv"
expect 2 "bad4.csv:1: the header" --fit "$tmp/bad4.csv"
head -1 "$fixture" >"$tmp/bad5.csv"
echo "smallcnn,rpi4,tvm,1,fp32,1,1.0,x" >>"$tmp/bad5.csv"
expect 2 "bad5.csv:2: runtime: 'tvm'" --fit "$tmp/bad5.csv"
expect 2 "--runtime: 'tvm'" --fit "$fixture" --runtime tvm
head -1 "$fixture" >"$tmp/bad6.csv"
echo "smallcnn,rpi4,ncnn,1,fp32,1,-2,x" >>"$tmp/bad6.csv"
expect 2 "bad6.csv:2: latency_ms: '-2' is not a number above 0" \
    --fit "$tmp/bad6.csv"

# a row marked excluded (its source begins "excluded:") is skipped aloud:
# the fit says so and its residuals hold only the other rows
cp "$fixture" "$tmp/excl.csv"
echo 'smallcnn,rpi4,ncnn,4,fp32,1,500,"excluded: contradicts the rows above"' \
    >>"$tmp/excl.csv"
"$exe" --fit "$tmp/excl.csv" --pool-sigma 0 --out "$tmp/excl" --quiet \
    >/dev/null 2>"$tmp/excl.err"
check "--fit says it skipped the row marked excluded" \
    grep -qF "excl.csv: 1 row marked excluded" "$tmp/excl.err"
check "the excluded row is neither fitted nor evaluated" \
    test "$(grep -c ',500,' "$tmp/excl/fit_residuals.csv")" -eq 0 -a \
    "$(wc -l <"$tmp/excl/fit_residuals.csv")" -eq "$(wc -l <"$fixture")"

"$exe" --fit "$fixture" --pool-sigma 0 --out "$tmp/fit" --quiet >/dev/null
check "--fit writes devices.csv, fit_residuals.csv, cross_validation.csv" \
    test -s "$tmp/fit/devices.csv" -a -s "$tmp/fit/fit_residuals.csv" \
    -a -s "$tmp/fit/cross_validation.csv"
# the shares within 25% and 2x that cross_validation.csv states are
# those of the leave-one-model-out predictions fit_residuals.csv lists
# (cv_predicted_ms against measured_ms, counted here)
shares() {
    awk -F, 'NR > 1 { r = $9 / $7; n++; w25 += (r >= 0.75 && r <= 1.25);
                      w2 += (r >= 0.5 && r <= 2) }
             END { printf "%.3f %.3f\n", w25 / n, w2 / n }' \
        "$tmp/fit/fit_residuals.csv"
}
stated() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             $1 == "rpi4" { printf "%.3f %.3f\n", $c["within_25pct"],
                            $c["within_2x"] }' "$tmp/fit/cross_validation.csv"
}
check "cross_validation.csv's shares ($(stated)) are fit_residuals.csv's ($(shares))" \
    test "$(shares)" = "$(stated)"
# the fit's own prediction of resnet8 on 4 threads, and --predict's from
# the file it wrote: the same to the digits the file keeps
want=$(awk -F, '$1 == "resnet8" && $4 == 4 { print $8 }' "$tmp/fit/fit_residuals.csv")
got=$("$exe" --predict --model resnet8 --device rpi4 --runtime ncnn \
    --devices "$tmp/fit/devices.csv" --threads 4 --format csv |
    awk -F, 'NR == 2 { print $8 }')
check "--predict from the written file ($got) is the fit's ($want)" \
    awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 1e-4 * b) }'
"$exe" --predict --model resnet8 --device rpi4 --runtime ncnn \
    --devices "$tmp/fit/devices.csv" --format csv >"$tmp/pred.csv"
check "--predict's interval holds its prediction; the roofline is positive" \
    awk -F, 'NR == 2 { exit !($9 <= $8 && $8 <= $10 && $11 > 0) }' "$tmp/pred.csv"
expect 2 "no fitted model of device 'rpi4' with runtime 'pytorch'" \
    --predict --model resnet8 --device rpi4 --runtime pytorch \
    --devices "$tmp/fit/devices.csv"
# a model row of a built-in board fitted on other figures is stale
sed '2s/^rpi4,[0-9.]*,/rpi4,99,/' "$tmp/fit/devices.csv" >"$tmp/stale.csv"
expect 2 "stale.csv:2: 'rpi4' was fitted on figures" --predict --model resnet8 \
    --device rpi4 --runtime ncnn --devices "$tmp/stale.csv"
# layerwise on rpi4 with the fitted ncnn model: its columns hold
# --predict's figures (to the 3 digits layerwise keeps), and its summary
# says the prediction with the runtime instead of "not calibrated"
"$layerwise" --model resnet8 --batch 1 --threads 4 --device rpi4 \
    --runtime ncnn --devices "$tmp/fit/devices.csv" --repeats 1 \
    --out "$tmp/lw" --quiet >/dev/null 2>&1
# the summary's last four columns (earlier cells may quote commas)
lw=$(awk -F, 'NR == 1 { ok = $(NF-3) == "device_runtime" &&
        $(NF-2) == "rpi4_predicted_ms" && $(NF-1) == "rpi4_predicted_ms_low" &&
        $NF == "rpi4_predicted_ms_high" }
    NR == 2 && ok { print $(NF-2), $(NF-1), $NF, $(NF-3) }' \
    "$tmp/lw/hardware_summary.csv" 2>/dev/null)
check "layerwise's rpi4_predicted_ms, _low, _high ($lw) are --predict's ($got)" \
    awk -v l="$lw" -v b="$got" 'BEGIN { split(l, v, " ");
        d = v[1] - b; if (d < 0) d = -d;
        exit !(b > 0 && d <= 5e-3 * b && v[2] < v[1] && v[1] < v[3] &&
               v[4] == "ncnn") }'
"$layerwise" --model resnet8 --batch 1 --threads 4 --device rpi4 \
    --runtime ncnn --devices "$tmp/fit/devices.csv" --repeats 1 \
    >"$tmp/lw.txt" 2>/dev/null
check "layerwise's summary gives the fitted prediction with its runtime" \
    sh -c "grep -q 'on rpi4 .* ms with ncnn (' '$tmp/lw.txt' &&
        ! grep -q 'not calibrated' '$tmp/lw.txt'"
exit $((fails > 0))
