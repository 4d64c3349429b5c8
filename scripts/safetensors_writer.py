"""A safetensors writer for the fixture scripts (make-safetensors-fixture.py,
make-model-fixtures.py). Debian ships no Python safetensors module, so the
format is written here by hand from its specification (an independent
second implementation of libartifacts' reader): an 8-byte little-endian
header length N, N bytes of JSON padded with spaces to a multiple of 8,
then the tensors' bytes, little-endian and row-major. Like the reference
writer, tensors are laid out by element size (largest first), then by
name, and "__metadata__" comes first in the header."""
import json
import struct

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
    """Write the dict name -> torch tensor to path."""
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
