#!/bin/sh
# Regenerate data/models/ncnn-*.txt and data/published/ncnn.csv from a git
# clone of ncnn (github.com/Tencent/ncnn):
#   sh scripts/make-published-ncnn.sh PATH/TO/ncnn [COMMIT]
# The models are benchncnn's network definitions (benchmark/models/*.param)
# converted layer by layer; the rows are the CPU "avg" latencies of the
# boards in data/published/README.md, copied from benchmark/README.md at
# COMMIT (the Raspberry Pi 4 at 1.5 GHz from the README as of 2021-05-06,
# before its table was replaced by the 1.8 GHz one).
set -eu
repo=$1
commit=${2:-a4d2ea1d4422c9e849f166fd7a4aefb52f942f6a}
old=d0d81203359ecd949fcb065f6226ad32324caf94
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$repo" show "$commit:benchmark/README.md" >"$tmp/README.md"
git -C "$repo" show "$old:benchmark/README.md" >"$tmp/README-2021.md"
# input sizes as benchncnn.cpp feeds them
for m in squeezenet:227 mobilenet:224 mobilenet_v2:224 mobilenet_v3:224 \
         shufflenet:224 shufflenet_v2:224 mnasnet:224 proxylessnasnet:224 \
         efficientnet_b0:224 regnety_400m:224 blazeface:128 resnet18:224 \
         vgg16:224 resnet50:224 googlenet:224 alexnet:227 \
         efficientnetv2_b0:224 squeezenet_ssd:300 mobilenet_ssd:300; do
    n=${m%%:*}
    s=${m##*:}
    git -C "$repo" show "$commit:benchmark/models/$n.param" >"$tmp/$n.param"
    if python3 "$here/scripts/ncnn-param-to-edgefit.py" "ncnn-$n" "$s" "$s" \
        "$tmp/$n.param" >"$tmp/ncnn-$n.txt"; then
        sed "s|$tmp/||" "$tmp/ncnn-$n.txt" >"$here/data/models/ncnn-$n.txt"
    fi
done
# The networks (comma-separated) whose param file at commit $1 has the
# layers it has now: only their rows of an older table are copied.
same_networks() {
    for n in squeezenet mobilenet mobilenet_v2 mobilenet_v3 shufflenet \
             shufflenet_v2 mnasnet proxylessnasnet efficientnet_b0 \
             regnety_400m blazeface resnet18 vgg16 resnet50 squeezenet_int8 \
             mobilenet_int8 resnet18_int8 vgg16_int8 resnet50_int8; do
        b=${n%_int8}
        lay_o=$(git -C "$repo" show "$1:benchmark/$n.param" 2>/dev/null |
              awk 'NR>2{print $1,$3,$4}' | md5sum)
        lay_n=$(git -C "$repo" show "$commit:benchmark/models/$n.param" |
              awk 'NR>2{print $1,$3,$4}' | md5sum)
        # the layers' parameters too, without names and shape hints
        par_o=$(git -C "$repo" show "$1:benchmark/$b.param" 2>/dev/null |
               awk 'NR>2{$1=$1;$2="";print}' | sed 's/ -233[0-9][0-9]=[^ ]*//g; s/ [^ ]*splitncnn[^ ]*//g' | awk '{for(i=1;i<=NF;i++) if ($i ~ /=/) printf "%s ", $i; print ""}' | md5sum)
        par_n=$(git -C "$repo" show "$commit:benchmark/models/$b.param" |
               awk 'NR>2{$1=$1;$2="";print}' | sed 's/ -233[0-9][0-9]=[^ ]*//g; s/ [^ ]*splitncnn[^ ]*//g' | awk '{for(i=1;i<=NF;i++) if ($i ~ /=/) printf "%s ", $i; print ""}' | md5sum)
        if [ "$lay_o" = "$lay_n" ] && [ "$par_o" = "$par_n" ]; then
            printf '%s,' "$n"
        fi
    done
}
JN="; the heading names no clock or power mode (the catalogue's jetson-nano assumes MAXN: 4 x A57 at 1.43 GHz)"
ON="; the heading names no clock or power mode (the catalogue's jetson-orin-nano assumes 6 x A78AE at 1.5 GHz); fp16 because benchncnn enables fp16 arithmetic, which the A78AE has"
P5="; fp16 because benchncnn enables fp16 arithmetic, which the Cortex-A76 has"
{
    echo "model,device,runtime,threads,precision,batch,latency_ms,source"
    python3 "$here/scripts/ncnn-readme-to-csv.py" "$tmp/README.md" "$commit" \
        "rpi3bplus|Raspberry Pi 3 Model B+ Broadcom BCM2837B0|2023-06-23|" \
        "rpizero2w|Raspberry Pi Zero 2 W|2022-01-17|" \
        "rpi4-1.8|Raspberry Pi 4 Model B Broadcom BCM2711B0|2023-06-15|" \
        "rpi5|Raspberry Pi 5 Broadcom BCM2712, Cortex-A76|2023-12-12|$P5" \
        "jetson-orin-nano|NVIDIA Jetson Orin Nano|2023-12-12|$ON" \
        "jetson-nano|NVIDIA Jetson Nano|2022-01-17|$JN"
    python3 "$here/scripts/ncnn-readme-to-csv.py" "$tmp/README-2021.md" "$old" \
        "rpi4|Raspberry Pi 4 Model B Broadcom BCM2711B0, Cortex-A72 (ARMv8) (1.5GHz x 4 )|2020-05-13|; an older ncnn than the 1.8 GHz table's, four threads only|$(same_networks $old)"
} >"$here/data/published/ncnn.csv"

# The 2020 Pi 4 table's int8 rows contradict that table's own fp32 rows
# and every other table here: they are kept, marked excluded with the
# reason (edgefit-device --fit skips a row whose source begins
# "excluded:" and says how many it skipped).
why="excluded: int8/fp32 at 4 threads in this 2020 table is 1.96 (mobilenet), 1.34 (squeezenet), 1.24 (vgg16), 0.68 (resnet18), 0.87 (resnet50): int8 slower than fp32 for 3 of its 5 networks, while every other ncnn table here gives 0.52-0.91 at 4 threads for every network (the 2022 Pi 4 table: mobilenet int8 40.30 ms against this one's 168.48); the older ncnn's int8 path, not the one the other rows measure; this table's fp32 rows are kept; "
sed -i "/,rpi4,ncnn,4,int8,.*$old/ s|,\"ncnn benchmark|,\"$why""ncnn benchmark|" \
    "$here/data/published/ncnn.csv"

# The Pi 5 table's mobilenet at fp16 on four threads (33.88 ms) is 1.67x
# slower than the same table's one-thread row (20.30 ms), while every
# other network of that table runs 1.47-2.11x faster on four threads (int8
# 1.64-2.55x, mobilenet's own int8 1.65x): kept, marked excluded.
why5="excluded: 1.67x slower on four threads than this table's own one-thread row (20.30 ms), while every other network of this table runs 1.47-2.11x faster on four threads at fp16 and 1.64-2.55x at int8 (mobilenet's own int8 1.65x); "
sed -i "/^ncnn-mobilenet,rpi5,ncnn,4,fp16,/ s|,\"ncnn benchmark|,\"$why5""ncnn benchmark|" \
    "$here/data/published/ncnn.csv"

# Older tables of the same boards, measured with older ncnn: the Pi 4 at
# 1.5 GHz on 1 and 4 threads (replaced on 2023-06-15 by the 1.8 GHz table)
# and the Pi 3B+ before its 2023-06-23 table.
pi4=d9e45ec703100e06de6136d8035e78222bf74de7
pi3=8c40a59216d0be18143f306c25c3b39b5f85d353
git -C "$repo" show "$pi4:benchmark/README.md" >"$tmp/README-pi4.md"
git -C "$repo" show "$pi3:benchmark/README.md" >"$tmp/README-pi3.md"
python3 "$here/scripts/ncnn-readme-to-csv.py" "$tmp/README-pi4.md" "$pi4" \
    "rpi4|Raspberry Pi 4 Model B Broadcom BCM2711B0, Cortex-A72 (ARMv8) (1.5GHz x 4)|2022-01-17|; the README before the 1.8 GHz table replaced it|$(same_networks $pi4)" \
    >>"$here/data/published/ncnn.csv"
python3 "$here/scripts/ncnn-readme-to-csv.py" "$tmp/README-pi3.md" "$pi3" \
    "rpi3bplus|Raspberry Pi 3 Model B+ Broadcom BCM2837B0|2022-01-03|; the README before the 2023-06-23 table replaced it|$(same_networks $pi3)" \
    >>"$here/data/published/ncnn.csv"
