#!/usr/bin/python3
"""Write the ONNX fixtures of the upsampling operators (ConvTranspose,
Resize, Upsample): tests/data/onnx/NAME/model.onnx exported by PyTorch
(opset 13; Upsample at opset 9) with test_data_set_0/input_0.pb and
PyTorch's output_0.pb, and under tests/data/onnx/bad/ the nodes the
importer must refuse naming the attribute. tests/profile/test_upsample.c
runs them. The files are committed: the tests need no Python.

Usage: scripts/make-upsample-fixtures.py [OUT_DIR]   (Debian: python3-onnx,
python3-torch, python3-numpy)
"""
import os
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

torch.manual_seed(11)
BATCH = 2


def save_pb(t, name, path):
    p = numpy_helper.from_array(t.detach().numpy().astype(np.float32), name)
    with open(path, "wb") as f:
        f.write(p.SerializeToString())


def export(out, name, net, x, opset=13):
    net.eval()
    with torch.no_grad():
        y = net(x)
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    torch.onnx.export(net, x, os.path.join(d, "model.onnx"),
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      opset_version=opset, do_constant_folding=True)
    save_pb(x, "input", os.path.join(d, "test_data_set_0", "input_0.pb"))
    save_pb(y, "output", os.path.join(d, "test_data_set_0", "output_0.pb"))


class Deconv(torch.nn.Module):
    """Every ConvTranspose2d option: stride 2, padding, output_padding 1,
    groups 2, dilation 2, then a rectangular one without bias, with
    asymmetric stride and padding."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                           output_padding=1, groups=2,
                                           dilation=2)
        self.up2 = torch.nn.ConvTranspose2d(6, 3, (2, 3), stride=(2, 1),
                                            padding=(0, 1), bias=False)

    def forward(self, x):
        return self.up2(torch.relu(self.up(x)))


class Upsample(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.up = torch.nn.Upsample(**kw)

    def forward(self, x):
        return self.up(x)


class Interp(torch.nn.Module):
    """F.interpolate by a factor per axis (nearest) and to a size
    (bilinear, then nearest)."""

    def forward(self, x):
        y = F.interpolate(x, scale_factor=(1.5, 2.0), mode="nearest")
        y = F.interpolate(y, size=(7, 9), mode="bilinear",
                          align_corners=False)
        return F.interpolate(y, size=(10, 4), mode="nearest")


def good(out):
    export(out, "deconv", Deconv(), torch.randn(BATCH, 4, 5, 6))
    x = torch.randn(BATCH, 3, 5, 4)
    export(out, "upsample_nearest",
           Upsample(scale_factor=2, mode="nearest"), x)
    export(out, "upsample_bilinear",
           Upsample(scale_factor=2, mode="bilinear", align_corners=False), x)
    export(out, "upsample_bilinear_ac",
           Upsample(scale_factor=2, mode="bilinear", align_corners=True), x)
    export(out, "interpolate", Interp(), x)
    export(out, "upsample_opset9",
           Upsample(scale_factor=2, mode="nearest"), x, opset=9)


def bad_model(out, name, node, inits):
    g = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["N", 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="edgefit-fixtures")
    os.makedirs(os.path.join(out, "bad"), exist_ok=True)
    onnx.save(m, os.path.join(out, "bad", name + ".onnx"))


def bad(out):
    roi = numpy_helper.from_array(np.zeros(0, np.float32), "roi")
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    bad_model(out, "resize_cubic", helper.make_node(
        "Resize", ["x", "roi", "sc"], ["y"], name="up_cubic",
        mode="cubic"), [roi, sc])
    sc_c = numpy_helper.from_array(np.array([1, 2, 2, 2], np.float32), "sc")
    bad_model(out, "resize_scale_c", helper.make_node(
        "Resize", ["x", "roi", "sc"], ["y"], name="up_c", mode="nearest"),
        [roi, sc_c])
    bad_model(out, "resize_tf_crop", helper.make_node(
        "Resize", ["x", "roi", "sc"], ["y"], name="up_crop",
        coordinate_transformation_mode="tf_crop_and_resize"), [roi, sc])
    w = numpy_helper.from_array(np.ones((2, 3, 2, 2), np.float32), "w")
    bad_model(out, "deconv_output_shape", helper.make_node(
        "ConvTranspose", ["x", "w"], ["y"], name="up_shape", strides=[2, 2],
        output_shape=[8, 8]), [w])
    bad_model(out, "deconv_output_padding", helper.make_node(
        "ConvTranspose", ["x", "w"], ["y"], name="up_op", strides=[2, 2],
        output_padding=[2, 2]), [w])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
        "onnx")
    good(out)
    bad(out)


if __name__ == "__main__":
    main()
