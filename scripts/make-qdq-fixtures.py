#!/usr/bin/env python3
"""Write the quantised ONNX fixtures of tests/data/onnx/qdq and the bad ones
of tests/data/onnx/bad (qdq_*.onnx).

Each fixture is a small CNN made by another tool than edgefit: PyTorch
holds the float network, a min-max calibration on 64 random inputs gives
each tensor's range, and QuantizeLinear/DequantizeLinear nodes are placed by
hand where ONNX Runtime's quantize_static places them (QDQ format: int8
weights per output channel with a DequantizeLinear, int32 biases with scale
x_scale * w_scale, a QuantizeLinear -> DequantizeLinear pair after the
input and after every computed tensor, the Relu after a Conv removed as
ONNX Runtime removes it, MaxPool and Flatten sharing their input's params),
or QLinearConv/QLinearMatMul/QLinearAdd (QOperator format). Beside each
model.onnx:
  test_data_set_0/input_0.pb   a batch of 32 random inputs (invres: 4)
  test_data_set_0/output_0.pb  ONNX Runtime's output on it (1.30, through
                               scripts/ort-run.js and onnxruntime-node)
  expect.txt                   what the importer must record, from the
                               values written here: per tensor (by the
                               layer that makes it) scale, zero point as
                               stored, 1 for uint8; per-channel weight
                               scales; the dequantised weights and biases
                               in PyTorch's layout, float32 as %.9g

usage: /usr/bin/python3 scripts/make-qdq-fixtures.py [REPO]
ONNX Runtime is needed only here (see scripts/ort-run.js); its outputs are
committed.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..'))
QDQ = os.path.join(ROOT, 'tests', 'data', 'onnx', 'qdq')
BAD = os.path.join(ROOT, 'tests', 'data', 'onnx', 'bad')
F32 = np.float32


def act_params(lo, hi, unsigned):
    """ONNX Runtime's asymmetric min-max params: the range widened to hold
    0, scale = (max - min) / 255, zero point = round(qmin - min / scale)."""
    lo = min(float(lo), 0.0)
    hi = max(float(hi), 0.0)
    qmin, qmax = (0, 255) if unsigned else (-128, 127)
    scale = F32((hi - lo) / (qmax - qmin))
    if scale == 0:
        scale = F32(1.0)
    zp = int(np.clip(np.round(qmin - lo / float(scale)), qmin, qmax))
    return scale, zp


def weight_q(w, axis, per_channel=True):
    """Symmetric int8: scale = max|w| / 127 per output channel (or per
    tensor), q = round(w / scale) in [-127, 127]."""
    w = np.asarray(w, dtype=F32)
    if per_channel:
        red = tuple(d for d in range(w.ndim) if d != axis)
        amax = np.abs(w).max(axis=red)
    else:
        amax = np.array([np.abs(w).max()])
    scale = (np.maximum(amax, F32(1e-8)) / F32(127)).astype(F32)
    shape = [1] * w.ndim
    if per_channel:
        shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    deq = (q.astype(np.int32).astype(F32) * scale.reshape(shape)).astype(F32)
    return q, scale, deq


class Graph:
    def __init__(self, name, unsigned):
        self.name = name
        self.unsigned = unsigned
        self.nodes = []
        self.inits = []
        self.expect = []
        self.qt = TensorProto.UINT8 if unsigned else TensorProto.INT8
        self.n = 0

    def init(self, name, arr, dtype=None):
        t = numpy_helper.from_array(np.asarray(arr), name)
        if dtype is not None:
            t.data_type = dtype
        self.inits.append(t)
        return name

    def params(self, key, scale, zp, unsigned=None):
        u = self.unsigned if unsigned is None else unsigned
        s = self.init(key + '_scale', F32(scale))
        z = self.init(key + '_zp', np.array(zp, dtype=np.uint8 if u
                                            else np.int8))
        return s, z

    def qdq(self, x, key, scale, zp, layer):
        """x -> QuantizeLinear -> DequantizeLinear; layer is the imported
        layer whose tensor carries the params (None: the model input)."""
        s, z = self.params(key, scale, zp)
        self.nodes.append(helper.make_node('QuantizeLinear', [x, s, z],
                                           [key + '_q'], name=key + '_Q'))
        self.nodes.append(helper.make_node('DequantizeLinear',
                                           [key + '_q', s, z],
                                           [key + '_dq'], name=key + '_DQ'))
        self.expect.append('%s %s %.9g %d %d' % (
            'input' if layer is None else 'tensor',
            'x' if layer is None else layer, scale, zp, int(self.unsigned)))
        return key + '_dq'

    def weight(self, key, w, axis, per_channel=True):
        q, scale, deq = weight_q(w, axis, per_channel)
        qn = self.init(key + '_w_q', q)
        sn = self.init(key + '_w_scale', scale if per_channel else scale[0])
        zn = self.init(key + '_w_zp', np.zeros(scale.shape if per_channel
                                               else (), np.int8))
        attrs = {'axis': axis} if per_channel else {}
        self.nodes.append(helper.make_node('DequantizeLinear', [qn, sn, zn],
                                           [key + '_w'], name=key + '_wDQ',
                                           **attrs))
        return key + '_w', scale, deq

    def bias(self, key, b, x_scale, w_scale):
        bs = (F32(x_scale) * w_scale).astype(F32)
        q = np.rint(np.asarray(b, F32) / bs).astype(np.int32)
        self.init(key + '_b_q', q)
        self.init(key + '_b_scale', bs)
        self.init(key + '_b_zp', np.zeros(bs.shape, np.int32))
        self.nodes.append(helper.make_node(
            'DequantizeLinear', [key + '_b_q', key + '_b_scale',
                                 key + '_b_zp'], [key + '_b'],
            name=key + '_bDQ', axis=0))
        return key + '_b', (q.astype(F32) * bs).astype(F32)

    def expect_weights(self, layer, scales, wdeq, bdeq):
        if scales is not None:
            self.expect.append('wscales %s %d %s' % (
                layer, len(scales), ' '.join('%.9g' % v for v in scales)))
        flat = np.asarray(wdeq, F32).ravel()
        self.expect.append('weight %s %d %s' % (
            layer, flat.size, ' '.join('%.9g' % v for v in flat)))
        if bdeq is not None:
            self.expect.append('bias %s %d %s' % (
                layer, len(bdeq), ' '.join('%.9g' % v for v in bdeq)))

    def model(self, in_shape, out_name, out_dims, extra_opsets=(),
              opset=13):
        x = helper.make_tensor_value_info('x', TensorProto.FLOAT,
                                          ['N'] + list(in_shape))
        y = helper.make_tensor_value_info(out_name, TensorProto.FLOAT,
                                          ['N'] + list(out_dims))
        g = helper.make_graph(self.nodes, self.name, [x], [y], self.inits)
        ops = [helper.make_opsetid('', opset)] + list(extra_opsets)
        m = helper.make_model(g, opset_imports=ops,
                              producer_name='make-qdq-fixtures')
        m.ir_version = 7
        return m


def calib(fn, shape, seed):
    """Min-max ranges of every named tensor fn returns, over 64 inputs."""
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn((64,) + tuple(shape), generator=g)
    with torch.no_grad():
        t = fn(xs)
    t['x'] = xs
    return {k: (v.min().item(), v.max().item()) for k, v in t.items()}


def net_cnn():
    """conv-relu-pool-conv-add-relu-gemm, int8 activations; the first Relu
    removed as ONNX Runtime removes it, the second between two pairs."""
    torch.manual_seed(1)
    c1 = torch.nn.Conv2d(1, 4, 3, padding=1)
    c2 = torch.nn.Conv2d(4, 4, 3, padding=1)
    fc = torch.nn.Linear(4 * 6 * 6, 5)
    F = torch.nn.functional

    def fwd(x):
        a = F.relu(c1(x))
        p = F.max_pool2d(a, 2)
        b = c2(p)
        s = b + p
        r = F.relu(s)
        return {'a': a, 'b': b, 's': s, 'r': r,
                'y': fc(r.flatten(1))}

    R = calib(fwd, (1, 12, 12), 11)
    G = Graph('qdq_cnn', False)
    P = {k: act_params(*R[k], False) for k in R}
    x = G.qdq('x', 'in', *P['x'], None)
    w, ws, wd = G.weight('conv1', c1.weight.detach().numpy(), 0)
    b, bd = G.bias('conv1', c1.bias.detach().numpy(), P['x'][0], ws)
    G.expect_weights('conv1', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [x, w, b], ['a'], name='conv1',
                                    pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
    # the Relu removed (ONNX Runtime's QDQRemovableActivation): the
    # conv's output params are the relu's range
    a = G.qdq('a', 'a', *P['a'], 'conv1')
    G.nodes.append(helper.make_node('MaxPool', [a], ['p'], name='pool',
                                    kernel_shape=[2, 2], strides=[2, 2]))
    p = G.qdq('p', 'p', *P['a'], 'pool')
    w, ws, wd = G.weight('conv2', c2.weight.detach().numpy(), 0)
    b, bd = G.bias('conv2', c2.bias.detach().numpy(), P['a'][0], ws)
    G.expect_weights('conv2', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [p, w, b], ['b'], name='conv2',
                                    pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
    bq = G.qdq('b', 'b', *P['b'], 'conv2')
    G.nodes.append(helper.make_node('Add', [bq, p], ['s'], name='add'))
    s = G.qdq('s', 's', *P['s'], 'add')
    # a Relu between two pairs stays a layer: the file quantises the add's
    # output before it, and ONNX Runtime requantises from there
    G.nodes.append(helper.make_node('Relu', [s], ['r'], name='relu'))
    r = G.qdq('r', 'r', *P['r'], 'relu')
    G.nodes.append(helper.make_node('Flatten', [r], ['f'], name='flatten'))
    f = G.qdq('f', 'f', *P['r'], 'flatten')
    w, ws, wd = G.weight('fc', fc.weight.detach().numpy(), 0)
    b, bd = G.bias('fc', fc.bias.detach().numpy(), P['r'][0], ws)
    G.expect_weights('fc', ws, wd, bd)
    G.nodes.append(helper.make_node('Gemm', [f, w, b], ['y'], name='fc',
                                    transB=1))
    G.qdq('y', 'y', *P['y'], 'fc')
    return G.model((1, 12, 12), 'y_dq', (5,)), (1, 12, 12), G.expect


def net_concat():
    """two convs concatenated, global average pool, gemm; a Relu kept
    between two QDQ pairs (a layer of its own)."""
    torch.manual_seed(2)
    ca = torch.nn.Conv2d(3, 4, 3, padding=1)
    cb = torch.nn.Conv2d(3, 2, 1)
    fc = torch.nn.Linear(6, 4)
    F = torch.nn.functional

    def fwd(x):
        a0 = ca(x)
        a = F.relu(a0)
        b = cb(x)
        c = torch.cat([a, b], 1)
        g = c.mean((2, 3), keepdim=True)
        return {'a0': a0, 'a': a, 'b': b, 'c': c, 'g': g,
                'y': fc(g.flatten(1))}

    R = calib(fwd, (3, 8, 8), 12)
    G = Graph('qdq_concat', False)
    P = {k: act_params(*R[k], False) for k in R}
    x = G.qdq('x', 'in', *P['x'], None)
    w, ws, wd = G.weight('conv_a', ca.weight.detach().numpy(), 0)
    b, bd = G.bias('conv_a', ca.bias.detach().numpy(), P['x'][0], ws)
    G.expect_weights('conv_a', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [x, w, b], ['a0'], name='conv_a',
                                    pads=[1, 1, 1, 1]))
    a0 = G.qdq('a0', 'a0', *P['a0'], 'conv_a')
    G.nodes.append(helper.make_node('Relu', [a0], ['a'], name='relu_a'))
    a = G.qdq('a', 'a', *P['a'], 'relu_a')
    w, ws, wd = G.weight('conv_b', cb.weight.detach().numpy(), 0)
    b, bd = G.bias('conv_b', cb.bias.detach().numpy(), P['x'][0], ws)
    G.expect_weights('conv_b', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [x, w, b], ['b'], name='conv_b'))
    bq = G.qdq('b', 'b', *P['b'], 'conv_b')
    G.nodes.append(helper.make_node('Concat', [a, bq], ['c'], name='cat',
                                    axis=1))
    c = G.qdq('c', 'c', *P['c'], 'cat')
    G.nodes.append(helper.make_node('GlobalAveragePool', [c], ['g'],
                                    name='gap'))
    g = G.qdq('g', 'g', *P['g'], 'gap')
    G.nodes.append(helper.make_node('Flatten', [g], ['f'], name='flatten'))
    f = G.qdq('f', 'f', *P['g'], 'flatten')
    w, ws, wd = G.weight('fc', fc.weight.detach().numpy(), 0)
    b, bd = G.bias('fc', fc.bias.detach().numpy(), P['g'][0], ws)
    G.expect_weights('fc', ws, wd, bd)
    G.nodes.append(helper.make_node('Gemm', [f, w, b], ['y'], name='fc',
                                    transB=1))
    G.qdq('y', 'y', *P['y'], 'fc')
    return G.model((3, 8, 8), 'y_dq', (4,)), (3, 8, 8), G.expect


def net_depthwise(dw_per_channel=True):
    """conv, depthwise conv (with dw_per_channel False one weight scale per
    tensor, as quantize_static with per_channel=False), pointwise conv,
    average pool, Gemm with B as [K, N] (transB=0, scales along axis 1)."""
    torch.manual_seed(3)
    c1 = torch.nn.Conv2d(1, 8, 3, padding=1)
    dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
    pw = torch.nn.Conv2d(8, 6, 1)
    fc = torch.nn.Linear(6 * 5 * 5, 3)
    F = torch.nn.functional

    def fwd(x):
        a = F.relu(c1(x))
        d = dw(a)
        p = F.relu(pw(d))
        v = F.avg_pool2d(p, 2)
        return {'a': a, 'd': d, 'p': p, 'v': v, 'y': fc(v.flatten(1))}

    R = calib(fwd, (1, 10, 10), 13)
    G = Graph('qdq_depthwise', False)
    P = {k: act_params(*R[k], False) for k in R}
    x = G.qdq('x', 'in', *P['x'], None)
    w, ws, wd = G.weight('conv1', c1.weight.detach().numpy(), 0)
    b, bd = G.bias('conv1', c1.bias.detach().numpy(), P['x'][0], ws)
    G.expect_weights('conv1', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [x, w, b], ['a'], name='conv1',
                                    pads=[1, 1, 1, 1]))
    a = G.qdq('a', 'a', *P['a'], 'conv1')
    w, ws, wd = G.weight('dw', dw.weight.detach().numpy(), 0,
                         per_channel=dw_per_channel)
    ws8 = ws if dw_per_channel else np.repeat(ws, 8)
    b, bd = G.bias('dw', dw.bias.detach().numpy(), P['a'][0], ws8)
    G.expect_weights('dw', ws8, wd, bd)
    G.nodes.append(helper.make_node('Conv', [a, w, b], ['d'], name='dw',
                                    pads=[1, 1, 1, 1], group=8))
    d = G.qdq('d', 'd', *P['d'], 'dw')
    w, ws, wd = G.weight('pw', pw.weight.detach().numpy(), 0)
    b, bd = G.bias('pw', pw.bias.detach().numpy(), P['d'][0], ws)
    G.expect_weights('pw', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [d, w, b], ['p'], name='pw'))
    p = G.qdq('p', 'p', *P['p'], 'pw')
    G.nodes.append(helper.make_node('AveragePool', [p], ['v'], name='avg',
                                    kernel_shape=[2, 2], strides=[2, 2]))
    v = G.qdq('v', 'v', *P['v'], 'avg')
    G.nodes.append(helper.make_node('Flatten', [v], ['f'], name='flatten'))
    f = G.qdq('f', 'f', *P['v'], 'flatten')
    wkn = fc.weight.detach().numpy().T.copy()  # [K, N]
    w, ws, wd = G.weight('fc', wkn, 1)
    b, bd = G.bias('fc', fc.bias.detach().numpy(), P['v'][0], ws)
    G.expect_weights('fc', ws, wd.T, bd)
    G.nodes.append(helper.make_node('Gemm', [f, w, b], ['y'], name='fc'))
    G.qdq('y', 'y', *P['y'], 'fc')
    return G.model((1, 10, 10), 'y_dq', (3,)), (1, 10, 10), G.expect


def net_invres():
    """MobileNetV2's inverted residual on maps wide enough for the vector
    paths of static int8 (a 3 x 3 stem, a 1 x 1 expansion, a depthwise
    3 x 3 at stride 1 on 32 x 32, a linear 1 x 1 projection added to the
    stem, a depthwise 3 x 3 at stride 2, whose map is the output, so that
    one step anywhere shows): the output stage of each must be ONNX
    Runtime's, step for step. uint8 activations, quantize_static's default,
    under which ONNX Runtime's QLinearAdd sums in another domain than
    int8's."""
    torch.manual_seed(8)
    c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
    ex = torch.nn.Conv2d(8, 16, 1)
    dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
    pj = torch.nn.Conv2d(16, 8, 1)
    d2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
    F = torch.nn.functional

    def fwd(x):
        a = F.relu(c1(x))
        e = F.relu(ex(a))
        d = F.relu(dw(e))
        p = pj(d)
        s = p + a
        t = F.relu(d2(s))
        return {'a': a, 'e': e, 'd': d, 'p': p, 's': s, 't': t}

    shape = (3, 32, 32)
    R = calib(fwd, shape, 18)
    G = Graph('qdq_invres', True)
    P = {k: act_params(*R[k], True) for k in R}
    x = G.qdq('x', 'in', *P['x'], None)

    def conv(name, xin, xkey, okey, mod, **attrs):
        w, ws, wd = G.weight(name, mod.weight.detach().numpy(), 0)
        b, bd = G.bias(name, mod.bias.detach().numpy(), P[xkey][0], ws)
        G.expect_weights(name, ws, wd, bd)
        G.nodes.append(helper.make_node('Conv', [xin, w, b], [okey],
                                        name=name, **attrs))
        # a Relu after the Conv removed, as ONNX Runtime removes it: the
        # output's params are the relu's range
        return G.qdq(okey, okey, *P[okey], name)

    a = conv('stem', x, 'x', 'a', c1, pads=[1, 1, 1, 1])
    e = conv('expand', a, 'a', 'e', ex)
    d = conv('dw', e, 'e', 'd', dw, pads=[1, 1, 1, 1], group=16)
    p = conv('project', d, 'd', 'p', pj)
    G.nodes.append(helper.make_node('Add', [p, a], ['s'], name='add'))
    s = G.qdq('s', 's', *P['s'], 'add')
    t = conv('dw2', s, 's', 't', d2, pads=[1, 1, 1, 1], strides=[2, 2],
             group=8)
    return G.model(shape, t, (8, 16, 16)), shape, G.expect


def net_opset10():
    """opset 10's QuantizeLinear/DequantizeLinear (no axis: weights per
    tensor), uint8 activations: conv, relu between two pairs, gemm."""
    torch.manual_seed(6)
    c1 = torch.nn.Conv2d(1, 3, 3)
    fc = torch.nn.Linear(3 * 6 * 6, 2)
    F = torch.nn.functional

    def fwd(x):
        a = c1(x)
        r = F.relu(a)
        return {'a': a, 'r': r, 'y': fc(r.flatten(1))}

    R = calib(fwd, (1, 8, 8), 16)
    G = Graph('qdq_opset10', True)
    P = {k: act_params(*R[k], True) for k in R}
    x = G.qdq('x', 'in', *P['x'], None)
    w, ws, wd = G.weight('conv1', c1.weight.detach().numpy(), 0,
                         per_channel=False)
    ws3 = np.repeat(ws, 3)
    b, bd = G.bias('conv1', c1.bias.detach().numpy(), P['x'][0], ws3)
    G.expect_weights('conv1', ws3, wd, bd)
    G.nodes.append(helper.make_node('Conv', [x, w, b], ['a'], name='conv1'))
    a = G.qdq('a', 'a', *P['a'], 'conv1')
    G.nodes.append(helper.make_node('Relu', [a], ['r'], name='relu'))
    r = G.qdq('r', 'r', *P['r'], 'relu')
    G.nodes.append(helper.make_node('Flatten', [r], ['f'], name='flatten'))
    f = G.qdq('f', 'f', *P['r'], 'flatten')
    w, ws, wd = G.weight('fc', fc.weight.detach().numpy(), 0,
                         per_channel=False)
    ws2 = np.repeat(ws, 2)
    b, bd = G.bias('fc', fc.bias.detach().numpy(), P['r'][0], ws2)
    G.expect_weights('fc', ws2, wd, bd)
    G.nodes.append(helper.make_node('Gemm', [f, w, b], ['y'], name='fc',
                                    transB=1))
    G.qdq('y', 'y', *P['y'], 'fc')
    # opset 10 has no axis attribute: the per-tensor DequantizeLinear
    # nodes of the biases drop theirs
    for n in G.nodes:
        del n.attribute[:]
        if n.op_type == 'Conv':
            n.attribute.extend([helper.make_attribute('kernel_shape',
                                                      [3, 3])])
        if n.op_type == 'Gemm':
            n.attribute.extend([helper.make_attribute('transB', 1)])
    # a bias's scale per tensor is one value: the conv's repeated scale
    for t in G.inits:
        if t.name.endswith('_b_scale') or t.name.endswith('_b_zp'):
            arr = numpy_helper.to_array(t)
            t.CopyFrom(numpy_helper.from_array(arr.reshape(-1)[0], t.name))
    return G.model((1, 8, 8), 'y_dq', (2,), opset=10), (1, 8, 8), G.expect


def net_uint8():
    """uint8 activations (quantize_static's default QUInt8), int8 weights:
    conv, max pool, flatten, MatMul by a constant [K, N]."""
    torch.manual_seed(4)
    c1 = torch.nn.Conv2d(2, 4, 3, padding=1)
    c2 = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1)
    wm = torch.randn(4 * 3 * 3, 6) * 0.2
    F = torch.nn.functional

    def fwd(x):
        a = F.relu(c1(x))
        p = F.max_pool2d(a, 2, ceil_mode=False)
        b = F.relu(c2(p))
        return {'a': a, 'b': b, 'y': b.flatten(1) @ wm}

    R = calib(fwd, (2, 12, 12), 14)
    G = Graph('qdq_uint8', True)
    P = {k: act_params(*R[k], True) for k in R}
    x = G.qdq('x', 'in', *P['x'], None)
    w, ws, wd = G.weight('conv1', c1.weight.detach().numpy(), 0)
    b, bd = G.bias('conv1', c1.bias.detach().numpy(), P['x'][0], ws)
    G.expect_weights('conv1', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [x, w, b], ['a'], name='conv1',
                                    pads=[1, 1, 1, 1]))
    a = G.qdq('a', 'a', *P['a'], 'conv1')
    G.nodes.append(helper.make_node('MaxPool', [a], ['p'], name='pool',
                                    kernel_shape=[2, 2], strides=[2, 2]))
    p = G.qdq('p', 'p', *P['a'], 'pool')
    w, ws, wd = G.weight('conv2', c2.weight.detach().numpy(), 0)
    b, bd = G.bias('conv2', c2.bias.detach().numpy(), P['a'][0], ws)
    G.expect_weights('conv2', ws, wd, bd)
    G.nodes.append(helper.make_node('Conv', [p, w, b], ['b'], name='conv2',
                                    pads=[1, 1, 1, 1], strides=[2, 2]))
    bq = G.qdq('b', 'b', *P['b'], 'conv2')
    G.nodes.append(helper.make_node('Flatten', [bq], ['f'], name='flatten'))
    f = G.qdq('f', 'f', *P['b'], 'flatten')
    w, ws, wd = G.weight('mm', wm.numpy(), 1)
    G.expect_weights('mm', ws, wd.T, None)
    G.nodes.append(helper.make_node('MatMul', [f, w], ['y'], name='mm'))
    G.qdq('y', 'y', *P['y'], 'mm')
    return G.model((2, 12, 12), 'y_dq', (6,)), (2, 12, 12), G.expect


def net_qop():
    """ONNX Runtime's QOperator format: QuantizeLinear, QLinearConv x 2,
    com.microsoft's QLinearAdd, MaxPool and Flatten of uint8,
    QLinearMatMul, DequantizeLinear."""
    torch.manual_seed(5)
    c1 = torch.nn.Conv2d(1, 4, 3, padding=1)
    c2 = torch.nn.Conv2d(4, 4, 3, padding=1)
    wm = torch.randn(4 * 5 * 5, 3) * 0.2
    F = torch.nn.functional

    def fwd(x):
        a = F.relu(c1(x))
        b = c2(a)
        s = a + b
        p = F.max_pool2d(s, 2)
        return {'a': a, 'b': b, 's': s, 'y': p.flatten(1) @ wm}

    R = calib(fwd, (1, 10, 10), 15)
    G = Graph('qop', True)
    P = {k: act_params(*R[k], True) for k in R}
    s, z = G.params('in', *P['x'])
    G.nodes.append(helper.make_node('QuantizeLinear', ['x', s, z], ['xq'],
                                    name='quant_in'))
    G.expect.append('input x %.9g %d 1' % P['x'])

    def qconv(name, xin, xkey, okey, conv):
        q, ws, wd = weight_q(conv.weight.detach().numpy(), 0)
        xs = P[xkey][0]
        bs = (F32(xs) * ws).astype(F32)
        bq = np.rint(conv.bias.detach().numpy() / bs).astype(np.int32)
        bd = (bq.astype(F32) * (F32(xs) * ws).astype(F32)).astype(F32)
        G.expect_weights(name, ws, wd, bd)
        G.init(name + '_w', q)
        G.init(name + '_ws', ws)
        G.init(name + '_wz', np.zeros(ws.shape, np.int8))
        G.init(name + '_b', bq)
        xs_n, xz_n = xkey + '_scale', xkey + '_zp'
        os_n, oz_n = G.params(okey, *P[okey])
        G.nodes.append(helper.make_node(
            'QLinearConv', [xin, xs_n, xz_n, name + '_w', name + '_ws',
                            name + '_wz', os_n, oz_n, name + '_b'],
            [name + '_out'], name=name, pads=[1, 1, 1, 1]))
        G.expect.append('tensor %s %.9g %d 1' % ((name,) + P[okey]))
        return name + '_out'

    G.params('x', *P['x'])  # names x_scale / x_zp for qconv's lookup
    a = qconv('conv1', 'xq', 'x', 'a', c1)
    b = qconv('conv2', a, 'a', 'b', c2)
    ss, sz = G.params('s', *P['s'])
    G.nodes.append(helper.make_node(
        'QLinearAdd', [b, 'b_scale', 'b_zp', a, 'a_scale', 'a_zp', ss, sz],
        ['s_out'], name='add', domain='com.microsoft'))
    G.expect.append('tensor add %.9g %d 1' % P['s'])
    G.nodes.append(helper.make_node('MaxPool', ['s_out'], ['p'], name='pool',
                                    kernel_shape=[2, 2], strides=[2, 2]))
    G.expect.append('tensor pool %.9g %d 1' % P['s'])
    G.nodes.append(helper.make_node('Flatten', ['p'], ['f'], name='flatten'))
    G.expect.append('tensor flatten %.9g %d 1' % P['s'])
    q = np.clip(np.rint(wm.numpy() / (np.abs(wm.numpy()).max() / 127)),
                -127, 127).astype(np.int8)
    mws = F32(np.abs(wm.numpy()).max() / 127)
    G.init('mm_w', q)
    G.init('mm_ws', mws)
    G.init('mm_wz', np.int8(0))
    ys, yz = G.params('y', *P['y'])
    G.nodes.append(helper.make_node(
        'QLinearMatMul', ['f', 's_scale', 's_zp', 'mm_w', 'mm_ws', 'mm_wz',
                          ys, yz], ['yq'], name='mm'))
    G.expect.append('tensor mm %.9g %d 1' % P['y'])
    wd = (q.astype(np.int32).astype(F32) * mws).astype(F32)
    G.expect_weights('mm', np.repeat(mws, 3), wd.T, None)
    G.nodes.append(helper.make_node('DequantizeLinear', ['yq', ys, yz],
                                    ['y'], name='dequant_out'))
    m = G.model((1, 10, 10), 'y', (3,),
                [helper.make_opsetid('com.microsoft', 1)])
    return m, (1, 10, 10), G.expect


def ort_run(model_path, x):
    with tempfile.TemporaryDirectory() as d:
        xin = os.path.join(d, 'in.bin')
        yout = os.path.join(d, 'out.bin')
        x.astype('<f4').tofile(xin)
        dims = subprocess.check_output(
            ['node', os.path.join(ROOT, 'scripts', 'ort-run.js'),
             model_path, xin, ','.join(map(str, x.shape)), yout], text=True)
        shape = tuple(int(v) for v in dims.strip().split(','))
        return np.fromfile(yout, '<f4').reshape(shape)


def write_fixture(name, model, in_shape, seed, n=32):
    d = os.path.join(QDQ, name)
    ds = os.path.join(d, 'test_data_set_0')
    os.makedirs(ds, exist_ok=True)
    path = os.path.join(d, 'model.onnx')
    onnx.save(model, path)
    x = np.random.default_rng(seed).standard_normal(
        (n,) + in_shape).astype(F32)
    y = ort_run(path, x)
    with open(os.path.join(ds, 'input_0.pb'), 'wb') as f:
        f.write(numpy_helper.from_array(x, 'x').SerializeToString())
    with open(os.path.join(ds, 'output_0.pb'), 'wb') as f:
        f.write(numpy_helper.from_array(y, 'y').SerializeToString())
    return y


def bad_models():
    """One refusal each: a small QDQ Conv with one thing wrong."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 1, 3, 3)).astype(F32) * 0.3

    def base(in_scale=F32(0.05), in_zp=np.int8(0), dq_scale=None,
             w_scales=None, zp_tensor=None):
        q, ws, _ = weight_q(w, 0)
        if w_scales is not None:
            ws = w_scales
        inits = [numpy_helper.from_array(np.asarray(in_scale, F32), 's'),
                 numpy_helper.from_array(np.asarray(
                     in_scale if dq_scale is None else dq_scale, F32), 's2'),
                 numpy_helper.from_array(q, 'wq'),
                 numpy_helper.from_array(np.asarray(ws, F32), 'ws'),
                 numpy_helper.from_array(np.zeros(len(ws), np.int8), 'wz')]
        inits.append(zp_tensor if zp_tensor is not None
                     else numpy_helper.from_array(np.asarray(in_zp), 'z'))
        nodes = [
            helper.make_node('QuantizeLinear', ['x', 's', 'z'], ['xq'],
                             name='quant_x'),
            helper.make_node('DequantizeLinear', ['xq', 's2', 'z'], ['xd'],
                             name='dequant_x'),
            helper.make_node('DequantizeLinear', ['wq', 'ws', 'wz'], ['w'],
                             name='dequant_w', axis=0),
            helper.make_node('Conv', ['xd', 'w'], ['y'], name='conv',
                             pads=[1, 1, 1, 1]),
        ]
        g = helper.make_graph(
            nodes, 'bad', [helper.make_tensor_value_info(
                'x', TensorProto.FLOAT, ['N', 1, 6, 6])],
            [helper.make_tensor_value_info('y', TensorProto.FLOAT,
                                           ['N', 4, 6, 6])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
        m.ir_version = 7
        return m

    q, ws, _ = weight_q(w, 0)
    out = {
        'qdq_zero_scale': base(in_scale=F32(0.0)),
        'qdq_negative_scale': base(in_scale=F32(-0.05)),
        'qdq_nan_scale': base(in_scale=F32(np.nan)),
        # an int8 zero point of 200 (the int32_data field can hold it)
        'qdq_zero_point_range': base(zp_tensor=helper.make_tensor(
            'z', TensorProto.INT8, [], [200])),
        'qdq_axis_length': base(w_scales=ws[:3]),
        'qdq_pair_differs': base(dq_scale=F32(0.1)),
        'qdq_int16': base(zp_tensor=helper.make_tensor(
            'z', TensorProto.INT16, [], [0])),
    }
    m = base()
    m.opset_import[0].version = 10
    for n in m.graph.node:
        del n.attribute[:]
    out['qdq_per_axis_opset10'] = m
    for name, m in out.items():
        onnx.save(m, os.path.join(BAD, name + '.onnx'))


def main():
    os.makedirs(QDQ, exist_ok=True)
    nets = [('cnn', net_cnn), ('concat', net_concat),
            ('depthwise', net_depthwise), ('uint8', net_uint8),
            ('qop', net_qop),
            ('depthwise_pt', lambda: net_depthwise(False)),
            ('opset10', net_opset10), ('invres', net_invres)]
    # the wide maps' fixture on 4 inputs, to stay small
    count = {'invres': 4}
    for i, (name, fn) in enumerate(nets):
        model, in_shape, expect = fn()
        y = write_fixture(name, model, in_shape, 100 + i, count.get(name, 32))
        with open(os.path.join(QDQ, name, 'expect.txt'), 'w') as f:
            f.write('\n'.join(expect) + '\n')
        print('%s: output %s, range [%.4f, %.4f]' % (
            name, 'x'.join(map(str, y.shape)), y.min(), y.max()))
    bad_models()


if __name__ == '__main__':
    main()
