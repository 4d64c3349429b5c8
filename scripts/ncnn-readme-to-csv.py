#!/usr/bin/env python3
"""Copy ncnn's published CPU latencies into data/published/ncnn.csv rows.

    python3 scripts/ncnn-readme-to-csv.py README.md COMMIT SECTIONS... > rows

README.md is ncnn's benchmark/README.md at COMMIT (the ncnn repository,
github.com/Tencent/ncnn); each SECTION is
"device|heading prefix|date of the table's last change|note[|networks]",
networks a comma-separated list of the only networks to copy (an older
table whose other networks' param files have since changed). Every
benchncnn run in that section on the CPU (gpu_device = -1, or no
gpu_device line in the old format) becomes one row per network whose
edgefit model data/models/ncnn-<network>.txt exists: the "avg" column,
copied as printed, never recomputed. `<network>_int8` rows are the same
network (its int8 param file has the same layers) at precision int8; the
others run in fp32 on ARMv8.0 cores and in fp16 on cores with ARMv8.2 FP16
arithmetic (Cortex-A76, A78), because benchncnn turns on
use_fp16_storage/use_fp16_arithmetic (benchncnn.cpp) and ncnn uses them
where the CPU has them.
"""
import os
import re
import sys

FP16_ARITH = {"rpi5", "jetson-orin-nano"}


def main():
    readme, commit = sys.argv[1], sys.argv[2]
    lines = open(readme).read().split("\n")
    models = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "data", "models")
    skipped = {}
    for spec in sys.argv[3:]:
        parts = spec.split("|")
        device, head, changed, note = parts[:4]
        allow = set(parts[4].split(",")) if len(parts) > 4 else None
        start = next(i for i, l in enumerate(lines)
                     if l.lstrip("# ").startswith(head))
        # the section's first code block: its opening and closing fences
        fences = [i for i in range(start + 1, len(lines))
                  if lines[i].startswith("```")][:2]
        end = fences[1]
        threads, gpu = None, -1
        heading = lines[start].lstrip("# ").strip()
        for i in range(start + 1, end):
            l = lines[i]
            m = re.match(r"num_threads = (\d+)", l)
            if m:
                threads, gpu = int(m.group(1)), -1
                continue
            m = re.match(r"gpu_device = (-?\d+)", l)
            if m:
                gpu = int(m.group(1))
                continue
            m = re.match(r"\s*(\S+)\s+min =\s*([\d.]+)\s+max =\s*([\d.]+)"
                         r"\s+avg =\s*([\d.]+)", l)
            if not m or gpu != -1 or threads is None:
                continue
            net, avg = m.group(1), m.group(4)
            base = net[:-5] if net.endswith("_int8") else net
            if allow is not None and net not in allow:
                skipped[base] = skipped.get(base, 0) + 1
                continue
            if net.endswith("_int8"):
                prec = "int8"
            else:
                prec = "fp16" if device in FP16_ARITH else "fp32"
            name = "ncnn-" + base
            if not os.path.exists(os.path.join(models, name + ".txt")):
                skipped[base] = skipped.get(base, 0) + 1
                continue
            src = (f"ncnn benchmark/README.md (github.com/Tencent/ncnn at "
                   f"{commit}; table last changed {changed}) section "
                   f"'{heading}' line {i + 1}: benchncnn num_threads="
                   f"{threads} cpu avg of '{net}'{note}")
            src = src.replace('"', "'")
            print(f'{name},{device},ncnn,{threads},{prec},1,{avg},"{src}"')
    for k, v in sorted(skipped.items()):
        sys.stderr.write(f"no model for {k}: {v} rows left out\n")


if __name__ == "__main__":
    main()
