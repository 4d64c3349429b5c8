#!/usr/bin/python3
"""ImageNet-size networks (1000 classes, 3 x 224 x 224 input) exported to
ONNX opset 13 with seeded random weights and a free batch dimension
("batch"), for timing edgefit against ONNX Runtime at batch 1 and 8
(scripts/bench-vs-onnxruntime-c.sh --table). Their time, not their
accuracy, is what is measured, so the weights are random; the batch norm
statistics are those of random inputs, so activations stay of order 1.

  make-imagenet-onnx.py OUT_DIR     writes OUT_DIR/NAME/model.onnx

NAME: mobilenetv2 (torchvision mobilenet_v2), resnet18, squeezenet1_1,
regnetx400mf (torchvision regnet_x_400mf: grouped 3 x 3 convolutions of
group width 16) and mobilenetv1 (width 1.0, written here: torchvision has
none). A file that exists is kept. The files are 5-50 MB each, so they
are generated into a cache folder, not committed.
"""
import os
import sys

import torch
import torchvision


def mobilenet_v1(num_classes=1000):
    """MobileNetV1 (Howard et al. 2017, width 1.0): a 3 x 3 stride-2 stem,
    13 depthwise-separable blocks, global average pooling, one dense."""
    def conv_bn(cin, cout, stride):
        return torch.nn.Sequential(
            torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
            torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True))

    def dw_sep(cin, cout, stride):
        return torch.nn.Sequential(
            torch.nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
            torch.nn.BatchNorm2d(cin), torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(cin, cout, 1, 1, 0, bias=False),
            torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True))

    cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2),
           (256, 256, 1), (256, 512, 2)] + [(512, 512, 1)] * 5 + \
          [(512, 1024, 2), (1024, 1024, 1)]
    layers = [conv_bn(3, 32, 2)] + [dw_sep(a, b, s) for a, b, s in cfg]
    return torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1),
                               torch.nn.Flatten(),
                               torch.nn.Linear(1024, num_classes))


NETS = {
    "mobilenetv2": lambda: torchvision.models.mobilenet_v2(),
    "resnet18": lambda: torchvision.models.resnet18(),
    "squeezenet1_1": lambda: torchvision.models.squeezenet1_1(),
    "regnetx400mf": lambda: torchvision.models.regnet_x_400mf(),
    "mobilenetv1": mobilenet_v1,
}


def export(name, out_dir):
    path = os.path.join(out_dir, name, "model.onnx")
    if os.path.exists(path):
        return
    torch.manual_seed(0)
    net = NETS[name]()
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None  # the plain average of the batches below
    net.train()
    with torch.no_grad():
        for _ in range(2):
            net(torch.rand(8, 3, 224, 224))
    net.eval()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    torch.onnx.export(net, torch.rand(1, 3, 224, 224), tmp,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      opset_version=13, do_constant_folding=True)
    os.replace(tmp, path)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    for name in NETS:
        export(name, argv[1])
        print(os.path.join(argv[1], name, "model.onnx"))


if __name__ == "__main__":
    main(sys.argv)
