#!/usr/bin/env python3
"""Write the model zoo fixtures into tests/data/zoo/<model>/: the mobile and
vision architectures a PyTorch user exports, at reduced sizes so that the
files stay small, each as

  model.onnx                   torch.onnx.export, opset 13, symbolic batch
                               dimension "batch", eval mode
  test_data_set_0/input_0.pb   a batch of random inputs, ONNX TensorProto
  test_data_set_0/output_0.pb  PyTorch's outputs for them (the network
                               run in float64, rounded to float32)

(ONNX's backend test-case layout, which edgefit-validate reads), for the
models of DATA_SETS a folder data/ of NumPy samples (write_data_sets), and the
manifest tests/data/zoo/manifest.json that tests/apps/test_zoo.c checks
edgefit against: per model its input shape and batch, PyTorch's parameter
count, the count with the batch norms folded, the MACs, the constructs it
uses and the ONNX op types of the exported graph.

Counting conventions (README.md, DESIGN.md; what edgefit reports):
  parameters_pytorch  sum(p.numel() for p in model.parameters()): weights,
                      biases and the batch norms' scales and shifts (their
                      running statistics are buffers, not parameters);
  parameters          the batch norms folded: every Conv/ConvTranspose/
                      Linear weight and bias, a bias of out_c added where a
                      batch norm folds into a convolution without one, and
                      2*C (scale and shift) for a batch norm that folds into
                      nothing (DenseNet's, after a concat or a pool);
  macs                at the manifest's batch: Linear output_elements * in,
                      Conv output_elements * (in_c/g) * prod(kernel),
                      ConvTranspose input_elements * (out_c/g) *
                      prod(kernel), everything else 0; measured with
                      forward hooks on the modules that run.
A batch norm folds when it reads a Conv, ConvTranspose or Linear output
directly. The folded count is checked here against the exported graph (the
initializers its Conv, ConvTranspose, Gemm, MatMul and BatchNormalization
nodes read), so a fold PyTorch's exporter did not make, or an output read
twice, stops the script instead of writing a wrong manifest.

Weights are PyTorch's default initialisation under a fixed
torch.manual_seed (weights=None); every batch norm gets random scales and
shifts and running statistics measured on random inputs, as
make-model-fixtures.py does and for the same reason: far from 0 and 1 yet
matching the activations, so that a deep network's output still depends on
its input.

Run with Debian's python3 (python3-torch, python3-torchvision 0.14,
python3-onnx), from the top of the tree; nothing here runs at test time:
    python3 scripts/make-zoo-fixtures.py [OUTDIR]   (default tests/data/zoo)
"""
import collections
import copy
import functools
import importlib.util
import json
import operator
import os
import sys

import onnx
import torch
import torch.fx
from torch import nn
import torch.nn.functional as F
import torchvision
from torchvision import models as tvm
from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
from torchvision.models.googlenet import BasicConv2d, Inception, InceptionAux

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_writer import save  # noqa: E402

OPSET = 13


# ---- the models written here ------------------------------------------------

class LeNet5(nn.Module):
    """LeCun et al. 1998 as usually written in PyTorch: tanh, average
    pooling, 32x32 input."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool1 = nn.AvgPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool2 = nn.AvgPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool1(torch.tanh(self.conv1(x)))
        x = self.pool2(torch.tanh(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = torch.tanh(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.fc3(x)


def conv_bn_relu(cin, cout, k=3, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class TinyUNet(nn.Module):
    """Two levels down, two up: the first up-step a ConvTranspose2d, the
    second a bilinear Upsample and a convolution, each concatenated with
    its skip connection (Ronneberger et al. 2015, reduced)."""

    def __init__(self, cin=3, classes=2, w=8):
        super().__init__()
        self.enc1 = nn.Sequential(conv_bn_relu(cin, w), conv_bn_relu(w, w))
        self.enc2 = nn.Sequential(conv_bn_relu(w, 2 * w),
                                  conv_bn_relu(2 * w, 2 * w))
        self.bottom = nn.Sequential(conv_bn_relu(2 * w, 4 * w),
                                    conv_bn_relu(4 * w, 4 * w))
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.dec2 = nn.Sequential(conv_bn_relu(4 * w, 2 * w),
                                  conv_bn_relu(2 * w, 2 * w))
        self.up1 = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="bilinear",
                        align_corners=False),
            nn.Conv2d(2 * w, w, 1))
        self.dec1 = nn.Sequential(conv_bn_relu(2 * w, w), conv_bn_relu(w, w))
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottom(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


def conv_bn_silu(cin, cout, k=3, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False),
                         nn.BatchNorm2d(cout), nn.SiLU(inplace=True))


class TinyYolo(nn.Module):
    """A YOLOv5-style detector, reduced: a strided conv-BN-SiLU backbone, a
    neck that upsamples the deep features (nearest) and concatenates them
    with the shallower ones, and a 1x1 head per scale predicting 3 anchors x
    (4 box + 1 objectness + 4 classes). As YOLOv5's export does, the heads
    are flattened over space, concatenated into one tensor and squashed by
    a sigmoid: N x 27 x (8*8 + 4*4) for a 64x64 input."""

    def __init__(self, anchors=3, classes=4):
        super().__init__()
        out = anchors * (5 + classes)
        self.stem = conv_bn_silu(3, 8, 3, 2)                  # 32
        self.s1 = conv_bn_silu(8, 16, 3, 2)                   # 16
        self.s2 = conv_bn_silu(16, 32, 3, 2)                  # 8
        self.s3 = conv_bn_silu(32, 64, 3, 2)                  # 4
        self.lateral = conv_bn_silu(64, 32, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fuse = conv_bn_silu(64, 32, 3)
        self.head_p3 = nn.Conv2d(32, out, 1)
        self.head_p4 = nn.Conv2d(64, out, 1)

    def forward(self, x):
        p3 = self.s2(self.s1(self.stem(x)))
        p4 = self.s3(p3)
        n3 = self.fuse(torch.cat([self.up(self.lateral(p4)), p3], 1))
        y3 = torch.flatten(self.head_p3(n3), 2)
        y4 = torch.flatten(self.head_p4(p4), 2)
        return torch.sigmoid(torch.cat([y3, y4], 2))


class ConvAutoencoder(nn.Module):
    """A convolutional autoencoder for 28x28 images: strided Conv2d down
    to 16x7x7, ConvTranspose2d (output_padding 1) back up, a sigmoid
    reconstruction."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
            nn.ReLU(inplace=True))
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 3, 2, 1, output_padding=1),
            nn.ReLU(inplace=True),
            nn.ConvTranspose2d(8, 1, 3, 2, 1, output_padding=1),
            nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


class TemporalBlock(nn.Module):
    """Bai, Kolter and Koltun 2018's residual block: two causal dilated
    Conv1d (padded both sides, the right side chopped), a 1x1 convolution
    on the skip path when the width changes."""

    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.chomp = (k - 1) * dilation
        self.conv1 = nn.Conv1d(cin, cout, k, padding=self.chomp,
                               dilation=dilation, bias=False)
        self.bn1 = nn.BatchNorm1d(cout)
        self.conv2 = nn.Conv1d(cout, cout, k, padding=self.chomp,
                               dilation=dilation, bias=False)
        self.bn2 = nn.BatchNorm1d(cout)
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x))[:, :, :-self.chomp])
        y = F.relu(self.bn2(self.conv2(y))[:, :, :-self.chomp])
        res = x if self.down is None else self.down(x)
        return F.relu(y + res)


class TCN(nn.Module):
    """A temporal convolutional network over N x 4 x 64 signals, dilations
    1, 2, 4; the classifier reads the last time step."""

    def __init__(self, cin=4, width=16, classes=5, k=3):
        super().__init__()
        self.blocks = nn.Sequential(TemporalBlock(cin, width, k, 1),
                                    TemporalBlock(width, width, k, 2),
                                    TemporalBlock(width, width, k, 4))
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        return self.fc(self.blocks(x)[:, :, -1])


# ---- the torchvision ones, reduced ------------------------------------------

def mobilenet_v3_small():
    return tvm.mobilenet_v3_small(weights=None, width_mult=0.5,
                                  num_classes=100)


def efficientnet_b0():
    # efficientnet_b0's own configuration (depth 1.0: every block of B0)
    # at a quarter of its width; torchvision 0.14's builder does not take
    # width_mult, its configuration function does.
    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25,
                                       depth_mult=1.0)
    return EfficientNet(setting, 0.2, num_classes=100, last_channel=last)


def shufflenet_v2_x0_5():
    return tvm.shufflenet_v2_x0_5(weights=None, num_classes=100)


def mnasnet0_5():
    return tvm.mnasnet0_5(weights=None, num_classes=10)


def densenet_reduced():
    return tvm.DenseNet(growth_rate=8, block_config=(2, 2, 2),
                        num_init_features=16, num_classes=10)


class QuarterConv(BasicConv2d):
    """GoogLeNet's conv-BN-ReLU at a quarter of every width (the RGB input
    excepted): the inception modules' channel arithmetic still adds up,
    since every width of GoogLeNet is a multiple of 4."""

    def __init__(self, cin, cout, **kw):
        super().__init__(cin if cin == 3 else cin // 4, cout // 4, **kw)


def googlenet_quarter():
    # GoogLeNet builds its inception modules without passing its conv
    # block on, so the module is given it too; fc is built directly.
    model = tvm.GoogLeNet(num_classes=10, aux_logits=False,
                          init_weights=False,
                          blocks=[QuarterConv,
                                  functools.partial(Inception,
                                                    conv_block=QuarterConv),
                                  InceptionAux])
    model.fc = nn.Linear(1024 // 4, 10)
    return model


# name, builder, per-sample input shape, batch, constructs, what was reduced
MODELS = [
    ("lenet5", LeNet5, (1, 32, 32), 2,
     ["Conv2d", "Tanh", "AvgPool2d", "Flatten", "Linear"],
     "as published"),
    ("mobilenetv3-small", mobilenet_v3_small, (3, 64, 64), 1,
     ["Conv2d", "depthwise Conv2d", "BatchNorm2d", "Hardswish", "ReLU",
      "squeeze-excite (AdaptiveAvgPool2d, Conv2d, Hardsigmoid, Mul)",
      "residual Add", "Flatten", "Linear", "Dropout"],
     "width_mult 0.5, 100 classes, 64x64 input"),
    ("efficientnet-b0", efficientnet_b0, (3, 96, 96), 1,
     ["Conv2d", "depthwise Conv2d", "BatchNorm2d", "SiLU",
      "squeeze-excite (AdaptiveAvgPool2d, Conv2d, SiLU, Sigmoid, Mul)",
      "StochasticDepth", "residual Add", "Flatten", "Linear", "Dropout"],
     "B0's blocks (depth 1.0) at width 0.25, 100 classes, 96x96 input"),
    ("shufflenetv2-x0.5", shufflenet_v2_x0_5, (3, 64, 64), 1,
     ["Conv2d", "depthwise Conv2d", "BatchNorm2d", "ReLU",
      "MaxPool2d", "channel split (chunk)", "Concat",
      "channel shuffle (view, transpose, view: 5-D)", "mean over H, W",
      "Linear"],
     "x0.5, 100 classes, 64x64 input"),
    ("mnasnet0.5", mnasnet0_5, (3, 64, 64), 1,
     ["Conv2d", "depthwise Conv2d (3x3, 5x5)", "BatchNorm2d", "ReLU",
      "residual Add", "mean over H, W", "Dropout", "Linear"],
     "alpha 0.5, 10 classes, 64x64 input"),
    ("densenet-reduced", densenet_reduced, (3, 64, 64), 1,
     ["Conv2d", "BatchNorm2d before a conv (pre-activation, not folded)",
      "ReLU", "MaxPool2d", "dense Concat", "AvgPool2d (transition)",
      "adaptive_avg_pool2d", "Flatten", "Linear"],
     "growth 8, blocks (2, 2, 2), 16 initial features, 10 classes, "
     "64x64 input"),
    ("googlenet-quarter", googlenet_quarter, (3, 64, 64), 1,
     ["Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d ceil_mode",
      "inception Concat", "AdaptiveAvgPool2d", "Flatten", "Dropout",
      "Linear"],
     "every width / 4, no aux heads, 10 classes, 64x64 input"),
    ("unet-tiny", TinyUNet, (3, 32, 32), 2,
     ["Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d",
      "ConvTranspose2d (stride 2)", "Upsample bilinear", "skip Concat"],
     "written here"),
    ("yolo-tiny", TinyYolo, (3, 64, 64), 2,
     ["Conv2d", "BatchNorm2d", "SiLU", "Upsample nearest", "Concat",
      "flatten(2) of the heads", "Concat on the last axis", "Sigmoid"],
     "written here"),
    ("conv-autoencoder", ConvAutoencoder, (1, 28, 28), 2,
     ["Conv2d (stride 2)", "BatchNorm2d", "ReLU",
      "ConvTranspose2d (stride 2, output_padding 1)", "Sigmoid"],
     "written here"),
    ("tcn", TCN, (4, 64), 2,
     ["Conv1d (dilations 1, 2, 4)", "BatchNorm1d",
      "causal chomp (slice of the time axis)", "ReLU", "residual Add",
      "1x1 Conv1d", "last time step (index)", "Linear"],
     "written here"),
]


# ---- weights, counts --------------------------------------------------------

def randomise_batch_norms(model, shape, gen):
    """Random scales and shifts; running statistics measured on random
    inputs in training mode (momentum None: a plain average). Biases that
    torchvision initialises to zero get small random values too: a trained
    model's are not zero, a reader that dropped them would otherwise pass,
    and the exporter would share the equal tensors through Identity
    nodes that no trained model has."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm
                                                    ._BatchNorm)]
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, COUNTED) and m.bias is not None and \
                    not m.bias.any():
                m.bias.copy_((torch.rand(m.bias.shape, generator=gen) - 0.5)
                             * 0.2)
        for m in bns:
            c = m.num_features
            m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.copy_(torch.randn(c, generator=gen) * 0.2)
            m.reset_running_stats()
            m.momentum = None
        model.train()
        for _ in range(4):
            model(torch.randn((8,) + shape, generator=gen))
        for m in bns:
            m.momentum = 0.1
    model.eval()


COUNTED = (nn.Conv1d, nn.Conv2d, nn.ConvTranspose1d, nn.ConvTranspose2d,
           nn.Linear)


def count(model, x):
    """PyTorch's parameter count, the folded count and the MACs of one
    forward pass on x, from hooks on the modules that run."""
    macs = 0
    # id of an output tensor -> (the module that made it, the tensor): the
    # tensor is kept so that its id is not reused by a later one
    produced = {}
    folded_into = set()
    standalone_bn = 0
    hooks = []

    def hook(mod, inputs, output):
        nonlocal macs, standalone_bn
        if isinstance(mod, (nn.Conv1d, nn.Conv2d)):
            k = 1
            for d in mod.kernel_size:
                k *= d
            macs += output.numel() * (mod.in_channels // mod.groups) * k
        elif isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d)):
            k = 1
            for d in mod.kernel_size:
                k *= d
            macs += inputs[0].numel() * (mod.out_channels // mod.groups) * k
        elif isinstance(mod, nn.Linear):
            macs += output.numel() * mod.in_features
        elif isinstance(mod, nn.modules.batchnorm._BatchNorm):
            src = produced.get(id(inputs[0]), (None, None))[0]
            if src is not None and src not in folded_into:
                folded_into.add(src)
            else:
                standalone_bn += 2 * mod.num_features
        if isinstance(mod, COUNTED):
            produced[id(output)] = (mod, output)

    for m in model.modules():
        if len(list(m.children())) == 0:
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    pytorch = sum(p.numel() for p in model.parameters())
    folded = standalone_bn
    for m in model.modules():
        if isinstance(m, COUNTED):
            folded += m.weight.numel()
            if m.bias is not None:
                folded += m.bias.numel()
            elif m in folded_into:
                folded += m.weight.shape[1] * m.groups \
                    if isinstance(m, (nn.ConvTranspose1d,
                                      nn.ConvTranspose2d)) \
                    else m.weight.shape[0]
    return pytorch, folded, macs


def onnx_facts(path):
    """The op types of the exported graph with their counts, and the
    parameters its weighted nodes read from initializers (a batch norm:
    its scale and shift only)."""
    model = onnx.load(path)
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        # the exporter shares equal initializers through Identity nodes
        if node.op_type == "Identity" and node.input[0] in inits:
            inits[node.output[0]] = inits[node.input[0]]
    ops = collections.Counter(n.op_type for n in model.graph.node)

    def numel(name):
        n = 1
        for d in inits[name].dims:
            n *= d
        return n

    weighted = ("Conv", "ConvTranspose", "Gemm", "MatMul")
    producer = {o: n for n in model.graph.node for o in n.output}
    readers = collections.Counter(i for n in model.graph.node
                                  for i in n.input)
    params = 0
    for node in model.graph.node:
        if node.op_type in weighted:
            params += sum(numel(i) for i in node.input[1:] if i in inits)
        elif node.op_type == "BatchNormalization":
            # a batch norm the exporter left after a Conv, Gemm or MatMul
            # (it fuses Conv's only) folds into it: nothing beyond a bias
            # the producer may lack
            src = producer.get(node.input[0])
            if src is not None and src.op_type in weighted and \
                    readers[node.input[0]] == 1:
                if len(src.input) < 3 or src.input[2] == "":
                    params += numel(node.input[1])
            else:
                params += sum(numel(i) for i in node.input[1:3])
    return dict(sorted(ops.items())), params


# ---- text twins -------------------------------------------------------------

# The models that also get a text twin: model.txt in edgefit's text format,
# written from the PyTorch module by walking its torch.fx graph (layer names
# are PyTorch's module paths, so that model.safetensors is the module's own
# state_dict), and model.safetensors, the weights the ONNX export holds. The
# twin reads the same test_data_set_0 and must reproduce it as closely as
# the ONNX model does (tests/apps/test_zoo.c).
TWINS = ("mobilenetv3-small", "unet-tiny", "conv-autoencoder", "lenet5",
         "googlenet-quarter", "efficientnet-b0")

# activations without parameters: PyTorch module or function -> text name
TWIN_ACTS = {nn.ReLU: "relu", nn.ReLU6: "relu6", nn.Hardswish: "hardswish",
             nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh",
             torch.relu: "relu", F.relu: "relu", torch.tanh: "tanh",
             torch.sigmoid: "sigmoid", F.silu: "silu",
             F.hardswish: "hardswish"}
# the layers whose act= takes a following activation (README, model format)
TWIN_ACT_HOSTS = ("conv2d", "dense", "add", "batchnorm")


def twin_size(v):
    """A kernel, stride, padding or dilation as the text writes it: one
    number, or the error a non-square one would be (none of the twins has
    one; the text format's p= also takes top,left,bottom,right)."""
    if isinstance(v, (tuple, list)):
        assert all(d == v[0] for d in v), v
        return v[0]
    return v


def twin_text(model, shape, title):
    """model.txt of model (eval mode) for per-sample input shape: one line
    per module or function of its torch.fx graph, named by the module path
    (a function by fx's node name), with an activation folded into the
    act= of the conv2d/dense/add/batchnorm it alone reads."""
    graph = torch.fx.symbolic_trace(model).graph
    mods = dict(model.named_modules())
    names = {}      # fx node -> the text name its value has
    lines = []      # [kind, args, name, inputs] per layer
    by_name = {}

    def emit(node, kind, args, inputs, name=None):
        name = name or (node.target if node.op == "call_module"
                        else node.name)
        if name in by_name and node.op == "call_module":
            # a module called twice (the UNet's pool): the calls are
            # layers of their own; one holding weights would share them,
            # which the text cannot say
            assert not list(mods[node.target].parameters()), name
            name = node.name
        assert name not in by_name and name != "input", name
        line = [kind, args, name, [names[i] for i in inputs]]
        lines.append(line)
        by_name[name] = (line, node)
        names[node] = name

    def fold_act(node, src, act):
        """act= on the layer src when it may carry one; True when done."""
        line, host = by_name.get(names[src], (None, None))
        if line is None or line[0] not in TWIN_ACT_HOSTS or \
                any(a.startswith("act=") for a in line[1]) or \
                len(host.users) != 1:
            return False
        line[1].append("act=" + act)
        names[node] = names[src]
        return True

    for node in graph.nodes:
        if node.op == "placeholder":
            names[node] = "input"
            continue
        if node.op == "output":
            continue
        args = [a for a in node.args if isinstance(a, torch.fx.Node)]
        if node.op == "call_module":
            m = mods[node.target]
            t = type(m)
            if t in TWIN_ACTS:
                if not fold_act(node, args[0], TWIN_ACTS[t]):
                    emit(node, TWIN_ACTS[t], [], args)
            elif t is nn.Conv2d:
                a = [str(m.out_channels), "k=%d" % twin_size(m.kernel_size),
                     "s=%d" % twin_size(m.stride),
                     "p=%d" % twin_size(m.padding)]
                if m.groups != 1:
                    a.append("g=%d" % m.groups)
                if twin_size(m.dilation) != 1:
                    a.append("d=%d" % twin_size(m.dilation))
                if m.bias is None:
                    a.append("bias=no")
                assert m.padding_mode == "zeros"
                emit(node, "conv2d", a, args)
            elif t is nn.ConvTranspose2d:
                a = [str(m.out_channels), "k=%d" % twin_size(m.kernel_size),
                     "s=%d" % twin_size(m.stride),
                     "p=%d" % twin_size(m.padding),
                     "op=%d" % twin_size(m.output_padding)]
                if m.groups != 1:
                    a.append("g=%d" % m.groups)
                if twin_size(m.dilation) != 1:
                    a.append("d=%d" % twin_size(m.dilation))
                assert m.bias is not None
                emit(node, "convtranspose", a, args)
            elif t is nn.BatchNorm2d:
                emit(node, "batchnorm", ["eps=%r" % m.eps], args)
            elif t is nn.Linear:
                assert m.bias is not None
                emit(node, "dense", [str(m.out_features)], args)
            elif t is nn.Hardsigmoid:
                # PyTorch's relu6(x + 3) / 6
                emit(node, "hardsigmoid",
                     ["alpha=%r" % (1 / 6), "beta=0.5"], args)
            elif t is nn.AdaptiveAvgPool2d:
                assert twin_size(m.output_size) == 1
                emit(node, "globalavgpool", [], args)
            elif t is nn.MaxPool2d:
                assert twin_size(m.dilation) == 1
                a = ["k=%d" % twin_size(m.kernel_size),
                     "s=%d" % twin_size(m.stride),
                     "p=%d" % twin_size(m.padding)]
                if m.ceil_mode:
                    a.append("ceil=yes")
                emit(node, "maxpool", a, args)
            elif t is nn.AvgPool2d:
                a = ["k=%d" % twin_size(m.kernel_size),
                     "s=%d" % twin_size(m.stride),
                     "p=%d" % twin_size(m.padding)]
                if m.ceil_mode:
                    a.append("ceil=yes")
                if not m.count_include_pad:
                    a.append("count_pad=no")
                emit(node, "avgpool", a, args)
            elif t is nn.Upsample:
                assert m.size is None and not m.align_corners
                emit(node, "resize", ["scale=%g" % m.scale_factor,
                                      "mode=" + m.mode], args)
            elif t is nn.Dropout:
                emit(node, "dropout", [], args)
            elif t is nn.Flatten:
                assert m.start_dim == 1 and m.end_dim == -1
                emit(node, "flatten", [], args)
            else:
                sys.exit("%s: %s (%s) has no text layer"
                         % (title, node.target, t.__name__))
        elif node.op == "call_function":
            f = node.target
            if f in TWIN_ACTS:
                if not fold_act(node, args[0], TWIN_ACTS[f]):
                    emit(node, TWIN_ACTS[f], [], args)
            elif getattr(f, "__name__", "") == "stochastic_depth":
                # torchvision's StochasticDepth: the identity in eval mode
                assert not model.training
                names[node] = names[args[0]]
            elif f is torch.flatten:
                assert node.args[1:] == (1,) and not node.kwargs
                emit(node, "flatten", [], args)
            elif f in (operator.add, operator.iadd, torch.add):
                assert len(args) == 2 and not node.kwargs
                emit(node, "add", [], args)
            elif f in (operator.mul, torch.mul):
                assert len(args) == 2 and not node.kwargs
                emit(node, "mul", [], args)
            elif f is torch.cat:
                dim = node.args[1] if len(node.args) > 1 \
                    else node.kwargs.get("dim", 0)
                assert dim == 1
                emit(node, "concat", [], list(node.args[0]))
            else:
                sys.exit("%s: function %s has no text layer" % (title, f))
        else:
            sys.exit("%s: fx node %s (%s) has no text layer"
                     % (title, node.name, node.op))

    out = ["# %s: the text twin of model.onnx, written by" % title,
           "# scripts/make-zoo-fixtures.py from the same PyTorch module;",
           "# its weights are model.safetensors (the module's state_dict).",
           "name %s" % title,
           "input %s" % "x".join(map(str, shape))]
    prev = "input"
    for kind, a, name, inputs in lines:
        words = [kind] + a
        if inputs != [prev]:
            words.append("in=" + ",".join(inputs))
        words.append("name=" + name)
        out.append(" ".join(words))
        prev = name
    return "\n".join(out) + "\n"


def write_twin(folder, name, model, shape):
    """model.txt and model.safetensors of a TWINS model beside its ONNX."""
    with open(os.path.join(folder, "model.txt"), "w") as f:
        f.write(twin_text(model, shape, name))
    # num_batches_tracked is a counter, no weight (edgefit skips it)
    state = {k: v.detach().to(torch.float32).contiguous()
             for k, v in model.state_dict().items()
             if not k.endswith(".num_batches_tracked")}
    save(os.path.join(folder, "model.safetensors"), state,
         {"format": "pt", "model": name})


# ---- files ------------------------------------------------------------------

def model_fixtures():
    """scripts/make-model-fixtures.py as a module: its networks (the MLPerf
    Tiny presets) and its writer of ONNX TensorProto files, which the test
    data here shares byte for byte."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    spec = importlib.util.spec_from_file_location(
        "make_model_fixtures", os.path.join(here, "make-model-fixtures.py"))
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    return fixtures


def tensor_proto(name, t):
    """An ONNX TensorProto of a float32 tensor, as make-model-fixtures.py
    writes it."""
    return model_fixtures().tensor_proto(name, t)


# The models that also get data of their own in <model>/data/ (the user's
# data, as edgefit-sweep and edgefit-train read it with --data and
# --test-data).
DATA_SETS = ("lenet5",)
DATA_PER_CLASS = 8


def write_data_sets(folder, model, shape, index):
    """<model>/data/: NumPy files of labelled samples and a reference set.

      train_inputs.npy, test_inputs.npy  float32 [16, C, H, W] random inputs
      train_labels.npy, test_labels.npy  int64 [16] PyTorch's own top-1 for
                                         them, except the last 4 test labels,
                                         moved to the next class on purpose:
                                         the network's accuracy on the test
                                         file is exactly 12/16 = 0.75
      test_data_set_0/input_0.npy        the test inputs again
      test_data_set_0/output_0.npy       PyTorch's outputs for them (float64,
                                         rounded once, as test_data_set_0)

    A network of random weights answers one or two classes to random
    inputs (LeNet-5 here: 2 and 9), so the samples are picked from 4000:
    DATA_PER_CLASS of each of its two most frequent answers for each file,
    alternating, each with a margin of at least 1e-3 between its two
    largest outputs, so that a float32 run gives the same top-1."""
    import numpy as np
    gen = torch.Generator().manual_seed(3700 + index)
    x = torch.randn((4000,) + shape, generator=gen)
    with torch.no_grad():
        ref = copy.deepcopy(model).double()(x.double()).float()
    top = ref.double().sort(1, descending=True).values
    margin = top[:, 0] - top[:, 1]
    pred = ref.argmax(1)
    classes = torch.bincount(pred).argsort(descending=True)[:2].tolist()
    picks = {c: [i for i in range(len(x)) if pred[i] == c and
                 margin[i] >= 1e-3] for c in classes}
    for c in classes:
        if len(picks[c]) < 2 * DATA_PER_CLASS:
            sys.exit("%s: only %d samples of class %d for the data sets"
                     % (folder, len(picks[c]), c))
    data = os.path.join(folder, "data")
    sets = os.path.join(data, "test_data_set_0")
    os.makedirs(sets, exist_ok=True)
    for split, first in (("train", 0), ("test", DATA_PER_CLASS)):
        rows = [picks[classes[k % 2]][first + k // 2]
                for k in range(2 * DATA_PER_CLASS)]
        xs = x[rows].numpy().astype(np.float32)
        labels = pred[rows].numpy().astype(np.int64)
        if split == "test":
            labels[-4:] = (labels[-4:] + 1) % ref.shape[1]
            np.save(os.path.join(sets, "input_0.npy"), xs)
            np.save(os.path.join(sets, "output_0.npy"),
                    ref[rows].numpy().astype(np.float32))
        np.save(os.path.join(data, split + "_inputs.npy"), xs)
        np.save(os.path.join(data, split + "_labels.npy"), labels)


def make(outdir, index, name, build, shape, batch, constructs, reduced):
    torch.manual_seed(1700 + index)
    gen = torch.Generator().manual_seed(2700 + index)
    model = build()
    randomise_batch_norms(model, shape, gen)
    x = torch.randn((batch,) + shape, generator=gen)
    with torch.no_grad():
        y = model(x)
        # The reference is the same network in float64, rounded once: the
        # float32 forward pass is itself off by up to 2.5e-5 of the largest
        # output here (GoogLeNet; ShuffleNet 1.3e-5), a quarter of the
        # 1e-4 an implementation is allowed, and its rounding is no truth.
        ref = copy.deepcopy(model).double()(x.double()).float()
    assert torch.isfinite(ref).all(), name
    assert (ref - y).abs().max() <= 1e-4 * ref.abs().max(), name
    y = ref
    if batch > 1:
        # samples that answer alike could not tell a working network from
        # one that ignores its input
        assert (y[0] - y[1]).abs().max() > 1e-3 * y.abs().max(), name
    pytorch, folded, macs = count(model, x)

    folder = os.path.join(outdir, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, x, path, opset_version=OPSET,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      do_constant_folding=True)
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(tensor_proto("input", x))
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(tensor_proto("output", y))
    if name in TWINS:
        write_twin(folder, name, model, shape)
    if name in DATA_SETS:
        write_data_sets(folder, model, shape, index)
    ops, onnx_params = onnx_facts(path)
    if onnx_params != folded:
        sys.exit("%s: the graph holds %d parameters, the folded count is %d"
                 % (name, onnx_params, folded))
    size = os.path.getsize(path)
    print("%-18s %8d params (%d folded) %11d MACs  %7.2f MB  %s -> %s"
          % (name, pytorch, folded, macs, size / 2**20,
             "x".join(map(str, x.shape)), "x".join(map(str, y.shape))),
          file=sys.stderr)
    return {
        "name": name,
        "model": name + "/model.onnx",
        "input_shape": list(shape),
        "batch": batch,
        "output_shape": list(y.shape[1:]),
        "parameters_pytorch": pytorch,
        "parameters": folded,
        "macs": macs,
        "reduced": reduced,
        "constructs": constructs,
        "onnx_ops": ops,
    }


def preset_entries(outdir):
    """The four MLPerf Tiny presets whose fixtures make-model-fixtures.py
    writes (tests/data/models, beside the zoo): counted here by the same
    hooks from that script's own networks, not exported again. edgefit
    imports them today, so they keep the manifest's supported path
    exercised and check the hooks' conventions against edgefit's."""
    fixtures = model_fixtures()
    entries = []
    for name, cls, shape in fixtures.MODELS:
        torch.manual_seed(0)
        model = cls()
        model.eval()
        x = torch.randn((fixtures.BATCH,) + shape)
        with torch.no_grad():
            y = model(x)
        pytorch, folded, macs = count(model, x)
        rel = os.path.join("..", "models", name, "model.onnx")
        ops, onnx_params = onnx_facts(os.path.join(outdir, rel))
        if onnx_params != folded:
            sys.exit("%s: the graph holds %d parameters, the folded count "
                     "is %d" % (name, onnx_params, folded))
        entries.append({
            "name": name,
            "model": rel,
            "input_shape": list(shape),
            "batch": fixtures.BATCH,
            "output_shape": list(y.shape[1:]),
            "parameters_pytorch": pytorch,
            "parameters": folded,
            "macs": macs,
            "reduced": "MLPerf Tiny preset, written by make-model-fixtures.py",
            "constructs": [],
            "onnx_ops": ops,
        })
    return entries


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/zoo"
    torch.set_num_threads(1)
    entries = [make(outdir, i, *m) for i, m in enumerate(MODELS)]
    entries += preset_entries(outdir)
    manifest = {
        "generator": "scripts/make-zoo-fixtures.py",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "opset": OPSET,
        "conventions": "parameters: batch norms folded (edgefit's count); "
                       "parameters_pytorch: sum of p.numel(); macs at "
                       "batch: Linear out_elements*in, Conv "
                       "out_elements*(in_c/g)*prod(k), ConvTranspose "
                       "in_elements*(out_c/g)*prod(k), others 0",
        "models": entries,
    }
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
