#!/usr/bin/python3
"""Write the ONNX fixtures of the sequence models (transformers):
tests/data/onnx/NAME/model.onnx exported by PyTorch with
test_data_set_0/input_0.pb and PyTorch's output_0.pb, and under
tests/data/onnx/bad/ the nodes the importer must refuse by name.
tests/profile/test_seq_onnx.c runs them. The files are committed: the
tests need no Python.

  kwt13, kwt17  a KWT-style keyword transformer: MFCC N x 40 x 98 (40
                coefficients, 98 frames), each frame a patch (Linear 40 ->
                32), a class token, a position embedding, 4 pre-norm blocks
                of LayerNorm + nn.MultiheadAttention(32, 4, batch_first)
                + LayerNorm + GELU MLP (64), a final LayerNorm, a head (12
                keywords) on the class token; at opset 13 (LayerNorm
                decomposed) and 17 (LayerNormalization)
  vit           a tiny ViT on 3 x 32 x 32: Conv 4x4 stride 4 patches (32
                channels, 8 x 8), flatten + transpose to 64 tokens, class
                token, position embedding, 2 blocks with a hand-written
                attention (Linear qkv, chunk, reshape to N,T,h,d,
                transpose, q @ k^T * scale, softmax, @ v, merge, Linear),
                GELU MLP, LayerNorm, head (10 classes); opset 13
  vit_qscale    the same weights with q scaled before q @ k^T (not the
                form read as one attention layer: its pieces are layers)

Usage: scripts/make-seq-onnx-fixtures.py [OUT_DIR]   (Debian: python3-onnx,
python3-torch, python3-numpy)
"""
import os
import shutil
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

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
    # with gradients enabled: nn.MultiheadAttention's inference fast path
    # (aten::_native_multi_head_attention) has no ONNX export
    torch.onnx.export(net, x, os.path.join(d, "model.onnx"),
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}},
                      opset_version=opset, do_constant_folding=True)
    save_pb(x, "input", os.path.join(d, "test_data_set_0", "input_0.pb"))
    save_pb(y, "output", os.path.join(d, "test_data_set_0", "output_0.pb"))
    params = sum(p.numel() for p in net.parameters())
    print("%s: opset %d, %d parameters" % (name, opset, params))


class KwtBlock(torch.nn.Module):
    def __init__(self, d, heads, mlp):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, mlp)
        self.fc2 = torch.nn.Linear(mlp, d)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class Kwt(torch.nn.Module):
    """Keyword transformer: 98 frames of 40 MFCCs, one token per frame."""

    def __init__(self, mfcc=40, d=32, heads=4, mlp=64, depth=4, classes=12,
                 frames=98):
        super().__init__()
        self.embed = torch.nn.Linear(mfcc, d)
        self.cls_token = torch.nn.Parameter(torch.randn(1, 1, d) * 0.5)
        self.pos_embed = torch.nn.Parameter(
            torch.randn(1, frames + 1, d) * 0.5)
        self.blocks = torch.nn.ModuleList(
            [KwtBlock(d, heads, mlp) for _ in range(depth)])
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, classes)
        # LayerNorm's default gamma 1, beta 0 would hide a swapped pair
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)
                if isinstance(m, torch.nn.MultiheadAttention):
                    m.in_proj_bias.uniform_(-0.3, 0.3)
                    m.out_proj.bias.uniform_(-0.3, 0.3)

    def forward(self, x):
        x = self.embed(x.transpose(1, 2))            # N x 98 x 32
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x)[:, 0])


class VitBlock(torch.nn.Module):
    """Attention written out as timm's ViT does (with chunk for q, k, v)."""

    def __init__(self, d, heads, mlp, scale_q=False):
        super().__init__()
        self.heads = heads
        self.scale_q = scale_q
        self.scale = (d // heads) ** -0.5
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, mlp)
        self.fc2 = torch.nn.Linear(mlp, d)

    def attn(self, x):
        n, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(n, t, h, d // h).transpose(1, 2)
        k = k.reshape(n, t, h, d // h).transpose(1, 2)
        v = v.reshape(n, t, h, d // h).transpose(1, 2)
        if self.scale_q:
            a = (q * self.scale) @ k.transpose(-2, -1)
        else:
            a = (q @ k.transpose(-2, -1)) * self.scale
        a = a.softmax(dim=-1)
        y = (a @ v).transpose(1, 2).reshape(n, t, d)
        return self.proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class Vit(torch.nn.Module):
    def __init__(self, d=32, heads=4, mlp=64, depth=2, classes=10,
                 scale_q=False):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, d, 4, stride=4)
        self.cls_token = torch.nn.Parameter(torch.randn(1, 1, d) * 0.5)
        self.pos_embed = torch.nn.Parameter(torch.randn(1, 65, d) * 0.5)
        self.blocks = torch.nn.ModuleList(
            [VitBlock(d, heads, mlp, scale_q) for _ in range(depth)])
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, classes)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)  # N x 64 x 32
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x)[:, 0])


def good(out):
    torch.manual_seed(20)
    kwt = Kwt()
    x = torch.randn(BATCH, 40, 98)
    export(out, "kwt13", kwt, x, opset=13)
    export(out, "kwt17", kwt, x, opset=17)
    torch.manual_seed(21)
    vit = Vit()
    x = torch.randn(BATCH, 3, 32, 32)
    export(out, "vit", vit, x, opset=13)
    # the same weights with q scaled before Q K^T: not the pattern read
    # as one attention layer, so its pieces (matmul, transpose, softmax
    # over the keys of H x T x T) are layers
    vit_q = Vit(scale_q=True)
    vit_q.load_state_dict(vit.state_dict())
    export(out, "vit_qscale", vit_q, x, opset=13)


def bad_model(out, name, nodes, inits, shape, opset=17):
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="edgefit-fixtures")
    os.makedirs(os.path.join(out, "bad"), exist_ok=True)
    onnx.save(m, os.path.join(out, "bad", name + ".onnx"))


class MaskedMha(torch.nn.Module):
    """nn.MultiheadAttention with a causal mask: an Add before the Softmax,
    not the pattern read as one attention layer."""

    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.full((5, 5), -1e4),
                                                diagonal=1))

    def forward(self, x):
        return self.attn(x, x, x, attn_mask=self.mask, need_weights=False)[0]


def bad(out):
    torch.manual_seed(22)
    net = MaskedMha().eval()
    os.makedirs(os.path.join(out, "bad"), exist_ok=True)
    torch.onnx.export(net, torch.randn(1, 5, 8),
                      os.path.join(out, "bad", "mha_masked.onnx"),
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=13)
    rng = np.random.default_rng(20)
    g = numpy_helper.from_array(rng.random(8, dtype=np.float32), "g")
    b = numpy_helper.from_array(rng.random(8, dtype=np.float32), "b")
    # LayerNormalization's stash_type other than float32
    bad_model(out, "layernorm_stash", [helper.make_node(
        "LayerNormalization", ["x", "g", "b"], ["y"], name="ln_stash",
        axis=-1, stash_type=2)], [g, b], ["N", 5, 8])
    # normalising the batch axis with the features
    g2 = numpy_helper.from_array(rng.random((5, 8), dtype=np.float32), "g")
    bad_model(out, "layernorm_axis0", [helper.make_node(
        "LayerNormalization", ["x", "g"], ["y"], name="ln_axis0",
        axis=0)], [g2], ["N", 5, 8])
    # a Transpose that moves the batch
    bad_model(out, "transpose_batch", [helper.make_node(
        "Transpose", ["x"], ["y"], name="tr_batch", perm=[1, 0, 2])], [],
        ["N", 5, 8])
    # Softmax at opset 11 on a 3-D tensor over axis 1: flattens T x D
    bad_model(out, "softmax11_axis1", [helper.make_node(
        "Softmax", ["x"], ["y"], name="sm_flat", axis=1)], [],
        ["N", 5, 8], opset=11)
    # Softmax over the batch
    bad_model(out, "softmax_batch_axis", [helper.make_node(
        "Softmax", ["x"], ["y"], name="sm_batch", axis=0)], [],
        ["N", 3, 4, 4], opset=13)
    # a decomposed LayerNorm whose variance is over another axis than its
    # mean: the pattern differs, its pieces are refused by name
    axes_last = numpy_helper.from_array(np.array([-1], np.int64), "al")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    eps = numpy_helper.from_array(np.array(1e-5, np.float32), "eps")
    bad_model(out, "layernorm_pow3", [
        helper.make_node("ReduceMean", ["x"], ["mu"], name="ln_mean",
                         axes=[-1]),
        helper.make_node("Sub", ["x", "mu"], ["xc"], name="ln_sub"),
        helper.make_node("Pow", ["xc", "three"], ["sq"], name="ln_pow"),
        helper.make_node("ReduceMean", ["sq"], ["var"], name="ln_var",
                         axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["ve"], name="ln_addeps"),
        helper.make_node("Sqrt", ["ve"], ["sd"], name="ln_sqrt"),
        helper.make_node("Div", ["xc", "sd"], ["y"], name="ln_div"),
    ], [numpy_helper.from_array(np.array(3.0, np.float32), "three"), eps,
        axes_last], ["N", 5, 8], opset=13)
    del two
    # nn.MultiheadAttention-like graph with a key padding mask would differ;
    # a MatMul of a 4-D activation by a constant is refused by name
    w4 = numpy_helper.from_array(rng.random((8, 3), dtype=np.float32), "w")
    bad_model(out, "matmul_4d_const", [helper.make_node(
        "MatMul", ["x", "w"], ["y"], name="mm_4d")], [w4], ["N", 2, 5, 8])


def layernorm_stats(out):
    """LayerNormalization (opset 17) with its optional Mean and InvStdDev
    outputs named but read by nothing (layernorm_stats_unused, PyTorch's
    F.layer_norm as the reference), and read by an Add
    (bad/layernorm_mean_read, refused: the statistics are no layer's
    output)."""
    rng = np.random.default_rng(23)
    gv = rng.random(8, dtype=np.float32) + 0.5
    bv = rng.random(8, dtype=np.float32) - 0.5
    g = numpy_helper.from_array(gv, "g")
    b = numpy_helper.from_array(bv, "b")
    ln = helper.make_node("LayerNormalization", ["x", "g", "b"],
                          ["y", "mean", "isd"], name="ln_stats", axis=-1,
                          epsilon=1e-5)
    graph = helper.make_graph(
        [ln], "layernorm_stats_unused",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5, 8])],
        [g, b])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="edgefit-fixtures")
    m.ir_version = 8
    d = os.path.join(out, "layernorm_stats_unused")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    x = torch.from_numpy(rng.standard_normal((2, 5, 8)).astype(np.float32))
    y = torch.nn.functional.layer_norm(x, (8,), torch.from_numpy(gv),
                                       torch.from_numpy(bv), 1e-5)
    save_pb(x, "x", os.path.join(d, "test_data_set_0", "input_0.pb"))
    save_pb(y, "y", os.path.join(d, "test_data_set_0", "output_0.pb"))
    bad_model(out, "layernorm_mean_read", [
        helper.make_node("LayerNormalization", ["x", "g", "b"],
                         ["yn", "mean"], name="ln_mean_read", axis=-1),
        helper.make_node("Add", ["yn", "mean"], ["y"], name="add_mean")],
        [g, b], ["N", 5, 8])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
        "onnx")
    good(out)
    bad(out)
    layernorm_stats(out)


if __name__ == "__main__":
    main()
