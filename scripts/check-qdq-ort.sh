#!/bin/sh
# A QDQ ONNX file written by edgefit-quantize, run in ONNX Runtime
# (onnxruntime-node) on the calibration inputs and compared with edgefit's
# own static int8 outputs on the same inputs: the share of output elements
# that are equal and the largest difference in output quantisation steps
# (|ort - edgefit| / the output's int8 scale), also with both on the
# output's int8 grid; exit 0 when they are within one step there. A live
# check, not a test:
# ONNX Runtime is never a build or test dependency.
#
# usage: scripts/check-qdq-ort.sh DIR DATA [MODEL [WEIGHTS]]
#   DIR      edgefit-quantize's --out folder (model.qdq.onnx,
#            calibration.json)
#   DATA     the calibration inputs: ONNX test data (a test_data_set_N
#            folder or a folder of them, e.g. tests/data/models/resnet8),
#            or an IDX or NumPy folder (its training split); SAMPLES=N
#            takes the first N
#   MODEL    edgefit runs MODEL (with WEIGHTS) at static int8 with
#            DIR/calibration.json; without MODEL it runs DIR/model.qdq.onnx
#            with the quantisation the file carries
#   e.g. scripts/check-qdq-ort.sh quantize-out tests/data/models/resnet8
#
# INT8_REQUANT=float runs edgefit with ONNX Runtime's output stage (the
# scale product in float, rounded half to even: prof_exec_opts.int8_requant,
# the apps' --int8-requant), fixed TFLite's fixed-point one; the default,
# model, is float for the file's own params and fixed with MODEL's
# calibration.
# ORT_OPT sets ONNX Runtime's graph optimisation level (default all: the
# QDQ pairs fused into its integer kernels, as deployed; disabled: every
# DequantizeLinear, float operator and QuantizeLinear run as written).
# TENSORS=1 compares every tensor too: each tensor's DequantizeLinear
# output in the file (found by name or after the node that writes it) is
# made a graph output (python3 with the onnx
# package; PYTHON names another interpreter) and compared with the tensor as
# edgefit's int8 run holds it, in that tensor's steps: where the two
# runtimes first part.
#
# BUILD (default build) is the build folder holding
# tests/apps/qdq-outputs; ORT_PREFIX (default ${TMPDIR:-/tmp}/edgefit-ort)
# holds onnxruntime-node, installed there when missing (ORT_VERSION,
# default 1.30.0), as scripts/bench-vs-onnxruntime-c.sh does.
set -eu

[ $# -ge 2 ] && [ $# -le 4 ] || {
    sed -n '2,/^set -eu/p' "$0" | sed '$d' >&2
    exit 2
}
dir=$1
data=$2
model=${3:-}
weights=${4:--}
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
prefix=${ORT_PREFIX:-${TMPDIR:-/tmp}/edgefit-ort}
version=${ORT_VERSION:-1.30.0}
tool=$build/tests/apps/qdq-outputs
case $tool in
/*) ;;
*) tool=$here/$tool ;;
esac

[ -f "$dir/model.qdq.onnx" ] || {
    echo "check-qdq-ort: $dir/model.qdq.onnx: no such file (run edgefit-quantize --out $dir)" >&2
    exit 2
}
[ -x "$tool" ] || {
    echo "check-qdq-ort: $tool: not built (ninja -C $build)" >&2
    exit 2
}
command -v node >/dev/null || {
    echo "check-qdq-ort: node is needed (apt-get install nodejs)" >&2
    exit 2
}
if [ ! -d "$prefix/node_modules/onnxruntime-node" ]; then
    command -v npm >/dev/null || {
        echo "check-qdq-ort: npm is needed to install onnxruntime-node (apt-get install npm)" >&2
        exit 2
    }
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund \
        "onnxruntime-node@$version" >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/check-qdq-ort-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# edgefit's side: the inputs as read and its static int8 outputs (and,
# with TENSORS=1, every tensor)
tensors=
onnx_file=$dir/model.qdq.onnx
if [ "${TENSORS:-0}" = 1 ]; then
    tensors=$work/t
    mkdir "$tensors"
fi
if [ -n "$model" ]; then
    meta=$("$tool" "$model" "$weights" "$dir/calibration.json" "$data" \
        "$work/inputs.npy" "$work/edgefit.npy" $tensors)
else
    meta=$("$tool" "$dir/model.qdq.onnx" - - "$data" \
        "$work/inputs.npy" "$work/edgefit.npy" $tensors)
fi
if [ -n "$tensors" ]; then
    # every tensor's DequantizeLinear output a graph output, after the
    # first: NAME_DequantizeLinear_Output (edgefit-quantize's files), else
    # the DequantizeLinear after the QuantizeLinear that reads the output
    # of the node NAME or the input NAME (ONNX Runtime's quantize_static and
    # scripts/qdq_onnx.py name them otherwise); NAME and it go to map.txt
    onnx_file=$work/tensors.onnx
    "${PYTHON:-python3}" - "$dir/model.qdq.onnx" "$onnx_file" "$tensors/tensors.txt" "$tensors/map.txt" <<'PY'
import sys
import onnx
m = onnx.load(sys.argv[1])
names = [line.split()[0] for line in open(sys.argv[3])]
have = {o for n in m.graph.node for o in n.output}
node = {n.name: n for n in m.graph.node}
readers = {}
for n in m.graph.node:
    for x in n.input:
        readers.setdefault(x, []).append(n)


def after(v, op):
    return [r for r in readers.get(v, []) if r.op_type == op]


with open(sys.argv[4], "w") as out:
    for name in names:
        v = name + "_DequantizeLinear_Output"
        if v not in have:
            # a node's output, or a graph input of that name
            x = node[name].output[0] if name in node else name
            q = after(x, "QuantizeLinear")
            d = after(q[0].output[0], "DequantizeLinear") if q else []
            v = d[0].output[0] if d else v
        if v in have:
            out.write(name + " " + v + "\n")
            if v not in {o.name for o in m.graph.output}:
                m.graph.output.append(
                    onnx.helper.make_empty_tensor_value_info(v))
onnx.save(m, sys.argv[2])
PY
fi

# ONNX Runtime's side, one sample at a time, and the comparison
NODE_PATH=$prefix/node_modules node - "$onnx_file" "$work" "$meta" "$dir/model.qdq.onnx" "$tensors" <<'EOF'
const fs = require('fs');
const ort = require('onnxruntime-node');
const [file, work, metaText, shown, tensorDir] = process.argv.slice(2);
const meta = JSON.parse(metaText);

// A float32 C-order .npy: its shape and values.
function readNpy(path) {
    const b = fs.readFileSync(path);
    const hlen = b.readUInt16LE(8);
    const head = b.toString('latin1', 10, 10 + hlen);
    if (!head.includes("'<f4'") || head.includes("'fortran_order': True")) {
        throw new Error(path + ': not a C-order float32 array');
    }
    const shape = head.match(/'shape': \(([^)]*)\)/)[1]
        .split(',').map(s => s.trim()).filter(s => s).map(Number);
    const off = 10 + hlen;
    const data = new Float32Array(b.buffer.slice(b.byteOffset + off,
                                                 b.byteOffset + b.length));
    return { shape, data };
}

(async () => {
    const opts = { graphOptimizationLevel: process.env.ORT_OPT || 'all',
                   intraOpNumThreads: 1 };
    const s = await ort.InferenceSession.create(file, opts);
    const x = readNpy(work + '/inputs.npy');
    const e = readNpy(work + '/edgefit.npy');
    const n = x.shape[0];
    const per = x.data.length / n, outPer = e.data.length / n;
    // Each value on the output's int8 grid: q = clamp(round(x / scale) +
    // zero point) (half to even, as QuantizeLinear). ONNX Runtime's output
    // is on it already (a DequantizeLinear); edgefit's final softmax runs
    // in float on the dequantised logits, so its values are put on it too.
    const sc = meta.output_scale, zp = meta.output_zero_point;
    const q = v => {
        const t = v / sc, f = Math.floor(t), r = t - f;
        const n = r > 0.5 || (r === 0.5 && f % 2 !== 0) ? f + 1 : f;
        return Math.min(127, Math.max(-128, n + zp));
    };
    let equal = 0, total = 0, maxDiff = 0, maxSteps = 0, top1 = 0;
    let qEqual = 0, qMax = 0;
    // TENSORS=1: each tensor's values in edgefit's int8 run, and its steps
    const tens = [];
    if (tensorDir) {
        const dq = {};
        for (const line of fs.readFileSync(tensorDir + '/map.txt', 'utf8').split('\n')) {
            const [name, out] = line.split(' ');
            if (name) dq[name] = out;
        }
        for (const line of fs.readFileSync(tensorDir + '/tensors.txt', 'utf8').split('\n')) {
            const [name, scale] = line.split(' ');
            const out = dq[name];
            if (name && s.outputNames.includes(out)) {
                tens.push({ name, out, scale: Number(scale), e: readNpy(tensorDir + '/' + name.replace(/\//g, '%') + '.npy'),
                            equal: 0, total: 0, max: 0 });
            }
        }
    }
    for (let i = 0; i < n; i++) {
        const t = new ort.Tensor('float32', x.data.slice(i * per, (i + 1) * per),
                                 [1, ...x.shape.slice(1)]);
        const r = await s.run({ [s.inputNames[0]]: t });
        const y = r[s.outputNames[0]].data;
        for (const t of tens) {
            const a = r[t.out].data, per = a.length, b = t.e.data;
            for (let k = 0; k < per; k++) {
                const st = Math.round(Math.abs(a[k] - b[i * per + k]) / t.scale);
                t.equal += st === 0;
                t.total++;
                t.max = Math.max(t.max, st);
            }
        }
        if (y.length !== outPer) {
            throw new Error(`ONNX Runtime gave ${y.length} values per sample, edgefit ${outPer}`);
        }
        let ai = 0, bi = 0;
        for (let k = 0; k < outPer; k++) {
            const a = y[k], b = e.data[i * outPer + k];
            const d = Math.abs(a - b);
            equal += d === 0;
            const dq = Math.abs(q(a) - q(b));
            qEqual += dq === 0;
            qMax = Math.max(qMax, dq);
            total++;
            maxDiff = Math.max(maxDiff, d);
            if (a > y[ai]) ai = k;
            if (b > e.data[i * outPer + bi]) bi = k;
        }
        top1 += ai === bi;
    }
    maxSteps = meta.output_scale > 0 ? maxDiff / meta.output_scale : NaN;
    console.log(`model: ${shown}`);
    console.log(`samples: ${n}, output ${meta.output} (${outPer} values each, int8 scale ${meta.output_scale}, zero point ${meta.output_zero_point})`);
    console.log(`elements equal: ${equal} of ${total} (share ${(equal / total).toFixed(4)})`);
    console.log(`max difference: ${maxDiff.toPrecision(4)} (${maxSteps.toFixed(2)} output steps)`);
    console.log(`on the output's int8 grid: ${qEqual} of ${total} equal (share ${(qEqual / total).toFixed(4)}), max difference ${qMax} steps`);
    console.log(`top-1 agreement: ${top1} of ${n}`);
    if (tens.length) {
        console.log('tensor: share of elements equal, max difference in its steps');
        for (const t of tens) {
            console.log(`  ${t.name}: ${(t.equal / t.total).toFixed(4)}, ${t.max}`);
        }
    }
    process.exit(qMax <= 1 ? 0 : 1);
})().catch(err => { console.error('check-qdq-ort: ' + err.message); process.exit(1); });
EOF
