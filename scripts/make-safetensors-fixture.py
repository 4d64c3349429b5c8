#!/usr/bin/env python3
"""Write tests/artifacts/data/fixture.safetensors, a small safetensors file
made by PyTorch's tensors, for libartifacts' compatibility test.

The format is written by safetensors_writer.py, by hand from its
specification (Debian ships no Python safetensors module).

Expected contents (checked by tests/artifacts/test_safetensors.c):
  dense1.weight  F32  [3, 4]  (0, 1, ..., 11) / 8 - 0.5
  dense1.bias    F32  [3]     0.25, -1.5, 3.0
  half           F16  [2, 2]  1.0, -2.0, 0.5, 65504.0 (bits 3c00 c000 3800 7bff)
  brain          BF16 [3]     1.0, -0.5, 3.140625   (bits 3f80 bf00 4049)
  counts         I64  [2]     -1, 2**40
  pi             F64  []      3.141592653589793 (a scalar)
  bytes          U8   [5]     0, 1, 2, 3, 250
  signed         I8   [2, 1]  -128, 127
  ints           I32  [3]     -7, 0, 2147483647
  empty          F32  [0, 3]  no elements
metadata: format = pt, source = make-safetensors-fixture.py

Run with Debian's python3 (python3-torch, python3-numpy):
    python3 scripts/make-safetensors-fixture.py tests/artifacts/data/fixture.safetensors
"""
import sys

import numpy as np
import torch

from safetensors_writer import save


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else \
        "tests/artifacts/data/fixture.safetensors"
    tensors = {
        "dense1.weight": torch.arange(12, dtype=torch.float32).reshape(3, 4)
        / 8 - 0.5,
        "dense1.bias": torch.tensor([0.25, -1.5, 3.0], dtype=torch.float32),
        "half": torch.tensor([[1.0, -2.0], [0.5, 65504.0]],
                             dtype=torch.float16),
        "brain": torch.tensor([1.0, -0.5, 3.140625], dtype=torch.bfloat16),
        "counts": torch.tensor([-1, 2 ** 40], dtype=torch.int64),
        "pi": torch.tensor(np.pi, dtype=torch.float64),
        "bytes": torch.tensor([0, 1, 2, 3, 250], dtype=torch.uint8),
        "signed": torch.tensor([[-128], [127]], dtype=torch.int8),
        "ints": torch.tensor([-7, 0, 2 ** 31 - 1], dtype=torch.int32),
        "empty": torch.zeros((0, 3), dtype=torch.float32),
    }
    save(path, tensors, {"format": "pt",
                         "source": "make-safetensors-fixture.py"})


if __name__ == "__main__":
    main()
