#!/usr/bin/python3
"""Write tests/apps/data/validate/: a small CNN in the text format, its
weights as safetensors (PyTorch's names and layouts) and two reference
sets computed here with NumPy in float64, for edgefit-validate's tests.

  cnn.txt             input 2x6x6, conv2d 3 k=3 p=1 relu, maxpool 2,
                      flatten, dense 4 softmax
  cnn.safetensors     conv1.weight [3, 2, 3, 3], conv1.bias [3],
                      dense1.weight [4, 27], dense1.bias [4] (F32)
  test_data_set_0/    input_0.npy <f4 (5, 2, 6, 6), output_0.npy <f4 (5, 4)
  test_data_set_1/    input_0.npy <f8 (3, 2, 6, 6), output_0.npy <f8 (3, 4)

The reference is an independent implementation (direct loops over the
convolution's window, NumPy's max and exp), so the executor's fp32 result
must agree with it to float32 rounding.

Run with Debian's python3-numpy and python3-torch (for the shared
safetensors writer, scripts/safetensors_writer.py):
    python3 scripts/make-validate-fixtures.py tests/apps/data/validate
"""
import os
import sys

import numpy as np
import torch

from safetensors_writer import save

MODEL = """name cnn
input 2x6x6
conv2d 3 k=3 p=1 act=relu
maxpool k=2
flatten
dense 4 act=softmax
"""


def forward(x, w1, b1, w2, b2):
    """float64 reference: conv (pad 1) + relu, 2x2 max pool, dense,
    softmax."""
    n = x.shape[0]
    xp = np.zeros((n, 2, 8, 8))
    xp[:, :, 1:7, 1:7] = x
    conv = np.zeros((n, 3, 6, 6))
    for o in range(3):
        for i in range(6):
            for j in range(6):
                win = xp[:, :, i:i + 3, j:j + 3]
                conv[:, o, i, j] = (win * w1[o]).sum(axis=(1, 2, 3)) + b1[o]
    conv = np.maximum(conv, 0)
    pool = conv.reshape(n, 3, 3, 2, 3, 2).max(axis=(3, 5))
    z = pool.reshape(n, 27) @ w2.T + b2
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "tests/apps/data/validate"
    rng = np.random.default_rng(20240611)
    w1 = rng.uniform(-0.5, 0.5, (3, 2, 3, 3)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, 3).astype(np.float32)
    w2 = rng.uniform(-0.5, 0.5, (4, 27)).astype(np.float32)
    b2 = rng.uniform(-0.1, 0.1, 4).astype(np.float32)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "cnn.txt"), "w") as f:
        f.write(MODEL)
    save(os.path.join(folder, "cnn.safetensors"),
         {"conv1.weight": torch.from_numpy(w1),
          "conv1.bias": torch.from_numpy(b1),
          "dense1.weight": torch.from_numpy(w2),
          "dense1.bias": torch.from_numpy(b2)},
         {"source": "make-validate-fixtures.py"})
    for k, (n, dtype) in enumerate([(5, np.float32), (3, np.float64)]):
        d = os.path.join(folder, "test_data_set_%d" % k)
        os.makedirs(d, exist_ok=True)
        x = rng.uniform(-1, 1, (n, 2, 6, 6)).astype(np.float32)
        y = forward(x.astype(np.float64), w1.astype(np.float64),
                    b1.astype(np.float64), w2.astype(np.float64),
                    b2.astype(np.float64))
        np.save(os.path.join(d, "input_0.npy"), x.astype(dtype))
        np.save(os.path.join(d, "output_0.npy"), y.astype(dtype))


if __name__ == "__main__":
    main()
