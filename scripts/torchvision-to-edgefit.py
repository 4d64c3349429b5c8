#!/usr/bin/env python3
"""Write torchvision networks as edgefit text models.

    /usr/bin/python3 scripts/torchvision-to-edgefit.py BUILD_DIR OUT_DIR SIZE NAME...

Each NAME is a torchvision.models constructor (resnet18, mobilenet_v2,
shufflenet_v2_x1_0, ...): the network (random weights, eval mode) is
exported to ONNX at 1x3xSIZExSIZE, imported by libmemest
(BUILD_DIR/libmemest/libedgefit-memest.so, memest_model_load) and written
back as text (memest_model_write) to OUT_DIR/torchvision-NAME.txt, so the
model is torchvision's layer for layer, its batch norms folded into the
convolutions as edgefit folds them. Prints "name parameters macs" per
network as torchvision itself counts them (parameters summed with the
batch norms folded: weight and bias of a BatchNorm2d become the preceding
convolution's bias; MACs from forward hooks on Conv2d and Linear), the
figures tests/profile/test_published.c holds the text models against.

Used for the networks of PyTorch's Raspberry Pi 4 tutorial
(intermediate_source/realtime_rpi.rst), which times torchvision's models
on 224x224 camera frames.
"""
import ctypes
import os
import sys
import tempfile

import torch
import torchvision


class Diag(ctypes.Structure):
    _fields_ = [("line", ctypes.c_int), ("column", ctypes.c_int),
                ("source", ctypes.c_char * 256),
                ("message", ctypes.c_char * 256)]


def torch_counts(m, size):
    macs = [0]

    def conv(mod, i, o):
        macs[0] += o.numel() * (mod.in_channels // mod.groups) * \
            mod.kernel_size[0] * mod.kernel_size[1]

    def lin(mod, i, o):
        macs[0] += mod.in_features * mod.out_features

    hooks = []
    for mod in m.modules():
        if isinstance(mod, torch.nn.Conv2d):
            hooks.append(mod.register_forward_hook(conv))
        if isinstance(mod, torch.nn.Linear):
            hooks.append(mod.register_forward_hook(lin))
    with torch.no_grad():
        m(torch.zeros(1, 3, size, size))
    for h in hooks:
        h.remove()
    params = sum(p.numel() for p in m.parameters())
    # folding: a BatchNorm2d's 2 x C parameters become C biases of the
    # convolution before it, which had none (torchvision's convolutions
    # before a batch norm are bias=False)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            params -= mod.num_features
    return params, macs[0]


def main():
    build, out_dir, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lib = ctypes.CDLL(os.path.join(build, "libmemest",
                                   "libedgefit-memest.so"))
    lib.memest_model_load.argtypes = [ctypes.c_char_p,
                                      ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.POINTER(Diag)]
    lib.memest_model_write.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                       ctypes.c_size_t,
                                       ctypes.POINTER(ctypes.c_size_t)]
    lib.memest_model_destroy.argtypes = [ctypes.c_void_p]
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in sys.argv[4:]:
            kw = {"aux_logits": False, "init_weights": True} \
                if name in ("googlenet", "inception_v3") else {}
            m = getattr(torchvision.models, name)(**kw).eval()
            params, macs = torch_counts(m, size)
            onnx_path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(m, torch.zeros(1, 3, size, size), onnx_path,
                              opset_version=13, input_names=["input"],
                              output_names=["output"])
            model = ctypes.c_void_p()
            diag = Diag()
            rc = lib.memest_model_load(onnx_path.encode(),
                                       ctypes.byref(model),
                                       ctypes.byref(diag))
            if rc != 0:
                sys.stderr.write(f"{name}: not imported: "
                                 f"{diag.message.decode()}\n")
                continue
            n = ctypes.c_size_t()
            lib.memest_model_write(model, None, 0, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value + 1)
            assert lib.memest_model_write(model, buf, n.value + 1,
                                          ctypes.byref(n)) == 0
            lib.memest_model_destroy(model)
            text = buf.value.decode()
            # the model's name is the file's, not the temporary ONNX path's
            lines = text.split("\n")
            lines[0] = f"name torchvision-{name}"
            with open(os.path.join(out_dir, f"torchvision-{name}.txt"),
                      "w") as f:
                f.write(f"# torchvision-{name}: torchvision "
                        f"{torchvision.__version__} models.{name}(), "
                        f"exported to ONNX at 1x3x{size}x{size} and written "
                        f"by scripts/torchvision-to-edgefit.py\n")
                f.write("\n".join(lines))
            print(name, params, macs)


if __name__ == "__main__":
    main()
