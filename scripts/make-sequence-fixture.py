#!/usr/bin/python3
"""Write tests/data/sequence-torch.txt: PyTorch's numbers for the
per-position layers of a keyword transformer, the truth
tests/profile/test_sequence_torch.c holds the executor and libkernels'
layer norm to.

Case "model": a batch of 2 sequences of 5 steps of 8 features through
nn.Linear(8, 6) with nn.GELU() (the erf form), a class token prepended
(torch.cat of cls_token [1, 1, 6] expanded over the batch), a position
embedding added ([1, 6, 6]), nn.LayerNorm(6) and a softmax over the steps
(dim 1 of N x T x D); written as the text model of the "text" lines.
Case "layernorm": nn.LayerNorm(8, eps=1e-5) on 2 x 5 x 8 values far from
zero (a mean of 3), its output y and the gradients dx, dgamma, dbeta of
sum(y * g).

Weights and inputs come from torch.manual_seed(20) (random, fixed);
numbers are float32 printed with the shortest decimal that reads back to
the same float.

Usage: scripts/make-sequence-fixture.py [OUT_FILE]   (Debian:
python3-torch, python3-numpy)
"""
import os
import sys

import numpy as np
import torch


def text(a):
    return " ".join(repr(float(v)) for v in
                    np.asarray(a.detach() if torch.is_tensor(a) else a,
                               np.float32).ravel())


def model_case(lines):
    fc = torch.nn.Linear(8, 6)
    cls = torch.randn(1, 1, 6) * 0.5
    pos = torch.randn(1, 6, 6) * 0.5
    ln = torch.nn.LayerNorm(6)
    with torch.no_grad():
        ln.weight.copy_(1 + 0.5 * torch.randn(6))
        ln.bias.copy_(0.5 * torch.randn(6))
    x = torch.randn(2, 5, 8)
    h = torch.nn.functional.gelu(fc(x))
    h = torch.cat((cls.expand(2, -1, -1), h), dim=1) + pos
    y = torch.softmax(ln(h), dim=1)
    lines.append("case model batch=2")
    for t in ["input 5x8", "dense 6 act=gelu_erf name=fc",
              "clstoken name=cls", "posembed name=pos", "layernorm name=ln",
              "softmax axis=0 name=sm"]:
        lines.append("text " + t)
    for key, val in [("x", x), ("fc.weight", fc.weight),
                     ("fc.bias", fc.bias), ("cls.weight", cls),
                     ("pos.weight", pos), ("ln.weight", ln.weight),
                     ("ln.bias", ln.bias), ("y", y)]:
        lines.append("%s %s" % (key, text(val)))


def layernorm_case(lines):
    ln = torch.nn.LayerNorm(8, eps=1e-5)
    with torch.no_grad():
        ln.weight.copy_(1 + 0.5 * torch.randn(8))
        ln.bias.copy_(0.5 * torch.randn(8))
    x = (3 + torch.randn(2, 5, 8)).requires_grad_(True)
    g = torch.randn(2, 5, 8)
    y = ln(x)
    (y * g).sum().backward()
    lines.append("case layernorm rows=10 cols=8 eps=1e-05")
    for key, val in [("x", x), ("gamma", ln.weight), ("beta", ln.bias),
                     ("g", g), ("y", y), ("dx", x.grad),
                     ("dgamma", ln.weight.grad), ("dbeta", ln.bias.grad)]:
        lines.append("%s %s" % (key, text(val)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = (sys.argv[1] if len(sys.argv) > 1 else
           os.path.join(here, "..", "tests", "data", "sequence-torch.txt"))
    torch.manual_seed(20)
    lines = ["# PyTorch's per-position transformer layers "
             "(scripts/make-sequence-fixture.py, PyTorch %s)"
             % torch.__version__]
    model_case(lines)
    layernorm_case(lines)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
