#!/usr/bin/env python3
"""Parameters and MACs of XNNPACK's benchmark networks, from their own sizes.

    python3 scripts/count-xnnpack-model.py models/fp32-mobilenet-v1.cc ...

Parameters: the sum of the weight and bias arrays the file declares
(std::array<float, N> wK). MACs: each convolution's weight array size
times its output buffer's size over its output channels (the output
pixels). Neither uses edgefit or the converter's shape arithmetic, so
tests/profile/test_published.c holds data/models/xnnpack-*.txt against
them.
"""
import re
import sys

for path in sys.argv[1:]:
    src = open(path).read()
    arrays = {m.group(2): int(m.group(1)) for m in re.finditer(
        r"std::array<\w+, (\d+)> ([vw]\d+);", src)}
    params = sum(n for k, n in arrays.items() if k.startswith("w"))
    out_of = {}
    for m in re.finditer(r"xnn_setup_convolution2d_\w+\(\s*(op\d+),(.*?)\);",
                         src, re.S):
        out_of[m.group(1)] = re.search(r"(v\d+)\.data\(\) /\* output \*/",
                                       m.group(2)).group(1)
    macs = 0
    for m in re.finditer(r"xnn_operator_t (op\d+) = nullptr;\s*status = "
                         r"xnn_create_convolution2d_\w+\((.*?)&\1\);", src,
                         re.S):
        w = re.search(r"(w\d+)\.data\(\), (w\d+)\.data\(\)", m.group(2))
        weights, bias = arrays[w.group(1)], arrays[w.group(2)]
        macs += weights * arrays[out_of[m.group(1)]] // bias
    print(path.rsplit("/", 1)[-1], params, macs)
