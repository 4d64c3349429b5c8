#!/usr/bin/env python3
"""Write the fixtures of the four model presets (libmemest/models/*.txt, the
MLPerf Tiny reference architectures) into tests/data/models/<preset>/:

  model.onnx                   the network exported by PyTorch (opset 13,
                               symbolic batch dimension "batch")
  test_data_set_0/input_0.pb   a batch of 2 inputs, ONNX TensorProto (float)
  test_data_set_0/output_0.pb  PyTorch's outputs for them in eval mode
  <preset>.safetensors         the same weights under PyTorch's state_dict
                               names, which are the text preset's layer
                               names (conv1.weight, bn1.running_var, ...),
                               num_batches_tracked included

Each network is written out here layer by layer from the reference
architecture, independently of the text preset, so the tests that compare
the two (parameter counts, MACs, outputs) check one against the other.
Weights are PyTorch's default initialisation; every batch norm gets random
scales and shifts and running statistics measured on random inputs, so
that folding a batch norm into its convolution is exercised. Everything is
seeded: the files are the same on every run with the same PyTorch.

Keras' padding='same' at stride 2 pads the bottom and right more than the
top and left, which PyTorch's Conv2d cannot say; AsymConv2d pads explicitly
and exports one ONNX Conv with the four pads (not a Pad node).

Run with Debian's python3 (python3-torch, python3-numpy), from the top of
the tree:
    python3 scripts/make-model-fixtures.py [OUTDIR]   (default tests/data/models)
"""
import os
import sys
import warnings

import torch
from torch import nn
import torch.nn.functional as F

from safetensors_writer import save

BN_EPS = 1e-3  # Keras' default, as in the presets
BATCH = 2


class _PaddedConv(torch.autograd.Function):
    """conv2d with pads (top, left, bottom, right), exported as one Conv."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride, pads, groups):
        top, left, bottom, right = pads
        x = F.pad(x, (left, right, top, bottom))
        return F.conv2d(x, weight, bias, stride, 0, 1, groups)

    @staticmethod
    def symbolic(g, x, weight, bias, stride, pads, groups):
        # PyTorch 1.13 warns that g.op() moves in 1.14; it is the
        # documented way for a Function to export itself in 1.13.
        warnings.filterwarnings("ignore", category=FutureWarning,
                                message=".*_graph_op.*")
        kernel = weight.type().sizes()[2:]
        args = [x, weight] if bias is None else [x, weight, bias]
        return g.op("Conv", *args, kernel_shape_i=list(kernel),
                    strides_i=list(stride), pads_i=list(pads),
                    dilations_i=[1, 1], group_i=groups)


class AsymConv2d(nn.Conv2d):
    """nn.Conv2d (same parameters and state_dict) with per-side pads."""

    def __init__(self, cin, cout, kernel, stride, pads, groups=1,
                 bias=False):
        super().__init__(cin, cout, kernel, stride, 0, groups=groups,
                         bias=bias)
        self.pads = tuple(pads)

    def forward(self, x):
        return _PaddedConv.apply(x, self.weight, self.bias, self.stride,
                                 self.pads, self.groups)


def conv(cin, cout, k, s=1, pads=None, groups=1, bias=False):
    """A convolution as the preset writes it: pads (t, l, b, r), or k // 2
    on every side when None."""
    if pads is None:
        return nn.Conv2d(cin, cout, k, s, k // 2 if isinstance(k, int)
                         else (k[0] // 2, k[1] // 2), groups=groups,
                         bias=bias)
    return AsymConv2d(cin, cout, k, s, pads, groups, bias)


def avgpool(k):
    """An average pool with no padding, stride = window (Keras' default).
    count_include_pad=False changes nothing without padding, but it makes
    PyTorch export one AveragePool rather than a Pad of zeros before it."""
    return nn.AvgPool2d(k, k, count_include_pad=False)


SAME_S2 = (0, 0, 1, 1)  # Keras 'same', stride 2, even size, kernel 3


class ResNet8(nn.Module):
    """MLPerf Tiny image classification: ResNet-8 on 3x32x32, 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = conv(3, 16, 3)
        self.bn1 = nn.BatchNorm2d(16, eps=BN_EPS)
        self.s1_conv1 = conv(16, 16, 3)
        self.s1_bn1 = nn.BatchNorm2d(16, eps=BN_EPS)
        self.s1_conv2 = conv(16, 16, 3)
        self.s1_bn2 = nn.BatchNorm2d(16, eps=BN_EPS)
        self.s2_conv1 = conv(16, 32, 3, 2, SAME_S2)
        self.s2_bn1 = nn.BatchNorm2d(32, eps=BN_EPS)
        self.s2_conv2 = conv(32, 32, 3)
        self.s2_bn2 = nn.BatchNorm2d(32, eps=BN_EPS)
        self.s2_short = nn.Conv2d(16, 32, 1, 2, 0)
        self.s3_conv1 = conv(32, 64, 3, 2, SAME_S2)
        self.s3_bn1 = nn.BatchNorm2d(64, eps=BN_EPS)
        self.s3_conv2 = conv(64, 64, 3)
        self.s3_bn2 = nn.BatchNorm2d(64, eps=BN_EPS)
        self.s3_short = nn.Conv2d(32, 64, 1, 2, 0)
        self.pool = avgpool(8)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.s1_bn1(self.s1_conv1(x)))
        y = self.s1_bn2(self.s1_conv2(y))
        x = F.relu(x + y)
        y = F.relu(self.s2_bn1(self.s2_conv1(x)))
        y = self.s2_bn2(self.s2_conv2(y))
        x = F.relu(self.s2_short(x) + y)
        y = F.relu(self.s3_bn1(self.s3_conv1(x)))
        y = self.s3_bn2(self.s3_conv2(y))
        x = F.relu(self.s3_short(x) + y)
        x = torch.flatten(self.pool(x), 1)
        return F.softmax(self.fc(x), dim=1)


class DsCnn(nn.Module):
    """MLPerf Tiny keyword spotting: DS-CNN on 1x49x10 MFCCs, 12 classes."""

    def __init__(self):
        super().__init__()
        # 'same' at stride 2: 49 rows -> 25 (pads 4 + 5), 10 columns -> 5
        # (pads 1 + 1)
        self.conv1 = conv(1, 64, (10, 4), 2, (4, 1, 5, 1))
        self.bn1 = nn.BatchNorm2d(64, eps=BN_EPS)
        self.drop1 = nn.Dropout(0.2)
        for i in range(1, 5):
            setattr(self, "dw%d" % i, conv(64, 64, 3, groups=64))
            setattr(self, "dw%d_bn" % i, nn.BatchNorm2d(64, eps=BN_EPS))
            setattr(self, "pw%d" % i, conv(64, 64, 1))
            setattr(self, "pw%d_bn" % i, nn.BatchNorm2d(64, eps=BN_EPS))
        self.drop2 = nn.Dropout(0.4)
        # the reference's pool_size (int(49 / 2), int(10 / 2))
        self.pool = avgpool((24, 5))
        self.fc = nn.Linear(64, 12)

    def forward(self, x):
        x = self.drop1(F.relu(self.bn1(self.conv1(x))))
        for i in range(1, 5):
            x = F.relu(getattr(self, "dw%d_bn" % i)(
                getattr(self, "dw%d" % i)(x)))
            x = F.relu(getattr(self, "pw%d_bn" % i)(
                getattr(self, "pw%d" % i)(x)))
        x = torch.flatten(self.pool(self.drop2(x)), 1)
        return F.softmax(self.fc(x), dim=1)


class MobileNetV1x025(nn.Module):
    """MLPerf Tiny visual wake words: MobileNetV1, width 0.25, 3x96x96,
    2 classes."""

    # (input channels, output channels, stride) of the 13 separable blocks
    BLOCKS = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2),
              (64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 128, 1),
              (128, 128, 1), (128, 128, 1), (128, 128, 1), (128, 256, 2),
              (256, 256, 1)]

    def __init__(self):
        super().__init__()
        self.conv1 = conv(3, 8, 3, 2, SAME_S2)
        self.bn1 = nn.BatchNorm2d(8, eps=BN_EPS)
        for i, (cin, cout, s) in enumerate(self.BLOCKS, 1):
            dw = conv(cin, cin, 3, groups=cin) if s == 1 else \
                conv(cin, cin, 3, 2, SAME_S2, groups=cin)
            setattr(self, "dw%d" % i, dw)
            setattr(self, "dw%d_bn" % i, nn.BatchNorm2d(cin, eps=BN_EPS))
            setattr(self, "pw%d" % i, conv(cin, cout, 1))
            setattr(self, "pw%d_bn" % i, nn.BatchNorm2d(cout, eps=BN_EPS))
        self.pool = avgpool(3)
        self.fc = nn.Linear(256, 2)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for i in range(1, len(self.BLOCKS) + 1):
            x = F.relu(getattr(self, "dw%d_bn" % i)(
                getattr(self, "dw%d" % i)(x)))
            x = F.relu(getattr(self, "pw%d_bn" % i)(
                getattr(self, "pw%d" % i)(x)))
        x = torch.flatten(self.pool(x), 1)
        return F.softmax(self.fc(x), dim=1)


class FcAutoencoder(nn.Module):
    """MLPerf Tiny anomaly detection: the dense autoencoder, 640 inputs."""

    WIDTHS = [128, 128, 128, 128, 8, 128, 128, 128, 128]

    def __init__(self):
        super().__init__()
        prev = 640
        for i, w in enumerate(self.WIDTHS, 1):
            setattr(self, "fc%d" % i, nn.Linear(prev, w, bias=False))
            setattr(self, "bn%d" % i, nn.BatchNorm1d(w, eps=BN_EPS))
            prev = w
        self.fc10 = nn.Linear(prev, 640)

    def forward(self, x):
        for i in range(1, len(self.WIDTHS) + 1):
            x = F.relu(getattr(self, "bn%d" % i)(getattr(self, "fc%d" % i)(x)))
        return self.fc10(x)


MODELS = [
    ("resnet8", ResNet8, (3, 32, 32)),
    ("ds-cnn", DsCnn, (1, 49, 10)),
    ("mobilenetv1-0.25", MobileNetV1x025, (3, 96, 96)),
    ("fc-autoencoder", FcAutoencoder, (640,)),
]


def randomise_batch_norms(model, shape, gen):
    """Random scales and shifts, and running statistics measured on random
    inputs (a calibration pass in training mode), so that the statistics
    are far from PyTorch's initial 0 and 1 yet match the activations: a
    reader that ignored or misfolded any of them would be caught, and the
    signal still reaches the output of a deep network instead of dying in
    its relus (with made-up statistics, MobileNet's 27 layers answer the
    same for every input)."""
    bns = [m for m in model.modules()
           if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]
    with torch.no_grad():
        for m in bns:
            c = m.num_features
            m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.copy_(torch.randn(c, generator=gen) * 0.2)
            m.reset_running_stats()
            m.momentum = None  # a plain average over the calibration
        model.train()
        for _ in range(4):
            model(torch.randn((16,) + shape, generator=gen))
        for m in bns:
            m.momentum = 0.1
    model.eval()


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tensor_proto(name, t):
    """An ONNX TensorProto of a float32 tensor: dims (field 1, one varint
    each, unpacked as proto2 writes it), data_type (field 2, FLOAT = 1),
    name (field 8), raw_data (field 9, little-endian floats)."""
    t = t.detach().contiguous().to(torch.float32)
    out = bytearray()
    for d in t.shape:
        out += varint(1 << 3 | 0) + varint(d)
    out += varint(2 << 3 | 0) + varint(1)
    name_bytes = name.encode("utf-8")
    out += varint(8 << 3 | 2) + varint(len(name_bytes)) + name_bytes
    raw = t.numpy().astype("<f4").tobytes()
    out += varint(9 << 3 | 2) + varint(len(raw)) + raw
    return bytes(out)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def make(outdir, name, cls, shape, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    model = cls()
    randomise_batch_norms(model, shape, gen)
    x = torch.randn((BATCH,) + shape, generator=gen)
    with torch.no_grad():
        y = model(x)
    # the two samples must give different outputs, or the test data could
    # not tell a working network from one that ignores its input
    assert (y[0] - y[1]).abs().max() > 1e-3 * y.abs().max(), name

    folder = os.path.join(outdir, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    torch.onnx.export(model, x, os.path.join(folder, "model.onnx"),
                      opset_version=13, input_names=["input"],
                      output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      do_constant_folding=True)
    write(os.path.join(data, "input_0.pb"), tensor_proto("input", x))
    write(os.path.join(data, "output_0.pb"), tensor_proto("output", y))
    # the whole state_dict, num_batches_tracked (int64) included, as
    # PyTorch users save it
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    save(os.path.join(folder, name + ".safetensors"), state,
         {"format": "pt", "source": "make-model-fixtures.py"})
    params = sum(v.numel() for k, v in state.items()
                 if not k.endswith("num_batches_tracked"))
    print("%-18s %8d state_dict values, output %s" %
          (name, params, "x".join(str(d) for d in y.shape)))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/models"
    torch.set_num_threads(1)
    for seed, (name, cls, shape) in enumerate(MODELS, 1):
        make(outdir, name, cls, shape, seed)


if __name__ == "__main__":
    main()
