#!/usr/bin/env python3
"""Reference training for the performance comparison of edgefit-train:
the same MLP as scripts/train-numpy.py, in PyTorch.

784-64-10 (nn.Linear, relu), softmax with cross-entropy
(F.cross_entropy, mean over the batch), SGD (torch.optim.SGD, alpha 0.1,
no momentum), batch 32, 5 epochs, seed 42, on Fashion-MNIST read from the
IDX .gz files with gzip and numpy. Initialisation as edgefit's executor does
it (uniform: He bounds before a relu, Glorot bounds otherwise, biases within
1/sqrt(fan_in)); a new shuffle every epoch; the last partial batch is
dropped. torch.set_num_threads(--threads, default 1).

Prints the same lines as train-numpy.py:
    epoch 1 seconds 0.258 loss 0.5512 train_accuracy 0.8061 test_accuracy 0.8412
    final epochs 5 mean_epoch_seconds 0.258 test_accuracy 0.8600

Usage: train-torch.py [--data DIR] [--epochs N] [--threads N]
"""
import math
import sys
import time

import torch
import torch.nn.functional as F

import refmlp


def main():
    opts = refmlp.parse_args(sys.argv)
    torch.set_num_threads(opts["threads"])
    torch.manual_seed(opts["seed"])
    xtr, ytr = (torch.from_numpy(a)
                for a in refmlp.load(opts["data"], "train"))
    xte, yte = (torch.from_numpy(a)
                for a in refmlp.load(opts["data"], "t10k"))
    model = torch.nn.Sequential(torch.nn.Linear(784, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10))
    with torch.no_grad():
        for layer, relu in ((model[0], True), (model[2], False)):
            fan_out, fan_in = layer.weight.shape
            a = math.sqrt(6.0 / fan_in) if relu else \
                math.sqrt(6.0 / (fan_in + fan_out))
            layer.weight.uniform_(-a, a)
            layer.bias.uniform_(-1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
    opt = torch.optim.SGD(model.parameters(), lr=opts["alpha"])
    batch = opts["batch"]
    steps = len(xtr) // batch
    gen = torch.Generator().manual_seed(opts["seed"])
    seconds = []
    for epoch in range(1, opts["epochs"] + 1):
        t0 = time.perf_counter()
        order = torch.randperm(len(xtr), generator=gen)
        loss_sum, correct = 0.0, 0
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch]
            x, y = xtr[idx], ytr[idx]
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            correct += int((logits.argmax(dim=1) == y).sum())
        dt = time.perf_counter() - t0
        seconds.append(dt)
        with torch.no_grad():
            acc = float((model(xte).argmax(dim=1) == yte).float().mean())
        refmlp.print_epoch(epoch, dt, loss_sum / steps,
                           correct / (steps * batch), acc)
    refmlp.print_final(seconds, acc)


if __name__ == "__main__":
    main()
