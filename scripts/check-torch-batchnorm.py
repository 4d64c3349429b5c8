#!/usr/bin/python3
"""Check that PyTorch loads what edgefit-train saves for a residual model
with batch norms (two folded into their convs, one standalone) and
computes what edgefit computed: trains it with edgefit-train for two
epochs on a slice of Fashion-MNIST, loads weights.safetensors into the
same network written with torch.nn (load_state_dict, strict), and compares
the test accuracy and loss of PyTorch's eval() with edgefit's. Prints both
and exits 1 when they differ (loss beyond 1e-5 relative). A manual check:
the test suite holds the saved file to libmemest's loader
(tests/apps/test_train.c), which folds as PyTorch's eval() computes.

Usage: scripts/check-torch-batchnorm.py [BUILD_DIR] [DATA_DIR]
(Debian: python3-torch, python3-numpy; Fashion-MNIST's IDX files)
"""
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL = """input 1x28x28
conv2d 8 k=3 s=2 p=1 bias=no name=c1
batchnorm act=relu name=bn1
conv2d 8 k=3 p=1 name=c2
batchnorm name=bn2
add in=bn1,bn2 act=relu name=res
batchnorm name=bn3
globalavgpool
flatten
dense 10 act=softmax name=fc
"""


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(8)
        self.bn3 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        a = F.relu(self.bn1(self.c1(x)))
        r = self.bn3(F.relu(a + self.bn2(self.c2(a))))
        return self.fc(r.mean((2, 3)))


def safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        a = np.frombuffer(b[8 + n + s:8 + n + e], dtype=np.float32)
        out[k] = torch.from_numpy(a.reshape(v["shape"]).copy())
    return out


def idx(folder, name):
    p = os.path.join(folder, name)
    return (gzip.open(p + ".gz") if os.path.exists(p + ".gz")
            else open(p, "rb")).read()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    data = (sys.argv[2] if len(sys.argv) > 2
            else "/usr/share/datasets/fashion-mnist")
    tests = 200
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "residual-bn.model")
        with open(model, "w") as f:
            f.write(MODEL)
        out = subprocess.run(
            [os.path.join(build, "apps", "train", "edgefit-train"), "--model",
             model, "--data", data, "--epochs", "2", "--train-limit", "512",
             "--test-limit", str(tests), "--optimizer", "adam", "--alpha",
             "0.01", "--out", tmp, "--format", "json", "--quiet"],
            check=True, capture_output=True, text=True).stdout
        res = json.loads(out)["results"]
        net = Net()
        net.load_state_dict(safetensors(os.path.join(tmp,
                                                     "weights.safetensors")),
                            strict=False)
        missing = [k for k in net.state_dict()
                   if not k.endswith("num_batches_tracked")
                   and k not in safetensors(os.path.join(
                       tmp, "weights.safetensors"))]
    if missing:
        print("not in the file:", missing)
        return 1
    net.eval()
    im, lb = idx(data, "t10k-images-idx3-ubyte"), idx(data,
                                                       "t10k-labels-idx1-ubyte")
    x = np.frombuffer(im[16:16 + tests * 784], dtype=np.uint8)
    x = x.astype(np.float32).reshape(tests, 1, 28, 28) / 255.0
    y = np.frombuffer(lb[8:8 + tests], dtype=np.uint8).astype(np.int64)
    with torch.no_grad():
        z = net(torch.from_numpy(x))
    acc = float((z.argmax(1).numpy() == y).mean())
    loss = F.cross_entropy(z, torch.from_numpy(y)).item()
    print("edgefit: test accuracy %.4f, loss %.7f" %
          (res["test_accuracy"], res["test_loss"]))
    print("PyTorch: test accuracy %.4f, loss %.7f" % (acc, loss))
    same = (abs(acc - res["test_accuracy"]) < 1e-9 and
            abs(loss - res["test_loss"]) <= 1e-5 * abs(loss))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
