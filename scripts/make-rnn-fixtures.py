#!/usr/bin/python3
"""LSTM and GRU fixtures (tests/data/onnx/torch_lstm_kws, torch_gru_kws,
torch_bigru, torch_lstm_hn: the last one reads h_n[-1] rather than
y[:, -1]): keyword spotters as PyTorch 1.13 exports them at opset 13,
batch_first, with random weights from a fixed generator; torch_lstm_tm
and torch_gru_tm are the same without batch_first, time-major (their
input_0.pb is [49, 2, 10], the LSTM's output y[-1], the GRU's h_n[-1]). Each folder
holds model.onnx, test_data_set_0/input_0.pb and output_0.pb (PyTorch's
output for a fixed input of batch 2), weights.safetensors (the same
weights named after the layers of model.txt, the text model of the same
network) and model.txt. lstm_layout1_y and gru_layout1_yh: one ONNX
LSTM/GRU node with layout 1 (batch-first) reading the graph input,
its Y (bidirectional) or Y_h the graph output, PyTorch's weights put in
ONNX's gate order and PyTorch's outputs. And
tests/data/onnx/bad/{lstm,gru}_*.onnx: the
same form with one thing the importer refuses (clip, input_forget, other
activations, activation_alpha, layout 1, sequence_lens, a non-zero
initial state).

    /usr/bin/python3 scripts/make-rnn-fixtures.py tests/data/onnx
"""
import os
import shutil
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_writer  # noqa: E402


class Spotter(torch.nn.Module):
    """Frames (batch, 49, 10) -> a recurrent stack -> the last step's
    hidden state (h_n of the top layer, both directions concatenated when
    bidirectional) -> Linear to 12 classes."""

    def __init__(self, cell, bidirectional=False, hn=False,
                 time_major=False):
        super().__init__()
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.rnn = rnn(10, 64, num_layers=2, batch_first=not time_major,
                       bidirectional=bidirectional)
        self.tm = time_major
        self.bi = bidirectional
        self.hn = hn
        self.cell = cell
        self.fc = torch.nn.Linear(128 if bidirectional else 64, 12)

    def forward(self, x):
        y, state = self.rnn(x)
        if self.hn:
            # the top layer's final state, h_n[-1]: ONNX's Y_h of each
            # layer joined by a Concat, then a Gather
            h = state[0] if self.cell == "lstm" else state
            return self.fc(h[-1])
        if self.tm:
            # time-major (49, batch, 10), PyTorch's default: y[-1]
            return self.fc(y[-1])
        if self.bi:
            # the forward direction's last step and the reverse's first
            last = torch.cat((y[:, -1, :64], y[:, 0, 64:]), 1)
        else:
            last = y[:, -1, :]
        return self.fc(last)


def save_pb(a, name, path):
    p = numpy_helper.from_array(a.astype(np.float32), name)
    with open(path, "wb") as f:
        f.write(p.SerializeToString())


def text_model(cell, bi):
    d = " dir=bidirectional" if bi else " dir=forward"
    lbr = " lbr=yes" if cell == "gru" else ""
    return ("# a keyword spotter: 49 frames of 10 features, two %s layers,\n"
            "# the last step's hidden state, 12 classes\n"
            "input 49x10\n"
            "%s 64%s seq=yes%s name=rnn0\n"
            "%s 64%s seq=no%s name=rnn1\n"
            "dense 12 name=fc\n") % (cell, cell, d, lbr, cell, d, lbr)


def make(out_dir, name, cell, bi, seed, hn=False, tm=False):
    torch.manual_seed(seed)
    net = Spotter(cell, bi, hn, tm).eval()
    # time-major: the input is (49, batch, 10), as the file holds it
    x = torch.randn(49, 2, 10) if tm else torch.randn(2, 49, 10)
    with torch.no_grad():
        y = net(x)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(net, x, path, opset_version=13,
                      input_names=["frames"], output_names=["logits"],
                      dynamic_axes={"frames": {1 if tm else 0: "batch"},
                                    "logits": {0: "batch"}})
    onnx.checker.check_model(onnx.load(path))
    save_pb(x.numpy(), "frames",
            os.path.join(d, "test_data_set_0", "input_0.pb"))
    save_pb(y.numpy(), "logits",
            os.path.join(d, "test_data_set_0", "output_0.pb"))
    # the text model's layers rnn0 and rnn1 are PyTorch's layers 0 and 1
    sd = net.state_dict()
    tensors = {}
    for k, v in sd.items():
        if k.startswith("rnn."):
            part, layer = k[4:].split("_l", 1)
            layer, _, rev = layer.partition("_")
            suffix = "_l0" + ("_" + rev if rev else "")
            tensors["rnn%s.%s%s" % (layer, part, suffix)] = v.clone()
        else:
            tensors[k] = v.clone()
    safetensors_writer.save(os.path.join(d, "weights.safetensors"),
                            tensors, {"format": "pt"})
    with open(os.path.join(d, "model.txt"), "w") as f:
        f.write(text_model(cell, bi))
    n = sum(p.numel() for p in net.parameters())
    print("%s: %d parameters, max |y| %.4f" % (name, n, y.abs().max()))


def bad_rnn(out_dir, name, op="LSTM", attrs=None, extra_inputs=None,
            inits=None):
    """x [N, 5, 3] -> Transpose(1,0,2) -> LSTM/GRU (hidden 2) -> Squeeze
    (axes 1) -> Transpose(1,0,2): PyTorch's form, with one change that
    the importer must refuse naming the node and what it is."""
    from onnx import TensorProto, helper
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    rng = np.random.default_rng(5)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    init = [numpy_helper.from_array(
                rng.standard_normal((1, G * 2, 3)).astype(np.float32), "W"),
            numpy_helper.from_array(
                rng.standard_normal((1, G * 2, 2)).astype(np.float32), "R"),
            numpy_helper.from_array(np.array([1], np.int64), "axes")]
    init += inits or []
    ins = ["xt", "W", "R"] + (extra_inputs or [])
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], name="tin",
                              perm=[1, 0, 2]),
             helper.make_node(op, ins, ["Y"], name="rnn1", hidden_size=2,
                              **(attrs or {})),
             helper.make_node("Squeeze", ["Y", "axes"], ["ys"], name="sq"),
             helper.make_node("Transpose", ["ys"], ["y"], name="tout",
                              perm=[1, 0, 2])]
    if op == "RNN":
        nodes = [helper.make_node(op, ["x", "W", "R"], ["y"], name="rnn1",
                                  hidden_size=2)]
    g = helper.make_graph(nodes, name, [x], [y], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="edgefit-fixtures")
    m.ir_version = 8
    onnx.save(m, os.path.join(out_dir, "bad", name + ".onnx"))


def layout1(out_dir, name, cell, bi, read, seed):
    """x [N, 7, 5] -> LSTM/GRU(layout 1, hidden 6) -> Y [N, 7, dirs, 6] or
    Y_h [N, dirs, 6], the graph output; weights and outputs from PyTorch's
    nn.LSTM/nn.GRU(batch_first=True)."""
    from onnx import TensorProto, helper
    torch.manual_seed(seed)
    rnn = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(
        5, 6, batch_first=True, bidirectional=bi)
    for p in rnn.parameters():
        torch.nn.init.uniform_(p, -0.5, 0.5)
    H = 6
    order = [0, 3, 1, 2] if cell == "lstm" else [1, 0, 2]  # ONNX <- PyTorch

    def onnx_gates(t):
        return torch.cat([t[k * H:(k + 1) * H] for k in order], 0)

    sfx = ["", "_reverse"] if bi else [""]
    sd = rnn.state_dict()
    W = torch.stack([onnx_gates(sd["weight_ih_l0" + s]) for s in sfx])
    R = torch.stack([onnx_gates(sd["weight_hh_l0" + s]) for s in sfx])
    B = torch.stack([torch.cat((onnx_gates(sd["bias_ih_l0" + s]),
                                onnx_gates(sd["bias_hh_l0" + s])))
                     for s in sfx])
    x = torch.randn(2, 7, 5)
    with torch.no_grad():
        y, h = rnn(x)
        if cell == "lstm":
            h = h[0]
    dirs = 2 if bi else 1
    ref = (y.reshape(2, 7, dirs, H) if read == "Y"
           else h.transpose(0, 1).contiguous())
    init = [numpy_helper.from_array(t.detach().numpy(), n)
            for t, n in ((W, "W"), (R, "R"), (B, "B"))]
    attrs = {"hidden_size": H, "layout": 1,
             "direction": "bidirectional" if bi else "forward"}
    if cell == "gru":
        attrs["linear_before_reset"] = 1
    outs = ["Y", ""] if read == "Y" else ["", "Y_h"]
    node = helper.make_node("LSTM" if cell == "lstm" else "GRU",
                            ["x", "W", "R", "B"], outs, name="rnn", **attrs)
    g = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 7, 5])],
        [helper.make_tensor_value_info(read, TensorProto.FLOAT,
                                       ["N"] + list(ref.shape[1:]))], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)],
                          producer_name="edgefit-fixtures")
    m.ir_version = 8
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    save_pb(x.numpy(), "x", os.path.join(d, "test_data_set_0", "input_0.pb"))
    save_pb(ref.numpy(), read,
            os.path.join(d, "test_data_set_0", "output_0.pb"))
    print("%s: max |%s| %.4f" % (name, read, ref.abs().max()))


def time_major_y(out_dir, name, cell, bi, layers, seed):
    """nn.LSTM/nn.GRU(5, 6) without batch_first returning y itself: the
    graph input x [7, N, 5] and output y [7, N, dirs*6] both time-major
    (the batch axis 1 of each); PyTorch's y for a batch of 3."""
    class Seq(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(
                5, 6, num_layers=layers, bidirectional=bi)

        def forward(self, x):
            return self.rnn(x)[0]

    torch.manual_seed(seed)
    net = Seq().eval()
    x = torch.randn(7, 3, 5)
    with torch.no_grad():
        y = net(x)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    torch.onnx.export(net, x, os.path.join(d, "model.onnx"),
                      opset_version=13, input_names=["x"],
                      output_names=["y"],
                      dynamic_axes={"x": {1: "N"}, "y": {1: "N"}})
    save_pb(x.numpy(), "x", os.path.join(d, "test_data_set_0", "input_0.pb"))
    save_pb(y.numpy(), "y", os.path.join(d, "test_data_set_0",
                                         "output_0.pb"))
    print("%s: max |y| %.4f" % (name, y.abs().max()))


def bad_fixtures(out):
    # ONNX's plain RNN, which no layer computes: refused with the list of
    # the supported operators (tests/memest/test_onnx.c reads that list)
    bad_rnn(out, "unsupported_rnn", op="RNN")
    bad_rnn(out, "lstm_clip", attrs={"clip": 1.0})
    bad_rnn(out, "lstm_input_forget", attrs={"input_forget": 1})
    bad_rnn(out, "lstm_activations",
            attrs={"activations": ["Sigmoid", "Relu", "Tanh"]})
    bad_rnn(out, "gru_activation_alpha", op="GRU",
            attrs={"activation_alpha": [0.5]})
    bad_rnn(out, "lstm_layout1", attrs={"layout": 1})
    bad_rnn(out, "gru_sequence_lens", op="GRU", extra_inputs=["", "lens"],
            inits=[numpy_helper.from_array(np.array([5, 5], np.int32),
                                           "lens")])
    bad_rnn(out, "lstm_initial_h", extra_inputs=["", "", "h0"],
            inits=[numpy_helper.from_array(
                np.ones((1, 2, 2), np.float32), "h0")])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/onnx"
    make(out, "torch_lstm_kws", "lstm", False, 20)
    make(out, "torch_gru_kws", "gru", False, 21)
    make(out, "torch_bigru", "gru", True, 22)
    make(out, "torch_lstm_hn", "lstm", False, 23, hn=True)
    # nn.LSTM/nn.GRU without batch_first: the graph input is time-major
    # [49, N, 10]; the LSTM reads y[-1], the GRU h_n[-1]
    make(out, "torch_lstm_tm", "lstm", False, 26, tm=True)
    make(out, "torch_gru_tm", "gru", False, 27, hn=True, tm=True)
    time_major_y(out, "lstm_tm_y", "lstm", False, 2, 28)
    time_major_y(out, "bigru_tm_y", "gru", True, 1, 29)
    layout1(out, "lstm_layout1_y", "lstm", True, "Y", 24)
    layout1(out, "gru_layout1_yh", "gru", False, "Y_h", 25)
    bad_fixtures(out)


if __name__ == "__main__":
    main()
