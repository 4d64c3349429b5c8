#!/usr/bin/env python3
"""Copy XNNPACK's published Raspberry Pi latencies into CSV rows.

    python3 scripts/xnnpack-readme-to-csv.py README.md COMMIT DATE > rows

README.md is XNNPACK's README (github.com/google/XNNPACK) at COMMIT, whose
"Raspberry Pi" table times MobileNet v1, v2, v3 Large and Small (and, since
2021, int8 v1 and v2 with per-channel quantization) with end2end-bench on
several boards. Only the boards of edgefit's catalogue are copied: the
"RPi 3+ (BCM2837B0)" column as rpi3bplus, "RPi 4 (BCM2711)" and "RPi 4
(BCM2711, ARM64)" as rpi4. Every number is copied as printed. The table
says "multi-threaded" without a thread count; end2end-bench runs 1 to all
4 cores (bench/utils.cc), so threads is taken as the boards' 4, and the
source says so.
"""
import re
import sys

MODELS = {
    "MobileNet v1 1.0X": "xnnpack-mobilenet-v1",
    "MobileNet v2 1.0X": "xnnpack-mobilenet-v2",
    "MobileNet v3 Large": "xnnpack-mobilenet-v3-large",
    "MobileNet v3 Small": "xnnpack-mobilenet-v3-small",
}
COLUMNS = {
    "RPi 3+ (BCM2837B0), ms": ("rpi3bplus", "32-bit Raspbian Buster build"),
    "RPi 4 (BCM2711), ms": ("rpi4", "32-bit Raspbian Buster build"),
    "RPi 4 (BCM2711, ARM64), ms": ("rpi4", "ARM64 build"),
}


def main():
    readme, commit, date = sys.argv[1], sys.argv[2], sys.argv[3]
    lines = open(readme).read().split("\n")
    start = next(i for i, l in enumerate(lines) if l == "### Raspberry Pi")
    head = next(i for i in range(start, len(lines))
                if lines[i].startswith("| Model"))
    cols = [c.strip() for c in lines[head].strip("|").split("|")]
    note = next(l for l in lines[head:] if l.startswith("Benchmarked on"))
    when = re.match(r"Benchmarked on ([^w]*?) with", note).group(1)
    for i in range(head + 2, len(lines)):
        if not lines[i].startswith("|"):
            break
        cells = [c.strip() for c in lines[i].strip("|").split("|")]
        label = cells[0]
        prec = "int8" if label.startswith("INT8") else "fp32"
        base = re.sub(r"^(FP32|INT8) ", "", label)
        model = MODELS[base]
        for c, v in zip(cols[1:], cells[1:]):
            if c not in COLUMNS:
                continue
            dev, build = COLUMNS[c]
            clock = ("; the table names no clock: a Pi 4 of 2020 runs 1.5 "
                     "GHz, boards since late 2020 1.8 GHz" if dev == "rpi4"
                     else "")
            src = (f"XNNPACK README.md (github.com/google/XNNPACK at {commit},"
                   f" {date}) Raspberry Pi table line {i + 1}, column '{c}',"
                   f" row '{label}': end2end-bench, 'multi-threaded' (the "
                   f"bench runs T = 1 to all 4 cores, bench/utils.cc "
                   f"MultiThreadingParameters; the table's thread count is "
                   f"not stated, taken as 4; XNNPACK alone, TensorFlow "
                   f"Lite's CPU backend without its interpreter), "
                   f"{build}, benchmarked {when}{clock}")
            print(f'{model},{dev},tflite-xnnpack,4,{prec},1,{v},"{src}"')


if __name__ == "__main__":
    main()
