#!/usr/bin/python3
"""The sequence presets' PyTorch twins (tests/data/seq-presets/kwt and
lstm-kws): the module each preset's comment describes, random weights from
a fixed generator, saved as weights.safetensors under the preset's layer
names, and PyTorch's output (the softmax of the class scores, as the
presets end in act=softmax) for a fixed input of batch 2 in
test_data_set_0 (input_0.pb, output_0.pb). edgefit-validate runs the
preset with these weights against PyTorch's output. The keyword
transformer's twin is exported to ONNX too (kwt/model.onnx, opset 13, the
batch dynamic): the preset with weights.safetensors must reproduce that
ONNX model run through edgefit's importer (tests/apps/test_rnn_models.c).

    /usr/bin/python3 scripts/make-seq-preset-fixtures.py tests/data/seq-presets
"""
import os
import shutil
import sys

import numpy as np
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_writer  # noqa: E402


class Block(torch.nn.Module):
    """Pre-norm: x + attn(ln1(x)), then + fc2(gelu(fc1(ln2(.))))."""

    def __init__(self, d, heads, mlp):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, mlp)
        self.fc2 = torch.nn.Linear(mlp, d)

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class KWT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(40, 64)
        self.cls = torch.nn.Parameter(torch.randn(1, 1, 64) * 0.5)
        self.pos = torch.nn.Parameter(torch.randn(1, 99, 64) * 0.5)
        self.blocks = torch.nn.ModuleList(Block(64, 1, 256)
                                          for _ in range(4))
        self.head_ln = torch.nn.LayerNorm(64)
        self.head = torch.nn.Linear(64, 12)

    def forward(self, x):
        x = self.embed(x)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), 1)
        x = x + self.pos
        for b in self.blocks:
            x = b(x)
        return torch.softmax(self.head(self.head_ln(x[:, 0])), 1)


class LstmKws(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = torch.nn.LSTM(10, 64, batch_first=True)
        self.lstm2 = torch.nn.LSTM(64, 64, batch_first=True)
        self.fc = torch.nn.Linear(64, 12)

    def forward(self, x):
        y, _ = self.lstm1(x)
        _, (h, _) = self.lstm2(y)
        return torch.softmax(self.fc(h[0]), 1)


def kwt_names(sd):
    """PyTorch's names to the preset's layer names."""
    out = {}
    for k, v in sd.items():
        if k == "cls":
            out["cls.weight"] = v
        elif k == "pos":
            out["pos.weight"] = v
        elif k.startswith("blocks."):
            _, i, rest = k.split(".", 2)
            layer, _, suffix = rest.partition(".")
            out["b%d_%s.%s" % (int(i) + 1, layer, suffix)] = v
        else:
            out[k] = v
    return out


def save_pb(a, name, path):
    p = numpy_helper.from_array(a.astype(np.float32), name)
    with open(path, "wb") as f:
        f.write(p.SerializeToString())


def make(out_dir, name, net, shape, names, seed, export=False):
    torch.manual_seed(seed)
    for p in net.parameters():
        # weights of the order of PyTorch's initialisation, biases and
        # norms' parameters away from their 0 and 1
        torch.nn.init.uniform_(p, -0.3, 0.3)
    net = net.eval()
    x = torch.randn(2, *shape)
    with torch.no_grad():
        y = net(x)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    save_pb(x.numpy(), "input", os.path.join(d, "test_data_set_0",
                                             "input_0.pb"))
    save_pb(y.numpy(), "output", os.path.join(d, "test_data_set_0",
                                              "output_0.pb"))
    tensors = {k: v.detach().clone().contiguous()
               for k, v in names(net.state_dict()).items()}
    safetensors_writer.save(os.path.join(d, "weights.safetensors"),
                            tensors, {"format": "pt"})
    if export:
        torch.onnx.export(net, x, os.path.join(d, "model.onnx"),
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"},
                                        "output": {0: "batch"}},
                          opset_version=13, do_constant_folding=True)
    n = sum(p.numel() for p in net.parameters())
    print("%s: %d parameters, outputs %s" % (name, n, y.numpy().round(4)))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/seq-presets"
    make(out, "kwt", KWT(), (98, 40), kwt_names, 20, export=True)
    make(out, "lstm-kws", LstmKws(), (49, 10), lambda sd: dict(sd), 21)


if __name__ == "__main__":
    main()
