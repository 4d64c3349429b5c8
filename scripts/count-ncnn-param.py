#!/usr/bin/env python3
"""Parameters and MACs of ncnn network definitions, from their own numbers.

    python3 scripts/count-ncnn-param.py FILE.param...

Prints "name parameters macs" per file: parameters are the weight counts
ncnn wrote (Convolution/ConvolutionDepthWise 6=, InnerProduct 2=) plus a
bias per output where the layer has one (5=1 / 1=1); MACs are each
convolution's weight count times its output's H x W, as ncnn's optimiser
wrote the output shape (-23330=4,dims,w,h,c), plus each InnerProduct's
weight count. Neither uses edgefit or the converter's shape arithmetic, so
tests/profile/test_published.c holds data/models/ncnn-*.txt against them.
A file without output shapes prints "-" for its MACs.
"""
import sys

for path in sys.argv[1:]:
    params = macs = 0
    shapes = True
    for line in open(path).read().split("\n")[2:]:
        tok = line.split()
        if not tok:
            continue
        kv = dict(x.split("=", 1) for x in tok if "=" in x)
        if tok[0] in ("Convolution", "ConvolutionDepthWise"):
            w, n = int(kv["6"]), int(kv["0"])
            params += w + (n if kv.get("5", "0") == "1" else 0)
            if "-23330" in kv:
                s = [int(v) for v in kv["-23330"].split(",")]
                macs += w * s[2] * s[3]
            else:
                shapes = False
        elif tok[0] == "InnerProduct":
            w, n = int(kv["2"]), int(kv["0"])
            params += w + (n if kv.get("1", "0") == "1" else 0)
            macs += w
    name = path.rsplit("/", 1)[-1]
    print(name, params, macs if shapes else "-")
