#!/usr/bin/env python3
"""Reference training for the performance comparison of edgefit-train:
the original hardware simulation's MLP written in numpy.

784-64-10, relu then softmax with cross-entropy, plain SGD (alpha 0.1),
batch 32, 5 epochs, seed 42, on Fashion-MNIST read from the IDX .gz files
with gzip and numpy. Initialisation as edgefit's executor does it (uniform:
He bounds sqrt(6/fan_in) before a relu, Glorot bounds sqrt(6/(fan_in +
fan_out)) otherwise, biases within 1/sqrt(fan_in)), drawn here from numpy's
generator; a new shuffle every epoch; the last partial batch is dropped.

Prints one machine-readable line per epoch (the seconds cover the epoch's
training steps, shuffling and batch gathering included, not the test
evaluation) and a final line:
    epoch 1 seconds 0.149 loss 0.5512 train_accuracy 0.8061 test_accuracy 0.8412
    final epochs 5 mean_epoch_seconds 0.150 test_accuracy 0.8580

Usage: train-numpy.py [--data DIR] [--epochs N] [--threads N]
The BLAS thread count is fixed before numpy is imported
(OPENBLAS_NUM_THREADS, default 1).
"""
import os
import sys

import refmlp


OPTS = refmlp.parse_args(sys.argv)
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(OPTS["threads"])

import time  # noqa: E402

import numpy as np  # noqa: E402


def init(rng, sizes):
    params = []
    for i in range(len(sizes) - 1):
        fan_in, fan_out = sizes[i], sizes[i + 1]
        last = i == len(sizes) - 2
        a = np.sqrt(6.0 / (fan_in + fan_out)) if last else np.sqrt(6.0 / fan_in)
        w = rng.uniform(-a, a, (fan_in, fan_out)).astype(np.float32)
        b = rng.uniform(-1 / np.sqrt(fan_in), 1 / np.sqrt(fan_in),
                        fan_out).astype(np.float32)
        params.append((w, b))
    return params


def forward(params, x):
    (w1, b1), (w2, b2) = params
    h = np.maximum(x @ w1 + b1, 0)
    z = h @ w2 + b2
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return h, e / e.sum(axis=1, keepdims=True)


def evaluate(params, x, y):
    _, p = forward(params, x)
    return float((p.argmax(axis=1) == y).mean())


def main():
    xtr, ytr = refmlp.load(OPTS["data"], "train")
    xte, yte = refmlp.load(OPTS["data"], "t10k")
    rng = np.random.default_rng(OPTS["seed"])
    params = init(rng, [784, 64, 10])
    (w1, b1), (w2, b2) = params
    batch, alpha = OPTS["batch"], np.float32(OPTS["alpha"])
    steps = len(xtr) // batch
    seconds = []
    for epoch in range(1, OPTS["epochs"] + 1):
        t0 = time.perf_counter()
        order = rng.permutation(len(xtr))
        loss_sum, correct = 0.0, 0
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch]
            x, y = xtr[idx], ytr[idx]
            h, p = forward(((w1, b1), (w2, b2)), x)
            loss_sum += float(-np.log(p[np.arange(batch), y] + 1e-12).mean())
            correct += int((p.argmax(axis=1) == y).sum())
            # d(mean cross-entropy)/d(logits) = (p - onehot) / batch
            dz = p
            dz[np.arange(batch), y] -= 1
            dz /= batch
            dh = (dz @ w2.T) * (h > 0)
            w2 -= alpha * (h.T @ dz)
            b2 -= alpha * dz.sum(axis=0)
            w1 -= alpha * (x.T @ dh)
            b1 -= alpha * dh.sum(axis=0)
        dt = time.perf_counter() - t0
        seconds.append(dt)
        acc = evaluate(((w1, b1), (w2, b2)), xte, yte)
        refmlp.print_epoch(epoch, dt, loss_sum / steps,
                           correct / (steps * batch), acc)
    refmlp.print_final(seconds, acc)


if __name__ == "__main__":
    main()
