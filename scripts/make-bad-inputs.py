#!/usr/bin/python3
"""Write the bad-input catalogue: tests/bad/files/* and tests/bad/cases.tsv.

Each case is an app, its arguments, the exit code it must end with and a
fragment its stderr must hold (the file:line, the ONNX node, the argument
at fault). tests/bad/run.sh runs them under meson test. Arguments are
words separated by spaces; @BAD@ is tests/bad/files, @DATA@ tests/data,
@TMP@ a fresh folder of the run.

Malformed input exits 2 (CLI_EXIT_USAGE); the expected fragments are
written here by hand from each input (the line a text model breaks at, the
node an ONNX fixture names), and the ONNX ones are checked against the
file (the node named is the node at that index).

Usage: /usr/bin/python3 scripts/make-bad-inputs.py  (needs python3-onnx)
"""
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "bad", "files")
DATA = os.path.join(ROOT, "tests", "data")
cases = []


def case(app, args, code, frag):
    assert "\t" not in args and "\t" not in frag and frag
    cases.append((app, args, str(code), frag))


def write(name, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(OUT, name), mode) as f:
        f.write(data)
    return "@BAD@/" + name


# ---- Model texts: (name, text, fragment) -----------------------------------
TEXTS = [
    ("conv_zero", "input 1x8x8\nconv2d 0 k=3\n", "conv_zero.txt:2:"),
    ("dense_zero", "input 16\ndense 0\n", "dense_zero.txt:2:"),
    ("dense_huge_out", "input 1\ndense 4000000000\n", "dense_huge_out.txt:2:"),
    ("dense_huge_weight", "input 100000\ndense 100000\n",
     "dense_huge_weight.txt:2:"),
    ("params_over_limit", "input 40000\n" + "dense 40000\n" * 2,
     "params_over_limit.txt:3:"),
    ("input_huge", "input 65536x65536\n", "input_huge.txt:1:"),
    ("input_overflow", "input 4294967296x4294967296x4294967296\n",
     "input_overflow.txt:1:"),
    ("no_input", "dense 10\n", "no_input.txt:1:"),
    ("empty", "", "empty.txt"),
    ("only_comment", "# nothing\n", "only_comment.txt"),
    ("unknown_kind", "input 4\nfrobnicate 3\n", "unknown_kind.txt:2:"),
    ("unknown_key", "input 1x8x8\nconv2d 4 k=3 colour=red\n",
     "unknown_key.txt:2:"),
    ("bad_number", "input 4\ndense ten\n", "bad_number.txt:2:"),
    ("negative", "input 4\ndense -3\n", "negative.txt:2:"),
    ("float_units", "input 4\ndense 2.5\n", "float_units.txt:2:"),
    ("kernel_too_big", "input 1x4x4\nconv2d 2 k=9\n", "kernel_too_big.txt:2:"),
    ("kernel_zero", "input 1x4x4\nconv2d 2 k=0\n", "kernel_zero.txt:2:"),
    ("stride_zero", "input 1x8x8\nconv2d 2 k=3 s=0\n", "stride_zero.txt:2:"),
    ("groups_mismatch", "input 3x8x8\nconv2d 4 k=3 groups=2\n",
     "groups_mismatch.txt:2:"),
    ("pool_on_vector", "input 16\nmaxpool k=2\n", "pool_on_vector.txt:2:"),
    ("dense_on_image", "input 1x4x4\nconv2d 2 k=3\ndense 2 act=bogus\n",
     "dense_on_image.txt:3:"),
    ("bad_act", "input 4\ndense 3 act=wiggle\n", "bad_act.txt:2:"),
    ("dup_name", "input 4\ndense 3 name=a\ndense 3 name=a\n",
     "dup_name.txt:3:"),
    ("dup_input", "input 4\ninput 4\ndense 2\n", "dup_input.txt:2:"),
    ("unknown_from", "input 4\ndense 3 in=nowhere\n", "unknown_from.txt:2:"),
    ("add_mismatch", "input 4\ndense 3 name=a\ndense 5 name=b in=input\n"
     "add in=a,b\n", "add_mismatch.txt:4:"),
    ("concat_mismatch", "input 2x4x4\nconv2d 2 k=3 name=a\n"
     "conv2d 2 k=1 name=b in=input\nconcat in=a,b\n",
     "concat_mismatch.txt:4:"),
    ("unused_branch", "input 4\ndense 3 name=a\ndense 2 in=input\n",
     "unused_branch.txt:2:"),
    ("nul_byte", b"input 4\nden\x00se 3\n", "nul_byte.txt:2:"),
    ("latin1", b"input 4\ndense 3 name=caf\xe9\n", "latin1.txt:2:"),
    ("overlong_line", "input 4\ndense 3 " + "x" * 5000 + "\n",
     "overlong_line.txt:2:"),
    ("dense_units_overflow", "input 4\ndense 99999999999999999999999\n",
     "dense_units_overflow.txt:2:"),
    ("flatten_vector", "input 4\nflatten\nflatten\ndense 1 k=3\n",
     "flatten_vector.txt:4:"),
    ("softmax_alpha", "input 4\ndense 3 act=softmax alpha=2\n",
     "softmax_alpha.txt:2:"),
    ("leaky_nan", "input 4\nleakyrelu alpha=nan\n", "leaky_nan.txt:2:"),
    ("batchnorm_vector_eps", "input 4x2x2\nbatchnorm eps=-1\n",
     "batchnorm_vector_eps.txt:2:"),
    ("missing_value", "input 1x8x8\nconv2d 4 k=\n", "missing_value.txt:2:"),
    ("padding_huge", "input 1x8x8\nconv2d 4 k=3 p=4000000000\n",
     "padding_huge.txt:2:"),
    ("upsample_huge", "input 1x8x8\nresize scale=100000 mode=nearest\n",
     "upsample_huge.txt:2:"),
]
ALL_APPS = [
    ("edgefit-memfit", ""),
    ("edgefit-layerwise", "--quiet"),
    ("edgefit-validate", "--test-data @DATA@/onnx/gelu/test_data_set_0"),
    ("edgefit-sweep", "--quiet"),
    ("edgefit-train", "--quiet --epochs 1"),
    ("edgefit-report", "--quiet --out @TMP@/report"),
    # (quantize checks that it has ranges and data before it reads the model)
    ("edgefit-quantize", "--quiet --out @TMP@/quant --calibration-file "
     "@BAD@/cal_empty.json --data @DATA@/onnx/gelu/test_data_set_0"),
]
for i, (name, text, frag) in enumerate(TEXTS):
    path = write(name + ".txt", text)
    case("edgefit-memfit", "--model " + path, 2, frag)
    # every fourth through each of the other apps that read a model
    if i % 4 == 0:
        for app, extra in ALL_APPS[1:]:
            case(app, ("--model " + path + " " + extra).strip(), 2, frag)

# ---- ONNX: the importer's refusals (tests/data/onnx/bad) --------------------
ONNX_BAD = [
    ("absurd_dims", 1, "huge_relu"), ("absurd_initializer", 1, "big_conv"),
    ("add_shape_mismatch", 3, "sum"), ("binary_const_tensor", 1, "per_channel"),
    ("binary_legacy_broadcast", 1, "legacy"),
    ("binary_no_broadcast", 4, "ratio"), ("clip_nan", 1, "clamp"),
    ("deconv_output_padding", 1, "up_op"),
    ("deconv_output_shape", 1, "up_shape"), ("dilations", 1, "dilated_pool"),
    ("fold_absurd_constantofshape", 1, "huge"),
    ("fold_batch_div", 3, "half_batch"), ("fold_budget", 3, "big2"),
    ("fold_unknown_attribute", 2, "gather_bd"),
    ("gru_activation_alpha", 2, "rnn1"), ("gru_sequence_lens", 2, "rnn1"),
    ("int64_input", 1, "r"), ("int_mul_computed", 1, "times3"),
    ("layernorm_axis0", 1, "ln_axis0"), ("layernorm_pow3", 1, "ln_mean"),
    ("layernorm_stash", 1, "ln_stash"), ("lstm_activations", 2, "rnn1"),
    ("lstm_clip", 2, "rnn1"), ("lstm_initial_h", 2, "rnn1"),
    ("lstm_input_forget", 2, "rnn1"), ("lstm_layout1", 2, "rnn1"),
    ("matmul_4d_const", 1, "mm_4d"), ("mha_masked", 1, "/attn/Transpose"),
    ("missing_initializer", 1, "conv1"), ("pad_channels", 1, "pad_constant"),
    ("pad_negative", 1, "pad_constant"), ("pad_reflect", 1, "pad_reflect"),
    ("qdq_axis_length", 3, "dequant_w"), ("qdq_int16", 1, "quant_x"),
    ("qdq_nan_scale", 1, "quant_x"), ("qdq_negative_scale", 1, "quant_x"),
    ("qdq_pair_differs", 2, "dequant_x"),
    ("qdq_per_axis_opset10", 3, "dequant_w"),
    ("qdq_zero_point_range", 1, "quant_x"), ("qdq_zero_scale", 1, "quant_x"),
    ("resize_cubic", 1, "up_cubic"), ("resize_scale_c", 1, "up_c"),
    ("resize_tf_crop", 1, "up_crop"), ("slice_eight_axes", 1, "s8"),
    ("softmax11_axis1", 1, "sm_flat"), ("softmax_batch_axis", 1, "sm_batch"),
    ("split_eight_parts", 1, "p8"),
    ("torch_conv1d_transpose", 2, "/Transpose"),
    ("torch_mean_channels", 2, "/ReduceMean"),
    ("torch_reshape_5d", 28, "/Reshape"), ("transpose_batch", 1, "tr_batch"),
    ("unsupported_lstm", 1, "lstm1"), ("unsupported_rnn", 1, "rnn1"),
]
for name, line, node in ONNX_BAD:
    m = onnx.load(os.path.join(DATA, "onnx", "bad", name + ".onnx"))
    assert m.graph.node[line - 1].name == node, (name, line, node)
    case("edgefit-memfit", "--model @DATA@/onnx/bad/%s.onnx" % name, 2,
         "%s.onnx:%d: node '%s'" % (name, line, node))
case("edgefit-memfit", "--model @DATA@/onnx/bad/truncated.onnx", 2,
     "truncated.onnx: not an ONNX model")

# ---- ONNX: mutations of a good fixture --------------------------------------
with open(os.path.join(DATA, "onnx", "torch_cnn", "model.onnx"), "rb") as f:
    good = f.read()
for cut in (1, 7, 64, len(good) // 3, len(good) // 2, len(good) - 5):
    p = write("cut_%d.onnx" % cut, good[:cut])
    case("edgefit-memfit", "--model " + p, 2, "cut_%d.onnx" % cut)
p = write("text_not_onnx.onnx", "input 4\ndense 3\n")
case("edgefit-memfit", "--model " + p, 2, "text_not_onnx.onnx: not an ONNX")
p = write("empty.onnx", b"")
case("edgefit-memfit", "--model " + p, 2, "empty.onnx")


def graph_model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def save(name, model):
    p = os.path.join(OUT, name + ".onnx")
    onnx.save(model, p)
    return "@BAD@/" + name + ".onnx"


X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
# an initializer whose dims claim 2^40 elements, with 4 bytes of data
w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20],
                float_data=[1.0])
p = save("init_claims_terabytes", graph_model(
    [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm_big")],
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1 << 20])],
    [Y], [w]))
case("edgefit-memfit", "--model " + p, 2, "node 'mm_big'")
# raw_data shorter than its dims
w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3, 3, 3],
                raw_data=b"\0" * 12)
p = save("raw_too_short", graph_model(
    [helper.make_node("Conv", ["x", "w"], ["y"], name="c_short")],
    [X], [Y], [w]))
case("edgefit-memfit", "--model " + p, 2, "node 'c_short'")
# negative dimension in the input
p = save("negative_dim", graph_model(
    [helper.make_node("Relu", ["x"], ["y"], name="neg")],
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, -3, 8, 8])],
    [Y]))
case("edgefit-memfit", "--model " + p, 2, "node 'neg'")
# a node reading a value nothing makes
p = save("dangling_input", graph_model(
    [helper.make_node("Add", ["x", "ghost"], ["y"], name="adds_ghost")],
    [X], [Y]))
case("edgefit-memfit", "--model " + p, 2, "node 'adds_ghost'")
# an operator of another domain
p = save("custom_domain", graph_model(
    [helper.make_node("Frob", ["x"], ["y"], name="frob", domain="com.x")],
    [X], [Y]))
case("edgefit-memfit", "--model " + p, 2, "node 'frob'")
# a graph with no nodes
p = save("no_nodes", graph_model([], [X], [helper.make_tensor_value_info(
    "x", TensorProto.FLOAT, [1, 3, 8, 8])]))
case("edgefit-memfit", "--model " + p, 2, "no_nodes.onnx")
# conv kernel larger than the input
w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3, 9, 9], [0.0] * 486)
p = save("kernel_over_input", graph_model(
    [helper.make_node("Conv", ["x", "w"], ["y"], name="wide")], [X], [Y],
    [w]))
case("edgefit-memfit", "--model " + p, 2, "node 'wide'")
# Gemm whose weight does not match its input
w = helper.make_tensor("w", TensorProto.FLOAT, [5, 7], [0.0] * 35)
p = save("gemm_mismatch", graph_model(
    [helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)],
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])], [Y],
    [w]))
case("edgefit-memfit", "--model " + p, 2, "node 'fc'")
# strides of zero
w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3, 3, 3], [0.0] * 54)
p = save("stride_zero", graph_model(
    [helper.make_node("Conv", ["x", "w"], ["y"], name="s0", strides=[0, 0])],
    [X], [Y], [w]))
case("edgefit-memfit", "--model " + p, 2, "node 's0'")
# the same bad ONNX files through the other apps that read models
for name, line, node in ONNX_BAD[:6]:
    for app, extra in ALL_APPS[1:]:
        case(app, ("--model @DATA@/onnx/bad/%s.onnx %s" % (name, extra))
             .strip(), 2, "node '%s'" % node)

# ---- safetensors (--weights) -------------------------------------------------


def st_file(header, data=b"", hlen=None):
    h = header.encode() if isinstance(header, str) else header
    n = len(h) if hlen is None else hlen
    return struct.pack("<Q", n) + h + data


MLP = "--model mlp:4-3"
STS = [
    ("short", b"\1\2\3", "short.safetensors: truncated"),
    ("header_past_end", st_file("{}", hlen=1 << 40),
     "runs past the end of the file"),
    ("header_not_json", st_file("{nope"), "header_not_json.safetensors"),
    ("header_array", st_file("[1,2]"), "is not a JSON object"),
    ("bad_dtype", st_file('{"dense1.weight":{"dtype":"Q7","shape":[3,4],'
                          '"data_offsets":[0,48]}}', b"\0" * 48),
     "dense1.weight"),
    ("shape_bytes", st_file('{"dense1.weight":{"dtype":"F32","shape":[3,4],'
                            '"data_offsets":[0,40]}}', b"\0" * 40),
     "dense1.weight"),
    ("offsets_past", st_file('{"dense1.weight":{"dtype":"F32","shape":[3,4],'
                             '"data_offsets":[0,48]}}', b"\0" * 8),
     "dense1.weight"),
    ("shape_overflow", st_file('{"a":{"dtype":"F32","shape":'
                               '[4294967296,4294967296,4294967296],'
                               '"data_offsets":[0,4]}}', b"\0" * 4), "'a'"),
    ("wrong_shape", st_file('{"dense1.weight":{"dtype":"F32","shape":[4,3],'
                            '"data_offsets":[0,48]},"dense1.bias":{"dtype":'
                            '"F32","shape":[3],"data_offsets":[48,60]}}',
                            b"\0" * 60), "dense1.weight"),
    ("missing_bias", st_file('{"dense1.weight":{"dtype":"F32","shape":[3,4],'
                             '"data_offsets":[0,48]}}', b"\0" * 48),
     "dense1.bias"),
    ("dup_names", st_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":'
                          '[0,4]},"a":{"dtype":"F32","shape":[1],'
                          '"data_offsets":[4,8]}}', b"\0" * 8), "unique"),
]
for name, data, frag in STS:
    p = write(name + ".safetensors", data)
    case("edgefit-memfit", MLP + " --weights " + p, 2, frag)
    case("edgefit-validate", MLP + " --weights " + p +
         " --test-data @DATA@/onnx/gelu/test_data_set_0", 2, frag)

# ---- npy and IDX data (--data) ----------------------------------------------


def npy(descr, shape, body, major=1):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, shape)
    hdr = hdr.encode()
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr += b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([major, 0]) + struct.pack("<H", len(hdr)) + \
        hdr + body


NPYS = [
    ("npy_truncated", npy("<f4", "(10, 4)", b"\0" * 12), "test_inputs.npy"),
    ("npy_claims_huge", npy("<f4", "(4294967296, 4294967296)", b"\0" * 16),
     "test_inputs.npy"),
    ("npy_bad_magic", b"\x93NUMPX\1\0" + b"\0" * 60, "test_inputs.npy"),
    ("npy_object", npy("|O", "(2, 4)", b"\0" * 16), "test_inputs.npy"),
    ("npy_bad_header", b"\x93NUMPY\1\0\x10\0{'descr': <f4  }\n",
     "test_inputs.npy"),
    ("npy_header_past_end", b"\x93NUMPY\1\0\xff\xff{", "test_inputs.npy"),
]
labels = npy("<i8", "(2,)", b"\0" * 16)


def st_weights(name, out, inp):
    """Zero weights of mlp:INP-OUT (one dense layer), a good file."""
    h = ('{"dense1.weight":{"dtype":"F32","shape":[%d,%d],"data_offsets":'
         '[0,%d]},"dense1.bias":{"dtype":"F32","shape":[%d],"data_offsets":'
         '[%d,%d]}}' % (out, inp, 4 * out * inp, out, 4 * out * inp,
                        4 * out * inp + 4 * out))
    return write(name, st_file(h, b"\0" * (4 * out * (inp + 1))))


MLP43 = st_weights("mlp_4_3.safetensors", 3, 4)
MLP784 = st_weights("mlp_784_10.safetensors", 10, 784)
for name, data, frag in NPYS:
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "test_inputs.npy"), "wb") as f:
        f.write(data)
    with open(os.path.join(d, "test_labels.npy"), "wb") as f:
        f.write(labels)
    case("edgefit-sweep", "--model mlp:4-3 --weights " + MLP43 +
         " --quiet --data @BAD@/" + name, 2, frag)
# labels that do not match the inputs
d = os.path.join(OUT, "npy_label_count")
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "test_inputs.npy"), "wb") as f:
    f.write(npy("<f4", "(3, 4)", b"\0" * 48))
with open(os.path.join(d, "test_labels.npy"), "wb") as f:
    f.write(npy("<i8", "(2,)", b"\0" * 16))
case("edgefit-sweep", "--model mlp:4-3 --weights " + MLP43 +
     " --quiet --data @BAD@/npy_label_count", 2, "test_labels.npy")


def idx(magic_type, dims, body):
    return bytes([0, 0, magic_type, len(dims)]) + b"".join(
        struct.pack(">I", x) for x in dims) + body


IDXS = [
    ("idx_truncated", idx(8, [100, 28, 28], b"\0" * 100),
     "t10k-images-idx3-ubyte"),
    ("idx_claims_huge", idx(8, [0xffffffff, 0xffff, 0xffff], b"\0" * 100),
     "t10k-images-idx3-ubyte"),
    ("idx_bad_magic", b"\1\2\3\4" + b"\0" * 40, "t10k-images-idx3-ubyte"),
    ("idx_wrong_type", idx(13, [2, 28, 28], b"\0" * 6272),
     "t10k-images-idx3-ubyte"),
    ("idx_zero_dim", idx(8, [2, 0, 28], b""), "t10k-images-idx3-ubyte"),
]
for name, data, frag in IDXS:
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "t10k-images-idx3-ubyte"), "wb") as f:
        f.write(data)
    with open(os.path.join(d, "t10k-labels-idx1-ubyte"), "wb") as f:
        f.write(idx(8, [2], b"\0\1"))
    case("edgefit-sweep", "--model mlp:784-10 --weights " + MLP784 +
         " --quiet --data @BAD@/" + name, 2, frag)

# ---- CSV (--from-csv of sweep) ----------------------------------------------
CSVS = [
    ("csv_empty", "", "csv_empty.csv"),
    ("csv_unterminated", 'precision,batch\n"fp32,1\n', "csv_unterminated.csv"),
    ("csv_no_columns", "a,b\n1,2\n", "csv_no_columns.csv"),
    ("csv_ragged", "precision,batch,latency_ms\nfp32,1\n",
     "csv_ragged.csv"),
    ("csv_binary", b"\0\1\2\3\xff\xfe", "csv_binary.csv"),
]
for name, data, frag in CSVS:
    p = write(name + ".csv", data)
    case("edgefit-sweep", "--quiet --from-csv " + p, 2, frag)

# ---- devices CSV (--devices) ------------------------------------------------
DEVS = [
    ("dev_no_rows", "name,bandwidth_gbps,peak_gmacs\n", "dev_no_rows.csv"),
    ("dev_missing_col", "name,bandwidth_gbps\nx,1\n", "dev_missing_col.csv:1"),
    ("dev_unknown_col", "name,bandwidth_gbps,peak_gmacs,colour\nx,1,1,red\n",
     "dev_unknown_col.csv:1"),
    ("dev_repeat_col", "name,bandwidth_gbps,peak_gmacs,name\nx,1,1,y\n",
     "dev_repeat_col.csv:1"),
    ("dev_nan", "name,bandwidth_gbps,peak_gmacs\nx,nan,1\n",
     "dev_nan.csv:2"),
    ("dev_range", "name,bandwidth_gbps,peak_gmacs\nx,1e308,1\n",
     "dev_range.csv:2"),
    ("dev_negative", "name,bandwidth_gbps,peak_gmacs,memory_mb\nx,1,1,-5\n",
     "dev_negative.csv:2"),
    ("dev_dup", "name,bandwidth_gbps,peak_gmacs\nx,1,1\n\nx,2,2\n",
     "dev_dup.csv:4"),
    ("dev_host", "name,bandwidth_gbps,peak_gmacs\nhost,1,1\n",
     "dev_host.csv:2"),
    ("dev_builtin", "name,bandwidth_gbps,peak_gmacs\nrpi4,1,1\n",
     "dev_builtin.csv:2"),
    ("dev_latin1", b"name,bandwidth_gbps,peak_gmacs\nx\xe9,1,1\n",
     "dev_latin1.csv:2"),
    ("dev_text", "name,bandwidth_gbps,peak_gmacs\nx,fast,1\n",
     "dev_text.csv:2"),
]
for name, data, frag in DEVS:
    p = write(name + ".csv", data)
    case("edgefit-memfit", "--devices " + p + " --device x", 2, frag)
case("edgefit-layerwise", "--quiet --devices @BAD@/dev_nan.csv --device x",
     2, "dev_nan.csv:2")
case("edgefit-memfit", "--devices @BAD@/dev_missing_file.csv --device x", 2,
     "dev_missing_file.csv")

# ---- calibration files (--calibration-file) ----------------------------------
CAL_MODEL = write("calib_model.txt", "name calib\ninput 1x6x6\n"
                  "conv2d 2 k=3 act=relu\nmaxpool k=2\nflatten\ndense 3\n")
CALS = [
    ("cal_not_json", "{", "cal_not_json.json"),
    ("cal_empty", "", "cal_empty.json"),
    ("cal_wrong_format", '{"format": "other", "version": 1}',
     "cal_wrong_format.json"),
    ("cal_no_tensors", '{"format": "edgefit-calibration", "version": 1, '
     '"model": "calib", "method": "minmax", "percentile": 0, "samples": 1}',
     "cal_no_tensors.json"),
    ("cal_count", '{"format": "edgefit-calibration", "version": 1, "model": '
     '"calib", "method": "minmax", "percentile": 0, "samples": 1, '
     '"tensors": []}', "cal_count.json"),
]
with open(os.path.join(ROOT, "tests", "fuzz", "corpus_calib",
                       "good.json")) as f:
    good_cal = f.read()
CALS += [
    ("cal_wrong_name", good_cal.replace('"pool1"', '"pool9"'), "pool9"),
    ("cal_scale", good_cal.replace('"scale": 0.00588235306',
                                   '"scale": 0.5', 1), "conv1"),
    ("cal_min_max", good_cal.replace('"min": 0, "max": 1.5',
                                     '"min": 2, "max": 1.5', 1), "conv1"),
    ("cal_nan", good_cal.replace('"max": 2.55', '"max": NaN', 1),
     "cal_nan.json"),
]
for name, data, frag in CALS:
    p = write(name + ".json", data)
    case("edgefit-layerwise", "--quiet --model " + CAL_MODEL +
         " --precision int8 --calibration-file " + p, 2, frag)

# ---- arguments --------------------------------------------------------------
ARGS = [
    ("edgefit-memfit", "--batch 0", "--batch"),
    ("edgefit-memfit", "--batch abc", "--batch"),
    ("edgefit-memfit", "--batch -1", "--batch"),
    ("edgefit-memfit", "--batch 99999999999999999999999", "--batch"),
    ("edgefit-memfit", "--precision fp7", "--precision"),
    ("edgefit-memfit", "--format xml", "--format"),
    ("edgefit-memfit", "--max-memory-mb -3", "--max-memory-mb"),
    ("edgefit-memfit", "--max-memory-mb nan", "--max-memory-mb"),
    ("edgefit-memfit", "--optimizer lbfgs", "--optimizer"),
    ("edgefit-memfit", "--bogus", "bogus"),
    ("edgefit-memfit", "stray", "stray"),
    ("edgefit-memfit", "--model", "model"),
    ("edgefit-memfit", "--model @BAD@/does_not_exist.txt",
     "does_not_exist.txt"),
    ("edgefit-memfit", "--model mlp:784-0-10", "mlp:784-0-10"),
    ("edgefit-memfit", "--model mlp:", "mlp:"),
    ("edgefit-memfit", "--device nosuchboard", "nosuchboard"),
    ("edgefit-memfit", "--batch-limit 0", "--batch-limit"),
    ("edgefit-layerwise", "--quiet --threads 0", "--threads"),
    ("edgefit-layerwise", "--quiet --repeats 0", "--repeats"),
    ("edgefit-layerwise", "--quiet --sort nothing", "--sort"),
    ("edgefit-layerwise", "--quiet --top -1", "--top"),
    ("edgefit-layerwise", "--quiet --calibration-method guess",
     "--calibration-method"),
    ("edgefit-layerwise", "--quiet --int8-requant round", "--int8-requant"),
    ("edgefit-layerwise", "--quiet --triad-mib 0", "--triad-mib"),
    ("edgefit-layerwise", "--quiet --power-watts -1", "--power-watts"),
    ("edgefit-validate", "--quiet --tolerance -1 --test-data "
     "@DATA@/onnx/gelu/test_data_set_0",
     "--tolerance"),
    ("edgefit-validate", "--quiet --precision fp32,fp9 --test-data "
     "@DATA@/onnx/gelu/test_data_set_0", "--precision"),
    ("edgefit-validate", "--quiet --model mlp:4-3 --weights "
     "@BAD@/mlp_4_3.safetensors --test-data "
     "@BAD@/no_such_dir",
     "no_such_dir"),
    ("edgefit-sweep", "--quiet --batches 0", "--batches"),
    ("edgefit-sweep", "--quiet --batches 1,,2", "--batches"),
    ("edgefit-sweep", "--quiet --precisions fp32,int4", "--precisions"),
    ("edgefit-sweep", "--quiet --min-accuracy 2", "--min-accuracy"),
    ("edgefit-sweep", "--quiet --from-csv @BAD@/no_such.csv", "no_such.csv"),
    ("edgefit-train", "--quiet --epochs x", "--epochs"),
    ("edgefit-train", "--quiet --alpha -1", "--alpha"),
    ("edgefit-train", "--quiet --optimizer newton", "--optimizer"),
    ("edgefit-train", "--quiet --precision fp7", "--precision"),
    ("edgefit-train", "--quiet --loss-scale 0", "--loss-scale"),
    ("edgefit-train", "--quiet --init-weights @BAD@/short.safetensors",
     "short.safetensors"),
    ("edgefit-quantize", "--quiet", "--model"),
    ("edgefit-quantize", "--quiet --model mlp:4-3", "--out"),
    ("edgefit-quantize", "--quiet --out @TMP@/q --error-samples -1",
     "--error-samples"),
    ("edgefit-stream", "--quiet --features 0", "--features"),
    ("edgefit-stream", "--quiet --batch 0", "--batch"),
    ("edgefit-stream", "--quiet --activation wobble", "--activation"),
    ("edgefit-stream", "--quiet --stream-interval-ms -5",
     "--stream-interval-ms"),
    ("edgefit-stream", "--quiet --data nowhere", "--data"),
    ("edgefit-report", "--quiet --epochs -2 --out @TMP@/r", "--epochs"),
    ("edgefit-report", "--quiet --max-accuracy-drop -1 --out @TMP@/r",
     "--max-accuracy-drop"),
    ("edgefit-bench", "--quiet --table nosuch", "--table"),
    ("edgefit-bench", "--quiet --repeats 0", "--repeats"),
    ("edgefit-bench", "--quiet --threads 0", "--threads"),
    ("edgefit-bench", "--quiet --format yaml", "--format"),
]
for app, args, frag in ARGS:
    case(app, args, 2, frag)

with open(os.path.join(ROOT, "tests", "bad", "cases.tsv"), "w") as f:
    f.write("# app\targuments\texit\tstderr fragment  "
            "(scripts/make-bad-inputs.py writes this file)\n")
    for c in cases:
        f.write("\t".join(c) + "\n")
print("%d cases" % len(cases), file=sys.stderr)
