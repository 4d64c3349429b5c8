#!/usr/bin/env python3
"""Write tests/artifacts/data/fixture.safetensors, a small safetensors file
made by PyTorch's tensors, for libartifacts' compatibility test.

Debian ships no Python safetensors module, so the format is written here by
hand from its specification (an independent second implementation): an
8-byte little-endian header length N, N bytes of JSON padded with spaces to
a multiple of 8, then the tensors' bytes, little-endian and row-major.
Like the reference writer, tensors are laid out by element size (largest
first), then by name, and "__metadata__" comes first in the header.

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
import json
import struct
import sys

import numpy as np
import torch

DTYPES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.float64: "F64", torch.int8: "I8", torch.uint8: "U8",
    torch.int32: "I32", torch.int64: "I64",
}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        # numpy has no bfloat16: take the same 16 bits as int16.
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()


def save(path, tensors, metadata):
    order = sorted(tensors.items(),
                   key=lambda kv: (-kv[1].element_size(), kv[0]))
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name, t in order:
        b = tensor_bytes(t)
        assert len(b) == t.numel() * t.element_size()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


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
