#!/usr/bin/python3
"""MobileNetV2 (torchvision's, width 0.35, 96 x 96 x 3 input, 10 classes:
the TinyML configuration of the network) exported to ONNX opset 13 with
seeded random weights, batch free, for the int8 benchmark against ONNX
Runtime (scripts/bench-int8-vs-onnxruntime.sh). Its time, not its
accuracy, is what the benchmark measures.

  make-mobilenetv2-onnx.py OUT_DIR     writes OUT_DIR/mobilenetv2/model.onnx
"""
import os
import sys

import torch
import torchvision


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    torch.manual_seed(0)
    net = torchvision.models.mobilenet_v2(width_mult=0.35, num_classes=10)
    # batch norm statistics of random inputs (momentum None: the plain
    # average), so the folded layers keep activations of order 1 rather
    # than shrinking layer after layer as with the initial statistics
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None
    net.train()
    with torch.no_grad():
        for _ in range(8):
            net(torch.rand(16, 3, 96, 96))
    net.eval()
    out = os.path.join(argv[1], "mobilenetv2")
    os.makedirs(out, exist_ok=True)
    x = torch.rand(1, 3, 96, 96)
    torch.onnx.export(net, x, os.path.join(out, "model.onnx"),
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      opset_version=13, do_constant_folding=True)


if __name__ == "__main__":
    main(sys.argv)
