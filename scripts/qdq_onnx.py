#!/usr/bin/python3
"""Static int8 QDQ ONNX files from fp32 ones, as ONNX Runtime's
quantize_static writes them (QuantFormat.QDQ, per_channel=True, QUInt8
activations (QInt8 with --s8), QInt8 weights, min-max calibration), for benchmarks against
ONNX Runtime's int8 (scripts/bench-int8-vs-onnxruntime.sh).

  qdq_onnx.py augment MODEL.onnx AUG.onnx META.json
      every float tensor a node writes becomes a graph output as well,
      so that one run gives all activations (the calibrator's trick);
      META.json names the input, its shape (batch 1) and those tensors.
  qdq_onnx.py [--s8] write MODEL.onnx RANGES.json OUT.onnx
      RANGES.json ({"tensor": [min, max], ...}, from onnx_ranges.mjs)
      gives every activation's range; writes the QDQ model:
        - a QuantizeLinear/DequantizeLinear pair after the input and after
          every float node output (the node writes NAME_f, the pair gives
          NAME back, so consumers and graph outputs are unchanged);
        - scale and zero point of ORT's compute_scale_zp: the range
          widened to hold 0, scale = (rmax - rmin) / 255, zero point =
          round_half_even(-128 - rmin / scale) clamped to [-128, 127];
        - layers that keep their input's scale (MaxPool, Flatten,
          Reshape, Squeeze, Unsqueeze, Transpose, Identity, Dropout) take
          their input's range, as ORT's quantizer shares one scale there;
        - Conv and Gemm weights int8, symmetric per output channel (scale
          max|w| / 127, zero point 0) with DequantizeLinear on axis 0 (1
          for Gemm without transB, MatMul), biases int32 in the scale
          x_scale * w_scale[c] (rounded half to even).
Only python3-onnx and numpy; ONNX Runtime itself runs in node.
"""
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# activations ORT's quantizer removes after a quantized producer
# (QDQRemovableActivation): the producer's output takes their range
REMOVABLE = {"Relu", "Clip"}
PRODUCERS = {"Conv", "Gemm", "MatMul", "Add"}
# outputs left in float: a final softmax runs on the dequantised logits
FLOAT_OUT = {"Softmax", "LogSoftmax"}
SHARED = {"MaxPool", "Flatten", "Reshape", "Squeeze", "Unsqueeze",
          "Transpose", "Identity", "Dropout"}


def simplify(g):
    """Constant nodes become initializers, and an Identity of an
    initializer (PyTorch's exporter writes them for shared weights) a copy
    of it under the Identity's output name: weights are then initializers
    that the quantizer sees, and no constant gets a Q/DQ pair."""
    inits = {i.name: i for i in g.initializer}
    keep = []
    for n in g.node:
        if n.op_type == "Constant":
            val = [a for a in n.attribute if a.name == "value"]
            if val:
                t = onnx.TensorProto()
                t.CopyFrom(val[0].t)
                t.name = n.output[0]
                g.initializer.append(t)
                inits[t.name] = t
                continue
        if n.op_type == "Identity" and n.input[0] in inits:
            t = onnx.TensorProto()
            t.CopyFrom(inits[n.input[0]])
            t.name = n.output[0]
            g.initializer.append(t)
            inits[t.name] = t
            continue
        keep.append(n)
    del g.node[:]
    g.node.extend(keep)


def float_outputs(model):
    """The float tensors the nodes write, in node order."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        types[vi.name] = vi.type.tensor_type.elem_type
    out = []
    for node in model.graph.node:
        for name in node.output:
            if name and types.get(name, TensorProto.FLOAT) == TensorProto.FLOAT:
                out.append(name)
    return out


def graph_input(model):
    inits = {i.name for i in model.graph.initializer}
    ins = [i for i in model.graph.input if i.name not in inits]
    if len(ins) != 1:
        sys.exit("qdq_onnx: %d inputs; one is supported" % len(ins))
    return ins[0]


def augment(src, dst, meta):
    model = onnx.load(src)
    simplify(model.graph)
    inp = graph_input(model)
    shape = [d.dim_value if d.dim_value > 0 else 1
             for d in inp.type.tensor_type.shape.dim]
    have = {o.name for o in model.graph.output}
    names = float_outputs(model)
    for name in names:
        if name not in have:
            model.graph.output.append(
                helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    onnx.save(model, dst)
    with open(meta, "w") as f:
        json.dump({"input": inp.name, "shape": shape,
                   "tensors": [inp.name] + names}, f)


def scale_zp(lo, hi):
    """ONNX Runtime's compute_scale_zp for int8 [-128, 127], in float32."""
    rmin = np.float32(min(lo, 0.0))
    rmax = np.float32(max(hi, 0.0))
    if rmax == rmin:
        return np.float32(1.0), 0
    scale = np.float32((rmax - rmin) / np.float32(255.0))
    zp = int(np.clip(np.round(np.float32(-128.0) - rmin / scale), -128, 127))
    return scale, zp


def remove_activations(g):
    """Relu and Clip whose input only they read, written by a Conv, Gemm,
    MatMul or Add: gone, the producer writes their output instead."""
    producer = {o: n for n in g.node for o in n.output}
    readers = {}
    for n in g.node:
        for x in n.input:
            readers[x] = readers.get(x, 0) + 1
    outs = {o.name for o in g.output}
    keep = []
    for n in g.node:
        x = n.input[0] if n.input else ""
        p = producer.get(x)
        if (n.op_type in REMOVABLE and p is not None and
                p.op_type in PRODUCERS and readers.get(x) == 1 and
                x not in outs):
            for i, o in enumerate(p.output):
                if o == x:
                    p.output[i] = n.output[0]
            producer[n.output[0]] = p
            continue
        keep.append(n)
    del g.node[:]
    g.node.extend(keep)


def write(src, ranges_path, dst):
    model = onnx.load(src)
    g = model.graph
    simplify(g)
    remove_activations(g)
    with open(ranges_path) as f:
        ranges = json.load(f)
    inp = graph_input(model)
    inits = {i.name: i for i in g.initializer}
    # shared-scale layers take their input's range, in node order
    for node in g.node:
        if node.op_type in SHARED and node.input[0] in ranges:
            for o in node.output:
                ranges[o] = ranges[node.input[0]]
    params = {}
    for name, (lo, hi) in ranges.items():
        params[name] = scale_zp(float(lo), float(hi))
    new_nodes, new_inits = [], []

    def qdq_pair(src_name, dst_name, name):
        s, z = params[name]
        sname, zname = name + "_scale", name + "_zero_point"
        new_inits.append(numpy_helper.from_array(np.array(s, np.float32), sname))
        if UINT8:
            zarr = np.array(z + 128, np.uint8)
        else:
            zarr = np.array(z, np.int8)
        new_inits.append(numpy_helper.from_array(zarr, zname))
        q = name + "_quantized"
        return [helper.make_node("QuantizeLinear", [src_name, sname, zname],
                                 [q], name=name + "_QuantizeLinear"),
                helper.make_node("DequantizeLinear", [q, sname, zname],
                                 [dst_name], name=name + "_DequantizeLinear")]

    # the input: a pair to NAME_dq, consumers read it
    in_dq = inp.name + "_dequantized"
    new_nodes += qdq_pair(inp.name, in_dq, inp.name)
    act_scale = {inp.name: params[inp.name][0]}
    for node in g.node:
        for i, x in enumerate(node.input):
            if x == inp.name:
                node.input[i] = in_dq
    for name in float_outputs(model):
        act_scale[name] = params[name][0]
    act_scale[in_dq] = act_scale[inp.name]
    used_weights = set()
    for node in g.node:
        wax = None
        if node.op_type == "Conv":
            wax = 0
        elif node.op_type == "Gemm":
            tb = [a.i for a in node.attribute if a.name == "transB"]
            wax = 0 if tb and tb[0] else 1
        elif node.op_type == "MatMul":
            wax = 1
        if wax is not None and len(node.input) > 1 and node.input[1] in inits:
            wname = node.input[1]
            w = numpy_helper.to_array(inits[wname]).astype(np.float32)
            wm = np.moveaxis(w, wax, 0).reshape(w.shape[wax], -1)
            amax = np.abs(wm).max(axis=1).astype(np.float32)
            ws = np.where(amax > 0, amax / np.float32(127.0), np.float32(1.0)).astype(np.float32)
            bshape = [1] * w.ndim
            bshape[wax] = -1
            wq = np.clip(np.round(w / ws.reshape(bshape)), -127, 127).astype(np.int8)
            qn = wname + "_quantized"
            new_inits.append(numpy_helper.from_array(wq, qn))
            new_inits.append(numpy_helper.from_array(ws, qn + "_scale"))
            new_inits.append(numpy_helper.from_array(
                np.zeros(ws.shape, np.int8), qn + "_zero_point"))
            new_nodes.append(helper.make_node(
                "DequantizeLinear", [qn, qn + "_scale", qn + "_zero_point"],
                [qn + "_dequantized"], axis=wax, name=qn + "_DequantizeLinear"))
            node.input[1] = qn + "_dequantized"
            used_weights.add(wname)
            if len(node.input) > 2 and node.input[2] in inits:
                bname = node.input[2]
                b = numpy_helper.to_array(inits[bname]).astype(np.float32)
                xs = np.float32(act_scale[node.input[0]])
                bs = (ws * xs).astype(np.float32)
                bq = np.round(b / bs).astype(np.int64)
                bq = np.clip(bq, -2**31, 2**31 - 1).astype(np.int32)
                bn = bname + "_quantized"
                new_inits.append(numpy_helper.from_array(bq, bn))
                new_inits.append(numpy_helper.from_array(bs, bn + "_scale"))
                new_inits.append(numpy_helper.from_array(
                    np.zeros(bs.shape, np.int32), bn + "_zero_point"))
                new_nodes.append(helper.make_node(
                    "DequantizeLinear", [bn, bn + "_scale", bn + "_zero_point"],
                    [bn + "_dequantized"], axis=0,
                    name=bn + "_DequantizeLinear"))
                node.input[2] = bn + "_dequantized"
                used_weights.add(bname)
    # every float node output: the node writes NAME_f, the pair gives NAME
    out_nodes = []
    floats = set(float_outputs(model))
    for node in g.node:
        pairs = []
        for i, name in enumerate(node.output):
            if name in floats and node.op_type not in FLOAT_OUT:
                node.output[i] = name + "_f"
                pairs += qdq_pair(name + "_f", name, name)
        out_nodes.append(node)
        out_nodes += pairs
    # what the removed activations read (Clip's bounds) is unused now
    read = {x for n in list(g.node) + new_nodes for x in n.input}
    keep = [i for i in g.initializer
            if i.name not in used_weights and i.name in read]
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    del g.node[:]
    # weight and input pairs first: they depend on nothing else
    g.node.extend(new_nodes + out_nodes)
    # the graph inputs must not list the removed initializers
    kept = {i.name for i in keep}
    ins = [i for i in g.input if i.name not in used_weights and
           (i.name not in inits or i.name in kept)]
    del g.input[:]
    g.input.extend(ins)
    onnx.checker.check_model(model)
    onnx.save(model, dst)


# uint8 activations (QUInt8; the zero point plus 128, the same real
# values): on x86 ONNX Runtime 1.30 then fuses every Conv into QLinearConv,
# while with int8 ones (--s8) it leaves the Convs that read a tensor two
# layers read, or write a removed Relu's range, in float
UINT8 = True


def main(argv):
    global UINT8
    if len(argv) > 1 and argv[1] == "--s8":
        UINT8 = False
        argv = argv[:1] + argv[2:]
    if len(argv) == 5 and argv[1] == "augment":
        augment(argv[2], argv[3], argv[4])
    elif len(argv) == 5 and argv[1] == "write":
        write(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
