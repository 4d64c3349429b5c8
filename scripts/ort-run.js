// Run an ONNX model in ONNX Runtime (onnxruntime-node) on one float32
// input and write its first output, for the fixtures of
// scripts/make-qdq-fixtures.py (ONNX Runtime is never a build or test
// dependency: what it computes here is committed).
//   node scripts/ort-run.js MODEL.onnx IN.bin D0,D1,... OUT.bin
// IN.bin and OUT.bin are raw little-endian float32; the output's
// dimensions are printed on stdout, comma-separated. ORT_NODE_MODULE
// names the onnxruntime-node package (default: $ORT_PREFIX or
// ${TMPDIR:-/tmp}/edgefit-ort, as scripts/bench-vs-onnxruntime-c.sh
// installs it).
'use strict';
const fs = require('fs');
const path = require('path');

const prefix = process.env.ORT_PREFIX ||
    path.join(process.env.TMPDIR || '/tmp', 'edgefit-ort');
const ort = require(process.env.ORT_NODE_MODULE ||
    path.join(prefix, 'node_modules', 'onnxruntime-node'));

async function main() {
    const [model, inPath, dimsText, outPath] = process.argv.slice(2);
    if (!outPath) {
        console.error('usage: ort-run.js MODEL.onnx IN.bin D0,D1,... OUT.bin');
        process.exit(2);
    }
    const dims = dimsText.split(',').map(Number);
    const raw = fs.readFileSync(inPath);
    const data = new Float32Array(raw.buffer.slice(raw.byteOffset,
        raw.byteOffset + raw.byteLength));
    // one thread, the default graph optimisations (ONNX Runtime fuses the
    // QDQ pairs into its int8 kernels, as it runs such a model deployed)
    const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: 1, interOpNumThreads: 1,
    });
    const feeds = {};
    feeds[session.inputNames[0]] = new ort.Tensor('float32', data, dims);
    const out = await session.run(feeds);
    const y = out[session.outputNames[0]];
    fs.writeFileSync(outPath, Buffer.from(y.data.buffer, y.data.byteOffset,
        y.data.byteLength));
    process.stdout.write(y.dims.join(',') + '\n');
}

main().catch((e) => {
    console.error('ort-run: ' + e.message);
    process.exit(1);
});
