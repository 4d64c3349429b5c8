#!/usr/bin/env python3
"""Write an ncnn network definition (.param) as an edgefit text model.

    python3 scripts/ncnn-param-to-edgefit.py NAME W H FILE.param > data/models/NAME.txt

The networks ncnn's benchncnn times (benchmark/models/*.param in the ncnn
repository) are the networks behind the published ncnn latencies in
data/published/; converting their definitions, rather than rewriting the
networks from papers, keeps every kernel, stride, padding and group exactly
as benchmarked. W and H are the input benchncnn feeds (benchncnn.cpp:
squeezenet 227x227, blazeface 128x128, the classifiers 224x224).

The converter computes every blob's shape itself and checks it against the
shape ncnn's optimiser wrote into the file (-23330=...), so a layer whose
meaning was misread stops the conversion instead of writing a wrong model.
A layer type edgefit's format cannot express (LRN, DetectionOutput,
PriorBox, ...) stops it too, naming the layer.

ncnn's parameter ids (src/layer/*.cpp load_param): Convolution 0 outputs,
1/11 kernel w/h, 2/12 dilation, 3/13 stride, 4/14/15/16 pad left/top/
right/bottom, 5 bias, 6 weight count, 7 groups (ConvolutionDepthWise),
9 activation (0 none, 1 relu, 2 leakyrelu, 3 clip, 4 sigmoid, 5 mish,
6 hardswish) with its parameters in array id 10 (-23310); Pooling 0 type
(0 max, 1 avg), 1/11 kernel, 2/12 stride, 3/13/14/15 pad left/top/right/
bottom, 4 global, 5 pad mode (0 full = ceil, 1 valid, 2 same upper, 3 same
lower), 6 average counts padding; InnerProduct 0 outputs, 1 bias, 2
weight count, 9 activation; Padding 0/1/2/3 top/bottom/left/right, 4 type,
5 value, 7/8 channels before/after; Eltwise 0 op (0 prod, 1 sum, 2 max);
BinaryOp 0 op (0 add, 1 sub, 2 mul, 3 div), 1 with scalar, 2 scalar;
ShuffleChannel 0 groups; Slice array id 0 (-23300) the sizes, -233 the
rest, 1 axis; HardSigmoid/HardSwish 0 alpha (0.2), 1 beta (0.5).
"""
import math
import re
import sys


class Unsupported(Exception):
    pass


def parse(path):
    lines = open(path).read().split("\n")
    if lines[0].strip() != "7767517":
        raise SystemExit(f"{path}:1: not an ncnn param file (magic 7767517)")
    layers = []
    for lineno, line in enumerate(lines[2:], start=3):
        if not line.strip():
            continue
        tok = line.split()
        ltype, name, nin, nout = tok[0], tok[1], int(tok[2]), int(tok[3])
        ins = tok[4:4 + nin]
        outs = tok[4 + nin:4 + nin + nout]
        params = {}
        for kv in tok[4 + nin + nout:]:
            k, v = kv.split("=", 1)
            k = int(k)
            if k <= -23300:
                vals = v.split(",")
                params[-(k + 23300)] = ("array", [float(x) for x in vals[1:]])
            else:
                params[k] = float(v) if ("." in v or "e" in v) else int(v)
        layers.append(dict(type=ltype, name=name, ins=ins, outs=outs,
                           p=params, line=lineno))
    return layers


def ident(s):
    return "L" + re.sub(r"[^A-Za-z0-9_]", "_", s) if s[0].isdigit() else \
        re.sub(r"[^A-Za-z0-9_]", "_", s)


def fmt(x):
    return ("%.9g" % x)


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__.strip().split("\n\n")[1])
    mname, w, h, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        sys.argv[4]
    layers = parse(path)
    consumers = {}
    for L in layers:
        for b in L["ins"]:
            consumers.setdefault(b, []).append(L)
    blob = {}    # ncnn blob -> (edgefit layer name, shape tuple)
    out = []
    used = set()

    def uniq(n):
        n = ident(n)
        base, k = n, 1
        while n in used:
            k += 1
            n = f"{base}_{k}"
        used.add(n)
        return n

    def where(L):
        return f"{path}:{L['line']}: {L['type']} {L['name']}"

    def check(L, shapes):
        hint = L["p"].get(30)    # -23330: dims,w,h,c per output
        if not hint:
            return
        v = [int(x) for x in hint[1]]
        for i, s in enumerate(shapes):
            d, ww, hh, cc = v[4 * i:4 * i + 4]
            want = (ww,) if d == 1 else (cc, hh, ww)
            got = s if d != 1 else (math.prod(s),)
            if tuple(got) != want:
                raise SystemExit(f"{where(L)}: shape {s} computed, "
                                 f"{want} in the file")

    def act_opts(L):
        a = L["p"].get(9, 0)
        ap = L["p"].get(10, ("array", []))[1]
        if a == 0:
            return ""
        if a == 1:
            return " act=relu"
        if a == 3 and ap == [0.0, 6.0]:
            return " act=relu6"
        if a == 4:
            return " act=sigmoid"
        raise Unsupported(f"{where(L)}: activation {a} {ap}")

    def feeds_binary(b, depth=0):
        for C in consumers.get(b, []):
            if C["type"] in ("BinaryOp", "Eltwise"):
                return True
            if C["type"] in ("InnerProduct", "HardSigmoid", "Sigmoid",
                             "ReLU", "HardSwish", "Swish", "Split") \
                    and depth < 8:
                if any(feeds_binary(o, depth + 1) for o in C["outs"]):
                    return True
        return False

    out.append(f"name {mname}")
    for L in layers:
        t, p = L["type"], L["p"]
        ins = [blob[b] for b in L["ins"]]
        nm = uniq(L["name"])
        src = ",".join(i[0] for i in ins)
        if t == "Input":
            c = p.get(2, 3)
            out.append(f"input {c}x{h}x{w} name={nm}")
            shp = (c, h, w)
            blob[L["outs"][0]] = (nm, shp)
            continue
        if t == "Split":
            for o in L["outs"]:
                blob[o] = ins[0]
            continue
        s = ins[0][1] if ins else None
        if t in ("Convolution", "ConvolutionDepthWise"):
            C, H, W = s
            oc = p[0]
            kw = p.get(1, 0); kh = p.get(11, kw)
            dw = p.get(2, 1); dh = p.get(12, dw)
            sw = p.get(3, 1); sh = p.get(13, sw)
            pl = p.get(4, 0); pt = p.get(14, pl); pr = p.get(15, pl)
            pb = p.get(16, pt)
            if pl < 0:
                raise Unsupported(f"{where(L)}: SAME padding {pl}")
            g = p.get(7, 1) if t == "ConvolutionDepthWise" else 1
            bias = p.get(5, 0)
            wcount = p.get(6, 0)
            if wcount != oc * (C // g) * kh * kw:
                raise SystemExit(f"{where(L)}: weight count {wcount} is not "
                                 f"{oc}x{C // g}x{kh}x{kw}")
            OH = (H + pt + pb - (dh * (kh - 1) + 1)) // sh + 1
            OW = (W + pl + pr - (dw * (kw - 1) + 1)) // sw + 1
            line = f"conv2d {oc} k={kh}x{kw} s={sh}x{sw} " \
                   f"p={pt},{pl},{pb},{pr}"
            if dh != 1 or dw != 1:
                line += f" d={dh}x{dw}"
            if g != 1:
                line += f" g={g}"
            if not bias:
                line += " bias=no"
            line += act_opts(L)
            shp = (oc, OH, OW)
        elif t == "InnerProduct":
            n = p[0]
            if p.get(1, 0) == 0:
                raise Unsupported(f"{where(L)}: InnerProduct without bias")
            if len(s) == 3 and s[1:] == (1, 1) and feeds_binary(L["outs"][0]):
                # a squeeze-and-excitation product on a pooled C x 1 x 1:
                # a 1x1 convolution has the same weights and MACs and keeps
                # the C x 1 x 1 shape the channel-wise product broadcasts
                line = f"conv2d {n} k=1{act_opts(L)}"
                shp = (n, 1, 1)
            else:
                if len(s) == 3:
                    fn = uniq(L["name"] + "_flatten")
                    out.append(f"flatten in={src} name={fn}")
                    src = fn
                line = f"dense {n}{act_opts(L)}"
                shp = (n,)
        elif t == "Pooling":
            C, H, W = s
            typ = p.get(0, 0)
            if p.get(4, 0):
                if typ == 1:
                    line = "globalavgpool"
                else:
                    line = f"maxpool k={H}x{W}"
                shp = (C, 1, 1)
            else:
                kw = p.get(1, 0); kh = p.get(11, kw)
                sw = p.get(2, 1); sh = p.get(12, sw)
                pl = p.get(3, 0); pt = p.get(13, pl); pr = p.get(14, pl)
                pb = p.get(15, pt)
                mode = p.get(5, 0)
                if mode == 0:
                    OH = -(-(H + pt + pb - kh) // sh) + 1
                    OW = -(-(W + pl + pr - kw) // sw) + 1
                    ceil = True
                elif mode == 1:
                    OH = (H + pt + pb - kh) // sh + 1
                    OW = (W + pl + pr - kw) // sw + 1
                    ceil = False
                else:
                    raise Unsupported(f"{where(L)}: pad mode {mode}")
                kind = "avgpool" if typ == 1 else "maxpool"
                line = f"{kind} k={kh}x{kw} s={sh}x{sw} p={pt},{pl},{pb},{pr}"
                if ceil:
                    line += " ceil=yes"
                if typ == 1:
                    line += " count_pad=" + \
                        ("yes" if p.get(6, 0) else "no")
                shp = (C, OH, OW)
        elif t == "ReLU":
            a = p.get(0, 0.0)
            line = f"leakyrelu alpha={fmt(a)}" if a else "relu"
            shp = s
        elif t == "Swish":
            line, shp = "silu", s
        elif t == "Sigmoid":
            line, shp = "sigmoid", s
        elif t == "HardSigmoid":
            line = f"hardsigmoid alpha={fmt(p.get(0, 0.2))} " \
                   f"beta={fmt(p.get(1, 0.5))}"
            shp = s
        elif t == "HardSwish":
            # x * hardsigmoid(x) with ncnn's alpha and beta (0.2, 0.5 by
            # default; edgefit's hardswish is PyTorch's 1/6, 0.5)
            a, b = p.get(0, 0.2), p.get(1, 0.5)
            if abs(a - 1 / 6) < 1e-6 and b == 0.5:
                line = "hardswish"
            else:
                hs = uniq(L["name"] + "_gate")
                out.append(f"hardsigmoid alpha={fmt(a)} beta={fmt(b)} "
                           f"in={src} name={hs}")
                src = f"{src},{hs}"
                line = "mul"
            shp = s
        elif t == "Softmax":
            line = "softmax axis=0" if len(s) == 3 else "softmax"
            shp = s
        elif t == "Reshape":
            if p.get(0) == -1 and len(p) == 1 or \
                    (p.get(0) == -1 and 30 in p and len(p) == 2):
                line = "flatten" if len(s) == 3 else "identity"
                shp = (math.prod(s),)
            else:
                raise Unsupported(f"{where(L)}: reshape {p}")
        elif t == "Eltwise":
            if p.get(0, 0) != 1 or 1 in p:
                raise Unsupported(f"{where(L)}: eltwise op {p.get(0, 0)}")
            line, shp = "add", s
        elif t == "BinaryOp":
            op = ["add", "sub", "mul", "div"][p.get(0, 0)] \
                if p.get(0, 0) < 4 else None
            if op is None:
                raise Unsupported(f"{where(L)}: binary op {p.get(0)}")
            if p.get(1, 0):
                line = f"{op} scalar={fmt(p.get(2, 0.0))}"
                shp = s
            else:
                a, b = ins[0][1], ins[1][1]
                if len(b) == 1 and len(a) == 3:
                    raise Unsupported(f"{where(L)}: 1-D {b} with {a}")
                shp = tuple(max(x, y) for x, y in zip(a, b))
                line = op
        elif t == "Concat":
            if p.get(0, 0) != 0:
                raise Unsupported(f"{where(L)}: concat axis {p.get(0)}")
            line = "concat"
            shp = (sum(i[1][0] for i in ins),) + s[1:]
        elif t == "ShuffleChannel":
            if p.get(1, 0):
                raise Unsupported(f"{where(L)}: reverse shuffle")
            line, shp = f"shuffle g={p.get(0, 1)}", s
        elif t == "Slice":
            if p.get(1, 0) != 0:
                raise Unsupported(f"{where(L)}: slice axis {p.get(1)}")
            sizes = [int(x) for x in p[0][1]]
            begin = 0
            shapes = []
            for k, o in enumerate(L["outs"]):
                n = sizes[k] if sizes[k] != -233 else s[0] - begin
                sn = uniq(f"{L['name']}_{k}")
                out.append(f"slice axis=c begin={begin} end={begin + n} "
                           f"in={src} name={sn}")
                blob[o] = (sn, (n,) + s[1:])
                shapes.append((n,) + s[1:])
                begin += n
            check(L, shapes)
            continue
        elif t == "Padding":
            top, bot, left, right = (p.get(i, 0) for i in range(4))
            if p.get(4, 0) != 0 or p.get(5, 0.0) != 0.0 or p.get(7, 0):
                raise Unsupported(f"{where(L)}: padding {p}")
            C, H, W = s
            cur = src
            if top or bot or left or right:
                pn = uniq(L["name"] + ("_hw" if p.get(8, 0) else ""))
                out.append(f"pad p={top},{left},{bot},{right} value=0 "
                           f"in={cur} name={pn}")
                cur = pn
                H, W = H + top + bot, W + left + right
            extra = p.get(8, 0)
            if extra:
                # zero channels after the input's (BlazeFace's channel
                # padding before a residual sum): the format pads only H
                # and W, so the zeros are the input's first channels times
                # 0, joined after it; no MACs either way
                parts = [cur]
                left_c = extra
                k = 0
                while left_c:
                    n = min(left_c, C)
                    sl = uniq(f"{L['name']}_zsl{k}")
                    z = uniq(f"{L['name']}_zero{k}")
                    out.append(f"slice axis=c begin=0 end={n} in={cur} "
                               f"name={sl}")
                    out.append(f"mul scalar=0 in={sl} name={z}")
                    parts.append(z)
                    left_c -= n
                    k += 1
                cn = uniq(L["name"])
                out.append(f"concat in={','.join(parts)} name={cn}")
                cur = cn
            blob[L["outs"][0]] = (cur, (C + extra, H, W))
            check(L, [(C + extra, H, W)])
            continue
        else:
            raise Unsupported(f"{where(L)}: layer type {t}")
        check(L, [shp])
        out.append(f"{line} in={src} name={nm}")
        blob[L["outs"][0]] = (nm, shp)
    print(f"# {mname}: ncnn benchmark network, converted from "
          f"benchmark/models/{path.split('/')[-1]}")
    print(f"# by scripts/ncnn-param-to-edgefit.py (input {w}x{h} as "
          f"benchncnn feeds it)")
    print("\n".join(out))


if __name__ == "__main__":
    try:
        main()
    except Unsupported as e:
        sys.stderr.write(f"not expressible: {e}\n")
        sys.exit(3)
