#!/usr/bin/env python3
"""Write one of XNNPACK's benchmark networks as an edgefit text model.

    python3 scripts/xnnpack-model-to-edgefit.py NAME FILE.cc > data/models/NAME.txt

FILE.cc is one of XNNPACK's models/fp32-mobilenet-*.cc (github.com/google/
XNNPACK), the networks its end2end benchmark times and its README's
Raspberry Pi table reports: each operator is created with its padding,
kernel, stride, groups, channels and fused clamp written out, and set up
with the buffers it reads and writes. This reads those calls, so the model
has XNNPACK's layers exactly (TensorFlow's "same" padding, 1001 classes,
the classifier a 1x1 convolution), and checks every buffer's size against
the shape it computes. An operator type it does not know stops it.

The fused clamps become activations: [0, 6] relu6, [0, inf) relu, none
when unbounded; MobileNet v3's squeeze-excite gate, a convolution whose
weights XNNPACK pre-scaled and clamped to [0, 1.00002] (its hard sigmoid),
becomes `act=clip min=0 max=...` with that bound.
"""
import math
import re
import sys


def num(s):
    s = s.strip()
    if "infinity" in s:
        return -math.inf if s.startswith("-") else math.inf
    s = s.rstrip("f")
    if "0x" in s:
        return float.fromhex(s)
    return float(s)


def args(text):
    """Top-level comma-separated arguments as (value, comment) pairs."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    res = []
    for a in out:
        m = re.match(r"\s*(.*?)\s*(/\*\s*(.*?)\s*\*/)?\s*$", a, re.S)
        res.append((m.group(1), m.group(3) or ""))
    return res


def main():
    name, path = sys.argv[1], sys.argv[2]
    src = open(path).read()
    sizes = {m.group(2): int(m.group(1)) for m in re.finditer(
        r"std::array<\w+, (\d+)> (v\d+);", src)}
    creates = {}
    for m in re.finditer(r"xnn_operator_t (op\d+) = nullptr;\s*status = "
                         r"xnn_create_(\w+)\((.*?)&\1\);", src, re.S):
        creates[m.group(1)] = (m.group(2), args(m.group(3)))
    setups = []
    for m in re.finditer(r"xnn_setup_(\w+)\(\s*(op\d+),(.*?)\);", src,
                         re.S):
        setups.append((m.group(2), m.group(1), args(m.group(3))))
    shape = {}    # buffer -> (H, W, C)
    layer = {}    # buffer -> edgefit layer name
    lines = [f"name {name}"]
    for k, (op, kind, sa) in enumerate(setups):
        ctype, ca = creates[op]
        assert ctype == kind, (op, ctype, kind)
        bufs = {c: re.match(r"(v\d+)\.data\(\)", v).group(1)
                for v, c in sa if ".data()" in v}
        vals = {c: v for v, c in sa}
        lname = f"op{op[2:]}"
        if kind.startswith("convolution2d_nhwc"):
            c = {cm: v for v, cm in ca}
            top, right = int(c["top padding"]), int(c["right padding"])
            bottom, left = int(c["bottom padding"]), int(c["left padding"])
            kh, kw = int(c["kernel height"]), int(c["kernel width"])
            sh, sw = int(c["subsampling height"]), int(c["subsampling width"])
            dh, dw = int(c["dilation_height"]), int(c["dilation_width"])
            g = int(c["groups"])
            cin = g * int(c["input channels per group"])
            cout = g * int(c["output_channels_per_group"])
            lo, hi = num(c["output min"]), num(c["output max"])
            H, W = int(vals["input height"]), int(vals["input width"])
            inp = bufs["input"]
            if k == 0:
                lines.append(f"input {cin}x{H}x{W} name=input")
                shape[inp], layer[inp] = (H, W, cin), "input"
            assert shape[inp] == (H, W, cin), (op, shape[inp], H, W, cin)
            OH = (H + top + bottom - (dh * (kh - 1) + 1)) // sh + 1
            OW = (W + left + right - (dw * (kw - 1) + 1)) // sw + 1
            if lo == 0 and hi == 6:
                act = " act=relu6"
            elif lo == 0 and hi == math.inf:
                act = " act=relu"
            elif lo == -math.inf and hi == math.inf:
                act = ""
            elif lo == 0 and 1 <= hi < 1.001:
                act = f" act=clip min=0 max={hi!r}"
            else:
                raise SystemExit(f"{path}: {op}: clamp [{lo}, {hi}]")
            line = (f"conv2d {cout} k={kh}x{kw} s={sh}x{sw} "
                    f"p={top},{left},{bottom},{right}")
            if dh != 1 or dw != 1:
                line += f" d={dh}x{dw}"
            if g != 1:
                line += f" g={g}"
            lines.append(f"{line}{act} in={layer[inp]} name={lname}")
            out, oshape = bufs["output"], (OH, OW, cout)
        elif kind.startswith("global_average_pooling"):
            inp = bufs["input"]
            H, W, C = shape[inp]
            assert int(vals["width"]) == H * W
            lines.append(f"globalavgpool in={layer[inp]} name={lname}")
            out, oshape = bufs["output"], (1, 1, C)
        elif kind.startswith("hardswish"):
            inp = bufs["input"]
            lines.append(f"hardswish in={layer[inp]} name={lname}")
            out, oshape = bufs["output"], shape[inp]
        elif kind.startswith("add_nd") or kind.startswith("multiply_nd"):
            a, b = bufs["a"], bufs["b"]
            op_word = "add" if kind.startswith("add") else "mul"
            c = {cm: v for v, cm in ca}
            lo, hi = num(c.get("output min", "-infinity")), \
                num(c.get("output max", "infinity"))
            if not (lo == -math.inf and hi == math.inf):
                raise SystemExit(f"{path}: {op}: clamp on {kind}")
            lines.append(f"{op_word} in={layer[a]},{layer[b]} name={lname}")
            out = bufs["output"]
            oshape = tuple(max(x, y) for x, y in zip(shape[a], shape[b]))
        else:
            raise SystemExit(f"{path}: {op}: operator {kind} not converted")
        if sizes[out] != math.prod(oshape):
            raise SystemExit(f"{path}: {op}: output {out} holds {sizes[out]} "
                             f"elements, computed {oshape}")
        shape[out], layer[out] = oshape, lname
    print(f"# {name}: XNNPACK's benchmark network, converted from "
          f"{path.rsplit('/', 1)[-1]}")
    print("# by scripts/xnnpack-model-to-edgefit.py")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
