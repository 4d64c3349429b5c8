#!/usr/bin/python3
"""SqueezeNet 1.1 and ResNet-18 (torchvision's, 224 x 224 x 3 input, 1000
classes) exported to ONNX opset 13 with seeded random weights, batch 1,
for timing their pools and whole forward passes against ONNX Runtime
(scripts/bench-vs-onnxruntime-c.sh --layers). Their time, not their
accuracy, is what is measured; the files (5 and 47 MB) are made, not
kept.

  make-imagenet-pool-onnx.py OUT_DIR   writes OUT_DIR/squeezenet1_1.onnx
                                       and OUT_DIR/resnet18.onnx
"""
import os
import sys

import torch
import torchvision


def export(net, path):
    # batch norm statistics of random inputs (momentum None: the plain
    # average), so the folded layers keep activations of order 1
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None
    net.train()
    with torch.no_grad():
        for _ in range(2):
            net(torch.rand(4, 3, 224, 224))
    net.eval()
    torch.onnx.export(net, torch.rand(1, 3, 224, 224), path,
                      input_names=["input"], output_names=["output"],
                      opset_version=13, do_constant_folding=True)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    torch.manual_seed(0)
    os.makedirs(argv[1], exist_ok=True)
    export(torchvision.models.squeezenet1_1(),
           os.path.join(argv[1], "squeezenet1_1.onnx"))
    export(torchvision.models.resnet18(),
           os.path.join(argv[1], "resnet18.onnx"))


if __name__ == "__main__":
    main(sys.argv)
