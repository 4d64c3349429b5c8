#!/usr/bin/python3
"""Write tests/data/batchnorm-torch.txt: PyTorch's batch norm in training
mode on fixed inputs, the truth the trainer's batch norm is held to
(tests/profile/test_exec_ops.c, the operator; tests/profile/test_train.c,
the running statistics through the trainer). Two cases: nn.BatchNorm2d
over 3 channels of 2 x 3 positions in a batch of 4 (eps 1e-5), and
nn.BatchNorm1d over 4 features in a batch of 5 (eps 1e-3, Keras' value).
Each gives, from a fresh module (running mean 0, variance 1, momentum
0.1) with the weight and bias below: the output y of batch x, the
gradients dx, dgamma, dbeta of sum(y * g), the running statistics after
x (run1) and after a second batch x2 (run2, with the unbiased variance,
as PyTorch keeps it). Inputs are formulas, not random draws, so the file
is the same on every run (numbers are float32, printed with the shortest
decimal that reads back to the same float).

Usage: scripts/make-batchnorm-fixture.py [OUT_FILE]   (Debian:
python3-torch, python3-numpy)
"""
import math
import os
import sys

import numpy as np
import torch


def f32(values):
    return np.asarray(values, dtype=np.float32)


def text(a):
    return " ".join(repr(float(v)) for v in np.asarray(a, np.float32).ravel())


def case(name, module, shape, eps):
    n = int(np.prod(shape))
    c = shape[1]
    x = f32([math.sin(0.7 * i + 0.3) * (1 + (i % 5) * 0.25) for i in range(n)])
    x2 = f32([math.cos(0.45 * i - 0.2) * (0.5 + (i % 3) * 0.5) + 0.25
              for i in range(n)])
    g = f32([math.cos(0.37 * i) for i in range(n)])
    gamma = f32([1.5, 0.5, -0.75, 1.25][:c])
    beta = f32([0.1, -0.2, 0.3, 0.0][:c])
    bn = module(c, eps=eps, momentum=0.1)
    with torch.no_grad():
        bn.weight.copy_(torch.from_numpy(gamma))
        bn.bias.copy_(torch.from_numpy(beta))
    bn.train()
    xt = torch.from_numpy(x.reshape(shape)).requires_grad_(True)
    y = bn(xt)
    (y * torch.from_numpy(g.reshape(shape))).sum().backward()
    run1 = (bn.running_mean.detach().numpy().copy(),
            bn.running_var.detach().numpy().copy())
    bn(torch.from_numpy(x2.reshape(shape)))
    run2 = (bn.running_mean.detach().numpy(), bn.running_var.detach().numpy())
    hw = n // (shape[0] * c)
    lines = ["case %s batch=%d channels=%d hw=%d eps=%r"
             % (name, shape[0], c, hw, eps)]
    for key, val in [("x", x), ("x2", x2), ("g", g), ("gamma", gamma),
                     ("beta", beta), ("y", y.detach().numpy()),
                     ("dx", xt.grad.numpy()),
                     ("dgamma", bn.weight.grad.numpy()),
                     ("dbeta", bn.bias.grad.numpy()),
                     ("run1_mean", run1[0]), ("run1_var", run1[1]),
                     ("run2_mean", run2[0]), ("run2_var", run2[1])]:
        lines.append("%s %s" % (key, text(val)))
    return lines


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = (sys.argv[1] if len(sys.argv) > 1 else
           os.path.join(here, "..", "tests", "data", "batchnorm-torch.txt"))
    torch.set_num_threads(1)
    lines = ["# PyTorch's batch norm in training mode "
             "(scripts/make-batchnorm-fixture.py, PyTorch %s)"
             % torch.__version__.split("+")[0]]
    lines += case("bn2d", torch.nn.BatchNorm2d, (4, 3, 2, 3), 1e-5)
    lines += case("bn1d", torch.nn.BatchNorm1d, (5, 4), 1e-3)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
