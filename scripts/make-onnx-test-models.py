#!/usr/bin/python3
"""Write the ONNX fixtures of libmemest's importer tests: tests/data/onnx/.

Each good model is built node by node with ONNX's helper API and, beside
it, computed by PyTorch's functional operators on a random batch of two:
tests/data/onnx/NAME/model.onnx with test_data_set_0/input_K.pb and
output_0.pb, the layout of ONNX's own node tests, so that the executor's
tests compare against PyTorch. The bad models under tests/data/onnx/bad/
each break one rule the importer must refuse with a message naming the
node. The files are committed: the tests need no Python.

Usage: scripts/make-onnx-test-models.py [OUT_DIR]   (Debian: python3-onnx,
python3-torch, python3-numpy)
"""
import math
import os
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

torch.manual_seed(7)
RNG = np.random.default_rng(7)
BATCH = 2


class Graph:
    """Nodes for ONNX and, in step, their values computed by PyTorch."""

    def __init__(self, name, opset=13):
        self.name = name
        self.opset = opset
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.feeds = []
        self.env = {}
        self.count = 0
        self.batch = "N"

    def input(self, name, shape, batch="N", values=True):
        dims = [batch] + list(shape)
        self.batch = batch
        self.inputs.append(helper.make_tensor_value_info(
            name, TensorProto.FLOAT, dims))
        n = batch if isinstance(batch, int) else BATCH
        x = torch.randn([n] + list(shape)) if values else None
        self.env[name] = x
        self.feeds.append((name, x))
        return name

    def const(self, name, array, typed=False, dtype=np.float32):
        array = np.asarray(array)
        self.env[name] = torch.tensor(array.astype(np.float64)).float() \
            if array.dtype.kind == "f" else torch.tensor(array)
        arr = array.astype(dtype)
        if typed:
            t = helper.make_tensor(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[
                arr.dtype], arr.shape, arr.flatten().tolist())
        else:
            t = numpy_helper.from_array(arr, name)
        self.inits.append(t)
        return name

    def rand(self, name, shape, scale=0.5):
        return self.const(name, RNG.standard_normal(shape) * scale)

    def node(self, op, inputs, result, name=None, outputs=1, **attrs):
        self.count += 1
        outs = ["%s_out%d" % (name or op.lower(), self.count)]
        outs += ["%s_aux%d_%d" % (op.lower(), self.count, k)
                 for k in range(1, outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name,
                                           **attrs))
        self.env[outs[0]] = result
        return outs[0]

    def v(self, name):
        return self.env[name]

    def model(self, output):
        v = self.env.get(output)
        shape = None
        if v is not None:
            shape = [self.batch] + list(v.shape[1:])
        out = helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)
        g = helper.make_graph(self.nodes, self.name, self.inputs, [out],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid(
            "", self.opset)], producer_name="edgefit-fixtures")
        m.ir_version = 8
        return m

    def save(self, out_dir, output, check=True):
        m = self.model(output)
        if check:
            onnx.checker.check_model(m)
        d = os.path.join(out_dir, self.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(m, os.path.join(d, "model.onnx"))
        for k, (name, x) in enumerate(self.feeds):
            save_pb(x, name, os.path.join(d, "test_data_set_0",
                                          "input_%d.pb" % k))
        save_pb(self.env[output], output,
                os.path.join(d, "test_data_set_0", "output_0.pb"))


def save_pb(t, name, path):
    p = numpy_helper.from_array(t.detach().numpy().astype(np.float32), name)
    with open(path, "wb") as f:
        f.write(p.SerializeToString())


# ---- PyTorch's side of each operator -------------------------------------

def conv(g, x, w, b, strides=(1, 1), pads=(0, 0, 0, 0), group=1,
         auto_pad=None, name=None, kshape=True):
    xv, wv = g.v(x), g.v(w)
    kh, kw = wv.shape[2], wv.shape[3]
    pt, pl, pb, pr = pads
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        h, ww = xv.shape[2], xv.shape[3]
        th = max(0, (math.ceil(h / strides[0]) - 1) * strides[0] + kh - h)
        tw = max(0, (math.ceil(ww / strides[1]) - 1) * strides[1] + kw - ww)
        lower = auto_pad == "SAME_LOWER"
        pt = th - th // 2 if lower else th // 2
        pl = tw - tw // 2 if lower else tw // 2
        pb, pr = th - pt, tw - pl
    elif auto_pad == "VALID":
        pt = pl = pb = pr = 0
    y = F.conv2d(F.pad(xv, (pl, pr, pt, pb)), wv,
                 g.v(b) if b else None, stride=strides, groups=group)
    attrs = {"strides": list(strides), "group": group}
    if kshape:
        attrs["kernel_shape"] = [kh, kw]
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        attrs["pads"] = list(pads)
    return g.node("Conv", [x, w] + ([b] if b else []), y, name=name, **attrs)


def gemm(g, x, w, c, alpha=1.0, beta=1.0, trans_b=0, name=None):
    wv = g.v(w)
    wm = wv.t() if trans_b else wv
    y = alpha * (g.v(x) @ wm)
    if c:
        y = y + beta * g.v(c)
    attrs = {"alpha": alpha, "beta": beta, "transB": trans_b}
    return g.node("Gemm", [x, w] + ([c] if c else []), y, name=name,
                  **attrs)


def batchnorm(g, x, c, eps=1e-5, name=None):
    s = g.const(name + ".scale", RNG.uniform(0.5, 1.5, c))
    b = g.rand(name + ".B", [c])
    m = g.rand(name + ".mean", [c])
    v = g.const(name + ".var", RNG.uniform(0.2, 2.0, c))
    y = F.batch_norm(g.v(x), g.v(m), g.v(v), g.v(s), g.v(b), False, 0.0,
                     eps)
    return g.node("BatchNormalization", [x, s, b, m, v], y, name=name,
                  epsilon=eps)


def relu(g, x, name=None):
    return g.node("Relu", [x], F.relu(g.v(x)), name=name)


def pool(g, op, x, k, s, pads=(0, 0, 0, 0), count_include_pad=None,
         name=None):
    xv = g.v(x)
    pt, pl, pb, pr = pads
    if op == "MaxPool":
        y = F.max_pool2d(F.pad(xv, (pl, pr, pt, pb), value=-math.inf), k, s)
        attrs = {}
    else:
        padded = F.pad(xv, (pl, pr, pt, pb))
        sums = F.avg_pool2d(padded, k, s) * (k[0] * k[1])
        if count_include_pad:
            y = sums / (k[0] * k[1])
        else:
            ones = F.pad(torch.ones_like(xv), (pl, pr, pt, pb))
            y = sums / (F.avg_pool2d(ones, k, s) * (k[0] * k[1]))
        attrs = {"count_include_pad": int(bool(count_include_pad))}
    return g.node(op, [x], y, name=name, kernel_shape=list(k),
                  strides=list(s), pads=list(pads), **attrs)


def gelu_pattern(g, x, half_first=False):
    """PyTorch's exported GELU: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    xv = g.v(x)
    sq = g.const("sqrt2_%d" % g.count, np.array(math.sqrt(2.0)))
    one = g.const("one_%d" % g.count, np.array(1.0))
    half = g.const("half_%d" % g.count, np.array(0.5))
    d = g.node("Div", [x, sq], xv / math.sqrt(2.0))
    e = g.node("Erf", [d], torch.erf(g.v(d)))
    a = g.node("Add", [e, one], g.v(e) + 1.0)
    if half_first:
        h = g.node("Mul", [x, half], xv * 0.5)
        return g.node("Mul", [h, a], g.v(h) * g.v(a))
    m = g.node("Mul", [x, a], xv * g.v(a))
    return g.node("Mul", [m, half], g.v(m) * 0.5)


# ---- The good models -----------------------------------------------------

def m_conv(out):
    g = Graph("conv_pads_strides")
    x = g.input("x", [3, 9, 8])
    w = g.rand("c1.w", [4, 3, 3, 2])
    b = g.rand("c1.b", [4])
    y = conv(g, x, w, b, strides=(2, 1), pads=(1, 0, 2, 1), name="c1")
    w2 = g.rand("c2.w", [4, 1, 3, 3])
    y = conv(g, y, w2, None, group=4, pads=(1, 1, 1, 1), name="dw")
    y = relu(g, y, name="r")
    g.save(out, y)


def m_conv_same(out, mode):
    g = Graph("conv_" + mode.lower())
    x = g.input("x", [2, 7, 8])
    w = g.rand("w", [3, 2, 4, 3])
    y = conv(g, x, w, None, strides=(2, 2), auto_pad=mode, name="c",
             kshape=False)
    w2 = g.rand("w2", [4, 3, 2, 2])
    b2 = g.rand("b2", [4])
    y = conv(g, y, w2, b2, auto_pad="VALID", name="v")
    g.save(out, y)


def m_gemm(out):
    g = Graph("gemm_softmax")
    x = g.input("x", [6])
    w1 = g.rand("fc1.w", [5, 6])
    c1 = g.rand("fc1.c", [5])
    y = gemm(g, x, w1, c1, alpha=0.5, beta=2.0, trans_b=1, name="fc1")
    y = relu(g, y, name="fc1_relu")
    w2 = g.rand("fc2.w", [5, 4])
    c2 = g.rand("fc2.c", [1, 4])
    y = gemm(g, y, w2, c2, name="fc2")
    y = g.node("Softmax", [y], F.softmax(g.v(y), -1), name="sm", axis=-1)
    g.save(out, y)


def m_matmul(out):
    g = Graph("matmul_add", opset=11)
    x = g.input("x", [6])
    w = g.rand("mm1.w", [6, 5])
    b = g.rand("mm1.b", [5])
    y = g.node("MatMul", [x, w], g.v(x) @ g.v(w), name="mm1")
    y = g.node("Add", [y, b], g.v(y) + g.v(b), name="mm1_bias")
    y = g.node("Sigmoid", [y], torch.sigmoid(g.v(y)), name="sig")
    w2 = g.rand("mm2.w", [5, 3])
    y = g.node("MatMul", [y, w2], g.v(y) @ g.v(w2), name="mm2")
    y = g.node("Tanh", [y], torch.tanh(g.v(y)), name="tanh")
    y = g.node("LogSoftmax", [y], F.log_softmax(g.v(y), 1), name="lsm",
               axis=1)
    g.save(out, y)


def m_bn(out):
    g = Graph("bn_fold")
    x = g.input("x", [3, 6, 6])
    w = g.rand("conv.w", [4, 3, 3, 3])
    y = conv(g, x, w, None, pads=(1, 1, 1, 1), name="conv")
    y = batchnorm(g, y, 4, eps=1e-3, name="bn")
    y = relu(g, y, name="relu")
    y = batchnorm(g, y, 4, name="bn2")      # after relu: stays standalone
    lo = g.node("Constant", [], torch.tensor(0.0), name="lo",
                value=numpy_helper.from_array(np.array(0.0, np.float32)))
    hi = g.node("Constant", [], torch.tensor(6.0), name="hi",
                value=numpy_helper.from_array(np.array(6.0, np.float32)))
    y = g.node("Clip", [y, lo, hi], torch.clamp(g.v(y), 0.0, 6.0),
               name="relu6")
    y = g.node("GlobalAveragePool", [y], g.v(y).mean((2, 3), True),
               name="gap")
    y = g.node("Flatten", [y], torch.flatten(g.v(y), 1), name="flat",
               axis=1)
    w2 = g.rand("fc.w", [3, 4])
    b2 = g.rand("fc.b", [3])
    y = gemm(g, y, w2, b2, trans_b=1, name="fc")
    g.save(out, y)


def m_pools(out):
    g = Graph("pools")
    x = g.input("x", [2, 9, 9])
    y = pool(g, "MaxPool", x, (3, 3), (2, 2), (1, 1, 1, 1), name="max")
    y = pool(g, "AveragePool", y, (2, 2), (1, 1), (1, 0, 0, 1),
             count_include_pad=0, name="avg_nopad")
    y = pool(g, "AveragePool", y, (3, 2), (2, 2), (1, 1, 1, 1),
             count_include_pad=1, name="avg_pad")
    shape = g.const("shape", np.array([0, -1]), dtype=np.int64)
    y = g.node("Reshape", [y, shape], g.v(y).reshape(BATCH, -1),
               name="reshape")
    g.save(out, y)


def m_gelu(out):
    g = Graph("gelu")
    x = g.input("x", [6])
    w = g.rand("fc1.w", [8, 6])
    y = gemm(g, x, w, None, trans_b=1, name="fc1")
    y = gelu_pattern(g, y)
    w2 = g.rand("fc2.w", [8, 5])
    y = g.node("MatMul", [y, w2], g.v(y) @ g.v(w2), name="fc2")
    y = gelu_pattern(g, y, half_first=True)
    y = g.node("Erf", [y], torch.erf(g.v(y)), name="erf")
    g.save(out, y)


def m_residual(out):
    g = Graph("residual")
    x = g.input("x", [4, 6, 6])
    w1 = g.rand("c1.w", [4, 4, 3, 3], 0.3)
    y = conv(g, x, w1, None, pads=(1, 1, 1, 1), name="c1")
    y = batchnorm(g, y, 4, name="bn1")
    y = relu(g, y, name="r1")
    w2 = g.rand("c2.w", [4, 4, 3, 3], 0.3)
    y = conv(g, y, w2, None, pads=(1, 1, 1, 1), name="c2")
    y = batchnorm(g, y, 4, name="bn2")
    s = g.node("Add", [y, x], g.v(y) + g.v(x), name="skip")
    s = relu(g, s, name="r2")
    w3 = g.rand("c3.w", [2, 4, 1, 1])
    b3 = g.rand("c3.b", [2])
    a = conv(g, s, w3, b3, name="branch_a")
    a = g.node("Dropout", [a], g.v(a), name="drop")
    bb = g.node("Identity", [s], g.v(s), name="branch_b")
    y = g.node("Concat", [a, bb], torch.cat([g.v(a), g.v(bb)], 1),
               name="cat", axis=1)
    y = g.node("Softmax", [y], F.softmax(g.v(y), 1), name="chan_softmax",
               axis=1)
    g.save(out, y)


def m_typed(out):
    """A fixed batch of 3 and weights in the typed fields, as float16 and
    as double: each converted to float32 on import."""
    g = Graph("typed_fixed_batch", opset=17)
    x = g.input("x", [4], batch=3)
    w = RNG.standard_normal([3, 4]).astype(np.float16)
    wn = g.const("fc.w", w.astype(np.float32), typed=True,
                 dtype=np.float16)
    b = g.const("fc.b", RNG.standard_normal(3), typed=True,
                dtype=np.float64)
    # PyTorch computes with the values the file holds: float16 rounded,
    # double rounded to float32 by the importer
    g.env[b] = torch.tensor(np.float64(
        np.float32(np.asarray(g.inits[-1].double_data)))).float()
    y = gemm(g, x, wn, b, trans_b=1, name="fc")
    y = g.node("Sigmoid", [y], torch.sigmoid(g.v(y)), name="sig")
    g.save(out, y)


# ---- Models exported by PyTorch itself -----------------------------------

class TorchNet(torch.nn.Module):
    """conv-bn-relu, depthwise conv-bn, a residual add with relu6, max
    pooling, global pooling, flatten, Linear-GELU-Linear, log-softmax."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Linear(8, 16)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = F.relu6(self.bn2(self.conv2(y)) + y)
        y = torch.flatten(self.gap(self.pool(y)), 1)
        return F.log_softmax(self.fc2(self.gelu(self.fc1(y))), 1)


class TorchActs(torch.nn.Module):
    """The activations of the mobile networks, each fused after a conv (or
    a Linear, or an add) and each standalone after a max pool: Hardswish
    (x * HardSigmoid(x) at opset 13, HardSwish at 14), SiLU (x *
    Sigmoid(x)), LeakyReLU, ELU, Hardsigmoid, Softplus, clamp and Hardtanh
    (Clip of any range), Sigmoid, Tanh, erf."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.c3 = nn.Conv2d(8, 8, 1)
        self.c4 = nn.Conv2d(8, 8, 3, padding=1)
        self.c5 = nn.Conv2d(8, 8, 1)
        self.c6 = nn.Conv2d(8, 8, 1)
        self.c7 = nn.Conv2d(8, 8, 1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8, 6)
        self.hswish = nn.Hardswish()
        self.silu = nn.SiLU()
        self.leaky = nn.LeakyReLU(0.1)
        self.elu = nn.ELU(0.7)
        self.hsig = nn.Hardsigmoid()
        self.softplus = nn.Softplus()
        self.htanh = nn.Hardtanh(-1.0, 1.0)

    def forward(self, x):
        y = self.hswish(self.c1(x))
        y = self.silu(self.c2(y))
        z = self.leaky(self.c3(y))
        y = self.htanh(z + y)
        y = self.elu(self.c4(y))
        y = self.softplus(self.c5(y))
        y = self.hsig(self.c6(y))
        y = torch.clamp(self.c7(y), -0.25, 0.75)
        y = self.pool(y)
        y = torch.sigmoid(y)
        y = self.hswish(y)
        y = self.silu(y)
        y = self.leaky(y)
        y = self.elu(y)
        y = self.softplus(y)
        y = self.hsig(y)
        y = torch.tanh(y)
        y = torch.erf(y)
        y = torch.clamp(y, 0.1, 0.7)
        y = torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)
        return self.hswish(self.fc(y))


class TorchView(torch.nn.Module):
    """x.view(x.size(0), -1) with a free batch: PyTorch builds the shape
    from Shape, Gather, Unsqueeze and Concat."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)
        self.fc = torch.nn.Linear(2 * 4 * 4, 3)

    def forward(self, x):
        y = torch.sigmoid(self.conv(x))
        return self.fc(y.view(y.size(0), -1))


def export(out, name, net, x, mode=torch.onnx.TrainingMode.EVAL, opset=13):
    with torch.no_grad():
        y = net(x)
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    torch.onnx.export(net, x, os.path.join(d, "model.onnx"),
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      opset_version=opset, training=mode,
                      do_constant_folding=True)
    save_pb(x, "input", os.path.join(d, "test_data_set_0", "input_0.pb"))
    save_pb(y, "output", os.path.join(d, "test_data_set_0", "output_0.pb"))


def m_torch(out):
    """The same network exported twice: in eval mode PyTorch folds the
    batch norms into the convolutions itself; in preserve mode they stay
    BatchNormalization nodes (with Identity nodes on shared constants)."""
    net = TorchNet().eval()
    with torch.no_grad():
        for mod in net.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.5, 0.5)
    x = torch.randn(BATCH, 3, 16, 16)
    export(out, "torch_cnn", net, x)
    export(out, "torch_cnn_bn", net, x, torch.onnx.TrainingMode.PRESERVE)
    export(out, "torch_view", TorchView().eval(), torch.randn(BATCH, 1, 6, 6))


def m_torch_acts(out):
    """TorchActs at opset 13 (Hardswish as x * HardSigmoid(x)) and 14
    (HardSwish), on inputs wide enough to reach every piece of each
    activation."""
    net = TorchActs().eval()
    x = 3.0 * torch.randn(BATCH, 3, 8, 8)
    export(out, "torch_acts", net, x)
    export(out, "torch_acts14", net, x, opset=14)
    # x * Sigmoid(relu(x)): a gate computed from another tensor than the
    # one it multiplies (squeeze-excite's form) is not SiLU
    g = Graph("swish_other_x")
    x = g.input("x", [5])
    r = relu(g, x, name="r")
    sg = g.node("Sigmoid", [r], torch.sigmoid(g.v(r)), name="gate")
    y = g.node("Mul", [x, sg], g.v(x) * g.v(sg), name="scale")
    g.save(out, y)
class TorchPadPool(torch.nn.Module):
    """Pad, ceil-mode pools and dilated convolutions: F.pad of zeros before
    a convolution (folded into its padding), a dilated convolution,
    ceil-mode max pooling whose last window is cut, AvgPool2d with padding
    (PyTorch exports Pad + AveragePool) with ceil_mode and
    count_include_pad both ways (the divisor of a cut window); Pad layers
    (a nonzero value; zeros before a max pool)."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.conv2 = nn.Conv2d(6, 6, 3, padding=2, dilation=2)
        self.conv3 = nn.Conv2d(6, 4, (3, 2), dilation=(1, 3), stride=(2, 1))
        self.max = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.avg_in = nn.AvgPool2d(3, 2, padding=1, ceil_mode=True,
                                   count_include_pad=True)
        self.avg_ex = nn.AvgPool2d(2, 2, padding=1, ceil_mode=True,
                                   count_include_pad=False)

    def forward(self, x):
        y = torch.relu(self.conv1(F.pad(x, (1, 2, 0, 1))))
        y = torch.tanh(self.conv2(y))
        a = self.avg_in(self.max(y))
        b = self.avg_ex(y)
        # a Pad layer: a nonzero value, and zeros before a max pool (where
        # they are values, not padding)
        c = F.max_pool2d(F.pad(y, (1, 0, 2, 1), value=-0.25), 2)
        d = F.max_pool2d(F.pad(y, (0, 1, 0, 1)), 2)
        return torch.cat([torch.flatten(a, 1), torch.flatten(b, 1),
                          torch.flatten(self.conv3(y), 1),
                          torch.flatten(c, 1), torch.flatten(d, 1)], 1)


def bad_pad_models(out):
    """Pads refused by name: reflect mode, a crop, padding channels."""
    for name, mode, pads in (("pad_reflect", "reflect", [0, 0, 1, 1] * 2),
                             ("pad_negative", "constant",
                              [0, 0, -1, 0, 0, 0, 0, 0]),
                             ("pad_channels", "constant",
                              [0, 1, 0, 0, 0, 0, 0, 0])):
        g = Graph(name)
        x = g.input("x", [2, 4, 4])
        p = g.const(name + ".pads", np.array(pads), dtype=np.int64)
        y = g.node("Pad", [x, p], None, name="pad_" + mode, mode=mode)
        bad(out, name, g, y)


def m_torch_pad_pool(out):
    torch.manual_seed(17)
    export(out, "torch_pad_pool", TorchPadPool().eval(),
           torch.randn(BATCH, 3, 13, 12))


# ---- Shape arithmetic, folded at import ----------------------------------

def m_fold(out, batch="N"):
    """Every operator the importer folds, in one computation of the shape
    [N, 24] that flattens a 2x3x4 activation: Shape, Slice (negative
    step), Gather (negative index), Mul/Add/Sub/Div on int64, Cast both
    ways, Unsqueeze/Squeeze, Concat, Range, ConstantOfShape, Equal, Where,
    Expand, Reshape of a constant, Identity; and float constants folded
    into the Gemm after it (Mul, Add, Transpose). A wrong fold changes the
    shape, and the import then fails, or the weights, and the output then
    differs from PyTorch's."""
    name = "fold_shapes" if batch == "N" else "fold_shapes_fixed_batch"
    g = Graph(name)
    x = g.input("x", [2, 3, 4], batch=batch)
    y = relu(g, x, name="act")
    yv = g.v(y)
    n = yv.shape[0]
    t = torch.tensor

    def i64(nm, a):
        return g.const(nm, np.array(a), dtype=np.int64)

    s = g.node("Shape", [y], t(yv.shape), name="shape")
    sl = g.node("Slice", [s, i64("sl.starts", [-1]), i64("sl.ends", [0]),
                          i64("sl.axes", [0]), i64("sl.steps", [-1])],
                t([4, 3, 2]), name="slice")
    a = g.node("Gather", [sl, i64("g.i0", 0)], t(4), name="g0", axis=0)
    b = g.node("Gather", [sl, i64("g.i1", -2)], t(3), name="g1", axis=0)
    c = g.node("Gather", [sl, i64("g.i2", 2)], t(2), name="g2", axis=0)
    k = g.node("Mul", [a, b], t(12), name="mul_ab")
    k = g.node("Mul", [k, c], t(24), name="mul_abc")
    k = g.node("Add", [k, i64("seven", 7)], t(31), name="add7")
    k = g.node("Sub", [k, i64("three", 3)], t(28), name="sub3")
    k = g.node("Mul", [k, i64("six", 6)], t(168), name="mul6")
    k = g.node("Div", [k, i64("seven2", 7)], t(24), name="div7")
    kf = g.node("Cast", [k], t(24.0), name="to_float", to=TensorProto.FLOAT)
    k = g.node("Cast", [kf], t(24), name="to_int", to=TensorProto.INT64)
    ku = g.node("Unsqueeze", [k, i64("ax0", [0])], t([24]), name="unsq_k")
    nb = g.node("Gather", [s, i64("g.i3", 0)], t(n), name="batch")
    nu = g.node("Unsqueeze", [nb, i64("ax0b", [0])], t([n]), name="unsq_n")
    nu = g.node("Unsqueeze", [nu, i64("ax1", [1])], t([[n]]), name="unsq_n2")
    nu = g.node("Squeeze", [nu, i64("ax1b", [1])], t([n]), name="sq_n")
    # Where([1, 0], [N, 99], [77, 24]) = [N, 24]: both branches are read
    wa = g.node("Concat", [nu, i64("c99", [99])], t([n, 99]), name="cat_a",
                axis=0)
    wb = g.node("Concat", [i64("c77", [77]), ku], t([77, 24]), name="cat_b",
                axis=0)
    r = g.node("Range", [i64("r0", 0), i64("r2", 2), i64("r1", 1)],
               t([0, 1]), name="range")
    z = g.node("ConstantOfShape", [i64("two", [2])], t([0, 0]), name="zeros",
               value=helper.make_tensor("value", TensorProto.INT64, [1],
                                        [0]))
    m = g.node("Equal", [r, z], t([True, False]), name="eq")
    sh = g.node("Where", [m, wa, wb], t([n, 24]), name="where")
    ones = g.node("Expand", [i64("one", [1]), i64("two2", [2])], t([1, 1]),
                  name="expand")
    sh = g.node("Mul", [sh, ones], t([n, 24]), name="mul_ones")
    idx = g.node("Reshape", [i64("idx", [[0, 1]]), i64("flat", [-1])],
                 t([0, 1]), name="reshape_const")
    sh = g.node("Gather", [sh, idx], t([n, 24]), name="g_all", axis=0)
    sh = g.node("Identity", [sh], t([n, 24]), name="id")
    f = g.node("Reshape", [y, sh], yv.reshape(n, -1), name="flatten")
    w0 = g.rand("fc.w0", [24, 5])
    w = g.node("Mul", [w0, g.const("two_f", np.array(2.0))],
               g.v(w0) * 2.0, name="w_scale")
    w = g.node("Transpose", [w], g.v(w).t(), name="w_t", perm=[1, 0])
    c1 = g.rand("fc.c1", [5])
    c2 = g.rand("fc.c2", [5])
    bias = g.node("Add", [c1, c2], g.v(c1) + g.v(c2), name="bias_sum")
    out_y = gemm(g, f, w, bias, trans_b=1, name="fc")
    g.save(out, out_y)


def m_fold_forms(out, opset):
    """The forms of the folded operators other opsets use: Slice's starts
    and ends and Unsqueeze/Squeeze's axes as attributes (opset 9), Squeeze
    with no axes (13), Shape's start (15); the shape [N, 24] again."""
    g = Graph("fold_opset%d" % opset, opset=opset)
    x = g.input("x", [2, 3, 4])
    y = relu(g, x, name="act")
    yv = g.v(y)
    n = yv.shape[0]
    t = torch.tensor

    def i64(nm, a):
        return g.const(nm, np.array(a), dtype=np.int64)

    def unsqueeze(v, axis, result, name):
        if opset < 13:
            return g.node("Unsqueeze", [v], result, name=name, axes=[axis])
        return g.node("Unsqueeze", [v, i64(name + ".axes", [axis])], result,
                      name=name)

    full = g.node("Shape", [y], t(yv.shape), name="shape")
    if opset >= 15:
        dims = g.node("Shape", [y], t([2, 3, 4]), name="shape_tail", start=1)
    elif opset >= 10:
        dims = g.node("Slice", [full, i64("starts", [1]),
                                i64("ends", [2**63 - 1])],
                      t([2, 3, 4]), name="tail")
    else:
        dims = g.node("Slice", [full], t([2, 3, 4]), name="tail",
                      starts=[1], ends=[2**63 - 1])
    u = unsqueeze(dims, 0, t([[2, 3, 4]]), "unsq_dims")
    if opset < 13:
        sq = g.node("Squeeze", [u], t([2, 3, 4]), name="sq", axes=[0])
    else:
        sq = g.node("Squeeze", [u], t([2, 3, 4]), name="sq")
    k = None
    for i, v in enumerate([2, 3, 4]):
        gi = g.node("Gather", [sq, i64("i%d" % i, i)], t(v), name="g%d" % i,
                    axis=0)
        k = gi if k is None else g.node("Mul", [k, gi], None,
                                        name="mul%d" % i)
    g.env[k] = t(24)
    ku = unsqueeze(k, 0, t([24]), "unsq_k")
    nb = g.node("Gather", [full, i64("i_n", 0)], t(n), name="batch", axis=0)
    nu = unsqueeze(nb, 0, t([n]), "unsq_n")
    sh = g.node("Concat", [nu, ku], t([n, 24]), name="cat", axis=0)
    f = g.node("Reshape", [y, sh], yv.reshape(n, -1), name="flatten")
    w = g.rand("fc.w", [5, 24])
    b = g.rand("fc.b", [5])
    g.save(out, gemm(g, f, w, b, trans_b=1, name="fc"))


class TorchFlatten(torch.nn.Module):
    """y.reshape(y.shape[0], y.shape[1] * y.shape[2] * y.shape[3]) with a
    free batch: PyTorch computes the shape with Shape, Gather, Mul,
    Unsqueeze and Concat."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.fc = torch.nn.Linear(3 * 5 * 5, 4)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.fc(y.reshape(y.shape[0], y.shape[1] * y.shape[2] *
                                 y.shape[3]))


class TorchShuffle(torch.nn.Module):
    """ShuffleNet's channel shuffle, view(b, g, c // g, h, w), transpose,
    view back: one shuffle layer."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        b, c, h, w = y.shape
        y = y.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous()
        return y.view(b, c, h, w)


def m_torch_fold(out):
    export(out, "torch_flatten_dyn", TorchFlatten().eval(),
           torch.randn(BATCH, 2, 5, 5))
    # the same draws as when this model was a refusal (bad/), so that the
    # fixtures made after it stay as they were
    export(out, "torch_shuffle", TorchShuffle().eval(),
           torch.randn(BATCH, 2, 4, 4))


def bad_fold_models(out):
    """Refusals of folding and of operators read only folded or fused."""
    def i64(g, nm, a):
        return g.const(nm, np.array(a), dtype=np.int64)

    # 2^40 elements asked of ConstantOfShape: refused before allocating
    g = Graph("fold_absurd")
    x = g.input("x", [4])
    z = g.node("ConstantOfShape", [i64(g, "dims", [1 << 20, 1 << 20])],
               None, name="huge")
    y = g.node("Reshape", [x, z], None, name="r")
    bad(out, "fold_absurd_constantofshape", g, y)

    # each 2^21 floats, under the limit of one tensor, but three of them
    # are more than an import may fold in all
    g = Graph("fold_budget")
    x = g.input("x", [4])
    parts = [g.node("ConstantOfShape", [i64(g, "n%d" % k, [1 << 21])], None,
                    name="big%d" % k) for k in range(3)]
    sh = g.node("Concat", parts, None, name="cat", axis=0)
    y = g.node("Reshape", [x, sh], None, name="r")
    bad(out, "fold_budget", g, y)

    # N / 2 is a whole number only for an even batch
    g = Graph("fold_batch_div")
    x = g.input("x", [4])
    s = g.node("Shape", [x], None, name="shape")
    n = g.node("Gather", [s, i64(g, "i0", 0)], None, name="batch", axis=0)
    h = g.node("Div", [n, i64(g, "two", 2)], None, name="half_batch")
    hu = g.node("Unsqueeze", [h, i64(g, "ax", [0])], None, name="u")
    sh = g.node("Concat", [hu, i64(g, "m1", [-1])], None, name="cat", axis=0)
    y = g.node("Reshape", [x, sh], None, name="r")
    bad(out, "fold_batch_div", g, y)

    # an integer data input, refused by name
    g = Graph("int_input")
    g.inputs.append(helper.make_tensor_value_info("tokens", TensorProto.INT64,
                                                  ["N", 4]))
    y = g.node("Relu", ["tokens"], None, name="r")
    bad(out, "int64_input", g, y)

    # integer arithmetic on computed tensors (a Transpose of one is read
    # since sequence models; make-seq-onnx-fixtures.py's transpose_batch
    # is refused)
    g = Graph("int_mul_computed")
    x = g.input("x", [4])
    y = g.node("Mul", [x, i64(g, "k", 3)], None, name="times3")
    bad(out, "int_mul_computed", g, y)

    # operand lists longer than four (a rank-8 list is as long as int_list
    # reads): refused by what they say, read into buffers that hold them
    g = Graph("slice_eight")
    x = g.input("x", [3, 8, 8])
    y = g.node("Slice", [x, i64(g, "st", [0] * 8), i64(g, "en", [1] * 8),
                         i64(g, "ax", [0, 1, 2, 3] * 2)], None, name="s8")
    bad(out, "slice_eight_axes", g, y)
    g = Graph("split_eight")
    x = g.input("x", [8])
    ys = g.node("Split", [x, i64(g, "sz", [1] * 8)], None, name="p8",
                outputs=4, axis=1)
    bad(out, "split_eight_parts", g, ys)

    # an attribute the fold does not read, named
    g = Graph("fold_attr")
    x = g.input("x", [4])
    s = g.node("Shape", [x], None, name="shape")
    n = g.node("Gather", [s, i64(g, "i0", [0])], None, name="gather_bd",
               axis=0, batch_dims=0)
    sh = g.node("Concat", [n, i64(g, "m1", [-1])], None, name="cat", axis=0)
    y = g.node("Reshape", [x, sh], None, name="r")
    bad(out, "fold_unknown_attribute", g, y)


# ---- The bad models ------------------------------------------------------

def bad(out, name, g, output, folder="bad"):
    m = g.model(output)
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    onnx.save(m, os.path.join(out, folder, name + ".onnx"))


def bad_models(out):
    g = Graph("missing")
    x = g.input("x", [3, 5, 5])
    y = g.node("Conv", [x, "conv.weight"], None, name="conv1",
               kernel_shape=[3, 3])
    bad(out, "missing_initializer", g, y)

    g = Graph("mismatch")
    x = g.input("x", [6])
    a = gemm(g, x, g.rand("a.w", [4, 6]), None, trans_b=1, name="fa")
    b = gemm(g, x, g.rand("b.w", [5, 6]), None, trans_b=1, name="fb")
    y = g.node("Add", [a, b], None, name="sum")
    bad(out, "add_shape_mismatch", g, y)

    g = Graph("lstm")
    x = g.input("x", [4, 3])
    W = g.rand("W", [1, 8, 3])
    R = g.rand("R", [1, 8, 2])
    y = g.node("LSTM", [x, W, R], None, name="lstm1", hidden_size=2)
    bad(out, "unsupported_lstm", g, y)

    g = Graph("absurd")
    x = g.input("x", [1 << 40, 1, 1], values=False)
    y = g.node("Relu", [x], None, name="huge_relu")
    bad(out, "absurd_dims", g, y)

    g = Graph("dilated")
    x = g.input("x", [1, 7, 7])
    y = g.node("MaxPool", [x], None, name="dilated_pool",
               kernel_shape=[3, 3], dilations=[2, 2])
    bad(out, "dilations", g, y)

    # any constant range is read; a NaN bound is not a range
    g = Graph("clip_nan")
    x = g.input("x", [4])
    lo = g.const("lo", np.array(np.nan))
    hi = g.const("hi", np.array(1.0))
    y = g.node("Clip", [x, lo, hi], None, name="clamp")
    bad(out, "clip_nan", g, y)

    # (Softmax over the last axis of CxHxW is read since sequence models:
    # scripts/make-seq-onnx-fixtures.py refuses the batch axis instead)

    # a weight whose dims claim 2^40 elements over 36 bytes of data
    g = Graph("absurd_initializer")
    x = g.input("x", [3, 5, 5])
    w = TensorProto()
    w.name = "big.w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([1 << 20, 1 << 20, 3, 3])
    w.raw_data = np.zeros(9, np.float32).tobytes()
    g.inits.append(w)
    y = g.node("Conv", [x, "big.w"], None, name="big_conv")
    bad(out, "absurd_initializer", g, y)

    # dead code is dropped before anything is checked: an LSTM whose
    # output nothing reads does not stop the import
    g = Graph("dead_branch")
    x = g.input("x", [4])
    g.node("LSTM", [x, g.rand("W", [1, 8, 4]), g.rand("R", [1, 8, 2])],
           None, name="unused_lstm", hidden_size=2)
    y = g.node("Relu", [x], None, name="kept_relu")
    bad(out, "dead_branch", g, y, folder="misc")

    with open(os.path.join(out, "residual", "model.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "bad", "truncated.onnx"), "wb") as f:
        f.write(data[:len(data) * 2 // 3])

# ---- Element-wise binary operators ----------------------------------------

class TorchSE(torch.nn.Module):
    """A squeeze-excite block (the gate multiplied in both orders) and
    scalar arithmetic: x * 0.5, x / 6, 1 - x, 2 / x, x + 1."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.fc1 = torch.nn.Conv2d(16, 4, 1)
        self.fc2 = torch.nn.Conv2d(4, 16, 1)
        self.conv2 = torch.nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        s = torch.nn.functional.adaptive_avg_pool2d(y, 1)
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(s))))
        a = y * s
        b = s * y
        y = a - b * 0.5
        y = y / 6 + 1
        y = 1 - y
        y = 2 / (y * y + 1)
        return self.conv2(y)


def m_binary(out):
    """Add, Sub, Mul, Div with broadcasting and constants: PyTorch's
    squeeze-excite block, and a graph of the forms PyTorch does not
    export (the gate first in a Sub, a constant tensor of one value)."""
    torch.manual_seed(17)
    export(out, "torch_se", TorchSE().eval(), torch.randn(BATCH, 3, 8, 8))

    g = Graph("binary_broadcast")
    x = g.input("x", [4, 5, 5])
    gv = g.v(x).mean(dim=(2, 3), keepdim=True)
    s = g.node("GlobalAveragePool", [x], gv, name="gap")
    a = g.node("Sub", [s, x], gv - g.v(x), name="gate_minus_x")
    q = g.const("quarter", np.full([1, 4, 1, 1], 4.0))
    b = g.node("Div", [a, q], g.v(a) / 4.0, name="div_const")
    two = g.const("two", np.array(2.0))
    c = g.node("Sub", [two, b], 2.0 - g.v(b), name="two_minus")
    d = g.node("Add", [c, s], g.v(c) + gv, name="plus_gate")
    sq = g.node("Mul", [x, x], g.v(x) * g.v(x), name="square")
    one = g.const("one", np.array([1.0]))
    den = g.node("Add", [sq, one], g.v(sq) + 1.0, name="plus_one")
    y = g.node("Div", [d, den], g.v(d) / g.v(den), name="ratio")
    g.save(out, y)


def bad_binary_models(out):
    """Refusals of the element-wise binary operators."""
    g = Graph("binary_const_tensor")
    x = g.input("x", [3, 4, 4])
    k = g.const("k", np.array([1.0, 2.0, 3.0]).reshape(3, 1, 1))
    y = g.node("Mul", [x, k], None, name="per_channel")
    bad(out, "binary_const_tensor", g, y)

    g = Graph("binary_no_broadcast")
    x = g.input("x", [3, 4, 4])
    a = g.node("GlobalAveragePool", [x], None, name="gap")
    r = g.node("Relu", [x], None, name="r")
    t = g.node("MaxPool", [r], None, name="mp", kernel_shape=[2, 2],
               strides=[2, 2])
    y = g.node("Div", [x, t], None, name="ratio")
    bad(out, "binary_no_broadcast", g, y)

    g = Graph("binary_legacy", opset=6)
    x = g.input("x", [3, 4, 4])
    y = g.node("Mul", [x, x], None, name="legacy", broadcast=1)
    bad(out, "binary_legacy_broadcast", g, y)


# ---- Data movement and reductions ------------------------------------------

class TorchSplit(torch.nn.Module):
    """ShuffleNetV2's unit: chunk(2, dim=1), a branch on the second half,
    cat, channel shuffle; then split([3, 5], dim=1) joined the other way
    round."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 1)
        self.branch = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        a, b = y.chunk(2, dim=1)
        y = torch.cat([a, torch.relu(self.branch(b))], 1)
        n, c, h, w = y.shape
        y = y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        p, q = y.split([3, 5], dim=1)
        return torch.cat([q, p], 1)


class TorchSliceW(torch.nn.Module):
    """The TCN's causal chomp x[:, :, :, :-2] on W, a crop of H, a slice
    of features, and narrow() on the channels."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, (1, 3), padding=(0, 2))
        self.fc = torch.nn.Linear(3 * 3 * 6, 5)

    def forward(self, x):
        y = torch.relu(self.conv(x))[:, :, :, :-2]
        y = y[:, :, 1:4, :].narrow(1, 1, 3)
        return self.fc(torch.flatten(y, 1))[:, 1:4]


class TorchReduce(torch.nn.Module):
    """Means and maxima over H and W: mean with and without keepdim,
    amax, the last dims given as negative axes."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3)
        self.proj = torch.nn.Conv2d(6, 4, 1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        a = y.mean((2, 3))
        b = torch.flatten(self.proj(y.mean((-2, -1), keepdim=True)), 1)
        c = y.amax((2, 3))
        return torch.cat([a, b, c], 1)


class TorchReshape5d(torch.nn.Module):
    """A 5-D view that is not a channel shuffle (the transpose swaps H and
    W): refused at the 5-D reshape."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        b, c, h, w = y.shape
        y = y.view(b, 2, c // 2, h, w).transpose(3, 4).contiguous()
        return y.view(b, c, h, w)


class TorchMeanC(torch.nn.Module):
    """A mean over the channels: refused naming the axes."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 1)

    def forward(self, x):
        return self.conv(x).mean(1)


class TorchReshape(torch.nn.Module):
    """Views that keep each sample's element order: view(n, 2, 8, 4) of
    a 4x4x4 activation, a convolution on it, the Linear's output
    unsqueezed to Nx5x1x1 for a 1x1 convolution, squeezed back."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.conv2 = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.fc = torch.nn.Linear(3 * 8 * 4, 5)
        self.proj = torch.nn.Conv2d(5, 4, 1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        y = torch.relu(self.conv2(y.view(y.size(0), 2, 8, 4)))
        z = self.fc(torch.flatten(y, 1))[:, :, None, None]
        return self.proj(z).squeeze(3).squeeze(2)


def m_move(out):
    export(out, "torch_split", TorchSplit().eval(), torch.randn(BATCH, 3, 5, 4))
    export(out, "torch_slice_w", TorchSliceW().eval(),
           torch.randn(BATCH, 2, 5, 6))
    export(out, "torch_reduce", TorchReduce().eval(),
           torch.randn(BATCH, 3, 7, 6))
    export(out, "torch_reshape", TorchReshape().eval(),
           torch.randn(BATCH, 1, 6, 6))
    d = os.path.join(out, "bad")
    os.makedirs(d, exist_ok=True)
    for name, net in (("torch_reshape_5d", TorchReshape5d()),
                      ("torch_mean_channels", TorchMeanC())):
        torch.onnx.export(net.eval(), torch.randn(BATCH, 2, 4, 4),
                          os.path.join(d, name + ".onnx"),
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"},
                                        "output": {0: "batch"}},
                          opset_version=13)


class TorchCatHW(torch.nn.Module):
    """torch.cat along the rows (dim=2) and the columns (dim=3) of
    NxCxHxW activations, then YOLO's heads: two maps viewed as N x 3 x
    (H*W) and joined along their last dimension (dim=-1)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.b = torch.nn.Conv2d(2, 3, (3, 1))
        self.c = torch.nn.Conv2d(3, 3, (1, 3))

    def forward(self, x):
        h = torch.cat([torch.relu(self.a(x)), self.b(x)], dim=2)
        w = torch.cat([h, self.c(h)], dim=3)
        p = torch.nn.functional.max_pool2d(w, 2)
        n = w.size(0)
        return torch.cat([w.view(n, 3, -1), p.view(n, 3, -1)], dim=-1)


def m_concat(out):
    torch.manual_seed(23)
    export(out, "torch_cat_hw", TorchCatHW().eval(),
           torch.randn(BATCH, 2, 4, 5))


class TorchConv1d(torch.nn.Module):
    """1-D signals: a Conv1d with stride, padding, dilation and groups, a
    MaxPool1d, a Conv1d whose causal chomp slices the time axis, an
    AvgPool1d with padding (count_include_pad, PyTorch's default)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(4, 6, 3, stride=2, padding=2,
                                     dilation=2, groups=2)
        self.pool1 = torch.nn.MaxPool1d(2)
        self.conv2 = torch.nn.Conv1d(6, 8, 3, padding=2)
        self.pool2 = torch.nn.AvgPool1d(3, stride=1, padding=1)

    def forward(self, x):
        y = self.pool1(torch.relu(self.conv1(x)))
        y = self.conv2(y)[:, :, :-2]
        return self.pool2(y)


class TorchConv1dT(torch.nn.Module):
    """A 1-D signal transposed to N x L x C: refused (a signal is held
    as N x C x 1 x L, which only some operators understand)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(2, 4, 3)

    def forward(self, x):
        return self.conv(x).transpose(1, 2)


def m_conv1d(out):
    export(out, "torch_conv1d", TorchConv1d().eval(),
           torch.randn(BATCH, 4, 20))
    d = os.path.join(out, "bad")
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(TorchConv1dT().eval(), torch.randn(BATCH, 2, 8),
                      os.path.join(d, "torch_conv1d_transpose.onnx"),
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      opset_version=13)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "tests", "data", "onnx")
    os.makedirs(out, exist_ok=True)
    m_conv(out)
    for mode in ("SAME_UPPER", "SAME_LOWER"):
        m_conv_same(out, mode)
    m_gemm(out)
    m_matmul(out)
    m_bn(out)
    m_pools(out)
    m_gelu(out)
    m_residual(out)
    m_typed(out)
    m_torch(out)
    bad_models(out)
    # after the others, so that their random weights stay as they were
    m_fold(out)
    m_fold(out, batch=3)
    m_torch_fold(out)
    bad_fold_models(out)
    for opset in (9, 13, 15):
        m_fold_forms(out, opset)
    m_torch_acts(out)
    m_binary(out)
    bad_binary_models(out)
    m_torch_pad_pool(out)
    bad_pad_models(out)
    m_move(out)
    m_concat(out)
    m_conv1d(out)


if __name__ == "__main__":
    main()
